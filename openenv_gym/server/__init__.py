"""Servers: Gymnasium environments as OpenEnv servers (needs ``openenv-gym[server]``)."""

from .._extras import missing_extra

try:
    import starlette  # noqa: F401
    import uvicorn  # noqa: F401
except ImportError as exc:  # pragma: no cover - depends on the install
    raise missing_extra(exc, "serving environments", "server") from exc

from .app import create_app
from .options import ServeOptions
from .run import local_server, serve

__all__ = ["create_app", "serve", "local_server", "ServeOptions"]
