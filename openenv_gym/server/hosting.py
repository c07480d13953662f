"""The server's core: it hosts sessions on WebSocket routes and answers their messages.

:class:`Server` holds what every route shares (the env source, capacity,
limits, metrics, the idle reaper, shutdown) and drives each
:class:`~openenv_gym.server.routes.Route` the same way, in
:meth:`Server.serve_route`:

1. accept the handshake with the best subprotocol offered, which fixes the
   session's :class:`~openenv_gym.protocol.Codec`;
2. read the route's opening message, if it has one;
3. refuse with CAPACITY_REACHED when the session's envs do not fit;
4. host the session (:meth:`Server.hosting`): build its env, then answer its
   messages (:meth:`Server.serve_messages`) until ``close``, a disconnect, an
   error that ends it, the idle reaper or shutdown.

Sessions may also outlive their sockets (:class:`Held`): ``openenv/session/create``
and MCP's ``initialize`` on ``POST /mcp`` open one (:meth:`Server.open_session`),
``POST /mcp`` requests naming it run on it, one ``/ws?session_id=...`` socket at a time
attaches to it, and ``openenv/session/close`` (or the idle reaper, or shutdown) ends it.
They count against capacity like any other, and against a smaller cap of their own
(``max_held_sessions``, a quarter of ``max_sessions`` by default), and are closed
sooner when idle with no socket attached (``held_session_timeout``): one client that
holds no socket cannot take every slot from those that do, nor keep it long.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from .._local import PROCESS_TOKEN, is_loopback
from ..errors import CLOSING_ERRORS, ErrorCode, ProtocolError
from ..protocol import (
    PROCESS_HEADER,
    SUBPROTOCOLS,
    ClientMessage,
    Close,
    Codec,
    ErrorReply,
    McpReply,
    McpRequest,
    ServerMessage,
    codec_for,
    parse_message,
)
from ..protocol.mcp import SERVER_ERROR, error_response
from .auth import token_from_env
from .eager import Suspended
from .execution import EnvCaller, Execution, HungCalls
from .jsonrpc import unknown_session
from .latency import BusyPoll
from .metrics import Metrics
from .native import NativeChannel
from .options import ServeOptions
from .routes import Opening, Route
from .session import ENV_LOST, EnvHost
from .source import EnvSource
from .telemetry import Answer, Recorded, SessionTelemetry, telemetry_token
from .transport import CONNECTION_LOST, LATER, Channel

__all__ = ["Server", "Held", "Reply", "AT_ONCE"]

logger = logging.getLogger("openenv_gym.server")

#: Sends one message to the session's peer.
Reply = Callable[[ServerMessage], Awaitable[None]]

#: The messages a channel that can answers in the callback that received them (:mod:`.eager`):
#: those whose answers need no task of their own (MCP's requests may open a session, which
#: registers the task that holds it).
AT_ONCE = frozenset({"step", "reset", "state", "render"})

#: Seconds one step of ending a session (closing its env, a last frame) may take.
GOODBYE_TIMEOUT = 5.0


@dataclass
class Held:
    """A session that outlives its sockets, and who uses it."""

    session: EnvHost
    #: Set to end it.
    released: asyncio.Event = field(default_factory=asyncio.Event)
    #: The task serving the ``/ws`` socket attached to it, if any.
    attached: asyncio.Task | None = None
    #: ``openenv/session/close`` arrived while a socket was attached: it ends when that socket does.
    closing: bool = False


class Server:
    """State shared by every route of one app."""

    def __init__(self, source: EnvSource, options: ServeOptions | None = None) -> None:
        self.source = source
        #: How this server serves (checked when it was built).
        self.options = options = options or ServeOptions()
        #: Sessions that outlive their sockets held at once (a quarter of the slots by default).
        self.max_held_sessions = options.held_sessions()
        #: Seconds a held session may idle with no socket attached: at most ``session_timeout``.
        self.held_session_timeout = options.held_timeout()
        #: The token every route asks for (``None``: none): the option, else ``$OPENENV_GYM_TOKEN``.
        self.token = options.token if options.token is not None else token_from_env()
        #: The WebSocket routes, by path (the app's, which a native listener serves too).
        self.routes: dict[str, Route] = {}
        #: What ``/schema`` advertises of the native listener while one listens (``None``: none).
        self.native: dict[str, Any] | None = None
        #: The token that opens session telemetry (``None``: telemetry is off).
        self.validation_token = telemetry_token(options.validation_token, options.served_mode())
        #: Env calls its sessions abandoned that still run (they hold threads and envs).
        self.hung_calls = HungCalls()
        #: The loop's busy-polling window, shared by every session.
        self.busy_poll = BusyPoll(options.latency.busy_poll)
        self.sessions: dict[str, tuple[EnvHost, asyncio.Task]] = {}
        #: The sessions that outlive their sockets (also in :attr:`sessions`).
        self.held: dict[str, Held] = {}
        #: Held sessions whose env is being built (counted against :attr:`max_held_sessions`).
        self._held_opening = 0
        self.draining = False
        self.metrics = Metrics()
        self._reaper: asyncio.Task | None = None

    def env_caller(self, execution: Execution | None = None) -> EnvCaller:
        """How one session runs its env calls (execution mode, step timeout, and
        whether its env needs the process's one thread). ``execution`` overrides
        the server's mode, but not isolation: a server that runs each env in a
        process of its own (under its memory cap) runs every one so, a stateless
        request's too."""
        served = self.options.execution
        return EnvCaller(
            served if served == "process" else execution or served,
            policy=self.options.latency,
            timeout=self.options.step_timeout,
            hung=self.hung_calls,
            single_thread=self.source.single_thread,
            memory_mb=self.options.env_memory_mb,
        )

    def active_envs(self) -> int:
        """Environments held now: one per ``/ws`` or HTTP session, N per vector
        session, and one per env call still running on a thread its session
        abandoned (:attr:`hung_calls`)."""
        return sum(session.slots for session, _ in self.sessions.values()) + len(self.hung_calls)

    def capacity_error(self, requested: int = 1) -> ProtocolError | None:
        """CAPACITY_REACHED when ``requested`` more envs do not fit, else ``None``."""
        active = self.active_envs()
        if active + requested <= self.options.max_sessions:
            return None
        wanted = "" if requested == 1 else f" ({requested} requested)"
        return ProtocolError(
            ErrorCode.CAPACITY_REACHED,
            f"Server at capacity: {active}/{self.options.max_sessions} sessions active{wanted}. "
            f"Cannot accept new connections.",
            active_sessions=active,
            max_sessions=self.options.max_sessions,
        )

    @contextlib.asynccontextmanager
    async def holding(self, session: EnvHost) -> AsyncIterator[None]:
        """Hold a session that has no connection of its own (a stateless HTTP
        request's) for the ``with`` block: counted against capacity (raising
        CAPACITY_REACHED when it does not fit), seen by shutdown, and closed after."""
        if (error := self.capacity_error(session.slots)) is not None:
            raise error
        task = asyncio.current_task()
        assert task is not None
        self.sessions[session.id] = (session, task)
        session.registry = self
        try:
            yield
        finally:
            await _closed(self, session)

    # -- one connection -------------------------------------------------------------

    async def serve_route(self, route: Route, channel: Channel) -> None:
        """Serve one WebSocket connection of ``route``, start to end."""
        codec, reply = await self.accept(channel)
        opening: ClientMessage | None = None
        if route.opening is not None:
            try:
                opening = await self._opening(channel, codec, route)
            except ProtocolError as exc:
                await reply(route.error_reply(exc))
                await channel.close(1000)
                return
            if opening is None:
                return
        if route.attachable and (session_id := channel.query_params.get("session_id")):
            await self._serve_attached(session_id, channel, codec, reply, route)
            return
        session = route.session(Opening(codec, channel.query_params, opening, self.env_caller()))
        if (error := self.capacity_error(session.slots)) is not None:
            await reply(route.error_reply(error))
            await channel.close(1000)
            return
        async with self.hosting(channel, session, reply, route):
            await session.start()
            if (opened := session.opened()) is not None:
                await reply(opened)
            await self.serve_messages(channel, session, codec, reply, route)

    async def _serve_attached(
        self, session_id: str, channel: Channel, codec: Codec, reply: Reply, route: Route
    ) -> None:
        """Serve a socket attached to a held session (``/ws?session_id=...``): its
        messages go to that session, which lives on when the socket closes."""
        held = self.held.get(session_id)
        if held is None or held.attached is not None:
            why = (
                unknown_session(session_id) if held is None
                else f"Session {session_id} already has an attached WebSocket"
            )
            await reply(route.error_reply(ProtocolError(ErrorCode.SESSION_ERROR, why)))
            await channel.close(1000)
            return
        held.attached = asyncio.current_task()
        session = held.session
        session.speak(codec, channel.query_params)
        async with self.hosting(channel, session, reply, route, held=held):
            await self.serve_messages(channel, session, codec, reply, route)

    async def accept(self, channel: Channel) -> tuple[Codec, Reply]:
        """Accept a WebSocket with the best subprotocol offered; returns its codec
        and ``reply``, which encodes and sends one message."""
        offered = channel.scope.get("subprotocols") or []
        chosen = next((p for p in SUBPROTOCOLS if p in offered), None)
        await channel.accept(
            subprotocol=chosen, headers=[(PROCESS_HEADER.encode(), PROCESS_TOKEN.encode())]
        )
        codec = codec_for(chosen, self.options.limits)
        send, section = channel.send_frame, channel.section
        metrics = self.metrics

        async def reply(message: ServerMessage) -> None:
            if isinstance(message, ErrorReply):
                metrics.errors[ErrorCode(message.code).value] += 1
            try:
                frame = codec.encode(message.to_wire(), section)
            except Exception as exc:  # noqa: BLE001 - an unencodable reply is an env error
                frame = codec.encode(
                    ErrorReply(
                        ErrorCode.EXECUTION_ERROR,
                        f"The reply could not be encoded: {type(exc).__name__}: {exc}",
                    ).to_wire()
                )
            try:
                await send(frame)
            except OSError:
                pass  # the peer is gone: reading the next frame ends the session, quietly

        return codec, reply

    async def _opening(self, channel: Channel, codec: Codec, route: Route) -> ClientMessage | None:
        """The route's opening message (``None`` if the peer left first), which must
        come within ``handshake_timeout`` seconds: a connection holds no session,
        and counts against nothing, until it does."""
        assert route.opening is not None
        timeout = self.options.handshake_timeout
        try:
            frame = await asyncio.wait_for(channel.next_frame(codec), timeout)
        except asyncio.TimeoutError:
            expected = ", ".join(route.opening)
            raise ProtocolError(
                ErrorCode.SESSION_ERROR, f"No {expected} message within {timeout} s of the handshake"
            ) from None
        if frame is None:
            return None
        assert not isinstance(frame, Suspended), "nothing is answered at once before the session opens"
        return parse_message(codec.decode(frame), route.opening, expected=True)

    @contextlib.asynccontextmanager
    async def hosting(
        self, channel: Channel, session: EnvHost, reply: Reply, route: Route, *, held: Held | None = None
    ) -> AsyncIterator[None]:
        """Hold ``session`` in the server for the life of its connection.

        Registers it (for capacity, the idle reaper and shutdown), answers a
        protocol error that ends the session with its error frame, turns a
        stop by the server (idle timeout, shutdown) into a SESSION_ERROR frame
        saying why, and always closes the env and then the socket. A ``held``
        session (the socket attached to it) is already registered, and lives on
        after the socket, unless it was asked to close meanwhile.

        A session of its own socket ends as soon as its client is gone, even in
        the middle of an env call (:data:`~.transport.CONNECTION_LOST`): the
        call is cancelled, an env in its own process killed, a call on the
        session's thread abandoned (see :meth:`EnvHost.close`).
        """
        task = asyncio.current_task()
        assert task is not None
        if held is None:
            self.sessions[session.id] = (session, task)
            self.metrics.sessions_total += 1
            session.registry = self
            self._start_reaper()
            channel.scope[CONNECTION_LOST] = functools.partial(_client_gone, session, task)
        client = channel.scope.get("client")
        peer = f"{client[0]}:{client[1]}" if client else "?"
        logger.debug(
            "session_open id=%s kind=%s peer=%s encoding=%s active=%d",
            session.id, type(session).__name__, peer, session.codec.name, self.active_envs(),
        )
        try:
            yield
        except ProtocolError as exc:
            await _bounded(reply(route.error_reply(exc)))
        except asyncio.CancelledError:
            if session.stop_reason is None:
                raise
        except Exception as exc:  # noqa: BLE001 - a bug must not take the server down
            logger.exception("session_failed id=%s", session.id)
            failed = ProtocolError(ErrorCode.SESSION_ERROR, f"The server failed: {type(exc).__name__}: {exc}")
            await _bounded(reply(route.error_reply(failed)))
        finally:
            # Each step of the goodbye is bounded: an env whose close hangs, or a
            # peer that reads nothing, must not keep the session (or shutdown) waiting.
            if held is None:
                await _closed(self, session)
            else:
                held.attached = None
                if held.closing:
                    held.released.set()
            if session.stop_reason is not None:
                stopped = ProtocolError(ErrorCode.SESSION_ERROR, session.stop_reason)
                await _bounded(reply(route.error_reply(stopped)))
            await _bounded(channel.close(1001 if self.draining else 1000))
            logger.debug(
                "session_close id=%s reason=%s active=%d", session.id,
                "server" if session.stop_reason else "client", self.active_envs(),
            )

    def answerer(self, session: EnvHost, route: Route, codec: Codec) -> Answer:
        """How one connection's messages are answered, chosen when it opens: by the
        session, each step timed for the server's metrics; on a route
        with session telemetry, of a server with a validation token, through the
        socket's :class:`~.telemetry.SessionTelemetry` (:class:`~.telemetry.Recorded`:
        it answers ``validation_open`` / ``validation_read`` and, once opened, records
        the exchanges); without, nothing is recorded."""
        observe_step = self.metrics.observe_step
        respond = session.respond
        perf_counter = time.perf_counter

        async def answer(message: ClientMessage, decoded: Any) -> ServerMessage | None:
            started = perf_counter()
            response, _ = await respond(message)
            if message.type == "step":
                observe_step(perf_counter() - started)
            return response

        if route.telemetry and self.validation_token:
            return Recorded(SessionTelemetry(self.validation_token), answer, codec)
        return answer

    async def serve_messages(
        self, channel: Channel, session: EnvHost, codec: Codec, reply: Reply, route: Route
    ) -> None:
        """Answer ``session``'s messages until ``close``, a disconnect, or a
        closing error (raised, for :meth:`hosting` to send): decode, parse, answer
        (:meth:`answerer`), reply.

        A channel that can (the native listener's) begins the answers to the messages of
        :data:`AT_ONCE` in the callback that received them (:mod:`.eager`), while this
        task waits for the next frame: it then finishes only what had to wait.

        After each reply to a peer on this machine (but not in this process)
        whose env calls run inline, the loop busy-polls for the next message
        (see :class:`.latency.BusyPoll`).
        """
        client = channel.scope.get("client")
        elsewhere = channel.headers.get(PROCESS_HEADER) != PROCESS_TOKEN
        local = client is not None and is_loopback(client[0]) and elsewhere
        counted = self.metrics.messages
        observe_step = self.metrics.observe_step
        answered = self.answerer(session, route, codec)
        # A plain step takes the session's shortest path, but where telemetry records exchanges.
        step_now = None if isinstance(answered, Recorded) else session.step_now
        busy_poll = self.busy_poll
        perf_counter = time.perf_counter

        async def answer(frame: str | bytes, at_once: bool = False) -> Any:
            """Answer one frame; whether the session goes on (:data:`LATER`: not answered,
            a message ``at_once`` leaves to this task)."""
            message = None
            try:
                decoded = codec.decode(frame)
                started = perf_counter()
                try:
                    response = None if step_now is None else step_now(decoded)
                except ENV_LOST as lost:
                    counted["step"] += 1
                    await session.recycle(lost)
                except ProtocolError:
                    counted["step"] += 1
                    raise
                if response is not None:
                    counted["step"] += 1
                    observe_step(perf_counter() - started)
                else:
                    message = route.parse(decoded)
                    if at_once and message.type not in AT_ONCE:
                        return LATER
                    if isinstance(message, Close):
                        return False
                    counted[message.type] += 1
                    response = await answered(message, decoded)
                    if response is None:  # a JSON-RPC notification
                        return True
            except ProtocolError as exc:
                if exc.code in CLOSING_ERRORS:
                    raise
                response = route.error_reply(exc)
            except Exception as exc:  # noqa: BLE001 - a bug must not take the server down
                logger.exception("session_failed id=%s", session.id)
                raise ProtocolError(
                    ErrorCode.SESSION_ERROR,
                    f"The server failed while handling "
                    f"{repr(message.type) if message else 'a frame'}: "
                    f"{type(exc).__name__}: {exc}",
                ) from exc
            await reply(response)
            # Hold no reply while waiting for the next message: its arrays may be views an
            # env still owns (PettingZoo's state() of a pygame screen locks the screen while
            # a view of its pixels lives, and the next step draws on it).
            del response
            if session.stop_reason is not None:  # the server is draining
                return False
            if local and session.inline:
                busy_poll.after_reply()
            return True

        if isinstance(channel, NativeChannel):
            channel.answer_at_once = functools.partial(answer, at_once=True)
        try:
            while (frame := await channel.next_frame(codec)) is not None:
                goes_on = await frame if isinstance(frame, Suspended) else await answer(frame)
                if not goes_on:
                    return
        finally:
            if isinstance(channel, NativeChannel):
                channel.discard()

    # -- sessions that outlive their sockets ----------------------------------------

    async def open_session(self, *, spec: bool = False) -> EnvHost:
        """Open a session with no socket of its own (``openenv/session/create``, MCP's
        ``initialize``): counted against capacity and the cap of held sessions, built now
        (CAPACITY_REACHED or FACTORY_ERROR if not), ended by :meth:`close_session`, the
        idle reaper or shutdown."""
        if self.draining:
            raise ProtocolError(ErrorCode.SESSION_ERROR, "The server is shutting down; open a session elsewhere")
        source = self.source
        codec = codec_for(None, self.options.limits)
        session: EnvHost = source.session_type(source, codec=codec, caller=self.env_caller())
        if (error := self.capacity_error(session.slots) or self._held_cap_error()) is not None:
            raise error
        task = asyncio.current_task()
        assert task is not None
        self.sessions[session.id] = (session, task)  # counted while its env is built
        session.registry, session.spec, session.lock = self, spec, asyncio.Lock()
        self._held_opening += 1
        try:
            await session.start()
        except BaseException:
            self.sessions.pop(session.id, None)
            await _bounded(session.close())
            raise
        finally:
            self._held_opening -= 1
        held = Held(session)
        self.held[session.id] = held
        self.sessions[session.id] = (session, asyncio.get_running_loop().create_task(self._keep(held)))
        self.metrics.sessions_total += 1
        self._start_reaper()
        logger.debug("session_open id=%s kind=held active=%d", session.id, self.active_envs())
        return session

    def held_sessions(self) -> int:
        """Sessions that outlive their sockets, open or being built."""
        return len(self.held) + self._held_opening

    def _held_cap_error(self) -> ProtocolError | None:
        """CAPACITY_REACHED when one more held session would pass :attr:`max_held_sessions`."""
        held = self.held_sessions()
        if held < self.max_held_sessions:
            return None
        idle = f"; idle ones close after {self.held_session_timeout} s" if self.held_session_timeout else ""
        return ProtocolError(
            ErrorCode.CAPACITY_REACHED,
            f"Server at capacity for held sessions: {held}/{self.max_held_sessions} sessions that outlive their "
            f"sockets (openenv/session/create, MCP's initialize) are open{idle}. Close one "
            f"(openenv/session/close, DELETE /mcp), use a /ws or WS /mcp session (its socket holds it), "
            f"or raise the cap (max_held_sessions=, --max-held-sessions).",
            held_sessions=held,
            max_held_sessions=self.max_held_sessions,
        )

    def find_session(self, session_id: str) -> EnvHost | None:
        """The held session of that id, or ``None``."""
        held = self.held.get(session_id)
        return None if held is None else held.session

    async def close_session(self, session_id: str) -> dict[str, Any] | None:
        """End a held session (``None`` if there is none of that id). With a socket
        attached, it ends when the socket does (``"closing": true``), as OpenEnv does."""
        held = self.held.get(session_id)
        if held is None:
            return None
        if held.attached is not None:
            held.closing = True
            return {"session_id": session_id, "closed": False, "closing": True}
        keeper = self.sessions[session_id][1]
        held.released.set()
        await asyncio.wait({keeper}, timeout=2 * GOODBYE_TIMEOUT)
        return {"session_id": session_id, "closed": True}

    async def fresh_session(self, payload: Any, *, spec: bool) -> dict[str, Any] | None:
        """The answer to a JSON-RPC request on a throwaway session, as OpenEnv answers
        ``tools/*`` that name no session: built, counted against capacity, closed after."""
        source = self.source
        codec = codec_for(None, self.options.limits)
        session = source.session_type(source, codec=codec, caller=self.env_caller("thread"))
        session.spec = spec
        try:
            async with self.holding(session):
                await session.start()
                reply, _ = await session.respond(McpRequest(payload))
        except ProtocolError as exc:
            request_id = payload.get("id") if isinstance(payload, dict) else None
            return error_response(request_id, SERVER_ERROR, exc.message, exc.extra or None)
        assert isinstance(reply, McpReply)
        return reply.response

    async def _keep(self, held: Held) -> None:
        """Keep a held session until it is released (or this task is cancelled: the
        reaper, shutdown), then end it: its attached socket first, then its env, once
        no request holds it."""
        session = held.session
        try:
            await held.released.wait()
        finally:
            self.held.pop(session.id, None)
            attached = held.attached
            try:
                if attached is not None and not attached.done():
                    session.stop_reason = session.stop_reason or "The session was closed"
                    if not session.busy:
                        attached.cancel()
                    await asyncio.wait({attached}, timeout=GOODBYE_TIMEOUT)
            finally:
                await _closed(self, session, self._close_held(session))
            logger.debug("session_close id=%s kind=held active=%d", session.id, self.active_envs())

    @staticmethod
    async def _close_held(session: EnvHost) -> None:
        """Close a held session's env once no request holds it, or at once when one
        is in the middle of an env call: an env in its own process is killed (that
        call fails, and the ending session gets no fresh env), a call on its
        thread abandoned (see :meth:`EnvHost.close`)."""
        session.stop_reason = session.stop_reason or "The session was closed"
        if session.busy:
            await session.close()
            return
        assert session.lock is not None
        async with session.lock:
            await session.close()

    # -- idle sessions --------------------------------------------------------------

    def _start_reaper(self) -> None:
        if self.held_session_timeout is None or (self._reaper and not self._reaper.done()):
            return
        self._reaper = asyncio.get_running_loop().create_task(self._reap())

    def _idle_timeout(self, session: EnvHost) -> float | None:
        """Seconds ``session`` may go without a message: a held session with no socket
        attached gets :attr:`held_session_timeout`, any other ``session_timeout``."""
        held = self.held.get(session.id)
        return self.held_session_timeout if held is not None and held.attached is None else self.options.session_timeout

    async def _reap(self) -> None:
        shortest = self.held_session_timeout  # the shortest idle timeout: never above session_timeout
        assert shortest is not None
        while self.sessions:
            await asyncio.sleep(max(min(shortest / 4, 5.0), 0.05))
            now = time.monotonic()
            for session, task in list(self.sessions.values()):
                timeout = self._idle_timeout(session)
                if timeout is not None and now - session.last_activity > timeout and not task.done():
                    session.stop_reason = f"Session closed after {timeout} s without a message"
                    task.cancel()

    # -- shutdown -------------------------------------------------------------------

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
            if (session.id in self.held or not session.busy) and not task.done():
                task.cancel()
        deadline = time.monotonic() + timeout
        while self.sessions and time.monotonic() < deadline:
            await asyncio.sleep(0.02)
        if self.sessions:
            logger.warning("drain_timeout sessions_left=%d", len(self.sessions))




def _client_gone(session: EnvHost, task: asyncio.Task) -> None:
    """End ``session`` (served by ``task``) if it is in the middle of a message when
    its client goes: between messages, reading the disconnect ends it."""
    if session.busy and not task.done():
        session.stop_reason = session.stop_reason or "The client disconnected"
        task.cancel()


async def _closed(server: Server, session: EnvHost, closing: Awaitable[Any] | None = None) -> None:
    """Close ``session`` (``closing``, its own close by default), then stop counting it: a
    call it abandons is counted among the server's hung calls before its slot is given
    back, so that capacity never reads a slot free that a hung call still holds
    (``/health`` between the two said so)."""
    try:
        await _bounded(session.close() if closing is None else closing)
    finally:
        server.sessions.pop(session.id, None)


async def _bounded(awaitable: Awaitable[Any]) -> None:
    """Await ``awaitable`` for at most :data:`GOODBYE_TIMEOUT` seconds, ignoring its failure."""
    with contextlib.suppress(Exception):
        await asyncio.wait_for(awaitable, GOODBYE_TIMEOUT)
