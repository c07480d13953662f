#!/usr/bin/env python
"""Vector throughput: RemoteVectorEnv vs Gymnasium's vector envs vs the official client.

    python benchmarks/bench_vector.py            # 3 reps x 1.5 s windows, ~6 min
    python benchmarks/bench_vector.py --reps 5   # ~10 min
    python benchmarks/bench_vector.py --quick    # 1 rep x 0.6 s windows, ~2-3 min

Env-steps/s for N = 1, 8, 32, 64, side by side in one run (reps interleaved),
every server and every client in its own process on 127.0.0.1, stopped by PID:

- Gymnasium ``SyncVectorEnv`` in the client process: the anchor (no network, no
  process hop: what a remote env's steps cost is on top of that);
- ``RemoteVectorEnv`` batched (msgpack) with busy polling (our default on
  loopback) and without it (client ``busy_poll=0`` against a server started with
  ``--busy-poll 0``), and sessions (msgpack, JSON), against ``openenv-gym serve``;
- Gymnasium ``AsyncVectorEnv`` (shared memory, one worker process per env);
- the official ``openenv`` client: N ``GenericEnvClient`` sessions stepped
  concurrently (one asyncio loop) against ``openenv``'s own ``create_app``.

Neither Gymnasium's vector envs nor the official stack poll: the batched rows
without polling are the like-for-like comparison.

For CartPole-v1 and an 84x84x4 uint8 random-pixel env (``_envs.RandomImageEnv``).
Writes ``benchmarks/results/vector.json``, ``docs/benchmarks_vector.png`` and the
``vector`` section of ``docs/benchmarks.md`` (not with ``--no-doc``, nor after a
global timeout).
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as _dt
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))

import _harness as H  # noqa: E402

RESULTS_PATH = HERE / "results" / "vector.json"
LOG_DIR = HERE / "results" / "logs"
DOC_PATH = ROOT / "docs" / "benchmarks.md"
PLOT_PATH = ROOT / "docs" / "benchmarks_vector.png"
DOC_TAG = "vector"
DOC_INTRO = "# Benchmarks\n"
NS = (1, 8, 32, 64)
#: Rows of the tables, in order; the first is the anchor.
KINDS = {
    "sync": "gymnasium SyncVectorEnv (in-process, the anchor)",
    "batched": "RemoteVectorEnv batched (msgpack), busy polling (default)",
    "batched_nopoll": "RemoteVectorEnv batched (msgpack), no polling",
    "batched_socket": "RemoteVectorEnv batched (msgpack), busy polling, arrays through the socket (no shared section)",
    "batched_python": "RemoteVectorEnv batched (msgpack), no polling, main port (pure-Python fallback)",
    "batched_v1": "RemoteVectorEnv batched (msgpack version 1 frames: arrays inside the message), no polling",
    "sessions_msgpack": "RemoteVectorEnv sessions (msgpack)",
    "sessions_json": "RemoteVectorEnv sessions (JSON)",
    "async": "gymnasium AsyncVectorEnv (shared memory, N worker processes)",
    "official": "official openenv client, N sessions",
}
#: ``RemoteVectorEnv`` keyword arguments of our kinds; ``busy_poll=0`` also picks the
#: server started with ``--busy-poll 0``; ``native=False`` stays on its main port;
#: ``shared_memory=False`` takes the arrays of replies through the socket, not a shared
#: section; ``msgpack_version=1`` is a client of the version before frames carried arrays after
#: the message (it offers only ``openenv-gym.msgpack.v1``).
REMOTE = {
    "batched": {"mode": "batched", "encoding": "msgpack"},
    "batched_nopoll": {"mode": "batched", "encoding": "msgpack", "busy_poll": 0.0},
    "batched_socket": {"mode": "batched", "encoding": "msgpack", "shared_memory": False},
    "batched_python": {"mode": "batched", "encoding": "msgpack", "busy_poll": 0.0, "native": False},
    "batched_v1": {"mode": "batched", "encoding": "msgpack", "busy_poll": 0.0, "msgpack_version": 1},
    "sessions_msgpack": {"mode": "sessions", "encoding": "msgpack"},
    "sessions_json": {"mode": "sessions", "encoding": "json"},
}
#: (label, numerator, denominator, minimum) of the per-rep paired ratios; SyncVectorEnv
#: first. Busy polling runs on our side only, so each target is set with polling and without.
TARGETS = [
    ("CartPole batched N=64 / SyncVectorEnv N=64", "cartpole/batched/64", "cartpole/sync/64", 0.5),
    ("CartPole batched, no polling, N=64 / SyncVectorEnv N=64",
     "cartpole/batched_nopoll/64", "cartpole/sync/64", 0.4),
    ("CartPole batched N=64 / AsyncVectorEnv N=64", "cartpole/batched/64", "cartpole/async/64", 5.0),
    ("CartPole batched, no polling, N=64 / AsyncVectorEnv N=64",
     "cartpole/batched_nopoll/64", "cartpole/async/64", 4.0),
    ("CartPole batched N=64 / official client, 64 sessions",
     "cartpole/batched/64", "cartpole/official/64", 20.0),
    ("CartPole batched, no polling, N=64 / official client, 64 sessions",
     "cartpole/batched_nopoll/64", "cartpole/official/64", 15.0),
    ("image batched N=8 / AsyncVectorEnv N=8", "image/batched/8", "image/async/8", 1.5),
    ("image batched, no polling, N=8 / AsyncVectorEnv N=8",
     "image/batched_nopoll/8", "image/async/8", 1.5),
    ("CartPole batched, no polling, main port (pure-Python fallback), N=64 / SyncVectorEnv N=64",
     "cartpole/batched_python/64", "cartpole/sync/64", None),
    ("image batched, no polling, main port (pure-Python fallback), N=8 / AsyncVectorEnv N=8",
     "image/batched_python/8", "image/async/8", None),
    ("CartPole batched, no polling, N=64: native listener / main port",
     "cartpole/batched_nopoll/64", "cartpole/batched_python/64", None),
    ("image batched, no polling, N=8: native listener / main port",
     "image/batched_nopoll/8", "image/batched_python/8", None),
    ("CartPole batched N=64: shared section / socket",
     "cartpole/batched/64", "cartpole/batched_socket/64", None),
    ("image batched N=8: shared section / socket", "image/batched/8", "image/batched_socket/8", None),
    ("image batched N=8, arrays through the socket (no shared section) / AsyncVectorEnv N=8",
     "image/batched_socket/8", "image/async/8", None),
    ("CartPole batched, no polling, N=64: msgpack version 2 / version 1 frames",
     "cartpole/batched_nopoll/64", "cartpole/batched_v1/64", None),
    ("image batched, no polling, N=8: msgpack version 2 / version 1 frames",
     "image/batched_nopoll/8", "image/batched_v1/8", None),
    ("image batched, no polling, N=32: msgpack version 2 / version 1 frames",
     "image/batched_nopoll/32", "image/batched_v1/32", None),
]
ENVS = {"cartpole": "CartPole-v1", "image": "84x84x4 uint8 random pixels"}
PACKAGES = ["gymnasium", "numpy", "websockets", "msgpack", "uvicorn", "starlette", "openenv", "openenv-gym"]
N_ACTIONS = 1024


# ---------------------------------------------------------- worker clients ----

def _make_env(env: str) -> Any:
    import gymnasium as gym
    from _envs import RandomImageEnv

    return gym.make("CartPole-v1") if env == "cartpole" else RandomImageEnv()


class VecClient:
    """A vector env in the worker process; one ``step(i)`` is one vector step.

    ``kind`` ``"sync"`` / ``"async"``: Gymnasium's vector env; any other kind: a
    ``RemoteVectorEnv`` on ``base_url`` with the keyword arguments ``remote``.
    """

    def __init__(self, kind: str, env: str, num_envs: int, base_url: str | None = None,
                 remote: dict | None = None) -> None:
        self.kind, self.env, self.num_envs, self.base_url = kind, env, num_envs, base_url
        self.remote = dict(remote or {})
        self.msgpack_version = self.remote.pop("msgpack_version", 2)
        self.envs: Any = None
        self._offers: Any = None

    def open(self) -> dict:
        import gymnasium as gym

        if self.kind in ("sync", "async"):
            cls = gym.vector.SyncVectorEnv if self.kind == "sync" else gym.vector.AsyncVectorEnv
            self.envs = cls([lambda: _make_env(self.env)] * self.num_envs)
        else:
            import openenv_gym
            from openenv_gym.client import options

            if self.msgpack_version == 1:  # this worker's client offers version 1 only, until close()
                self._offers = options.OFFERS["msgpack"]
                options.OFFERS["msgpack"] = (options.OFFERS["msgpack"][-1],)  # type: ignore[index]
            self.envs = openenv_gym.RemoteVectorEnv(self.base_url, self.num_envs, message_timeout=30,
                                                    **self.remote)
        self.envs.reset(seed=0)
        self.envs.action_space.seed(0)
        self.actions = [self.envs.action_space.sample() for _ in range(N_ACTIONS)]
        return {"obs": str(self.envs.observation_space)[:80]}

    def step(self, i: int) -> int:
        self.envs.step(self.actions[i % N_ACTIONS])
        return 1

    def close(self) -> None:
        if self.envs is not None:
            self.envs.close()
            self.envs = None
        if self._offers is not None:
            from openenv_gym.client import options

            options.OFFERS["msgpack"], self._offers = self._offers, None  # type: ignore[index]


class OfficialClient:
    """N ``openenv.GenericEnvClient`` sessions stepped concurrently on one event loop."""

    def __init__(self, base_url: str, num_envs: int, n_actions: int) -> None:
        self.base_url, self.num_envs, self.n_actions = base_url, num_envs, n_actions
        self.loop = asyncio.new_event_loop()
        asyncio.set_event_loop(self.loop)  # the official client looks the loop up itself
        self.clients: list = []

    def open(self) -> dict:
        import numpy as np
        from openenv import GenericEnvClient

        async def connect() -> None:
            for _ in range(self.num_envs):
                client = GenericEnvClient(base_url=self.base_url, message_timeout_s=30)
                await client.connect()
                self.clients.append(client)
            await asyncio.gather(*(c.reset(seed=k) for k, c in enumerate(self.clients)))

        self.loop.run_until_complete(connect())
        self.actions = np.random.default_rng(0).integers(0, self.n_actions, (N_ACTIONS, self.num_envs)).tolist()
        return {}

    def step(self, i: int) -> int:
        actions = self.actions[i % N_ACTIONS]

        async def one(client: Any, action: int) -> None:
            result = await client.step({"action": action})
            if result.done:
                await client.reset()

        self.loop.run_until_complete(asyncio.gather(*(one(c, a) for c, a in zip(self.clients, actions))))
        return 1

    def close(self) -> None:
        async def close_all() -> None:
            await asyncio.gather(*(c.close() for c in self.clients), return_exceptions=True)

        self.loop.run_until_complete(close_all())
        self.clients = []
        self.loop.close()


def official_cartpole_app():
    """uvicorn ``--factory``: the official server for CartPole-v1, room for 64 sessions."""
    import _official_env as O
    from openenv.core.env_server import create_app

    return create_app(O.CartPoleEnvironment, O.CartPoleAction, O.CartPoleObservation,
                      env_name="cartpole_bench", max_concurrent_envs=max(NS))


def official_image_app():
    """uvicorn ``--factory``: the official server for the image env, room for 64 sessions."""
    import _official_env as O
    from openenv.core.env_server import create_app

    return create_app(O.ImageEnvironment, O.ImageAction, O.ImageObservation,
                      env_name="image84_bench", max_concurrent_envs=max(NS))


# ------------------------------------------------------------------- main ----

def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="1 rep x 0.6 s windows")
    p.add_argument("--reps", type=int, default=None, help="reps per config (default 3, quick 1)")
    p.add_argument("--window", type=float, default=None,
                   help="seconds per timed window (default 1.5, quick 0.6)")
    p.add_argument("--envs", default="cartpole,image", help="comma-separated subset of cartpole,image")
    p.add_argument("--timeout", type=float, default=1800.0, help="global timeout, seconds")
    p.add_argument("--no-doc", action="store_true", help="do not rewrite docs/benchmarks.md and its plot")
    p.add_argument("--wait-idle", type=float, default=0.0, metavar="SECONDS",
                   help="first wait up to SECONDS for other processes to leave the CPUs idle "
                        "(< 0.25 cores busy); default 0: start at once")
    args = p.parse_args(argv)
    args.reps = args.reps or (1 if args.quick else 3)
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
    H.progress(f"bench_vector: {args.reps} reps x {args.window} s; machine: {H.format_machine(machine)}")
    envs = [e for e in args.envs.split(",") if e in ENVS]
    py_env = H.python_env()

    def ours(env: str, *flags: str) -> Any:
        return lambda p: H.openenv_gym_argv("serve", env, "--port", p, "--max-sessions", 256, *flags)

    def official(app: str) -> Any:
        return lambda p: H.uvicorn_argv(app, p, factory=True)

    server_argv = {
        "ours/cartpole": ours("CartPole-v1"),
        "ours_nopoll/cartpole": ours("CartPole-v1", "--busy-poll", "0"),
        "official/cartpole": official("bench_vector:official_cartpole_app"),
        "ours/image": ours("_envs:make_image_env"),
        "ours_nopoll/image": ours("_envs:make_image_env", "--busy-poll", "0"),
        "official/image": official("bench_vector:official_image_app"),
    }
    configs = [(env, kind, n) for env in envs for n in NS for kind in KINDS]
    processes = H.ProcessSet()
    servers: dict[str, H.Server] = {}
    # One value per rep (None: failed or skipped), so ratios pair the reps.
    results: dict[str, list] = {f"{e}/{k}/{n}": [] for e, k, n in configs}
    errors: dict[str, str] = {}
    incomplete = None
    try:
        with H.GlobalTimeout(args.timeout, processes):
            for key, fn in server_argv.items():
                if key.split("/")[1] not in envs:
                    continue
                servers[key] = processes.add(H.Server(key, fn, ready="http:/health", env=py_env, cwd=ROOT,
                                                      log_path=LOG_DIR / f"vector-{key.replace('/', '-')}.log")).start()
            for key, srv in servers.items():
                if not srv.wait_ready(60):
                    raise RuntimeError(f"server {key} failed: {srv.error}")
            worker = processes.add(H.ClientWorker("vector", log_path=LOG_DIR / "vector-client.log")).start()
            total = sum(1 for _ in H.interleaved(configs, args.reps))
            for k, (rep, (env, kind, n)) in enumerate(H.interleaved(configs, args.reps)):
                name = f"{env}/{kind}/{n}"
                if name in errors:
                    results[name].append(None)
                    continue
                remote = REMOTE.get(kind)
                srv: H.Server | None = None
                if kind == "official":
                    srv = servers[f"official/{env}"]
                    client, params = "bench_vector:OfficialClient", {
                        "base_url": srv.base_url, "num_envs": n, "n_actions": 2 if env == "cartpole" else 4}
                elif remote is not None:
                    srv = servers[f"ours{'_nopoll' if remote.get('busy_poll') == 0 else ''}/{env}"]
                    client, params = "bench_vector:VecClient", {"kind": kind, "env": env, "num_envs": n,
                                                                "base_url": srv.base_url, "remote": remote}
                else:  # Gymnasium's vector envs, in the worker process
                    client, params = "bench_vector:VecClient", {"kind": kind, "env": env, "num_envs": n}
                try:
                    _, result = worker.measure(client, params, server=srv, window_s=args.window,
                                               max_iters=10 ** 6, warmup_s=0.2, warmup_iters=50)
                except H.WorkerError as exc:
                    errors[name] = str(exc).strip().splitlines()[-1]
                    results[name].append(None)
                    H.progress(f"[{k + 1}/{total}] {name}: FAILED {errors[name]}")
                    if not worker.alive():
                        worker = processes.add(H.ClientWorker("vector", log_path=LOG_DIR / "vector-client.log")).start()
                    continue
                rate = result["steps_per_s"] * n
                results[name].append(rate)
                H.progress(f"[{k + 1}/{total}] rep {rep + 1} {name:30s} {H.fmt(rate):>9s} env-steps/s")
    except H.GlobalTimeoutError as exc:
        incomplete = str(exc)
    finally:
        processes.stop_all()

    summary = {name: H.summarize(v) for name, v in results.items()}
    ratios = H.target_ratios(results, TARGETS)
    data = {"command": command, "started": started.isoformat(), "duration_s": time.perf_counter() - t0,
            "machine": machine, "reps": args.reps, "window_s": args.window,
            "servers": {key: H.portable_argv(srv.argv) for key, srv in servers.items()},
            "env_steps_per_s": results, "summary": summary, "ratios": ratios, "errors": errors,
            "incomplete": incomplete}
    H.write_json(RESULTS_PATH, data)
    H.progress(f"wrote {RESULTS_PATH.relative_to(ROOT)}")
    text = render(data, envs)
    print("\n" + text)
    if not args.no_doc:
        plot(data, envs)
    if not args.no_doc and not incomplete:
        H.update_markdown_section(DOC_PATH, DOC_TAG, text, DOC_INTRO)
        H.progress(f"rewrote the '{DOC_TAG}' section of {DOC_PATH.relative_to(ROOT)}")
    return 1 if incomplete else 0


def _median(data: dict, name: str) -> float | None:
    return (data["summary"].get(name) or {}).get("median")


def render(data: dict, envs: list[str]) -> str:
    lines = [
        "## Vector envs: env-steps/s against N",
        "",
        f"Command: `{data['command']}` ({data['reps']} reps x {data['window_s']} s windows, reps interleaved; "
        f"median [min–max]). Machine: {H.format_machine(data['machine'])}. Started {data['started'][:19]}, "
        f"load average {data['machine'].get('loadavg_at_start')}.",
        "",
        H.BEFORE_AFTER_NOTE,
        "",
        "Every client in its own process, every server another process on 127.0.0.1: client and server share "
        "the machine's cores. SyncVectorEnv, the anchor, steps the envs in the client process: no network, "
        "no process hop; AsyncVectorEnv runs one worker process per env. Rows marked \"busy polling\" run our "
        "server and RemoteVectorEnv with their defaults, which busy-poll on loopback for up to 1 ms instead "
        "of sleeping between messages ([operations.md](operations.md#busy-polling-on-loopback)); rows marked "
        "\"no polling\" turn it off on both sides (`RemoteVectorEnv(busy_poll=0)` against "
        "`openenv-gym serve --busy-poll 0`, a server of its own), as Gymnasium's vector envs and the official "
        "server and client always run: those rows compare like with like. The sessions rows run against the "
        "polling server; their client drives its connections from an event loop thread, which never polls. "
        "At N=64 AsyncVectorEnv runs 64 processes and the official client 64 sessions on the machine's "
        "cores: weak anchors whose numbers swing widely between runs and within one (see min–max).",
        "",
        f"![env-steps/s against N]({PLOT_PATH.name})",
        "",
    ]
    for env in envs:
        lines += [f"### {ENVS[env]}", "", "| client | " + " | ".join(f"N={n}" for n in NS) + " |",
                  "|---|" + "---|" * len(NS)]
        for kind, label in KINDS.items():
            cells = [data["errors"].get(f"{env}/{kind}/{n}") and "failed"
                     or H.fmt_mmm(data["summary"][f"{env}/{kind}/{n}"])
                     for n in NS]
            lines.append(f"| {label} | " + " | ".join(cells) + " |")
        lines.append("")
    lines += ["### Targets (per-rep paired ratios of env-steps/s, median [min–max])", "",
              "| ratio | target | measured | met |", "|---|---|---|---|"]
    for label, r in data["ratios"].items():
        if r["numerator"].split("/")[0] in envs:
            lines.append(H.target_row(label, r))
    if data["errors"]:
        lines += ["", "Failed configs: " + "; ".join(f"`{k}`: {v}" for k, v in data["errors"].items())]
    return "\n".join(lines) + "\n"


def plot(data: dict, envs: list[str]) -> None:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        H.progress("matplotlib not installed: no plot (pip install 'openenv-gym[bench]')")
        return
    fig, axes = plt.subplots(1, len(envs), figsize=(6 * len(envs), 4.5), squeeze=False)
    for ax, env in zip(axes[0], envs):
        for kind, label in KINDS.items():
            ys = [_median(data, f"{env}/{kind}/{n}") for n in NS]
            pts = [(n, y) for n, y in zip(NS, ys) if y]
            if pts:
                ax.plot(*zip(*pts), marker="o", label=label,
                        linestyle="--" if kind.endswith("_nopoll") else "-")
        ax.set(xscale="log", yscale="log", xlabel="N (sub-envs)", ylabel="env-steps/s", title=ENVS[env])
        ax.set_xticks(NS, [str(n) for n in NS])
        ax.grid(True, which="both", alpha=0.3)
    axes[0][0].legend(fontsize=8)
    fig.tight_layout()
    PLOT_PATH.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(PLOT_PATH, dpi=110)
    H.progress(f"wrote {PLOT_PATH.relative_to(ROOT)}")


if __name__ == "__main__":
    sys.exit(main())
