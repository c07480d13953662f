"""The ASGI application: OpenEnv's HTTP routes and ``/ws``, on Starlette.

:func:`create_app` serves any Gymnasium environment the way an OpenEnv server
built with ``openenv``'s own ``create_app`` does, so official clients,
validators and LLM trainers talk to it unchanged; openenv-gym clients get exact
spaces and msgpack frames on top.

    >>> app = create_app("CartPole-v1", max_sessions=8)
    >>> # uvicorn.run(app, host="127.0.0.1", port=8000)

Routes: ``WS /ws`` (one environment per connection), ``POST /reset``,
``POST /step``, ``GET /state`` (stateless, like the reference server: each
request builds a fresh environment; not in production mode), ``GET /health``,
``GET /schema``, ``GET /metadata``, ``POST /mcp`` and ``WS /mcp`` (JSON-RPC: the
env's MCP tools, sessions that outlive a socket), ``GET /openapi.json``; with ``web=True``
(or upstream's ``ENABLE_WEB_INTERFACE=true``) the web page and upstream's ``/web`` routes
(:mod:`.web`).
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.routing import BaseRoute, WebSocketRoute

from .auth import TokenAuth
from .hosting import Server
from .http import http_routes
from .mcp import McpRoute
from .multiagent import AgentsRoute, GameSource
from .options import ServeOptions
from .resolve import resolve
from .routes import Route, WsRoute
from .source import EnvLike
from .transport import SessionEndpoint
from .vector import VectorRoute
from .web import COOKIE_PATHS, PAGE_PATHS, WebInterface, web_enabled, web_env_kwargs, web_routes

if TYPE_CHECKING:
    from typing_extensions import Unpack

    from .options import ServeKwargs

__all__ = ["create_app"]


def create_app(
    env: EnvLike,
    options: ServeOptions | None = None,
    *,
    env_kwargs: Mapping[str, Any] | None = None,
    **kwargs: Unpack[ServeKwargs],
) -> Starlette:
    """Serve a Gymnasium environment as an OpenEnv server (an ASGI app).

    Args:
        env: a Gymnasium id (``"CartPole-v1"``), a ``"module:factory"`` path,
            a PettingZoo module, an env class, or a factory callable. Each WebSocket
            session gets its own environment.
        options: how the server serves (capacity, timeouts, limits, execution,
            authentication, and what it adds to each env): see
            :class:`~openenv_gym.server.options.ServeOptions`, whose fields are also
            accepted as keyword arguments (``max_sessions=8``), overriding ``options``.
        env_kwargs: keyword arguments for ``gym.make`` / the class / the factory.

    Jax envs (``metadata["jax"]``, such as ``phys2d/CartPole-v1``) are served
    through Gymnasium's ``JaxToNumpy``: sessions see numpy values.

    The environment is built once here to read its spaces, so a broken factory
    fails now rather than in the first session; bad options fail before that.
    """
    options = ServeOptions.merge(options, **kwargs)
    mode = options.served_mode()
    web = web_enabled(options.web)
    if web:
        env_kwargs = web_env_kwargs(env, env_kwargs)
    source = resolve(env, env_kwargs, options)
    server = Server(source, options)
    websocket_routes: list[Route] = [
        WsRoute(source, telemetry=server.validation_token is not None),
        VectorRoute(source, backend=options.vector_backend),
        McpRoute(source),
    ]
    if isinstance(source, GameSource):
        websocket_routes.append(AgentsRoute(source))
    server.routes = {route.path: route for route in websocket_routes}
    routes: list[BaseRoute] = [
        WebSocketRoute(route.path, SessionEndpoint(functools.partial(server.serve_route, route)))
        for route in websocket_routes
    ]
    routes.extend(http_routes(server, mode))
    if web:
        routes.extend(web_routes(server, WebInterface.of(server)))
    open_paths = PAGE_PATHS if web else frozenset()
    middleware = (
        [Middleware(TokenAuth, token=server.token, open_paths=open_paths, cookie_paths=COOKIE_PATHS)]
        if server.token else []
    )
    app = Starlette(routes=routes, middleware=middleware)
    app.state.openenv_gym = server
    return app
