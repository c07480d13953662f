"""One openenv-gym server in a Ray actor: :class:`EnvServer`.

The actor's process runs a normal openenv-gym server (the one
:func:`~openenv_gym.serve` runs: uvicorn, every route, drain on close) on a
background thread, bound on the node's address, so any OpenEnv client reaches
it by URL. Ray restarts the process when it dies; a restarted server asks its
pool's broker which port it had and binds it again when it is back on the same
node and the port is free, so the URL most clients hold stays valid. Elsewhere
it takes a free port and tells the broker, which sends reconnecting clients
there (:attr:`Reconnect.relocate <openenv_gym.client.retry.Reconnect.relocate>`).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Mapping
from typing import Any

import ray

from ..client import ConnectOptions
from ..client.http import get_json
from ..errors import ListenError
from ..server.latency import DEFAULT_BUSY_POLL
from ..server.run import local_server
from ..server.source import EnvLike

__all__ = ["EnvServer"]


class EnvServer:
    """A Ray actor class serving ``env`` with an openenv-gym server.

    Args:
        env: anything :func:`~openenv_gym.create_app` serves (a Gymnasium id,
            ``"module:factory"``, an env class or factory, a PettingZoo or
            legacy env).
        index: the server's place in its pool (stable across restarts).
        broker: the pool's broker actor (``None`` for a server on its own):
            asked for the port to take again after a restart, and told the URL.
        host: the address to bind; ``None``: the node's IP address.
        max_sessions: sessions the server holds at once.
        server_kwargs: more keyword arguments of :func:`~openenv_gym.create_app`
            (``busy_poll`` defaults to ``openenv-gym serve``'s, since the server
            has the process to itself).
    """

    def __init__(
        self,
        env: EnvLike,
        *,
        index: int,
        broker: Any,
        host: str | None,
        max_sessions: int,
        server_kwargs: Mapping[str, Any],
    ) -> None:
        self.index = index
        self.node_id = ray.get_runtime_context().get_node_id()
        host = host or ray.util.get_node_ip_address()
        kwargs = {"busy_poll": DEFAULT_BUSY_POLL, **server_kwargs, "max_sessions": max_sessions}
        self._stack = contextlib.ExitStack()
        port = ray.get(broker.port_hint.remote(index, host)) if broker is not None else 0
        try:
            self.url = self._stack.enter_context(local_server(env, host=host, port=port, **kwargs))
        except ListenError:  # the old port is taken: any free one
            self.url = self._stack.enter_context(local_server(env, host=host, port=0, **kwargs))
        if broker is not None:
            broker.register.remote(index, self.address())

    def address(self) -> dict[str, Any]:
        """Where the server runs: ``url``, ``node_id``, ``pid``."""
        return {"url": self.url, "node_id": self.node_id, "pid": os.getpid()}

    def health(self, timeout: float = 10.0) -> dict[str, Any]:
        """The server's own ``/health``, fetched over its socket (so a server
        whose loop is stuck fails here), with its address."""
        health = get_json(f"{self.url}/health", ConnectOptions(connect_timeout=timeout))
        return {**(health if isinstance(health, dict) else {}), **self.address()}

    def close(self) -> None:
        """Stop the server: sessions in the middle of a call finish it, then close."""
        self._stack.close()
