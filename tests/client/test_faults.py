"""Faults a client meets, each with its expected outcome asserted.

Server killed mid-episode (with and without a reconnect policy), capacity
retried with backoff, keepalive, a reply that comes too late. The server's
side of faults is in ``tests/server/test_faults.py``.
"""

from __future__ import annotations

import socket
import threading
import time

import pytest

import openenv_gym
from openenv_gym.client.retry import RECONNECTED, Reconnect
from openenv_gym.errors import ConnectionClosedError, MessageTimeoutError
from tests.conftest import free_port, serve_args, server_process
from tests.envs import SlowEnv


def test_server_killed_mid_episode_raises_a_typed_error_within_the_timeout():
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    with server_process(serve_args(port), url) as proc:
        env = openenv_gym.RemoteEnv(url, message_timeout=5)
        env.reset(seed=0)
        env.step(0)
        proc.kill()
        proc.wait(10)
        started = time.monotonic()
        with pytest.raises((ConnectionClosedError, MessageTimeoutError)):
            env.step(1)
        assert time.monotonic() - started < 5.5
        env.close()


def test_with_reconnect_a_lost_episode_is_truncated_and_flagged():
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    env = None
    try:
        with server_process(serve_args(port), url) as proc:
            env = openenv_gym.RemoteEnv(url, message_timeout=5, reconnect=Reconnect(attempts=40, backoff=0.1, max_backoff=0.5))
            obs, _ = env.reset(seed=0)
            obs, *_ = env.step(0)
            proc.kill()
            proc.wait(10)
            last_obs, reward, terminated, truncated, info = env.step(1)
            assert truncated and not terminated and reward == 0.0
            assert info[RECONNECTED] is True and "openenv_gym.lost_reason" in info
            assert (last_obs == obs).all()
        with server_process(serve_args(port), url):  # the server comes back on the same port
            obs, info = env.reset(seed=3)
            assert info[RECONNECTED] is True
            assert env.step(0)[0] in env.observation_space
    finally:
        if env is not None:
            env.close()


def test_capacity_is_retried_with_backoff_when_asked():
    with openenv_gym.local_server("CartPole-v1", max_sessions=1) as url:
        holder = openenv_gym.RemoteEnv(url)
        holder.reset()
        releaser = threading.Timer(0.6, holder.close)
        releaser.start()
        started = time.monotonic()
        waiting = openenv_gym.RemoteEnv(url, reconnect=Reconnect(attempts=20, backoff=0.1, max_backoff=0.2))
        waiting.reset(seed=1)
        assert time.monotonic() - started >= 0.5
        waiting.close()
        releaser.join()





def test_keepalive_keeps_an_idle_client_connected():
    """An idle client answers the server's pings at once, even one that sends no
    pings of its own; a peer that never answers is dropped."""
    uvicorn_kwargs = {"ws_ping_interval": 0.2, "ws_ping_timeout": 0.2}
    with openenv_gym.local_server("CartPole-v1", uvicorn_kwargs=uvicorn_kwargs) as url:
        alive = openenv_gym.RemoteEnv(url, ping_interval=0.2)
        quiet = openenv_gym.RemoteEnv(url, ping_interval=None)  # answers pings, sends none
        alive.reset(), quiet.reset()
        silent = _handshake_then_silence(url)  # a peer that never reads, so never answers
        try:
            time.sleep(2.0)
            alive.step(0)  # still connected: its keepalive answered the server's pings
            quiet.step(0)
            silent.settimeout(5)
            assert _read_until_closed(silent), "the server kept a peer that answers no ping"
        finally:
            silent.close()
            alive.close(), quiet.close()


def _handshake_then_silence(url: str) -> socket.socket:
    host, port = url.removeprefix("http://").split(":")
    sock = socket.create_connection((host, int(port)), timeout=5)
    sock.sendall(
        b"GET /ws HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
        b"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n"
    )
    assert b" 101 " in sock.recv(4096).split(b"\r\n", 1)[0]
    return sock


def _read_until_closed(sock: socket.socket) -> bool:
    """Drain the socket (pings, the close frame) until the server closes it."""
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        if not sock.recv(4096):
            return True
    return False


def test_a_reply_that_comes_too_late_never_answers_the_next_request():
    with openenv_gym.local_server(SlowEnv, env_kwargs={"delay": 0.6}) as url:
        env = openenv_gym.RemoteEnv(url, message_timeout=0.2)
        env.reset()
        with pytest.raises(MessageTimeoutError):
            env.step(0)
        time.sleep(0.8)  # the late reply arrives on the old, dropped connection
        with pytest.raises(ConnectionClosedError):
            env.state()
        env.close()
