"""The ASGI application: OpenEnv's HTTP routes and ``/ws``, on Starlette.

:func:`create_app` serves any Gymnasium environment the way an OpenEnv server
built with ``openenv``'s own ``create_app`` does, so official clients,
validators and LLM trainers talk to it unchanged; openenv-gym clients get exact
spaces and msgpack frames on top.

    >>> app = create_app("CartPole-v1", max_sessions=8)
    >>> # uvicorn.run(app, host="127.0.0.1", port=8000)

Routes: ``WS /ws`` (one environment per connection), ``POST /reset``,
``POST /step``, ``GET /state`` (stateless, like the reference server: each
request builds a fresh environment), ``GET /health``, ``GET /schema``,
``GET /metadata``, ``POST /mcp`` and ``WS /mcp`` (JSON-RPC), ``GET /openapi.json``.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
from collections.abc import AsyncIterator, Callable
from typing import Any

from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route, WebSocketRoute
from starlette.websockets import WebSocket

from ..vector_wire import VECTOR_PATH
from ..wire import (
    CLOSING_ERRORS,
    PROCESS_HEADER,
    PROCESS_TOKEN,
    SUBPROTOCOLS,
    ClientMessage,
    Codec,
    ErrorCode,
    Limits,
    WireError,
    codec_for,
    error_message,
    is_loopback,
    parse_client_message,
)
from .auth import TokenAuth, token_from_env
from .fields import FieldsSession
from .mcp import PARSE_ERROR, handle_jsonrpc
from .metrics import Metrics
from .multiagent import AGENTS_PATH, Opponent, serve_agents
from .polling import DEFAULT_BUSY_POLL, BusyPoll
from .schema import metadata_document, openapi_document, schema_document
from .session import EnvCaller, Execution, Session
from .source import EnvLike, EnvSource, resolve
from .transport import Channel, SessionEndpoint, next_frame
from .vector import StepClock, VectorBackend, serve_vector

__all__ = ["create_app", "DEFAULT_MAX_SESSIONS", "DEFAULT_SESSION_TIMEOUT"]

logger = logging.getLogger("openenv_gym.server")

#: Sessions one server holds at once unless told otherwise.
DEFAULT_MAX_SESSIONS = 256
#: Seconds without a message after which a session is closed.
DEFAULT_SESSION_TIMEOUT = 900.0


def _json(payload: Any, status: int = 200) -> Response:
    return Response(
        json.dumps(payload, separators=(",", ":"), allow_nan=True),
        status_code=status,
        media_type="application/json",
    )


class _Server:
    """State shared by every route of one app."""

    def __init__(
        self,
        source: EnvSource,
        *,
        max_sessions: int,
        session_timeout: float | None,
        execution: Execution,
        limits: Limits,
        vector_backend: VectorBackend = "auto",
        step_timeout: float | None = None,
        busy_poll: float = DEFAULT_BUSY_POLL,
    ) -> None:
        if max_sessions < 1:
            raise ValueError(f"max_sessions must be at least 1, not {max_sessions}")
        if session_timeout is not None and session_timeout <= 0:
            raise ValueError(f"session_timeout must be positive or None, not {session_timeout}")
        self.source = source
        #: What serves one ``/ws`` connection.
        self.session_type: type[Session] = FieldsSession if source.fields is not None else Session
        self.max_sessions = max_sessions
        self.session_timeout = session_timeout
        self.execution = execution
        if vector_backend not in ("auto", "sync", "async"):
            raise ValueError(f"vector_backend must be 'auto', 'sync' or 'async', not {vector_backend!r}")
        self.vector_backend = vector_backend
        #: How long one env step takes in this process (for ``vector_backend="auto"``).
        self.env_steps = StepClock()
        self.step_timeout = step_timeout
        self.busy_poll = BusyPoll(busy_poll)
        self.env_caller()  # checks the combination now
        self.limits = limits
        self.sessions: dict[str, tuple[Session, asyncio.Task]] = {}
        self.draining = False
        self.metrics = Metrics()
        self._reaper: asyncio.Task | None = None
        self.schema = _json(schema_document(source))
        self.metadata = _json(metadata_document(source))
        self.openapi = _json(openapi_document(source.env_id or source.name))

    # -- WebSocket sessions -------------------------------------------------

    async def accept(self, websocket: Channel):
        """Accept a WebSocket with the best subprotocol offered; returns
        ``(codec, chosen subprotocol, reply)`` where ``await reply(message)``
        encodes and sends one message."""
        offered = websocket.scope.get("subprotocols") or []
        chosen = next((p for p in SUBPROTOCOLS if p in offered), None)
        await websocket.accept(
            subprotocol=chosen, headers=[(PROCESS_HEADER.encode(), PROCESS_TOKEN.encode())]
        )
        codec = codec_for(chosen, self.limits)
        send = websocket.send_event
        frame_key = "bytes" if codec.binary else "text"

        metrics = self.metrics

        async def reply(message: dict) -> None:
            if message["type"] == "error":
                metrics.errors[message["data"].get("code", "?")] += 1
            try:
                frame = codec.encode(message)
            except Exception as exc:  # noqa: BLE001 - an unencodable reply is an env error
                frame = codec.encode(
                    error_message(
                        ErrorCode.EXECUTION_ERROR,
                        f"The reply could not be encoded: {type(exc).__name__}: {exc}",
                    )
                )
            await send({"type": "websocket.send", frame_key: frame})

        return codec, chosen, reply

    def env_caller(self) -> EnvCaller:
        """How one session runs its env calls (execution mode and step timeout)."""
        return EnvCaller(self.execution, timeout=self.step_timeout)

    def active_envs(self) -> int:
        """Environments held now: one per ``/ws`` session, N per vector session."""
        return sum(session.slots for session, _ in self.sessions.values())

    async def refuse_if_full(self, websocket: Channel, reply, requested: int = 1) -> bool:
        """Send CAPACITY_REACHED and close when ``requested`` more envs do not fit."""
        active = self.active_envs()
        if active + requested <= self.max_sessions:
            return False
        wanted = "" if requested == 1 else f" ({requested} requested)"
        await reply(
            error_message(
                ErrorCode.CAPACITY_REACHED,
                f"Server at capacity: {active}/{self.max_sessions} sessions active{wanted}. "
                f"Cannot accept new connections.",
                active_sessions=active,
                max_sessions=self.max_sessions,
            )
        )
        await websocket.close(1000)
        return True

    async def websocket(self, websocket: Channel, make_session: type[Session] | None = None) -> None:
        codec, chosen, reply = await self.accept(websocket)
        if await self.refuse_if_full(websocket, reply):
            return

        session = (make_session or self.session_type)(
            self.source,
            arrays=codec.binary,
            extended=chosen is not None,
            caller=self.env_caller(),
        )
        async with self.hosting(websocket, session, reply):
            await session.start()
            await self.serve_messages(websocket, session, codec, reply)

    @contextlib.asynccontextmanager
    async def hosting(self, websocket: Channel, session: Any, reply) -> AsyncIterator[None]:
        """Hold ``session`` in the server for the life of its connection.

        Registers it (for capacity, the idle reaper and shutdown), answers a
        protocol error that ends the session with its error frame, turns a
        stop by the server (idle timeout, shutdown) into a SESSION_ERROR frame
        saying why, and always closes the env and then the socket.
        """
        task = asyncio.current_task()
        assert task is not None
        self.sessions[session.id] = (session, task)
        self.metrics.sessions_total += 1
        self._start_reaper()
        client = websocket.scope.get("client")
        peer = f"{client[0]}:{client[1]}" if client else "?"
        logger.debug(
            "session_open id=%s kind=%s peer=%s encoding=%s active=%d",
            session.id, type(session).__name__, peer,
            "msgpack" if session.arrays else "json", self.active_envs(),
        )
        try:
            yield
        except WireError as exc:
            await _quietly(reply(exc.to_message()))
        except asyncio.CancelledError:
            if session.stop_reason is None:
                raise
        except Exception as exc:  # noqa: BLE001 - a bug must not take the server down
            logger.exception("session_failed id=%s", session.id)
            await _quietly(
                reply(error_message(ErrorCode.SESSION_ERROR, f"The server failed: {type(exc).__name__}: {exc}"))
            )
        finally:
            self.sessions.pop(session.id, None)
            await session.close()
            if session.stop_reason is not None:
                await _quietly(reply(error_message(ErrorCode.SESSION_ERROR, session.stop_reason)))
            await _quietly(websocket.close(1001 if self.draining else 1000))
            logger.debug(
                "session_close id=%s reason=%s active=%d", session.id,
                "server" if session.stop_reason else "client", self.active_envs(),
            )

    async def serve_messages(
        self,
        websocket: Channel,
        session: Any,
        codec: Codec,
        reply,
        parse: Callable[[Any], ClientMessage] = parse_client_message,
    ) -> None:
        """Answer ``session``'s messages until ``close``, a disconnect, or a
        closing error (raised, for :meth:`hosting` to send).

        ``parse`` validates each decoded message (``/ws`` and ``/agents`` use
        OpenEnv's rules; ``/vector`` its own message types).

        After each reply to a peer on this machine (but not in this process)
        whose env calls run inline, the loop busy-polls for the next message
        (see :mod:`.polling`).
        """
        client = websocket.scope.get("client")
        elsewhere = websocket.headers.get(PROCESS_HEADER) != PROCESS_TOKEN
        local = bool(client) and is_loopback(client[0]) and elsewhere
        while (frame := await next_frame(websocket, codec)) is not None:
            message = None
            try:
                message = parse(codec.decode(frame))
                if message.type == "close":
                    return
                session.busy = True
                self.metrics.messages[message.type] += 1
                started = time.perf_counter()
                session.call.seconds = 0.0
                answer = await session.handle(message)
                if message.type == "step":
                    self.metrics.observe_step(time.perf_counter() - started)
                    if session.in_process:
                        self.env_steps.observe(session.call.seconds / session.slots)
            except WireError as exc:
                if exc.code in CLOSING_ERRORS:
                    raise
                answer = exc.to_message()
            except Exception as exc:  # noqa: BLE001 - a bug must not take the server down
                logger.exception("session_failed id=%s", session.id)
                raise WireError(
                    ErrorCode.SESSION_ERROR,
                    f"The server failed while handling "
                    f"{repr(message.type) if message else 'a frame'}: "
                    f"{type(exc).__name__}: {exc}",
                ) from exc
            finally:
                session.busy = False
            await reply(answer)
            if session.stop_reason is not None:  # the server is draining
                return
            if local and session.call.inline:
                self.busy_poll.after_reply()

    # -- idle sessions ------------------------------------------------------

    def _start_reaper(self) -> None:
        if self.session_timeout is None or (self._reaper and not self._reaper.done()):
            return
        self._reaper = asyncio.get_running_loop().create_task(self._reap())

    async def _reap(self) -> None:
        timeout = self.session_timeout
        assert timeout is not None
        while self.sessions:
            await asyncio.sleep(max(min(timeout / 4, 5.0), 0.05))
            now = time.monotonic()
            for session, task in list(self.sessions.values()):
                if now - session.last_activity > timeout and not task.done():
                    session.stop_reason = f"Session closed after {timeout} s without a message"
                    task.cancel()

    # -- shutdown -----------------------------------------------------------

    async def drain(self, timeout: float) -> None:
        """Stop taking sessions and end the open ones gracefully.

        A session waiting for a message is closed at once; one in the middle
        of an env call finishes it and sends the reply first. Each gets a
        SESSION_ERROR frame saying the server is shutting down, then close
        code 1001. Returns when all are gone or after ``timeout`` seconds.
        """
        self.draining = True
        self.busy_poll.stop()
        reason = "The server is shutting down; reconnect to another server or later"
        for session, task in list(self.sessions.values()):
            session.stop_reason = reason
            if not session.busy and not task.done():
                task.cancel()
        deadline = time.monotonic() + timeout
        while self.sessions and time.monotonic() < deadline:
            await asyncio.sleep(0.02)
        if self.sessions:
            logger.warning("drain_timeout sessions_left=%d", len(self.sessions))

    # -- HTTP ---------------------------------------------------------------

    async def _http_session(self, kind: str, data: dict | None, *, reset: dict | None = None):
        """Run one message on a throwaway session, like OpenEnv's stateless HTTP routes."""
        session = self.session_type(self.source, arrays=False, caller=EnvCaller("thread"))
        try:
            await session.start()
            if reset is not None:
                await session.handle(ClientMessage("reset", reset))
            return await session.handle(ClientMessage(kind, data))
        finally:
            await session.close()

    async def http_reset(self, request: Request) -> Response:
        body = await _body(request)
        if not isinstance(body, dict):
            return _json({"detail": "The request body must be a JSON object"}, 422)
        return await self._http_answer("reset", body)

    async def http_step(self, request: Request) -> Response:
        body = await _body(request)
        if not isinstance(body, dict) or not isinstance(body.get("action"), dict):
            return _json(
                {
                    "detail": [
                        {
                            "type": "missing",
                            "loc": ["body", "action"],
                            "msg": "Field required: an object with the action fields",
                        }
                    ]
                },
                422,
            )
        reset = {"seed": body["seed"]} if isinstance(body.get("seed"), int) else {}
        return await self._http_answer("step", body["action"], reset=reset)

    async def _http_answer(self, kind: str, data: dict, *, reset: dict | None = None) -> Response:
        try:
            answer = await self._http_session(kind, data, reset=reset)
        except WireError as exc:
            if exc.code is ErrorCode.VALIDATION_ERROR:
                return _json({"detail": exc.extra.get("errors", exc.message)}, 422)
            return _json({"detail": exc.message, "code": exc.code.value}, 500)
        return _json(answer["data"])

    async def http_state(self, request: Request) -> Response:
        return _json(
            {"episode_id": None, "step_count": 0, "env_id": self.source.env_id, "seed": None}
        )

    async def health(self, request: Request) -> Response:
        """Readiness, with capacity: ``status`` stays ``"healthy"`` while the
        server takes sessions (the OpenEnv validator wants exactly that) and is
        ``"draining"`` (HTTP 503) while it shuts down."""
        active = self.active_envs()
        return _json(
            {
                "status": "draining" if self.draining else "healthy",
                "active_sessions": active,
                "max_sessions": self.max_sessions,
                "available_sessions": max(self.max_sessions - active, 0),
            },
            503 if self.draining else 200,
        )

    async def metrics_endpoint(self, request: Request) -> Response:
        text = self.metrics.render(
            sessions_active=self.active_envs(), max_sessions=self.max_sessions,
            draining=self.draining,
        )
        return Response(text, media_type="text/plain; version=0.0.4")

    async def mcp_http(self, request: Request) -> Response:
        raw = await request.body()
        try:
            payload = json.loads(raw)
        except ValueError:
            return _json(PARSE_ERROR)
        return _json(handle_jsonrpc(payload))

    async def mcp_ws(self, websocket: WebSocket) -> None:
        await websocket.accept()
        try:
            while True:
                event = await websocket.receive()
                if event["type"] == "websocket.disconnect":
                    return
                text = event.get("text")
                try:
                    payload = json.loads(text if text is not None else event.get("bytes") or b"")
                except ValueError:
                    answer = PARSE_ERROR
                else:
                    answer = handle_jsonrpc(payload)
                await websocket.send_text(json.dumps(answer))
        finally:
            await _quietly(websocket.close(1000))


async def _body(request: Request) -> Any:
    raw = await request.body()
    if not raw.strip():
        return {}
    try:
        return json.loads(raw)
    except ValueError:
        return None


async def _quietly(awaitable) -> None:
    with contextlib.suppress(Exception):
        await awaitable


def create_app(
    env: EnvLike,
    *,
    env_kwargs: dict[str, Any] | None = None,
    max_sessions: int = DEFAULT_MAX_SESSIONS,
    session_timeout: float | None = DEFAULT_SESSION_TIMEOUT,
    execution: Execution = "auto",
    limits: Limits | None = None,
    step_timeout: float | None = None,
    token: str | None = None,
    vector_backend: VectorBackend = "auto",
    opponent: Opponent | None = None,
    busy_poll: float = DEFAULT_BUSY_POLL,
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
        execution: how env calls run, see :data:`~openenv_gym.server.session.Execution`.
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
            envs on a many-core server); ``"auto"`` (the default), ``"sync"``
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

    The environment is built once here to read its spaces, so a broken factory
    fails now rather than in the first session.
    """
    source = resolve(env, **(env_kwargs or {}))
    if opponent is not None:
        if source.multiagent is None:
            raise TypeError("opponent= applies to PettingZoo environments only")
        source.multiagent.opponent = opponent
    server = _Server(
        source,
        max_sessions=max_sessions,
        session_timeout=session_timeout,
        execution=execution,
        limits=limits or Limits(),
        vector_backend=vector_backend,
        step_timeout=step_timeout,
        busy_poll=busy_poll,
    )

    def constant(response: Response):
        async def endpoint(request: Request) -> Response:
            return response

        return endpoint

    routes = [
        WebSocketRoute("/ws", SessionEndpoint(server.websocket)),
        WebSocketRoute(VECTOR_PATH, SessionEndpoint(lambda channel: serve_vector(server, channel))),
        WebSocketRoute("/mcp", server.mcp_ws),
        Route("/reset", server.http_reset, methods=["POST"]),
        Route("/step", server.http_step, methods=["POST"]),
        Route("/state", server.http_state, methods=["GET"]),
        Route("/health", server.health, methods=["GET"]),
        Route("/metrics", server.metrics_endpoint, methods=["GET"]),
        Route("/schema", constant(server.schema), methods=["GET"]),
        Route("/metadata", constant(server.metadata), methods=["GET"]),
        Route("/openapi.json", constant(server.openapi), methods=["GET"]),
        Route("/mcp", server.mcp_http, methods=["POST"]),
    ]
    if source.multiagent is not None:
        routes.append(
            WebSocketRoute(AGENTS_PATH, SessionEndpoint(lambda channel: serve_agents(server, channel)))
        )
    token = token if token is not None else token_from_env()
    middleware = [Middleware(TokenAuth, token=token)] if token else []
    app = Starlette(routes=routes, middleware=middleware)
    app.state.openenv_gym = server
    return app
