"""A client-side OpenEnv session: one connection, one request at a time.

:class:`RemoteSession` negotiates the encoding, sends messages through the
codec and turns error frames into typed exceptions. It is shared by every
openenv-gym client.

Encoding negotiation costs no round trip: the client offers the openenv-gym
subprotocols in its handshake; an openenv-gym server selects one, and a stock
OpenEnv server selects none, which means plain JSON.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from ..errors import (
    ConnectionClosedError,
    MessageTimeoutError,
    ProtocolMismatchError,
    RemoteError,
    remote_error,
)
from ..wire import (
    CLOSING_ERRORS,
    JSON_SUBPROTOCOL,
    MSGPACK_SUBPROTOCOL,
    Codec,
    ErrorCode,
    Limits,
    WireError,
    codec_for,
    parse_server_message,
)
from .connection import Connection, ws_url

__all__ = ["RemoteSession", "Encoding", "parse_reply", "negotiated_codec", "OFFERS"]

#: ``"auto"`` uses msgpack when the server offers it and JSON otherwise.
Encoding = Literal["auto", "json", "msgpack"]

OFFERS = {
    "auto": (MSGPACK_SUBPROTOCOL, JSON_SUBPROTOCOL),
    "msgpack": (MSGPACK_SUBPROTOCOL,),
    "json": (JSON_SUBPROTOCOL,),
}


def negotiated_codec(url: str, encoding: Encoding, chosen: str | None, max_message_bytes: int) -> Codec:
    """The codec for the subprotocol the server chose; ``encoding="msgpack"``
    refuses a server that did not choose msgpack instead of falling back."""
    if encoding == "msgpack" and chosen != MSGPACK_SUBPROTOCOL:
        raise ProtocolMismatchError(
            f"{url} does not offer msgpack frames (it is not an openenv-gym server); "
            f"use encoding='json' or 'auto'"
        )
    return codec_for(chosen, Limits(max_frame_bytes=max_message_bytes, max_array_bytes=max_message_bytes))


def parse_reply(codec: Codec, frame: str | bytes, url: str) -> dict:
    """The ``data`` of a server reply frame; an error frame raises the
    :class:`~openenv_gym.errors.RemoteError` subclass for its code."""
    try:
        reply = parse_server_message(codec.decode(frame))
    except WireError as exc:
        raise RemoteError(
            f"unreadable reply from {url}: {exc.message}", code=ErrorCode.SESSION_ERROR
        ) from exc
    if reply["type"] == "error":
        raise remote_error(reply["data"])
    return reply["data"]


class RemoteSession:
    """One OpenEnv WebSocket session, used synchronously.

    ``request`` sends a message and returns the ``data`` of the reply, or
    raises the :class:`~openenv_gym.errors.RemoteError` subclass for the
    server's error code.
    """

    def __init__(
        self,
        base_url: str,
        *,
        encoding: Encoding = "auto",
        headers: Mapping[str, str] | None = None,
        connect_timeout: float | None = 10.0,
        message_timeout: float | None = 60.0,
        max_message_bytes: int = 100 * 1024 * 1024,
        ping_interval: float | None = 20.0,
        ping_timeout: float | None = 20.0,
        compression: str | None = None,
        path: str = "/ws",
        busy_poll: float | None = None,
    ) -> None:
        if encoding not in OFFERS:
            raise ValueError(f"encoding must be 'auto', 'json' or 'msgpack', not {encoding!r}")
        self.url = ws_url(base_url, path)
        self.message_timeout = message_timeout
        self.connection = Connection.open(
            self.url,
            subprotocols=OFFERS[encoding],
            headers=headers,
            connect_timeout=connect_timeout,
            max_message_bytes=max_message_bytes,
            compression=compression,
            ping_interval=ping_interval,
            ping_timeout=ping_timeout,
            busy_poll=busy_poll,
        )
        chosen = self.connection.subprotocol
        try:
            self.codec = negotiated_codec(self.url, encoding, chosen, max_message_bytes)
        except ProtocolMismatchError:
            self.connection.close()
            raise
        #: ``True`` when the server is an openenv-gym server (it selected one of our subprotocols).
        self.extended = chosen is not None

    @property
    def binary(self) -> bool:
        return self.codec.binary

    def request(self, message: dict) -> dict:
        """Send ``message`` and return the ``data`` of the server's reply."""
        try:
            self.send(message)
        except ConnectionClosedError:
            # A refused session (capacity, factory) sends an error frame and
            # closes; the frame may be all that is left to read.
            if not self.connection.pending:
                raise
        return self.receive()

    def send(self, message: dict) -> None:
        self.connection.send(self.codec.encode(message))

    def receive(self) -> dict:
        try:
            frame = self.connection.recv(self.message_timeout)
        except MessageTimeoutError:
            # The reply may still come and would then answer the next request:
            # a timed-out connection is out of step, so it is dropped.
            self.connection.close(timeout=0.1)
            raise
        try:
            return parse_reply(self.codec, frame, self.url)
        except RemoteError as error:
            if error.code in CLOSING_ERRORS:
                self.connection.close()
            raise

    def close(self) -> None:
        """Send OpenEnv's ``close`` message and close the connection (idempotent)."""
        if self.connection.closed:
            return
        try:
            self.send({"type": "close"})
        except ConnectionClosedError:
            pass
        self.connection.close()
