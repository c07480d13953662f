"""An OpenEnv WebSocket session on asyncio, for clients that drive many at once.

:class:`AsyncSession` is the asyncio sibling of
:class:`~openenv_gym.client.session.RemoteSession`: the same subprotocol
offers (msgpack, then openenv-gym JSON; a stock server selects none, which
means plain JSON), the same codecs and typed messages from
:mod:`openenv_gym.protocol`, and server error frames raised as
:class:`~openenv_gym.errors.RemoteError` subclasses. It speaks to ``/ws``
(one env) or to ``/vector`` (a batched vector env).

    >>> async def main(url):                                      # doctest: +SKIP
    ...     session = await AsyncSession.open(url, ConnectOptions())
    ...     reply = await session.request(Reset(seed=0))
    ...     await session.close()
"""

from __future__ import annotations

import asyncio
import inspect
import urllib.parse
from typing import Any

from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed, InvalidHandshake
from websockets.typing import Subprotocol

from ..errors import CLOSING_ERRORS, ConnectionClosedError, MessageTimeoutError, ProtocolMismatchError, RemoteError
from ..protocol import WS_REPLIES, ClientMessage, Close, Codec, ServerMessage, is_loopback
from .connection import ws_url
from .loop import reply_on
from .options import ConnectOptions
from .session import RemoteSession, Replies, negotiated_codec, read_reply

__all__ = ["AsyncSession", "BlockingSession"]

_HAS_PROXY_OPTION = "proxy" in inspect.signature(connect.__init__).parameters


class AsyncSession:
    """One OpenEnv WebSocket session on the running event loop.

    Open it with :meth:`open`; ``request`` sends a message and returns the
    typed reply.
    """

    def __init__(
        self, websocket: ClientConnection, url: str, codec: Codec, options: ConnectOptions, replies: Replies
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
        (msgpack frames want none, and stock servers accept its absence)."""
        url = ws_url(base_url, path)
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
                ping_interval=options.ping_interval,
                ping_timeout=options.ping_timeout,
                max_size=options.max_message_bytes,
                **extra,
            )
        except (OSError, InvalidHandshake, asyncio.TimeoutError) as exc:
            raise ConnectionClosedError(f"Failed to connect to {url}: {exc}") from exc
        try:
            codec = negotiated_codec(url, options, websocket.subprotocol)
        except ProtocolMismatchError:
            await websocket.close()
            raise
        return cls(websocket, url, codec, options, replies)

    async def request(self, message: ClientMessage) -> ServerMessage:
        """Send ``message`` and return the server's reply."""
        try:
            await self.send(message)
        except ConnectionClosedError:
            pass  # a refused session sends an error frame and closes: read it below
        return await self.receive()

    async def send(self, message: ClientMessage) -> None:
        try:
            await self.websocket.send(self.codec.encode(message.to_wire()))
        except ConnectionClosed as exc:
            raise ConnectionClosedError(f"Connection to {self.url} is closed ({exc})") from exc

    async def receive(self) -> ServerMessage:
        timeout = self.options.message_timeout
        try:
            frame = await asyncio.wait_for(self.websocket.recv(), timeout)
        except asyncio.TimeoutError:
            # The reply may still come and would then answer the next request:
            # a timed-out connection is out of step, so it is dropped.
            self.drop()
            raise MessageTimeoutError(f"No message from {self.url} within {timeout} s") from None
        except ConnectionClosed as exc:
            raise ConnectionClosedError(f"Connection to {self.url} is closed ({exc})") from exc
        try:
            return read_reply(self.codec, frame, self.replies)
        except RemoteError as error:
            if error.code in CLOSING_ERRORS:
                await self.websocket.close()
            raise

    async def close(self) -> None:
        """Send OpenEnv's ``close`` message and close the connection (idempotent)."""
        try:
            await self.websocket.send(self.codec.encode(Close().to_wire()))
        except ConnectionClosed:
            pass
        await self.websocket.close()

    def drop(self) -> None:
        """Abandon a failed connection at once, with no closing handshake: the
        server is gone, or out of step after a timeout."""
        self.websocket.transport.abort()


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
            raise MessageTimeoutError(f"No message from {self.url} within {timeout} s")
        return session.receive()

    async def close(self) -> None:
        self.session.close()

    def drop(self) -> None:
        """Abandon a failed connection at once (see :meth:`AsyncSession.drop`)."""
        self.session.connection.close(timeout=0.1)
