"""Hostile and faulty peers: each way a server or client could be exhausted, frozen or
kept alive, as a real server on 127.0.0.1 (or a raw socket peer) shows it, bounded in time.

One test (or a few) per finding of the adversarial review; the finding's number is in
each test's docstring.
"""

from __future__ import annotations

import socket
import threading
import time

import pytest

import openenv_gym
from openenv_gym.client import ConnectOptions
from openenv_gym.client.connection import Connection
from openenv_gym.errors import MessageTimeoutError


class SilentServer:
    """A WebSocket server that completes handshakes and then never reads a byte
    (a server stopped with SIGSTOP looks the same from the client)."""

    def __init__(self) -> None:
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.connections: list[socket.socket] = []
        self._thread = threading.Thread(target=self._accept, daemon=True)
        self._thread.start()

    def _accept(self) -> None:
        import base64
        import hashlib

        while True:
            try:
                conn, _ = self.listener.accept()
            except OSError:
                return
            self.connections.append(conn)
            request = conn.recv(65536).decode("latin-1")
            key = next(line.split(":", 1)[1].strip() for line in request.split("\r\n")
                       if line.lower().startswith("sec-websocket-key"))
            accept = base64.b64encode(hashlib.sha1((key + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11").encode()).digest())
            conn.sendall(b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                         b"Sec-WebSocket-Accept: " + accept + b"\r\n\r\n")

    def close(self) -> None:
        self.listener.close()
        for conn in self.connections:
            conn.close()


@pytest.fixture
def silent_server():
    server = SilentServer()
    try:
        yield server
    finally:
        server.close()


def test_a_send_to_a_server_that_stopped_reading_is_bounded_by_the_message_timeout(silent_server):
    """Finding 7: after the busy poll the socket was left blocking with no timeout, so a
    large action to a stopped server blocked for as long as the server was stopped."""
    conn = Connection.open(f"ws://127.0.0.1:{silent_server.port}/ws", ConnectOptions(message_timeout=1.0))
    started = time.monotonic()
    with pytest.raises(MessageTimeoutError, match="Sending to"):
        conn.send(b"\0" * (64 << 20))  # more than the kernel's buffers on both ends hold
    assert time.monotonic() - started < 5
    assert conn.closed


@pytest.mark.parametrize("client", ["env", "vector"])
def test_idle_blocking_clients_answer_pings_within_a_short_ping_timeout(client):
    """Finding 9: idle blocking clients answered server pings only every 5 s, so a server
    with a ping timeout under 5 s dropped an idle RemoteEnv or batched RemoteVectorEnv."""
    uvicorn_kwargs = {"ws_ping_interval": 0.3, "ws_ping_timeout": 0.5}
    with openenv_gym.local_server("CartPole-v1", uvicorn_kwargs=uvicorn_kwargs) as url:
        if client == "env":
            env = openenv_gym.RemoteEnv(url, ping_interval=None)
        else:
            env = openenv_gym.RemoteVectorEnv(url, num_envs=2, mode="batched", ping_interval=None)
        try:
            env.reset(seed=0)
            time.sleep(3.0)  # idle through several of the server's ping deadlines
            env.step(env.action_space.sample())
        finally:
            env.close()
