"""The hosting core on live servers: env and factory errors, capacity, a slow
env among fast ones, idle sessions."""

from __future__ import annotations

import json
import threading
import time

import pytest
from websockets.exceptions import ConnectionClosed

import openenv_gym
from openenv_gym.errors import CapacityReachedError, ExecutionError, FactoryError
from tests.envs import FaultyEnv, SlowEnv
from tests.server.raw import ask, ws


def test_env_errors_are_execution_errors_and_the_session_goes_on():
    with openenv_gym.local_server(FaultyEnv) as url, openenv_gym.RemoteEnv(url) as env:
        env.reset()
        with pytest.raises(ExecutionError, match="simulator exploded"):
            env.step(1)
        with pytest.raises(ExecutionError, match="does not fit its observation space"):
            env.step(2)
        assert env.step(0)[1] == 1.0


def test_factory_failure_is_a_factory_error():
    calls = {"n": 0}

    def flaky():
        calls["n"] += 1
        if calls["n"] > 1:
            raise OSError("no licence for the simulator")
        return FaultyEnv()

    with openenv_gym.local_server(flaky) as url:
        with pytest.raises(FactoryError, match="no licence") as info:
            openenv_gym.RemoteEnv(url).reset()
        assert info.value.details["factory_name"].endswith("flaky")


def test_capacity_reached_exactly_like_openenv():
    with openenv_gym.local_server("CartPole-v1", max_sessions=2) as url:
        first, second = openenv_gym.RemoteEnv(url), openenv_gym.RemoteEnv(url)
        first.reset(), second.reset()
        with ws(url) as sock:
            reply = json.loads(sock.recv(timeout=10))
            assert reply == {
                "type": "error",
                "data": {
                    "message": "Server at capacity: 2/2 sessions active. Cannot accept new connections.",
                    "code": "CAPACITY_REACHED",
                    "active_sessions": 2,
                    "max_sessions": 2,
                },
            }
            with pytest.raises(ConnectionClosed):
                sock.recv(timeout=10)
            assert sock.close_code == 1000
        third = openenv_gym.RemoteEnv(url)
        with pytest.raises(CapacityReachedError):
            third.reset()
        first.close()
        time.sleep(0.2)
        fourth = openenv_gym.RemoteEnv(url)
        fourth.reset()  # the slot was freed
        for env in (second, third, fourth):
            env.close()


def test_a_slow_env_does_not_stall_other_sessions():
    """Session A's step sleeps 1.5 s; session B keeps stepping meanwhile."""
    calls = {"n": 0}

    def factory():
        calls["n"] += 1
        return SlowEnv(delay=1.5 if calls["n"] == 2 else 0.0)

    with openenv_gym.local_server(factory) as url:
        # One after the other, so that the slow env is this session's (see test_faults).
        slow = openenv_gym.RemoteEnv(url)
        slow.reset()
        fast = openenv_gym.RemoteEnv(url)
        fast.reset()
        for _ in range(40):  # the fast session goes inline
            fast.step(0)
        started = threading.Event()

        def slow_step():
            started.set()
            slow.step(0)

        thread = threading.Thread(target=slow_step)
        thread.start()
        started.wait(5)
        time.sleep(0.05)
        begin = time.monotonic()
        for _ in range(50):
            fast.step(0)
        elapsed = time.monotonic() - begin
        thread.join(10)
        assert elapsed < 1.0, f"50 fast steps took {elapsed:.2f} s while another session was slow"
        slow.close(), fast.close()


def test_idle_sessions_are_closed():
    with openenv_gym.local_server("CartPole-v1", session_timeout=0.3) as url:
        with ws(url) as sock:
            ask(sock, {"type": "reset"})
            reply = json.loads(sock.recv(timeout=10))
            assert reply["data"]["code"] == "SESSION_ERROR" and "without a message" in reply["data"]["message"]
            with pytest.raises(ConnectionClosed):
                sock.recv(timeout=10)
