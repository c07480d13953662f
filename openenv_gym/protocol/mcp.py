"""MCP as OpenEnv serves it: JSON-RPC 2.0 on ``/mcp`` (and in ``/ws`` ``mcp`` frames),
tools and their results, and OpenEnv's tool actions inside ``/ws`` steps.

:func:`parse_request` validates a decoded request the way OpenEnv's server
does; every failure is a :class:`JsonRpcError` carrying the response to send. A
request without an ``id`` member is a notification, which JSON-RPC never answers,
not even with an error (``"id": null`` is a request whose id is null):

    >>> parse_request({"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
    Request(id=1, method='tools/list', params={}, notification=False)
    >>> parse_request({"jsonrpc": "2.0", "method": "tools/call"}).notification
    True
    >>> try:
    ...     parse_request({"jsonrpc": "2.0", "id": 2})
    ... except JsonRpcError as exc:
    ...     exc.response["error"]["code"]
    -32600
    >>> try:
    ...     parse_request({"jsonrpc": "2.0", "method": "tools/call", "params": [1]})
    ... except JsonRpcError as exc:
    ...     exc.response is None
    True

A batch (a JSON array of requests) is answered by an array of the responses to its
requests, none for its notifications (:func:`check_batch` refuses an empty or an
overlong one).

Tools and results come in two dialects. OpenEnv's (``spec=False``) is what its
servers send, a dump of FastMCP's objects: tools with every field of MCP's
``Tool``, results with ``structured_content``, ``data`` and ``is_error``. The MCP
specification's (``spec=True``) is what MCP clients read: ``structuredContent``
and ``isError``.

    >>> result = McpToolResult.of_value({"reward": 1.0})
    >>> result.to_wire(spec=True)
    {'content': [{'type': 'text', 'text': '{"reward":1.0}'}], 'structuredContent': {'reward': 1.0}, 'isError': False}

On ``/ws``, OpenEnv's MCP actions ride in a ``step``'s data, told apart from an
env's own action by their ``type``: :class:`ListTools` and :class:`CallTool`,
answered by :func:`tools_observation` and :func:`tool_observation`.

    >>> tool_action({"type": "call_tool", "tool_name": "act", "arguments": {"action": "left"}})
    CallTool(tool_name='act', arguments={'action': 'left'})
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

from ..errors import CLOSING_ERRORS, JsonRpcError, ProtocolError, ToolCallError
from ..spaces._common import quoted
from .hints import jsonable
from .images import PNG_MIME_TYPE
from .messages import ClientMessage, Observation, ServerMessage, check_fields, validation_error

__all__ = [
    "Request",
    "JsonRpcError",
    "JsonRpcMessage",
    "JsonRpcReply",
    "error_for",
    "SERVER_ERROR",
    "parse_request",
    "check_batch",
    "MAX_BATCH_REQUESTS",
    "JsonRpcResponse",
    "error_response",
    "tool_not_found",
    "result_response",
    "text_content",
    "image_content",
    "PARSE_ERROR",
    "parse_error",
    "INVALID_REQUEST",
    "METHOD_NOT_FOUND",
    "INVALID_PARAMS",
    "INTERNAL_ERROR",
    "RESERVED_TOOL_NAMES",
    "PROTOCOL_VERSIONS",
    "SESSION_HEADER",
    "VERSION_HEADER",
    "ToolSpec",
    "McpToolResult",
    "tool_failure",
    "tool_error_data",
    "initialize_result",
    "ListTools",
    "CallTool",
    "tool_action",
    "tools_observation",
    "tool_observation",
]

#: JSON-RPC 2.0 error codes.
PARSE_ERROR_CODE = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603
#: Implementation-defined server error (OpenEnv: capacity, factory failures).
SERVER_ERROR = -32000


def tool_not_found(name: Any) -> ToolCallError:
    """The failure of a call to a tool there is none of, as OpenEnv reports it."""
    return ToolCallError(f"Unknown tool: {quoted(name)}", error_type="tool_not_found")


def error_response(request_id: Any, code: int, message: str, data: Any = None) -> dict[str, Any]:
    """A JSON-RPC error response."""
    return {"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": message, "data": data}}


def result_response(request_id: Any, result: Any) -> dict[str, Any]:
    """A JSON-RPC success response."""
    return {"jsonrpc": "2.0", "id": request_id, "result": result}


def text_content(text: str) -> dict[str, Any]:
    """MCP's ``TextContent`` block of a tool result, as OpenEnv's FastMCP writes it."""
    return {"type": "text", "text": text, "annotations": None, "meta": None}


def image_content(data: str) -> dict[str, Any]:
    """MCP's ``ImageContent`` block (a base64 PNG) of a tool result, as FastMCP writes it."""
    return {"type": "image", "data": data, "mimeType": PNG_MIME_TYPE, "annotations": None, "meta": None}


#: The response to a body that is not JSON at all.
PARSE_ERROR = error_response(None, PARSE_ERROR_CODE, "Parse error")


def parse_error(reason: str) -> dict[str, Any]:
    """The response to a body that is not JSON, or breaks the size and nesting limits."""
    return error_response(None, PARSE_ERROR_CODE, f"Parse error: {reason}")


#: What a server sends for one JSON-RPC message: a response, or an array of them for a batch.
JsonRpcResponse = dict[str, Any] | list[dict[str, Any]]

#: Requests one JSON-RPC batch may hold: they are answered in turn, and each may cost an
#: env (a ``tools/*`` naming no session runs on a throwaway one).
MAX_BATCH_REQUESTS = 100


@dataclass(slots=True)
class Request:
    """One validated JSON-RPC request; a ``notification`` (no ``id`` member) gets no response."""

    id: Any
    method: str
    params: dict[str, Any] = field(default_factory=dict)
    notification: bool = False


def parse_request(payload: Any) -> Request:
    """Validate a decoded JSON-RPC request.

    What is not a request at all (no object, no ``"jsonrpc": "2.0"``, no string
    ``method``) is answered Invalid Request, with or without an ``id``, as JSON-RPC
    says; a notification's other faults (its ``params``) are answered by nothing.
    """
    if not isinstance(payload, dict):
        raise JsonRpcError(error_response(None, INVALID_REQUEST, "Invalid request: expected a JSON object"))
    request_id = payload.get("id")
    if not isinstance(request_id, (str, int, type(None))) or isinstance(request_id, bool):
        request_id = None
    missing = [k for k in ("jsonrpc", "method") if k not in payload]
    if missing or payload.get("jsonrpc") != "2.0" or not isinstance(payload.get("method"), str):
        reason = f"missing {', '.join(missing)}" if missing else "jsonrpc must be '2.0' and method a string"
        raise JsonRpcError(error_response(request_id, INVALID_REQUEST, f"Invalid request: {reason}"))
    notification = "id" not in payload
    params = payload.get("params")
    if params is not None and not isinstance(params, dict):
        raise JsonRpcError(
            error_response(request_id, INVALID_PARAMS, "Invalid params: expected an object"), notification=notification
        )
    return Request(request_id, payload["method"], params or {}, notification)


def check_batch(batch: list[Any]) -> None:
    """Refuse a JSON-RPC batch that is empty or holds more than :data:`MAX_BATCH_REQUESTS`
    requests: one Invalid Request answers it all.

        >>> try:
        ...     check_batch([])
        ... except JsonRpcError as exc:
        ...     exc.response["error"]["message"]
        'Invalid request: an empty batch'
    """
    if not batch:
        raise JsonRpcError(error_response(None, INVALID_REQUEST, "Invalid request: an empty batch"))
    if len(batch) > MAX_BATCH_REQUESTS:
        raise JsonRpcError(error_response(
            None, INVALID_REQUEST,
            f"Invalid request: a batch of {len(batch)} requests; send at most {MAX_BATCH_REQUESTS} in one batch",
        ))


@dataclass(slots=True)
class JsonRpcMessage(ClientMessage):
    """One JSON-RPC request (or notification, or batch) on ``WS /mcp``: there is no
    OpenEnv envelope there, the frame is the request."""

    type: ClassVar[str] = "jsonrpc"

    payload: Any

    def to_wire(self) -> Any:
        return self.payload


@dataclass(slots=True)
class JsonRpcReply(ServerMessage):
    """A JSON-RPC response (or a batch's array of them) on ``WS /mcp``: the frame is the response."""

    type: ClassVar[str] = "jsonrpc"

    response: JsonRpcResponse

    def to_wire(self) -> Any:
        return self.response


def error_for(error: ProtocolError) -> dict[str, Any]:
    """The JSON-RPC answer to a protocol error: a frame that is not JSON within the
    limits is a parse error; a refused or failed session (capacity, factory) a
    server error, as OpenEnv answers them."""
    if error.code in CLOSING_ERRORS:
        return error_response(None, SERVER_ERROR, error.message)
    return parse_error(error.message)


# -- tools --------------------------------------------------------------------------

#: Tool names OpenEnv keeps for its own API (its ``MCPEnvironment`` refuses them).
RESERVED_TOOL_NAMES = frozenset({"reset", "step", "state", "close"})

#: MCP protocol versions a client may ask for in ``initialize``, oldest first; a
#: server answers the one asked for, or the newest.
PROTOCOL_VERSIONS = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")

#: The HTTP headers of MCP's streamable HTTP transport: the session a request belongs
#: to (sent back by ``initialize``), and the protocol version an MCP client speaks.
SESSION_HEADER = "mcp-session-id"
VERSION_HEADER = "mcp-protocol-version"


@dataclass(frozen=True)
class ToolSpec:
    """One tool as a server lists it: its name, what it does and the JSON Schema of its
    arguments (an object schema), and optionally of its structured result."""

    name: str
    description: str
    input_schema: dict[str, Any]
    output_schema: dict[str, Any] | None = None

    def listing(self, *, spec: bool) -> dict[str, Any]:
        """Its entry in a ``tools/list`` result: every field of MCP's ``Tool``, as
        OpenEnv's FastMCP dumps it, or the specification's fields for MCP clients."""
        if spec:
            entry: dict[str, Any] = {
                "name": self.name, "description": self.description, "inputSchema": self.input_schema,
            }
            if self.output_schema is not None:
                entry["outputSchema"] = self.output_schema
            return entry
        return {
            "name": self.name, "title": None, "description": self.description,
            "inputSchema": self.input_schema, "outputSchema": self.output_schema,
            "icons": None, "annotations": None, "meta": None, "execution": None,
        }

    def step_listing(self) -> dict[str, Any]:
        """Its entry in a ``list_tools`` step's observation (OpenEnv's ``Tool`` model)."""
        return {"name": self.name, "description": self.description, "input_schema": self.input_schema}


@dataclass(frozen=True)
class McpToolResult:
    """What a tool call returned: ``text`` for a model, ``structured`` content for
    programs, and ``data``, the value itself (what ``MCPToolClient.call_tool`` returns)."""

    text: str
    structured: dict[str, Any] | None
    data: Any
    meta: dict[str, Any] | None = None
    #: PNG images (base64) shown after the text: the env's frame, where the server was
    #: asked for it (``tool_images``).
    images: tuple[str, ...] = ()

    @classmethod
    def of_value(cls, value: Any) -> McpToolResult:
        """The result of a tool function that returned ``value``, as FastMCP makes it: an
        object is its own structured content, anything else is wrapped as ``{"result":
        value}``; the text is a string as it is, anything else compact JSON."""
        value = jsonable(value)
        text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, separators=(",", ":"))
        if isinstance(value, dict):
            return cls(text, value, value)
        return cls(text, {"result": value}, value, {"fastmcp": {"wrap_result": True}})

    def to_wire(self, *, spec: bool) -> dict[str, Any]:
        """MCP's ``CallToolResult``: in OpenEnv's dialect, or the specification's."""
        if spec:
            content = [{"type": "text", "text": self.text}]
            content += [{"type": "image", "data": image, "mimeType": PNG_MIME_TYPE} for image in self.images]
            wire: dict[str, Any] = {"content": content}
            if self.structured is not None:
                wire["structuredContent"] = self.structured
            wire["isError"] = False
            return wire
        return {
            "content": [text_content(self.text), *(image_content(image) for image in self.images)],
            "structured_content": self.structured, "meta": self.meta, "data": self.data, "is_error": False,
        }


def tool_failure(error: ToolCallError) -> dict[str, Any]:
    """The ``CallToolResult`` an MCP client gets for a tool that failed (``isError``)."""
    return {"content": [{"type": "text", "text": error.message}], "isError": True}


def tool_error_data(error: ToolCallError) -> dict[str, Any]:
    """OpenEnv's ``ToolError`` object: ``{"error_type", "message"}``."""
    return {"error_type": error.error_type, "message": error.message}


def initialize_result(requested: Any, name: str, version: str, instructions: str | None = None) -> dict[str, Any]:
    """The result of MCP's ``initialize``: the protocol version asked for when it is one
    of :data:`PROTOCOL_VERSIONS` (else the newest), a server with tools, and the
    ``instructions`` MCP hosts show their model (the env's description), if any."""
    result: dict[str, Any] = {
        "protocolVersion": requested if requested in PROTOCOL_VERSIONS else PROTOCOL_VERSIONS[-1],
        "capabilities": {"tools": {}},
        "serverInfo": {"name": name, "version": version},
    }
    if instructions:
        result["instructions"] = instructions
    return result


# -- tool actions inside /ws steps ----------------------------------------------------


@dataclass(frozen=True)
class ListTools:
    """OpenEnv's ``ListToolsAction``: ``{"type": "list_tools"}`` as a step's data."""


@dataclass(frozen=True)
class CallTool:
    """OpenEnv's ``CallToolAction``: ``{"type": "call_tool", "tool_name", "arguments"}``
    as a step's data."""

    tool_name: str
    arguments: dict[str, Any] = field(default_factory=dict)


_LIST_FIELDS = frozenset({"type", "metadata"})
_CALL_REQUIRED = frozenset({"type", "tool_name"})
_CALL_FIELDS = _CALL_REQUIRED | {"arguments", "metadata"}


def tool_action(fields: Mapping[str, Any]) -> ListTools | CallTool | None:
    """The MCP action a step's data holds (``None`` when it has no ``type``: an env's own
    action), checked as OpenEnv's pydantic models check it (VALIDATION_ERROR otherwise)."""
    kind = fields.get("type")
    if kind is None:
        return None
    if kind == "list_tools":
        check_fields(fields, frozenset({"type"}), _LIST_FIELDS)
        return ListTools()
    if kind != "call_tool":
        raise validation_error(["type"], "Input should be 'list_tools' or 'call_tool'", kind, "literal_error")
    check_fields(fields, _CALL_REQUIRED, _CALL_FIELDS)
    name, arguments = fields["tool_name"], fields.get("arguments", {})
    if not isinstance(name, str):
        raise validation_error(["tool_name"], "Input should be a valid string", name, "string_type")
    if not isinstance(arguments, dict):
        raise validation_error(["arguments"], "Input should be a valid dictionary", arguments, "dict_type")
    return CallTool(name, arguments)


def tools_observation(tools: Iterable[ToolSpec]) -> Observation:
    """The observation answering a ``list_tools`` step (OpenEnv's ``ListToolsObservation``)."""
    return Observation({"metadata": {}, "tools": [tool.step_listing() for tool in tools]}, None, False)


def tool_observation(
    name: str, result: McpToolResult | ToolCallError, *, reward: float | None, done: bool
) -> Observation:
    """The observation answering a ``call_tool`` step (OpenEnv's ``CallToolObservation``):
    the result in OpenEnv's dialect, or the error, with the step's ``reward`` and ``done``."""
    if isinstance(result, ToolCallError):
        outcome, error = None, tool_error_data(result)
    else:
        outcome, error = result.to_wire(spec=False), None
    return Observation({"metadata": {}, "tool_name": name, "result": outcome, "error": error}, reward, done)
