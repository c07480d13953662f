#!/usr/bin/env python
"""A long session on an EnvPool server: does it keep stepping inline, or drift to its thread?

    python benchmarks/bench_long_session.py --base 225fa97     # 3 reps x 75 s sessions, ~12 min
    python benchmarks/bench_long_session.py --base HEAD --quick  # 1 rep x 15 s sessions

A training run holds one session for hours; the other benchmarks open a fresh one for each
1.5 s window. Under ``execution="auto"`` a session runs its env calls inline once they
proved fast and goes back to its thread at a slow one, each demotion doubling the run of
fast calls it needs to come back (``InlinePromotion``). An EnvPool step waits for the pool's
threads, so on a busy machine a few of them are slow; whether those count is what this
measures, over sessions long enough for the doubling to show.

``RemoteVectorEnv`` batched, N=64, msgpack, against ``openenv-gym serve envpool:CartPole-v1``
on 127.0.0.1, each server a process of its own, started here and stopped by PID:

- ``base``: the server of ``--base`` (a git revision, checked out into a temporary worktree
  as ``bench_ab.py`` does), our defaults;
- ``head``: the server of this checkout, our defaults;
- ``inline``: this checkout's server with ``--execution inline`` (every call on the event
  loop from the first: the ceiling a session that never leaves it reaches).

Every client is this checkout's, in a worker process of its own. Each rep runs the three
in an order that rotates, one session each of ``--seconds``, timed in three equal windows
of that one session (its first, middle and last third: a session drifting to its thread
slows down third by third). Reps start with fresh servers. Writes
``benchmarks/results/long_session.json`` and the ``long-session`` section of
``docs/benchmarks.md`` (not with ``--no-doc``, nor after a global timeout).
"""

from __future__ import annotations

import argparse
import datetime as _dt
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))

import _harness as H  # noqa: E402
import bench_ab  # noqa: E402

RESULTS_PATH = HERE / "results" / "long_session.json"
LOG_DIR = HERE / "results" / "logs"
DOC_PATH = ROOT / "docs" / "benchmarks.md"
DOC_TAG = "long-session"
DOC_INTRO = "# Benchmarks\n"
PACKAGES = ["gymnasium", "numpy", "envpool", "msgpack", "picows"]
TASK = "envpool:CartPole-v1"
SIDES = {
    "base": "the base revision's server, our defaults",
    "head": "this checkout's server, our defaults",
    "inline": "this checkout's server, `--execution inline` (the ceiling)",
}
THIRDS = ("first", "middle", "last")
#: (label, numerator, denominator, which part of the session) of the per-rep ratios.
RATIOS = [
    ("head / base, whole session", "head", "base", "whole"),
    ("head / base, last third", "head", "base", "last"),
    ("head / --execution inline, whole session", "head", "inline", "whole"),
    ("base / --execution inline, whole session", "base", "inline", "whole"),
]


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    bench_ab.add_base_arguments(p)
    p.add_argument("--quick", action="store_true", help="1 rep x 15 s sessions")
    p.add_argument("--reps", type=int, default=None, help="reps (default 3, quick 1)")
    p.add_argument("--seconds", type=float, default=None, help="seconds per session (default 75, quick 15)")
    p.add_argument("--timeout", type=float, default=1800.0, help="global timeout, seconds")
    p.add_argument("--no-doc", action="store_true", help="do not rewrite docs/benchmarks.md")
    args = p.parse_args(argv)
    args.reps = args.reps or (1 if args.quick else 3)
    args.seconds = args.seconds or (15.0 if args.quick else 75.0)
    return args


def server(side: str, root: Path, env: dict[str, str]) -> H.Server:
    flags = ("--execution", "inline") if side == "inline" else ()
    return H.Server(side, lambda p: [sys.executable, "-m", "openenv_gym.cli", "serve", TASK, "--port", p, *flags],
                    ready="http:/health", env=env, cwd=root, log_path=LOG_DIR / f"long-session-{side}.log")


def one_session(worker: H.ClientWorker, url: str, seconds: float) -> list[float]:
    """env-steps/s in each third of one session of ``seconds``."""
    worker.request({"op": "open", "client": "bench_pipeline:Client",
                    "params": {"kind": "remote_envpool", "env": "CartPole-v1", "urls": [url]}}, timeout=180)
    try:
        rates = []
        for i in range(len(THIRDS)):
            warm = {"warmup_s": 0.3, "warmup_iters": 200} if i == 0 else {"warmup_s": 0.0, "warmup_iters": 0}
            reply = worker.request({"op": "window", "window_s": seconds / len(THIRDS), "max_iters": 10 ** 7,
                                    **warm}, timeout=seconds + 120)
            rates.append(reply["result"]["round_trips_per_s"])  # env-steps: each call returns its count
        return rates
    finally:
        worker.request({"op": "close"}, timeout=60)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    started = _dt.datetime.now().astimezone()
    t0 = time.perf_counter()
    command = H.command_line(__file__, sys.argv[1:] if argv is None else argv)
    processes = H.ProcessSet()
    #: side -> per rep, env-steps/s in each third (None: failed).
    results: dict[str, list[list[float] | None]] = {side: [] for side in SIDES}
    errors: dict[str, str] = {}
    incomplete = None
    machine: dict[str, Any] = {}
    sides: dict[str, dict[str, Any]] = {}
    try:
        with H.GlobalTimeout(args.timeout, processes), bench_ab.base_checkout(args.base, args.base_path) as base_root:
            roots = {"base": base_root, "head": ROOT, "inline": ROOT}
            envs = {side: H.python_env(root) for side, root in roots.items()}
            for side in ("base", "head"):
                sides[side] = bench_ab.side_info(side, roots[side], args.base if side == "base" else None, envs[side])
                H.progress(f"{side}: {bench_ab.side_name(sides[side])} {sides[side]['subject'] or ''}")
            machine = H.machine_info(PACKAGES)
            H.progress(f"bench_long_session: {args.reps} reps x {args.seconds} s sessions; "
                       f"machine: {H.format_machine(machine)}")
            servers = {side: processes.add(server(side, roots[side], envs[side])) for side in SIDES}
            worker = processes.add(H.ClientWorker("long-session", log_path=LOG_DIR / "long-session-client.log"))
            worker.start()
            order = list(SIDES)
            for rep in range(args.reps):
                for srv in servers.values():
                    srv.stop()
                    srv.start()
                for side, srv in servers.items():
                    if not srv.wait_ready(120):
                        raise RuntimeError(f"server {side} failed: {srv.error}")
                for side in order[rep % len(order):] + order[:rep % len(order)]:
                    try:
                        rates = one_session(worker, servers[side].base_url, args.seconds)
                    except H.WorkerError as exc:
                        errors[side] = str(exc).strip().splitlines()[-1]
                        results[side].append(None)
                        H.progress(f"rep {rep + 1} {side}: FAILED {errors[side]}")
                        if not worker.alive():
                            worker.start()
                        continue
                    results[side].append(rates)
                    H.progress(f"rep {rep + 1} {side:6s} " + "  ".join(f"{H.fmt(r):>8s}" for r in rates)
                               + " env-steps/s (first, middle, last third)")
    except H.GlobalTimeoutError as exc:
        incomplete = str(exc)
    finally:
        processes.stop_all()

    data = build(args, command, started, time.perf_counter() - t0, machine, sides, results, errors, incomplete)
    H.write_json(RESULTS_PATH, data)
    text = render(data)
    print("\n" + text)
    if not args.no_doc and not incomplete:
        H.update_markdown_section(DOC_PATH, DOC_TAG, text, DOC_INTRO)
        H.progress(f"rewrote the '{DOC_TAG}' section of {DOC_PATH.relative_to(ROOT)}")
    return 1 if incomplete else 0


def part(rates: list[float] | None, which: str) -> float | None:
    """A session's env-steps/s in one third, or over the whole of it (equal windows: their mean)."""
    if rates is None:
        return None
    return sum(rates) / len(rates) if which == "whole" else rates[THIRDS.index(which)]


def build(args: argparse.Namespace, command: str, started: _dt.datetime, duration: float, machine: dict,
          sides: dict, results: dict, errors: dict, incomplete: str | None) -> dict[str, Any]:
    summary = {side: {which: H.summarize([part(r, which) for r in runs]) for which in (*THIRDS, "whole")}
               for side, runs in results.items()}
    ratios = {label: H.summarize(H.paired_ratios([part(r, which) for r in results[a]],
                                                 [part(r, which) for r in results[b]]))
              for label, a, b, which in RATIOS}
    return {"command": command, "started": started.isoformat(), "duration_s": duration, "machine": machine,
            "reps": args.reps, "session_s": args.seconds, "sides": sides, "env_steps_per_s": results,
            "summary": summary, "ratios": ratios, "errors": errors, "incomplete": incomplete}


def render(data: dict[str, Any]) -> str:
    base = bench_ab.side_name(data["sides"].get("base", {}))
    head = bench_ab.side_name(data["sides"].get("head", {}))
    lines = [
        "## A long session on an EnvPool server",
        "",
        f"Command: `{data['command']}` ({data['reps']} reps, one session of {data['session_s']:g} s per "
        f"server each, timed in thirds; median [min–max] over reps). Machine: {H.format_machine(data['machine'])}. "
        f"Started {data['started'][:19]}, load average {data['machine'].get('loadavg_at_start')}.",
        "",
        f"`RemoteVectorEnv` batched, N=64 CartPole-v1, msgpack, one session per server of "
        f"`openenv-gym serve {TASK}` (base: {base}; head: {head}), env-steps/s in each third of "
        "the session: a session whose calls drift from the event loop to its thread slows down third by "
        "third, one that stays inline does not (`bench_long_session.py`'s docstring says why).",
        "",
        "| server | first third | middle third | last third | whole session |",
        "|---|---|---|---|---|",
    ]
    for side, label in SIDES.items():
        cells = [H.fmt_mmm(data["summary"][side][which]) for which in (*THIRDS, "whole")]
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    lines += ["", "| ratio (per-rep pairs) | measured |", "|---|---|"]
    lines += [f"| {label} | {H.fmt_mmm(r)}x |" for label, r in data["ratios"].items() if r["median"] is not None]
    if data["errors"]:
        lines += ["", "Failed: " + "; ".join(f"`{k}`: {v}" for k, v in data["errors"].items())]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.exit(main())
