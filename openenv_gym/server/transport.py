"""The WebSocket side of every session route: what a connection is to the hosting loop
(:class:`Channel`), and the main port's: raw ASGI endpoints and uvicorn's protocols.

Session routes are raw ASGI endpoints (:class:`SessionEndpoint`): the handler
gets an :class:`AsgiChannel` (a Starlette WebSocket) for the handshake, the query
string and the close, while the per-message path reads and writes raw ASGI events,
skipping Starlette's per-message state checks and exception wrappers (a few
microseconds of a ~100 µs round trip). The native listener's connections
(:class:`~.native.NativeChannel`) carry frames with no ASGI events at all.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any, Protocol

from starlette.types import Receive, Scope, Send
from starlette.websockets import WebSocket
from uvicorn.protocols.http.h11_impl import H11Protocol
from uvicorn.protocols.websockets.websockets_sansio_impl import WebSocketsSansIOProtocol

from ..errors import ErrorCode, ProtocolError
from ..protocol import CODECS, Codec, SectionWriter
from .eager import Suspended

__all__ = [
    "Channel", "AsgiChannel", "SessionEndpoint", "BackpressuredWebSocket", "GuardedHttp", "PendingConnections",
    "CONNECTION_LOST", "LATER", "wrong_kind",
]

#: The scope key under which an app may leave a callable for :class:`BackpressuredWebSocket`
#: to call (with no arguments) when the connection is lost, whatever the app is doing then.
CONNECTION_LOST = "openenv_gym.connection_lost"


class PendingConnections:
    """The connections of one server waiting for a complete request, body included
    (new ones, kept-alive ones between requests, requests whose body is still coming),
    oldest first, at most ``limit`` of them: one more closes the oldest, as nginx
    reuses its oldest keep-alive connection when it runs out of them.

    Without it, a peer that opens connections and sends nothing (or headers promising
    a body it never sends) holds each, and a file descriptor, until the handshake
    timeout: a thousand of them exhaust a server's descriptors, and every client is
    refused until they time out. With it, such connections hold at most ``limit``
    descriptors, and a client that sends its request at once is never the oldest waiting.
    """

    def __init__(self, limit: int) -> None:
        if limit < 1:
            raise ValueError(f"the limit of pending connections must be at least 1, not {limit}")
        self.limit = limit
        self._waiting: dict[GuardedHttp, None] = {}  # insertion order: oldest first

    def add(self, connection: GuardedHttp) -> None:
        """``connection`` waits for a request from now on (the oldest waiting closed if need be)."""
        while len(self._waiting) >= self.limit:
            oldest = next(iter(self._waiting))
            del self._waiting[oldest]
            oldest.give_up()
        self._waiting[connection] = None

    def discard(self, connection: GuardedHttp) -> None:
        """``connection`` waits no more (a request came, or it is gone)."""
        self._waiting.pop(connection, None)


class GuardedHttp(H11Protocol):
    """uvicorn's HTTP/1.1 protocol, closing a connection that sends no complete
    request within ``handshake_timeout`` seconds (of its opening, or of the end
    of its previous response), or sooner when ``pending`` (shared by every
    connection of one server) needs its place for a newer one.

    uvicorn times out a kept-alive connection only while it is silent: a peer
    that opens connections and sends nothing, half a request line, or half a
    WebSocket upgrade, byte by byte, holds them (and a file descriptor each) for
    ever, before any token or capacity check can see it.
    """

    def __init__(self, *args: Any, handshake_timeout: float, pending: PendingConnections, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._handshake_timeout = handshake_timeout
        self._pending = pending
        self._deadline: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._arm()

    def handle_events(self) -> None:
        super().handle_events()
        cycle = self.cycle
        if self.transport.get_protocol() is not self:  # upgraded to a WebSocket
            self._disarm()
        elif cycle is not None and not cycle.response_complete:
            self._stop_clock()  # a request came: the app times the chunks of its body
            if not cycle.more_body:
                self._pending.discard(self)  # and all of it: it waits no more

    def on_response_complete(self) -> None:
        super().on_response_complete()
        self._arm()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)

    def _arm(self) -> None:
        self._stop_clock()
        self._deadline = self.loop.call_later(self._handshake_timeout, self.give_up)
        self._pending.add(self)

    def _disarm(self) -> None:
        self._stop_clock()
        self._pending.discard(self)

    def _stop_clock(self) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None

    def give_up(self) -> None:
        """Close the connection, which sent no complete request: in time, or before a
        newer connection needed its place."""
        self._disarm()
        if not self.transport.is_closing() and self.transport.get_protocol() is self:
            self.transport.close()


class BackpressuredWebSocket(WebSocketsSansIOProtocol):
    """uvicorn's WebSocket protocol, reading no more from a peer that reads nothing.

    uvicorn answers every ping at once, into the connection's write buffer,
    whether or not the peer reads: a peer that sends pings and never reads the
    pongs would grow the server's memory as fast as it sends. Here, while the
    write buffer is over its high-water mark, the connection stops reading
    (pings, messages, anything) until the peer has read enough: back-pressure
    in both directions, and a peer that stops reading only fills its own buffers.

    When the connection is lost (the peer closed it, vanished, or the server shut
    it), it calls what the app left in its scope under :data:`CONNECTION_LOST`:
    the app reads the disconnect only between messages, and a session in the
    middle of a call that never ends would not notice its client gone. Nothing
    is done per message. It is told as soon as the socket is read: while a call
    runs, unless the client sent its next message before leaving (the server reads
    no more until the call ends), when the keepalive ping notices.
    """

    _writing_paused = False

    def connection_lost(self, exc: Exception | None) -> None:
        super().connection_lost(exc)
        scope = getattr(self, "scope", None)  # none before the handshake
        lost = scope.get(CONNECTION_LOST) if scope is not None else None
        if lost is not None:
            lost()

    def pause_writing(self) -> None:
        super().pause_writing()
        self._writing_paused = True
        self.transport.pause_reading()

    def resume_writing(self) -> None:
        super().resume_writing()
        self._writing_paused = False
        if not self.read_paused:
            self.transport.resume_reading()

    async def receive(self) -> Any:
        message = await self.queue.get()
        if self.read_paused and self.queue.empty():
            self.read_paused = False
            if not self._writing_paused:
                self.transport.resume_reading()
        return message


class Channel(Protocol):
    """A WebSocket connection as the server's hosting loop uses one: the handshake's
    scope, query and headers, accepting it, frames in and out, closing it. The main port's
    is an :class:`AsgiChannel`; the native listener's a :class:`~.native.NativeChannel`."""

    scope: Any
    query_params: Any
    headers: Any

    @property
    def section(self) -> SectionWriter | None:
        """Where replies may put their arrays instead of in their frames (a peer on this
        machine that offered a shared section on the native listener), else ``None``."""

    async def accept(self, subprotocol: str | None = None, headers: Any = None) -> None: ...

    async def next_frame(self, codec: Codec) -> str | bytes | Suspended | None:
        """The next frame of the kind ``codec`` reads (or the rest of an answer begun at
        once, to await), or ``None`` once the peer is gone or the session is over.

        A frame of the other kind (binary on a JSON session, text on a msgpack
        one) ends the session with SESSION_ERROR, as OpenEnv does for binary
        frames; its message names the subprotocols of the codecs that send such frames.
        An answer begun at once that raised raises here, on the session's task."""

    async def send_frame(self, frame: str | bytes) -> None:
        """Send one message: ``bytes`` as a binary frame, ``str`` as a text frame."""

    async def close(self, code: int = 1000, reason: str | None = None) -> None: ...


class AsgiChannel(WebSocket):
    """The main port's :class:`Channel`: a Starlette WebSocket for the handshake, the
    query string and the close, whose frames go through the raw ASGI ``receive`` /
    ``send`` callables (no Starlette state checks or exception wrappers per message)."""

    #: Shared sections are the native listener's: a peer of the main port has none.
    section = None

    def __init__(self, scope: Scope, receive: Receive, send: Send) -> None:
        super().__init__(scope, receive, send)
        self._receive_event = receive
        self._send_event = send

    async def next_frame(self, codec: Codec) -> str | bytes | Suspended | None:
        frame_key, other_key = ("bytes", "text") if codec.binary else ("text", "bytes")
        while True:
            event = await self._receive_event()
            if event["type"] == "websocket.disconnect":
                return None
            frame = event.get(frame_key)
            if frame is not None:
                return frame
            if event.get(other_key) is not None:
                raise ProtocolError(ErrorCode.SESSION_ERROR, wrong_kind(codec))

    async def send_frame(self, frame: str | bytes) -> None:
        if isinstance(frame, str):
            await self._send_event({"type": "websocket.send", "text": frame})
        else:
            await self._send_event({"type": "websocket.send", "bytes": frame})


class SessionEndpoint:
    """A raw ASGI WebSocket endpoint calling ``handler(channel)``.

    Starlette routes an object like this as an ASGI app (a plain function would
    be wrapped in its per-message machinery).
    """

    def __init__(self, handler: Callable[[AsgiChannel], Awaitable[None]]) -> None:
        self.handler = handler

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await self.handler(AsgiChannel(scope, receive, send))


#: What an answer begun at once returns for a message it leaves to the session's task.
LATER = object()


def wrong_kind(codec: Codec) -> str:
    """What a peer that sent the other kind of frame than ``codec``'s is told: the kind to
    send, and the subprotocols of the codecs whose frames are of the kind it sent."""
    kind, other = ("binary", "text") if codec.binary else ("text", "binary")
    others = [c for c in CODECS if c.binary != codec.binary]
    told = f"This session speaks {codec.name}: send {kind} frames"
    if others:
        told += ", or negotiate " + " or ".join(f"the subprotocol {c.subprotocol!r} for {c.name}" for c in others)
        told += f" to send {other} frames"
    return told
