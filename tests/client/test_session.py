"""A reply the client cannot read is a local ProtocolError, never a RemoteError.

A raw ASGI server on 127.0.0.1 serves an openenv-gym ``/schema`` (CartPole's)
and accepts the WebSocket handshake, then answers every message with the same
frame. A frame that is not an OpenEnv message of the route is the server
breaking the protocol, which the client detects: :class:`ProtocolError`. Only
an error frame is the server's own report: a :class:`RemoteError`.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

import openenv_gym
from openenv_gym.client import ConnectOptions
from openenv_gym.client.async_session import AsyncSession
from openenv_gym.errors import ExecutionError, ProtocolError, RemoteError
from openenv_gym.protocol import Reset
from openenv_gym.server.resolve import resolve
from tests.conftest import asgi_server

#: Frames no client can read as a reply of ``/ws``, by what is wrong with them.
UNREADABLE = {
    "not JSON": {"text": "hello"},
    "binary on a JSON session": {"bytes": b"\xc1\x00"},
    "not an object": {"text": "[1, 2]"},
    "no type": {"text": '{"data": {}}'},
    "no data": {"text": '{"type": "observation"}'},
    "another route's reply": {"text": '{"type": "vector_opened", "data": {"num_envs": 1}}'},
    "an observation without one": {"text": '{"type": "observation", "data": {"reward": 1.0}}'},
}


class Answering:
    """A raw ASGI app: ``/schema`` is an openenv-gym CartPole server's, any other
    HTTP path answers healthy, and ``/ws`` answers every message with ``frame``, but
    OpenEnv's ``close``, after which it closes (``closes=False``: it answers that too)."""

    def __init__(self, frame: dict[str, Any], *, closes: bool = True) -> None:
        self.frame = frame
        self.closes = closes
        self.schema = json.dumps(resolve("CartPole-v1").schema).encode()
        #: WebSocket connections accepted.
        self.connections = 0

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] == "http":
            body = self.schema if scope["path"] == "/schema" else b'{"status": "healthy"}'
            await send({"type": "http.response.start", "status": 200,
                        "headers": [(b"content-type", b"application/json")]})
            await send({"type": "http.response.body", "body": body})
        elif scope["type"] == "websocket":
            await receive()  # the handshake
            await send({"type": "websocket.accept"})
            self.connections += 1
            while (event := await receive())["type"] == "websocket.receive":
                if self.closes and _type_of(event.get("text")) == "close":
                    await send({"type": "websocket.close", "code": 1000})
                    return
                await send({"type": "websocket.send", **self.frame})


def _type_of(text: str | None) -> Any:
    try:
        return json.loads(text or "null").get("type")
    except (ValueError, AttributeError):
        return None


@pytest.mark.parametrize("frame", list(UNREADABLE))
def test_a_reply_the_client_cannot_read_is_a_local_protocol_error(frame):
    app = Answering(UNREADABLE[frame])
    with asgi_server(app) as url:
        env = openenv_gym.RemoteEnv(url, reconnect=True)
        try:
            with pytest.raises(ProtocolError) as info:
                env.reset(seed=0)
            assert not isinstance(info.value, RemoteError)
            assert app.connections == 1  # a broken protocol is not a lost connection: never retried
        finally:
            env.close()

        async def request() -> None:
            session = await AsyncSession.open(url, ConnectOptions())
            try:
                await session.request(Reset(seed=0))
            finally:
                await session.close()

        with pytest.raises(ProtocolError) as info:
            asyncio.run(request())
        assert not isinstance(info.value, RemoteError)


def test_an_error_frame_is_the_servers_own_report_a_remote_error():
    frame = {"text": json.dumps({"type": "error", "data": {"code": "EXECUTION_ERROR", "message": "boom"}})}
    with asgi_server(Answering(frame)) as url, openenv_gym.RemoteEnv(url) as env:
        with pytest.raises(ExecutionError, match="boom") as info:
            env.reset(seed=0)
        assert isinstance(info.value, RemoteError) and not isinstance(info.value, ProtocolError)
