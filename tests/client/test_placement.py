"""Two client hooks that a scheduler of servers needs, tested without any scheduler.

- ``RemoteVectorEnv({url: n, ...}, num_envs)`` places the envs exactly as
  given (the slots a pool leased), in blocks of env ids in the order given,
  whatever each server's ``/health`` says about its load.
- ``Reconnect(relocate=...)`` sends a reconnecting client to where its lost
  server went: here a server killed on one port comes back on another, as a
  server that Ray restarts on another node does (``openenv_gym.ray``).

Real servers on 127.0.0.1; Ray is not needed.
"""

from __future__ import annotations

import contextlib
import functools
import time

import gymnasium as gym
import numpy as np
import pytest

import openenv_gym
from openenv_gym.client.http import get_json
from openenv_gym.client.retry import RECONNECTED, Reconnect
from tests.conftest import free_port, serve_args, server_process
from tests.parity import run_parity

FLAG = f"_{RECONNECTED}"


class TaggedEnv(gym.Env):
    """Observes the tag of the server it runs on, so an env's server shows in its observation."""

    observation_space = gym.spaces.Box(0, 9, shape=(1,), dtype=np.int64)
    action_space = gym.spaces.Discrete(2)

    def __init__(self, tag: int) -> None:
        self.tag = np.array([tag])

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        return self.tag, {}

    def step(self, action):
        return self.tag, 1.0, False, False, {}


def active(url: str) -> int:
    """The envs a server holds, by its ``/health``."""
    return get_json(f"{url}/health")["active_sessions"]


def settles(counts: dict[str, int], timeout: float = 10.0) -> bool:
    """Whether each server of ``counts`` holds that many envs within ``timeout`` seconds: a
    client's close returns before its server has closed the envs, which it counts until then."""
    deadline = time.monotonic() + timeout
    while any(active(url) != n for url, n in counts.items()):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True


def url_of(port: int) -> str:
    return f"http://127.0.0.1:{port}"


@pytest.fixture(scope="module")
def tagged():
    """Servers 0 and 1 of :class:`TaggedEnv`."""
    with openenv_gym.local_server(functools.partial(TaggedEnv, 0)) as a, \
            openenv_gym.local_server(functools.partial(TaggedEnv, 1)) as b:
        yield a, b


@pytest.mark.parametrize("mode", ["sessions", "batched"])
def test_a_mapping_places_the_envs_exactly_in_the_order_given(tagged, mode):
    a, b = tagged
    for placement, tags in [({a: 1, b: 7}, [0] + [1] * 7), ({b: 3, a: 5}, [1] * 3 + [0] * 5)]:
        envs = openenv_gym.RemoteVectorEnv(placement, 8, mode=mode)
        try:
            assert (active(a), active(b)) == (placement[a], placement[b])
            assert envs.reset(seed=0)[0][:, 0].tolist() == tags
            assert envs.step(np.zeros(8, dtype=np.int64))[0][:, 0].tolist() == tags
        finally:
            envs.close()
        assert settles({a: 0, b: 0}), (active(a), active(b))


def test_a_mapping_overrides_least_loaded(tagged):
    """A list of the same servers goes by load; the mapping puts the envs where it says."""
    a, b = tagged
    others = [openenv_gym.RemoteEnv(a) for _ in range(4)]
    try:
        by_load = openenv_gym.RemoteVectorEnv([a, b], 8, mode="sessions")
        try:
            assert (active(a), active(b)) == (4 + 2, 6)
        finally:
            by_load.close()
        assert settles({a: 4, b: 0}), (active(a), active(b))
        placed = openenv_gym.RemoteVectorEnv({a: 5, b: 3}, 8, mode="sessions")
        try:
            assert (active(a), active(b)) == (4 + 5, 3)
        finally:
            placed.close()
    finally:
        for env in others:
            env.close()


def test_a_mapping_steps_like_sync_vector_env(cartpole_url):
    """An explicit placement over two servers steps exactly like a ``SyncVectorEnv`` of
    the same env and seeds."""
    with openenv_gym.local_server("CartPole-v1") as other:
        envs = openenv_gym.RemoteVectorEnv({cartpole_url: 3, other: 5}, 8)
        reference = gym.vector.SyncVectorEnv([lambda: gym.make("CartPole-v1")] * 8)
        try:
            assert run_parity(envs, reference, gym.vector.AutoresetMode.NEXT_STEP, 60) > 0
        finally:
            envs.close()
            reference.close()


def test_a_mapping_must_add_up_to_num_envs():
    with pytest.raises(ValueError, match=r"places 5 envs .* num_envs is 8"):
        openenv_gym.RemoteVectorEnv({"http://127.0.0.1:1": 2, "http://127.0.0.1:2": 3}, 8)
    for bad in (0, -1, 2.0, True):
        with pytest.raises(ValueError, match="positive number of envs"):
            openenv_gym.RemoteVectorEnv({"http://127.0.0.1:1": bad, "http://127.0.0.1:2": 7}, 8)


@pytest.mark.parametrize("mode", ["sessions", "batched"])
def test_relocate_follows_a_server_to_its_new_address(mode):
    """The envs of the server that moved end their episode (truncated, flagged) and go on
    at its new address; the envs of the other server are untouched."""
    port_a, old, new = free_port(), free_port(), free_port()
    asked: list[str] = []

    def relocate(url: str) -> str:
        asked.append(url)
        return url_of(new)

    policy = Reconnect(attempts=40, backoff=0.05, max_backoff=0.25, relocate=relocate)
    with contextlib.ExitStack() as stack:
        stack.enter_context(server_process(serve_args(port_a), url_of(port_a)))
        moving = stack.enter_context(server_process(serve_args(old), url_of(old)))
        envs = openenv_gym.RemoteVectorEnv([url_of(port_a), url_of(old)], 4, mode=mode, reconnect=policy,
                                           message_timeout=5)
        stack.callback(envs.close)
        envs.reset(seed=0)
        envs.step(np.zeros(4, dtype=np.int64))
        assert not asked  # the first connections go where planned
        moving.kill()
        moving.wait(10)
        stack.enter_context(server_process(serve_args(new), url_of(new)))
        obs, _, terminated, truncated, infos = envs.step(np.zeros(4, dtype=np.int64))
        assert truncated.tolist() == [False, False, True, True] and infos[FLAG].tolist() == [False, False, True, True]
        assert not terminated[2:].any()
        # NEXT_STEP: the moved envs restart, on the new server; the others step on.
        restarted, *_ = envs.step(np.zeros(4, dtype=np.int64))
        assert not np.array_equal(restarted[2:], obs[2:])
        for _ in range(10):
            *_, infos = envs.step(np.ones(4, dtype=np.int64))
            assert FLAG not in infos
        assert (active(url_of(port_a)), active(url_of(new))) == (2, 2)
        assert asked and set(asked) <= {url_of(old), url_of(new)} and asked[0] == url_of(old)


def test_without_relocate_a_client_retries_the_same_address():
    """No hook: a server that came back on its old port is found again."""
    port = free_port()
    policy = Reconnect(attempts=40, backoff=0.05, max_backoff=0.25)
    with contextlib.ExitStack() as stack:
        server = stack.enter_context(server_process(serve_args(port), url_of(port)))
        env = openenv_gym.RemoteEnv(url_of(port), reconnect=policy, message_timeout=5)
        stack.callback(env.close)
        env.reset(seed=0)
        server.kill()
        server.wait(10)
        stack.enter_context(server_process(serve_args(port), url_of(port)))
        *_, truncated, info = env.step(0)
        assert truncated and info[RECONNECTED]
        env.reset(seed=1)
        assert env.base_url == url_of(port) and active(url_of(port)) == 1


def test_remote_env_relocates_on_the_reset_after_a_loss():
    old, new = free_port(), free_port()
    policy = Reconnect(attempts=40, backoff=0.05, max_backoff=0.25, relocate=lambda url: url_of(new))
    with contextlib.ExitStack() as stack:
        moving = stack.enter_context(server_process(serve_args(old), url_of(old)))
        env = openenv_gym.RemoteEnv(url_of(old), reconnect=policy, message_timeout=5)
        stack.callback(env.close)
        env.reset(seed=0)
        moving.kill()
        moving.wait(10)
        stack.enter_context(server_process(serve_args(new), url_of(new)))
        *_, truncated, info = env.step(0)
        assert truncated and info[RECONNECTED]
        obs, info = env.reset(seed=1)
        assert info[RECONNECTED] and env.base_url == url_of(new) and active(url_of(new)) == 1
        reference = gym.make("CartPole-v1")
        np.testing.assert_array_equal(obs, reference.reset(seed=1)[0])
