"""JSON-RPC 2.0 messages of MCP, as OpenEnv serves them on ``/mcp`` and in ``/ws`` ``mcp`` frames.

:func:`parse_request` validates a decoded request the way OpenEnv's server
does; every failure is a :class:`JsonRpcError` carrying the response to send.

    >>> parse_request({"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
    Request(id=1, method='tools/list', params={})
    >>> try:
    ...     parse_request({"jsonrpc": "2.0", "id": 2})
    ... except JsonRpcError as exc:
    ...     exc.response["error"]["code"]
    -32600
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

from ..errors import CLOSING_ERRORS, OpenEnvGymError, ProtocolError
from .messages import ClientMessage, ServerMessage

__all__ = [
    "Request",
    "JsonRpcError",
    "JsonRpcMessage",
    "JsonRpcReply",
    "error_for",
    "SERVER_ERROR",
    "parse_request",
    "error_response",
    "result_response",
    "text_content",
    "PARSE_ERROR",
    "parse_error",
    "INVALID_REQUEST",
    "METHOD_NOT_FOUND",
    "INVALID_PARAMS",
    "INTERNAL_ERROR",
]

#: JSON-RPC 2.0 error codes.
PARSE_ERROR_CODE = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603
#: Implementation-defined server error (OpenEnv: capacity, factory failures).
SERVER_ERROR = -32000


def error_response(request_id: Any, code: int, message: str, data: Any = None) -> dict[str, Any]:
    """A JSON-RPC error response."""
    return {"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": message, "data": data}}


def result_response(request_id: Any, result: Any) -> dict[str, Any]:
    """A JSON-RPC success response."""
    return {"jsonrpc": "2.0", "id": request_id, "result": result}


def text_content(text: str) -> dict[str, Any]:
    """MCP's ``TextContent`` block of a tool result, as OpenEnv's FastMCP writes it."""
    return {"type": "text", "text": text, "annotations": None, "meta": None}


#: The response to a body that is not JSON at all.
PARSE_ERROR = error_response(None, PARSE_ERROR_CODE, "Parse error")


def parse_error(reason: str) -> dict[str, Any]:
    """The response to a body that is not JSON, or breaks the size and nesting limits."""
    return error_response(None, PARSE_ERROR_CODE, f"Parse error: {reason}")


class JsonRpcError(OpenEnvGymError):
    """A request that cannot be served; ``response`` is the JSON-RPC error to send."""

    def __init__(self, response: dict[str, Any]) -> None:
        super().__init__(response["error"]["message"])
        self.response = response


@dataclass(frozen=True, slots=True)
class Request:
    """One validated JSON-RPC request (``id`` is ``None`` for a notification)."""

    id: Any
    method: str
    params: dict[str, Any] = field(default_factory=dict)


def parse_request(payload: Any) -> Request:
    """Validate a decoded JSON-RPC request."""
    if not isinstance(payload, dict):
        raise JsonRpcError(error_response(None, INVALID_REQUEST, "Invalid request: expected a JSON object"))
    request_id = payload.get("id")
    if not isinstance(request_id, (str, int, type(None))) or isinstance(request_id, bool):
        request_id = None
    missing = [k for k in ("jsonrpc", "method") if k not in payload]
    if missing or payload.get("jsonrpc") != "2.0" or not isinstance(payload.get("method"), str):
        reason = f"missing {', '.join(missing)}" if missing else "jsonrpc must be '2.0' and method a string"
        raise JsonRpcError(error_response(request_id, INVALID_REQUEST, f"Invalid request: {reason}"))
    params = payload.get("params")
    if params is not None and not isinstance(params, dict):
        raise JsonRpcError(error_response(request_id, INVALID_PARAMS, "Invalid params: expected an object"))
    return Request(request_id, payload["method"], params or {})


@dataclass(frozen=True, slots=True)
class JsonRpcMessage(ClientMessage):
    """One JSON-RPC request (or notification, or batch) on ``WS /mcp``: there is no
    OpenEnv envelope there, the frame is the request."""

    type: ClassVar[str] = "jsonrpc"

    payload: Any

    def to_wire(self) -> Any:
        return self.payload


@dataclass(frozen=True, slots=True)
class JsonRpcReply(ServerMessage):
    """A JSON-RPC response on ``WS /mcp``: the frame is the response."""

    type: ClassVar[str] = "jsonrpc"

    response: dict[str, Any]

    def to_wire(self) -> dict[str, Any]:
        return self.response


def error_for(error: ProtocolError) -> dict[str, Any]:
    """The JSON-RPC answer to a protocol error: a frame that is not JSON within the
    limits is a parse error; a refused or failed session (capacity, factory) a
    server error, as OpenEnv answers them."""
    if error.code in CLOSING_ERRORS:
        return error_response(None, SERVER_ERROR, error.message)
    return parse_error(error.message)
