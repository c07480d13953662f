"""Stable-Baselines3 PPO on a remote, vectorized CartPole.

    python examples/sb3_ppo_cartpole.py [--timesteps 100000]

Serves CartPole-v1 with openenv-gym on 127.0.0.1, opens 8 remote envs as one
``RemoteVectorEnv`` (one WebSocket, batched msgpack frames), hands them to SB3
through ``openenv_gym.sb3.RemoteVecEnv`` and trains PPO with RL Zoo's tuned
hyperparameters; a few minutes on 2 cores. Needs ``pip install 'openenv-gym[sb3]'``.
"""

from __future__ import annotations

import argparse
import time

import gymnasium as gym
import torch
from stable_baselines3 import PPO
from stable_baselines3.common.evaluation import evaluate_policy
from stable_baselines3.common.monitor import Monitor

import openenv_gym
from openenv_gym.sb3 import RemoteVecEnv


def main() -> None:
    parser = argparse.ArgumentParser(description="SB3 PPO on a remote vectorized CartPole")
    parser.add_argument("--timesteps", type=int, default=100_000)
    parser.add_argument("--num-envs", type=int, default=8)
    args = parser.parse_args()
    # A 64-unit MLP gains nothing from a second thread; on a busy 2-core machine torch's
    # default two threads made training 9x slower (1742 s against 191 s).
    torch.set_num_threads(1)
    with openenv_gym.local_server("CartPole-v1", max_sessions=args.num_envs) as url:
        venv = RemoteVecEnv(url, num_envs=args.num_envs)
        model = PPO(
            "MlpPolicy", venv, n_steps=32, batch_size=256, gae_lambda=0.8, gamma=0.98, n_epochs=20,
            ent_coef=0.0, learning_rate=lambda p: p * 1e-3, clip_range=lambda p: p * 0.2,
            seed=0, device="cpu", verbose=0,
        )
        start = time.perf_counter()
        model.learn(args.timesteps, progress_bar=False)
        print(f"trained {args.timesteps} steps through {venv.venv!r} in {time.perf_counter() - start:.0f} s")
        venv.close()
        remote = Monitor(gym.make("openenv/Remote-v0", base_url=url))
        mean, std = evaluate_policy(model, remote, n_eval_episodes=20, deterministic=True)
        remote.close()
    print(f"evaluation on the remote CartPole: mean return {mean:.1f} +- {std:.1f} (max 500)")


if __name__ == "__main__":
    main()
