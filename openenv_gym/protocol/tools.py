"""MCP tools as OpenEnv steps: ``list_tools`` and ``call_tool`` actions on ``/ws``, and their replies.

OpenEnv 0.10 (``openenv.core.env_server.mcp_types``) lets a client reach an env's MCP
tools through ordinary steps, which is the path that carries the env's reward and
``done`` with every tool result:

- the action ``{"type": "list_tools"}`` is answered by an observation holding
  ``tools``: ``[{"name", "description", "input_schema"}, ...]``;
- the action ``{"type": "call_tool", "tool_name", "arguments"}`` by an observation
  holding ``tool_name``, ``result`` (MCP's ``CallToolResult`` as JSON: ``content``
  blocks, ``structured_content``, ``data``, ``is_error``) and ``error``
  (``{"error_type", "message"}`` when the call failed).

This module builds those actions and reads those replies, for any server that serves
them (openenv-gym's, and upstream ``MCPEnvironment`` servers alike).

    >>> call_tool_step("act", {"action": "down"}).to_wire()
    {'type': 'step', 'data': {'type': 'call_tool', 'tool_name': 'act', 'arguments': {'action': 'down'}}}
    >>> reply = Observation(
    ...     {"tool_name": "act", "error": None,
    ...      "result": {"content": [{"type": "text", "text": "position: row 1"}],
    ...                 "data": {"obs": 4}, "is_error": False}},
    ...     reward=0.0, done=False)
    >>> read_tool_result(reply)
    ToolResult(text='position: row 1', reward=0.0, done=False, data={'obs': 4}, truncated=False)
    >>> reply = Observation(
    ...     {"tool_name": "act", "result": None,
    ...      "error": {"error_type": "invalid_args", "message": "Error calling tool 'act': 7 is out of range"}},
    ...     reward=0.0, done=False)
    >>> read_tool_result(reply)
    Traceback (most recent call last):
    ...
    openenv_gym.errors.ToolCallError: invalid_args: Error calling tool 'act': 7 is out of range
"""

from __future__ import annotations

import base64
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ..errors import ErrorCode, ProtocolError, ToolCallError
from .hints import jsonable
from .messages import Observation, Step

__all__ = [
    "Tool", "ToolResult", "EPISODE_TOOL_NAMES", "list_tools_step", "call_tool_step", "read_tools",
    "read_tool_result", "result_text", "result_images",
]

#: The tools of openenv-gym servers that start an episode or read its bookkeeping: an MCP
#: agent's, never a trained model's (a trainer starts each episode itself, with ``reset``,
#: so its adapters do not show these to the model).
EPISODE_TOOL_NAMES = ("new_episode", "episode_state")


@dataclass(frozen=True)
class Tool:
    """One tool of an env: OpenEnv's ``Tool`` (name, description, JSON Schema of its arguments)."""

    name: str
    description: str = ""
    input_schema: dict[str, Any] = field(default_factory=lambda: {"type": "object", "properties": {}})

    @classmethod
    def from_data(cls, data: Any) -> Tool:
        """A tool as a server lists it: ``input_schema`` on ``/ws``, ``inputSchema`` in
        JSON-RPC answers (the ``mcp`` library's spelling); both are read."""
        if not isinstance(data, Mapping) or not isinstance(data.get("name"), str) or not data["name"]:
            raise ProtocolError(ErrorCode.SESSION_ERROR, f"a tool without a name: {data!r}"[:300])
        schema = data.get("input_schema", data.get("inputSchema"))
        return cls(
            data["name"],
            data.get("description") or "",
            dict(schema) if isinstance(schema, Mapping) else {"type": "object", "properties": {}},
        )

    def to_wire(self) -> dict[str, Any]:
        return {"name": self.name, "description": self.description, "input_schema": self.input_schema}


@dataclass(frozen=True)
class ToolResult:
    """What one tool call brought back: the text for a model, the env's reward for the
    step (``None`` when the server gives none) and whether the episode is over, plus
    the tool's structured result (``data``), its images (MCP ``ImageContent`` blocks:
    ``(mime type, bytes)``, the env's frame where the server shows frames) and whether
    the episode was cut short by the env's time limit (``truncated``: the structured
    result's ``truncated``, which openenv-gym's tools give; ``False`` where none says)."""

    text: str
    reward: float | None
    done: bool
    data: Any = None
    images: tuple[tuple[str, bytes], ...] = field(default=(), repr=False)
    truncated: bool = False


def list_tools_step() -> Step:
    """The step that asks for the env's tools."""
    return Step({"type": "list_tools"})


def call_tool_step(name: str, arguments: Mapping[str, Any]) -> Step:
    """The step that calls tool ``name`` with ``arguments``."""
    return Step({"type": "call_tool", "tool_name": name, "arguments": dict(arguments)})


def read_tools(reply: Observation) -> list[Tool] | None:
    """The tools a ``list_tools`` step's reply lists; ``None`` when the reply holds no
    tool list (a server that took the step for an action of its own)."""
    tools = reply.observation.get("tools")
    if not isinstance(tools, list):
        return None
    return [Tool.from_data(tool) for tool in tools]


def read_tool_result(reply: Observation) -> ToolResult:
    """The result of a ``call_tool`` step.

    Raises:
        ToolCallError: the call failed (an unknown tool, arguments the tool refused, a
            tool that raised, or a result marked ``is_error``); its message is the
            server's.
    """
    observation = reply.observation
    error = observation.get("error")
    result = observation.get("result")
    if error:
        kind = error.get("error_type", "execution_error") if isinstance(error, Mapping) else "execution_error"
        message = error.get("message", "") if isinstance(error, Mapping) else str(error)
        raise ToolCallError(str(message), error_type=str(kind))
    if isinstance(result, Mapping) and result.get("is_error", result.get("isError")):
        raise ToolCallError(result_text(result), error_type="execution_error")
    data = result.get("data", result.get("structured_content")) if isinstance(result, Mapping) else result
    reward = None if reply.reward is None else float(reply.reward)
    truncated = isinstance(data, Mapping) and data.get("truncated") is True
    return ToolResult(result_text(result), reward, reply.done, data, result_images(result), truncated)


def result_images(result: Any) -> tuple[tuple[str, bytes], ...]:
    """The images of MCP's ``CallToolResult``: its ``image`` blocks as ``(mime type, bytes)``
    (a block whose data is not base64 is left out).

        >>> result_images({"content": [{"type": "image", "data": "iVBORw==", "mimeType": "image/png"}]})
        (('image/png', b'\\x89PNG'),)
    """
    blocks = result.get("content") if isinstance(result, Mapping) else None
    images = []
    for block in blocks if isinstance(blocks, list) else ():
        if isinstance(block, Mapping) and block.get("type") == "image" and isinstance(block.get("data"), str):
            try:
                images.append((str(block.get("mimeType", "")), base64.b64decode(block["data"], validate=True)))
            except (ValueError, TypeError):
                continue
    return tuple(images)


def result_text(result: Any) -> str:
    """The text of MCP's ``CallToolResult``: its text blocks, else its data as JSON.

        >>> result_text({"content": [], "data": {"message": "hi", "length": 2}})
        '{"message": "hi", "length": 2}'
    """
    if isinstance(result, Mapping):
        blocks = result.get("content")
        if isinstance(blocks, list):
            texts = [b["text"] for b in blocks if isinstance(b, Mapping) and isinstance(b.get("text"), str)]
            if texts:
                return "\n".join(texts)
        result = result.get("data", result.get("structured_content", result.get("structuredContent")))
    return result if isinstance(result, str) else json.dumps(jsonable(result))
