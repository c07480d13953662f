"""What an embedded server's child process runs: a catalog env's built-in server.

:class:`~openenv_gym.catalog.embedded.EmbeddedServer` names :func:`builtin_server` as the
app of its :class:`~openenv_gym.server.child.ChildServer`; the child calls it, then runs the
server it returns on the socket its owner bound, until SIGTERM or its owner's death.
"""

from __future__ import annotations

from typing import Any

from ..server.app import create_app
from ..server.child import SHUTDOWN_GRACE
from ..server.run import GracefulServer, uvicorn_config
from . import get

__all__ = ["builtin_server"]


def builtin_server(name: str, env_kwargs: dict[str, Any], max_sessions: int) -> GracefulServer:
    """The uvicorn server of catalog env ``name``'s built-in app, with openenv-gym's settings
    (:func:`~openenv_gym.server.run.uvicorn_config`), draining its sessions on shutdown."""
    entry = get(name)
    app = create_app(entry.builtin_server(), env_kwargs=env_kwargs, max_sessions=max_sessions)
    config = uvicorn_config(
        app, host="127.0.0.1", port=0, timeout_graceful_shutdown=int(SHUTDOWN_GRACE),
    )
    return GracefulServer(config, drain_timeout=SHUTDOWN_GRACE)
