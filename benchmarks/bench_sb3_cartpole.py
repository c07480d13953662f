"""SB3 PPO on CartPole: through RemoteVectorEnv (an openenv-gym server) vs a local DummyVecEnv.

    python benchmarks/bench_sb3_cartpole.py [--timesteps 100000] [--seed 0] [--reps 3] [--warmup 10000]

Same hyperparameters (RL Zoo's tuned CartPole PPO), same seed, same step
budget for both runs; the server is ``openenv-gym serve CartPole-v1`` in a process
of its own on 127.0.0.1, as a remote env is. First an untimed warm-up run each way
(``--warmup``, 10,000 steps): the process's first PPO pays for imports, allocations and
torch's first calls, which would otherwise land on the first timed run. Then each rep
trains both ways (the order alternates between reps); the remote / local wall-time
ratio is taken per rep, median [min–max]. Same seed, same env dynamics: the two learning curves must be
identical, and the section says whether they are. Writes the learning curves to
``docs/sb3-cartpole.png``, the numbers to ``benchmarks/results/sb3_cartpole.json``,
and its section of ``docs/benchmarks.md`` (between ``<!-- sb3:begin -->`` and
``<!-- sb3:end -->``). A run passes when the final deterministic evaluation
(20 episodes on a local CartPole) averages at least 450.

Where the remote run's extra time goes is measured too: each run's time in PPO's two
phases (collecting rollouts: the env steps and the policy between them; training on
them), and then, in the loop a rollout runs (the policy's forward pass, then a step),
the microseconds of each for the local ``DummyVecEnv``, for ``RemoteVecEnv``, and for
the least a remote step can cost from Python: a client with no layers at all (one frame
out, one frame in, the observations copied; no checks), against the same server.
"""

from __future__ import annotations

import argparse
import json
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

from openenv_gym.client.native import open_connection, read_schema
from openenv_gym.client.options import ConnectOptions
from openenv_gym.protocol import codec_for
from openenv_gym.sb3 import RemoteVecEnv

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import _harness as H  # noqa: E402

ROOT = HERE.parent
RESULTS = ROOT / "benchmarks" / "results" / "sb3_cartpole.json"
PLOT = ROOT / "docs" / "sb3-cartpole.png"
DOC = ROOT / "docs" / "benchmarks.md"
NUM_ENVS = 8
TARGET = 450.0
#: Remote / local wall time the issue asks for at most.
MAX_RATIO = 1.1


def hyperparameters(seed: int) -> dict:
    """RL Zoo's PPO hyperparameters for CartPole-v1."""
    return dict(
        n_steps=32, batch_size=256, gae_lambda=0.8, gamma=0.98, n_epochs=20, ent_coef=0.0,
        learning_rate=lambda progress: progress * 1e-3, clip_range=lambda progress: progress * 0.2,
        seed=seed, device="cpu", verbose=0,
    )


class PhasedPPO(PPO):
    """PPO that times its two phases: collecting rollouts (the env steps, and the policy's
    forward passes between them) and training on them."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.phases = {"collect": 0.0, "train": 0.0}

    def collect_rollouts(self, *args, **kwargs):
        start = time.perf_counter()
        try:
            return super().collect_rollouts(*args, **kwargs)
        finally:
            self.phases["collect"] += time.perf_counter() - start

    def train(self) -> None:
        start = time.perf_counter()
        try:
            super().train()
        finally:
            self.phases["train"] += time.perf_counter() - start


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
    model = PhasedPPO("MlpPolicy", venv, **hyperparameters(seed))
    model.set_logger(Logger(folder=None, output_formats=[]))  # the default one leaves a directory in /tmp
    start = time.perf_counter()
    model.learn(timesteps, callback=curve)
    wall = time.perf_counter() - start
    venv.close()
    evaluation = gym.make("CartPole-v1")
    mean, std = evaluate_policy(model, evaluation, n_eval_episodes=20, deterministic=True)
    evaluation.close()
    phases = {f"{phase}_s": seconds for phase, seconds in model.phases.items()}
    print(f"{name}: {wall:.1f} s (collect {phases['collect_s']:.1f} s, train {phases['train_s']:.1f} s), "
          f"eval {mean:.1f} +- {std:.1f}", flush=True)
    return {"wall_s": wall, **phases, "eval_mean": float(mean), "eval_std": float(std), "curve": curve.points}


class MinimalVecClient:
    """The least a remote batched step costs from Python: a ``/vector`` session of the
    server, each step one frame out and one in, the observations copied, nothing else
    (no checks of the actions or of the reply, no reconnection, no infos, no autoreset
    bookkeeping). Not a client to use: the floor that ``RemoteVecEnv`` is measured against."""

    def __init__(self, base_url: str, num_envs: int) -> None:
        options = ConnectOptions(encoding="msgpack")
        read_schema(base_url, options)  # learns the native listener, as RemoteVecEnv does
        self.connection = open_connection(base_url, "/vector", options)
        self.codec = codec_for(self.connection.subprotocol)
        self._request({"type": "vector_open", "data": {"num_envs": num_envs, "autoreset_mode": "SameStep"}})

    def _request(self, message: dict) -> dict:
        self.connection.send(self.codec.encode(message))
        reply = self.codec.decode(self.connection.recv(30))
        if reply.get("type") == "error":
            raise RuntimeError(f"the server refused {message['type']!r}: {reply.get('data')}")
        return reply

    def reset(self) -> np.ndarray:
        return np.array(self._request({"type": "reset", "data": {"seed": 0}})["data"]["obs"])

    def step(self, actions: np.ndarray) -> np.ndarray:
        return np.array(self._request({"type": "step", "data": {"actions": actions}})["data"]["obs"])

    def close(self) -> None:
        self.connection.close()


class VecEnvSteps:
    """An SB3 ``VecEnv`` as :func:`anatomy` steps it."""

    def __init__(self, venv) -> None:
        self.venv = venv

    def reset(self) -> np.ndarray:
        return self.venv.reset()

    def step(self, actions: np.ndarray) -> np.ndarray:
        return self.venv.step(actions)[0]

    def close(self) -> None:
        self.venv.close()


#: The clients :func:`anatomy` measures, by the name its table gives them.
ANATOMY_CLIENTS = {
    "DummyVecEnv (local)": lambda url: VecEnvSteps(DummyVecEnv([lambda: gym.make("CartPole-v1")] * NUM_ENVS)),
    "RemoteVecEnv": lambda url: VecEnvSteps(RemoteVecEnv(url, num_envs=NUM_ENVS)),
    "minimal client (the floor)": lambda url: MinimalVecClient(url, NUM_ENVS),
}


def anatomy(url: str, reps: int, steps: int, warmup: int = 300) -> dict[str, dict[str, list[float]]]:
    """The loop of a rollout (the policy's forward pass, then a step of the 8 envs), timed
    apart for each client of :data:`ANATOMY_CLIENTS`: µs per forward pass and per step,
    one value per rep; the clients take turns within each rep."""
    policy = PPO("MlpPolicy", DummyVecEnv([lambda: gym.make("CartPole-v1")] * NUM_ENVS),
                 **hyperparameters(0)).policy
    times: dict[str, dict[str, list[float]]] = {name: {"forward": [], "step": []} for name in ANATOMY_CLIENTS}
    for rep, name in H.interleaved(list(ANATOMY_CLIENTS), reps):
        client = ANATOMY_CLIENTS[name](url)
        try:
            obs = client.reset()
            forward = step = 0.0
            for i in range(warmup + steps):
                if i == warmup:
                    forward = step = 0.0
                start = time.perf_counter()
                with torch.no_grad():
                    actions, _, _ = policy(torch.as_tensor(obs))
                middle = time.perf_counter()
                obs = client.step(actions.numpy())
                step += time.perf_counter() - middle
                forward += middle - start
        finally:
            client.close()
        times[name]["forward"].append(forward / steps * 1e6)
        times[name]["step"].append(step / steps * 1e6)
        print(f"anatomy rep {rep + 1} {name}: forward {forward / steps * 1e6:.0f} us, "
              f"step {step / steps * 1e6:.0f} us", flush=True)
    return times


def plot(results: dict[str, dict], timesteps: int) -> None:
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


def _median(values: list[float]) -> float:
    return H.summarize(values)["median"]


def phases_lines(runs: dict[str, list[dict]], steps: int) -> list[str]:
    """Where each run's time went, and the remote run's extra time per batched step."""
    lines = ["| run | collecting rollouts (s) | training (s) |", "|---|---|---|"]
    for name, reps in runs.items():
        lines.append(f"| {name} | {H.fmt_mmm(H.summarize([r['collect_s'] for r in reps]))} | "
                     f"{H.fmt_mmm(H.summarize([r['train_s'] for r in reps]))} |")
    remote, local = runs["RemoteVectorEnv"], runs["DummyVecEnv"]
    extra = {phase: _median([a[f"{phase}_s"] - b[f"{phase}_s"] for a, b in zip(remote, local)])
             for phase in ("collect", "train")}
    batched = steps / NUM_ENVS
    lines += ["", f"Remote minus local, per rep (median): collecting {extra['collect']:+.2f} s "
              f"({extra['collect'] / batched * 1e6:+.0f} µs per batched step of {NUM_ENVS} envs), "
              f"training {extra['train']:+.2f} s."]
    return lines


def anatomy_lines(times: dict[str, dict[str, list[float]]], steps: int, reps: int) -> list[str]:
    """The table of :func:`anatomy`'s measurements."""
    local = "DummyVecEnv (local)"
    both = {name: _median([f + s for f, s in zip(t["forward"], t["step"])]) for name, t in times.items()}
    lines = [
        f"The loop of a rollout, timed apart ({steps:,} steps after a warm-up, {reps} reps, the clients "
        "taking turns; µs, median [min–max]): the policy's forward pass on the last observations, then "
        f"a step of the {NUM_ENVS} envs.",
        "",
        "| client | forward pass | step | both | both, over local |",
        "|---|---|---|---|---|",
    ]
    for name, t in times.items():
        lines.append(
            f"| {name} | {H.fmt_mmm(H.summarize(t['forward']))} | {H.fmt_mmm(H.summarize(t['step']))} | "
            f"{both[name]:.0f} | {both[name] - both[local]:+.0f} |"
        )
    return lines


def write_section(runs: dict[str, list[dict]], ratio: dict, same_curves: bool, machine: dict,
                  command: str, timesteps: int, times: dict | None, anatomy_steps: int, warmup: int) -> None:
    lines = [
        "<!-- sb3:begin -->",
        "## Stable-Baselines3 PPO on a remote CartPole",
        "",
        f"`{command}`: SB3 PPO (RL Zoo's CartPole hyperparameters, {NUM_ENVS} envs) trained through "
        "`openenv_gym.sb3.RemoteVecEnv` on a `RemoteVectorEnv` (`openenv-gym serve CartPole-v1` in its own "
        "process on 127.0.0.1, batched mode, msgpack), and the same run on a local `DummyVecEnv`, "
        f"{len(runs['DummyVecEnv'])} reps each (alternating order), "
        f"{f'after an untimed warm-up run of {warmup:,} steps each, ' if warmup else ''}torch on one thread. "
        f"Pass: a deterministic evaluation of 20 episodes averages at least {TARGET:.0f}. "
        f"Machine: {H.format_machine(machine)}; load average at start {machine.get('loadavg_at_start')}.",
        "",
        "| run | wall time (s), median [min–max] | eval return per rep (20 episodes) | passes |",
        "|---|---|---|---|",
    ]
    for name, reps in runs.items():
        verdict = "yes" if all(r["eval_mean"] >= TARGET for r in reps) else "no"
        evals = ", ".join(f"{r['eval_mean']:.1f} ± {r['eval_std']:.1f}" for r in reps)
        wall = H.fmt_mmm(H.summarize([r["wall_s"] for r in reps]))
        lines.append(f"| {name} | {wall} | {evals} | {verdict} |")
    met = "met" if ratio["median"] is not None and ratio["median"] <= MAX_RATIO else "**not met**"
    lines += [
        "",
        f"Remote / local wall time, per rep: {H.fmt_mmm(ratio)}x (target at most {MAX_RATIO}x: {met}). "
        f"Learning curves of the two runs of a rep identical (same seed, same dynamics): "
        f"{'yes' if same_curves else '**no**'}. The curves of the first rep (mean return of the last 20 "
        "training episodes):",
        "",
        "![SB3 PPO learning curves on CartPole](sb3-cartpole.png)",
        "",
        "### Where the remote run's extra time goes",
        "",
        *phases_lines(runs, timesteps),
    ]
    if times:
        lines += ["", *anatomy_lines(times, anatomy_steps, len(runs["DummyVecEnv"]))]
    lines.append("<!-- sb3:end -->")
    section = "\n".join(lines)
    text = DOC.read_text() if DOC.exists() else "# Benchmarks\n"
    pattern = re.compile(r"<!-- sb3:begin -->.*?<!-- sb3:end -->", re.S)
    text = pattern.sub(lambda _: section, text) if pattern.search(text) else text.rstrip() + "\n\n" + section + "\n"
    DOC.write_text(text)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--timesteps", type=int, default=100_000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--warmup", type=int, default=10_000, metavar="STEPS",
                        help="an untimed run of STEPS steps each way first, so that no timed run pays for "
                             "this process's first PPO (imports, allocations, torch's first calls); 0: none")
    parser.add_argument("--anatomy-steps", type=int, default=3000, metavar="N",
                        help="steps per client and rep of the rollout loop timed apart (0: skip it)")
    parser.add_argument("--wait-idle", type=float, default=0.0, metavar="SECONDS",
                        help="first wait up to SECONDS for the CPUs to be idle (< 0.25 cores busy)")
    args = parser.parse_args()
    command = H.command_line(__file__, sys.argv[1:])
    torch.set_num_threads(1)  # both runs alike; a second thread only adds contention on 2 cores
    if args.wait_idle > 0:
        H.wait_for_idle_start(args.wait_idle)
    machine = H.machine_info(["gymnasium", "numpy", "torch", "stable-baselines3", "openenv-gym"])
    runs: dict[str, list[dict]] = {"RemoteVectorEnv": [], "DummyVecEnv": []}
    processes = H.ProcessSet()
    try:
        server = processes.add(H.Server(
            "sb3-cartpole", lambda p: H.openenv_gym_argv("serve", "CartPole-v1", "--port", p),
            ready="http:/health", env=H.python_env(), cwd=ROOT, log_path=HERE / "results" / "logs" / "sb3.log",
        )).start()
        if not server.wait_ready(60):
            raise RuntimeError(f"the server did not start: {server.error}")

        def venv_for(name: str) -> RemoteVecEnv | DummyVecEnv:
            return (RemoteVecEnv(server.base_url, num_envs=NUM_ENVS) if name == "RemoteVectorEnv"
                    else DummyVecEnv([lambda: gym.make("CartPole-v1")] * NUM_ENVS))

        if args.warmup > 0:
            for name in runs:
                run(f"warm-up {name}", venv_for(name), args.warmup, args.seed)
        for rep in range(args.reps):
            order = ["RemoteVectorEnv", "DummyVecEnv"][:: 1 if rep % 2 == 0 else -1]
            for name in order:
                runs[name].append(run(f"rep {rep + 1} {name}", venv_for(name), args.timesteps, args.seed))
        times = anatomy(server.base_url, args.reps, args.anatomy_steps) if args.anatomy_steps > 0 else None
    finally:
        processes.stop_all()
    ratio = H.summarize(H.paired_ratios([r["wall_s"] for r in runs["RemoteVectorEnv"]],
                                        [r["wall_s"] for r in runs["DummyVecEnv"]]))
    same_curves = all(a["curve"] == b["curve"] for a, b in zip(runs["RemoteVectorEnv"], runs["DummyVecEnv"]))
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps({"command": command, "machine": machine, "timesteps": args.timesteps,
                                   "warmup": args.warmup, "seed": args.seed, "runs": runs, "ratio": ratio,
                                   "same_curves": same_curves, "anatomy_us": times}, indent=1))
    plot({name: reps[0] for name, reps in runs.items()}, args.timesteps)
    write_section(runs, ratio, same_curves, machine, command, args.timesteps, times, args.anatomy_steps,
                  args.warmup)
    print(f"remote / local wall time: {H.fmt_mmm(ratio)}x; identical curves: {same_curves}", flush=True)
    return 0 if all(r["eval_mean"] >= TARGET for reps in runs.values() for r in reps) else 1


if __name__ == "__main__":
    sys.exit(main())
