"""What a server answers to a JSON-RPC request of MCP, the way OpenEnv answers it.

Gymnasium envs have no MCP tools, so every well-formed tool request gets the
reference server's ``-32603 "Environment does not support MCP"``; malformed
requests get the standard JSON-RPC codes. It answers ``POST /mcp``,
``WS /mcp`` (:mod:`.mcp`) and ``/ws``'s ``mcp`` frames alike.

    >>> handle_jsonrpc({"jsonrpc": "2.0", "id": 1, "method": "tools/list"})["error"]["code"]
    -32603
"""

from __future__ import annotations

from typing import Any

from ..protocol.mcp import INTERNAL_ERROR, METHOD_NOT_FOUND, JsonRpcError, error_response, parse_request

__all__ = ["handle_jsonrpc"]

_KNOWN_METHODS = frozenset(
    {"tools/list", "tools/call", "openenv/session/create", "openenv/session/close"}
)


def handle_jsonrpc(payload: Any) -> dict[str, Any]:
    """The JSON-RPC response to one decoded request."""
    try:
        request = parse_request(payload)
    except JsonRpcError as exc:
        return exc.response
    if request.method not in _KNOWN_METHODS:
        return error_response(request.id, METHOD_NOT_FOUND, f"Method not found: {request.method}")
    return error_response(request.id, INTERNAL_ERROR, "Environment does not support MCP")
