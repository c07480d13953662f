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
env's MCP tools, sessions that outlive a socket), ``GET /openapi.json``.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable, Sequence
from typing import Any

from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.routing import BaseRoute, WebSocketRoute

from ..protocol import EXTENSION_KEY, Limits
from .auth import TokenAuth, token_from_env
from .hosting import DEFAULT_HANDSHAKE_TIMEOUT, DEFAULT_HELD_SESSION_TIMEOUT, Server
from .http import http_routes
from .mcp import McpRoute
from .multiagent import AgentsRoute, Opponent
from .polling import DEFAULT_BUSY_POLL
from .resolve import resolve
from .routes import Route, WsRoute
from .schema import MODES, Mode
from .session import DEFAULT_INLINE_DEADLINE, Execution
from .source import EnvLike
from .telemetry import telemetry_token
from .tools import check_tool_names, function_tool
from .transport import SessionEndpoint
from .vector import VectorBackend, VectorRoute

__all__ = ["create_app", "DEFAULT_MAX_SESSIONS", "DEFAULT_SESSION_TIMEOUT", "MODE_VARIABLE"]

#: Sessions one server holds at once unless told otherwise.
DEFAULT_MAX_SESSIONS = 256
#: Seconds without a message after which a session is closed.
DEFAULT_SESSION_TIMEOUT = 900.0
#: The environment variable naming the server mode when ``create_app`` is given none (OpenEnv's).
MODE_VARIABLE = "OPENENV_MODE"


def create_app(
    env: EnvLike,
    *,
    env_kwargs: dict[str, Any] | None = None,
    max_sessions: int = DEFAULT_MAX_SESSIONS,
    session_timeout: float | None = DEFAULT_SESSION_TIMEOUT,
    max_held_sessions: int | None = None,
    held_session_timeout: float | None = DEFAULT_HELD_SESSION_TIMEOUT,
    execution: Execution = "auto",
    limits: Limits | None = None,
    step_timeout: float | None = None,
    token: str | None = None,
    vector_backend: VectorBackend = "auto",
    opponent: Opponent | None = None,
    busy_poll: float = DEFAULT_BUSY_POLL,
    handshake_timeout: float = DEFAULT_HANDSHAKE_TIMEOUT,
    inline_deadline: float | None = DEFAULT_INLINE_DEADLINE,
    text_view: Any = None,
    tools: Sequence[Callable[..., Any]] = (),
    mode: Mode | None = None,
    set_state: Callable[[Any, Any], tuple[Any, Any]] | None = None,
    validation_token: str | None = None,
    single_thread: bool | None = None,
    env_memory_mb: int | None = None,
) -> Starlette:
    """Serve a Gymnasium environment as an OpenEnv server (an ASGI app).

    Args:
        env: a Gymnasium id (``"CartPole-v1"``), a ``"module:factory"`` path,
            an env class, or a factory callable. Each WebSocket session gets
            its own environment.
        env_kwargs: keyword arguments for ``gym.make`` / the class / the factory.
        max_sessions: sessions held at once; one more gets OpenEnv's
            CAPACITY_REACHED error frame and a close.
        session_timeout: seconds without a message after which a session is
            closed (``None`` never closes idle sessions).
        max_held_sessions: sessions that outlive their sockets (``POST /mcp``'s
            ``openenv/session/create`` and MCP's ``initialize``) held at once,
            among the ``max_sessions``; one more is refused (JSON-RPC -32000,
            CAPACITY_REACHED, naming this cap). ``None``: a quarter of
            ``max_sessions`` (at least 1), so that one client holding no socket
            cannot take the slots of those that hold one; 0: none.
        held_session_timeout: seconds a held session with no ``/ws`` socket
            attached may go without a request before it is closed; at most
            ``session_timeout`` (``None``: ``session_timeout``).
        execution: how env calls run, see :data:`~openenv_gym.server.session.Execution`.
            ``"process"`` runs each session's env in a process of its own (see
            :mod:`openenv_gym.server.isolation`), killed when its session ends
            (even in the middle of a call: a client gone, the idle timeout, a
            drain) and, on Linux, when the server dies, even by SIGKILL.
        limits: frame, array and nesting limits for incoming messages. Run
            the app with uvicorn's ``ws_max_size`` equal to
            ``limits.max_frame_bytes`` (:func:`~openenv_gym.serve` does).
        step_timeout: seconds an env call (reset, step, render) may take; a
            call that hangs longer gets EXECUTION_ERROR and its session a fresh
            environment (other sessions are unaffected). Env calls then always
            run on the session's worker thread. ``None``: no limit.
        token: require ``Authorization: Bearer <token>`` on every route but
            ``/health`` (see :mod:`openenv_gym.server.auth`). ``None`` reads
            the ``OPENENV_GYM_TOKEN`` environment variable; no token there
            means no authentication.
        vector_backend: what hosts the envs of a batched vector session on
            ``WS /vector`` (see :mod:`openenv_gym.server.vector`): ``"sync"``, a
            ``SyncVectorEnv`` in this process; ``"async"``, an
            ``AsyncVectorEnv`` with one worker process per sub-env (for slow
            envs on a many-core server); ``"envpool"``, one EnvPool pool (for
            an EnvPool task, ``"envpool:CartPole-v1"``, see :mod:`openenv_gym.envpool`);
            ``"auto"`` (the default), ``"envpool"`` for an EnvPool task, else ``"sync"``
            until the env's steps in this server have proven slow
            (:class:`~openenv_gym.server.vector.StepClock`), then
            ``"async"`` for the vector sessions opened after that, on a
            machine with more than one core. A vector session of N envs takes
            N of the ``max_sessions`` slots.
        opponent: for PettingZoo envs, the policy playing the other seats of a
            ``/ws`` session (a callable taking a
            :class:`~openenv_gym.server.multiagent.Turn`; default
            :func:`~openenv_gym.server.multiagent.random_opponent`).
        busy_poll: seconds the event loop keeps polling for the next message
            after replying to a client on this machine whose env steps inline
            (see :mod:`openenv_gym.server.polling`); it saves a kernel wake-up
            per step at the price of CPU while a client thinks. 0 turns it
            off (:func:`~openenv_gym.local_server` does: its server shares
            the client's process).
        handshake_timeout: seconds a connection may take to become a session:
            to send a complete HTTP request (a WebSocket upgrade included), a
            route's opening message (``vector_open``), or the next chunk of a
            request body. Connections that hold no session yet are closed after
            it, before they can pile up.
        inline_deadline: seconds an env call running inline on the event loop
            (a session whose env proved fast) may take before it is
            interrupted, its session answered EXECUTION_ERROR and given a fresh
            env that runs on its thread (see :mod:`openenv_gym.server.deadline`;
            enforced where the event loop runs in the main thread, as
            :func:`~openenv_gym.serve` and the CLI run it). ``None``: no deadline.
        text_view: how observations read as text and replies as actions, for the
            ``text`` field of observations and the MCP tools: a
            :class:`~openenv_gym.text.TextView` (or an object with its methods),
            or a function making one from a session's env. ``None``: each env's
            own view (:func:`~openenv_gym.text.view_for`).
        tools: MCP tools of your own, served beside ``act``, ``observe`` and
            ``legal_actions``: plain functions taking the session's env first, with
            type hints on their other parameters (see
            :func:`~openenv_gym.server.tools.function_tool` and ``docs/mcp.md``);
            not with ``execution="process"``, where the env is in another process.
        mode: ``"simulation"`` (every route) or ``"production"`` (no stateless
            ``/reset``, ``/step``, ``/state``), as OpenEnv defines them; ``None``
            reads the ``OPENENV_MODE`` environment variable, else simulation.
        set_state: how a reset starts from an injected state (OpenEnv's RFC 008
            ``set_state`` capability): ``set_state(env, injected_state)`` is called on the
            session's env (as the factory built it; a PettingZoo seat's
            :class:`~openenv_gym.server.multiagent.SeatEnv`) right after its
            ``reset(seed=..., options=...)``, sets its state (``env.unwrapped.state =
            ...``, say) and returns ``(observation, info)`` of that state, as ``reset``
            does: the reset's reply carries them. A reset whose data holds
            ``injected_state`` on a server without it is refused (VALIDATION_ERROR naming
            this hook); ``/agents`` refuses it always. Not with ``execution="process"``,
            where the env is in another process.
        validation_token: the token that opens session telemetry on ``/ws``
            (``validation_open``, see :mod:`openenv_gym.server.telemetry`); ``None``
            reads the ``OPENENV_VALIDATION_TOKEN`` environment variable; without one,
            or in production mode, telemetry is off and nothing is recorded.
        single_thread: run every call of the envs (build, reset, step, render,
            close) on one thread of this process, which the sessions of such envs
            (and of every other server in the process) take turns on, for envs
            that are not thread-safe. ``None`` (the default) does so for envs
            that draw with pygame (:func:`~openenv_gym.server.resolve.uses_pygame`:
            Gymnasium's classic control, toy text and Box2D envs with a frame
            render mode, PettingZoo's pygame games), whose process-wide state
            two threads must not touch at once; ``True`` for any env (one whose
            toolkit is bound to a thread, say); ``False`` never. Not with
            ``execution="inline"``; with ``execution="process"`` each env has a
            process of its own and needs no such thread.
        env_memory_mb: with ``execution="process"`` only (a ValueError
            otherwise), the MiB each env's process may allocate: its
            ``RLIMIT_DATA``, which Linux enforces on every private writable
            mapping (heap, numpy arrays, thread stacks). CartPole starts under
            128 on two cores; numpy's OpenBLAS reserves about 40 MiB more per core
            it starts a thread for (``OPENBLAS_NUM_THREADS`` bounds them). An env
            that reaches it ends its process: its session answers
            EXECUTION_ERROR naming the cap and gets a fresh env process (every
            other session goes on). ``None`` (the default): no cap.

    Jax envs (``metadata["jax"]``, such as ``phys2d/CartPole-v1``) are served
    through Gymnasium's ``JaxToNumpy``: sessions see numpy values.

    The environment is built once here to read its spaces, so a broken factory
    fails now rather than in the first session.
    """
    chosen = (mode or os.environ.get(MODE_VARIABLE) or "simulation").lower()
    if chosen not in MODES:
        raise ValueError(
            f"the server mode is {' or '.join(MODES)}, not {chosen!r} (from create_app(mode=...) or {MODE_VARIABLE})"
        )
    own_tools = [function_tool(fn) for fn in tools]
    check_tool_names(own_tools)
    if own_tools and execution == "process":
        raise ValueError(
            "tools= run on each session's env in the server's process, and execution='process' keeps "
            "the env in a process of its own: choose one (put the tool's logic in the env's own methods, "
            "or serve with another execution)"
        )
    if set_state is not None and execution == "process":
        raise ValueError(
            "set_state= runs on each session's env in the server's process, and execution='process' "
            "keeps the env in a process of its own: choose one"
        )
    source = resolve(env, **(env_kwargs or {}))
    if set_state is not None and source.fields is not None:
        raise TypeError(
            f"{source.name!r} speaks OpenEnv's named fields (a FieldsEnv): its reset takes "
            f"injected_state itself (a keyword argument of reset); set_state= applies to Gymnasium "
            f"and PettingZoo envs"
        )
    source.set_state = set_state
    if single_thread is not None:
        source.single_thread = single_thread
    if opponent is not None:
        if source.multiagent is None:
            raise TypeError("opponent= applies to PettingZoo environments only")
        source.multiagent.opponent = opponent
    if source.fields is not None and (own_tools or text_view is not None):
        raise TypeError(
            f"{source.name!r} speaks OpenEnv's named fields (a FieldsEnv): it serves the tools it declares "
            f"(FieldsEnv.tools) and no text view; tools= and text_view= apply to Gymnasium and PettingZoo envs"
        )
    source.text_view = text_view
    source.tools = tuple(own_tools)
    if own_tools:
        source.schema[EXTENSION_KEY]["mcp"]["tools"] += [tool.name for tool in own_tools]
    server = Server(
        source,
        max_sessions=max_sessions,
        session_timeout=session_timeout,
        max_held_sessions=max_held_sessions,
        held_session_timeout=held_session_timeout,
        execution=execution,
        limits=limits or Limits(),
        step_timeout=step_timeout,
        busy_poll=busy_poll,
        handshake_timeout=handshake_timeout,
        inline_deadline=inline_deadline,
        validation_token=telemetry_token(validation_token, chosen),
        env_memory_mb=env_memory_mb,
    )
    websocket_routes: list[Route] = [
        WsRoute(source, telemetry=server.validation_token is not None),
        VectorRoute(source, backend=vector_backend, clock=server.env_steps),
        McpRoute(source),
    ]
    if source.multiagent is not None:
        websocket_routes.append(AgentsRoute(source))
    routes: list[BaseRoute] = [
        WebSocketRoute(route.path, SessionEndpoint(functools.partial(server.serve_route, route)))
        for route in websocket_routes
    ]
    routes.extend(http_routes(server, chosen))
    token = token if token is not None else token_from_env()
    middleware = [Middleware(TokenAuth, token=token)] if token else []
    app = Starlette(routes=routes, middleware=middleware)
    app.state.openenv_gym = server
    return app

