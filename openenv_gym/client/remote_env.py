"""``RemoteEnv``: any OpenEnv server as a ``gymnasium.Env``.

    >>> import openenv_gym
    >>> env = openenv_gym.RemoteEnv("http://127.0.0.1:8000")      # doctest: +SKIP
    >>> obs, info = env.reset(seed=0)                               # doctest: +SKIP
    >>> obs, reward, terminated, truncated, info = env.step(env.action_space.sample())  # doctest: +SKIP
    >>> env.close()                                                 # doctest: +SKIP

Against an openenv-gym server the spaces are exact, ``terminated`` and
``truncated`` are the env's own, and ``info`` keeps its numpy types. Against a
stock OpenEnv server the spaces are inferred from ``/schema`` (override them
with ``observation_space=`` / ``action_space=``), actions and observations are
``Dict`` values of the schema's fields, OpenEnv's ``done`` becomes
``terminated`` (wrap the env in ``TimeLimit`` for truncation), and a
non-empty observation ``metadata`` appears as ``info["metadata"]``. Nothing is
dropped silently: observation fields outside the space go to
``info["openenv_gym.extra_fields"]``, and fields the server left out take their
schema default or a neutral value and are listed in
``info["openenv_gym.missing_fields"]``.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any

import gymnasium as gym

from ..errors import CapacityReachedError, OpenEnvGymError
from ..wire import reset_message
from .connection import get_json, http_url
from .contract import Contract, contract_from_schema, decode_frame
from .retry import LOST_REASON, RECONNECTED, RECOVERABLE, Reconnect, reconnect_policy
from .session import Encoding, RemoteSession

__all__ = ["RemoteEnv"]


class RemoteEnv(gym.Env):
    """A Gymnasium environment whose episodes run on an OpenEnv server.

    Args:
        base_url: the server, as ``http(s)://host:port``, ``ws(s)://...`` or ``host:port``.
        observation_space, action_space: override the spaces read from (or, for
            stock servers, inferred from) the server's ``/schema``.
        encoding: ``"auto"`` (msgpack when the server offers it, else JSON),
            ``"json"`` or ``"msgpack"`` (fails against servers without it).
        connect_timeout: seconds for the TCP + WebSocket handshake and ``/schema``.
        message_timeout: seconds to wait for each reply.
        headers: extra HTTP headers for ``/schema`` and the WebSocket handshake
            (for example ``{"Authorization": "Bearer ..."}``).
        render_mode: ignored when the server reports its own; the server's
            render mode is the one that applies.
        ping_interval, ping_timeout: keepalive pings while the env sits idle
            (``None`` turns them off, for tunnels that drop pings).
        compression: ``"deflate"`` to offer permessage-deflate (JSON over slow
            links); off by default.
        token: sent as ``Authorization: Bearer <token>`` (servers started
            with ``--token``).
        reconnect: recover lost connections (``True`` for the default
            :class:`~openenv_gym.client.retry.Reconnect` policy). A step whose
            connection is lost then ends the episode with ``truncated=True``,
            the last observation and ``info["openenv_gym.reconnected"] = True``;
            the next ``reset`` runs on a new connection. CAPACITY_REACHED is
            retried with backoff too. Off by default: errors are raised.
        busy_poll: seconds to poll the socket for each reply before sleeping
            until it comes. ``None``: 1 ms for a loopback server in another
            process, where waking a sleeping reader costs more than a fast
            step; never for other hosts or a server in this process. 0 never
            polls (the waiting thread uses no CPU).

    Server error frames raise :class:`~openenv_gym.errors.RemoteError`
    subclasses carrying the server's code and message; a lost connection
    raises :class:`~openenv_gym.errors.ConnectionClosedError` and a server that
    does not answer within ``message_timeout``
    :class:`~openenv_gym.errors.MessageTimeoutError`.
    """

    metadata: dict[str, Any] = {"render_modes": []}

    def __init__(
        self,
        base_url: str,
        *,
        observation_space: gym.Space | None = None,
        action_space: gym.Space | None = None,
        encoding: Encoding = "auto",
        connect_timeout: float | None = 10.0,
        message_timeout: float | None = 60.0,
        headers: Mapping[str, str] | None = None,
        render_mode: str | None = None,
        max_message_bytes: int = 100 * 1024 * 1024,
        ping_interval: float | None = 20.0,
        ping_timeout: float | None = 20.0,
        compression: str | None = None,
        token: str | None = None,
        reconnect: Reconnect | bool | None = None,
        busy_poll: float | None = None,
    ) -> None:
        self.base_url = http_url(base_url)
        self._session: RemoteSession | None = None
        self._closed = False
        headers = dict(headers or {})
        if token is not None:
            headers["Authorization"] = f"Bearer {token}"
        self.reconnect = reconnect_policy(reconnect)
        schema = get_json(f"{self.base_url}/schema", headers=headers, timeout=connect_timeout)
        if not isinstance(schema, dict):
            raise OpenEnvGymError(f"{self.base_url}/schema did not return a JSON object")
        self.contract: Contract = contract_from_schema(
            schema, observation_space=observation_space, action_space=action_space
        )
        self.observation_space = self.contract.observation_space
        self.action_space = self.contract.action_space
        self.render_mode = self.contract.render_mode if self.contract.extended else render_mode
        self.metadata = {**self.contract.env_metadata}
        self.metadata["render_modes"] = [self.render_mode] if self.render_mode else []
        self._connect = functools.partial(
            RemoteSession,
            self.base_url,
            encoding=encoding,
            headers=headers,
            connect_timeout=connect_timeout,
            message_timeout=message_timeout,
            max_message_bytes=max_message_bytes,
            ping_interval=ping_interval,
            ping_timeout=ping_timeout,
            compression=compression,
            busy_poll=busy_poll,
        )
        self._last_obs: Any = None
        self._lost: BaseException | None = None
        self._session = (
            self._connect() if self.reconnect is None else self.reconnect.call(self._connect)
        )

    @property
    def encoding(self) -> str:
        """The encoding in use: ``"msgpack"`` or ``"json"``."""
        return self._live().codec.name

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[Any, dict[str, Any]]:
        """Start a new episode on the server.

        ``seed`` goes to the server's ``reset(seed=...)``; the keys of
        ``options`` are sent beside it (an openenv-gym server passes them on as
        the env's ``options``; ``episode_id`` names the episode in ``state()``).
        """
        super().reset(seed=seed)
        message = reset_message(seed, options)
        lost, self._lost = self._lost, None

        def attempt() -> dict:
            if self._session is None or self._session.connection.closed:
                self._session = self._connect()
            try:
                return self._session.request(message)
            except (*RECOVERABLE, CapacityReachedError):
                self._session.close()  # a timed-out connection is out of step: drop it
                self._session = None
                raise

        if self.reconnect is None:
            reply = self._live().request(message)
        else:
            self._live_or_closed()
            reply = self.reconnect.call(attempt)
        step = self.contract.step(reply)
        self._last_obs = step.obs
        if lost is not None:
            step.info[RECONNECTED] = True
            step.info[LOST_REASON] = str(lost)
        return step.obs, step.info

    def step(self, action: Any) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        session = self._live()
        data = self.contract.action_data(
            action, arrays=session.binary, hints=session.extended and not session.binary
        )
        try:
            step = self.contract.step(session.request({"type": "step", "data": data}))
        except RECOVERABLE as exc:
            if self.reconnect is None:
                raise
            # The episode is gone with its connection: end it here, flagged;
            # the next reset opens a new connection.
            session.close()
            self._session, self._lost = None, exc
            info = {RECONNECTED: True, LOST_REASON: str(exc)}
            return self._last_obs, 0.0, False, True, info
        self._last_obs = step.obs
        return step.obs, step.reward, step.terminated, step.truncated, step.info

    def state(self) -> dict[str, Any]:
        """The server's state of this session (``episode_id``, ``step_count``, ...)."""
        return self._live().request({"type": "state"})

    def render(self) -> Any:
        """The server-side render of the current state (``rgb_array`` or ``ansi``).

        Returns ``None`` when the server has no render mode (stock OpenEnv
        servers have no render message).
        """
        if self.render_mode is None or not self.contract.extended:
            return None
        return decode_frame(self._live().request({"type": "render"}))

    def close(self) -> None:
        """Tell the server to end the session and close the connection (idempotent)."""
        session, self._session = self._session, None
        self._closed = True
        if session is not None:
            session.close()
        super().close()

    def _live_or_closed(self) -> None:
        if self._closed:
            raise OpenEnvGymError("this RemoteEnv is closed; create a new one to reconnect")

    def _live(self) -> RemoteSession:
        self._live_or_closed()
        if self._session is None:
            raise OpenEnvGymError(
                "this RemoteEnv lost its connection; call reset() to start a new episode"
            )
        return self._session

    def __repr__(self) -> str:
        return f"<RemoteEnv {self.base_url}>"
