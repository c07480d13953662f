"""The ``/mcp`` JSON-RPC 2.0 endpoint, answered the way OpenEnv answers it.

Gymnasium envs have no MCP tools, so every well-formed tool request gets the
reference server's ``-32603 "Environment does not support MCP"``; malformed
requests get the standard JSON-RPC codes. The HTTP status is always 200.

    >>> handle_jsonrpc({"jsonrpc": "2.0", "id": 1, "method": "tools/list"})["error"]["code"]
    -32603
"""

from __future__ import annotations

from typing import Any

__all__ = ["handle_jsonrpc", "PARSE_ERROR"]

_KNOWN_METHODS = frozenset(
    {"tools/list", "tools/call", "openenv/session/create", "openenv/session/close"}
)


def _error(request_id: Any, code: int, message: str) -> dict:
    return {"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": message, "data": None}}


#: The reply to a body that is not JSON at all.
PARSE_ERROR = _error(None, -32700, "Parse error")


def handle_jsonrpc(request: Any) -> dict:
    """The JSON-RPC response to one decoded request."""
    if not isinstance(request, dict):
        return _error(None, -32600, "Invalid request: expected a JSON object")
    request_id = request.get("id")
    if not isinstance(request_id, (str, int, type(None))) or isinstance(request_id, bool):
        request_id = None
    missing = [k for k in ("jsonrpc", "method") if k not in request]
    if missing or request.get("jsonrpc") != "2.0" or not isinstance(request.get("method"), str):
        reason = f"missing {', '.join(missing)}" if missing else "jsonrpc must be '2.0' and method a string"
        return _error(request_id, -32600, f"Invalid request: {reason}")
    method = request["method"]
    if method not in _KNOWN_METHODS:
        return _error(request_id, -32601, f"Method not found: {method}")
    params = request.get("params")
    if params is not None and not isinstance(params, dict):
        return _error(request_id, -32602, "Invalid params: expected an object")
    return _error(request_id, -32603, "Environment does not support MCP")
