"""SB3 PPO on CartPole: through RemoteVectorEnv (an openenv-gym server) vs a local DummyVecEnv.

    python benchmarks/bench_sb3_cartpole.py [--timesteps 100000] [--seed 0]

Same hyperparameters (RL Zoo's tuned CartPole PPO), same seed, same step
budget for both runs. Writes the learning curves to
``docs/sb3-cartpole.png``, the numbers to ``benchmarks/results/sb3_cartpole.json``,
and its section of ``docs/benchmarks.md`` (between ``<!-- sb3:begin -->`` and
``<!-- sb3:end -->``). A run passes when the final deterministic evaluation
(20 episodes on a local CartPole) averages at least 450.
"""

from __future__ import annotations

import argparse
import json
import platform
import re
import sys
import time
from pathlib import Path

import gymnasium as gym
import numpy as np
import torch
from stable_baselines3 import PPO
from stable_baselines3.common.callbacks import BaseCallback
from stable_baselines3.common.evaluation import evaluate_policy
from stable_baselines3.common.logger import Logger
from stable_baselines3.common.vec_env import DummyVecEnv, VecMonitor

import openenv_gym
from openenv_gym.sb3 import RemoteVecEnv

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results" / "sb3_cartpole.json"
PLOT = ROOT / "docs" / "sb3-cartpole.png"
DOC = ROOT / "docs" / "benchmarks.md"
NUM_ENVS = 8
TARGET = 450.0


def hyperparameters(seed: int) -> dict:
    """RL Zoo's PPO hyperparameters for CartPole-v1."""
    return dict(
        n_steps=32, batch_size=256, gae_lambda=0.8, gamma=0.98, n_epochs=20, ent_coef=0.0,
        learning_rate=lambda progress: progress * 1e-3, clip_range=lambda progress: progress * 0.2,
        seed=seed, device="cpu", verbose=0,
    )


class Curve(BaseCallback):
    """Mean return of the last 20 finished training episodes, every rollout."""

    def __init__(self) -> None:
        super().__init__()
        self.returns: list[float] = []
        self.points: list[tuple[int, float]] = []

    def _on_step(self) -> bool:
        for info in self.locals["infos"]:
            if "episode" in info:
                self.returns.append(info["episode"]["r"])
        return True

    def _on_rollout_end(self) -> None:
        if self.returns:
            self.points.append((self.num_timesteps, float(np.mean(self.returns[-20:]))))


def run(name: str, venv, timesteps: int, seed: int) -> dict:
    venv = VecMonitor(venv)
    curve = Curve()
    model = PPO("MlpPolicy", venv, **hyperparameters(seed))
    model.set_logger(Logger(folder=None, output_formats=[]))  # the default one leaves a directory in /tmp
    start = time.perf_counter()
    model.learn(timesteps, callback=curve)
    wall = time.perf_counter() - start
    venv.close()
    evaluation = gym.make("CartPole-v1")
    mean, std = evaluate_policy(model, evaluation, n_eval_episodes=20, deterministic=True)
    evaluation.close()
    print(f"{name}: {wall:.1f} s, eval {mean:.1f} +- {std:.1f}", flush=True)
    return {"wall_s": wall, "eval_mean": float(mean), "eval_std": float(std), "curve": curve.points}


def plot(results: dict, timesteps: int) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4))
    for name, result in results.items():
        steps, returns = zip(*result["curve"])
        ax.plot(steps, returns, label=f"{name} ({result['wall_s']:.0f} s)")
    ax.axhline(TARGET, color="grey", linestyle="--", linewidth=1, label=f"target {TARGET:.0f}")
    ax.set_xlabel("environment steps")
    ax.set_ylabel("mean return, last 20 episodes")
    ax.set_title(f"SB3 PPO on CartPole-v1, {NUM_ENVS} envs, {timesteps:,} steps")
    ax.legend(loc="lower right")
    fig.tight_layout()
    fig.savefig(PLOT, dpi=120)


def write_section(results: dict, timesteps: int, seed: int) -> None:
    remote, local = results["RemoteVectorEnv"], results["DummyVecEnv"]
    lines = [
        "<!-- sb3:begin -->",
        "## Stable-Baselines3 PPO on a remote CartPole",
        "",
        f"`python benchmarks/bench_sb3_cartpole.py --timesteps {timesteps} --seed {seed}`: SB3 PPO "
        f"(RL Zoo's CartPole hyperparameters, {NUM_ENVS} envs) trained through "
        "`openenv_gym.sb3.RemoteVecEnv` on a `RemoteVectorEnv` (an openenv-gym CartPole server on "
        "127.0.0.1, batched mode, msgpack), and the same run on a local `DummyVecEnv`. "
        f"Pass: a deterministic evaluation of 20 episodes averages at least {TARGET:.0f}.",
        "",
        "| run | wall time (s) | eval return (20 episodes) | passes |",
        "|---|---|---|---|",
    ]
    for name, result in results.items():
        verdict = "yes" if result["eval_mean"] >= TARGET else "no"
        lines.append(
            f"| {name} | {result['wall_s']:.1f} | {result['eval_mean']:.1f} ± {result['eval_std']:.1f} | {verdict} |"
        )
    lines += [
        "",
        f"Remote / local wall time: {remote['wall_s'] / local['wall_s']:.2f}x "
        f"({platform.processor() or platform.machine()}, Python {platform.python_version()}). "
        "The learning curves (mean return of the last 20 training episodes):",
        "",
        "![SB3 PPO learning curves on CartPole](sb3-cartpole.png)",
        "<!-- sb3:end -->",
    ]
    section = "\n".join(lines)
    text = DOC.read_text() if DOC.exists() else "# Benchmarks\n"
    pattern = re.compile(r"<!-- sb3:begin -->.*?<!-- sb3:end -->", re.S)
    text = pattern.sub(lambda _: section, text) if pattern.search(text) else text.rstrip() + "\n\n" + section + "\n"
    DOC.write_text(text)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--timesteps", type=int, default=100_000)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    torch.set_num_threads(1)  # both runs alike; a second thread only adds contention on 2 cores
    results = {}
    with openenv_gym.local_server("CartPole-v1", max_sessions=NUM_ENVS) as url:
        results["RemoteVectorEnv"] = run(
            "RemoteVectorEnv", RemoteVecEnv(url, num_envs=NUM_ENVS), args.timesteps, args.seed
        )
    results["DummyVecEnv"] = run(
        "DummyVecEnv", DummyVecEnv([lambda: gym.make("CartPole-v1")] * NUM_ENVS), args.timesteps, args.seed
    )
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps({"timesteps": args.timesteps, "seed": args.seed, **results}, indent=1))
    plot(results, args.timesteps)
    write_section(results, args.timesteps, args.seed)
    return 0 if all(r["eval_mean"] >= TARGET for r in results.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
