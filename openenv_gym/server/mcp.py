"""``WS /mcp``: JSON-RPC frames, one session (and environment) per connection.

Its connections are sessions like any other: counted against capacity, closed
when idle and at shutdown. Each frame is a request, answered on the
connection's session by :func:`~openenv_gym.server.jsonrpc.answer` (a
notification gets no frame); ``POST /mcp`` answers one request per body, in
:mod:`.http`.
"""

from __future__ import annotations

from typing import Any

from ..errors import ProtocolError
from ..protocol import ClientMessage, ServerMessage
from ..protocol.mcp import JsonRpcMessage, JsonRpcReply, error_for
from .routes import Opening, Route
from .session import EnvHost

__all__ = ["McpRoute"]


class McpRoute(Route):
    """``WS /mcp``: JSON-RPC frames, without OpenEnv's envelopes."""

    path = "/mcp"

    def session(self, opening: Opening) -> EnvHost:
        session: EnvHost = self.source.session_type(self.source, codec=opening.codec, caller=opening.caller)
        session.speak(opening.codec, opening.query)
        return session

    def parse(self, message: Any) -> ClientMessage:
        return JsonRpcMessage(message)

    def error_reply(self, error: ProtocolError) -> ServerMessage:
        return JsonRpcReply(error_for(error))
