"""The native listener: the server's WebSocket routes on a second port, framed in C.

The main port runs the server as an ASGI app (uvicorn + Starlette), which every OpenEnv
client and validator speaks. Its WebSocket path costs most of a fast env's remote step:
uvicorn parses frames in Python, and each message crosses the ASGI layer as an event dict.
The native listener serves the same routes (``/ws``, ``/vector``, ``/agents``, ``/mcp``)
with the same :class:`~.hosting.Server` (its sessions, capacity, token, limits and drain)
through `picows <https://github.com/tarasko/picows>`_, which frames in C and hands each
frame to a callback: a message is read, answered and replied to with no ASGI hop.

``/schema`` advertises it under ``x-openenv-gym-native`` (``{"port": ..., "id": ...,
"version": 1}``; its handshake replies carry the ``id`` in the ``x-openenv-gym-native``
header), and openenv-gym's clients use it when they can reach it, the main port otherwise
(behind a proxy, a Hugging Face Space, a firewall): see :mod:`openenv_gym.client.native`.
Stock clients never look at it. It listens on the main port's host, on a free port unless
``serve(native_port=...)`` / ``--native-port`` says otherwise (``None`` / ``off``, or
``OPENENV_GYM_NATIVE=off`` in the environment: no native listener).

    >>> import json, urllib.request
    >>> from openenv_gym import local_server
    >>> with local_server("CartPole-v1") as url:
    ...     native = json.load(urllib.request.urlopen(url + "/schema"))["x-openenv-gym-native"]
    >>> sorted(native), native["version"]
    (['id', 'port', 'version'], 1)
"""

from __future__ import annotations

import asyncio
import collections
import hmac
import logging
import os
import secrets
import socket
from collections.abc import Callable, Coroutine, Mapping
from http import HTTPStatus
from typing import TYPE_CHECKING, Any

from starlette.datastructures import Headers, QueryParams

from .._local import PROCESS_TOKEN
from .._section import ServerSection, budget
from ..errors import ErrorCode, ProtocolError
from ..protocol import (
    NATIVE_HEADER,
    PROCESS_HEADER,
    SECTION_HEADER,
    SUBPROTOCOLS,
    Codec,
    MsgpackBuffersCodec,
    codec_class,
)
from .eager import Suspended, begin
from .logs import Throttled
from .transport import CONNECTION_LOST, LATER, wrong_kind

if TYPE_CHECKING:
    from .hosting import Server
    from .routes import Route

__all__ = ["NativeListener", "NativeChannel", "NATIVE_VERSION", "native_available", "native_wanted"]

logger = logging.getLogger("openenv_gym.server")
#: picows's own lines: a logger, not a name (picows prefixes names with "picows.", whose lines
#: would miss the server's handlers, its format and --log-format json), at WARNING: its
#: per-connection INFO lines repeat what the server logs of each session; its warnings (a
#: peer that broke the protocol) pass.
picows_logger = logging.getLogger("openenv_gym.server.native")
picows_logger.setLevel(logging.WARNING)


class _PicowsLog(logging.LoggerAdapter):
    """What picows logs, into :data:`picows_logger`; but a peer that broke the WebSocket
    protocol (an unmasked frame, a bad opcode, a frame over the limit), which picows logs
    as an ERROR, is a client's mistake that any client can repeat at will: it becomes one
    WARNING line (``invalid_frame``), throttled. (An adapter, not a filter: picows logs
    each connection's lines through a logger of its own under the one it is given.)"""

    _PARSER_ERROR = "WS parser error"

    def __init__(self) -> None:
        super().__init__(picows_logger, {})
        self._invalid = Throttled(logger, "invalid_frame")

    def log(self, level: int, msg: object, *args: Any, **kwargs: Any) -> None:
        if level >= logging.ERROR and isinstance(msg, str) and msg.startswith(self._PARSER_ERROR):
            self._invalid.warning("why=%s", msg % args if args else msg)
            return
        super().log(level, msg, *args, **kwargs)


#: Version of the native listener's advertisement (``x-openenv-gym-native`` in ``/schema``).
NATIVE_VERSION = 1

#: Messages a connection may have received and not yet answered before it is read no
#: more (a strict request-reply peer has one in flight; a pipelining one a few).
MAX_UNREAD = 16

#: Seconds a connection we closed is read for the peer's close frame before it is cut.
CLOSE_LINGER = 5.0

try:
    import picows
except ImportError:  # the native extra is not installed: the main port serves alone
    picows = None  # type: ignore[assignment]
else:
    _BINARY, _TEXT = picows.WSMsgType.BINARY, picows.WSMsgType.TEXT


def native_available() -> bool:
    """Whether this process can run a native listener (picows is installed)."""
    return picows is not None


def native_wanted() -> bool:
    """Whether servers start a native listener unless told: picows is installed, and
    ``$OPENENV_GYM_NATIVE`` is not ``off`` (``0``, ``false``, ``no``)."""
    setting = os.environ.get("OPENENV_GYM_NATIVE", "").strip().lower()
    return native_available() and setting not in ("off", "0", "false", "no")


class NativeChannel:
    """A WebSocket connection of the native listener as :meth:`~.hosting.Server.serve_route`
    uses one (:class:`~.transport.Channel`: the handshake's scope, its query and headers,
    frames in and out, the close), over one picows transport. The handshake is over when it
    exists: :meth:`accept` checks only that the server chose what picows already answered.

    A message that comes while the session's task waits for one, with none queued, is
    answered at once in picows's callback by :attr:`answer_at_once` (see :mod:`.eager`):
    no wake-up of the task, which gets only what has to wait (a :class:`~.eager.Suspended`
    answer, a message the server answers on the task, the error that ends the session).
    Frames travel as they are, in and out: no event object per message."""

    def __init__(self, scope: dict, subprotocol: str | None, section: ServerSection | None = None) -> None:
        self.scope = scope
        self.subprotocol = subprotocol
        #: The connection's shared section, if its client offered one (:mod:`openenv_gym._section`).
        self.section = section
        self.query_params = QueryParams(scope["query_string"])
        self.headers = Headers(scope=scope)
        self.transport: Any = None
        self.connection: Any = None
        self._tcp: Any = None  # the transport under the WebSocket
        #: Set by the server while it serves the session's messages: begins the answer to a
        #: frame (see :meth:`~.hosting.Server.serve_messages`), which returns
        #: :data:`~.transport.LATER` for a message to answer on the task.
        self.answer_at_once: Callable[[bytes | str], Coroutine[Any, Any, Any]] | None = None
        #: The kind of frame the session's codec reads: only those are answered at once (one
        #: of the other kind ends the session, which :meth:`next_frame` says on its task).
        self._kind = bytes if codec_class(subprotocol).binary else str
        #: What the session's task has to take: frames, and the rest of answers begun at
        #: once (:class:`~.eager.Suspended`), the error one raised, the end (:data:`_GONE`).
        self._queue: collections.deque[Any] = collections.deque()
        self._waiter: asyncio.Future | None = None
        self._read_paused = False
        self._write_paused = False
        self._closed = False

    async def accept(self, subprotocol: str | None = None, headers: Any = None) -> None:
        assert subprotocol == self.subprotocol, "the native handshake chose the subprotocol already"

    # -- frames in ----------------------------------------------------------------

    def receive(self, frame: bytes | str) -> None:
        """A message came: answered at once when the session's task waits for one and
        none is queued, else queued for the task."""
        answer = self.answer_at_once
        if answer is None or self._waiter is None or self._queue or self._closed or type(frame) is not self._kind:
            self._put(frame)
            return
        try:
            begun = begin(answer(frame))
        except Exception as exc:  # noqa: BLE001 - it ends the session, on its task
            self._put(_Failed(exc))
            return
        if isinstance(begun, Suspended):
            self._put(begun)
        elif begun.value is LATER:
            self._put(frame)
        elif not begun.value:
            self._put(_GONE)

    def discard(self) -> None:
        """Answer nothing more at once, and drop what is queued (the session is over): an
        answer left suspended is closed."""
        self.answer_at_once = None
        while self._queue:
            item = self._queue.popleft()
            if isinstance(item, Suspended):
                item.close()

    def _put(self, item: Any) -> None:
        """Queue ``item`` for :meth:`next_frame`; a peer whose messages pile up unread
        (or that reads none of our replies) is read no more until they are taken."""
        self._queue.append(item)
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)
        if len(self._queue) >= MAX_UNREAD and not self._read_paused:
            self._pause_reading()

    async def next_frame(self, codec: Codec) -> str | bytes | Suspended | None:
        """As :meth:`.transport.Channel.next_frame`: the next frame (or the rest of an
        answer begun at once, to await), ``None`` once the peer is gone or the session over."""
        queue = self._queue
        while not queue:
            self._waiter = asyncio.get_running_loop().create_future()
            try:
                await self._waiter
            finally:
                self._waiter = None
        item = queue.popleft()
        if self._read_paused and not queue and not self._write_paused:
            self._resume_reading()
        kind = type(item)
        if kind is bytes or kind is str:
            if (kind is bytes) is not codec.binary:
                raise ProtocolError(ErrorCode.SESSION_ERROR, wrong_kind(codec))
            return item
        if item is _GONE:
            return None
        if kind is _Failed:
            raise item.error
        return item

    def _pause_reading(self) -> None:
        self._read_paused = True
        if self.transport is not None and not self._closed:
            self.transport.underlying_transport.pause_reading()

    def _resume_reading(self) -> None:
        self._read_paused = False
        if self.transport is not None and not self._closed:
            self.transport.underlying_transport.resume_reading()

    def writing_paused(self, paused: bool) -> None:
        """The peer stopped (or started again) reading our replies: stop (or start)
        reading its messages, so that a peer that reads nothing costs no memory."""
        self._write_paused = paused
        if paused and not self._read_paused:
            self._pause_reading()
        elif not paused and self._read_paused and len(self._queue) < MAX_UNREAD:
            self._resume_reading()

    # -- frames out ---------------------------------------------------------------

    async def send_frame(self, frame: bytes | str) -> None:
        """Send one message: ``bytes`` as a binary frame, ``str`` as a text frame. A peer
        that is gone, even before its loss is reported (the answers to what it sent before
        it reset the connection), gets nothing: the transport would warn of each write."""
        if self._closed or self._tcp.is_closing():
            raise ConnectionResetError("the WebSocket is closed")
        if isinstance(frame, str):
            self.transport.send(_TEXT, frame.encode())
        else:
            self.transport.send(_BINARY, frame)

    async def close(self, code: int = 1000, reason: str | None = None) -> None:
        """Send the closing frame; the connection ends when the peer's answers it
        (or :data:`CLOSE_LINGER` seconds after)."""
        if self._closed or self.connection is None:
            return
        self._closed = True
        self.connection.close(code, reason or "")

    def _shut(self) -> None:
        """Answer nothing more, and end the shared section (if any) with the connection."""
        self._closed = True
        if self.section is not None:
            self.section.close()

    def abort(self) -> None:
        """Drop the connection now, without a closing handshake."""
        self._shut()
        if self.transport is not None:
            self.transport.disconnect(graceful=False)

    def lost(self) -> None:
        """The connection is gone: the session learns it now, even in an env call."""
        self._shut()
        self._put(_GONE)
        gone = self.scope.get(CONNECTION_LOST)
        if gone is not None:
            gone()


#: Queued for the session's task when the connection is gone (or an answer ended the session).
_GONE = object()


class _Failed:
    """Queued for the session's task: what an answer begun at once raised."""

    __slots__ = ("error",)

    def __init__(self, error: Exception) -> None:
        self.error = error


def _close_code(code: int) -> Any:
    try:
        return picows.WSCloseCode(code)
    except ValueError:
        return picows.WSCloseCode.OK


if picows is not None:

    class _Connection(picows.WSListener):
        """One native connection: frames in, as the channel's events."""

        def __init__(self, listener: NativeListener, route: Route, channel: NativeChannel) -> None:
            self.listener, self.route, self.channel = listener, route, channel
            self._fragments: list[bytes] = []
            self._fragmented: Any = None
            self._size = 0
            self._closing = False

        def on_ws_connected(self, transport: Any) -> None:
            channel = self.channel
            channel.transport, channel.connection = transport, self
            channel._tcp = tcp = transport.underlying_transport
            peer = tcp.get_extra_info("peername")
            channel.scope["client"] = tuple(peer[:2]) if peer else None
            self.listener.start_session(self.route, channel)

        def on_ws_frame(self, transport: Any, frame: Any) -> None:
            kind = frame.msg_type
            types = picows.WSMsgType
            if kind is types.CLOSE:
                if not transport.is_close_frame_sent:
                    transport.send_close(frame.get_close_code())
                transport.disconnect()
                return
            if self._closing:  # what the peer still sends after our close, until its own
                return
            if frame.rsv1 or frame.rsv2 or frame.rsv3:  # RFC 6455 §5.2: no extension is negotiated
                self._refuse(1002, "reserved bits set, and no extension was negotiated")
                return
            if kind is types.BINARY or kind is types.TEXT:
                if self._fragmented is not None:
                    self._refuse(1002, "a new message inside a fragmented one")
                elif frame.fin:
                    self._message(kind, frame.get_payload_as_bytes())
                else:
                    self._fragmented, self._fragments = kind, [frame.get_payload_as_bytes()]
                    self._size = frame.payload_size
            elif kind is types.CONTINUATION:
                if self._fragmented is None:
                    self._refuse(1002, "a continuation frame with no message to continue")
                    return
                self._size += frame.payload_size
                if self._size > self.listener.max_message_bytes:
                    self._refuse(1009, f"a message over the limit of {self.listener.max_message_bytes:,} bytes")
                    return
                self._fragments.append(frame.get_payload_as_bytes())
                if frame.fin:
                    kind, data = self._fragmented, b"".join(self._fragments)
                    self._fragmented, self._fragments, self._size = None, [], 0
                    self._message(kind, data)

        def _message(self, kind: Any, data: bytes) -> None:
            if kind is picows.WSMsgType.TEXT:
                try:
                    text = data.decode("utf-8")
                except UnicodeDecodeError:
                    self._refuse(1007, "a text message that is not UTF-8")
                    return
                self.channel.receive(text)
            else:
                self.channel.receive(data)

        def _refuse(self, code: int, why: str) -> None:
            self.channel._closed = True
            self.close(code, why)

        def close(self, code: int, why: str) -> None:
            """Send a close frame with ``code``, then read (and drop) what the peer still
            sends until its own close comes, for at most :data:`CLOSE_LINGER` seconds:
            cutting the TCP connection while the peer sends would reset it, and lose the
            replies and the close frame that say why, as the closing handshake of RFC 6455
            §7.1.2 avoids."""
            if self._closing:
                return
            self._closing, self._fragments, self._fragmented = True, [], None
            transport = self.channel.transport
            transport.send_close(_close_code(code), why.encode()[:123])
            asyncio.get_running_loop().call_later(CLOSE_LINGER, transport.disconnect)

        def on_ws_disconnected(self, transport: Any) -> None:
            self.channel.lost()

        def pause_writing(self) -> None:
            self.channel.writing_paused(True)

        def resume_writing(self) -> None:
            self.channel.writing_paused(False)


class NativeListener:
    """One server's native listener: the WebSocket routes of ``server`` on a socket of
    their own, served by the same :class:`~.hosting.Server` on the same event loop.

    The handshake is checked as the main port checks it: the route by path, the token
    (``Authorization: Bearer``) when the server has one (HTTP 403 without), the best
    subprotocol offered; keepalive pings every ``ping_interval`` seconds, a peer that
    does not answer within ``ping_timeout`` dropped; frames over the limits' frame size
    refused with close code 1009, a handshake slower than ``handshake_timeout`` closed.
    """

    def __init__(
        self,
        server: Server,
        routes: Mapping[str, Route],
        *,
        ping_interval: float | None = 20.0,
        ping_timeout: float | None = 20.0,
    ) -> None:
        if picows is None:
            raise ImportError(
                "the native listener needs picows, which is not installed: pip install 'openenv-gym[native]'"
            )
        self.server = server
        self.routes = dict(routes)
        self.ping_interval, self.ping_timeout = ping_interval, ping_timeout
        self.max_message_bytes = server.options.limits.max_frame_bytes
        token = server.token
        self._expected = None if token is None else f"Bearer {token}"
        self._refused = Throttled(logger, "auth_refused")
        self._listening: asyncio.AbstractServer | None = None
        self._channels: set[NativeChannel] = set()
        #: Told in ``/schema`` and in each handshake reply: this listener, not another's.
        self.id = secrets.token_hex(8)
        #: The port it listens on, once started.
        self.port: int | None = None
        #: Shared sections open, and how many may be (:func:`openenv_gym._section.budget`).
        self._sections = 0
        self._max_sections = budget()

    async def start(self, sock: socket.socket) -> None:
        """Listen on ``sock`` (bound, from :func:`~.listen.listening_socket`), on the running loop."""
        self.port = sock.getsockname()[1]
        self._listening = await picows.ws_create_server(
            self._handshake,
            sock=sock,
            websocket_handshake_timeout=self.server.options.handshake_timeout,
            enable_auto_ping=self.ping_interval is not None,
            auto_ping_idle_timeout=self.ping_interval or 20.0,
            auto_ping_reply_timeout=self.ping_timeout or 20.0,
            max_frame_size=self.max_message_bytes,
            logger_name=_PicowsLog(),
        )
        self.server.native = {"port": self.port, "id": self.id, "version": NATIVE_VERSION}

    def close(self) -> None:
        """Stop accepting connections and stop advertising them (the sessions are the
        server's to drain)."""
        self.server.native = None
        if self._listening is not None:
            self._listening.close()

    def abort(self) -> None:
        """Cut the connections still open (after the drain: what is left never finished)."""
        for channel in list(self._channels):
            channel.abort()

    def start_session(self, route: Route, channel: NativeChannel) -> None:
        self._channels.add(channel)
        task = asyncio.get_running_loop().create_task(self.server.serve_route(route, channel))
        task.add_done_callback(lambda _: self._channels.discard(channel))

    def _handshake(self, request: Any) -> Any:
        """The reply to one upgrade request: the route's connection, or an HTTP error."""
        raw_path = request.path.decode("latin-1")
        path, _, query = raw_path.partition("?")
        route = self.routes.get(path)
        if route is None:
            return _error(HTTPStatus.NOT_FOUND, f"No WebSocket route {path}: the routes are {', '.join(self.routes)}")
        headers = request.headers
        if self._expected is not None and not hmac.compare_digest(
            headers.get("authorization", "").encode(), self._expected.encode()
        ):
            self._refused.warning("path=%s type=websocket native", path)
            return _error(
                HTTPStatus.FORBIDDEN, "Missing or wrong token: send the header 'Authorization: Bearer <token>'"
            )
        offered = [p.strip() for value in headers.getall("sec-websocket-protocol", []) for p in value.split(",")]
        chosen = next((p for p in SUBPROTOCOLS if p in offered), None)
        scope = {
            "type": "websocket",
            "path": path,
            "query_string": query.encode("latin-1"),
            "headers": [(k.lower().encode("latin-1"), v.encode("latin-1")) for k, v in headers.items()],
            "subprotocols": offered,
            "client": None,
        }
        extra = {PROCESS_HEADER: PROCESS_TOKEN, NATIVE_HEADER: self.id}
        if chosen is not None:
            extra["Sec-WebSocket-Protocol"] = chosen
        section = self._section_for(headers.get(SECTION_HEADER), chosen)
        if section is not None:
            extra[SECTION_HEADER] = section.announcement
        channel = NativeChannel(scope, chosen, section)
        return picows.WSUpgradeResponseWithListener(
            picows.WSUpgradeResponse.create_101_response(extra_headers=extra), _Connection(self, route, channel)
        )

    def _section_for(self, offer: str | None, chosen: str | None) -> ServerSection | None:
        """A shared section for a connection whose client offers to attach one and speaks
        the frames that can use it (``None`` otherwise, or where sections cannot be made)."""
        if offer != "offer" or chosen != MsgpackBuffersCodec.subprotocol:
            return None
        if self._sections >= self._max_sections:
            return None  # none here, or enough open: this connection's replies travel in their frames
        try:
            section = ServerSection(self.max_message_bytes, on_close=self._section_closed)
        except OSError as exc:  # out of descriptors or memory: this connection does without
            logger.warning("section_failed why=%s", exc)
            return None
        self._sections += 1
        return section

    def _section_closed(self) -> None:
        self._sections -= 1


def _error(status: HTTPStatus, detail: str) -> Any:
    response = picows.WSUpgradeResponse.create_error_response(status, detail.encode())
    return picows.WSUpgradeResponseWithListener(response, None)
