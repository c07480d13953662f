"""Faults the server meets, each with its expected outcome asserted.

An env hanging past the step timeout, a client vanishing mid-step, graceful
drain on SIGTERM, and the metrics that count what happened. The client's side
of faults is in ``tests/client/test_faults.py``.
"""

from __future__ import annotations

import json
import logging
import signal
import socket
import threading
import time
import urllib.request

import pytest
from websockets.sync.client import connect

import openenv_gym
from openenv_gym.errors import ConnectionClosedError, ExecutionError, SessionError, ValidationError
from tests.conftest import free_port, serve_args, server_process, wait_until
from tests.envs import SlowEnv


def health(url: str) -> dict:
    with urllib.request.urlopen(url + "/health", timeout=5) as response:
        return json.loads(response.read())


def test_a_hung_env_gets_execution_error_and_a_fresh_env_others_unaffected():
    calls = {"n": 0}

    def factory():
        calls["n"] += 1
        return SlowEnv(delay=30.0 if calls["n"] == 2 else 0.0)

    with openenv_gym.local_server(factory, step_timeout=0.5) as url:
        # One after the other: each session builds its env on a thread of its own once
        # connected, so two connections opened at once could take the second env either way.
        hung = openenv_gym.RemoteEnv(url)
        hung.reset()
        healthy = openenv_gym.RemoteEnv(url)
        healthy.reset()
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


def test_a_client_vanishing_mid_step_frees_its_session(caplog):
    """The session ends at once; the step it abandoned finishes quietly (its observation's
    text is read from the env it stepped, which the session no longer holds)."""
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
        assert wait_until(lambda: health(url)["hung_env_calls"] == 0, timeout=10)
        with openenv_gym.RemoteEnv(f"http://127.0.0.1:{port}") as env:  # the server is fine
            env.reset()
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING or r.exc_info], caplog.text


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
