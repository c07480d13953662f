"""Gymnasium's jax envs (``metadata["jax"]``: ``phys2d/``, ``tabular/``) served as
they are: the server wraps each session's env in ``JaxToNumpy``, so clients get
numpy values, and ``check_env`` passes on the remote env. Skipped without
``gymnasium[jax]`` (jax, flax, array-api-compat)."""

from __future__ import annotations

import warnings

import gymnasium as gym
import numpy as np
import pytest

pytest.importorskip("jax")
pytest.importorskip("flax")  # Gymnasium's jax envs define their parameters with flax
pytest.importorskip("array_api_compat")  # JaxToNumpy

from gymnasium.utils.env_checker import check_env  # noqa: E402
from gymnasium.wrappers import JaxToNumpy  # noqa: E402

import openenv_gym  # noqa: E402


@pytest.mark.parametrize("env_id", ["phys2d/CartPole-v1", "tabular/Blackjack-v0"])
def test_a_jax_env_is_served_as_numpy(env_id):
    with openenv_gym.local_server(env_id) as url, openenv_gym.RemoteEnv(url, encoding="msgpack") as env:
        assert "jax" not in env.metadata
        local = JaxToNumpy(gym.make(env_id))
        try:
            obs, _ = env.reset(seed=3)
            expected, _ = local.reset(seed=3)
            assert type(obs) is np.ndarray and np.array_equal(obs, expected)
            for action in [1, 0, 1]:
                obs, reward, terminated, truncated, _ = env.step(action)
                expected, expected_reward, *_ = local.step(action)
                assert type(obs) is np.ndarray and np.array_equal(obs, expected)
                assert reward == float(expected_reward)
                if terminated or truncated:
                    break
        finally:
            local.close()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # check_env's advice is about the env, local or not
            check_env(env, skip_render_check=True)


def test_a_jax_env_in_a_vector_session_draws_numpy_frames():
    """A batched vector session of a jax env drawing frames: numpy, on the one thread pygame needs."""
    with openenv_gym.local_server("phys2d/CartPole-v1", env_kwargs={"render_mode": "rgb_array"}) as url:
        envs = openenv_gym.RemoteVectorEnv(url, num_envs=2, mode="batched", encoding="msgpack")
        try:
            obs, _ = envs.reset(seed=0)
            obs, *_ = envs.step(envs.action_space.sample())
            frames = envs.render()
        finally:
            envs.close()
    assert type(obs) is np.ndarray and obs.shape == (2, 4)
    assert len(frames) == 2 and all(type(f) is np.ndarray and f.shape == (400, 600, 3) for f in frames)
