#!/usr/bin/env python
"""What a wake-up costs the work after it: one batched step's worth of server work,
back to back and after a pause.

    python benchmarks/bench_wakeup.py             # 7 reps, ~15 s
    python benchmarks/bench_wakeup.py --reps 3    # quicker

A remote step is a ping-pong: each side waits while the other works. Without busy
polling a waiting side sleeps, and on a virtual machine the work a process does just
after waking runs slower than the same work in a tight loop (its caches and branch
predictors cold, its vCPU just rescheduled), so a remote call costs more than the sum
of its parts measured in a loop. This measures that on this machine, in one process,
with no socket at all: the work one batched ``step`` costs a server (decode the
``step`` message with openenv-gym's msgpack codec, step a Gymnasium ``SyncVectorEnv``
of one CartPole-v1, encode the reply), timed call by call

- back to back (what a microbenchmark sees);
- after sleeping 200 µs or 1 ms (a side waiting for its peer, polling off);
- after spinning 200 µs or 1 ms (a side busy-polling for its peer).

Each rep times every mode in turn (the order rotating between reps) and keeps the median
call; the table shows median [min–max] over reps and each mode against back to back.
Writes ``benchmarks/results/wakeup.json`` and the ``wakeup`` section of
``docs/benchmarks.md`` (not with ``--no-doc``).
"""

from __future__ import annotations

import argparse
import datetime as _dt
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))

import _harness as H  # noqa: E402

DOC_PATH = ROOT / "docs" / "benchmarks.md"
DOC_INTRO = "# Benchmarks\n"
PACKAGES = ["gymnasium", "numpy", "msgpack", "openenv-gym"]
#: (label, pause in seconds, how: "sleep" or "spin"), back to back first.
MODES = [
    ("back to back", 0.0, "sleep"),
    ("after sleeping 200 µs", 200e-6, "sleep"),
    ("after sleeping 1 ms", 1e-3, "sleep"),
    ("after spinning 200 µs", 200e-6, "spin"),
    ("after spinning 1 ms", 1e-3, "spin"),
]
#: Timed calls per mode and rep (fewer after the longer pauses: every loop is bounded in time too).
CALLS = {0.0: 2000, 200e-6: 1000, 1e-3: 300}


def step_work() -> Callable[[], None]:
    """One batched step's worth of server work, as a callable: decode a ``step``
    message, step one CartPole in a ``SyncVectorEnv``, encode the reply."""
    import gymnasium as gym
    import numpy as np

    from openenv_gym.protocol import SUBPROTOCOLS, codec_for

    codec = codec_for(SUBPROTOCOLS[0])
    envs = gym.vector.SyncVectorEnv([lambda: gym.make("CartPole-v1")])
    envs.reset(seed=0)
    frame = codec.encode({"type": "step", "data": {"actions": np.zeros(1, dtype=np.int64)}})

    def work() -> None:
        message = codec.decode(frame)
        obs, rewards, terminations, truncations, _ = envs.step(message["data"]["actions"])
        codec.encode({"type": "observation", "data": {
            "obs": obs, "rewards": rewards, "terminations": terminations, "truncations": truncations,
        }})

    return work


def pause(seconds: float, how: str) -> None:
    if seconds <= 0:
        return
    if how == "sleep":
        time.sleep(seconds)
        return
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        pass


def median_call(work: Callable[[], None], seconds: float, how: str, calls: int) -> float:
    """The median time of ``calls`` calls of ``work``, each after pausing ``seconds``, in µs."""
    times = []
    for _ in range(calls):
        pause(seconds, how)
        start = time.perf_counter()
        work()
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1e6


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--reps", type=int, default=7, help="rounds over every mode (default 7)")
    p.add_argument("--wait-idle", type=float, default=0.0, metavar="SECONDS",
                   help="first wait up to SECONDS for the CPUs to be idle (< 0.25 cores busy)")
    p.add_argument("--no-doc", action="store_true", help="do not rewrite docs/benchmarks.md")
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    started = _dt.datetime.now().astimezone()
    command = H.command_line(__file__, sys.argv[1:] if argv is None else argv)
    if args.wait_idle > 0:
        H.wait_for_idle_start(args.wait_idle)
    machine = H.machine_info(PACKAGES)
    work = step_work()
    for _ in range(500):  # warm up
        work()
    results: dict[str, list[float]] = {label: [] for label, _, _ in MODES}
    for rep, (label, seconds, how) in H.interleaved(MODES, args.reps):
        results[label].append(median_call(work, seconds, how, CALLS[seconds]))
        H.progress(f"rep {rep + 1} {label:24s} {results[label][-1]:7.1f} µs")
    base = results[MODES[0][0]]
    data = {
        "command": command, "started": started.isoformat(), "machine": machine, "reps": args.reps,
        "call_us": results, "summary": {label: H.summarize(values) for label, values in results.items()},
        "ratios": {label: H.summarize(H.paired_ratios(values, base)) for label, values in results.items()},
    }
    H.write_json(HERE / "results" / "wakeup.json", data)
    text = render(data)
    print("\n" + text)
    if not args.no_doc:
        H.update_markdown_section(DOC_PATH, "wakeup", text, DOC_INTRO)
    return 0


def render(data: dict) -> str:
    lines = [
        "## What a wake-up costs the work after it",
        "",
        f"Command: `{data['command']}` ({data['reps']} reps, every mode in each, the order rotating; "
        f"median [min–max] over reps of each rep's median call). Machine: {H.format_machine(data['machine'])}. "
        f"Started {data['started'][:19]}, load average {data['machine'].get('loadavg_at_start')}.",
        "",
        "One batched step's worth of server work, in one process and no socket: decode a `step` "
        "message (openenv-gym's msgpack codec), step a `SyncVectorEnv` of one CartPole-v1, encode "
        "the reply; timed call by call, back to back and after each kind of pause. A remote step is "
        "a ping-pong in which each side waits for the other: without busy polling it sleeps, and "
        "its next work runs as in the sleeping rows; busy polling spins instead "
        "([operations.md](operations.md#busy-polling-on-loopback)).",
        "",
        "| the call | µs per call | / back to back |",
        "|---|---|---|",
    ]
    for label, _, _ in MODES:
        lines.append(
            f"| {label} | {H.fmt_mmm(data['summary'][label])} | {H.fmt_mmm(data['ratios'][label])}x |"
        )
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.exit(main())
