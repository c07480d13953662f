#!/usr/bin/env python
"""N tool-calling rollouts against one served env: at once on one event loop vs one after another.

    python benchmarks/bench_async_rollouts.py            # 5 reps, N = 8 and 32, ~1 min
    python benchmarks/bench_async_rollouts.py --quick    # 2 reps, N = 8

The server, a process of its own on 127.0.0.1 started here and stopped by PID, serves
FrozenLake 4x4 without slipping whose reset and step each also sleep ``--step-ms``
milliseconds (``_envs:make_slow_frozen_lake``): the latency of an env a language model
acts in, which costs wall time and no CPU. One rollout is what an LLM harness does per
episode: open a session on the server's tools, ``reset(seed)``, six ``act`` calls to the
goal (the episode ends there), close. N rollouts are timed (wall clock) three ways, in
this process:

1. **sequential, blocking**: ``EnvTools.open()`` sessions (``ServerToolSession``), one
   rollout after another;
2. **sequential, async**: ``EnvTools.open_async()`` sessions (``AsyncServerToolSession``),
   each rollout awaited before the next starts;
3. **concurrent, async**: the same rollouts started together, ``asyncio.gather`` on one
   event loop.

Reps are interleaved (the rep loop outside the config loop); each row is median
[min–max] over the reps, the speed-ups paired per rep. Writes
``benchmarks/results/async_rollouts.json`` and rewrites the ``bench_async_rollouts``
section of ``docs/llm-trainers.md`` (not with ``--no-doc``).
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as _dt
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))

import _harness as H  # noqa: E402

from openenv_gym.client.tools import EnvTools, env_tools  # noqa: E402

RESULTS_PATH = HERE / "results" / "async_rollouts.json"
LOG_DIR = HERE / "results" / "logs"
DOC_PATH = ROOT / "docs" / "llm-trainers.md"
DOC_TAG = "bench_async_rollouts"
PACKAGES = ["openenv-gym", "websockets", "gymnasium"]
#: FrozenLake 4x4 without slipping, from the start to the goal.
TO_GOAL = ("down", "down", "right", "right", "down", "right")
MODES = ("sequential, blocking", "sequential, async", "concurrent, async")


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--sizes", type=int, nargs="+", default=[8, 32], help="the numbers of rollouts N")
    parser.add_argument("--step-ms", type=float, default=10.0, help="the env's latency per reset and step")
    parser.add_argument("--quick", action="store_true", help="2 reps, N = 8")
    parser.add_argument("--timeout", type=float, default=900.0, help="global timeout, seconds")
    parser.add_argument("--no-doc", action="store_true", help="do not rewrite the docs section")
    args = parser.parse_args(argv)
    if args.quick:
        args.reps, args.sizes = 2, [8]
    return args


def blocking_rollout(tools: EnvTools, seed: int) -> float:
    """One episode on a blocking session; its return."""
    session = tools.open()
    try:
        session.reset(seed=seed)
        return sum(session.call("act", {"action": action}).reward or 0.0 for action in TO_GOAL)
    finally:
        session.close()


async def async_rollout(tools: EnvTools, seed: int) -> float:
    """One episode on an async session; its return."""
    session = tools.open_async()
    try:
        await session.reset(seed=seed)
        total = 0.0
        for action in TO_GOAL:
            total += (await session.call("act", {"action": action})).reward or 0.0
        return total
    finally:
        await session.close()


def timed(mode: str, tools: EnvTools, n: int) -> tuple[float, list[float]]:
    """The wall time of ``n`` rollouts run as ``mode`` says, and their returns."""
    t0 = time.perf_counter()
    if mode == "sequential, blocking":
        returns = [blocking_rollout(tools, seed) for seed in range(n)]
    else:
        async def run() -> list[float]:
            if mode == "concurrent, async":
                return list(await asyncio.gather(*(async_rollout(tools, seed) for seed in range(n))))
            return [await async_rollout(tools, seed) for seed in range(n)]

        returns = asyncio.run(run())
    return time.perf_counter() - t0, returns


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    started = _dt.datetime.now().astimezone()
    t0 = time.perf_counter()
    command = H.command_line(__file__, sys.argv[1:] if argv is None else argv)
    machine = H.machine_info(PACKAGES)
    H.progress(f"bench_async_rollouts: {args.reps} reps, N = {args.sizes}, step {args.step_ms} ms; "
               f"machine: {H.format_machine(machine)}")
    sessions = max(args.sizes) + 8
    env_kwargs = f'{{"step_ms": {args.step_ms}}}'
    processes = H.ProcessSet()
    configs = [(n, mode) for n in args.sizes for mode in MODES]
    rows: dict[str, list[float | None]] = {f"N={n}, {mode}": [] for n, mode in configs}
    try:
        with H.GlobalTimeout(args.timeout, processes):
            server = processes.add(H.Server(
                "slow-frozen-lake",
                lambda p: H.openenv_gym_argv("serve", "_envs:make_slow_frozen_lake", "--port", p,
                                             "--env-kwargs", env_kwargs, "--max-sessions", sessions),
                ready="http:/health", env=H.python_env(), cwd=ROOT, log_path=LOG_DIR / "async-rollouts-server.log",
            )).start()
            if not server.wait_ready(60):
                raise RuntimeError(f"the server failed: {server.error}")
            tools = env_tools(server.base_url)
            for mode in MODES:  # warm-up: connections, the server's first sessions, imports
                timed(mode, tools, 2)
            schedule = list(H.interleaved(configs, args.reps))
            for k, (rep, (n, mode)) in enumerate(schedule):
                seconds, returns = timed(mode, tools, n)
                if returns != [1.0] * n:
                    raise RuntimeError(f"{mode}: returns {returns}, not the goal's 1.0 each")
                rows[f"N={n}, {mode}"].append(seconds)
                H.progress(f"[{k + 1}/{len(schedule)}] rep {rep + 1} N={n:<3d} {mode:22s} {H.fmt(seconds * 1e3)} ms")
    finally:
        processes.stop_all()
    table = _table(rows, args.sizes, args.step_ms)
    H.write_json(RESULTS_PATH, {
        "benchmark": "bench_async_rollouts", "started": started.isoformat(timespec="seconds"),
        "wall_s": round(time.perf_counter() - t0, 1), "command": command, "machine": machine,
        "step_ms": args.step_ms, "calls_per_rollout": 2 + len(TO_GOAL),
        "rows_s": rows, "summary_s": {name: H.summarize(values) for name, values in rows.items()},
    })
    print(table)
    if not args.no_doc:
        body = (f"Measured {started:%Y-%m-%d} with `{command}`, {args.reps} reps; machine: "
                f"{H.format_machine(machine)}.\n\n{table}")
        H.update_markdown_section(DOC_PATH, DOC_TAG, body, "# LLM trainers on served envs\n")
    return 0


def _table(rows: dict[str, list[float | None]], sizes: list[int], step_ms: float) -> str:
    lines = [
        f"N rollouts of FrozenLake (reset + 6 `act` calls each, every reset and step {H.fmt(step_ms)} ms long) "
        "against one openenv-gym server; wall time for all N, ms, median [min–max]:",
        "",
        "| N | " + " | ".join(MODES) + " | speed-up, concurrent vs sequential async |",
        "|---|" + "---|" * (len(MODES) + 1),
    ]
    for n in sizes:
        cells = [H.fmt_mmm(H.summarize([v * 1e3 for v in rows[f"N={n}, {mode}"] if v is not None])) for mode in MODES]
        ratios = H.paired_ratios(rows[f"N={n}, sequential, async"], rows[f"N={n}, concurrent, async"])
        lines.append(f"| {n} | " + " | ".join(cells) + f" | {H.fmt_mmm(H.summarize(ratios))}x |")
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
