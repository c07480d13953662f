#!/usr/bin/env python
"""Two checkouts of openenv-gym side by side: a base revision against this checkout.

    python benchmarks/bench_ab.py --base db3b301          # any git revision: 9 rounds, ~7 min
    python benchmarks/bench_ab.py --base-path ../other    # a checkout already on disk
    python benchmarks/bench_ab.py --base main --quick     # 2 rounds x 0.5 s windows, ~2 min
    python benchmarks/bench_ab.py --base main --load 1    # on a machine one core of which is busy

Figures taken on another day cannot tell whether a change made openenv-gym faster:
on a shared VM the speed of CPU-bound Python drifts by more than most changes do.
This script measures both versions in one run, on one machine, in rotating
order, and reports per-round paired ratios head / base.

The sides: *base*, ``--base`` checked out with ``git worktree add --detach``
into a temporary directory (removed afterwards) or the checkout at ``--base-path``;
*head*, the checkout this script is in. Each side has its own servers (``python -m
openenv_gym.cli serve CartPole-v1``, with busy polling and with ``--busy-poll 0``)
and its own client worker processes, all started with ``PYTHONPATH`` at that side's
checkout (checked before anything is measured); the benchmark code is this
checkout's, the same for every side. Configs, as ``bench_single.py`` and
``bench_vector.py`` measure them:

- ``single``: ``RemoteEnv`` on CartPole-v1, msgpack, with busy polling (the default on
  loopback) and without (``busy_poll=0`` against ``--busy-poll 0``);
- ``vector``: ``RemoteVectorEnv`` batched, msgpack, N=64 CartPole-v1, the same two ways;

and, in the same rounds, the anchors those benchmarks compare with, which do not
depend on the side: the official OpenEnv stack for ``single``, Gymnasium's
``SyncVectorEnv`` N=64 in the client process for ``vector``. So the ours / anchor
ratios of both sides come from one run.

A third side, *control*, runs the head's code again with servers and clients of its
own: control / head, an A/A comparison, shows how far two measurements of the same
code fall apart in this run, the noise to read head / base against.

Schedule: ``--reps`` rounds; each runs every config once, starting one config later
each round, and for ours the three sides back to back, starting one side later each
round. A config whose windows ran while other processes used more than 0.25 cores is
measured again, all sides (``--retries``, within ``--retry-budget``). Every round starts
with fresh servers and client processes for every side, started in an order that
rotates: a process's own layout (its hash seed, its addresses) and its place in the
start order would otherwise favour one side for the whole run (two runs of the same
code, each keeping its processes, came out 10-20% apart, the side started later the
cheaper one).

``--load K`` measures a busy machine on purpose: K processes spin, one core each, from
before the first server starts to the end (stopped by PID), as other work would on a
shared machine; no window is measured again for the load then. The results go to
``benchmarks/results/ab-loaded.json`` and the ``ab-loaded`` section instead.

Writes ``benchmarks/results/ab.json`` (every window) and the ``ab`` section of
``docs/benchmarks.md`` (not with ``--no-doc``, nor after a global timeout). Server
and client logs: ``benchmarks/results/logs/``.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as _dt
import math
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))

import _harness as H  # noqa: E402
import bench_single  # noqa: E402
import bench_vector  # noqa: E402

RESULTS_PATH = HERE / "results" / "ab.json"
LOADED_RESULTS_PATH = HERE / "results" / "ab-loaded.json"
LOG_DIR = HERE / "results" / "logs"
DOC_PATH = ROOT / "docs" / "benchmarks.md"
DOC_TAG = "ab"
LOADED_DOC_TAG = "ab-loaded"
DOC_INTRO = "# Benchmarks\n"
PACKAGES = ["openenv", "gymnasium", "numpy", "websockets", "msgpack", "uvicorn", "starlette", "uvloop"]
#: The sides of each of our configs: "control" runs the head's code again, with servers and
#: clients of its own, so control / head (an A/A comparison) shows how far two measurements of
#: the same code fall apart in this run: the noise any head / base ratio is to be read against.
SIDES = ("base", "head", "control")
NUM_ENVS = 64
LOADED_CORES = bench_single.LOADED_CORES
#: Per-window metrics summarized in the JSON (CPU per ``step()`` call: per vector step for ``vector``).
METRICS = ("steps_per_s", "client_cpu_us_per_step", "server_cpu_us_per_step", "p50_us",
           "other_load_cores")


@dataclass(frozen=True)
class Config:
    """One row of the tables: ours (``server`` "ours" or "ours_nopoll", measured on both
    sides) or an anchor (``server`` "official" or None, measured once per round)."""

    name: str
    group: str            # single | vector
    label: str
    client: str           # "module:Class" run by the worker
    params: dict[str, Any]
    server: str | None
    env_steps: int = 1    # env-steps per step() call

    @property
    def ours(self) -> bool:
        return bool(self.server and self.server.startswith("ours"))

    def keys(self, rep: int) -> list[str]:
        """The windows of this config in round ``rep``: one per side, starting one side later
        each round, or the anchor's one."""
        if not self.ours:
            return [self.name]
        k = rep % len(SIDES)
        return [f"{self.name}/{side}" for side in SIDES[k:] + SIDES[:k]]


def _vec(kind: str) -> dict[str, Any]:
    """``bench_vector.VecClient``'s parameters for N CartPole envs: ``kind`` of ``bench_vector.REMOTE``
    (our client), or ``"sync"`` (Gymnasium's SyncVectorEnv)."""
    remote = bench_vector.REMOTE.get(kind)
    return {"kind": "sync" if remote is None else kind, "env": "cartpole", "num_envs": NUM_ENVS,
            **({"remote": remote} if remote else {})}


#: In run order: each anchor between ours with and without polling, as in bench_single.
CONFIGS = [
    Config("single/poll", "single", "busy polling (default)", "_clients:OursClient",
           {"encoding": "msgpack"}, "ours"),
    Config("single/official", "single", "anchor: official OpenEnv (create_app + GenericEnvClient.sync())",
           "_clients:OfficialClient", {"n_actions": 2}, "official"),
    Config("single/nopoll", "single", "no polling", "_clients:OursClient",
           {"encoding": "msgpack", **bench_single.NO_POLL}, "ours_nopoll"),
    Config("vector/poll", "vector", "busy polling (default)", "bench_vector:VecClient", _vec("batched"),
           "ours", NUM_ENVS),
    Config("vector/sync", "vector", f"anchor: gymnasium SyncVectorEnv N={NUM_ENVS}, in the client process",
           "bench_vector:VecClient", _vec("sync"), None, NUM_ENVS),
    Config("vector/nopoll", "vector", "no polling", "bench_vector:VecClient", _vec("batched_nopoll"),
           "ours_nopoll", NUM_ENVS),
]
#: group -> (table title, rate unit, the anchor's config, the anchor's short name).
GROUPS = {
    "single": ("RemoteEnv, CartPole-v1, msgpack (one env, one client)", "steps/s", "single/official",
               "official"),
    "vector": (f"RemoteVectorEnv batched, N={NUM_ENVS} CartPole-v1, msgpack", "env-steps/s", "vector/sync",
               "SyncVectorEnv"),
}


def _vector_target(numerator: str) -> float:
    """bench_vector's minimum for ``numerator`` / SyncVectorEnv at our N."""
    return next(t for _, num, den, t in bench_vector.TARGETS
                if num == numerator and den == f"cartpole/sync/{NUM_ENVS}")


#: Minimum ours / anchor ratios, as bench_single.py and bench_vector.py set them.
TARGETS = {
    "single/poll": bench_single.TARGETS["ours_vs_official_cartpole"],
    "single/nopoll": bench_single.TARGETS["ours_nopoll_vs_official_cartpole"],
    "vector/poll": _vector_target(f"cartpole/batched/{NUM_ENVS}"),
    "vector/nopoll": _vector_target(f"cartpole/batched_nopoll/{NUM_ENVS}"),
}


# ----------------------------------------------------------------- sides ----

def _git(root: Path, *args: str) -> str | None:
    """``git -C root *args``'s output, None if git failed (``root`` not a checkout)."""
    done = subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True, timeout=60)
    return done.stdout.strip() if done.returncode == 0 else None


@contextlib.contextmanager
def base_checkout(revision: str | None, path: str | None) -> Iterator[Path]:
    """The base side's checkout: ``path`` as given, or ``revision`` checked out detached
    into a temporary git worktree of this repository, removed on exit."""
    if path is not None:
        yield Path(path).resolve()
        return
    assert revision is not None
    tmp = Path(tempfile.mkdtemp(prefix="openenv-gym-ab-"))
    target = tmp / "base"
    done = subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", "--quiet", str(target),
                           revision], capture_output=True, text=True, timeout=120)
    if done.returncode != 0:
        shutil.rmtree(tmp, ignore_errors=True)
        raise SystemExit(f"--base {revision}: git worktree add failed: {done.stderr.strip()}\n"
                         f"Pass a revision of this repository, or an existing checkout with --base-path DIR.")
    try:
        yield target
    finally:
        subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(target)],
                       capture_output=True, timeout=120)
        shutil.rmtree(tmp, ignore_errors=True)
        subprocess.run(["git", "-C", str(ROOT), "worktree", "prune"], capture_output=True, timeout=120)


def add_base_arguments(parser: argparse.ArgumentParser) -> None:
    """The options naming the base side, one of them required: ``--base REVISION`` (checked
    out by :func:`base_checkout`) or ``--base-path DIR``."""
    base = parser.add_mutually_exclusive_group(required=True)
    base.add_argument("--base", metavar="REVISION", help="git revision of this repository to compare with")
    base.add_argument("--base-path", metavar="DIR", help="an openenv-gym checkout to compare with")


def side_info(side: str, root: Path, revision: str | None, env: dict[str, str]) -> dict[str, Any]:
    """The side's commit, and a check that its processes import its own ``openenv_gym``."""
    probe = subprocess.run([sys.executable, "-c", "import openenv_gym; print(openenv_gym.__file__)"],
                           env=env, cwd=root, capture_output=True, text=True, timeout=120)
    module = Path(probe.stdout.strip() or "?").resolve()
    if probe.returncode != 0 or not module.is_relative_to(root):
        raise SystemExit(f"{side} side: `import openenv_gym` with PYTHONPATH={root} gave "
                         f"{module if probe.returncode == 0 else probe.stderr.strip()[-2000:]}, not the "
                         f"package in {root}. Is {root} an openenv-gym checkout (with openenv_gym/ at its top)?")
    changes = _git(root, "status", "--porcelain", "--", "openenv_gym")
    return {"revision": revision, "commit": _git(root, "rev-parse", "HEAD"),
            "subject": _git(root, "log", "-1", "--format=%s"),
            "package_commit": _git(root, "log", "-1", "--format=%H", "--", "openenv_gym"),
            "uncommitted_changes": bool(changes)}


def side_name(info: dict[str, Any]) -> str:
    """The side in the tables: its commit (and the commit its ``openenv_gym/`` is from, when a
    later one changed only other files; ``+ uncommitted changes``), or ``checkout`` outside git."""
    if not info.get("commit"):
        return "checkout"
    name = f"`{info['commit'][:7]}`"
    if info.get("package_commit") and info["package_commit"] != info["commit"]:
        name += f" (openenv_gym/ of `{info['package_commit'][:7]}`)"
    return name + (" + uncommitted changes" if info.get("uncommitted_changes") else "")


# ------------------------------------------------------------------- main ----

def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_base_arguments(p)
    p.add_argument("--quick", action="store_true", help="2 reps x 0.5 s windows")
    p.add_argument("--reps", type=int, default=None, help="rounds (default 9, quick 2)")
    p.add_argument("--window", type=float, default=None, help="seconds per timed window (default 1.5, quick 0.5)")
    p.add_argument("--timeout", type=float, default=1200.0, help="global timeout, seconds (default 1200)")
    p.add_argument("--retries", type=int, default=1,
                   help=f"measure a config again, both sides, up to this many times when other processes "
                        f"used more than {LOADED_CORES} cores during its windows (default 1)")
    p.add_argument("--retry-budget", type=float, default=120.0, metavar="SECONDS",
                   help="total seconds spent measuring again (default 120)")
    p.add_argument("--wait-idle", type=float, default=0.0, metavar="SECONDS",
                   help="first wait up to SECONDS for other processes to leave the CPUs idle "
                        "(< 0.25 cores busy); default 0: start at once")
    p.add_argument("--load", type=int, default=0, metavar="K",
                   help="K processes keep one core each busy throughout (a loaded machine, on purpose); "
                        "no window is measured again for it")
    p.add_argument("--no-doc", action="store_true", help="do not rewrite docs/benchmarks.md")
    args = p.parse_args(argv)
    if args.load < 0:
        p.error("--load is a number of processes, 0 or more")
    if args.load:
        args.retries = 0
    args.reps = args.reps or (2 if args.quick else 9)
    args.window = args.window or (0.5 if args.quick else 1.5)
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    started = _dt.datetime.now().astimezone()
    t0 = time.perf_counter()
    command = H.command_line(__file__, sys.argv[1:] if argv is None else argv)
    processes = H.ProcessSet()
    results: dict[str, list[dict | None]] = {}
    rejected: dict[str, list[list[float]]] = {}
    errors: dict[str, str] = {}
    sides: dict[str, dict[str, Any]] = {}
    incomplete: str | None = None
    machine: dict[str, Any] = {}
    try:
        with H.GlobalTimeout(args.timeout, processes), base_checkout(args.base, args.base_path) as base_root:
            roots = {"base": base_root, "head": ROOT, "control": ROOT}
            envs = {side: H.python_env(root) for side, root in roots.items()}
            for side, root in roots.items():
                sides[side] = side_info(side, root, args.base if side == "base" else None, envs[side])
                H.progress(f"{side}: {side_name(sides[side])} {sides[side]['subject'] or ''}")
            if args.wait_idle > 0:
                H.wait_for_idle_start(args.wait_idle)
            machine = H.machine_info(PACKAGES)
            H.progress(f"bench_ab: {args.reps} rounds x {args.window} s windows; machine: "
                       f"{H.format_machine(machine)}")
            start_load(processes, args.load, args.timeout)
            servers = start_servers(processes, roots, envs)
            workers = {key: processes.add(H.ClientWorker(
                           key, env=envs[key.rsplit("/", 1)[-1]] if cfg.ours else None,
                           log_path=LOG_DIR / f"ab-client-{key.replace('/', '-')}.log")).start()
                       for cfg in CONFIGS for key in cfg.keys(0)}
            run_rounds(args, servers, workers, results, rejected, errors, t0)
    except H.GlobalTimeoutError as exc:
        incomplete = str(exc)
        H.progress(f"GLOBAL TIMEOUT: {exc}; writing what was measured")
    except KeyboardInterrupt:
        incomplete = "interrupted"
        H.progress("interrupted; writing what was measured")
    finally:
        processes.stop_all()

    data = build_results(args, command, started, time.perf_counter() - t0, machine, sides, results,
                         rejected, errors, incomplete)
    results_path, tag = (LOADED_RESULTS_PATH, LOADED_DOC_TAG) if args.load else (RESULTS_PATH, DOC_TAG)
    H.write_json(results_path, data)
    H.progress(f"wrote {results_path.relative_to(ROOT)}")
    text = render(data)
    print("\n" + text, flush=True)
    if not args.no_doc and not incomplete:
        H.update_markdown_section(DOC_PATH, tag, text, DOC_INTRO)
        H.progress(f"rewrote the '{tag}' section of {DOC_PATH.relative_to(ROOT)}")
    return 1 if incomplete else 0


def start_load(processes: H.ProcessSet, count: int, seconds: float) -> None:
    """``count`` processes that each keep a core busy for at most ``seconds`` (``--load``)."""
    spin = f"import time\nend = time.monotonic() + {seconds}\nwhile time.monotonic() < end:\n    pass\n"
    for i in range(count):
        processes.add(H.ManagedProcess(f"load-{i}", [sys.executable, "-c", spin],
                                       log_path=LOG_DIR / f"ab-load-{i}.log")).start()
    if count:
        H.progress(f"{count} process(es) keep a core busy each (--load)")


def start_servers(processes: H.ProcessSet, roots: dict[str, Path], envs: dict[str, dict[str, str]]
                  ) -> dict[str, H.Server]:
    """Our CartPole server with and without polling for each side (its own checkout as
    ``PYTHONPATH`` and working directory), and the official one; waited for until ready."""
    servers: dict[str, H.Server] = {}
    for side, root in roots.items():
        for key, flags in (("ours", ()), ("ours_nopoll", bench_single.NO_POLL_FLAGS)):
            servers[f"{key}/{side}"] = H.Server(
                f"{key}/{side}",
                lambda p, flags=flags: [sys.executable, "-m", "openenv_gym.cli", "serve", "CartPole-v1",
                                        "--port", p, *flags],
                ready="http:/health", env=envs[side], cwd=root, log_path=LOG_DIR / f"ab-{key}-{side}.log")
    servers["official"] = H.Server("official", lambda p: H.uvicorn_argv("_official_env:cartpole_app", p,
                                                                        factory=True),
                                   ready="http:/health", env=H.python_env(), cwd=ROOT,
                                   log_path=LOG_DIR / "ab-official.log")
    for srv in servers.values():
        processes.add(srv).start()
    for key, srv in servers.items():
        if not srv.wait_ready(60.0):
            raise RuntimeError(f"server {key} ({' '.join(H.portable_argv(srv.argv))}) failed: {srv.error}")
    H.progress("servers ready: " + ", ".join(f"{k}={s.pid}:{s.port}" for k, s in servers.items()))
    return servers


def run_rounds(args: argparse.Namespace, servers: dict[str, H.Server], workers: dict[str, H.ClientWorker],
               results: dict[str, list[dict | None]], rejected: dict[str, list[list[float]]],
               errors: dict[str, str], t0: float) -> None:
    """Every config in every round (the schedule in the module docstring), filling ``results``
    (one window or None per round, per key), ``rejected`` (the other-load of discarded windows)
    and ``errors`` (a failed key is skipped from then on)."""
    schedule = list(H.interleaved(CONFIGS, args.reps))
    per_config_s = len(SIDES) * (args.window + bench_single.window_warmup_s(args.window) + 1.0)
    retry_spent = 0.0
    fresh_for = 0
    for k, (rep, cfg) in enumerate(schedule):
        if rep != fresh_for:
            restart_sides(servers, workers, rep)
            fresh_for = rep
        keys = cfg.keys(rep)
        windows = measure_config(cfg, keys, args, servers, workers, errors)
        discarded: list[float] = []
        while (_other_load(windows) > LOADED_CORES and len(discarded) < args.retries
               and retry_spent < args.retry_budget):
            left = args.timeout - (time.perf_counter() - t0) - (len(schedule) - k) * per_config_s
            if left < 2 * per_config_s + 15:
                break
            discarded.append(_other_load(windows))
            t_retry = time.perf_counter()
            H.wait_for_idle(min(10.0, left / 4), threshold_cores=LOADED_CORES, consecutive=2, sample_s=0.5)
            H.progress(f"    measuring {cfg.name} again: other processes used {discarded[-1]:.2f} cores")
            windows = measure_config(cfg, keys, args, servers, workers, errors)
            retry_spent += time.perf_counter() - t_retry
        for key, window in windows.items():
            results.setdefault(key, []).append(window)
            rejected.setdefault(key, []).append(discarded)
            if window is None:
                H.progress(f"[{k + 1}/{len(schedule)}] round {rep + 1} {key}: FAILED {errors.get(key, '')[-300:]}")
                continue
            load = window.get("other_load_cores") or 0
            H.progress(f"[{k + 1}/{len(schedule)}] round {rep + 1} {key:22s} "
                       f"{H.fmt(window['steps_per_s'] * cfg.env_steps):>8s} {GROUPS[cfg.group][1]}  "
                       f"cpu cli/srv {H.fmt(window['client_cpu_us_per_step'])}/"
                       f"{H.fmt(window['server_cpu_us_per_step'])} µs/step"
                       + (f"  (other load {load:.2f} cores)" if load > 0.1 else ""))


def restart_sides(servers: dict[str, H.Server], workers: dict[str, H.ClientWorker], rep: int) -> None:
    """New server and client processes for every side, started in an order that moves
    one side on each round (the anchors' processes carry on)."""
    order = SIDES[rep % len(SIDES):] + SIDES[:rep % len(SIDES)]
    restarted: dict[str, H.Server] = {}
    for side in order:
        for key, srv in servers.items():
            if key.endswith(f"/{side}"):
                srv.stop()
                restarted[key] = srv.start()
        for key, worker in workers.items():
            if key.endswith(f"/{side}"):
                worker.stop()
                worker.start()
    for key, srv in restarted.items():
        if not srv.wait_ready(60.0):
            raise RuntimeError(f"server {key} ({' '.join(H.portable_argv(srv.argv))}) failed: {srv.error}")
    H.progress(f"round {rep + 1}: fresh processes, started {' → '.join(order)}")


def _other_load(windows: dict[str, dict | None]) -> float:
    """The most CPU other processes used during any of ``windows``, in cores."""
    return max([w.get("other_load_cores") or 0.0 for w in windows.values() if w] or [0.0])


def measure_config(cfg: Config, keys: list[str], args: argparse.Namespace, servers: dict[str, H.Server],
                   workers: dict[str, H.ClientWorker], errors: dict[str, str]) -> dict[str, dict | None]:
    """One window per key of ``cfg``, back to back (None for a key that failed, now or before)."""
    windows: dict[str, dict | None] = {}
    for key in keys:
        if key in errors:
            windows[key] = None
            continue
        side = key.rsplit("/", 1)[-1] if cfg.ours else None
        srv = servers[f"{cfg.server}/{side}" if side else cfg.server] if cfg.server else None
        params = {**cfg.params, **({"base_url": srv.base_url} if srv else {})}
        try:
            _, windows[key] = workers[key].measure(
                cfg.client, params, server=srv, window_s=args.window, max_iters=10 ** 6,
                warmup_s=bench_single.window_warmup_s(args.window), warmup_iters=300)
        except H.WorkerError as exc:
            errors[key] = str(exc)
            windows[key] = None
    return windows


# --------------------------------------------------------------- results ----

def build_results(args: argparse.Namespace, command: str, started: _dt.datetime, duration: float,
                  machine: dict[str, Any], sides: dict[str, dict[str, Any]], results: dict[str, list],
                  rejected: dict[str, list], errors: dict[str, str], incomplete: str | None) -> dict[str, Any]:
    """Everything measured, its summaries and the paired ratios (JSON-ready)."""
    def per_round(key: str, metric: str = "steps_per_s") -> list[float | None]:
        return [w.get(metric) if w else None for w in results.get(key, [])]

    def paired(num: str, den: str, metric: str = "steps_per_s") -> dict[str, Any]:
        ratios = H.paired_ratios(per_round(num, metric), per_round(den, metric))
        return {**H.summarize(ratios), "above_1": sum(r > 1 for r in ratios), "below_1": sum(r < 1 for r in ratios)}

    summary = {key: {m: H.summarize([v for v in per_round(key, m) if v is not None]) for m in METRICS}
               for key in results}
    ratios: dict[str, Any] = {}
    for cfg in CONFIGS:
        if not cfg.ours:
            continue
        base, head = f"{cfg.name}/base", f"{cfg.name}/head"
        anchor = GROUPS[cfg.group][2]
        metrics = ("steps_per_s", "client_cpu_us_per_step", "server_cpu_us_per_step")
        ratios[cfg.name] = {
            "head_vs_base": {m: paired(head, base, m) for m in metrics},
            "control_vs_head": {m: paired(f"{cfg.name}/control", head, m) for m in metrics},
            "vs_anchor": {side: paired(f"{cfg.name}/{side}", anchor) for side in SIDES},
            "anchor": anchor,
            "target": TARGETS[cfg.name],
        }
    return {
        "benchmark": "ab", "command": command, "started": started.isoformat(timespec="seconds"),
        "duration_s": round(duration, 1), "incomplete": incomplete,
        "args": {"reps": args.reps, "window_s": args.window, "retries": args.retries, "load": args.load,
                 "retry_budget": args.retry_budget, "wait_idle": args.wait_idle, "timeout_s": args.timeout},
        "machine": machine, "sides": sides,
        "configs": {cfg.name: {"group": cfg.group, "label": cfg.label, "client": cfg.client,
                               "params": cfg.params, "env_steps": cfg.env_steps} for cfg in CONFIGS},
        "windows": results, "rejected_windows_other_load": rejected, "errors": errors,
        "summary": summary, "ratios": ratios,
    }


def _scaled(stats: dict[str, Any], factor: float) -> dict[str, Any]:
    return {**stats, **{k: stats[k] * factor for k in ("median", "min", "max") if stats.get(k) is not None}}


def _rounds(ratio: dict[str, Any], better: str) -> str:
    """``head <better> in k of n rounds`` of paired head / base ratios (``better``:
    "faster" counts ratios above 1, "cheaper" those below 1)."""
    if not ratio.get("n"):
        return "not measured"
    k = ratio["above_1"] if better == "faster" else ratio["below_1"]
    return f"head {better} in {k} of {ratio['n']} rounds"


def _reading(head_base: dict[str, Any], control_head: dict[str, Any], better: str) -> str:
    """One metric's median head / base ratio, the rounds head was ``better`` in, and whether
    that median lies within the A/A noise: as far from 1, either way, as the A/A (control /
    head) ratio that fell farthest from 1 in this run."""
    if not head_base.get("n"):
        return "not measured"
    text = f"{H.fmt(head_base['median'])}x ({_rounds(head_base, better)}"
    if control_head.get("n"):
        noise = max(abs(math.log(control_head["min"])), abs(math.log(control_head["max"])))
        within = abs(math.log(head_base["median"])) <= noise
        text += f"; A/A noise {H.fmt(math.exp(-noise))}–{H.fmt(math.exp(noise))}x: {'within' if within else 'beyond'}"
    return text + ")"


def render(data: dict[str, Any]) -> str:
    """The ``ab`` section of docs/benchmarks.md."""
    sides, a, machine = data["sides"], data["args"], data["machine"]
    names = {side: side_name(info) for side, info in sides.items()}
    names["control"] = "(head's code again)"
    loaded_on_purpose = a.get("load", 0)
    results_name = (LOADED_RESULTS_PATH if loaded_on_purpose else RESULTS_PATH).name
    lines = [
        "## A/B: two checkouts of openenv-gym side by side"
        + (f", on a machine with {loaded_on_purpose} core(s) kept busy" if loaded_on_purpose else ""),
        "",
        f"Command: `{data['command']}` ({a['reps']} rounds x {a['window_s']} s windows; median [min–max] "
        f"over the rounds). Base: {names.get('base')}; head: {names.get('head')} (commit subjects in "
        f"`benchmarks/results/{results_name}`). Machine: {H.format_machine(machine) if machine else '-'}. "
        f"Started {data['started'][:19]}, load average {machine.get('loadavg_at_start')}.",
        "",
        "This VM runs CPU-bound Python at a speed that drifts from day to day by more than most changes "
        "gain or lose, so a before/after comparison of openenv-gym itself is measured in one run: both "
        "revisions on one machine, each with its own servers (`python -m openenv_gym.cli serve CartPole-v1`, "
        "with busy polling and with `--busy-poll 0`) and its own client processes, every process importing "
        "its side's checkout; the benchmark code is the same for both. A third side, control, runs the "
        "head's code again with servers and clients of its own: control / head is an A/A comparison, "
        "how far two measurements of the same code fall apart in this run, the noise to read head / base "
        "against. In each round the sides of a config run back to back, starting one side later each "
        "round, and the anchors of `bench_single.py` and `bench_vector.py` run in the same rounds: ratios "
        "are paired per round. "
        "CPU per step is per `step()` call (a vector step of 64 env-steps in the vector table): client "
        "from `time.process_time()`, server from `/proc/<pid>/stat`; with busy polling it includes the "
        "polling, so it follows the wall time; without polling it is the work done, the figure least "
        "sensitive to the machine's wake-up latency.",
        "",
    ]
    if loaded_on_purpose:
        lines += [f"Loaded on purpose (`--load {loaded_on_purpose}`): {loaded_on_purpose} process(es) "
                  f"spinning on a core each for the whole run, as other work on a shared machine would, "
                  f"so every client and server below shares the remaining cores; no window was measured "
                  f"again for the load.", ""]
    loads = [w["other_load_cores"] for ws in data["windows"].values() for w in ws
             if w and w.get("other_load_cores") is not None]
    if loads:
        s = H.summarize(loads)
        redone = sum(len(r) for rs in data["rejected_windows_other_load"].values() for r in rs)
        loaded = sum(x > LOADED_CORES for x in loads)
        lines += [f"Background load during the windows (CPU used by other processes, in cores, of "
                  f"{machine.get('cpus')}): median {s['median']:.2f}, max {s['max']:.2f}; {redone} window(s) "
                  f"measured again because of it; {loaded} of {len(loads)} kept windows ran with more than "
                  f"{LOADED_CORES} cores of it.", ""]
        if loaded and not loaded_on_purpose:
            lines += [f"**Warning: in {loaded} of {len(loads)} windows the client and server under test "
                      f"shared the cores with other processes: their figures swing with that load, and "
                      f"busy polling, which needs a core for each side, suffers most. The per-round ratios "
                      f"and the CPU per step without polling are the figures to read; rerun on an "
                      f"otherwise idle machine to confirm a difference under 10-20%.**", ""]
    summary, ratios = data["summary"], data["ratios"]
    for group, (title, unit, anchor, anchor_name) in GROUPS.items():
        factor = NUM_ENVS if group == "vector" else 1
        lines += [f"### {title}", "",
                  f"| config | {unit} | client CPU µs/step | server CPU µs/step | {unit} / {anchor_name} "
                  f"(target) |", "|---|---|---|---|---|"]
        for cfg in (c for c in CONFIGS if c.group == group):
            if not cfg.ours:
                continue
            r = ratios[cfg.name]
            for side in SIDES:
                s = summary.get(f"{cfg.name}/{side}")
                if not s:
                    continue
                lines.append(f"| {cfg.label}, {side} {names[side]} | {H.fmt_mmm(_scaled(s['steps_per_s'], factor))} "
                             f"| {H.fmt_mmm(s['client_cpu_us_per_step'])} | {H.fmt_mmm(s['server_cpu_us_per_step'])} "
                             f"| {H.fmt_mmm(r['vs_anchor'][side])}x (≥ {H.fmt(r['target'])}x) |")
            for key, label in (("head_vs_base", "**head / base**"), ("control_vs_head", "control / head (A/A)")):
                rr = r[key]
                lines.append(f"| {cfg.label}, {label}, paired per round | {H.fmt_mmm(rr['steps_per_s'])}x | "
                             f"{H.fmt_mmm(rr['client_cpu_us_per_step'])}x | "
                             f"{H.fmt_mmm(rr['server_cpu_us_per_step'])}x | - |")
        s = summary.get(anchor)
        if s:
            label = next(c.label for c in CONFIGS if c.name == anchor)
            lines.append(f"| {label} | {H.fmt_mmm(_scaled(s['steps_per_s'], factor))} | "
                         f"{H.fmt_mmm(s['client_cpu_us_per_step'])} | {H.fmt_mmm(s['server_cpu_us_per_step'])} "
                         f"| 1 |")
        lines.append("")
    lines += ["### Reading", ""]
    for cfg in CONFIGS:
        if not cfg.ours:
            continue
        hb, aa = ratios[cfg.name]["head_vs_base"], ratios[cfg.name]["control_vs_head"]
        title = GROUPS[cfg.group][0].split(",")[0]
        lines.append(f"- {title}, {cfg.label}: head / base {GROUPS[cfg.group][1]} "
                     f"{_reading(hb['steps_per_s'], aa['steps_per_s'], 'faster')}; client CPU per step "
                     f"{_reading(hb['client_cpu_us_per_step'], aa['client_cpu_us_per_step'], 'cheaper')}; "
                     f"server CPU per step "
                     f"{_reading(hb['server_cpu_us_per_step'], aa['server_cpu_us_per_step'], 'cheaper')}.")
    lines += ["", "A head / base median within the A/A noise is no difference this run can show; beyond "
              "it, a difference larger than two measurements of the same code showed. The anchor does not "
              "depend on the side, so each round's head / base ratio of an ours / anchor ratio is that round's "
              "head / base ratio of steps/s: the first column of the head / base rows answers whether a ratio "
              "of the sections above fell."]
    if data["errors"]:
        lines += ["", "Failed: " + "; ".join(f"`{k}`: {H.portable_text(v).strip().splitlines()[-1]}"
                                             for k, v in data["errors"].items())]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.exit(main())
