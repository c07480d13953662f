"""OpenEnv's HTTP routes on Starlette: ``/reset``, ``/step``, ``/state``, ``/health``,
``/metrics``, ``/mcp``, and the documents ``/schema``, ``/metadata``, ``/openapi.json``.

``/reset`` and ``/step`` are stateless, like the reference server's: each
request builds a fresh environment; production mode drops them and ``/state``,
as OpenEnv's does. Request bodies pass the same limits as WebSocket frames
(:mod:`openenv_gym.protocol.http`): a declared size over the limit is refused
before a byte is read, and reading stops as soon as a body grows past it.

``/mcp`` is OpenEnv's JSON-RPC endpoint (:mod:`.jsonrpc`), and MCP's streamable
HTTP transport for MCP clients: ``initialize`` answers an ``Mcp-Session-Id``
header, requests carrying it run on that session (HTTP 404 once it is gone),
notifications get HTTP 202, ``DELETE`` ends the session, ``GET`` (a stream of
server messages, which this server never sends) is HTTP 405.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from typing import Any

from starlette.requests import ClientDisconnect, Request
from starlette.responses import Response
from starlette.routing import Route

from ..errors import ProtocolError
from ..protocol import NATIVE_KEY, ClientMessage, Observation, codec_for
from ..protocol import http as wire
from ..protocol.mcp import INVALID_REQUEST, SESSION_HEADER, VERSION_HEADER, JsonRpcError, error_response
from . import jsonrpc
from .hosting import Server
from .schema import Mode, metadata_document, openapi_document

__all__ = ["constant", "errors_as_responses", "http_routes", "json_response", "read_body"]


def json_response(payload: Any, status: int = 200) -> Response:
    return Response(
        json.dumps(payload, separators=(",", ":"), allow_nan=True),
        status_code=status,
        media_type="application/json",
    )


async def read_body(request: Request, server: Server) -> bytes:
    """The request body, refused (HTTP 413) once it is known to be over the frame
    limit, and (HTTP 408) when its next chunk takes longer than ``handshake_timeout``.
    A client gone before the end (or closed for a newer connection, see
    :class:`~.transport.PendingConnections`) is answered HTTP 400, which nobody reads,
    rather than logged as a failure of the server."""
    limits = server.options.limits
    wire.check_declared_size(request.headers.get("content-length"), limits)
    chunks: list[bytes] = []
    size = 0
    stream = request.stream().__aiter__()
    while True:
        try:
            chunk = await asyncio.wait_for(stream.__anext__(), server.options.handshake_timeout)
        except StopAsyncIteration:
            return b"".join(chunks)
        except asyncio.TimeoutError:
            raise wire.HttpError(
                408, {"detail": f"The request body stalled for {server.options.handshake_timeout} s"}
            ) from None
        except ClientDisconnect:
            raise wire.HttpError(400, {"detail": "The client left before the end of its request body"}) from None
        size += len(chunk)
        wire.check_body_size(size, limits)
        chunks.append(chunk)


class _Endpoints:
    """The HTTP endpoints of one server."""

    def __init__(self, server: Server, mode: Mode) -> None:
        self.server = server
        source = server.source
        self._schema = json_response(source.schema)
        self._advertised: tuple[Any, Response] | None = None
        self.metadata = json_response(metadata_document(source))
        self.openapi = json_response(openapi_document(source.env_id or source.name, mode))

    async def schema(self, request: Request) -> Response:
        """``/schema``: the env's, and the native listener's address while one listens."""
        native = self.server.native
        if native is None:
            return self._schema
        if self._advertised is None or self._advertised[0] is not native:
            self._advertised = native, json_response({**self.server.source.schema, NATIVE_KEY: native})
        return self._advertised[1]

    async def _answer(self, *messages: ClientMessage) -> Response:
        """Run ``messages`` on a throwaway session, like OpenEnv's stateless HTTP
        routes, and answer with the data of the last reply. The session counts
        against the server's capacity and its env calls against the step
        timeout, as a WebSocket session's do; they run on its own thread."""
        server = self.server
        source = server.source
        session = source.session_type(source, codec=codec_for(None), caller=server.env_caller("thread"))
        try:
            async with server.holding(session):
                await session.start()
                for message in messages:
                    answer, _ = await session.respond(message)
        except ProtocolError as exc:
            raise wire.http_error(exc) from None
        assert isinstance(answer, Observation)
        return json_response(answer.to_wire()["data"])

    async def reset(self, request: Request) -> Response:
        return await self._answer(wire.reset_request(await read_body(request, self.server), self.server.options.limits))

    async def step(self, request: Request) -> Response:
        step, reset = wire.step_request(await read_body(request, self.server), self.server.options.limits)
        return await self._answer(reset, step)

    async def state(self, request: Request) -> Response:
        return json_response(
            {"episode_id": None, "step_count": 0, "env_id": self.server.source.env_id, "seed": None}
        )

    async def health(self, request: Request) -> Response:
        """Readiness, with capacity (the held sessions, which outlive their sockets,
        among them): ``status`` stays ``"healthy"`` while the
        server takes sessions (the OpenEnv validator wants exactly that) and is
        ``"draining"`` (HTTP 503) while it shuts down, which only connections
        opened before the shutdown can see (the listener is closed first)."""
        server = self.server
        active = server.active_envs()
        return json_response(
            {
                "status": "draining" if server.draining else "healthy",
                "active_sessions": active,
                "max_sessions": server.options.max_sessions,
                "available_sessions": max(server.options.max_sessions - active, 0),
                "held_sessions": server.held_sessions(),
                "max_held_sessions": server.max_held_sessions,
                "hung_env_calls": len(server.hung_calls),
            },
            503 if server.draining else 200,
        )

    async def metrics(self, request: Request) -> Response:
        server = self.server
        text = server.metrics.render(
            sessions_active=server.active_envs(), max_sessions=server.options.max_sessions, draining=server.draining,
        )
        return Response(text, media_type="text/plain; version=0.0.4")

    async def mcp(self, request: Request) -> Response:
        server = self.server
        try:
            payload = wire.jsonrpc_request(await read_body(request, server), server.options.limits)
        except JsonRpcError as exc:
            return json_response(exc.response)
        session = None
        if (session_id := request.headers.get(SESSION_HEADER)) is not None:
            session = server.find_session(session_id)
            if session is None:
                return _unknown_mcp_session(payload, session_id)
        spec = session is not None or VERSION_HEADER in request.headers
        answer = await jsonrpc.answer_http(payload, server, session=session, spec=spec)
        if answer.response is None:
            return Response(status_code=202)
        response = json_response(answer.response)
        if answer.session_id is not None:
            response.headers[SESSION_HEADER] = answer.session_id
        return response

    async def end_mcp_session(self, request: Request) -> Response:
        """``DELETE /mcp``: an MCP client ends the session its header names."""
        session_id = request.headers.get(SESSION_HEADER)
        if session_id is None:
            return json_response({"detail": f"DELETE /mcp needs the {SESSION_HEADER} header"}, 400)
        if await self.server.close_session(session_id) is None:
            return _unknown_mcp_session(None, session_id)
        return Response(status_code=204)

    async def mcp_stream(self, request: Request) -> Response:
        """``GET /mcp``: no stream of server messages (the server sends none)."""
        return Response(status_code=405, headers={"Allow": "POST, DELETE"})


Endpoint = Callable[[Request], Awaitable[Response]]


def errors_as_responses(endpoint: Endpoint) -> Endpoint:
    """``endpoint``, answering its :class:`~openenv_gym.protocol.http.HttpError` (and a
    protocol error, by :func:`~openenv_gym.protocol.http.http_error`) as JSON responses."""
    async def answer(request: Request) -> Response:
        try:
            return await endpoint(request)
        except ProtocolError as exc:
            error = wire.http_error(exc)
            return json_response(error.payload, error.status)
        except wire.HttpError as exc:
            return json_response(exc.payload, exc.status)

    return answer


def constant(response: Response) -> Endpoint:
    """An endpoint answering ``response``, built once."""
    async def endpoint(request: Request) -> Response:
        return response

    return endpoint


def _unknown_mcp_session(payload: object, session_id: str) -> Response:
    """HTTP 404 for a request naming a session that is gone, as MCP's transport wants
    (an MCP client then starts a new session)."""
    request_id = payload.get("id") if isinstance(payload, dict) else None
    message = f"Unknown {SESSION_HEADER}: {session_id} (the session is closed: initialize a new one)"
    return json_response(error_response(request_id, INVALID_REQUEST, message), 404)


def http_routes(server: Server, mode: Mode = "simulation") -> list[Route]:
    """Every HTTP route of ``server``; production mode drops ``/reset``, ``/step``, ``/state``."""
    endpoints = _Endpoints(server, mode)
    simulation = [
        ("/reset", endpoints.reset, "POST"),
        ("/step", endpoints.step, "POST"),
        ("/state", endpoints.state, "GET"),
    ]
    routes = [
        *(simulation if mode == "simulation" else []),
        ("/health", endpoints.health, "GET"),
        ("/metrics", endpoints.metrics, "GET"),
        ("/schema", endpoints.schema, "GET"),
        ("/metadata", constant(endpoints.metadata), "GET"),
        ("/openapi.json", constant(endpoints.openapi), "GET"),
        ("/mcp", endpoints.mcp, "POST"),
        ("/mcp", endpoints.end_mcp_session, "DELETE"),
        ("/mcp", endpoints.mcp_stream, "GET"),
    ]
    return [Route(path, errors_as_responses(endpoint), methods=[method]) for path, endpoint, method in routes]
