"""Busy polling on loopback: bounded on both sides, and never in the way."""

from __future__ import annotations

import asyncio
import functools
import subprocess
import sys
import time

import numpy as np
import pytest

import openenv_gym
from openenv_gym.cli import _parser
from openenv_gym.client.connection import LOOPBACK_BUSY_POLL
from openenv_gym.server.polling import BusyPoll
from tests.conftest import asgi_server
from tests.envs import SlowEnv


def test_a_window_spins_then_ends_and_zero_never_spins():
    async def scenario() -> list[bool]:
        seen = []
        poll = BusyPoll(0.02)
        poll.after_reply()
        await asyncio.sleep(0)
        seen.append(poll.spinning)
        await asyncio.sleep(0.1)
        seen.append(poll.spinning)
        off = BusyPoll(0.0)
        off.after_reply()
        seen.append(off.spinning)
        return seen

    assert asyncio.run(scenario()) == [True, False, False]


def test_negative_windows_are_refused_on_both_sides(cartpole_url):
    with pytest.raises(ValueError, match="busy_poll"):
        openenv_gym.create_app("CartPole-v1", busy_poll=-1)
    with pytest.raises(ValueError, match="busy_poll"):
        openenv_gym.RemoteEnv(cartpole_url, busy_poll=-0.5)


_CLIENT = """
import sys, time, openenv_gym
env = openenv_gym.RemoteEnv(sys.argv[1])
env.reset(seed=0)
for i in range(40):  # a CartPole session runs inline after a few fast calls
    if any(env.step(i % 2)[2:4]):
        env.reset()
print(env.unwrapped._live().connection._busy_poll, flush=True)
time.sleep(2)
env.close()
"""


def test_the_server_polls_after_replying_to_a_client_in_another_process_then_sleeps():
    app = openenv_gym.create_app("CartPole-v1", busy_poll=0.5)
    poll = app.state.openenv_gym.busy_poll
    with asgi_server(app) as url:
        client = subprocess.Popen([sys.executable, "-c", _CLIENT, url], stdout=subprocess.PIPE, text=True)
        try:
            assert float(client.stdout.readline()) == LOOPBACK_BUSY_POLL  # it polls too
            assert poll.spinning
            deadline = time.monotonic() + 5
            while poll.spinning and time.monotonic() < deadline:
                time.sleep(0.05)
            assert not poll.spinning
        finally:
            client.kill()
            client.wait(10)


def test_neither_side_polls_for_a_peer_in_its_own_process():
    app = openenv_gym.create_app("CartPole-v1", busy_poll=0.5)
    with asgi_server(app) as url:
        env = openenv_gym.RemoteEnv(url)
        try:
            env.reset(seed=0)
            env.step(0)
            assert env._live().connection._busy_poll == 0
            assert not app.state.openenv_gym.busy_poll.spinning
        finally:
            env.close()


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


def test_cli_takes_a_window():
    args = _parser().parse_args(["serve", "CartPole-v1", "--busy-poll", "0"])
    assert args.busy_poll == 0.0
    assert _parser().parse_args(["serve", "CartPole-v1"]).busy_poll is None


def test_one_connection_per_process_polls_at_a_time():
    """Two threads wait 200 ms for their replies: one spins its 50 ms, the other
    blocks at once (two spinning threads would take turns on the GIL)."""
    from concurrent.futures import ThreadPoolExecutor

    def step(env: openenv_gym.RemoteEnv) -> float:
        cpu = time.thread_time()
        env.step(1)
        return time.thread_time() - cpu

    app = openenv_gym.create_app(functools.partial(SlowEnv, delay=0.2), execution="thread")
    with asgi_server(app) as url:
        envs = [openenv_gym.RemoteEnv(url, busy_poll=0.05) for _ in range(2)]
        try:
            for env in envs:
                env.reset(seed=0)
            with ThreadPoolExecutor(2) as pool:
                used = sorted(pool.map(step, envs))
        finally:
            for env in envs:
                env.close()
    assert used[0] < 0.01 and used[1] > 0.03, f"CPU per thread {used}: both threads spun"
