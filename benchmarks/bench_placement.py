#!/usr/bin/env python
"""Where a client and its server run on one machine: on any core, on one core, on two.

    python benchmarks/bench_placement.py [--reps 5] [--window 1.5]

A client and a server on the same machine hand every step back and forth. When neither
busy-polls, each sleeps until the other's message wakes it, and waking a process that
sleeps on another core costs an inter-processor interrupt and a rescheduled core: on a
virtual machine, tens of microseconds on each side. Placing both on one core turns each
wake-up into a switch on that core; busy polling instead keeps both awake, and then two
cores are what it needs. This measures the three placements a user can choose with
``taskset`` (or ``os.sched_setaffinity``), with polling off on both sides and with the
defaults (busy polling on loopback): CartPole, one env, ``RemoteEnv`` msgpack against
``openenv-gym serve CartPole-v1``. "Any core" leaves both to the kernel's scheduler, "one
core" puts both on the first core, "two cores" the server on the second and the client on
the first. The placement is set on every thread of both processes before each window; the
configs interleaved within each rep, median [min–max] of steps per second, per-rep ratios
to "any core" with the same polling, and the CPU each side spends per step.

Writes ``benchmarks/results/placement.json`` and its section of ``docs/benchmarks.md``
(Linux: it needs at least two cores and ``os.sched_setaffinity``).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))

import _harness as H  # noqa: E402

RESULTS_PATH = ROOT / "benchmarks" / "results" / "placement.json"
DOC_TAG = "placement"
#: Server flags and client keyword that turn busy polling off (as in bench_single).
POLLING = {"off": (("--busy-poll", "0"), {"busy_poll": 0.0}), "on (default)": ((), {})}


def placements(cores: list[int]) -> dict[str, tuple[set[int], set[int]]]:
    """Each placement's (server cores, client cores) on a machine of ``cores``."""
    first, second = cores[0], cores[1]
    return {"any core": (set(cores), set(cores)), "one core": ({first}, {first}),
            "two cores": ({second}, {first})}


def place(pid: int, cores: Iterable[int]) -> None:
    """Run every thread of process ``pid`` on ``cores`` (threads it starts later inherit it)."""
    cores = set(cores)
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            os.sched_setaffinity(int(tid), cores)
        except ProcessLookupError:  # a thread that ended meanwhile
            pass


def main(argv: list[str] | None = None) -> int:
    args = H.reps_parser(__doc__, window=1.5).parse_args(argv)
    if not hasattr(os, "sched_setaffinity"):
        print("bench_placement needs os.sched_setaffinity (Linux)", file=sys.stderr)
        return 2
    cores = sorted(os.sched_getaffinity(0))
    if len(cores) < 2:
        print(f"bench_placement needs two cores; this process may run on {cores}", file=sys.stderr)
        return 2
    run = H.run_record(__file__, argv, args, ["openenv-gym", "gymnasium", "numpy", "picows", "uvloop"])
    where = placements(cores)
    configs = [(polling, placement) for polling in POLLING for placement in where]
    results: dict[str, list[dict]] = {f"{p}/{w}": [] for p, w in configs}
    processes = H.ProcessSet()
    logs = HERE / "results" / "logs"
    try:
        servers = {}
        for polling, (flags, _) in POLLING.items():
            name = f"placement-polling-{polling.split()[0]}"
            server = H.Server(
                name, lambda p, f=flags: H.openenv_gym_argv("serve", "CartPole-v1", "--port", p, *f),
                ready="http:/health", env=H.python_env(), cwd=ROOT, log_path=logs / f"{name}.log",
            )
            processes.add(server)
            server.start()
            if not server.wait_ready(60):
                raise RuntimeError(f"the server did not start: {server.error}")
            servers[polling] = server
        worker = H.ClientWorker("placement-client", log_path=logs / "placement-client.log")
        processes.add(worker)
        worker.start()
        for rep, (polling, placement) in H.interleaved(configs, args.reps):
            server, (server_cores, client_cores) = servers[polling], where[placement]
            assert server.pid is not None and worker.pid is not None
            place(server.pid, server_cores)
            place(worker.pid, client_cores)
            params = {"base_url": server.base_url, "encoding": "msgpack", **POLLING[polling][1]}
            _, window = worker.measure("_clients:OursClient", params, server=server, window_s=args.window,
                                       max_iters=200_000, warmup_s=0.3, warmup_iters=300)
            results[f"{polling}/{placement}"].append(window)
            H.progress(f"rep {rep + 1} polling {polling:12s} {placement:9s}: {H.fmt(window['steps_per_s'])} steps/s")
    finally:
        processes.stop_all()
    data = {**run, "cores": cores, "placements": {k: [sorted(s), sorted(c)] for k, (s, c) in where.items()},
            "windows": results}
    H.publish(data, RESULTS_PATH, render, None if args.no_doc else DOC_TAG)
    return 0


def render(data: dict) -> str:
    windows = data["windows"]

    def column(key: str, field: str) -> list[float]:
        return [w[field] for w in windows[key] if w.get(field) is not None]

    lines = [
        *H.run_heading("Where a client and its server run: any core, one core, two cores", data),
        "CartPole, one env, `RemoteEnv` msgpack against `openenv-gym serve CartPole-v1` on this machine; "
        "\"one core\": both processes on the first core, \"two cores\": the server on the second and the "
        "client on the first (every thread of each, `os.sched_setaffinity`, as `taskset` sets it), \"any "
        "core\": where the scheduler puts them. Polling off on both sides (`--busy-poll 0`, "
        "`busy_poll=0`), then the defaults (busy polling on loopback). CPU per step: what each process "
        "used over the window, divided by its steps.",
        "",
        "| polling | placement | steps/s | / any core (per rep) | server CPU per step (µs) "
        "| client CPU per step (µs) |",
        "|---|---|---|---|---|---|",
    ]
    for key in windows:
        polling, placement = key.split("/")
        rates, base = column(key, "steps_per_s"), column(f"{polling}/any core", "steps_per_s")
        lines.append(
            f"| {polling} | {placement} | {H.fmt_mmm(H.summarize(rates))} | "
            f"{H.fmt_mmm(H.summarize(H.paired_ratios(rates, base)))}x | "
            f"{H.fmt_mmm(H.summarize(column(key, 'server_cpu_us_per_step')))} | "
            f"{H.fmt_mmm(H.summarize(column(key, 'client_cpu_us_per_step')))} |"
        )
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.exit(main())
