"""Embedded servers: a catalog env's built-in server, in a child process it owns.

    >>> server = EmbeddedServer.start("chess")          # doctest: +SKIP
    >>> server.url                                      # doctest: +SKIP
    'http://127.0.0.1:40123'
    >>> server.stop()                                   # doctest: +SKIP

An :class:`EmbeddedServer` is a :class:`~openenv_gym.server.child.ChildServer` whose app is
the catalog env's built-in server (:func:`openenv_gym.catalog._serve.builtin_server`), on a
free port of 127.0.0.1. Like every child server it never outlives its owner:
:meth:`~openenv_gym.server.child.ChildServer.stop` (called by the env's ``close()``), a
``weakref.finalize`` at garbage collection and at exit, and, when the owner dies without
any of that (SIGKILL, a crash), the child itself, which watches its parent pid and a
lifeline pipe from its owner.
"""

from __future__ import annotations

from typing import Any

from ..errors import EmbeddedServerError
from ..server.child import ChildServer

__all__ = ["EmbeddedServer", "EmbeddedServerError"]


class EmbeddedServer(ChildServer):
    """The built-in server of catalog env ``name``, running in a child process (see the
    module docstring); :meth:`start` is the same as the constructor.

    ``url`` is its base URL, ``pid`` the child's pid;
    :meth:`~openenv_gym.server.child.ChildServer.stop` is idempotent.
    """

    def __init__(
        self,
        name: str,
        *,
        env_kwargs: dict[str, Any] | None = None,
        max_sessions: int = 64,
        startup_timeout: float = 60.0,
    ) -> None:
        self.label = f"the embedded {name!r} server"
        super().__init__(
            "openenv_gym.catalog._serve:builtin_server",
            factory_kwargs={"name": name, "env_kwargs": env_kwargs or {}, "max_sessions": max_sessions},
            startup_timeout=startup_timeout,
        )

    @classmethod
    def start(
        cls,
        name: str,
        *,
        env_kwargs: dict[str, Any] | None = None,
        max_sessions: int = 64,
        startup_timeout: float = 60.0,
    ) -> EmbeddedServer:
        """Start the built-in server of catalog env ``name`` and wait until it answers."""
        return cls(name, env_kwargs=env_kwargs, max_sessions=max_sessions, startup_timeout=startup_timeout)

    def advice(self, log: str | None) -> str:
        return "Pass base_url= to use a server you run yourself."
