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
``notifications/*``       ``{}`` (MCP sends them as notifications, which get nothing)
========================  =================================================================

A notification (a request without an ``id`` member) gets no response: nothing on
``WS /mcp``, HTTP 202 on ``POST /mcp``, and in a batch no entry (a batch of notifications
only, no answer at all). OpenEnv's ``/ws`` ``mcp`` envelope answers every frame: there a
notification gets :data:`ACKNOWLEDGED`. A notification's method runs where it can have an
effect: on the session the request arrived on or names, and ``openenv/session/close``. Where
its only outcome would be the response nobody gets, nothing runs: ``tools/*`` naming no
session (a throwaway env, built and closed for no one), ``openenv/session/create`` and
``initialize`` opening one (a session whose id is never told, held until it idles out).

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

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol, overload

from .._version import __version__
from ..errors import ProtocolError, ToolCallError
from ..protocol import ClientMessage, McpReply, McpRequest, ServerMessage
from ..protocol.mcp import (
    INTERNAL_ERROR,
    INVALID_PARAMS,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    SERVER_ERROR,
    JsonRpcError,
    JsonRpcResponse,
    Request,
    check_batch,
    error_response,
    initialize_result,
    parse_request,
    result_response,
    tool_failure,
)
from ..spaces._common import MAX_QUOTED_CHARS, clipped
from .source import EnvSource
from .tools import ServedTool, ToolOutcome

__all__ = ["answer", "answer_http", "HttpAnswer", "Registry", "ACKNOWLEDGED", "NOT_SUPPORTED", "unknown_session"]

#: What a ``/ws`` ``mcp`` frame carrying a notification gets (``/ws`` answers every frame;
#: OpenEnv 0.10's servers, which tell no notification apart, send the method's response there).
ACKNOWLEDGED = result_response(None, {})
#: The message of OpenEnv's servers for an env without tools.
NOT_SUPPORTED = "Environment does not support MCP"

_TOOLS = ("tools/list", "tools/call")
_CREATE, _CLOSE = "openenv/session/create", "openenv/session/close"


class McpSession(Protocol):
    """What JSON-RPC needs of the session a request arrived on
    (:class:`~openenv_gym.server.session.McpSession` is one)."""

    #: Its id (``openenv/session/create``'s answer).
    id: str
    #: Whether it speaks the MCP specification's dialect (set by ``initialize``).
    spec: bool
    #: What it serves: the env's name, for ``initialize``.
    source: EnvSource
    #: The server's sessions that outlive their sockets (``openenv/session/close``).
    registry: Registry | None

    def toolbox(self) -> Mapping[str, ServedTool] | None:
        """Its tools by name (``None``: it serves none)."""

    async def call_tool(self, name: str, arguments: dict[str, Any]) -> ToolOutcome:
        """Run the tool ``name``; a :class:`~openenv_gym.errors.ToolCallError` if it cannot."""

    async def respond(self, message: ClientMessage) -> tuple[ServerMessage | None, float]:
        """Its reply to ``message``, and the seconds its env calls took."""


class Registry(Protocol):
    """The sessions of a server that outlive their sockets
    (:class:`~openenv_gym.server.hosting.Server` keeps them)."""

    async def open_session(self, *, spec: bool) -> McpSession:
        """A new session, its env built, counted against capacity (ProtocolError if not)."""

    def find_session(self, session_id: str) -> McpSession | None:
        """The open session of that id, or ``None``."""

    async def close_session(self, session_id: str) -> dict[str, Any] | None:
        """Close it: the result of ``openenv/session/close``, or ``None`` for an unknown id."""

    async def fresh_session(self, payload: Any, *, spec: bool) -> dict[str, Any] | None:
        """The answer to ``payload`` on a throwaway session (built, used once, closed)."""


@dataclass(frozen=True)
class HttpAnswer:
    """The answer to a ``POST /mcp``: the response (``None`` for a notification, or a batch
    of them: HTTP 202), and the id of the session ``initialize`` opened (the
    ``Mcp-Session-Id`` header)."""

    response: JsonRpcResponse | None
    session_id: str | None = None


@overload
async def answer(payload: dict[str, Any], session: McpSession | None) -> dict[str, Any] | None: ...
@overload
async def answer(payload: Any, session: McpSession | None) -> JsonRpcResponse | None: ...
async def answer(payload: Any, session: McpSession | None) -> JsonRpcResponse | None:
    """The response to a request (or batch) that arrived on ``session``; ``None`` for a
    notification, whose method runs all the same."""
    if isinstance(payload, list):
        return await _batch(payload, lambda item: _answer_one(item, session))
    return await _answer_one(payload, session)


async def _answer_one(payload: Any, session: McpSession | None) -> dict[str, Any] | None:
    try:
        request = parse_request(payload)
    except JsonRpcError as exc:
        return exc.response
    response = await _on_session(request, session)
    return None if request.notification else response


async def _on_session(request: Request, session: McpSession | None) -> dict[str, Any] | None:
    if session is None or request.method == "ping":
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
    payload: Any, registry: Registry, *, session: McpSession | None = None, spec: bool = False
) -> HttpAnswer:
    """The answer to a ``POST /mcp`` body (a request or a batch); ``session`` is the one
    its ``Mcp-Session-Id`` header names, ``spec`` whether the request came from an MCP client."""
    if not isinstance(payload, list):
        return await _http_one(payload, registry, session, spec, batched=False)

    async def one(item: Any) -> dict[str, Any] | None:
        response = (await _http_one(item, registry, session, spec, batched=True)).response
        assert not isinstance(response, list)
        return response

    return HttpAnswer(await _batch(payload, one))


async def _http_one(
    payload: Any, registry: Registry, session: McpSession | None, spec: bool, *, batched: bool
) -> HttpAnswer:
    """One request of a ``POST /mcp`` body. A notification gets no answer, and its method
    does not run where only the answer would come of it (:func:`_for_no_one`)."""
    try:
        request = parse_request(payload)
    except JsonRpcError as exc:
        return HttpAnswer(exc.response)
    if request.notification and _for_no_one(request, session):
        return HttpAnswer(None)
    answered = await _http_request(request, payload, registry, session, spec, batched=batched)
    return HttpAnswer(None) if request.notification else answered


def _for_no_one(request: Request, session: McpSession | None) -> bool:
    """Whether a notification's method would only make a response that nobody gets:
    a throwaway env (``tools/*`` naming no session), a session whose id is never told
    (``openenv/session/create``, ``initialize`` without a session)."""
    if request.method in _TOOLS:
        return session is None and not request.params.get("session_id")
    return request.method == _CREATE or (request.method == "initialize" and session is None)


async def _http_request(
    request: Request, payload: Any, registry: Registry, session: McpSession | None, spec: bool, *, batched: bool
) -> HttpAnswer:
    method, params = request.method, request.params
    if method == "initialize" and batched:
        return HttpAnswer(error_response(
            request.id, INVALID_REQUEST, "Invalid request: send initialize alone, not in a batch (as MCP says)"
        ))
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
            return HttpAnswer(error_response(request.id, INVALID_PARAMS, unknown_session(session_id)))
    if session is None:
        return HttpAnswer(_common(request))
    try:
        reply, _ = await session.respond(McpRequest(payload))
    except ProtocolError as exc:  # the session ended under the request
        return HttpAnswer(error_response(request.id, SERVER_ERROR, exc.message))
    assert isinstance(reply, McpReply)
    return HttpAnswer(reply.response)


async def _batch(
    batch: list[Any], answer_one: Callable[[Any], Awaitable[dict[str, Any] | None]]
) -> JsonRpcResponse | None:
    """The answer to a JSON-RPC batch: the responses to its requests, in turn and in
    order, none for its notifications, and ``None`` when all of them are; an empty
    batch or an overlong one (:func:`~openenv_gym.protocol.mcp.check_batch`) is one error."""
    try:
        check_batch(batch)
    except JsonRpcError as exc:
        return exc.response
    responses = [response for item in batch if (response := await answer_one(item)) is not None]
    return responses or None


def _common(request: Request) -> dict[str, Any]:
    """The answer to what needs no session: ``ping``, ``notifications/*``, unknown methods."""
    if request.method == "ping" or request.method.startswith("notifications/"):
        return result_response(request.id, {})
    if request.method in (*_TOOLS, _CREATE, _CLOSE, "initialize"):
        return error_response(request.id, INTERNAL_ERROR, NOT_SUPPORTED)
    method = clipped(request.method, MAX_QUOTED_CHARS)
    return error_response(request.id, METHOD_NOT_FOUND, f"Method not found: {method}")


def _initialize(request: Request, session: McpSession) -> dict[str, Any]:
    source = session.source
    return initialize_result(
        request.params.get("protocolVersion"), source.env_id or source.name, __version__, source.instructions
    )


async def _close(request: Request, registry: Registry | None) -> dict[str, Any]:
    target = request.params.get("session_id")
    if not target:
        return error_response(request.id, INVALID_PARAMS, "Invalid params - 'session_id' is required")
    closed = None if registry is None else await registry.close_session(str(target))
    if closed is None:
        return error_response(request.id, INVALID_PARAMS, unknown_session(target))
    return result_response(request.id, closed)


def unknown_session(session_id: Any) -> str:
    """OpenEnv's words for a ``session_id`` naming no session, the id cut short."""
    return f"Unknown session_id: {clipped(str(session_id), MAX_QUOTED_CHARS)}"


def _list_tools(request: Request, session: McpSession) -> dict[str, Any]:
    """The session's tools; none (``{"tools": []}``) for a session without tools, which
    is what RFC 008's tool-declaration check reads (OpenEnv 0.10's servers answered
    ``-32603`` there)."""
    tools = session.toolbox() or {}
    return result_response(request.id, {"tools": [tool.spec.listing(spec=session.spec) for tool in tools.values()]})


async def _call_tool(request: Request, session: McpSession) -> dict[str, Any]:
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
