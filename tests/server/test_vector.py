"""The server's vector backends: SyncVectorEnv in the server, AsyncVectorEnv in
worker processes, and ``"auto"`` choosing between them by how fast the env is."""

from __future__ import annotations

import time

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.vector import AutoresetMode

import openenv_gym
from tests.envs import SlowEnv
from tests.parity import run_parity


@pytest.mark.parametrize("autoreset", [AutoresetMode.NEXT_STEP, AutoresetMode.SAME_STEP], ids=lambda m: m.value)
def test_async_backend_steps_like_sync_vector_env(autoreset):
    with openenv_gym.local_server("CartPole-v1", vector_backend="async") as url:
        envs = openenv_gym.RemoteVectorEnv(url, 3, mode="batched", autoreset_mode=autoreset)
        ref = gym.vector.SyncVectorEnv([lambda: gym.make("CartPole-v1")] * 3, autoreset_mode=autoreset)
        try:
            assert run_parity(envs, ref, autoreset, 300) >= 3
        finally:
            envs.close()
            ref.close()


def test_async_workers_do_not_hold_other_clients_connections():
    """Forked workers close the server's TCP sockets: another client's
    connection closes at once while an async vector session is open (a worker
    holding its socket kept it open until the client's 2 s close timeout)."""
    with openenv_gym.local_server("CartPole-v1", vector_backend="async") as url:
        other = openenv_gym.RemoteEnv(url)
        other.reset(seed=0)
        envs = openenv_gym.RemoteVectorEnv(url, 2, mode="batched")
        try:
            envs.reset(seed=0)
            started = time.monotonic()
            other.close()
            assert time.monotonic() - started < 1.0
            envs.step(np.zeros(2, dtype=np.int64))  # the workers still answer
        finally:
            envs.close()


def _opened_backend(url: str) -> str:
    from openenv_gym.client import ConnectOptions
    from openenv_gym.client.session import RemoteSession
    from openenv_gym.protocol import vector

    session = RemoteSession(url, ConnectOptions(encoding="msgpack"), path=vector.VECTOR_PATH, replies=vector.OPEN_REPLIES)
    try:
        return session.request(vector.VectorOpen(2)).backend
    finally:
        session.close()


def _step_a_few_times(url: str) -> None:
    env = openenv_gym.RemoteEnv(url)
    try:
        env.reset(seed=0)
        for _ in range(10):
            env.step(0)
    finally:
        env.close()


def test_auto_backend_moves_new_sessions_to_workers_once_the_env_proves_slow():
    with openenv_gym.local_server(SlowEnv, env_kwargs={"delay": 0.003}) as url:
        assert _opened_backend(url) == "sync"  # nothing known yet
        _step_a_few_times(url)
        assert _opened_backend(url) == "async"
    with openenv_gym.local_server("CartPole-v1") as url:
        _step_a_few_times(url)
        assert _opened_backend(url) == "sync"  # fast envs stay in the server


def test_cli_takes_a_vector_backend():
    from openenv_gym.cli import _parser

    assert _parser().parse_args(["serve", "CartPole-v1"]).vector_backend == "auto"
    assert _parser().parse_args(["serve", "CartPole-v1", "--vector-backend", "async"]).vector_backend == "async"
    with pytest.raises(ValueError, match="vector_backend"):
        openenv_gym.create_app("CartPole-v1", vector_backend="threads")
