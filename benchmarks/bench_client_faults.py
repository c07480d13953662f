"""What a batched 84x84x4 reply costs the client: CPU and page faults per step, by checkout.

A ``RemoteVectorEnv`` (N=8 batched, msgpack, polling off) steps the random-pixel env of
``_envs.py`` against one server (this checkout's, ``--busy-poll 0``); each checkout given
runs its own client process against it, in interleaved reps, on the native listener and on
the main port. Per ``step()``: wall time, the client process's CPU time and its minor page
faults (``getrusage``). A reply of eight frames is 225 KB, past glibc's mmap threshold: a
client that makes and frees large temporaries per message can have their pages handed back
and faulted in again on every step, which costs CPU that no echo benchmark shows.

    python benchmarks/bench_client_faults.py --checkout base=/tmp/before --reps 5

``--checkout NAME=PATH`` (repeatable) adds another checkout's client (``git worktree add
--detach /tmp/before REV``); this checkout is ``head``. A checkout whose client has no
native path is measured on the main port only.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import json
import subprocess
import sys
from pathlib import Path

import _harness as H

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
DOC = ROOT / "docs" / "benchmarks.md"
RESULTS = HERE / "results" / "client_faults.json"
NUM_ENVS = 8
PACKAGES = ["openenv-gym", "picows", "websockets", "msgpack", "numpy", "gymnasium"]

#: The client each process runs: warm up, then ``steps`` steps timed (bounded by ``seconds``).
CLIENT = r"""
import json, resource, sys, time
import numpy as np
from openenv_gym.client.vector import RemoteVectorEnv
url, n, path, steps, seconds = sys.argv[1], int(sys.argv[2]), sys.argv[3], int(sys.argv[4]), float(sys.argv[5])
try:
    env = RemoteVectorEnv(url, n, mode="batched", busy_poll=0, native=path == "native")
except TypeError:  # a client from before the native listener: the main port only
    if path == "native":
        print(json.dumps(None)); sys.exit(0)
    env = RemoteVectorEnv(url, n, mode="batched", busy_poll=0)
env.reset(seed=0)
actions = np.zeros(n, np.int64)
for _ in range(100):
    env.step(actions)
faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
wall, cpu, done = time.perf_counter(), time.process_time(), 0
while done < steps and time.perf_counter() - wall < seconds:
    env.step(actions)
    done += 1
wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt - faults
env.close()
print(json.dumps({"steps": done, "wall_us": wall / done * 1e6, "cpu_us": cpu / done * 1e6,
                  "faults": faults / done}))
"""


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--checkout", action="append", default=[], metavar="NAME=PATH",
                        help="another checkout's client, measured beside this one's")
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--steps", type=int, default=2000, help="timed steps per window")
    parser.add_argument("--seconds", type=float, default=10.0, help="at most this long per window")
    parser.add_argument("--wait-idle", type=float, default=0.0)
    parser.add_argument("--no-doc", action="store_true", help="do not rewrite docs/benchmarks.md")
    return parser.parse_args(argv)


def run_client(root: Path, url: str, path: str, args: argparse.Namespace) -> dict | None:
    env = H.python_env(root, HERE)
    done = subprocess.run(
        [sys.executable, "-c", CLIENT, url, str(NUM_ENVS), path, str(args.steps), str(args.seconds)],
        env=env, cwd=root, capture_output=True, text=True, timeout=args.seconds + 120,
    )
    if done.returncode != 0:
        raise RuntimeError(f"the client of {root} failed:\n{done.stderr[-2000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.wait_idle > 0:
        H.wait_for_idle_start(args.wait_idle)
    checkouts = {"head": ROOT, **{name: Path(path).resolve() for name, path in
                                  (entry.split("=", 1) for entry in args.checkout)}}
    started = _dt.datetime.now().astimezone()
    machine = H.machine_info(PACKAGES)
    processes = H.ProcessSet()
    configs = [(name, path) for name in checkouts for path in ("native", "main")]
    results: dict[str, list[dict | None]] = {f"{name}/{path}": [] for name, path in configs}
    try:
        server = processes.add(H.Server(
            "image", lambda p: H.openenv_gym_argv("serve", "_envs:make_image_env", "--port", p, "--busy-poll", 0),
            ready="http:/health", env=H.python_env(), cwd=ROOT,
        )).start()
        if not server.wait_ready(60):
            raise RuntimeError(f"the server failed: {server.error}")
        for rep, (name, path) in H.interleaved(configs, args.reps):
            result = run_client(checkouts[name], server.base_url, path, args)
            results[f"{name}/{path}"].append(result)
            if result is not None:
                H.progress(f"rep {rep + 1} {name}/{path}: {result['cpu_us']:.0f} µs CPU, "
                           f"{result['faults']:.1f} faults per step")
    finally:
        processes.stop_all()

    def column(key: str, metric: str) -> dict | None:
        values = [r[metric] for r in results[key] if r is not None]
        return H.summarize(values) if values else None

    H.write_json(RESULTS, {"started": started.isoformat(timespec="seconds"), "machine": machine,
                           "args": vars(args), "checkouts": {k: str(v) for k, v in checkouts.items()},
                           "results": results})
    lines = [
        "## What a batched image reply costs the client",
        "",
        f"_Generated by `benchmarks/bench_client_faults.py` on {started.isoformat(timespec='seconds')}; "
        "every rep in `benchmarks/results/client_faults.json`._",
        "",
        f"Command: `{H.command_line(__file__, sys.argv[1:] if argv is None else argv)}`: {args.reps} reps of "
        f"{args.steps:,} steps, each a process of its own, reps interleaved; median [min–max]. One server "
        f"(this checkout, `--busy-poll 0`) of the 84x84x4 random-pixel env; `RemoteVectorEnv` N={NUM_ENVS} "
        "batched, msgpack, polling off (a 225 KB reply per step). Checkouts: "
        + ", ".join(f"`{name}` ({_describe(path)})" for name, path in checkouts.items()) + ".",
        "",
        f"Machine: {H.format_machine(machine)}.",
        "",
        "| client | path | wall µs per step | client CPU µs per step | client page faults per step |",
        "|---|---|---|---|---|",
    ]
    for name, path in configs:
        key = f"{name}/{path}"
        if not any(results[key]):
            continue
        lines.append(f"| `{name}` | {'native listener' if path == 'native' else 'main port'} "
                     f"| {H.fmt_mmm(column(key, 'wall_us'), 0)} | {H.fmt_mmm(column(key, 'cpu_us'), 0)} "
                     f"| {H.fmt_mmm(column(key, 'faults'), 2)} |")
    body = "\n".join(lines) + "\n"
    print(body)
    if not args.no_doc:
        H.update_markdown_section(DOC, "client-faults", body, "")
    return 0


def _describe(path: Path) -> str:
    """A checkout's commit, as ``git describe`` would name it."""
    done = subprocess.run(["git", "-C", str(path), "log", "-1", "--format=%h"], capture_output=True, text=True)
    return done.stdout.strip() or "not a git checkout"


if __name__ == "__main__":
    sys.exit(main())
