#!/usr/bin/env python
"""Remote stepping against local: an EnvPool backend behind the socket, and two half-batches in flight.

    python benchmarks/bench_pipeline.py                 # 5 reps x 1.5 s windows, ~3 min
    python benchmarks/bench_pipeline.py --quick         # 1 rep x 0.6 s windows
    python benchmarks/bench_pipeline.py --env Acrobot-v1  # an env whose step costs ~4x CartPole's

CartPole-v1 (or ``--env``, a classic-control task both Gymnasium and EnvPool have), N = 64
envs, env-steps/s, side by side in one run (reps interleaved),
every client and every server in its own process on 127.0.0.1, stopped by PID:

- ``sync``: Gymnasium ``SyncVectorEnv`` in the client process (the anchor);
- ``envpool``: an EnvPool pool in the client process (``num_threads=2``);
- ``remote_envpool``: ``RemoteVectorEnv`` batched (msgpack) against
  ``openenv-gym serve envpool:CartPole-v1`` (a batched session steps one pool);
- ``envpool_halves``: ``RemoteVectorEnv([url, url], 64, batch_size=32)`` against that
  one EnvPool server, two sessions of 32 envs (a pool each), driven as ``halves``: the
  server's pool steps one half, its threads outside the GIL, while the server's event
  loop and the client handle the other;
- ``lockstep``: ``RemoteVectorEnv`` batched ``step()`` against one
  ``openenv-gym serve CartPole-v1`` (a ``SyncVectorEnv`` in the server);
- ``halves``: ``RemoteVectorEnv([url_a, url_b], 64, batch_size=32)`` against two such
  servers, driven EnvPool-style: ``async_reset()``, then ``recv()`` one half and
  ``send()`` its actions while the other half is stepped.

Where a remote call's time goes: for the remote kinds, each window also reads the
servers' ``/metrics`` (``openenv_gym_step_seconds``, a server's time from a decoded
``step`` message to its reply, the env's step included), so the table shows each call's
wall time beside the server's part of it; the rest is the client, the codec and the
socket, both ways.

Writes ``benchmarks/results/pipeline.json`` and the ``pipeline`` section of
``docs/benchmarks.md`` (for another ``--env``, ``pipeline-<env>.json`` and the
``pipeline-<env>`` section, whose ratios have no target: #17's targets are CartPole's),
not with ``--no-doc``, nor after a global timeout.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))

import _harness as H  # noqa: E402

LOG_DIR = HERE / "results" / "logs"
DOC_PATH = ROOT / "docs" / "benchmarks.md"
DOC_INTRO = "# Benchmarks\n"
#: The env the targets are for; ``--env`` measures another (tasks both Gymnasium and EnvPool have).
DEFAULT_ENV = "CartPole-v1"
ENVS = ("CartPole-v1", "Acrobot-v1", "MountainCar-v0")
N = 64
HALF = N // 2
N_ACTIONS = 1024
KINDS = {
    "sync": "gymnasium SyncVectorEnv, in-process (the anchor)",
    "envpool": "EnvPool, in-process (num_threads=2)",
    "remote_envpool": "RemoteVectorEnv batched, EnvPool backend (one server)",
    "envpool_halves": "RemoteVectorEnv send/recv, EnvPool backend, two halves in flight (one server)",
    "lockstep": "RemoteVectorEnv batched step(), sync backend (one server)",
    "halves": "RemoteVectorEnv send/recv, two halves in flight (two servers)",
    "remote_envpool_python": "RemoteVectorEnv batched, EnvPool backend (one server), main port (pure-Python fallback)",
    "halves_python": "RemoteVectorEnv send/recv, two halves in flight (two servers), main port (pure-Python fallback)",
}
#: The kinds driven EnvPool-style, two halves of N in flight.
HALVES = ("halves", "envpool_halves", "halves_python")
#: Suffix of the kinds whose client stays on the servers' main ports (``native=False``): what a
#: client gets without picows, or behind a proxy.
MAIN_PORT = "_python"
#: (label, numerator, denominator, minimum) of the per-rep paired ratios.
TARGETS = [
    ("EnvPool backend / SyncVectorEnv", "remote_envpool", "sync", 2.0),
    ("EnvPool backend / EnvPool in-process", "remote_envpool", "envpool", 0.5),
    ("EnvPool backend, two halves / SyncVectorEnv", "envpool_halves", "sync", 2.0),
    ("EnvPool backend, two halves / EnvPool in-process", "envpool_halves", "envpool", 0.5),
    ("two halves in flight / SyncVectorEnv", "halves", "sync", 1.0),
    ("two halves in flight / lockstep step() on one server", "halves", "lockstep", 1.0),
    ("EnvPool backend, main port / SyncVectorEnv", "remote_envpool_python", "sync", None),
    ("EnvPool backend, main port / EnvPool in-process", "remote_envpool_python", "envpool", None),
    ("two halves in flight, main port / SyncVectorEnv", "halves_python", "sync", None),
    ("EnvPool backend: native listener / main port", "remote_envpool", "remote_envpool_python", None),
    ("two halves in flight: native listener / main port", "halves", "halves_python", None),
]
PACKAGES = ["gymnasium", "numpy", "envpool", "websockets", "msgpack", "uvicorn", "openenv-gym"]


def server_steps(urls: list[str]) -> tuple[float, int]:
    """The step latencies the servers at ``urls`` have summed and counted (their ``/metrics``)."""
    total, count = 0.0, 0
    for url in sorted(set(urls)):
        with urllib.request.urlopen(f"{url}/metrics", timeout=10) as response:
            metrics = H.parse_metrics(response.read().decode())
        total += metrics.get("openenv_gym_step_seconds_sum", 0.0)
        count += int(metrics.get("openenv_gym_step_seconds_count", 0))
    return total, count


def envs_per_call(kind: str) -> int:
    return HALF if kind in HALVES else N


class Client:
    """One kind of vector env in the worker process; ``step(i)`` returns the env-steps it made
    (through the harness's round-trip count)."""

    def __init__(self, kind: str, env: str, urls: list[str] | None = None) -> None:
        self.kind, self.env, self.urls = kind, env, urls
        self.envs: Any = None

    def open(self) -> dict:
        import gymnasium as gym
        import numpy as np

        import openenv_gym

        if self.kind == "sync":
            self.envs = gym.vector.SyncVectorEnv([lambda: gym.make(self.env)] * N)
        elif self.kind == "envpool":
            import envpool

            self.envs = envpool.make(self.env, env_type="gymnasium", num_envs=N, batch_size=N, num_threads=2)
        else:
            halves = {"batch_size": HALF} if self.kind in HALVES else {}
            self.envs = openenv_gym.RemoteVectorEnv(self.urls, N, mode="batched", message_timeout=30,
                                                    native=not self.kind.endswith(MAIN_PORT), **halves)
        rng = np.random.default_rng(0)
        size = HALF if self.kind in HALVES else N
        n_actions = int(gym.make(self.env).action_space.n)
        self.actions = [rng.integers(0, n_actions, size, dtype=np.int64) for _ in range(N_ACTIONS)]
        if self.kind in HALVES:
            self.envs.async_reset(seed=0)
        elif self.kind == "envpool":
            self.envs.reset()
        else:
            self.envs.reset(seed=0)
        return {}

    def step(self, i: int) -> int:
        if self.kind in HALVES:
            *_, infos = self.envs.recv()
            self.envs.send(self.actions[i % N_ACTIONS], infos["env_id"])
            return HALF
        self.envs.step(self.actions[i % N_ACTIONS])
        return N

    def close(self) -> None:
        if self.envs is not None:
            self.envs.close()
            self.envs = None


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="1 rep x 0.6 s windows")
    p.add_argument("--env", choices=ENVS, default=DEFAULT_ENV,
                   help=f"the env (default {DEFAULT_ENV}, the one the targets are for)")
    p.add_argument("--reps", type=int, default=None, help="reps per row (default 5, quick 1)")
    p.add_argument("--window", type=float, default=None, help="seconds per timed window (default 1.5, quick 0.6)")
    p.add_argument("--timeout", type=float, default=900.0, help="global timeout, seconds")
    p.add_argument("--no-doc", action="store_true", help="do not rewrite docs/benchmarks.md")
    p.add_argument("--wait-idle", type=float, default=0.0, metavar="SECONDS",
                   help="first wait up to SECONDS for the CPUs to be idle (< 0.25 cores busy)")
    args = p.parse_args(argv)
    args.reps = args.reps or (1 if args.quick else 5)
    args.window = args.window or (0.6 if args.quick else 1.5)
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    started = _dt.datetime.now().astimezone()
    t0 = time.perf_counter()
    command = H.command_line(__file__, sys.argv[1:] if argv is None else argv)
    if args.wait_idle > 0:
        H.wait_for_idle_start(args.wait_idle)
    machine = H.machine_info(PACKAGES)
    H.progress(f"bench_pipeline: {args.reps} reps x {args.window} s; machine: {H.format_machine(machine)}")
    py_env = H.python_env()

    def serve(env: str) -> Any:
        return lambda p: H.openenv_gym_argv("serve", env, "--port", p, "--max-sessions", 256)

    server_argv = {"envpool": serve(f"envpool:{args.env}"), "sync_a": serve(args.env), "sync_b": serve(args.env)}
    own = args.env != DEFAULT_ENV
    suffix = f"-{args.env.lower()}" if own else ""
    results_path, doc_tag = HERE / "results" / f"pipeline{suffix}.json", f"pipeline{suffix}"
    processes = H.ProcessSet()
    results: dict[str, list] = {kind: [] for kind in KINDS}
    #: Per rep of a remote kind: the servers' mean time per step message, in microseconds.
    server_us: dict[str, list] = {kind: [] for kind in KINDS}
    errors: dict[str, str] = {}
    incomplete = None
    servers: dict[str, H.Server] = {}
    try:
        with H.GlobalTimeout(args.timeout, processes):
            for key, fn in server_argv.items():
                servers[key] = processes.add(H.Server(key, fn, ready="http:/health", env=py_env, cwd=ROOT,
                                                      log_path=LOG_DIR / f"pipeline-{key}.log")).start()
            for key, srv in servers.items():
                if not srv.wait_ready(120):
                    raise RuntimeError(f"server {key} failed: {srv.error}")
            urls = {"remote_envpool": [servers["envpool"].base_url],
                    "envpool_halves": [servers["envpool"].base_url] * 2, "lockstep": [servers["sync_a"].base_url],
                    "halves": [servers["sync_a"].base_url, servers["sync_b"].base_url]}
            urls.update({kind + MAIN_PORT: urls[kind] for kind in ("remote_envpool", "halves")})
            log = LOG_DIR / "pipeline-client.log"
            worker = processes.add(H.ClientWorker("pipeline", log_path=log)).start()
            kinds = list(KINDS)
            total = sum(1 for _ in H.interleaved(kinds, args.reps))
            for k, (rep, kind) in enumerate(H.interleaved(kinds, args.reps)):
                if kind in errors:
                    results[kind].append(None)
                    continue
                try:
                    worker.request({"op": "open", "client": "bench_pipeline:Client",
                                    "params": {"kind": kind, "env": args.env, "urls": urls.get(kind)}},
                                   timeout=180)
                    before = server_steps(urls[kind]) if kind in urls else None
                    reply = worker.request({"op": "window", "window_s": args.window, "max_iters": 10 ** 7,
                                            "warmup_s": 0.3, "warmup_iters": 200}, timeout=args.window + 120)
                    if before is not None:
                        after = server_steps(urls[kind])
                        messages = after[1] - before[1]
                        server_us[kind].append((after[0] - before[0]) / messages * 1e6 if messages else None)
                    worker.request({"op": "close"}, timeout=60)
                except H.WorkerError as exc:
                    errors[kind] = str(exc).strip().splitlines()[-1]
                    results[kind].append(None)
                    H.progress(f"[{k + 1}/{total}] {kind}: FAILED {errors[kind]}")
                    if not worker.alive():
                        worker = processes.add(H.ClientWorker("pipeline", log_path=log)).start()
                    continue
                rate = reply["result"]["round_trips_per_s"]  # env-steps: each call returns its count
                results[kind].append(rate)
                H.progress(f"[{k + 1}/{total}] rep {rep + 1} {kind:16s} {H.fmt(rate):>9s} env-steps/s")
    except H.GlobalTimeoutError as exc:
        incomplete = str(exc)
    finally:
        processes.stop_all()

    summary = {kind: H.summarize(v) for kind, v in results.items()}
    server_summary = {kind: H.summarize(values) for kind, values in server_us.items()}
    ratios = H.target_ratios(results, [(label, a, b, None if own else target) for label, a, b, target in TARGETS])
    data = {"command": command, "env": args.env, "started": started.isoformat(), "duration_s": time.perf_counter() - t0,
            "machine": machine, "reps": args.reps, "window_s": args.window,
            "servers": {key: H.portable_argv(srv.argv) for key, srv in servers.items()},
            "env_steps_per_s": results, "summary": summary, "server_step_us": server_us,
            "server_step_summary": server_summary, "ratios": ratios, "errors": errors,
            "incomplete": incomplete}
    H.write_json(results_path, data)
    text = render(data)
    print("\n" + text)
    if not args.no_doc and not incomplete:
        H.update_markdown_section(DOC_PATH, doc_tag, text, DOC_INTRO)
        H.progress(f"rewrote the '{doc_tag}' section of {DOC_PATH.relative_to(ROOT)}")
    return 1 if incomplete else 0


def render(data: dict) -> str:
    env = data.get("env", DEFAULT_ENV)
    title = "two halves in flight" + ("" if env == DEFAULT_ENV else f", {env}")
    lines = [
        f"## Remote against local: EnvPool behind the socket, {title}",
        "",
        f"Command: `{data['command']}` ({data['reps']} reps x {data['window_s']} s windows, reps interleaved; "
        f"median [min–max]). Machine: {H.format_machine(data['machine'])}. Started {data['started'][:19]}, "
        f"load average {data['machine'].get('loadavg_at_start')}.",
        "",
        f"{env}, N={N}. Every client in its own process, every server another process on 127.0.0.1, "
        "all on the machine's cores. The EnvPool server steps each batched session on one pool "
        "(`vector_backend=\"envpool\"`, the default for `envpool:` tasks); the two halves are EnvPool's "
        f"`send`/`recv` pattern over two `openenv-gym serve {env}` processes, so one server steps "
        "its half while the client handles the other ([vector.md](vector.md#two-halves-in-flight)), or "
        "over two sessions of 32 envs on the one EnvPool server, whose pool steps one half outside the "
        "GIL while the server's event loop and the client handle the other.",
        "",
        "A call is one `step()` (64 envs) or, for the halves, one `send()` + `recv()` of 32; "
        "its time is the median rep's env-steps per call over env-steps/s (two halves overlap, so "
        "theirs is not a round trip). The server's part is its time from a decoded `step` message "
        "to the reply, env step included (its `/metrics`, median over reps); the rest of a lockstep "
        "call is the client, the codec and the socket, both ways.",
        "",
        "Every client reaches the servers' native listeners ([operations.md](operations.md#the-native-listener)) "
        "but those marked \"main port\" (`RemoteVectorEnv(..., native=False)`: uvicorn and the "
        "pure-Python framing, what a client gets without picows or behind a proxy).",
        "",
        "| client | env-steps/s | µs per call | server's part, µs |",
        "|---|---|---|---|",
    ]
    server = data.get("server_step_summary", {})
    for kind, label in KINDS.items():
        stats = data["summary"][kind]
        failed = bool(data["errors"].get(kind))
        cell = "failed" if failed else H.fmt_mmm(stats)
        median = None if failed or not stats else stats.get("median")
        per_call = f"{envs_per_call(kind) / median * 1e6:,.0f}" if median else "-"
        part = (server.get(kind) or {}).get("median")
        lines.append(f"| {label} | {cell} | {per_call} | {'-' if part is None else f'{part:,.0f}'} |")
    lines += ["", "| ratio (per-rep pairs) | target | measured | met |", "|---|---|---|---|"]
    lines += [H.target_row(label, r) for label, r in data["ratios"].items()]
    if data["errors"]:
        lines += ["", "Failed rows: " + "; ".join(f"`{k}`: {v}" for k, v in data["errors"].items())]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.exit(main())
