#!/usr/bin/env python
"""Single-env throughput: openenv-gym vs the official OpenEnv stack vs raw WebSocket floors.

    python benchmarks/bench_single.py            # 5 reps x 2.5 s windows, ~5 min
    python benchmarks/bench_single.py --quick    # 2 reps x 0.5 s windows, ~1.5 min

Measured side by side in one run, reps interleaved (rep loop outside the config
loop), every server and every client a separate process on 127.0.0.1 started
here and stopped by PID:

1. CartPole-v1: ``openenv-gym serve CartPole-v1`` + ``RemoteEnv`` (msgpack, json),
   each with busy polling (the default on loopback) and without it (client
   ``busy_poll=0`` against a server started with ``--busy-poll 0``); the official
   stack (``openenv.core.env_server.create_app`` under uvicorn +
   ``GenericEnvClient(...).sync()``); a raw ``websockets`` echo with our step's
   request/reply sizes (the floor). Neither the official stack nor the echo polls,
   so the rows without polling are the like-for-like comparison.
2. 84x84x4 uint8 random-pixel env: openenv-gym (msgpack, with and without polling)
   vs the official stack (nested JSON lists), plus the echo floor for the same sizes.
3. Frameworks: bare ASGI / Starlette / FastAPI echo apps under uvicorn with each
   ``ws=`` implementation, CartPole-sized messages.

Writes ``benchmarks/results/single.json`` (every rep) and rewrites the
``single`` section of ``docs/benchmarks.md`` (not after a global timeout, nor with
``--no-doc``). Server and client logs: ``benchmarks/results/logs/``.

On a shared machine: every window records the CPU that other processes used meanwhile;
a window with more than 0.25 cores of such load is re-measured (``--retries``, within
``--retry-budget``) and any that stay loaded are flagged in the output. ``--wait-idle S``
first waits up to S seconds for the machine to be quiet.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import importlib.util
import shlex
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))

import _harness as H  # noqa: E402

RESULTS_PATH = HERE / "results" / "single.json"
LOG_DIR = HERE / "results" / "logs"
DOC_PATH = ROOT / "docs" / "benchmarks.md"
DOC_TAG = "single"
DOC_INTRO = """# Benchmarks

Throughput of openenv-gym against the official OpenEnv stack and raw transport floors,
measured on 127.0.0.1 with every server and client in its own process. The sections between
`<!-- name:begin -->` / `<!-- name:end -->` markers are rewritten by the scripts in
`benchmarks/`; edit the scripts, not the tables. Method: timed windows with a deadline and an
iteration cap, reps interleaved (the rep loop outside the config loop), median [min–max] over
the reps, ratios paired per rep. On a small shared VM client and server compete for the same
cores, and absolute numbers drift ±10% between runs: compare ratios measured in the same run.
Our server and clients busy-poll on loopback by default, which the official stack, Gymnasium's
vector envs and the echo floors do not: every comparison with them is reported with our
defaults and with polling off on both our sides (`busy_poll=0`, `--busy-poll 0`), measured in
the same run.
"""

# Frame sizes of our msgpack CartPole step (request, reply) and image step reply, measured
# from our client's real frames at the start of every run. These constants are used only if
# that measurement fails (our stack not working); they were measured with the code of
# 2026-11-29 and are reported as "fallback" in the output.
FALLBACK_SIZES = {"cartpole": (25, 124), "image": (25, 28_349)}

PACKAGES = ["openenv-gym", "openenv", "gymnasium", "numpy", "websockets", "msgpack", "uvicorn",
            "starlette", "fastapi", "pydantic", "wsproto", "uvloop", "httptools"]

#: A window during which other processes (or VM steal) used more than this many cores is
#: "loaded": re-measured (``--retries``), and counted in the output if it stays loaded.
LOADED_CORES = 0.25

#: Minimum ratios (medians of the per-rep paired ratios). Busy polling runs on our side only,
#: so every target against the official stack or the echo floor is set twice: with our
#: defaults (polling) and with polling off on both our client and our server.
TARGETS = {
    "ours_vs_official_cartpole": 8.0,
    "ours_nopoll_vs_official_cartpole": 8.0,
    "ours_vs_echo_cartpole": 1.0,
    "ours_nopoll_vs_echo_cartpole": 1.0,
    "ours_vs_official_image": 100.0,
    "ours_nopoll_vs_official_image": 100.0,
}

#: Server flags and client keyword that turn busy polling off on our side.
NO_POLL_FLAGS = ("--busy-poll", "0")
NO_POLL = {"busy_poll": 0.0}
#: Client keyword that keeps our client on the server's main port (uvicorn and the pure-Python
#: framing: what a client gets where picows is not installed or the native port is unreachable).
MAIN_PORT = {"native": False}
#: Name suffix of our configs (and their ratios) -> how they run: on the native listener (our
#: default) with and without busy polling, and on the main port without polling.
VARIANTS = {"": "busy polling", "_nopoll": "no polling",
            "_python": "no polling, main port: the pure-Python fallback"}


@dataclass
class Config:
    name: str
    group: str                      # cartpole | image | framework
    label: str
    server: str                     # key into servers
    client: str                     # "module:Class" for the worker
    params: Callable[[], dict]      # evaluated at each open (sizes are known by then)
    max_iters: int = 200_000
    reps: list = field(default_factory=list)       # one result dict (or None) per rep
    error: str | None = None
    info: dict = field(default_factory=dict)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="2 reps x 0.5 s windows (~1.5 min)")
    p.add_argument("--reps", type=int, default=None, help="reps per config (default 5, quick 2)")
    p.add_argument("--window", type=float, default=None,
                   help="seconds per timed window (default 2.5, quick 0.5)")
    p.add_argument("--timeout", type=float, default=None,
                   help="global timeout in seconds (default 600, quick 150)")
    p.add_argument("--groups", default="cartpole,image,framework",
                   help="comma-separated subset of cartpole,image,framework")
    p.add_argument("--no-doc", action="store_true", help="do not rewrite docs/benchmarks.md")
    p.add_argument("--retries", type=int, default=2,
                   help=f"re-measure a window up to this many times when other processes used "
                        f"more than {LOADED_CORES} cores during it (default 2)")
    p.add_argument("--retry-budget", type=float, default=None, metavar="SECONDS",
                   help="total seconds spent re-measuring loaded windows (default 100, quick 20)")
    p.add_argument("--wait-idle", type=float, default=0.0, metavar="SECONDS",
                   help="first wait up to SECONDS for other processes to leave the CPUs idle "
                        "(< 0.25 cores busy); default 0: start at once")
    args = p.parse_args(argv)
    args.reps = args.reps or (2 if args.quick else 5)
    args.window = args.window or (0.5 if args.quick else 2.5)
    args.timeout = args.timeout or (150.0 if args.quick else 600.0)
    if args.retry_budget is None:
        args.retry_budget = 20.0 if args.quick else 100.0
    args.groups = [g.strip() for g in args.groups.split(",") if g.strip()]
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    started = _dt.datetime.now().astimezone()
    t_start = time.perf_counter()
    command = H.command_line(__file__, sys.argv[1:] if argv is None else argv)
    if args.wait_idle > 0:
        H.wait_for_idle_start(args.wait_idle)
    machine = H.machine_info(PACKAGES)
    H.progress(f"bench_single: {args.reps} reps x {args.window} s windows, groups {args.groups}, "
               f"global timeout {args.timeout:.0f} s")
    H.progress("machine: " + H.format_machine(machine))

    have_wsproto = importlib.util.find_spec("wsproto") is not None
    ws_impls = ["websockets", "websockets-sansio"] + (["wsproto"] if have_wsproto else [])
    notes: list[str] = []
    if not have_wsproto:
        notes.append("uvicorn `ws=\"wsproto\"` skipped: the `wsproto` package is not installed.")
    if importlib.util.find_spec("uvloop") is not None:
        notes.append("Every uvicorn server here (ours, the official stack, the framework echo apps) "
                     "runs on uvloop, which uvicorn picks when it is installed (openenv-gym's "
                     "`server` extra installs it); the raw websockets echo runs on asyncio.")
    else:
        notes.append("uvloop is not installed: every server runs on the asyncio loop.")

    # ---------------------------------------------------------------- plan --
    py_env = H.python_env()
    server_specs: dict[str, dict[str, Any]] = {}

    def server(key: str, argv_fn: Callable[[int], list[str]], ready: str) -> None:
        server_specs[key] = {"argv_fn": argv_fn, "ready": ready}

    def ours(env: str, *flags: str) -> Callable[[int], list[str]]:
        return lambda p: H.openenv_gym_argv("serve", env, "--port", p, *flags)

    if "cartpole" in args.groups:
        server("ours_cartpole", ours("CartPole-v1"), "http:/health")
        server("ours_cartpole_nopoll", ours("CartPole-v1", *NO_POLL_FLAGS), "http:/health")
        server("ours_cartpole_process", ours("CartPole-v1", "--execution", "process"), "http:/health")
        server("official_cartpole", lambda p: H.uvicorn_argv("_official_env:cartpole_app", p, factory=True),
               "http:/health")
    if "image" in args.groups:
        server("ours_image", ours("_envs:make_image_env"), "http:/health")
        server("ours_image_nopoll", ours("_envs:make_image_env", *NO_POLL_FLAGS), "http:/health")
        server("ours_image_process", ours("_envs:make_image_env", "--execution", "process"),
               "http:/health")
        server("official_image", lambda p: H.uvicorn_argv("_official_env:image_app", p, factory=True),
               "http:/health")
    if args.groups:
        server("ws_echo", lambda p: [sys.executable, str(HERE / "_echo.py"), "websockets",
                                     "--port", str(p)], "tcp")
    apps = {"asgi": "_echo:asgi_app", "starlette": "_echo:starlette_app",
            "fastapi": "_echo:fastapi_app"}
    if "framework" in args.groups:
        for app_name, app in apps.items():
            for ws in ws_impls:
                server(f"{app_name}_{ws}", (lambda a, w: lambda p: H.uvicorn_argv(a, p, ws=w))(app, ws),
                       "tcp")

    sizes: dict[str, Any] = {}

    def echo_params(key: str, size_key: str) -> Callable[[], dict]:
        def params() -> dict:
            req, rep = sizes[size_key]["request_bytes"], sizes[size_key]["reply_bytes"]
            return {"url": f"ws://127.0.0.1:{servers[key].port}/echo/{rep}", "request_bytes": req}
        return params

    def url_params(key: str, **extra: Any) -> Callable[[], dict]:
        return lambda: {"base_url": servers[key].base_url, **extra}

    def ours_configs(env: str, encodings: tuple[str, ...]) -> dict[str, Config]:
        """Our client and server for ``env`` in each of :data:`VARIANTS`."""
        out = {}
        for encoding in encodings:
            out[f"ours_{encoding}/{env}"] = Config(
                f"ours_{encoding}/{env}", env, f"openenv-gym, RemoteEnv {encoding}, busy polling (default)",
                f"ours_{env}", "_clients:OursClient", url_params(f"ours_{env}", encoding=encoding))
            out[f"ours_{encoding}_nopoll/{env}"] = Config(
                f"ours_{encoding}_nopoll/{env}", env, f"openenv-gym, RemoteEnv {encoding}, no polling",
                f"ours_{env}_nopoll", "_clients:OursClient",
                url_params(f"ours_{env}_nopoll", encoding=encoding, **NO_POLL))
            out[f"ours_{encoding}_python/{env}"] = Config(
                f"ours_{encoding}_python/{env}", env,
                f"openenv-gym, RemoteEnv {encoding}, no polling, main port (pure-Python fallback)",
                f"ours_{env}_nopoll", "_clients:OursClient",
                url_params(f"ours_{env}_nopoll", encoding=encoding, **NO_POLL, **MAIN_PORT))
        out[f"ours_msgpack_process/{env}"] = Config(
            f"ours_msgpack_process/{env}", env,
            "openenv-gym, RemoteEnv msgpack, busy polling, env in its own process (--execution process)",
            f"ours_{env}_process", "_clients:OursClient", url_params(f"ours_{env}_process", encoding="msgpack"))
        return out

    configs: list[Config] = []
    if "cartpole" in args.groups:
        # Order: the official stack between ours with and without polling, the echo next to
        # ours without polling (the like-for-like pair), so paired per-rep ratios compare
        # windows measured seconds apart (the VM's latency mode drifts over time).
        ours_cp = ours_configs("cartpole", ("msgpack", "json"))
        configs += [
            ours_cp["ours_json/cartpole"],
            ours_cp["ours_msgpack/cartpole"],
            Config("official/cartpole", "cartpole", "official OpenEnv (create_app + GenericEnvClient.sync())",
                   "official_cartpole", "_clients:OfficialClient", url_params("official_cartpole", n_actions=2)),
            ours_cp["ours_msgpack_nopoll/cartpole"],
            Config("ws_echo/cartpole", "cartpole", "raw websockets echo, same sizes (floor)",
                   "ws_echo", "_clients:WsEchoClient", echo_params("ws_echo", "cartpole")),
            ours_cp["ours_msgpack_python/cartpole"],
            ours_cp["ours_json_nopoll/cartpole"],
            ours_cp["ours_json_python/cartpole"],
            ours_cp["ours_msgpack_process/cartpole"],
        ]
    if "image" in args.groups:
        ours_im = ours_configs("image", ("msgpack",))
        configs += [
            ours_im["ours_msgpack/image"],
            Config("official/image", "image", "official OpenEnv, nested JSON lists",
                   "official_image", "_clients:OfficialClient", url_params("official_image", n_actions=4)),
            ours_im["ours_msgpack_nopoll/image"],
            Config("ws_echo/image", "image", "raw websockets echo, same sizes (floor)",
                   "ws_echo", "_clients:WsEchoClient", echo_params("ws_echo", "image")),
            ours_im["ours_msgpack_python/image"],
            ours_im["ours_msgpack_process/image"],
        ]
    if "framework" in args.groups:
        if "ws_echo/cartpole" not in [c.name for c in configs]:
            configs.append(Config("ws_echo/cartpole", "framework", "raw websockets echo (no ASGI)",
                                  "ws_echo", "_clients:WsEchoClient", echo_params("ws_echo", "cartpole")))
        for app_name in apps:
            for ws in ws_impls:
                key = f"{app_name}_{ws}"
                configs.append(Config(f"{app_name}/{ws}", "framework", f"{app_name} under uvicorn ws={ws}",
                                      key, "_clients:WsEchoClient", echo_params(key, "cartpole")))

    processes = H.ProcessSet()
    servers: dict[str, H.Server] = {}
    workers: dict[str, H.ClientWorker] = {}
    incomplete: str | None = None
    try:
        with H.GlobalTimeout(args.timeout, processes):
            # ----------------------------------------------------- servers --
            for key, spec in server_specs.items():
                servers[key] = processes.add(H.Server(
                    key, spec["argv_fn"], ready=spec["ready"], env=py_env, cwd=ROOT,
                    log_path=LOG_DIR / f"single-{key}.log")).start()
            H.progress(f"started {len(servers)} servers: "
                       + ", ".join(f"{k}={s.pid}:{s.port}" for k, s in servers.items()))
            for key, srv in servers.items():
                if not srv.wait_ready(60.0):
                    H.progress(f"SERVER FAILED {key}: {srv.error}")
                else:
                    srv.error = None
            for cfg in configs:
                srv = servers[cfg.server]
                if srv.error:
                    cfg.error = f"server {cfg.server} ({shlex.join(H.portable_argv(srv.argv))}) failed: {srv.error}"
            H.progress("servers ready: " + ", ".join(k for k, s in servers.items() if not s.error))

            # ----------------------------------------------------- workers --
            for cfg in configs:
                workers[cfg.name] = processes.add(H.ClientWorker(
                    cfg.name, log_path=LOG_DIR / f"single-client-{cfg.name.replace('/', '-')}.log")).start()

            # ------------------------------------------------------- sizes --
            sizes.update(measure_sizes(configs, workers, servers, notes))

            # -------------------------------------------------------- reps --
            n_runs = sum(1 for _ in H.interleaved(configs, args.reps))
            retry_spent = 0.0
            for k, (rep, cfg) in enumerate(H.interleaved(configs, args.reps)):
                while len(cfg.reps) < rep:
                    cfg.reps.append(None)
                if cfg.error:
                    cfg.reps.append(None)
                    continue
                result = run_one(cfg, workers[cfg.name], servers[cfg.server], args)
                # A window during which other processes took > LOADED_CORES is re-measured
                # (after a short wait for quiet), within the retry budget and the global timeout.
                rejected: list[float] = []
                while (result is not None and (result.get("other_load_cores") or 0) > LOADED_CORES
                       and len(rejected) < args.retries and retry_spent < args.retry_budget):
                    per_window = args.window + 0.6
                    left = args.timeout - (time.perf_counter() - t_start) - (n_runs - k) * per_window
                    if left < 2 * per_window + 15:
                        break
                    rejected.append(result["other_load_cores"])
                    t_retry = time.perf_counter()
                    H.wait_for_idle(min(10.0, left / 4), threshold_cores=LOADED_CORES, consecutive=2,
                                    sample_s=0.5)
                    H.progress(f"    re-measuring {cfg.name}: other processes used "
                               f"{rejected[-1]:.2f} cores during that window")
                    result = run_one(cfg, workers[cfg.name], servers[cfg.server], args)
                    retry_spent += time.perf_counter() - t_retry
                if result is not None:
                    result["rejected_windows_other_load"] = rejected
                cfg.reps.append(result)
                if result is None:
                    H.progress(f"[{k + 1}/{n_runs}] rep {rep + 1} {cfg.name}: FAILED "
                               f"(skipped from now on)\n{cfg.error}")
                else:
                    load = result.get("other_load_cores")
                    H.progress(f"[{k + 1}/{n_runs}] rep {rep + 1} {cfg.name:24s} "
                               f"{H.fmt(result['steps_per_s']):>9s} steps/s  "
                               f"p50 {H.fmt(result['p50_us'])} µs  "
                               f"cpu srv/cli {H.fmt(result['server_cpu_us_per_step'])}/"
                               f"{H.fmt(result['client_cpu_us_per_step'])} µs/step"
                               + (f"  (other load {load:.2f} cores)" if load and load > 0.1 else ""))
    except H.GlobalTimeoutError as exc:
        incomplete = str(exc)
        H.progress(f"GLOBAL TIMEOUT: {exc}; writing what was measured")
    except KeyboardInterrupt:
        incomplete = "interrupted"
        H.progress("interrupted; writing what was measured")
    finally:
        H.progress("stopping workers and servers (by PID)")
        processes.stop_all()

    duration = time.perf_counter() - t_start
    results = build_results(args, configs, servers, sizes, machine, notes, command,
                            started, duration, incomplete)
    H.write_json(RESULTS_PATH, results)
    H.progress(f"wrote {RESULTS_PATH.relative_to(ROOT)}")
    text = render_markdown(results)
    print("\n" + text, flush=True)
    if args.no_doc:
        H.progress("--no-doc: docs/benchmarks.md left alone")
    elif incomplete:
        H.progress(f"run incomplete ({incomplete}): docs/benchmarks.md left alone")
    else:
        H.update_markdown_section(DOC_PATH, DOC_TAG, text, DOC_INTRO)
        H.progress(f"rewrote the '{DOC_TAG}' section of {DOC_PATH.relative_to(ROOT)}")
    H.progress(f"done in {duration:.0f} s")
    return 1 if incomplete else 0


def measure_sizes(configs: list[Config], workers: dict, servers: dict, notes: list[str]) -> dict:
    """Frame sizes of one plain step for each stack, from the real clients."""
    sizes: dict[str, Any] = {}
    by_name = {c.name: c for c in configs}
    plan = [("cartpole", "ours_msgpack/cartpole"), ("cartpole_json", "ours_json/cartpole"),
            ("image", "ours_msgpack/image"), ("official_cartpole", "official/cartpole"),
            ("official_image", "official/image")]
    for key, name in plan:
        cfg = by_name.get(name)
        if cfg is None or cfg.error:
            continue
        worker = workers[name]
        try:
            worker.request({"op": "open", "client": cfg.client, "params": cfg.params(),
                            "server_pid": servers[cfg.server].pid}, timeout=60)
            value = worker.request({"op": "call", "method": "frame_sizes"}, timeout=60)["value"]
            worker.request({"op": "close"}, timeout=15)
            sizes[key] = {**value, "source": "measured"}
            H.progress(f"frame sizes {key}: request {value['request_bytes']} B, "
                       f"reply {value['reply_bytes']} B")
        except H.WorkerError as exc:
            cfg.error = f"sizing pass (open + frame_sizes) failed:\n{exc}"
            H.progress(f"SIZING FAILED {name}:\n{exc}")
    for key in ("cartpole", "image"):
        if key not in sizes:
            req, rep = FALLBACK_SIZES[key]
            sizes[key] = {"request_bytes": req, "reply_bytes": rep, "source": "fallback"}
            notes.append(f"echo sizes for {key} could not be measured from our client this run; "
                         f"used the hard-coded fallback {req} B / {rep} B.")
            H.progress(f"frame sizes {key}: FALLBACK {req}/{rep} B")
    return sizes


def run_one(cfg: Config, worker: H.ClientWorker, srv: H.Server, args: argparse.Namespace) -> dict | None:
    """open -> timed window -> close in the config's worker; None (cfg.error set) on failure."""
    try:
        info, result = worker.measure(cfg.client, cfg.params(), server=srv, window_s=args.window,
                                      max_iters=cfg.max_iters, warmup_s=window_warmup_s(args.window),
                                      warmup_iters=300)
    except H.WorkerError as exc:
        cfg.error = str(exc)
        return None
    cfg.info = info or cfg.info
    return result


def window_warmup_s(window_s: float) -> float:
    """Warm-up before a timed window of ``window_s``: a fifth of it, within 0.1-0.3 s."""
    return min(0.3, max(0.1, window_s / 5))


# ------------------------------------------------------------- results ----

METRICS = ["steps_per_s", "round_trips_per_s", "p50_us", "p99_us",
           "server_cpu_us_per_step", "client_cpu_us_per_step", "other_load_cores", "steal_cores"]



def build_results(args, configs, servers, sizes, machine, notes, command, started, duration,
                  incomplete) -> dict:
    cfg_out: dict[str, Any] = {}
    for cfg in configs:
        summary = {m: H.summarize([r[m] for r in cfg.reps if r and r.get(m) is not None])
                   for m in METRICS}
        cfg_out[cfg.name] = {
            "group": cfg.group, "label": cfg.label, "server": cfg.server,
            "server_argv": H.portable_argv(servers[cfg.server].argv) if cfg.server in servers else None,
            "client": cfg.client, "info": cfg.info, "error": cfg.error,
            "summary": summary, "reps": cfg.reps,
        }

    def per_rep(name: str, metric: str = "steps_per_s") -> list:
        c = cfg_out.get(name)
        return [r[metric] if r else None for r in c["reps"]] if c else []

    def cpu_per_rt(name: str) -> list:
        """Client + server CPU µs per round trip, per rep (None when unknown)."""
        c = cfg_out.get(name)
        out = []
        for r in (c["reps"] if c else []):
            ok = r and r.get("server_cpu_us_per_step") is not None and r.get("round_trips")
            out.append((r["server_cpu_us_per_step"] + r["client_cpu_us_per_step"]) * r["calls"]
                       / r["round_trips"] if ok else None)
        return out

    def ratio(num: str, den: str, metric: str = "steps_per_s", den_metric: str | None = None) -> dict:
        return H.summarize(H.paired_ratios(per_rep(num, metric), per_rep(den, den_metric or metric)))

    ratios: dict[str, Any] = {}
    for p in VARIANTS:  # "": our defaults (busy polling), "_nopoll": polling off, "_python": main port
        ratios.update({
            f"ours{p}_vs_official_cartpole": ratio(f"ours_msgpack{p}/cartpole", "official/cartpole"),
            f"ours_json{p}_vs_official_cartpole": ratio(f"ours_json{p}/cartpole", "official/cartpole"),
            f"ours{p}_vs_echo_cartpole": ratio(f"ours_msgpack{p}/cartpole", "ws_echo/cartpole"),
            f"ours{p}_vs_echo_cartpole_round_trips": ratio(
                f"ours_msgpack{p}/cartpole", "ws_echo/cartpole", "round_trips_per_s"),
            f"echo_cpu_vs_ours{p}_cpu_cartpole": H.summarize(H.paired_ratios(
                cpu_per_rt("ws_echo/cartpole"), cpu_per_rt(f"ours_msgpack{p}/cartpole"))),
            f"ours{p}_vs_official_image": ratio(f"ours_msgpack{p}/image", "official/image"),
            f"ours{p}_vs_echo_image": ratio(f"ours_msgpack{p}/image", "ws_echo/image"),
        })
    ratios["official_vs_echo_cartpole"] = ratio("official/cartpole", "ws_echo/cartpole")
    ratios["polling_gain_cartpole"] = ratio("ours_msgpack/cartpole", "ours_msgpack_nopoll/cartpole")
    ratios["polling_gain_image"] = ratio("ours_msgpack/image", "ours_msgpack_nopoll/image")
    ratios["native_gain_cartpole"] = ratio("ours_msgpack_nopoll/cartpole", "ours_msgpack_python/cartpole")
    ratios["native_gain_image"] = ratio("ours_msgpack_nopoll/image", "ours_msgpack_python/image")
    ratios["process_vs_inline_cartpole"] = ratio("ours_msgpack_process/cartpole", "ours_msgpack/cartpole")
    ratios["process_vs_inline_image"] = ratio("ours_msgpack_process/image", "ours_msgpack/image")
    for name, c in cfg_out.items():
        if c["group"] == "framework" and name != "ws_echo/cartpole":
            ratios[f"{name}_vs_ws_echo"] = ratio(name, "ws_echo/cartpole")
    return {
        "benchmark": "single",
        "started": started.isoformat(timespec="seconds"),
        "duration_s": round(duration, 1),
        "incomplete": incomplete,
        "command": command,
        "args": {"reps": args.reps, "window_s": args.window, "quick": args.quick,
                 "groups": args.groups, "timeout_s": args.timeout, "retries": args.retries,
                 "retry_budget": args.retry_budget, "wait_idle": args.wait_idle},
        "machine": machine,
        "sizes": sizes,
        "notes": notes,
        "targets": TARGETS,
        "ratios": ratios,
        "configs": cfg_out,
    }


def _row_rank(name: str) -> int:
    """Table order: echo floor, ours (msgpack, json; each with then without polling), official;
    other rows (the framework echo apps) after, in run order."""
    order = ["ws_echo", "ours_msgpack", "ours_msgpack_nopoll", "ours_msgpack_python", "ours_msgpack_process",
             "ours_json", "ours_json_nopoll", "ours_json_python", "official"]
    stack = name.split("/", 1)[0]
    return order.index(stack) if stack in order else len(order)


def render_markdown(res: dict) -> str:
    cfgs = res["configs"]
    a = res["args"]
    L: list[str] = []
    L.append("## Single env: openenv-gym vs the official OpenEnv stack vs raw WebSocket floors")
    L.append("")
    status = f" **INCOMPLETE: {res['incomplete']}**" if res["incomplete"] else ""
    L.append(f"_Generated by `benchmarks/bench_single.py` on {res['started']} "
             f"({res['duration_s']:.0f} s); every rep in `benchmarks/results/single.json`._{status}")
    L.append("")
    L.append(f"Command: `{res['command']}` — {a['reps']} reps × {a['window_s']} s timed windows per "
             f"config (each also capped at 200,000 calls), reps interleaved; numbers are "
             f"median [min–max] over the reps.")
    L.append("")
    L.append(H.BEFORE_AFTER_NOTE)
    L.append("")
    L.append("Machine: " + H.format_machine(res["machine"]) + ".")
    L.append("")
    loads = [r.get("other_load_cores") for c in cfgs.values() for r in c["reps"] if r]
    loads = [x for x in loads if x is not None]
    steals = [r.get("steal_cores") for c in cfgs.values() for r in c["reps"] if r]
    steals = [x for x in steals if x is not None]
    if loads:
        s, st = H.summarize(loads), H.summarize(steals)
        loaded = sum(1 for x in loads if x > LOADED_CORES)
        L.append(f"Background load during the timed windows (CPU used by everything except the "
                 f"client and server under test, in cores, of {res['machine']['cpus']}): median "
                 f"{s['median']:.2f}, max {s['max']:.2f}; VM steal: median {st['median']:.2f}, "
                 f"max {st['max']:.2f} cores; load average at start: "
                 f"{res['machine'].get('loadavg_at_start')}.")
        redone = sum(len(r.get("rejected_windows_other_load") or [])
                     for c in cfgs.values() for r in c["reps"] if r)
        if redone:
            L.append(f"{redone} window(s) during which other processes used more than "
                     f"{LOADED_CORES} cores were discarded and re-measured (`--retries "
                     f"{a.get('retries')}`, budget {a.get('retry_budget')} s); the discarded "
                     f"windows are listed per rep in the JSON.")
        if loaded:
            L.append("")
            L.append(f"**Warning: {loaded} of {len(loads)} windows still ran while other processes "
                     f"used more than {LOADED_CORES} cores; their numbers (and the ratios that pair "
                     f"them) are unreliable. Rerun on an otherwise idle machine.**")
        L.append("")

    # ratios
    r = res["ratios"]
    if any(k in cfgs for k in ("ours_msgpack/cartpole", "ours_msgpack/image")):
        L.append("### Ratios (per-rep paired ratios of steps/s, median [min–max])")
        L.append("")
        L.append("| ratio | value | target | met? |")
        L.append("|---|---|---|---|")

        def row(label: str, key: str, target: float | None) -> None:
            s = r.get(key)
            val = H.fmt_mmm(s) + "x" if s and s.get("median") is not None else "n/a (not measured)"
            met = "-" if target is None else (
                "n/a" if not s or s.get("median") is None else ("yes" if s["median"] >= target else "**no**"))
            L.append(f"| {label} | {val} | {'≥ ' + H.fmt(target) + 'x' if target else '-'} | {met} |")

        def rows(label: str, key: str) -> None:
            """The row with our defaults (busy polling), then polling off, then the main port."""
            for p, how in VARIANTS.items():
                row(label.format(how=how), key.format(p=p), TARGETS.get(key.format(p=p)))

        rows("CartPole: ours (msgpack, {how}) / official", "ours{p}_vs_official_cartpole")
        rows("CartPole: ours (json, {how}) / official", "ours_json{p}_vs_official_cartpole")
        rows("CartPole: ours (msgpack, {how}) / raw websockets echo (steps/s vs echoes/s)",
             "ours{p}_vs_echo_cartpole")
        rows("CartPole: same ({how}), counting our reset round trips too",
             "ours{p}_vs_echo_cartpole_round_trips")
        rows("CartPole: echo CPU / our CPU per round trip ({how}; server + client; less sensitive "
             "to the VM's wake-up latency)", "echo_cpu_vs_ours{p}_cpu_cartpole")
        row("CartPole: official / raw websockets echo", "official_vs_echo_cartpole", None)
        row("CartPole: ours (msgpack) with busy polling / without", "polling_gain_cartpole", None)
        row("CartPole: ours (msgpack, no polling) on the native listener / on the main port",
            "native_gain_cartpole", None)
        row("CartPole: ours with the env in its own process (`--execution process`) / in the "
            "server (the cost of isolation)", "process_vs_inline_cartpole", None)
        rows("84x84x4 image: ours (msgpack, {how}) / official (nested JSON)", "ours{p}_vs_official_image")
        rows("84x84x4 image: ours (msgpack, {how}) / raw websockets echo", "ours{p}_vs_echo_image")
        row("84x84x4 image: ours (msgpack) with busy polling / without", "polling_gain_image", None)
        row("84x84x4 image: ours (msgpack, no polling) on the native listener / on the main port",
            "native_gain_image", None)
        row("84x84x4 image: ours with the env in its own process / in the server",
            "process_vs_inline_image", None)
        L.append("")

    def table(group: str, title: str, intro: str, size_keys: dict[str, str]) -> None:
        names = sorted((n for n, c in cfgs.items() if c["group"] == group or
                        (group == "framework" and n == "ws_echo/cartpole"
                         and c["group"] in ("cartpole", "framework"))), key=_row_rank)
        if not names:
            return
        L.append(f"### {title}")
        L.append("")
        L.append(intro)
        L.append("")
        L.append("| config | steps/s | round trips/s | RTT p50 µs | RTT p99 µs | server CPU µs/step "
                 "| client CPU µs/step | step frame bytes (request / reply) |")
        L.append("|---|---|---|---|---|---|---|---|")
        for n in names:
            c = cfgs[n]
            s = c["summary"]
            sz = res["sizes"].get(size_keys.get(n, ""), None)
            sz_text = f"{sz['request_bytes']:,} / {sz['reply_bytes']:,}" if sz else "-"
            if sz and sz.get("source") == "fallback":
                sz_text += " (fallback)"
            if c["error"] and not s["steps_per_s"]["n"]:
                L.append(f"| {n}: {c['label']} | **failed** (see below) | - | - | - | - | - | {sz_text} |")
                continue
            L.append(f"| {n}: {c['label']} | {H.fmt_mmm(s['steps_per_s'])} | "
                     f"{H.fmt_mmm(s['round_trips_per_s'])} | {H.fmt_mmm(s['p50_us'])} | "
                     f"{H.fmt_mmm(s['p99_us'])} | {H.fmt(s['server_cpu_us_per_step']['median'])} | "
                     f"{H.fmt(s['client_cpu_us_per_step']['median'])} | {sz_text} |")
        L.append("")

    table("cartpole", "CartPole-v1, one env, one client",
          "steps/s = `step()` calls per second; when a step ends an episode the client also sends "
          "`reset()`, whose round trip is in the time but not in the count (round trips/s counts "
          "both). RTT = one `step()` call (incl. the occasional reset). CPU per step from "
          "`/proc/<pid>/stat` (server, 10 ms ticks) and `time.process_time()` (client process, all "
          "threads) over the timed window. Official frame bytes are JSON text before "
          "permessage-deflate (the official client offers it and uvicorn accepts it; ours and the "
          "echo run without compression). Rows marked \"busy polling\" run our server and RemoteEnv "
          "with their defaults, which busy-poll on loopback for up to 1 ms instead of sleeping "
          "between messages ([operations.md](operations.md#busy-polling-on-loopback)); their CPU "
          "columns include that polling, and with it ours can beat the echo 'floor'. Rows marked "
          "\"no polling\" turn it off on both sides (`RemoteEnv(busy_poll=0)` against "
          "`openenv-gym serve --busy-poll 0`, a server of its own), as the official stack and the "
          "echo always run: those rows compare like with like. Our rows reach the server's "
          "native listener ([operations.md](operations.md#the-native-listener)), except those "
          "marked \"main port\": the same server reached with `RemoteEnv(native=False)`, through "
          "uvicorn on the server and the pure-Python framing on the client, which is what a "
          "client gets without picows or behind a proxy. The \"own process\" row serves the "
          "env with `--execution process` (each session's env in a child process, reached over "
          "a pipe; [operations.md](operations.md#process-isolation)): its cost over the row "
          "above it is the price of isolation.",
          {"ours_msgpack/cartpole": "cartpole", "ours_msgpack_nopoll/cartpole": "cartpole",
           "ours_msgpack_python/cartpole": "cartpole", "ours_msgpack_process/cartpole": "cartpole",
           "ours_json/cartpole": "cartpole_json", "ours_json_nopoll/cartpole": "cartpole_json",
           "ours_json_python/cartpole": "cartpole_json",
           "official/cartpole": "official_cartpole", "ws_echo/cartpole": "cartpole"})
    table("image", "84x84x4 uint8 random-pixel env (Discrete(4), 1000-step episodes)",
          "Same columns, same polling variants. Ours ships the frame as a raw-bytes msgpack array; "
          "the official stack as a nested JSON list (pydantic `List[List[List[int]]]`), OpenEnv's "
          "usual way.",
          {"ours_msgpack/image": "image", "ours_msgpack_nopoll/image": "image",
           "ours_msgpack_python/image": "image", "ours_msgpack_process/image": "image",
           "official/image": "official_image", "ws_echo/image": "image"})
    table("framework", "Framework and uvicorn WebSocket implementation (echo apps)",
          "Echo of CartPole-sized binary messages (same sizes as our msgpack step) by a bare ASGI "
          "app, a Starlette app and a FastAPI app under uvicorn with each `ws=` implementation "
          "(uvicorn's `ws=\"auto\"` picks `websockets-sansio`), vs a plain `websockets` asyncio "
          "server. Client: blocking `websockets.sync` client, compression off. \"steps\" = echoes.",
          {n: "cartpole" for n in cfgs})

    fw = {n: c["summary"]["steps_per_s"]["median"] for n, c in cfgs.items()
          if c["group"] == "framework" and c["summary"]["steps_per_s"]["median"]}
    if fw:
        impls = sorted({n.split("/", 1)[1] for n in fw})
        apps_ = sorted({n.split("/", 1)[0] for n in fw})
        by_impl = {i: H.summarize([v for n, v in fw.items() if n.endswith("/" + i)])["median"]
                   for i in impls}
        by_app = {a: H.summarize([v for n, v in fw.items() if n.startswith(a + "/")])["median"]
                  for a in apps_}
        best = max(by_impl, key=lambda i: by_impl[i])
        parts = [f"`{i}` {H.fmt(v)}" for i, v in by_impl.items()]
        L.append("Median echoes/s over the apps, by uvicorn `ws=`: " + ", ".join(parts) +
                 f" (fastest here: `{best}`); by app over the `ws=` implementations: " +
                 ", ".join(f"{a} {H.fmt(v)}" for a, v in by_app.items()) +
                 ". Differences below ~10% are within this VM's run-to-run noise. uvicorn 0.54 "
                 "marks `ws=\"websockets\"` (the legacy implementation) deprecated.")
        L.append("")

    # where the time goes
    measured = {n: c for n, c in cfgs.items() if c["summary"]["round_trips_per_s"]["n"]}
    ours = measured.get("ours_msgpack/cartpole") or measured.get("ours_msgpack_nopoll/cartpole")
    if ours and "ws_echo/cartpole" in measured:
        L.append("### Where the time goes (CartPole, per round trip, medians)")
        L.append("")
        L.append("| | wall µs / round trip | server CPU µs / step | client CPU µs / step |")
        L.append("|---|---|---|---|")
        for name, label in (("ours_msgpack/cartpole", "openenv-gym msgpack, busy polling"),
                            ("ours_msgpack_nopoll/cartpole", "openenv-gym msgpack, no polling"),
                            ("ws_echo/cartpole", "raw websockets echo"),
                            ("official/cartpole", "official OpenEnv")):
            if name in measured:
                sm = measured[name]["summary"]
                L.append(f"| {label} | {H.fmt(1e6 / sm['round_trips_per_s']['median'])} | "
                         f"{H.fmt(sm['server_cpu_us_per_step']['median'])} | "
                         f"{H.fmt(sm['client_cpu_us_per_step']['median'])} |")
        L.append("")
        reps_o = [x for x in ours["reps"] if x]
        calls = sum(x["calls"] for x in reps_o)
        resets = sum(x["round_trips"] - x["calls"] for x in reps_o)
        ep = f"~{calls / resets:.0f}" if resets else "no"
        L.append(f"Our CPU per step includes a reset round trip every {ep} steps (random CartPole "
                 "episodes). Client and server alternate on the machine's cores (strict "
                 "request → reply), so without polling the wall time of a round trip ≈ server CPU "
                 "+ client CPU + wake-up latency; the echo row is the same transport with no work "
                 "at all. Busy polling trades CPU (its columns include the polling) for most of the "
                 "wake-up latency.")
        L.append("")

    failed = [(n, c) for n, c in cfgs.items() if c["error"]]
    if failed:
        L.append("### Failures")
        L.append("")
        for n, c in failed:
            L.append(f"`{n}`:")
            L.append("")
            L.append("```text")
            L.append(c["error"].strip()[-3000:])
            L.append("```")
            L.append("")
    if res["notes"]:
        L.append("Notes: " + " ".join(res["notes"]))
        L.append("")
    return "\n".join(L)


if __name__ == "__main__":
    sys.exit(main())
