"""OpenEnv's HTTP routes on Starlette: ``/reset``, ``/step``, ``/state``, ``/health``,
``/metrics``, ``/mcp``, and the documents ``/schema``, ``/metadata``, ``/openapi.json``.

``/reset`` and ``/step`` are stateless, like the reference server's: each
request builds a fresh environment. Request bodies pass the same limits as
WebSocket frames (:mod:`openenv_gym.protocol.http`): a declared size over the
limit is refused before a byte is read, and reading stops as soon as a body
grows past it.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from typing import Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from ..errors import ProtocolError
from ..protocol import ClientMessage, Observation, codec_for
from ..protocol import http as wire
from ..protocol.mcp import JsonRpcError
from .hosting import Server
from .jsonrpc import handle_jsonrpc
from .schema import metadata_document, openapi_document

__all__ = ["http_routes", "json_response", "read_body"]


def json_response(payload: Any, status: int = 200) -> Response:
    return Response(
        json.dumps(payload, separators=(",", ":"), allow_nan=True),
        status_code=status,
        media_type="application/json",
    )


async def read_body(request: Request, server: Server) -> bytes:
    """The request body, refused (HTTP 413) once it is known to be over the frame
    limit, and (HTTP 408) when its next chunk takes longer than ``handshake_timeout``."""
    limits = server.limits
    wire.check_declared_size(request.headers.get("content-length"), limits)
    chunks: list[bytes] = []
    size = 0
    stream = request.stream().__aiter__()
    while True:
        try:
            chunk = await asyncio.wait_for(stream.__anext__(), server.handshake_timeout)
        except StopAsyncIteration:
            return b"".join(chunks)
        except asyncio.TimeoutError:
            raise wire.HttpError(
                408, {"detail": f"The request body stalled for {server.handshake_timeout} s"}
            ) from None
        size += len(chunk)
        if size > limits.max_frame_bytes:
            wire.parse_body(b" " * size, limits)  # raises the 413
        chunks.append(chunk)


class _Endpoints:
    """The HTTP endpoints of one server."""

    def __init__(self, server: Server) -> None:
        self.server = server
        source = server.source
        self.schema = json_response(source.schema)
        self.metadata = json_response(metadata_document(source))
        self.openapi = json_response(openapi_document(source.env_id or source.name))

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
        return await self._answer(wire.reset_request(await read_body(request, self.server), self.server.limits))

    async def step(self, request: Request) -> Response:
        step, reset = wire.step_request(await read_body(request, self.server), self.server.limits)
        return await self._answer(reset, step)

    async def state(self, request: Request) -> Response:
        return json_response(
            {"episode_id": None, "step_count": 0, "env_id": self.server.source.env_id, "seed": None}
        )

    async def health(self, request: Request) -> Response:
        """Readiness, with capacity: ``status`` stays ``"healthy"`` while the
        server takes sessions (the OpenEnv validator wants exactly that) and is
        ``"draining"`` (HTTP 503) while it shuts down, which only connections
        opened before the shutdown can see (the listener is closed first)."""
        server = self.server
        active = server.active_envs()
        return json_response(
            {
                "status": "draining" if server.draining else "healthy",
                "active_sessions": active,
                "max_sessions": server.max_sessions,
                "available_sessions": max(server.max_sessions - active, 0),
                "hung_env_calls": len(server.hung_calls),
            },
            503 if server.draining else 200,
        )

    async def metrics(self, request: Request) -> Response:
        server = self.server
        text = server.metrics.render(
            sessions_active=server.active_envs(), max_sessions=server.max_sessions, draining=server.draining,
        )
        return Response(text, media_type="text/plain; version=0.0.4")

    async def mcp(self, request: Request) -> Response:
        try:
            payload = wire.jsonrpc_request(await read_body(request, self.server), self.server.limits)
        except JsonRpcError as exc:
            return json_response(exc.response)
        return json_response(handle_jsonrpc(payload))


Endpoint = Callable[[Request], Awaitable[Response]]


def _errors_as_responses(endpoint: Endpoint) -> Endpoint:
    async def answer(request: Request) -> Response:
        try:
            return await endpoint(request)
        except wire.HttpError as exc:
            return json_response(exc.payload, exc.status)

    return answer


def _constant(response: Response) -> Callable[[Request], Awaitable[Response]]:
    async def endpoint(request: Request) -> Response:
        return response

    return endpoint


def http_routes(server: Server) -> list[Route]:
    """Every HTTP route of ``server``."""
    endpoints = _Endpoints(server)
    routes = [
        ("/reset", endpoints.reset, "POST"),
        ("/step", endpoints.step, "POST"),
        ("/state", endpoints.state, "GET"),
        ("/health", endpoints.health, "GET"),
        ("/metrics", endpoints.metrics, "GET"),
        ("/schema", _constant(endpoints.schema), "GET"),
        ("/metadata", _constant(endpoints.metadata), "GET"),
        ("/openapi.json", _constant(endpoints.openapi), "GET"),
        ("/mcp", endpoints.mcp, "POST"),
    ]
    return [Route(path, _errors_as_responses(endpoint), methods=[method]) for path, endpoint, method in routes]
