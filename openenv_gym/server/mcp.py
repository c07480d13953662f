"""``WS /mcp``: JSON-RPC frames, one session per connection.

Its connections are sessions like any other: counted against capacity,
closed when idle and at shutdown; each frame is a request, answered by
:func:`~openenv_gym.server.jsonrpc.handle_jsonrpc` (``POST /mcp`` answers one
request per body, in :mod:`.http`).
"""

from __future__ import annotations

from typing import Any

from ..errors import ErrorCode, ProtocolError
from ..protocol import ClientMessage, ServerMessage
from ..protocol.mcp import JsonRpcMessage, JsonRpcReply, error_for
from .jsonrpc import handle_jsonrpc
from .routes import Opening, Route
from .session import EnvHost

__all__ = ["McpSession", "McpRoute"]

class McpSession(EnvHost):
    """A ``WS /mcp`` connection: JSON-RPC requests in, responses out (no env of its own)."""

    builds = "an MCP session"

    def __init__(self, opening: Opening, source: Any) -> None:
        super().__init__(source, lambda: None, opening.codec, opening.caller)

    async def handle(self, message: ClientMessage) -> ServerMessage:
        if not isinstance(message, JsonRpcMessage):
            raise ProtocolError(ErrorCode.UNKNOWN_TYPE, f"Unknown message type: {message.type}")
        return JsonRpcReply(handle_jsonrpc(message.payload))


class McpRoute(Route):
    """``WS /mcp``: JSON-RPC frames, without OpenEnv's envelopes."""

    path = "/mcp"

    def session(self, opening: Opening) -> EnvHost:
        return McpSession(opening, self.source)

    def parse(self, message: Any) -> ClientMessage:
        return JsonRpcMessage(message)

    def error_reply(self, error: ProtocolError) -> ServerMessage:
        return JsonRpcReply(error_for(error))
