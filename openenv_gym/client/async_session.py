"""An OpenEnv WebSocket session on asyncio, for clients that drive many at once.

:class:`AsyncSession` is the asyncio sibling of
:class:`~openenv_gym.client.session.RemoteSession`: the same subprotocol
offers (msgpack, then openenv-gym JSON; a stock server selects none, which
means plain JSON), the same codecs and typed messages from
:mod:`openenv_gym.protocol`, and server error frames raised as
:class:`~openenv_gym.errors.RemoteError` subclasses. It speaks to ``/ws``
(one env) or to ``/vector`` (a batched vector env).

It keeps the bounds of the blocking
:class:`~openenv_gym.client.connection.Connection`: a handshake within
``connect_timeout``, a reply within ``message_timeout``, messages within
``max_message_bytes``, no more than
:data:`~openenv_gym.client.connection.MAX_UNREAD_MESSAGES` messages nobody
asked for, and never one of those taken for a reply; past a bound it raises
the same errors (:class:`~openenv_gym.errors.LimitExceededError` naming the
limit, :class:`~openenv_gym.errors.MessageTimeoutError` naming the option).

    >>> async def main(url):                                      # doctest: +SKIP
    ...     session = await AsyncSession.open(url, ConnectOptions())
    ...     reply = await session.request(Reset(seed=0))
    ...     await session.close()
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import urllib.parse
from typing import Any, NoReturn

from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed, InvalidHandshake, PayloadTooBig
from websockets.frames import DATA_OPCODES, Frame
from websockets.protocol import Event
from websockets.typing import Data, Subprotocol

from .._local import is_loopback
from ..errors import (
    CLOSING_ERRORS,
    ConnectionClosedError,
    LimitExceededError,
    MessageTimeoutError,
    OpenEnvGymError,
    ProtocolMismatchError,
    RemoteError,
)
from ..protocol import WS_REPLIES, ClientMessage, Close, Codec, ServerMessage
from .connection import MAX_UNREAD_MESSAGES, handshake_failed, ws_url
from .loop import reply_on
from .native import native_attempt
from .options import ConnectOptions
from .session import RemoteSession, Replies, negotiated_codec, read_reply

__all__ = ["AsyncSession", "BlockingSession"]

_HAS_PROXY_OPTION = "proxy" in inspect.signature(connect.__init__).parameters

#: Seconds a closing handshake may take before the connection is dropped: an honest
#: server answers a close at once, and a hostile one must not hold it open.
CLOSE_TIMEOUT = 1.0


def _no_reply(url: str, timeout: float | None) -> MessageTimeoutError:
    return MessageTimeoutError(f"No message from {url} within {timeout} s (message_timeout)")


class _BoundedConnection(ClientConnection):
    """websockets' asyncio client connection, bounded as the blocking
    :class:`~openenv_gym.client.connection.Connection` is.

    It counts the messages received and not read yet (:attr:`unread`): a strict
    request-reply server sends one reply per request, so more than
    :data:`~openenv_gym.client.connection.MAX_UNREAD_MESSAGES` of them is a flood, and
    the connection is dropped at once (:attr:`flooded`). websockets stops reading once more
    than one frame waits unread (``max_queue=1``), so what waits is two frames (each within
    ``max_message_bytes``) and what the last read brought in. And when websockets fails the
    connection on what the server sent (an answer to the upgrade that it refuses, a message
    over ``max_message_bytes``), the connection is dropped at once too: a websockets client
    would wait for the server to close TCP, which a hostile server never does.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        #: Whole messages received and not read yet.
        self.unread = 0
        #: Whether the server sent more than :data:`MAX_UNREAD_MESSAGES` messages unread.
        self.flooded = False

    def process_event(self, event: Event) -> None:
        super().process_event(event)
        if isinstance(event, Frame) and event.fin and event.opcode in DATA_OPCODES:
            self.unread += 1
            if self.unread > MAX_UNREAD_MESSAGES and not self.flooded:
                self.flooded = True
                self.transport.abort()

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        if self.protocol.parser_exc is not None or self.protocol.handshake_exc is not None:
            self.transport.abort()

    async def next_message(self) -> Data:
        """The next message (:meth:`recv`), counted as read."""
        message = await self.recv()
        self.unread -= 1
        return message


class AsyncSession:
    """One OpenEnv WebSocket session on the running event loop.

    Open it with :meth:`open`; ``request`` sends a message and returns the
    typed reply.
    """

    def __init__(
        self, websocket: _BoundedConnection, url: str, codec: Codec, options: ConnectOptions, replies: Replies
    ) -> None:
        self.websocket = websocket
        self.url = url
        self.codec = codec
        self.options = options
        self.replies = replies

    @classmethod
    async def open(
        cls, base_url: str, options: ConnectOptions, *, path: str = "/ws", replies: Replies = WS_REPLIES
    ) -> AsyncSession:
        """Connect to ``path`` of the server at ``base_url``; no compression
        (msgpack frames want none, and stock servers accept its absence).

        Raises:
            MessageTimeoutError: the connection and the handshake took longer than
                ``connect_timeout``.
            LimitExceededError: the server answered the upgrade past websockets'
                limits (an endless body, too many headers).
            ConnectionClosedError: the server refused the connection or the upgrade.
        """
        attempt = native_attempt(base_url, path, options)
        if attempt is not None:
            try:
                websocket = await _connect(attempt.url, attempt.options)
            except OpenEnvGymError as exc:
                attempt.failed(exc)
            else:
                if attempt.answered(websocket.response.headers if websocket.response else {}):
                    return await cls._speaking(websocket, attempt.url, options, replies)
                await websocket.close()
        url = ws_url(base_url, path)
        return await cls._speaking(await _connect(url, options), url, options, replies)

    @classmethod
    async def _speaking(
        cls, websocket: _BoundedConnection, url: str, options: ConnectOptions, replies: Replies
    ) -> AsyncSession:
        """The session over ``websocket``, once its subprotocol is one ``options`` can speak."""
        try:
            codec = negotiated_codec(url, options, websocket.subprotocol)
        except ProtocolMismatchError:
            await websocket.close()
            raise
        return cls(websocket, url, codec, options, replies)

    async def request(self, message: ClientMessage) -> ServerMessage:
        """Send ``message`` and return the server's reply."""
        if self.websocket.unread:
            await self._unsolicited()
        try:
            await self.send(message)
        except ConnectionClosedError:
            pass  # a refused session sends an error frame and closes: read it below
        return await self.receive()

    async def _unsolicited(self) -> NoReturn:
        """Raise for the messages that came before the request they would answer was
        sent: an error frame is the server's own report (a refused session's, which the
        server closes after); any other message answers no request, so the server is out
        of step and the connection is dropped."""
        count = self.websocket.unread
        await self.receive()  # an error frame raises here
        self.drop()
        raise ConnectionClosedError(
            f"{self.url} sent {count} message(s) nobody asked for, before this request: "
            f"the connection is out of step and was dropped"
        )

    async def send(self, message: ClientMessage) -> None:
        try:
            await self.websocket.send(self.codec.encode(message.to_wire()))
        except ConnectionClosed as exc:
            raise self._lost(exc) from exc

    async def receive(self) -> ServerMessage:
        timeout = self.options.message_timeout
        try:
            frame = await asyncio.wait_for(self.websocket.next_message(), timeout)
        except asyncio.TimeoutError:
            # The reply may still come and would then answer the next request:
            # a timed-out connection is out of step, so it is dropped.
            self.drop()
            raise _no_reply(self.url, timeout) from None
        except ConnectionClosed as exc:
            raise self._lost(exc) from exc
        if self.websocket.flooded:  # which of the messages answers the request is anyone's guess: none does
            raise self._lost(None)
        try:
            return read_reply(self.codec, frame, self.replies)
        except RemoteError as error:
            if error.code in CLOSING_ERRORS:
                await self.websocket.close()
            raise

    async def close(self) -> None:
        """Send OpenEnv's ``close`` message and close the connection once the server
        has, or after :data:`CLOSE_TIMEOUT` seconds (idempotent): a server closes once
        it has ended the session, so its slot is then free (see
        :meth:`Connection.close <openenv_gym.client.connection.Connection.close>`)."""
        try:
            await self.websocket.send(self.codec.encode(Close().to_wire()))
        except ConnectionClosed:
            pass
        else:
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(self.websocket.wait_closed(), CLOSE_TIMEOUT)
        await self.websocket.close()

    def drop(self) -> None:
        """Abandon a failed connection at once, with no closing handshake: the
        server is gone, or out of step after a timeout."""
        self.websocket.transport.abort()

    def _lost(self, closed: ConnectionClosed | None) -> ConnectionClosedError:
        """Why the connection is gone: a limit the server went past
        (:class:`~openenv_gym.errors.LimitExceededError`), else how it closed."""
        if self.websocket.flooded:
            return LimitExceededError(
                f"{self.url} sent more than {MAX_UNREAD_MESSAGES} messages nobody asked for: "
                f"the connection was dropped"
            )
        if isinstance(self.websocket.protocol.parser_exc, PayloadTooBig):
            return LimitExceededError(
                f"{self.url} sent a message over this client's limit of {self.options.max_message_bytes:,} "
                f"bytes (max_message_bytes): the connection was dropped"
            )
        return ConnectionClosedError(f"Connection to {self.url} is closed ({closed})")


class BlockingSession:
    """The :class:`AsyncSession` interface over a blocking
    :class:`~openenv_gym.client.session.RemoteSession`, for
    :class:`~openenv_gym.client.loop.InlineRunner`.

    ``request`` sends at once and suspends its coroutine until the reply has
    come (:func:`~openenv_gym.client.loop.reply_on`): the runner waits for the
    replies of all its sessions together, in the caller's thread, with no event
    loop and no thread hand-off per message.
    """

    def __init__(self, session: RemoteSession) -> None:
        self.session = session
        self.url = session.url
        self.codec = session.codec

    async def request(self, message: ClientMessage) -> ServerMessage:
        session = self.session
        session.send_request(message)
        timeout = session.options.message_timeout
        if not await reply_on(session.connection, timeout):
            # The reply may still come and would then answer the next request:
            # a timed-out connection is out of step, so it is dropped.
            self.drop()
            raise _no_reply(self.url, timeout)
        return session.receive()

    async def close(self) -> None:
        self.session.close()

    def drop(self) -> None:
        """Abandon a failed connection at once (see :meth:`AsyncSession.drop`)."""
        self.session.connection.close(timeout=0.1)


async def _connect(url: str, options: ConnectOptions) -> _BoundedConnection:
    """Connect to ``url`` (TCP and the WebSocket handshake, within ``connect_timeout``)."""
    extra: dict[str, Any] = {}
    if _HAS_PROXY_OPTION and is_loopback(urllib.parse.urlsplit(url).hostname or ""):
        extra["proxy"] = None
    try:
        websocket = await connect(
            url,
            subprotocols=[Subprotocol(p) for p in options.subprotocols],
            compression=None,
            additional_headers=options.request_headers,
            open_timeout=options.connect_timeout,
            close_timeout=CLOSE_TIMEOUT,
            ping_interval=options.ping_interval,
            ping_timeout=options.ping_timeout,
            max_size=options.max_message_bytes,
            max_queue=1,
            create_connection=_BoundedConnection,
            **extra,
        )
    except (TimeoutError, asyncio.TimeoutError) as exc:  # before OSError, which TimeoutError is
        raise MessageTimeoutError(
            f"Connecting to {url} (TCP and the WebSocket handshake) took longer than "
            f"{options.connect_timeout} s (connect_timeout)"
        ) from exc
    except InvalidHandshake as exc:
        raise handshake_failed(url, exc) from exc
    except OSError as exc:
        raise ConnectionClosedError(f"Failed to connect to {url}: {exc}") from exc
    assert isinstance(websocket, _BoundedConnection)
    return websocket
