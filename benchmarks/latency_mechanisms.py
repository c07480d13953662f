#!/usr/bin/env python
"""What each latency mechanism of the server and client buys: each one on and off, side by side.

    python benchmarks/latency_mechanisms.py             # 7 rounds x 1.5 s windows, ~20 min
    python benchmarks/latency_mechanisms.py --quick     # 2 rounds x 0.5 s windows, ~5 min

The mechanisms, and how each is switched (server flags of ``openenv-gym serve``, which
are ``create_app``'s options; the client's ``busy_poll`` of ``ConnectOptions``):

1. ``execution="auto"`` (``EnvCaller``): a session's env calls start on its worker thread
   and move inline onto the event loop once 16 calls in a row were fast (a per-thread
   CPU-time test tells a preempted call from a slow one), back to the thread at the first
   slow call. Against ``--execution inline`` (always on the loop) and ``--execution thread``
   (always on the thread). A session on its thread gets no server busy polling, so auto /
   thread is measured with our defaults and again with polling off on both sides (the
   thread hop alone).
2. ``InlineDeadline``: a watchdog thread that interrupts an inline call running past
   ``inline_deadline`` (5 s by default) by a signal to the loop's thread; on by default
   wherever calls run inline. Against ``--inline-deadline none``. A step timeout
   (``--step-timeout 5``) is another thing: it sends every call to the thread and awaits it
   with a timeout, so its rows are a cost of their own, against our defaults and against
   ``--execution thread``.
3. ``BusyPoll``: after a reply to a loopback client whose env runs inline, the server's loop
   keeps polling (``sched_yield`` each turn) for 1 ms instead of sleeping; the client's
   ``Connection`` polls its socket the same way for each reply. Against ``--busy-poll 0`` on
   the server, ``busy_poll=0`` on the client, and both.
4. The vector backend: ``/vector`` sessions of ``vector_backend="auto"`` (the default) run a
   ``SyncVectorEnv`` in the server (an EnvPool task aside); ``--vector-backend async`` gives
   each env a worker process (``AsyncVectorEnv``). async / auto on each workload is what an
   automatic switch to async for envs that prove slow (the ``StepClock`` this server had
   until commit a96e1fc) could buy. The backend a session got is read from the server's
   child processes during its window.

Workloads: one CartPole-v1 over ``RemoteEnv`` (msgpack); one env whose step computes for
1 ms of CPU before CartPole's (``make_slow_env`` below, served as
``latency_mechanisms:make_slow_env``), where a thread hop or a wake-up is a smaller part of a
step; ``RemoteVectorEnv`` batched (msgpack) on ``/vector``, N=8 and N=64 CartPole and N=8 of
the 1 ms env. Each workload also runs our defaults a second time, on a server and a client
of their own: that A/A pair is the run's noise. Ratios pair only the rounds in which both
windows ran quiet (other processes at most 0.25 cores: on two cores a busy neighbour halves
what polling can do, and a shared machine has them). A mechanism *pays* when its with /
without ratio is above 1 in every such round (4 at least) and its median lies beyond the
A/A noise (as far from 1, either way, as the A/A ratio that fell farthest); it *costs* in
the mirror case; otherwise the run cannot tell it from nothing.

Before the first round, a client worker also times what the mechanisms add to each call:
``InlineDeadline.begin`` + ``end``, the per-thread CPU-time read of ``execution="auto"``, one
``sched_yield`` (a turn of busy polling).

Every server and client is a process of its own on 127.0.0.1, started here and stopped by
PID; every round starts all of them afresh, in an order that rotates (a process's layout
alone moves its figures by up to 10-20%, see ``bench_ab.py``). Rounds are interleaved (the
round loop outside the config loop, each round starting one config later); each window is
bounded by time and by a call count, and one during which other processes used more than
0.25 cores is measured again (three times at most, within 300 s for the run).

The code under test is the working tree's, as it is when each round starts its processes
(recorded per round: other engineers' edits during a run show); ``--revision REV`` measures
one commit instead, checked out into a temporary git worktree (``bench_ab.py``'s), whose
``openenv_gym`` every server and client imports.

Writes ``benchmarks/results/latency_mechanisms.json`` (every window) and the
``latency-mechanisms`` section of ``docs/benchmarks.md`` (not with ``--no-doc``, nor after
a global timeout). Server and client logs: ``benchmarks/results/logs/``.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as _dt
import hashlib
import math
import os
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _harness as H  # noqa: E402
import bench_ab  # noqa: E402
import bench_single  # noqa: E402
import bench_vector  # noqa: E402

ROOT = H.ROOT
RESULTS_PATH = H.HERE / "results" / "latency_mechanisms.json"
#: Where the logs and the Markdown section go: where the other benchmarks put theirs.
LOG_DIR, DOC_PATH = bench_single.LOG_DIR, bench_single.DOC_PATH
DOC_TAG = "latency-mechanisms"
PACKAGES = ["openenv-gym", "gymnasium", "numpy", "websockets", "msgpack", "uvicorn", "starlette", "uvloop"]
LOADED_CORES = bench_single.LOADED_CORES
#: CPU seconds the slow env computes per step, before CartPole's own step.
SLOW_STEP_CPU_S = 0.001
#: A window during which other processes used more than LOADED_CORES is measured again up to
#: RETRIES times, within RETRY_BUDGET_S seconds for the whole run (a fifth of it with --quick).
RETRIES, RETRY_BUDGET_S = 3, 300.0
#: The ratios (and the A/A noise) pair only the rounds in which both windows ran quiet (other
#: processes at most LOADED_CORES); a verdict needs this many such rounds.
MIN_QUIET_ROUNDS = 4
#: Per-window metrics summarized in the JSON.
METRICS = ("steps_per_s", "p50_us", "p99_us", "server_cpu_us_per_step", "client_cpu_us_per_step",
           "other_load_cores")


# ----------------------------------------------------------- the slow env ----

def make_slow_env(cpu_ms: float = SLOW_STEP_CPU_S * 1000) -> Any:
    """CartPole-v1 whose every step first computes for ``cpu_ms`` of CPU time, as a
    physics engine's step would (served as ``latency_mechanisms:make_slow_env``)."""
    import gymnasium as gym

    class ComputingStep(gym.Wrapper):
        def step(self, action: Any) -> Any:
            end = time.thread_time() + cpu_ms / 1000
            while time.thread_time() < end:
                pass
            return self.env.step(action)

    return ComputingStep(gym.make("CartPole-v1"))


# ----------------------------------------------------------------- the plan ----

#: The served envs: workload key -> ``openenv-gym serve`` ENV.
ENVS = {"cartpole": "CartPole-v1", "slow": "latency_mechanisms:make_slow_env"}
#: Server variants: key -> (flags, what they switch). Each exists once per env.
SERVERS = {
    "default": ((), "our defaults"),
    "again": ((), "our defaults, a second server (A/A)"),
    "inline": (("--execution", "inline"), "--execution inline"),
    "thread": (("--execution", "thread"), "--execution thread"),
    "nodeadline": (("--inline-deadline", "none"), "--inline-deadline none"),
    "timeout": (("--step-timeout", "5"), "--step-timeout 5"),
    "nopoll": (("--busy-poll", "0"), "--busy-poll 0"),
    "async": (("--vector-backend", "async"), "--vector-backend async"),
}
CLIENT_NO_POLL = bench_single.NO_POLL
#: Single-env configs: name -> (server variant, client polls, label).
SINGLE = {
    "default": ("default", True, "our defaults (auto, deadline 5 s, busy polling both sides)"),
    "again": ("again", True, "our defaults again, own server and client (A/A)"),
    "inline": ("inline", True, "--execution inline"),
    "thread": ("thread", True, "--execution thread (no server polling: the session is not inline)"),
    "nodeadline": ("nodeadline", True, "--inline-deadline none"),
    "timeout": ("timeout", True, "--step-timeout 5 (every call on the thread, awaited with a timeout)"),
    "srv_nopoll": ("nopoll", True, "server --busy-poll 0, client polls"),
    "cli_nopoll": ("default", False, "server polls, client busy_poll=0"),
    "nopoll": ("nopoll", False, "no polling: --busy-poll 0 and busy_poll=0"),
    "thread_nopoll": ("thread", False, "--execution thread, client busy_poll=0"),
}
#: Vector configs: name -> (server variant, label).
VECTOR = {
    "auto": ("default", "--vector-backend auto (the default: sync)"),
    "again": ("again", "auto again, own server and client (A/A)"),
    "async": ("async", "--vector-backend async"),
}
#: Workload groups: key -> (title, env, num_envs or None for one env on /ws).
GROUPS = {
    "cartpole": ("CartPole-v1, RemoteEnv msgpack", "cartpole", None),
    "slow": ("1 ms-CPU env, RemoteEnv msgpack", "slow", None),
    "vec8": ("RemoteVectorEnv batched, N=8 CartPole-v1", "cartpole", 8),
    "vec64": ("RemoteVectorEnv batched, N=64 CartPole-v1", "cartpole", 64),
    "vec8slow": ("RemoteVectorEnv batched, N=8 of the 1 ms-CPU env", "slow", 8),
}
#: Short names of the groups, for the verdicts.
SHORT = {"cartpole": "CartPole", "slow": "1 ms env", "vec8": "N=8 CartPole", "vec64": "N=64 CartPole",
         "vec8slow": "N=8 1 ms env"}
#: The comparisons, by mechanism: (mechanism, group, with, without, what is compared).
COMPARISONS = [
    *[row for g in ("cartpole", "slow") for row in (
        ("execution", g, "default", "thread", "auto / always on the thread, our defaults otherwise"),
        ("execution", g, "nopoll", "thread_nopoll", "auto / always on the thread, no polling (the hop alone)"),
        ("execution", g, "default", "inline", "auto / always inline (the promotion's bookkeeping)"),
        ("inline_deadline", g, "default", "nodeadline", "deadline 5 s / none"),
        ("step_timeout", g, "timeout", "default", "step timeout 5 s / none (our defaults)"),
        ("step_timeout", g, "timeout", "thread", "step timeout 5 s / --execution thread (the timeout alone)"),
        ("busy_poll", g, "default", "nopoll", "both sides poll / neither"),
        ("busy_poll", g, "default", "srv_nopoll", "server polls / not (client polls)"),
        ("busy_poll", g, "default", "cli_nopoll", "client polls / not (server polls)"),
    )],
    *[row for g in ("vec8", "vec64", "vec8slow") for row in (
        ("vector_backend", g, "async", "auto", "async / auto (sync)"),
    )],
]
#: Mechanism -> (title, the comparison whose verdict is the mechanism's, as (group, with, without)).
MECHANISMS = {
    "execution": ("`execution=\"auto\"` (promotion inline / demotion to the thread)",
                  ("cartpole", "default", "thread")),
    "inline_deadline": ("`InlineDeadline` (watchdog for inline calls)", ("cartpole", "default", "nodeadline")),
    "step_timeout": ("`step_timeout` (every call on the thread, with a timeout)", ("cartpole", "timeout", "default")),
    "busy_poll": ("`BusyPoll` and the client's busy polling", ("cartpole", "default", "nopoll")),
    "vector_backend": ("`vector_backend=\"async\"`, which the `StepClock` switched slow envs to",
                       ("vec8slow", "async", "auto")),
}


@dataclass(frozen=True)
class Config:
    """One row: a workload group, a server variant, a client."""

    group: str
    variant: str
    label: str
    server: str                 # key of the server process: "<env>/<variant>"
    client: str                 # "module:Class" for the worker
    params: dict[str, Any]
    num_envs: int = 1           # env-steps per step() call

    @property
    def name(self) -> str:
        return f"{self.group}/{self.variant}"


def configs_for(groups: list[str]) -> list[Config]:
    """The configs of ``groups``, in run order (the compared ones next to each other)."""
    out = []
    for group in groups:
        _, env, num_envs = GROUPS[group]
        if num_envs is None:
            for variant, (server, polls, label) in SINGLE.items():
                out.append(Config(group, variant, label, f"{env}/{server}", "_clients:OursClient",
                                  {"encoding": "msgpack", **({} if polls else CLIENT_NO_POLL)}))
        else:
            for variant, (server, label) in VECTOR.items():
                out.append(Config(group, variant, label, f"{env}/{server}", "bench_vector:VecClient",
                                  {"kind": "batched", "env": "cartpole", "num_envs": num_envs,
                                   "remote": bench_vector.REMOTE["batched"]}, num_envs))
    return out


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="2 rounds x 0.5 s windows (~5 min)")
    p.add_argument("--reps", type=int, default=None, help="rounds (default 7, quick 2)")
    p.add_argument("--window", type=float, default=None, help="seconds per timed window (default 1.5, quick 0.5)")
    p.add_argument("--groups", default=",".join(GROUPS), help=f"comma-separated subset of {','.join(GROUPS)}")
    p.add_argument("--timeout", type=float, default=None, help="global timeout, seconds (default 2400, quick 600)")
    p.add_argument("--wait-idle", type=float, default=0.0, metavar="SECONDS",
                   help="first wait up to SECONDS for an idle machine (< 0.25 cores busy); default 0")
    p.add_argument("--revision", default=None, metavar="REV",
                   help="measure this git revision, checked out into a temporary worktree, instead of the "
                        "working tree (whose edits during a run would change the code under test)")
    p.add_argument("--no-doc", action="store_true", help="do not rewrite docs/benchmarks.md")
    args = p.parse_args(argv)
    args.reps = args.reps or (2 if args.quick else 7)
    args.window = args.window or (0.5 if args.quick else 1.5)
    args.timeout = args.timeout or (600.0 if args.quick else 2400.0)
    args.retries, args.retry_budget = RETRIES, RETRY_BUDGET_S * (0.2 if args.quick else 1)
    args.groups = [g for g in args.groups.split(",") if g in GROUPS]
    return args


def server_argv(env: str, flags: tuple[str, ...]) -> Any:
    """``python -m openenv_gym.cli serve env --port PORT *flags`` (the CLI of the checkout
    the server runs in), as a function of the port."""
    return lambda port: [sys.executable, "-m", "openenv_gym.cli", "serve", env, "--port", port, *flags]


def uptime() -> str | None:
    """``uptime``'s line (the machine's load as engineers read it)."""
    with contextlib.suppress(OSError, subprocess.SubprocessError):
        return subprocess.run(["uptime"], capture_output=True, text=True, timeout=5).stdout.strip() or None
    return None


def code_state(root: Path) -> dict[str, str | None]:
    """The code the round's fresh processes import: the checkout's commit and a digest of
    its uncommitted changes to ``openenv_gym/`` (others may edit the tree during a run)."""
    def git(*args: str) -> str | None:
        with contextlib.suppress(OSError, subprocess.SubprocessError):
            done = subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True, timeout=30)
            return done.stdout if done.returncode == 0 else None
        return None

    head, diff = git("rev-parse", "--short", "HEAD"), git("diff", "HEAD", "--", "openenv_gym")
    untracked = git("ls-files", "--others", "--exclude-standard", "--", "openenv_gym")
    changes = (diff or "") + (untracked or "")
    return {"head": head.strip() if head else None,
            "uncommitted": hashlib.sha1(changes.encode()).hexdigest()[:12] if changes else None}


def child_processes(pid: int | None) -> int | None:
    """How many processes ``pid`` has as children (all its threads'), from /proc."""
    if pid is None:
        return None
    try:
        return sum(len(Path(f"/proc/{pid}/task/{tid}/children").read_text().split())
                   for tid in os.listdir(f"/proc/{pid}/task"))
    except OSError:
        return None


class PerCallCosts:
    """Nanoseconds per call of what the mechanisms add to each step, less an empty call's:
    ``InlineDeadline.begin`` + ``end`` (an enforced keeper: a worker's main thread), the
    thread's CPU-time read ``execution="auto"`` makes per inline call, and one
    ``sched_yield`` (a turn of busy polling, the core otherwise idle). Median [min–max] over
    ``reps``; each timing stops at ``calls`` calls or ``max_s`` seconds. Run in a client
    worker (``open()`` returns them), so that it imports the code under test."""

    def __init__(self, reps: int = 5, calls: int = 200_000, max_s: float = 0.5) -> None:
        self.reps, self.calls, self.max_s = reps, calls, max_s

    def open(self) -> dict[str, Any]:
        import resource

        from openenv_gym.server.latency import InlineDeadline

        keeper = InlineDeadline.for_this_thread()

        def deadline() -> None:
            keeper.begin(5.0)
            keeper.end()

        cases = {"empty call": lambda: None, "InlineDeadline.begin + end": deadline,
                 "getrusage(RUSAGE_THREAD)": lambda: resource.getrusage(resource.RUSAGE_THREAD),
                 "sched_yield": os.sched_yield}
        timed: dict[str, list[float]] = {name: [] for name in cases}
        for _ in range(self.reps):
            for name, fn in cases.items():
                n, t0 = 0, time.perf_counter()
                while n < self.calls and time.perf_counter() - t0 < self.max_s:
                    for _ in range(1000):
                        fn()
                    n += 1000
                timed[name].append((time.perf_counter() - t0) / n * 1e9)
        empty = timed.pop("empty call")
        out = {name: H.summarize([v - e for v, e in zip(values, empty)]) for name, values in timed.items()}
        out["InlineDeadline.begin + end"]["enforced"] = keeper.enforced
        return out

    def close(self) -> None:
        pass


def per_call_costs(worker: H.ClientWorker) -> dict[str, Any]:
    """:class:`PerCallCosts`, timed in ``worker`` (stopped afterwards)."""
    try:
        return worker.request({"op": "open", "client": "latency_mechanisms:PerCallCosts", "params": {}},
                              timeout=120)["info"]
    finally:
        worker.stop()


# ------------------------------------------------------------------- main ----

def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    started, t0 = _dt.datetime.now().astimezone(), time.perf_counter()
    command = H.command_line(__file__, sys.argv[1:] if argv is None else argv)
    if args.wait_idle > 0:
        H.wait_for_idle_start(args.wait_idle)
    checkout = bench_ab.base_checkout(args.revision, None) if args.revision else contextlib.nullcontext(ROOT)
    with checkout as root:
        py_env = H.python_env(root)
        tested = bench_ab.side_info("the code under test", root, args.revision, py_env)
        data = run(args, root, py_env)
    data.update({"benchmark": "latency_mechanisms", "command": command, "code": tested,
                 "started": started.isoformat(timespec="seconds"), "duration_s": round(time.perf_counter() - t0, 1)})
    H.write_json(RESULTS_PATH, data)
    H.progress(f"wrote {RESULTS_PATH.relative_to(ROOT)}")
    text = render(data)
    print("\n" + text, flush=True)
    if args.no_doc or data["incomplete"]:
        H.progress("docs/benchmarks.md left alone" + (f" (run incomplete: {data['incomplete']})"
                                                      if data["incomplete"] else ""))
    else:
        H.update_markdown_section(DOC_PATH, DOC_TAG, text, bench_single.DOC_INTRO)
        H.progress(f"rewrote the '{DOC_TAG}' section of {DOC_PATH.relative_to(ROOT)}")
    return 1 if data["incomplete"] else 0


def run(args: argparse.Namespace, root: Path, py_env: dict[str, str]) -> dict[str, Any]:
    """Every round of every config, with the servers and clients importing ``root``'s
    ``openenv_gym``; the results of :func:`build_results`."""
    machine, load = H.machine_info(PACKAGES), {"uptime_at_start": uptime()}
    configs = configs_for(args.groups)
    H.progress(f"latency_mechanisms: {args.reps} rounds x {args.window} s windows, {len(configs)} configs, "
               f"groups {args.groups}; {load['uptime_at_start']}")
    processes = H.ProcessSet()
    servers: dict[str, H.Server] = {}
    order = [f"{env}/{variant}" for env in ENVS for variant in SERVERS]
    for key in sorted({cfg.server for cfg in configs}, key=order.index):
        env, variant = key.split("/")
        servers[key] = processes.add(H.Server(
            key, server_argv(ENVS[env], SERVERS[variant][0]),
            ready="http:/health", env=py_env, cwd=root, log_path=LOG_DIR / f"latency-{key.replace('/', '-')}.log"))
    workers = {cfg.name: processes.add(H.ClientWorker(
        cfg.name, env=py_env, log_path=LOG_DIR / f"latency-client-{cfg.name.replace('/', '-')}.log"))
        for cfg in configs}
    windows: dict[str, list[dict | None]] = {cfg.name: [] for cfg in configs}
    code: list[dict[str, str | None]] = []  # the code under test, at each round's start
    errors: dict[str, str] = {}
    costs: dict[str, Any] = {}
    incomplete: str | None = None
    try:
        with H.GlobalTimeout(args.timeout, processes):
            costs = per_call_costs(processes.add(H.ClientWorker("per-call", env=py_env)).start())
            H.progress("per call: " + ", ".join(f"{k} {H.fmt(v['median'])} ns" for k, v in costs.items()))
            budget = {"retries": args.retry_budget}
            this_round = None
            for rep, cfg in H.interleaved(configs, args.reps):
                if rep != this_round:
                    this_round = rep
                    start_round(rep, servers, workers, errors, configs)
                    code.append(code_state(root))
                window = measure(cfg, args, servers, workers, errors, budget)
                windows[cfg.name].append(window)
                report(rep, cfg, window, errors)
    except (H.GlobalTimeoutError, KeyboardInterrupt, H.WorkerError) as exc:
        incomplete = str(exc).strip().splitlines()[-1] if str(exc).strip() else "interrupted"
        H.progress(f"stopped early ({incomplete}); writing what was measured")
    finally:
        H.progress("stopping workers and servers (by PID)")
        processes.stop_all()
    load["uptime_at_end"] = uptime()
    data = build_results(args, machine, load, configs, servers, windows, errors, incomplete)
    data["per_call_ns"], data["code_per_round"] = costs, code
    return data


def start_round(rep: int, servers: dict[str, H.Server], workers: dict[str, H.ClientWorker],
                errors: dict[str, str], configs: list[Config]) -> None:
    """Fresh server and client processes for the round, started in an order that moves
    by one each round; configs whose server does not come up fail (for the run)."""
    for proc in [*workers.values(), *servers.values()]:
        proc.stop()
    keys = list(servers)
    k = rep % len(keys)
    for key in keys[k:] + keys[:k]:
        servers[key].start()
    names = list(workers)
    k = rep % len(names)
    for name in names[k:] + names[:k]:
        workers[name].start()
    for key, srv in servers.items():
        if not srv.wait_ready(90.0):
            for cfg in configs:
                if cfg.server == key:
                    errors.setdefault(cfg.name, f"server {key} ({' '.join(H.portable_argv(srv.argv))}): {srv.error}")
    busy = H.wait_for_idle(10.0, threshold_cores=LOADED_CORES, consecutive=2, sample_s=0.5)
    H.progress(f"round {rep + 1}: fresh processes ({len(servers)} servers, {len(workers)} clients); machine busy "
               + (f"{busy:.2f} cores" if busy is not None else "unknown"))


def measure(cfg: Config, args: argparse.Namespace, servers: dict[str, H.Server],
            workers: dict[str, H.ClientWorker], errors: dict[str, str], budget: dict[str, float]) -> dict | None:
    """One window of ``cfg`` (None when it fails), measured again while other processes
    loaded the machine during it, up to RETRIES times and within what is left of the budget."""
    discarded: list[float] = []
    while cfg.name not in errors:
        srv = servers[cfg.server]
        seen: list[int] = []
        done = threading.Event()
        watcher = threading.Thread(target=_watch_children, args=(srv.pid, done, seen), daemon=True)
        watcher.start()
        t_window = time.perf_counter()
        try:
            _, window = workers[cfg.name].measure(
                cfg.client, {**cfg.params, "base_url": srv.base_url}, server=srv, window_s=args.window,
                max_iters=200_000, warmup_s=bench_single.window_warmup_s(args.window), warmup_iters=300)
        except H.WorkerError as exc:
            errors[cfg.name] = str(exc)
            return None
        finally:
            done.set()
            watcher.join()
        window["rate"] = window["steps_per_s"] * cfg.num_envs
        window["server_children"] = max(seen, default=None)
        window["discarded_other_load"] = discarded
        other = window.get("other_load_cores") or 0.0
        if (other <= LOADED_CORES or own_workers(window) or len(discarded) >= args.retries
                or budget["retries"] <= 0):
            return window
        discarded.append(other)
        H.progress(f"    measuring {cfg.name} again: other processes used {other:.2f} cores")
        H.wait_for_idle(5.0, threshold_cores=LOADED_CORES, consecutive=2, sample_s=0.5)
        budget["retries"] -= time.perf_counter() - t_window
    return None


def _watch_children(pid: int | None, done: threading.Event, seen: list[int]) -> None:
    while not done.wait(0.25):
        count = child_processes(pid)
        if count is not None:
            seen.append(count)


def loaded(window: dict) -> bool:
    """Whether other processes used more than LOADED_CORES during the window (unknown, so
    not, for a window whose server ran worker processes: see :func:`own_workers`)."""
    return not own_workers(window) and (window.get("other_load_cores") or 0.0) > LOADED_CORES


def own_workers(window: dict | None) -> bool:
    """Whether the window's server had worker processes (AsyncVectorEnv's): their CPU is
    not in the server's, so the window's "other load" is partly its own work."""
    return bool((window or {}).get("server_children"))


def report(rep: int, cfg: Config, window: dict | None, errors: dict[str, str]) -> None:
    if window is None:
        H.progress(f"round {rep + 1} {cfg.name}: FAILED {H.portable_text(errors.get(cfg.name, ''))[-400:]}")
        return
    unit = "env-steps/s" if cfg.num_envs > 1 else "steps/s"
    other = window.get("other_load_cores") or 0.0
    H.progress(f"round {rep + 1} {cfg.name:24s} {H.fmt(window['rate']):>8s} {unit}  p50 {H.fmt(window['p50_us'])} µs  "
               f"cpu srv/cli {H.fmt(window['server_cpu_us_per_step'])}/{H.fmt(window['client_cpu_us_per_step'])} "
               f"µs/step" + (f"  backend {backend(cfg, window)}" if cfg.num_envs > 1 else "")
               + (f"  (other load {other:.2f} cores)" if other > 0.1 else ""))


def backend(cfg: Config, window: dict | None) -> str:
    """What stepped a vector window's envs, by the server's children during it."""
    children = (window or {}).get("server_children")
    if children is None:
        return "?"
    return "async" if children >= cfg.num_envs else "sync"


# --------------------------------------------------------------- results ----

def build_results(args: argparse.Namespace, machine: dict[str, Any], load: dict[str, Any], configs: list[Config],
                  servers: dict[str, H.Server], windows: dict[str, list], errors: dict[str, str],
                  incomplete: str | None) -> dict[str, Any]:
    """Every window, its summaries, the paired ratios and the verdicts (JSON-ready)."""
    def per_round(name: str, metric: str = "rate", quiet: bool = False) -> list[float | None]:
        return [w.get(metric) if w and not (quiet and loaded(w)) else None for w in windows.get(name, [])]

    def cpu(name: str, quiet: bool = False) -> list[float | None]:
        return [w["server_cpu_us_per_step"] + w["client_cpu_us_per_step"]
                if w and w.get("server_cpu_us_per_step") is not None and not (quiet and loaded(w)) else None
                for w in windows.get(name, [])]

    def paired(num: list, den: list) -> dict[str, Any]:
        ratios = H.paired_ratios(num, den)
        return {**H.summarize(ratios), "above_1": sum(r > 1 for r in ratios), "below_1": sum(r < 1 for r in ratios)}

    summary = {cfg.name: {"rate": H.summarize([v for v in per_round(cfg.name) if v is not None]),
                          "cpu_us_per_step": H.summarize([v for v in cpu(cfg.name) if v is not None]),
                          **{m: H.summarize([v for v in per_round(cfg.name, m) if v is not None]) for m in METRICS},
                          "backends": sorted({backend(cfg, w) for w in windows[cfg.name] if w})
                          if cfg.num_envs > 1 else None}
               for cfg in configs}
    noise = {}
    for group in GROUPS:
        base = "auto" if GROUPS[group][2] else "default"
        aa = paired(per_round(f"{group}/again", quiet=True), per_round(f"{group}/{base}", quiet=True))
        noise[group] = {**aa, "band": _band(aa),
                        "all_rounds": paired(per_round(f"{group}/again"), per_round(f"{group}/{base}"))}
    comparisons = []
    for mechanism, group, with_, without, what in COMPARISONS:
        a, b = f"{group}/{with_}", f"{group}/{without}"
        if a not in windows or b not in windows:
            continue
        ratio = paired(per_round(a, quiet=True), per_round(b, quiet=True))
        comparisons.append({"mechanism": mechanism, "group": group, "with": a, "without": b, "what": what,
                            "rate_ratio": ratio, "cpu_ratio": paired(cpu(a, quiet=True), cpu(b, quiet=True)),
                            "rate_ratio_all_rounds": paired(per_round(a), per_round(b)),
                            "noise_band": noise[group]["band"], "verdict": _verdict(ratio, noise[group]["band"])})
    return {
        "incomplete": incomplete, "args": vars(args),
        "machine": machine, "load": load,
        "servers": {key: H.portable_argv(srv.argv) for key, srv in servers.items()},
        "configs": {cfg.name: {"group": cfg.group, "label": cfg.label, "server": cfg.server, "client": cfg.client,
                               "params": cfg.params, "num_envs": cfg.num_envs} for cfg in configs},
        "windows": windows, "errors": errors, "summary": summary, "noise": noise, "comparisons": comparisons,
    }


def _band(aa: dict[str, Any]) -> list[float] | None:
    """The A/A noise band: as far from 1, either way, as the A/A ratio farthest from it."""
    if aa.get("n", 0) < MIN_QUIET_ROUNDS:
        return None
    d = max(abs(math.log(aa["min"])), abs(math.log(aa["max"])))
    return [math.exp(-d), math.exp(d)]


def _verdict(ratio: dict[str, Any], band: list[float] | None) -> str:
    """``pays`` (faster in every quiet round, the median beyond the noise band), ``costs``
    (the mirror), ``within noise``, or ``too few quiet rounds`` (fewer than MIN_QUIET_ROUNDS
    of the pair, or of the A/A pair)."""
    if ratio.get("n", 0) < MIN_QUIET_ROUNDS or band is None:
        return "too few quiet rounds"
    if ratio["min"] > 1 and ratio["median"] > band[1]:
        return "pays"
    if ratio["max"] < 1 and ratio["median"] < band[0]:
        return "costs"
    return "within noise"


def _transport_text() -> str:
    """Which port this run's clients reached: the native listener wherever picows is installed."""
    from openenv_gym.server.native import native_wanted

    if native_wanted():
        return ("every client reaches its server's native listener, "
                "[operations.md](operations.md#the-native-listener), as openenv-gym clients do by default")
    return "every client reaches its server's main port: the native listener is off or picows is not installed"


def render(data: dict[str, Any]) -> str:
    """The ``latency-mechanisms`` section of docs/benchmarks.md."""
    a, machine, load, summary = data["args"], data["machine"], data["load"], data["summary"]
    configs = data["configs"]
    lines = [
        "## Latency mechanisms: what each one buys",
        "",
        f"Command: `{data['command']}` ({a['reps']} rounds x {a['window']} s windows, every config once a round, "
        f"each round starting one config later and with fresh server and client processes; median [min–max] over "
        f"the rounds, ratios paired per round; every window in `benchmarks/results/latency_mechanisms.json`). "
        f"Machine: {H.format_machine(machine)}. Started {data['started'][:19]} ({data['duration_s']:.0f} s).",
        "",
        f"Machine load: at the start `{load.get('uptime_at_start')}`; at the end `{load.get('uptime_at_end')}`.",
        "",
        _code_text(data.get("code") or {}, data.get("code_per_round") or []),
        "",
    ]
    kept = [w for ws in data["windows"].values() for w in ws
            if w and w.get("other_load_cores") is not None and not own_workers(w)]
    if kept:
        s = H.summarize([w["other_load_cores"] for w in kept])
        redone = sum(len(w.get("discarded_other_load") or []) for w in kept)
        loaded = sum(w["other_load_cores"] > LOADED_CORES for w in kept)
        lines += [f"CPU other processes used during the windows, in cores of {machine.get('cpus')}: median "
                  f"{s['median']:.2f}, max {s['max']:.2f}; {redone} window(s) measured again for it; {loaded} of "
                  f"{len(kept)} kept windows ran with more than {LOADED_CORES} cores of it. Not counted: the "
                  f"windows whose server ran AsyncVectorEnv workers, which count as other processes (they are "
                  f"not measured again for it either). The load averages count this run's own processes too "
                  f"(up to 64 such workers).", ""]
    lines += [
        "Each mechanism is switched through the server's options (`openenv-gym serve` flags, `create_app`'s "
        "options of the same names) or the client's `busy_poll`; every other option keeps its default (so "
        f"{_transport_text()}). Rates: "
        "`step()` calls per second for one env, env-steps per second for a vector env. CPU: server + client "
        "CPU µs per `step()` call (with busy polling it includes the polling). Noise: each workload runs our "
        "defaults twice, on servers and clients of their own (A/A). Ratios are paired per round, over the quiet "
        f"rounds only: those in which both windows ran while other processes used at most {LOADED_CORES} cores "
        "(the windows of the others are in the JSON, and their ratios as `rate_ratio_all_rounds`). A ratio *pays* "
        f"when it is above 1 in every quiet round ({MIN_QUIET_ROUNDS} at least) and its median lies beyond the "
        "A/A band (as far from 1, either way, as the quiet A/A ratio farthest from it), *costs* in the mirror "
        "case, and is *within noise* otherwise.",
        "",
        "### Verdicts",
        "",
    ]
    by_key = {(c["group"], c["with"].split("/")[1], c["without"].split("/")[1]): c for c in data["comparisons"]}
    for mechanism, (title, deciding) in MECHANISMS.items():
        rows = [c for c in data["comparisons"] if c["mechanism"] == mechanism]
        if not rows:
            continue
        decided = by_key.get(deciding) or rows[0]
        band = decided["noise_band"]
        noise = f"A/A noise {H.fmt(band[0])}–{H.fmt(band[1])}x" if band else "no A/A"
        others = "; ".join(f"{SHORT[c['group']]} {c['what']} {H.fmt(c['rate_ratio']['median'])}x, {c['verdict']}"
                           for c in rows if c is not decided and c["rate_ratio"].get("n"))
        lines.append(f"- {title}: **{_plain(mechanism, decided['verdict'])}**: {SHORT[decided['group']]}, "
                     f"{decided['what']}, {_ratio_text(decided)}, {noise}."
                     + (f" The other rows: {others}." if others else ""))
    costs = data.get("per_call_ns") or {}
    if costs:
        lines += ["", "What the mechanisms add to each call, timed in one process (ns per call less an empty "
                  "call's, median [min–max] of 5 timings): "
                  + "; ".join(f"`{name}` {H.fmt_mmm(v)}" for name, v in costs.items())
                  + ". The first is what `InlineDeadline` does per inline call (its watchdog thread also wakes "
                  "10 times a second); the second, the CPU-time read `execution=\"auto\"` makes per inline call; "
                  "the third, one turn of busy polling on either side."]
    lines += ["", "### Each mechanism with and without it", "",
              "| mechanism | workload | compared | with | without | with / without (rate) | with / without "
              "(CPU per step) | A/A noise | verdict |", "|---|---|---|---|---|---|---|---|---|"]
    for c in data["comparisons"]:
        band = c["noise_band"]
        lines.append(f"| {c['mechanism']} | {GROUPS[c['group']][0]} | {c['what']} | "
                     f"{H.fmt_mmm(summary[c['with']]['rate'])} | {H.fmt_mmm(summary[c['without']]['rate'])} | "
                     f"{_ratio_text(c)} | {H.fmt_mmm(c['cpu_ratio'])}x | "
                     f"{f'{H.fmt(band[0])}–{H.fmt(band[1])}x' if band else '-'} | {c['verdict']} |")
    lines += ["", "### Every config", "",
              "| config | server | rate | call p50 µs | call p99 µs | server CPU µs/step | client CPU µs/step | "
              "vector backend |", "|---|---|---|---|---|---|---|---|"]
    for name, cfg in configs.items():
        s = summary[name]
        argv = data["servers"].get(cfg["server"], [])
        flags = " ".join(argv[argv.index("serve") + 4:]) if "serve" in argv else ""
        if not s["rate"]["n"]:
            lines.append(f"| {name}: {cfg['label']} | `{flags or 'defaults'}` | **failed** | - | - | - | - | - |")
            continue
        lines.append(f"| {name}: {cfg['label']} | `{flags or 'defaults'}` | {H.fmt_mmm(s['rate'])} | "
                     f"{H.fmt_mmm(s['p50_us'])} | {H.fmt_mmm(s['p99_us'])} | "
                     f"{H.fmt_mmm(s['server_cpu_us_per_step'])} | {H.fmt_mmm(s['client_cpu_us_per_step'])} | "
                     f"{', '.join(s['backends']) if s['backends'] else '-'} |")
    lines += ["", NOT_ISOLATED]
    if data["errors"]:
        lines += ["", "Failed: " + "; ".join(f"`{k}`: {H.portable_text(v).strip().splitlines()[-1]}"
                                             for k, v in data["errors"].items())]
    return "\n".join(lines) + "\n"


#: What the options cannot switch off, so no row isolates it.
NOT_ISOLATED = (
    "Not isolated by any row, since no option switches it off alone: the CPU-time test inside "
    "`execution=\"auto\"` (auto / inline measures all of auto's per-call bookkeeping, that test included; "
    "what the test is for, keeping a fast env inline on a machine busy enough to preempt its calls past "
    "2 ms, shows only under such load); the `sched_yield` of each polling turn (its cost per turn is above); "
    "the client's one-poller-per-process lock (it matters only with several connections in one process). "
    "Nor does one session per server show what demotion is for: a slow env's calls off the event loop, so "
    "that the other sessions' steps do not wait for them. The 1 ms env runs inline under auto (its steps "
    "are under the 2 ms threshold), so its auto rows run as `--execution inline` does."
)


def _code_text(tested: dict[str, Any], states: list[dict[str, str | None]]) -> str:
    """The code under test, and whether it stayed the same in every round."""
    text = f"Code under test: {bench_ab.side_name(tested)}" + (f" (`--revision {tested['revision']}`, a worktree "
                                                               f"of its own)" if tested.get("revision") else "")
    if not states or all(state == states[0] for state in states):
        return text + ", the same at the start of every round."
    return (text + ". **It changed during the run** (each round's fresh processes import the working tree as "
            "it is then): " + "; ".join(f"round {k + 1}: {st['head']}"
                                        + (f" + uncommitted changes {st['uncommitted']}" if st["uncommitted"] else "")
                                        for k, st in enumerate(states))
            + ". Ratios that pair rounds of different code mix their effects; `--revision` measures one commit.")


def _ratio_text(comparison: dict[str, Any]) -> str:
    r = comparison["rate_ratio"]
    if not r.get("n"):
        return "-"
    return f"{H.fmt_mmm(r)}x (above 1 in {r['above_1']} of {r['n']} quiet rounds)"


def _plain(mechanism: str, verdict: str) -> str:
    """A verdict said of the mechanism: a safety net that costs nothing measurable is not a
    speed-up, but no loss either."""
    if mechanism in ("inline_deadline", "step_timeout"):
        return {"pays": "faster with it", "costs": "costs speed",
                "within noise": "costs nothing measurable"}.get(verdict, verdict)
    return {"pays": "pays", "costs": "costs more than it buys",
            "within noise": "does not pay"}.get(verdict, verdict)


if __name__ == "__main__":
    sys.exit(main())
