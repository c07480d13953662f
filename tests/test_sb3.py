"""Stable-Baselines3 on remote envs: check_env, the VecEnv adapter, MaskablePPO on chess."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

pytest.importorskip("stable_baselines3")

import torch  # noqa: E402
from stable_baselines3 import PPO  # noqa: E402
from stable_baselines3.common.env_checker import check_env  # noqa: E402
from stable_baselines3.common.logger import Logger  # noqa: E402
from stable_baselines3.common.vec_env import DummyVecEnv  # noqa: E402

import openenv_gym  # noqa: E402
from openenv_gym.sb3 import RemoteVecEnv  # noqa: E402

#: A logger that writes nowhere (SB3's default leaves a directory in /tmp per run).
QUIET = Logger(folder=None, output_formats=[])


def test_sb3_check_env_passes_on_remote_env(cartpole_url):
    env = openenv_gym.RemoteEnv(cartpole_url)
    try:
        with _no_sb3_warnings():
            check_env(env, warn=True)
    finally:
        env.close()


class _no_sb3_warnings:
    def __enter__(self):
        import warnings

        self._catcher = warnings.catch_warnings(record=True)
        self.caught = self._catcher.__enter__()
        warnings.simplefilter("always")
        return self

    def __exit__(self, *exc):
        self._catcher.__exit__(*exc)
        messages = [str(w.message) for w in self.caught if "stable_baselines3" in (w.filename or "")]
        assert not messages, messages


def test_sb3_check_env_passes_on_the_alphazero_chess_view():
    pytest.importorskip("chess")
    env = gym.make("openenv/Chess-v0")
    try:
        check_env(env)
    finally:
        env.close()


@pytest.mark.parametrize("mode", ["batched", "sessions"])
def test_vec_env_matches_dummy_vec_env_step_for_step(cartpole_url, mode):
    remote = RemoteVecEnv(cartpole_url, num_envs=3, mode=mode)
    local = DummyVecEnv([lambda: gym.make("CartPole-v1")] * 3)
    try:
        assert remote.observation_space == local.observation_space
        assert remote.action_space == local.action_space
        for venv in (remote, local):
            venv.seed(5)
        obs_r, obs_l = remote.reset(), local.reset()
        np.testing.assert_allclose(obs_r, obs_l)
        rng = np.random.default_rng(0)
        finished = 0
        for _ in range(60):
            actions = rng.integers(0, 2, size=3)
            obs_r, rew_r, done_r, infos_r = remote.step(actions)
            obs_l, rew_l, done_l, infos_l = local.step(actions)
            np.testing.assert_allclose(obs_r, obs_l, rtol=1e-6)
            np.testing.assert_array_equal(rew_r, rew_l)
            np.testing.assert_array_equal(done_r, done_l)
            assert rew_r.dtype == np.float32 and done_r.dtype == bool
            for i in np.flatnonzero(done_r):
                finished += 1
                np.testing.assert_allclose(
                    infos_r[i]["terminal_observation"], infos_l[i]["terminal_observation"], rtol=1e-6
                )
                assert infos_r[i]["TimeLimit.truncated"] == infos_l[i].get("TimeLimit.truncated", False)
        assert finished >= 3
        assert remote.env_is_wrapped(gym.Wrapper) == local.env_is_wrapped(gym.Wrapper) == [True] * 3  # TimeLimit
    finally:
        remote.close()
        local.close()


def test_vec_env_refuses_next_step_autoreset(cartpole_url):
    venv = openenv_gym.RemoteVectorEnv(cartpole_url, num_envs=2)
    try:
        with pytest.raises(ValueError, match="SameStep"):
            RemoteVecEnv(venv)
    finally:
        venv.close()


@pytest.mark.slow
def test_ppo_through_the_adapter_learns_exactly_what_it_learns_locally(cartpole_url):
    """Same seed, same hyperparameters: PPO trained through RemoteVecEnv ends with
    the same weights as PPO trained on a local DummyVecEnv, after weights moved."""

    def train(venv) -> dict:
        model = PPO("MlpPolicy", venv, n_steps=64, batch_size=64, n_epochs=2, seed=0, device="cpu")
        model.set_logger(QUIET)
        before = {k: v.clone() for k, v in model.policy.state_dict().items()}
        model.learn(256)
        assert model.num_timesteps == 256
        after = model.policy.state_dict()
        assert any(not torch.equal(before[k], after[k]) for k in after), "no weight moved"
        return after

    remote = RemoteVecEnv(cartpole_url, num_envs=2)
    try:
        remote_weights = train(remote)
    finally:
        remote.close()
    local_weights = train(DummyVecEnv([lambda: gym.make("CartPole-v1")] * 2))
    for name, weight in local_weights.items():
        torch.testing.assert_close(remote_weights[name], weight, msg=name)


@pytest.mark.slow
def test_maskable_ppo_on_remote_chess():
    pytest.importorskip("chess")
    sb3_contrib = pytest.importorskip("sb3_contrib")
    env = gym.make("openenv/Chess-v0")
    try:
        model = sb3_contrib.MaskablePPO(
            "MlpPolicy", env, n_steps=64, batch_size=64, n_epochs=1, seed=0, device="cpu"
        )
        model.set_logger(QUIET)
        model.learn(128)
        obs, info = env.reset(seed=1)
        action, _ = model.predict(obs, action_masks=info["action_mask"].astype(bool))
        assert info["action_mask"][int(action)] == 1
    finally:
        env.close()
