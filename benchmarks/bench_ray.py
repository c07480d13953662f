#!/usr/bin/env python
"""Env servers as Ray actors: how throughput grows with them, and what Ray costs.

    python benchmarks/bench_ray.py              # 5 reps x 2 s windows, ~6 min
    python benchmarks/bench_ray.py --quick      # 1 rep x 0.8 s windows, ~3 min

Two tables, each measured side by side in one run (reps interleaved). Every client
runs in a process of its own without Ray (``_harness.py worker``), so the client
side is the same for every row; only where the servers run differs.

1. **An env that waits 10 ms per step on I/O** (``IOWaitEnv``, as an LLM-agent env
   waits on a sandbox), 32 envs: env-steps/s against the number of server actors
   (1, 2, 4, 8) of one pool (``openenv_gym.ray.launch``), in batched mode (each
   server steps its envs in turn) and in sessions mode (one session, so one server
   thread, per env), against Gymnasium's ``AsyncVectorEnv`` (32 worker processes)
   and ``SyncVectorEnv`` (the 32 waits in turn).
2. **CartPole, 64 envs, batched**: servers as Ray actors against the same number of
   plain ``openenv-gym serve`` processes (1 and 2 servers): the cost Ray adds
   (target: within 10%).

Writes ``benchmarks/results/ray.json`` and the ``ray`` section of
``docs/distributed.md`` (not with ``--no-doc``, nor after a global timeout).
"""

from __future__ import annotations

import argparse
import datetime as _dt
import os
import sys
import time
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))

import _harness as H  # noqa: E402

RESULTS_PATH = HERE / "results" / "ray.json"
LOG_DIR = HERE / "results" / "logs"
DOC_PATH = ROOT / "docs" / "distributed.md"
DOC_TAG = "ray"
DOC_INTRO = "# openenv-gym on Ray\n"
PACKAGES = ["ray", "gymnasium", "numpy", "websockets", "msgpack", "uvicorn", "openenv-gym"]
IO_WAIT = 0.010
IO_ENVS = 32
IO_SERVERS = (1, 2, 4, 8)
CARTPOLE_ENVS = 64
CARTPOLE_SERVERS = (1, 2)
N_ACTIONS = 256


class IOWaitEnv(gym.Env):
    """CartPole-sized spaces; every step waits 10 ms (``time.sleep``, which
    releases the GIL as a socket read does); episodes of 200 steps."""

    def __init__(self, wait: float = IO_WAIT) -> None:
        self.wait = wait
        self.observation_space = gym.spaces.Box(-1.0, 1.0, shape=(4,), dtype=np.float32)
        self.action_space = gym.spaces.Discrete(2)
        self.t = 0

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        super().reset(seed=seed)
        self.t = 0
        return np.zeros(4, np.float32), {}

    def step(self, action: Any):
        time.sleep(self.wait)
        self.t += 1
        return np.full(4, self.t / 200, np.float32), 1.0, False, self.t >= 200, {}


# ---------------------------------------------------------- worker clients ----

class VecClient:
    """A vector env in the worker process (no Ray there); one ``step(i)`` is one vector step.

    ``kind`` ``"sync"`` / ``"async"``: Gymnasium's vector env of ``env``; ``"remote"``:
    a ``RemoteVectorEnv`` placing ``placement`` (``{url: envs}``) with ``remote`` keywords.
    """

    def __init__(self, kind: str, env: str, num_envs: int, placement: dict | None = None,
                 remote: dict | None = None) -> None:
        self.kind, self.env, self.num_envs = kind, env, num_envs
        self.placement, self.remote = placement, remote or {}
        self.envs: Any = None

    def open(self) -> dict:
        if self.kind in ("sync", "async"):
            make = IOWaitEnv if self.env == "io" else (lambda: gym.make("CartPole-v1"))
            cls = gym.vector.SyncVectorEnv if self.kind == "sync" else gym.vector.AsyncVectorEnv
            self.envs = cls([make] * self.num_envs)
        else:
            import openenv_gym

            self.envs = openenv_gym.RemoteVectorEnv(self.placement, self.num_envs, message_timeout=60,
                                                    **self.remote)
        self.envs.reset(seed=0)
        self.envs.action_space.seed(0)
        self.actions = [self.envs.action_space.sample() for _ in range(N_ACTIONS)]
        return {}

    def step(self, i: int) -> int:
        self.envs.step(self.actions[i % N_ACTIONS])
        return 1

    def close(self) -> None:
        if self.envs is not None:
            self.envs.close()
            self.envs = None


def split(urls: list[str], num_envs: int) -> dict[str, int]:
    """``num_envs`` spread evenly over ``urls``."""
    return {url: num_envs // len(urls) + (k < num_envs % len(urls)) for k, url in enumerate(urls)}


# ------------------------------------------------------------------- main ----

def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="1 rep x 0.8 s windows")
    p.add_argument("--reps", type=int, default=None, help="reps per config (default 5, quick 1)")
    p.add_argument("--window", type=float, default=None, help="seconds per timed window (default 2, quick 0.8)")
    p.add_argument("--timeout", type=float, default=1800.0, help="global timeout, seconds")
    p.add_argument("--no-doc", action="store_true", help="do not rewrite docs/distributed.md")
    p.add_argument("--wait-idle", type=float, default=0.0, metavar="SECONDS",
                   help="first wait up to SECONDS for the CPUs to be idle (< 0.25 cores busy)")
    args = p.parse_args(argv)
    args.reps = args.reps or (1 if args.quick else 5)
    args.window = args.window or (0.8 if args.quick else 2.0)
    return args


def io_configs() -> list[tuple[str, str, int]]:
    """(table, kind, servers) of table 1."""
    return ([("io", "async", 0), ("io", "sync", 0)]
            + [("io", mode, s) for mode in ("batched", "sessions") for s in IO_SERVERS])


def cartpole_configs() -> list[tuple[str, str, int]]:
    return [("cartpole", where, s) for s in CARTPOLE_SERVERS for where in ("serve", "ray")]


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    started = _dt.datetime.now().astimezone()
    t0 = time.perf_counter()
    command = H.command_line(__file__, sys.argv[1:] if argv is None else argv)
    if args.wait_idle > 0:
        H.wait_for_idle_start(args.wait_idle)
    machine = H.machine_info(PACKAGES)
    H.progress(f"bench_ray: {args.reps} reps x {args.window} s; machine: {H.format_machine(machine)}")
    # Ray on this machine's loopback (nodes at 127.0.0.1), no usage statistics; read at import.
    os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    import ray

    import openenv_gym.ray as oray

    configs = io_configs() + cartpole_configs()
    results: dict[str, list] = {"/".join(map(str, c)): [] for c in configs}
    server_cpu: dict[str, list] = {name: [] for name in results}  # µs per env-step, one-server rows
    errors: dict[str, str] = {}
    processes = H.ProcessSet()
    incomplete = None
    setup: dict[str, float] = {}
    try:
        with H.GlobalTimeout(args.timeout, processes):
            tick = time.perf_counter()
            ray.init(num_cpus=2, include_dashboard=False, runtime_env={"env_vars": {"PYTHONPATH": str(HERE)}})
            setup["ray.init s"] = time.perf_counter() - tick
            # The servers take no CPU reservation: 8 of them and the client share the 2 cores.
            tick = time.perf_counter()
            io_pool = oray.launch("bench_ray:IOWaitEnv", num_servers=max(IO_SERVERS), sessions_per_server=IO_ENVS,
                                  num_cpus_per_server=0, name="bench-io",
                                  server_kwargs={"vector_backend": "sync"})
            setup[f"launch {max(IO_SERVERS)} IOWaitEnv servers s"] = time.perf_counter() - tick
            tick = time.perf_counter()
            cart_pool = oray.launch("CartPole-v1", num_servers=max(CARTPOLE_SERVERS), sessions_per_server=256,
                                    num_cpus_per_server=0, name="bench-cartpole")
            setup[f"launch {max(CARTPOLE_SERVERS)} CartPole servers s"] = time.perf_counter() - tick
            plain = [processes.add(H.Server(
                f"serve-{k}", lambda p: H.openenv_gym_argv("serve", "CartPole-v1", "--port", p, "--max-sessions", 256),
                ready="http:/health", env=H.python_env(), cwd=ROOT, log_path=LOG_DIR / f"ray-serve-{k}.log",
            )).start() for k in range(max(CARTPOLE_SERVERS))]
            for server in plain:
                if not server.wait_ready(60):
                    raise RuntimeError(f"{server.name} failed: {server.error}")
            urls = {"io": io_pool.urls, "ray": cart_pool.urls, "serve": [s.base_url for s in plain]}
            # The process of each server's URL, for its CPU use in one-server rows.
            pids = {s["url"]: s["pid"] for pool in (io_pool, cart_pool) for s in pool.health()}
            pids.update({s.base_url: s.pid for s in plain})
            worker = processes.add(H.ClientWorker("ray", log_path=LOG_DIR / "ray-client.log")).start()
            total = sum(1 for _ in H.interleaved(configs, args.reps))
            for k, (rep, config) in enumerate(H.interleaved(configs, args.reps)):
                table, kind, servers = config
                name = "/".join(map(str, config))
                if name in errors:
                    results[name].append(None)
                    continue
                if kind in ("sync", "async"):
                    params: dict[str, Any] = {"kind": kind, "env": table, "num_envs": IO_ENVS}
                    n = IO_ENVS
                elif table == "io":
                    n = IO_ENVS
                    params = {"kind": "remote", "env": table, "num_envs": n,
                              "placement": split(urls["io"][:servers], n), "remote": {"mode": kind}}
                else:
                    n = CARTPOLE_ENVS
                    params = {"kind": "remote", "env": table, "num_envs": n,
                              "placement": split(urls[kind][:servers], n), "remote": {"mode": "batched"}}
                server_pid = pids[next(iter(params["placement"]))] if servers == 1 else None
                try:
                    worker.request({"op": "open", "client": "bench_ray:VecClient", "params": params,
                                    "server_pid": server_pid}, timeout=180)
                    reply = worker.request({"op": "window", "window_s": args.window, "max_iters": 10 ** 6,
                                            "warmup_s": 0.3, "warmup_iters": 30}, timeout=args.window + 120)
                    worker.request({"op": "close"}, timeout=60)
                except H.WorkerError as exc:
                    errors[name] = str(exc).strip().splitlines()[-1]
                    results[name].append(None)
                    H.progress(f"[{k + 1}/{total}] {name}: FAILED {errors[name]}")
                    if not worker.alive():
                        worker = processes.add(H.ClientWorker("ray", log_path=LOG_DIR / "ray-client.log")).start()
                    continue
                rate = reply["result"]["steps_per_s"] * n
                results[name].append(rate)
                cpu = reply["result"]["server_cpu_us_per_step"]
                server_cpu[name].append(cpu / n if cpu is not None else None)
                H.progress(f"[{k + 1}/{total}] rep {rep + 1} {name:22s} {H.fmt(rate):>9s} env-steps/s")
            io_pool.close()
            cart_pool.close()
    except H.GlobalTimeoutError as exc:
        incomplete = str(exc)
    finally:
        processes.stop_all()
        ray.shutdown()

    with open("/proc/loadavg") as f:
        load_end = " ".join(f.read().split()[:3])
    data = {"command": command, "started": started.isoformat(), "duration_s": time.perf_counter() - t0,
            "machine": machine, "loadavg_at_end": load_end, "reps": args.reps, "window_s": args.window,
            "setup": setup, "env_steps_per_s": results, "server_cpu_us_per_env_step": server_cpu,
            "summary": {name: H.summarize(v) for name, v in results.items()},
            "server_cpu_summary": {name: H.summarize(v) for name, v in server_cpu.items() if any(v)},
            "ray_over_serve": {s: H.summarize(H.paired_ratios(results[f"cartpole/ray/{s}"],
                                                              results[f"cartpole/serve/{s}"]))
                               for s in CARTPOLE_SERVERS},
            "errors": errors, "incomplete": incomplete}
    H.write_json(RESULTS_PATH, data)
    H.progress(f"wrote {RESULTS_PATH.relative_to(ROOT)}")
    text = render(data)
    print("\n" + text)
    if not args.no_doc and not incomplete:
        H.update_markdown_section(DOC_PATH, DOC_TAG, text, DOC_INTRO)
        H.progress(f"rewrote the '{DOC_TAG}' section of {DOC_PATH.relative_to(ROOT)}")
    return 1 if incomplete else 0


def render(data: dict) -> str:
    summary = data["summary"]
    machine = data["machine"]

    def cell(name: str) -> str:
        return H.fmt_mmm(summary.get(name))

    lines = [
        f"_Generated by `benchmarks/bench_ray.py` on {data['started']} ({data['duration_s']:.0f} s); "
        f"every rep in `benchmarks/results/ray.json`._",
        "",
        f"Command: `{data['command']}` — {data['reps']} reps × {data['window_s']} s timed windows per config, "
        f"reps interleaved; numbers are env-steps/s, median [min–max] over the reps.",
        "",
        f"Machine: {H.format_machine(machine)}. Load average at start {machine['loadavg_at_start']}, "
        f"at the end {data['loadavg_at_end']} (of 2 cores: above 2, other work shared the machine and "
        f"every number is lower than on an idle one; compare rows measured in the same run).",
        "",
        f"### An env that waits {IO_WAIT * 1000:.0f} ms per step, {IO_ENVS} envs",
        "",
        "Servers of one pool (Ray actors, `num_cpus_per_server=0`, `vector_backend=\"sync\"`); the client, "
        "a `RemoteVectorEnv` over the first S servers' URLs, in a process without Ray.",
        "",
        "| server actors | batched (each server steps its envs in turn) | sessions (a server thread per env) |",
        "|---|---|---|",
    ]
    for s in IO_SERVERS:
        lines.append(f"| {s} | {cell(f'io/batched/{s}')} | {cell(f'io/sessions/{s}')} |")
    lines += [
        "",
        "| Gymnasium, same env | env-steps/s |",
        "|---|---|",
        f"| `AsyncVectorEnv`, {IO_ENVS} worker processes | {cell('io/async/0')} |",
        f"| `SyncVectorEnv` ({IO_ENVS} waits in turn) | {cell('io/sync/0')} |",
        "",
        f"### CartPole-v1, {CARTPOLE_ENVS} envs, batched: Ray actors against `openenv-gym serve` processes",
        "",
        "Same server code, same client (busy polling on, the defaults of both), only the process the "
        "server runs in differs.",
        "",
        "| servers | `openenv-gym serve` | Ray actors | Ray / serve (paired per rep) | target |",
        "|---|---|---|---|---|",
    ]
    for s in CARTPOLE_SERVERS:
        ratio = data["ray_over_serve"][s]
        met = "-" if ratio["median"] is None else ("yes" if ratio["median"] >= 0.9 else "no")
        lines.append(f"| {s} | {cell(f'cartpole/serve/{s}')} | {cell(f'cartpole/ray/{s}')} | "
                     f"{H.fmt_mmm(ratio)}x | ≥ 0.90x ({met}) |")
    cpu = data["server_cpu_summary"]
    lines += [
        "",
        "Server CPU per env-step (µs, utime + stime of the server's process over the window, one "
        "server; busy polling included), less sensitive to a shared machine than the rates: "
        f"`openenv-gym serve` {H.fmt_mmm(cpu.get('cartpole/serve/1'))}, "
        f"Ray actor {H.fmt_mmm(cpu.get('cartpole/ray/1'))}. Ray starts its worker processes, and so "
        "the server actors, at nice 15: on a contended machine they yield the CPU to processes at "
        "nice 0, `openenv-gym serve` included.",
    ]
    lines += ["", "Setup: " + ", ".join(f"{k} {v:.1f}" for k, v in data["setup"].items()) + "."]
    if data["errors"]:
        lines += ["", "Errors: " + "; ".join(f"{k}: {v}" for k, v in data["errors"].items())]
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
