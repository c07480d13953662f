"""Built-in Echo server env: OpenEnv's ``echo_env``, an MCP-tools env.

Upstream serves ``CallToolAction`` / ``CallToolObservation`` (reset answers a
plain ``Observation``) and routes two FastMCP tools through ``step``:

- ``{"type": "list_tools"}`` -> ``{"tools": [{"name", "description", "input_schema"}, ...]}``;
- ``{"type": "call_tool", "tool_name": ..., "arguments": {...}}`` ->
  ``{"tool_name", "result", "error"}``, where ``result`` is FastMCP's
  ``CallToolResult`` as JSON (``content``, ``structured_content``, ``meta``,
  ``data``, ``is_error``; ``data`` is what the tool returned: the message for
  ``echo_message``, ``{"message", "length"}`` for ``echo_with_length``) and
  ``error`` is ``{"error_type", "message"}`` for an unknown tool
  (``tool_not_found``) or bad arguments (pydantic's message, classified as
  upstream does: ``invalid_args`` when it mentions an argument, else
  ``execution_error``).

As upstream (openenv 0.10 over ``/ws``): tool steps have ``reward`` null and
``done`` false and work before any reset; reset answers reward 0.0 and
``metadata = {"status": "ready", "message": "Echo environment ready!"}``; the
state's ``step_count`` counts every step and tool call since the reset. The same tools are served on ``/mcp``
(``tools/list``, ``tools/call``), so upstream's ``EchoEnv`` client, an
``MCPToolClient``, works against it.

    >>> env = EchoEnvironment()
    >>> env.step({"type": "call_tool", "tool_name": "echo_message",
    ...           "arguments": {"message": "hi"}}).fields["result"]["data"]
    'hi'
    >>> env.call_tool("echo_with_length", {"message": "hi"}).data
    {'message': 'hi', 'length': 2}
"""

from __future__ import annotations

import uuid
from typing import Any

from ..errors import ToolCallError
from ..fields import (
    BASE_STATE_DESCRIPTION,
    FieldsEnv,
    FieldsObservation,
    model_schema,
    validate_action,
)
from ..protocol.mcp import McpToolResult, ToolSpec, tool_error_data
from ..protocol.messages import Problems
from ..spaces._common import quoted

__all__ = ["EchoEnvironment", "TOOLS"]

_ERROR_TYPES = ["execution_error", "invalid_args", "transport_error", "tool_not_found", "timeout"]
_PYDANTIC_ERRORS_URL = "https://errors.pydantic.dev/2.14/v/"

_TYPE_FIELD = {
    "const": "call_tool", "default": "call_tool", "description": "Action type discriminator",
    "type": "string",
}
_METADATA_FIELD = {
    "additionalProperties": True, "description": "Additional metadata for the action", "type": "object",
}


def _message_schema() -> dict:
    return {
        "additionalProperties": False,
        "properties": {"message": {"type": "string", "description": "The message to echo back"}},
        "required": ["message"],
        "type": "object",
    }


#: The tools, with the output schemas FastMCP derives from their return types.
TOOLS: tuple[ToolSpec, ...] = (
    ToolSpec(
        "echo_message", "Echo back the provided message.", _message_schema(),
        {"properties": {"result": {"type": "string"}}, "required": ["result"], "type": "object",
         "x-fastmcp-wrap-result": True},
    ),
    ToolSpec(
        "echo_with_length", "Echo back the message with its length.", _message_schema(),
        {"additionalProperties": True, "type": "object"},
    ),
)
_TOOLS_BY_NAME = {tool.name: tool for tool in TOOLS}

#: ``ListToolsAction``'s schema: what a ``{"type": "list_tools"}`` step is checked against.
LIST_TOOLS_SCHEMA = model_schema(
    "ListToolsAction",
    {"type": {**_TYPE_FIELD, "const": "list_tools", "default": "list_tools"}},
    kind="action",
)


class EchoEnvironment(FieldsEnv):
    """Echo, as OpenEnv's echo_env: MCP tools echo_message and echo_with_length."""

    name = "echo_env"
    description = "MCP tools echo_message and echo_with_length"
    reset_before_step = False
    tools = TOOLS
    action_schema = model_schema(
        "CallToolAction",
        {
            "type": _TYPE_FIELD,
            "tool_name": {"description": "Name of the tool to call", "type": "string"},
            "arguments": {
                "additionalProperties": True, "description": "Arguments to pass to the tool",
                "type": "object",
            },
        },
        kind="action",
        required=["tool_name"],
        description="Call a specific tool via MCP.\n\nThis action triggers MCP's tools/call operation "
        "with the\nspecified tool name and arguments.",
    )
    observation_schema = model_schema(
        "CallToolObservation",
        {
            "tool_name": {"description": "Name of the tool that was called", "type": "string"},
            "result": {"default": None, "description": "Tool-specific result (may include tool errors)"},
            "error": {
                "anyOf": [{"$ref": "#/$defs/ToolError"}, {"type": "null"}],
                "default": None,
                "description": "Transport/framework error if call failed",
            },
        },
        kind="observation",
        required=["tool_name"],
        description="Response from tool execution.\n\nContains the tool's result or an error if the "
        "call failed.\nTool-specific errors (from the tool itself) are included in the result.\n"
        "Transport/framework errors use the error field.",
        defs={
            "ToolError": {
                "additionalProperties": False,
                "description": "Structured error for tool execution failures.\n\nThis is used for "
                "transport/framework errors, NOT for errors returned\nby the tool itself (those go "
                "in the result field).",
                "properties": {
                    "error_type": {"$ref": "#/$defs/ToolErrorType", "description": "Category of the error"},
                    "message": {
                        "description": "Human-readable error message", "title": "Message", "type": "string",
                    },
                },
                "required": ["error_type", "message"],
                "title": "ToolError",
                "type": "object",
            },
            "ToolErrorType": {
                "description": "Types of errors that can occur during tool execution.",
                "enum": _ERROR_TYPES,
                "title": "ToolErrorType",
                "type": "string",
            },
        },
    )
    reset_observation_schema = model_schema(
        "Observation", {}, kind="observation",
        description="Base class for all environment observations.\n\nAll observation subclasses "
        "should inherit from this base class.\nUses Pydantic for automatic validation and "
        "serialization.",
    )
    state_schema = model_schema("State", {}, kind="state", description=BASE_STATE_DESCRIPTION)

    def __init__(self) -> None:
        self.episode_id: str | None = str(uuid.uuid4())
        self.step_count = 0  # every step, tool calls and listings alike (as OpenEnv's Echo counts)

    @classmethod
    def parse_action(cls, data: Any) -> dict[str, Any]:
        """A ``list_tools`` action is a ``ListToolsAction``; anything else a ``CallToolAction``."""
        if isinstance(data, dict) and data.get("type") == "list_tools":
            return validate_action(LIST_TOOLS_SCHEMA, data)
        return validate_action(cls.action_schema, data)

    def reset(self, *, seed: int | None = None, episode_id: str | None = None) -> FieldsObservation:
        self.episode_id = episode_id or str(uuid.uuid4())
        self.step_count = 0
        return FieldsObservation(
            {}, reward=0.0, metadata={"status": "ready", "message": "Echo environment ready!"}
        )

    def step(self, action: dict[str, Any]) -> FieldsObservation:
        self.step_count += 1
        if action.get("type") == "list_tools":
            return FieldsObservation({"tools": [tool.step_listing() for tool in TOOLS]}, reward=None)
        name = action["tool_name"]
        try:
            result = call_tool(name, action.get("arguments", {}))
        except ToolCallError as exc:
            return FieldsObservation(
                {"tool_name": name, "result": None, "error": tool_error_data(exc)}, reward=None
            )
        return FieldsObservation(
            {"tool_name": name, "result": result.to_wire(spec=False), "error": None}, reward=None
        )

    def call_tool(self, name: str, arguments: dict[str, Any]) -> McpToolResult:
        """A tool call through MCP (``tools/call`` on a session), counted as a step."""
        self.step_count += 1
        return call_tool(name, arguments)

    def state(self) -> dict[str, Any]:
        return {"episode_id": self.episode_id, "step_count": self.step_count}


# -- the tools ------------------------------------------------------------------


def _failure(message: str) -> ToolCallError:
    """A failed call, of the error type OpenEnv's ``MCPEnvironment`` reads off its message."""
    return ToolCallError(message, error_type=_classify(message))


def _classify(message: str) -> str:
    """The error type OpenEnv's ``MCPEnvironment`` reads off an exception message."""
    text = message.lower()
    if "not found" in text or "unknown tool" in text:
        return "tool_not_found"
    if "invalid" in text or "argument" in text:
        return "invalid_args"
    return "execution_error"


def call_tool(name: str, arguments: dict[str, Any]) -> McpToolResult:
    """The result of tool ``name``, as FastMCP makes it of the tool function's value;
    raises :class:`~openenv_gym.errors.ToolCallError`."""
    if name not in _TOOLS_BY_NAME:
        raise _failure(f"Unknown tool: {quoted(name)}")
    message = _check_arguments(name, arguments)
    if name == "echo_message":
        return McpToolResult.of_value(message)
    return McpToolResult.of_value({"message": message, "length": len(message)})


def _check_arguments(name: str, arguments: dict[str, Any]) -> str:
    """The ``message`` argument, or the pydantic ``validate_call`` error FastMCP raises
    (its first few problems; the others are counted)."""
    problems = Problems()
    if "message" not in arguments:
        problems.add(["message"], "Missing required argument", arguments, "missing_argument", input_type="dict")
    elif not isinstance(arguments["message"], str):
        value = arguments["message"]
        problems.add(["message"], "Input should be a valid string", value, "string_type",
                     input_type=type(value).__name__)
    for key, value in arguments.items():
        if key != "message":
            problems.add([key], "Unexpected keyword argument", value, "unexpected_keyword_argument",
                         input_type=type(value).__name__)
    if not problems:
        return arguments["message"]
    lines = [f"{problems.count} validation error{'s' if problems.count > 1 else ''} for call[{name}]"]
    for entry in problems.listed:
        lines += [
            entry["loc"][0],
            f"  {entry['msg']} [type={entry['type']}, input_value={_pydantic_repr(entry['input'])}, "
            f"input_type={entry['input_type']}]",
            f"    For further information visit {_PYDANTIC_ERRORS_URL}{entry['type']}",
        ]
    if problems.count > len(problems.listed):
        lines.append(f"... and {problems.count - len(problems.listed)} more")
    raise _failure("\n".join(lines))


def _pydantic_repr(value: Any) -> str:
    """``repr`` shortened the way pydantic shortens ``input_value``."""
    text = repr(value)
    return text if len(text) <= 50 else f"{text[:25]}...{text[-24:]}"
