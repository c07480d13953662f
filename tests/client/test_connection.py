"""The blocking connection's busy polling: bounded by its window, and one
connection per process at a time. The server's side is in ``tests/server/test_latency.py``."""

from __future__ import annotations

import functools
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

import openenv_gym
from openenv_gym.client.connection import _POLLING
from tests.conftest import asgi_server
from tests.envs import SlowEnv


@pytest.mark.parametrize("window", [0.0, 0.005])
def test_a_client_waiting_longer_than_its_window_blocks_instead_of_spinning(window):
    """The reply to each step takes 100 ms; the client burns at most its window of CPU."""
    app = openenv_gym.create_app(functools.partial(SlowEnv, delay=0.1), execution="thread")
    with asgi_server(app) as url:
        env = openenv_gym.RemoteEnv(url, busy_poll=window)
        try:
            env.reset(seed=0)
            started, cpu = time.perf_counter(), time.thread_time()
            obs, *_ = env.step(1)
            wall, used = time.perf_counter() - started, time.thread_time() - cpu
        finally:
            env.close()
    np.testing.assert_array_equal(obs, np.zeros(1, np.float32))
    assert wall >= 0.1
    assert used < window + 0.03, f"{used * 1000:.1f} ms of CPU for a {window * 1000:.0f} ms window"


def test_a_polling_connection_offers_the_core_on_each_empty_read(monkeypatch):
    """While it polls, every read that finds nothing yields the core (``sched_yield``):
    the server that is to answer may be waiting for it."""
    turns = []
    monkeypatch.setattr("openenv_gym.client.connection.spin_turn", lambda: turns.append(1))
    app = openenv_gym.create_app(functools.partial(SlowEnv, delay=0.05), execution="thread")
    with asgi_server(app) as url:
        env = openenv_gym.RemoteEnv(url, busy_poll=0.02)
        try:
            env.reset(seed=0)
            turns.clear()
            env.step(1)
        finally:
            env.close()
    assert len(turns) > 10


def test_one_connection_per_process_polls_at_a_time():
    """While one connection of this process polls, another waiting for a reply
    blocks at once (two spinning threads would take turns on the GIL). Checked
    with the process-wide polling lock, so that the result does not depend on
    how much CPU a loaded machine gives a spinning thread."""
    app = openenv_gym.create_app(functools.partial(SlowEnv, delay=0.8), execution="thread")
    with asgi_server(app) as url:
        env = openenv_gym.RemoteEnv(url, busy_poll=1.0)
        try:
            env.reset(seed=0)
            # Alone, a waiting connection polls: it holds the lock during its wait.
            with ThreadPoolExecutor(1) as pool:
                stepping = pool.submit(env.step, 1)
                assert wait_until(_POLLING.locked, timeout=0.6)
                stepping.result(10)
            assert not _POLLING.locked()
            # With another connection polling (the lock held), it blocks instead.
            with _POLLING:
                cpu = time.thread_time()
                env.step(1)
                used = time.thread_time() - cpu
        finally:
            env.close()
    assert used < 0.05, f"{used * 1000:.0f} ms of CPU waiting for an 800 ms step: it spun"


def wait_until(condition, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.002)
    return condition()


@pytest.mark.parametrize("encoding", ["msgpack", "json"])
def test_a_connection_with_permessage_deflate_frames_through_websockets_and_plays_as_a_local_env(encoding):
    """``compression="deflate"`` negotiates the extension on the main port, so the
    connection keeps websockets' protocol (which inflates) instead of its own framing;
    the episode is the local env's, observation for observation."""
    import gymnasium as gym
    from gymnasium.utils.env_match import check_environments_match

    from openenv_gym.client.framing import ClientFraming

    with openenv_gym.local_server("CartPole-v1") as url:
        remote = openenv_gym.RemoteEnv(url, encoding=encoding, compression="deflate", native=False)
        local = gym.make("CartPole-v1")
        try:
            connection = remote._session.connection
            assert "permessage-deflate" in connection.response_headers.get("Sec-WebSocket-Extensions", "")
            assert not isinstance(connection._protocol, ClientFraming)
            check_environments_match(remote, local, num_steps=50, seed=3)
        finally:
            remote.close()
            local.close()
