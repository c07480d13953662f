"""A client-side OpenEnv session: one connection, one request at a time.

:class:`RemoteSession` negotiates the encoding, sends typed messages through
the negotiated :class:`~openenv_gym.protocol.Codec` and turns error frames
into typed exceptions. Every blocking openenv-gym client uses it.

Encoding negotiation costs no round trip: the client offers the openenv-gym
subprotocols in its handshake; an openenv-gym server selects one, and a stock
OpenEnv server selects none, which means plain JSON.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..errors import CLOSING_ERRORS, ConnectionClosedError, MessageTimeoutError, ProtocolMismatchError, RemoteError
from ..protocol import (
    WS_REPLIES,
    ClientMessage,
    Close,
    Codec,
    Frame,
    ServerMessage,
    codec_for,
    parse_reply,
)
from .native import open_connection
from .options import ConnectOptions

__all__ = ["RemoteSession", "negotiated_codec", "read_reply", "Replies"]

#: A route's replies, by message type (:data:`~openenv_gym.protocol.WS_REPLIES` for ``/ws``).
Replies = Mapping[str, type[ServerMessage]]


def negotiated_codec(url: str, options: ConnectOptions, chosen: str | None) -> Codec:
    """The codec for the subprotocol the server chose. An ``encoding`` other than
    ``"auto"`` refuses a server whose choice is another codec instead of falling back
    (``"json"`` takes a stock server, which chooses none: it speaks JSON)."""
    codec = codec_for(chosen, options.limits)
    if options.encoding not in ("auto", codec.name):
        server = "it is not an openenv-gym server" if chosen is None else f"it chose {chosen!r}"
        raise ProtocolMismatchError(
            f"{url} does not offer {options.encoding} frames ({server}); "
            f"use encoding={codec.name!r} or 'auto'"
        )
    return codec


def read_reply(codec: Codec, frame: Frame, replies: Replies) -> ServerMessage:
    """The typed reply in ``frame``. An error frame raises the
    :class:`~openenv_gym.errors.RemoteError` subclass for its code; a frame
    that is not a reply of the route raises
    :class:`~openenv_gym.errors.ProtocolError` (the server broke the protocol)."""
    return parse_reply(codec.decode(frame), replies)


class RemoteSession:
    """One OpenEnv WebSocket session, used synchronously.

    ``request`` sends a message and returns the server's typed reply, or
    raises the :class:`~openenv_gym.errors.RemoteError` subclass for the
    server's error code.
    """

    def __init__(
        self,
        base_url: str,
        options: ConnectOptions,
        *,
        path: str = "/ws",
        replies: Replies = WS_REPLIES,
    ) -> None:
        self.options = options
        self.replies = replies
        self.connection = open_connection(base_url, path, options)
        #: Where the session is: the server's native listener, or its main port.
        self.url = self.connection.url
        try:
            self.codec = negotiated_codec(self.url, options, self.connection.subprotocol)
        except ProtocolMismatchError:
            self.connection.close()
            raise

    def request(self, message: ClientMessage) -> ServerMessage:
        """Send ``message`` and return the server's reply."""
        self.send_request(message)
        return self.receive()

    def exchange(self, frame: Frame) -> Any:
        """Send ``frame`` (a message this session's codec encoded) and return the server's
        reply as decoded, not yet typed (:meth:`typed` types it): what a caller that reads
        the commonest reply itself uses (:meth:`~.remote_env.RemoteEnv.step`)."""
        self.send_request(frame)
        return self.codec.decode(self._next_frame(), self.connection.section)

    def send_request(self, message: ClientMessage | Frame) -> None:
        """Send ``message`` (or a frame already encoded), whose reply :meth:`receive` reads.
        A connection that closed with a message left to read is no error yet: a refused
        session (capacity, factory) sends an error frame and closes, and the frame may
        be all that is left to read."""
        connection = self.connection
        if connection.pending and not connection.closed:
            self._refuse_unsolicited()
        try:
            self.send(message)
        except ConnectionClosedError:
            if not connection.pending:
                raise

    def _refuse_unsolicited(self) -> None:
        """A message waits unread before a request is sent: nobody asked for it, and it
        must never be taken for the request's reply. An error frame (a refused session,
        its close still on the way) raises its error; anything else drops the connection."""
        unread = self.connection.pending
        self.receive()  # raises the error of an error frame
        self.connection.close(timeout=0.1)
        raise ConnectionClosedError(
            f"{self.url} sent {unread} message{'s' if unread > 1 else ''} nobody asked for: the "
            f"connection was dropped, since its next reply could not be told from them"
        )

    def send(self, message: ClientMessage | Frame) -> None:
        """Send ``message`` (or a frame already encoded) with no more ado."""
        frame = message if isinstance(message, (bytes, str)) else self.codec.encode(message.to_wire())
        self.connection.send(frame)

    def receive(self) -> ServerMessage:
        return self.typed(self.codec.decode(self._next_frame(), self.connection.section))

    def typed(self, decoded: Any) -> ServerMessage:
        """The reply ``decoded`` as a typed message of the route. An error frame raises
        the :class:`~openenv_gym.errors.RemoteError` subclass for its code (one that ends
        the session closes the connection first)."""
        try:
            return parse_reply(decoded, self.replies)
        except RemoteError as error:
            if error.code in CLOSING_ERRORS:
                self.connection.close()
            raise

    def _next_frame(self) -> Frame:
        try:
            return self.connection.recv(self.options.message_timeout)
        except MessageTimeoutError:
            # The reply may still come and would then answer the next request:
            # a timed-out connection is out of step, so it is dropped.
            self.connection.close(timeout=0.1)
            raise

    def close(self) -> None:
        """Send OpenEnv's ``close`` message and close the connection once the server
        has (idempotent): the server has then ended the session and freed its slot."""
        if self.connection.closed:
            return
        try:
            self.send(Close())
        except ConnectionClosedError:
            pass
        self.connection.close(server_first=True)
