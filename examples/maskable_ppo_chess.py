"""sb3-contrib MaskablePPO on remote chess, for a few thousand steps.

    python examples/maskable_ppo_chess.py [--timesteps 4096]

``gym.make("openenv/Chess-v0")`` starts the built-in chess server (upstream
OpenEnv's chess_env schema, on python-chess) in a child process and wraps it in
the AlphaZero codec: ``Discrete(4672)`` actions, ``(8, 8, 111)`` board planes
and ``action_masks()``, which MaskablePPO uses to play only legal moves. The
agent plays white against a random opponent. A few thousand steps only show
the loop running end to end (minutes on 2 cores), not a strong player.
Needs ``pip install 'openenv-gym[chess,sb3]'``.
"""

from __future__ import annotations

import argparse
import time

import gymnasium as gym
import numpy as np
from sb3_contrib import MaskablePPO

import openenv_gym  # noqa: F401  (registers the openenv/... ids)


def main() -> None:
    parser = argparse.ArgumentParser(description="MaskablePPO on remote chess")
    parser.add_argument("--timesteps", type=int, default=4096)
    parser.add_argument("--games", type=int, default=10)
    args = parser.parse_args()
    env = gym.make("openenv/Chess-v0")
    try:
        model = MaskablePPO("MlpPolicy", env, n_steps=512, batch_size=128, n_epochs=4, seed=0, device="cpu")
        start = time.perf_counter()
        model.learn(args.timesteps)
        print(f"trained {args.timesteps} steps in {time.perf_counter() - start:.0f} s")
        results = []
        for game in range(args.games):
            obs, info = env.reset(seed=1000 + game)
            terminated = truncated = False
            while not (terminated or truncated):
                action, _ = model.predict(obs, action_masks=info["action_mask"].astype(bool))
                obs, reward, terminated, truncated, info = env.step(action)
            results.append(reward)
        wins, draws, losses = (int(np.sum(np.isclose(results, r))) for r in (1.0, 0.0, -1.0))
        print(f"{args.games} games as white against a random opponent: {wins} won, {draws} drawn, {losses} lost")
    finally:
        env.close()  # also stops the embedded chess server


if __name__ == "__main__":
    main()
