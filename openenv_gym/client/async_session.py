"""An OpenEnv WebSocket session on asyncio, for clients that drive many at once.

:class:`AsyncSession` is the asyncio sibling of
:class:`~openenv_gym.client.session.RemoteSession`: the same subprotocol
offers (msgpack, then openenv-gym JSON; a stock server selects none, which
means plain JSON), the same codecs from :mod:`openenv_gym.wire`, and server
error frames raised as :class:`~openenv_gym.errors.RemoteError` subclasses.
It speaks to ``/ws`` (one env) or to ``/vector`` (a batched vector env).

    >>> async def main(url):                                      # doctest: +SKIP
    ...     session = await AsyncSession.open(url)
    ...     data = await session.request({"type": "reset", "data": {"seed": 0}})
    ...     await session.close()
"""

from __future__ import annotations

import asyncio
import inspect
import urllib.parse
from collections.abc import Mapping
from typing import Any

from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed, InvalidHandshake

from ..errors import ConnectionClosedError, MessageTimeoutError, ProtocolMismatchError, RemoteError
from ..wire import CLOSING_ERRORS, is_loopback
from .connection import ws_url
from .session import OFFERS, Encoding, RemoteSession, negotiated_codec, parse_reply

__all__ = ["AsyncSession", "BlockingSession"]

_HAS_PROXY_OPTION = "proxy" in inspect.signature(connect.__init__).parameters


class AsyncSession:
    """One OpenEnv WebSocket session on the running event loop.

    Open it with :meth:`open`; ``request`` sends a message and returns the
    ``data`` of the reply. ``extended`` is ``True`` for openenv-gym servers.
    """

    def __init__(self, websocket: ClientConnection, url: str, codec: Any, message_timeout: float | None) -> None:
        self.websocket = websocket
        self.url = url
        self.codec = codec
        self.message_timeout = message_timeout
        self.extended = websocket.subprotocol is not None

    @property
    def binary(self) -> bool:
        return self.codec.binary

    @classmethod
    async def open(
        cls,
        base_url: str,
        *,
        path: str = "/ws",
        encoding: Encoding = "auto",
        headers: Mapping[str, str] | None = None,
        connect_timeout: float | None = 10.0,
        message_timeout: float | None = 60.0,
        max_message_bytes: int = 100 * 1024 * 1024,
        ping_interval: float | None = 20.0,
        ping_timeout: float | None = 20.0,
    ) -> "AsyncSession":
        """Connect to ``path`` of the server at ``base_url``; no compression
        (msgpack frames want none, and stock servers accept its absence)."""
        if encoding not in OFFERS:
            raise ValueError(f"encoding must be 'auto', 'json' or 'msgpack', not {encoding!r}")
        url = ws_url(base_url, path)
        options: dict[str, Any] = {}
        if _HAS_PROXY_OPTION and is_loopback(urllib.parse.urlsplit(url).hostname or ""):
            options["proxy"] = None
        try:
            websocket = await connect(
                url,
                subprotocols=list(OFFERS[encoding]),
                compression=None,
                additional_headers=dict(headers or {}),
                open_timeout=connect_timeout,
                ping_interval=ping_interval,
                ping_timeout=ping_timeout,
                max_size=max_message_bytes,
                **options,
            )
        except (OSError, InvalidHandshake, asyncio.TimeoutError) as exc:
            raise ConnectionClosedError(f"Failed to connect to {url}: {exc}") from exc
        try:
            codec = negotiated_codec(url, encoding, websocket.subprotocol, max_message_bytes)
        except ProtocolMismatchError:
            await websocket.close()
            raise
        return cls(websocket, url, codec, message_timeout)

    async def request(self, message: dict) -> dict:
        """Send ``message`` and return the ``data`` of the server's reply."""
        try:
            await self.send(message)
        except ConnectionClosedError:
            pass  # a refused session sends an error frame and closes: read it below
        return await self.receive()

    async def send(self, message: dict) -> None:
        try:
            await self.websocket.send(self.codec.encode(message))
        except ConnectionClosed as exc:
            raise ConnectionClosedError(f"Connection to {self.url} is closed ({exc})") from exc

    async def receive(self) -> dict:
        try:
            frame = await asyncio.wait_for(self.websocket.recv(), self.message_timeout)
        except asyncio.TimeoutError:
            # The reply may still come and would then answer the next request:
            # a timed-out connection is out of step, so it is dropped.
            self.drop()
            raise MessageTimeoutError(f"No message from {self.url} within {self.message_timeout} s") from None
        except ConnectionClosed as exc:
            raise ConnectionClosedError(f"Connection to {self.url} is closed ({exc})") from exc
        try:
            return parse_reply(self.codec, frame, self.url)
        except RemoteError as error:
            if error.code in CLOSING_ERRORS:
                await self.websocket.close()
            raise

    async def close(self) -> None:
        """Send OpenEnv's ``close`` message and close the connection (idempotent)."""
        try:
            await self.websocket.send(self.codec.encode({"type": "close"}))
        except ConnectionClosed:
            pass
        await self.websocket.close()

    def drop(self) -> None:
        """Abandon a failed connection at once, with no closing handshake: the
        server is gone, or out of step after a timeout."""
        self.websocket.transport.abort()


class BlockingSession:
    """The :class:`AsyncSession` interface over a blocking
    :class:`~openenv_gym.client.session.RemoteSession`.

    Its coroutines never suspend, so :class:`~openenv_gym.client.loop.InlineRunner`
    drives them in the caller's thread: no event loop and no thread hand-off
    per message, which is most of a round trip's cost for one lockstep batch.
    """

    def __init__(self, session: RemoteSession) -> None:
        self.session = session
        self.url = session.url
        self.codec = session.codec
        self.extended = session.extended

    @property
    def binary(self) -> bool:
        return self.codec.binary

    async def request(self, message: dict) -> dict:
        return self.session.request(message)

    async def close(self) -> None:
        self.session.close()

    def drop(self) -> None:
        """Abandon a failed connection at once (see :meth:`AsyncSession.drop`)."""
        self.session.connection.close(timeout=0.1)
