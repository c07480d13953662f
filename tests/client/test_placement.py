"""Two client hooks a scheduler of servers needs, without any scheduler.

- ``RemoteVectorEnv({url: n, ...}, num_envs)`` places the envs exactly as
  given (the slots a pool leased), instead of least-loaded by ``/health``.
- ``Reconnect(relocate=...)`` sends a reconnecting client to where its lost
  server went: here a server killed on one port comes back on another, as a
  server that Ray restarts on another node does.
"""

from __future__ import annotations

import contextlib

import numpy as np
import pytest

import openenv_gym
from openenv_gym.client.retry import RECONNECTED, Reconnect
from tests.conftest import free_port, serve_args, server_process
from tests.server.test_faults import health

FLAG = f"_{RECONNECTED}"


def url_of(port: int) -> str:
    return f"http://127.0.0.1:{port}"


@pytest.mark.parametrize("mode", ["sessions", "batched"])
def test_a_mapping_places_the_envs_exactly(mode):
    port_a, port_b = free_port(), free_port()
    with server_process(serve_args(port_a), url_of(port_a)), server_process(serve_args(port_b), url_of(port_b)):
        # Least-loaded would split 4 / 4; the mapping says 1 / 7, in blocks in the order given.
        envs = openenv_gym.RemoteVectorEnv({url_of(port_a): 1, url_of(port_b): 7}, 8, mode=mode)
        try:
            assert [health(url_of(p))["active_sessions"] for p in (port_a, port_b)] == [1, 7]
            obs, _ = envs.reset(seed=3)
            reference = openenv_gym.RemoteVectorEnv(url_of(port_a), 8, mode=mode)
            try:
                assert np.array_equal(obs, reference.reset(seed=3)[0])
            finally:
                reference.close()
        finally:
            envs.close()


def test_a_mapping_must_add_up_to_num_envs():
    with pytest.raises(ValueError, match="places 5 envs .* num_envs is 8"):
        openenv_gym.RemoteVectorEnv({"http://127.0.0.1:1": 2, "http://127.0.0.1:2": 3}, 8)
    with pytest.raises(ValueError, match="positive number of envs"):
        openenv_gym.RemoteVectorEnv({"http://127.0.0.1:1": 0, "http://127.0.0.1:2": 8}, 8)


@pytest.mark.parametrize("mode", ["sessions", "batched"])
def test_relocate_follows_a_server_to_its_new_address(mode):
    """Envs on the server that moved end their episode (truncated, flagged) and go on at
    its new address; the envs of the other server are untouched."""
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
        _, rewards, _, truncations, infos = envs.step(np.zeros(4, dtype=np.int64))
        assert truncations.tolist() == [False, False, True, True] and infos[FLAG].tolist() == [False, False, True, True]
        envs.step(np.zeros(4, dtype=np.int64))  # NEXT_STEP: the moved envs restart, on the new server
        for _ in range(10):
            _, rewards, _, _, infos = envs.step(np.ones(4, dtype=np.int64))
            assert FLAG not in infos
        assert health(url_of(new))["active_sessions"] == 2
        assert set(asked) <= {url_of(old), url_of(new)} and asked[0] == url_of(old)


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
        _, info = env.reset(seed=1)
        assert info[RECONNECTED] and env.base_url == url_of(new)
        assert health(url_of(new))["active_sessions"] == 1
