"""Faults, each with its expected outcome asserted.

Server killed mid-episode, env raising, env hanging, client vanishing
mid-step, graceful drain on SIGTERM, keepalive, metrics.
"""

from __future__ import annotations

import json
import signal
import socket
import sys
import threading
import time
import urllib.request

import pytest
from websockets.sync.client import connect

import openenv_gym
from openenv_gym.client.retry import RECONNECTED, Reconnect
from openenv_gym.errors import (
    ConnectionClosedError,
    ExecutionError,
    MessageTimeoutError,
    SessionError,
    ValidationError,
)
from tests.conftest import free_port, server_process
from tests.envs import SlowEnv


def serve_args(port: int, *extra: str, env: str = "CartPole-v1") -> list[str]:
    return [sys.executable, "-m", "openenv_gym.cli", "serve", env, "--port", str(port), *extra]


def health(url: str) -> dict:
    with urllib.request.urlopen(url + "/health", timeout=5) as response:
        return json.loads(response.read())


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


def test_a_hung_env_gets_execution_error_and_a_fresh_env_others_unaffected():
    calls = {"n": 0}

    def factory():
        calls["n"] += 1
        return SlowEnv(delay=30.0 if calls["n"] == 2 else 0.0)

    with openenv_gym.local_server(factory, step_timeout=0.5) as url:
        hung, healthy = openenv_gym.RemoteEnv(url), openenv_gym.RemoteEnv(url)
        hung.reset(), healthy.reset()
        done = threading.Event()
        steps = {"n": 0}

        def keep_stepping():
            while not done.is_set() and steps["n"] < 10_000:
                healthy.step(0)
                steps["n"] += 1

        worker = threading.Thread(target=keep_stepping)
        worker.start()
        started = time.monotonic()
        with pytest.raises(ExecutionError, match="hung.*fresh environment"):
            hung.step(0)
        elapsed = time.monotonic() - started
        done.set()
        worker.join(10)
        assert 0.4 < elapsed < 5
        assert steps["n"] > 10  # the other session kept going during the hang
        hung.reset()  # the recycled session works (its new env is a fast one)
        hung.step(0)
        hung.close(), healthy.close()


def test_a_client_vanishing_mid_step_frees_its_session():
    with openenv_gym.local_server(SlowEnv, env_kwargs={"delay": 0.5}) as url:
        port = int(url.rsplit(":", 1)[1])
        sock = connect(url.replace("http://", "ws://") + "/ws", compression=None)
        sock.send(json.dumps({"type": "reset"}))
        sock.recv(timeout=10)
        assert health(url)["active_sessions"] == 1
        sock.send(json.dumps({"type": "step", "data": {"action": 0}}))
        sock.socket.shutdown(socket.SHUT_RDWR)  # vanish without a close frame
        sock.socket.close()
        deadline = time.monotonic() + 10
        while health(url)["active_sessions"] and time.monotonic() < deadline:
            time.sleep(0.05)
        assert health(url)["active_sessions"] == 0
        with openenv_gym.RemoteEnv(f"http://127.0.0.1:{port}") as env:  # the server is fine
            env.reset()


def test_sigterm_drains_in_flight_steps_then_closes_sessions():
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    with server_process(serve_args(port, env="tests.envs:SlowEnv"), url) as proc:
        busy, idle = openenv_gym.RemoteEnv(url), openenv_gym.RemoteEnv(url)
        busy.reset(), idle.reset()
        result = {}

        def slow_step():  # SlowEnv sleeps 0.5 s per step
            result["step"] = busy.step(0)

        thread = threading.Thread(target=slow_step)
        thread.start()
        time.sleep(0.15)
        proc.send_signal(signal.SIGTERM)
        thread.join(10)
        assert "step" in result, "the in-flight step was lost"
        with pytest.raises((SessionError, ConnectionClosedError), match="shutting down|closed|lost"):
            idle.step(0)
        assert proc.wait(20) == 0
        busy.close(), idle.close()


def test_keepalive_keeps_an_idle_client_connected():
    uvicorn_kwargs = {"ws_ping_interval": 0.2, "ws_ping_timeout": 0.2}
    with openenv_gym.local_server("CartPole-v1", uvicorn_kwargs=uvicorn_kwargs) as url:
        alive = openenv_gym.RemoteEnv(url, ping_interval=0.2)
        silent = openenv_gym.RemoteEnv(url, ping_interval=None)  # nobody answers pings while idle
        alive.reset(), silent.reset()
        time.sleep(2.0)
        alive.step(0)  # still connected: its keepalive answered the server's pings
        with pytest.raises(ConnectionClosedError):
            silent.step(0)
        alive.close(), silent.close()


def test_metrics_endpoint():
    with openenv_gym.local_server("CartPole-v1") as url:
        with openenv_gym.RemoteEnv(url) as env:
            env.reset(seed=0)
            for _ in range(5):
                env.step(0)
            with pytest.raises(ValidationError):
                env.step(7)
            with urllib.request.urlopen(url + "/metrics", timeout=5) as response:
                text = response.read().decode()
    assert "openenv_gym_sessions_active 1" in text
    assert 'openenv_gym_messages_total{type="step"} 6' in text
    assert 'openenv_gym_errors_total{code="VALIDATION_ERROR"} 1' in text
    assert "openenv_gym_step_seconds_count 5" in text
    assert 'openenv_gym_step_quantile_seconds{quantile="0.99"}' in text


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
