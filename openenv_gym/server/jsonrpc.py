"""What a server answers to a JSON-RPC request of MCP: OpenEnv's methods, as its
servers answer them, and what MCP clients need on top.

========================  =================================================================
method                    answer
========================  =================================================================
``tools/list``            the session's tools (``{"tools": [...]}``; ``[]`` when it has none)
``tools/call``            ``{name, arguments}``: the tool's result; a failing tool is a
                          ``-32603`` error (an MCP client gets a result with ``isError``)
``openenv/session/create``  ``{"session_id"}``: a session that outlives any socket
``openenv/session/close``   ``{session_id}``: ``{"session_id", "closed": true}`` (or
                          ``"closing": true`` while a ``/ws`` is attached to it)
``initialize``            MCP's handshake: the protocol version, ``{"tools": {}}``, the server
``ping``                  ``{}``
``notifications/*``       nothing (``POST /mcp`` answers HTTP 202)
========================  =================================================================

Requests arrive two ways:

- on a session (``/ws`` ``mcp`` frames, ``WS /mcp`` frames): :func:`answer`, on that
  session's env and tools;
- on ``POST /mcp`` (:func:`answer_http`): a request naming a session (``session_id`` in
  its params, or MCP's ``Mcp-Session-Id`` header) runs on it, one at a time with its
  other users; ``tools/*`` naming none run on a throwaway session, as OpenEnv's do;
  ``initialize`` opens a session and names it in the ``Mcp-Session-Id`` header.

    >>> import asyncio
    >>> asyncio.run(answer({"jsonrpc": "2.0", "id": 1, "method": "ping"}, None))
    {'jsonrpc': '2.0', 'id': 1, 'result': {}}
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from .._version import __version__
from ..errors import ProtocolError, ToolCallError
from ..protocol import McpReply, McpRequest
from ..protocol.mcp import (
    INTERNAL_ERROR,
    INVALID_PARAMS,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    SERVER_ERROR,
    JsonRpcError,
    Request,
    error_response,
    initialize_result,
    parse_request,
    result_response,
    tool_failure,
)
from ..protocol.messages import MAX_QUOTED_CHARS
from ..spaces._common import clipped

if TYPE_CHECKING:
    from .session import EnvHost

__all__ = ["answer", "answer_http", "HttpAnswer", "Registry", "ACKNOWLEDGED", "NOT_SUPPORTED"]

#: What a ``/ws`` ``mcp`` frame carrying a notification gets (``/ws`` answers every frame).
ACKNOWLEDGED = result_response(None, {})
#: The message of OpenEnv's servers for an env without tools.
NOT_SUPPORTED = "Environment does not support MCP"

_TOOLS = ("tools/list", "tools/call")
_CREATE, _CLOSE = "openenv/session/create", "openenv/session/close"


class Registry(Protocol):
    """The sessions of a server that outlive their sockets
    (:class:`~openenv_gym.server.hosting.Server` keeps them)."""

    async def open_session(self, *, spec: bool) -> EnvHost:
        """A new session, its env built, counted against capacity (ProtocolError if not)."""

    def find_session(self, session_id: str) -> EnvHost | None:
        """The open session of that id, or ``None``."""

    async def close_session(self, session_id: str) -> dict[str, Any] | None:
        """Close it: the result of ``openenv/session/close``, or ``None`` for an unknown id."""

    async def fresh_session(self, payload: Any, *, spec: bool) -> dict[str, Any] | None:
        """The answer to ``payload`` on a throwaway session (built, used once, closed)."""


@dataclass(frozen=True)
class HttpAnswer:
    """The answer to a ``POST /mcp``: the response (``None`` for a notification: HTTP
    202), and the id of the session ``initialize`` opened (the ``Mcp-Session-Id`` header)."""

    response: dict[str, Any] | None
    session_id: str | None = None


async def answer(payload: Any, session: EnvHost | None) -> dict[str, Any] | None:
    """The response to a request that arrived on ``session`` (``None``: a notification)."""
    try:
        request = parse_request(payload)
    except JsonRpcError as exc:
        return exc.response
    if session is None or request.method == "ping" or _is_notification(request):
        return _common(request)
    method, params = request.method, request.params
    if method == "initialize":
        session.spec = True
        return result_response(request.id, _initialize(request, session))
    if method == _CREATE:
        return result_response(request.id, {"session_id": session.id})
    if method == _CLOSE:
        target = params.get("session_id")
        if target == session.id:
            return error_response(
                request.id, INVALID_REQUEST,
                "Cannot close the session this request arrived on: close its connection instead",
            )
        return await _close(request, session.registry)
    if method == "tools/list":
        return _list_tools(request, session)
    if method == "tools/call":
        return await _call_tool(request, session)
    return _common(request)


async def answer_http(
    payload: Any, registry: Registry, *, session: EnvHost | None = None, spec: bool = False
) -> HttpAnswer:
    """The answer to a ``POST /mcp`` body; ``session`` is the one its ``Mcp-Session-Id``
    header names, ``spec`` whether the request came from an MCP client."""
    try:
        request = parse_request(payload)
    except JsonRpcError as exc:
        return HttpAnswer(exc.response)
    method, params = request.method, request.params
    if _is_notification(request):
        return HttpAnswer(None)
    if method == _CLOSE:
        return HttpAnswer(await _close(request, registry))
    if method == _CREATE or (method == "initialize" and session is None):
        try:
            opened = await registry.open_session(spec=method == "initialize")
        except ProtocolError as exc:
            return HttpAnswer(error_response(request.id, SERVER_ERROR, exc.message, exc.extra or None))
        if method == _CREATE:
            return HttpAnswer(result_response(request.id, {"session_id": opened.id}))
        return HttpAnswer(result_response(request.id, _initialize(request, opened)), opened.id)
    if session is None and method in _TOOLS:
        session_id = params.get("session_id")
        if not session_id:
            return HttpAnswer(await registry.fresh_session(payload, spec=spec))
        session = registry.find_session(str(session_id))
        if session is None:
            return HttpAnswer(error_response(request.id, INVALID_PARAMS, f"Unknown session_id: {session_id}"))
    if session is None:
        return HttpAnswer(_common(request))
    try:
        reply, _ = await session.respond(McpRequest(payload))
    except ProtocolError as exc:  # the session ended under the request
        return HttpAnswer(error_response(request.id, SERVER_ERROR, exc.message))
    assert isinstance(reply, McpReply)
    return HttpAnswer(reply.response)


def _is_notification(request: Request) -> bool:
    return request.method.startswith("notifications/")


def _common(request: Request) -> dict[str, Any] | None:
    """The answer to what needs no session: ``ping``, notifications, unknown methods."""
    if _is_notification(request):
        return None
    if request.method == "ping":
        return result_response(request.id, {})
    if request.method in (*_TOOLS, _CREATE, _CLOSE, "initialize"):
        return error_response(request.id, INTERNAL_ERROR, NOT_SUPPORTED)
    method = clipped(request.method, MAX_QUOTED_CHARS)
    return error_response(request.id, METHOD_NOT_FOUND, f"Method not found: {method}")


def _initialize(request: Request, session: EnvHost) -> dict[str, Any]:
    source = session.source
    return initialize_result(request.params.get("protocolVersion"), source.env_id or source.name, __version__)


async def _close(request: Request, registry: Registry | None) -> dict[str, Any]:
    target = request.params.get("session_id")
    if not target:
        return error_response(request.id, INVALID_PARAMS, "Invalid params - 'session_id' is required")
    closed = None if registry is None else await registry.close_session(str(target))
    if closed is None:
        return error_response(request.id, INVALID_PARAMS, f"Unknown session_id: {target}")
    return result_response(request.id, closed)


def _list_tools(request: Request, session: EnvHost) -> dict[str, Any]:
    """The session's tools; none (``{"tools": []}``) for a session without tools, which
    is what RFC 008's tool-declaration check reads (OpenEnv 0.10's servers answered
    ``-32603`` there)."""
    tools = session.toolbox() or {}
    return result_response(request.id, {"tools": [tool.spec.listing(spec=session.spec) for tool in tools.values()]})


async def _call_tool(request: Request, session: EnvHost) -> dict[str, Any]:
    name, arguments = request.params.get("name"), request.params.get("arguments", {})
    if not name or not isinstance(name, str):
        return error_response(request.id, INVALID_PARAMS, "Missing 'name' in params")
    if not isinstance(arguments, dict):
        return error_response(
            request.id, INVALID_PARAMS,
            f"Invalid params: 'arguments' must be an object, not {type(arguments).__name__}",
        )
    if session.toolbox() is None:
        return error_response(request.id, INTERNAL_ERROR, NOT_SUPPORTED)
    try:
        outcome = await session.call_tool(name, arguments)
    except ToolCallError as exc:
        if not session.spec:
            return error_response(request.id, INTERNAL_ERROR, exc.message)
        if exc.error_type == "tool_not_found":
            return error_response(request.id, INVALID_PARAMS, exc.message)
        return result_response(request.id, tool_failure(exc))
    return result_response(request.id, outcome.result.to_wire(spec=session.spec))
