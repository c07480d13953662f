"""WebSocket routes: how a connection becomes a session, and which messages it takes.

A :class:`Route` is data plus a session factory; the server's hosting loop
(:class:`~openenv_gym.server.hosting.Server`) drives every route the same
way: accept the handshake with the best codec offered, read the opening
message if the route has one, check capacity, host the session, answer its
messages until ``close``.

=============  ==================================  ===========================================
route          opening message                      session
=============  ==================================  ===========================================
``/ws``        none (``?session_id=`` attaches to   the source's ``session_type`` (one env)
               a session that outlives its socket)
``/agents``    none (``?api=aec|parallel``)         :class:`~.multiagent.AgentsSession`
``/vector``    ``vector_open``                      :class:`~.vector.VectorSession` (N envs)
``/mcp``       none (JSON-RPC frames, no envelope)  the source's ``session_type`` (one env)
=============  ==================================  ===========================================
"""

from __future__ import annotations

import abc
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from ..errors import ErrorCode, ProtocolError
from ..protocol import WS_MESSAGES, ClientMessage, Codec, ErrorReply, ServerMessage, parse_message
from ..protocol.attributes import ATTRIBUTE_MESSAGES
from ..protocol.validation import VALIDATION_MESSAGES
from .execution import EnvCaller
from .session import EnvHost
from .source import EnvSource

__all__ = ["Opening", "Route", "WsRoute", "TELEMETRY_OFF"]

#: Why a ``/ws`` without session telemetry does not know its messages.
TELEMETRY_OFF = (
    "session telemetry is off: a server in simulation mode serves it when OPENENV_VALIDATION_TOKEN "
    "or create_app(validation_token=...) gives it a token"
)


@dataclass(frozen=True)
class Opening:
    """What a route knows when a connection opens a session."""

    codec: Codec
    #: The handshake's query parameters.
    query: Mapping[str, str]
    #: The opening message, for routes that have one.
    message: ClientMessage | None
    #: How the new session's env calls run.
    caller: EnvCaller


class Route(abc.ABC):
    """One WebSocket route of a server."""

    #: Where it is served.
    path: ClassVar[str]
    #: The messages of an open session.
    messages: ClassVar[Mapping[str, type[ClientMessage]]] = WS_MESSAGES
    #: The message that opens a session, for routes that have one.
    opening: ClassVar[Mapping[str, type[ClientMessage]] | None] = None
    #: UNKNOWN_TYPE names the types the route expects (extension routes do;
    #: ``/ws`` answers as OpenEnv's reference server).
    expected: ClassVar[bool] = False
    #: Whether ``?session_id=...`` attaches a connection to a session that outlives
    #: its sockets (OpenEnv's ``/ws`` does).
    attachable: ClassVar[bool] = False
    #: Whether its sockets serve session telemetry (:mod:`.telemetry`).
    telemetry: bool = False

    def __init__(self, source: EnvSource) -> None:
        self.source = source

    @abc.abstractmethod
    def session(self, opening: Opening) -> EnvHost:
        """The session for a new connection (its environment is built later, by ``start``)."""

    def parse(self, message: Any) -> ClientMessage:
        """A decoded message of an open session, typed (OpenEnv's envelopes by default)."""
        return parse_message(message, self.messages, expected=self.expected)

    def error_reply(self, error: ProtocolError) -> ServerMessage:
        """The frame answering ``error`` on this route (OpenEnv's error frame by default)."""
        return ErrorReply.of(error)


class WsRoute(Route):
    """OpenEnv's ``/ws``: one environment per connection, or the session it attaches to
    (with the attribute messages of :mod:`~openenv_gym.protocol.attributes` besides OpenEnv's,
    and session telemetry's when ``telemetry``)."""

    path = "/ws"
    messages = {**WS_MESSAGES, **ATTRIBUTE_MESSAGES}
    attachable = True

    def __init__(self, source: EnvSource, *, telemetry: bool = False) -> None:
        super().__init__(source)
        self.telemetry = telemetry

    def parse(self, message: Any) -> ClientMessage:
        try:
            return parse_message(message, self.messages)
        except ProtocolError as exc:
            # Telemetry's messages, twice a session at most, take the slow path.
            kind = message.get("type") if isinstance(message, dict) else None
            if exc.code is not ErrorCode.UNKNOWN_TYPE or not isinstance(kind, str) or kind not in VALIDATION_MESSAGES:
                raise
            if not self.telemetry:
                raise ProtocolError(ErrorCode.UNKNOWN_TYPE, f"{exc.message} ({TELEMETRY_OFF})") from None
            return parse_message(message, VALIDATION_MESSAGES)

    def session(self, opening: Opening) -> EnvHost:
        session: EnvHost = self.source.session_type(self.source, codec=opening.codec, caller=opening.caller)
        session.speak(opening.codec, opening.query)
        return session
