#!/usr/bin/env python
"""What a step allocates on the hot path, on each end: the memory a step holds beyond what
was live before it (Python's ``tracemalloc``), per config and path.

    python benchmarks/bench_allocations.py [--reps 3] [--steps 2000]

The native path is to allocate nothing per message on its hot path. In Python every reply
decodes to new objects (a dict, a float, an array header), so "nothing" cannot be taken
literally; what this measures is whether a step allocates anything that grows with
its message (a frame copied into a temporary, an encode buffer, a mask) or keeps anything
after it. Four configs, each on the native listener and on the main port (the pure-Python
path), polling off, msgpack:

- CartPole, one env (``RemoteEnv``, 16 B of observation a step);
- CartPole, N=64 batched (``RemoteVectorEnv``, 1,024 B);
- 84x84x4 uint8, N=8 batched, through a shared section (225,792 B; on the main port, where
  no section is offered, through the socket);
- the same through the socket (``shared_memory=False``).

Each step reports its peak above the memory live before it (``transient``, the median over
the ``--steps`` steps measured after a warm-up), and the memory live after the last step
against after the middle one, per step (``net``: 0 when nothing accumulates; the first half
lets bounded caches fill, such as numpy's of small blocks).

**The client's side**: servers in processes of their own (``openenv-gym serve``), the client
in this process. ``copy=True`` (the default) returns each batch of observations as a fresh
array, which is counted in ``transient``.

**The server's side**: the server in this process (``local_server``, its loop on a thread),
the client in a process of its own, stepping once each time it is told.

Writes ``benchmarks/results/allocations.json`` and its section of ``docs/benchmarks.md``.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))

import _harness as H  # noqa: E402

RESULTS_PATH = ROOT / "benchmarks" / "results" / "allocations.json"
DOC_TAG = "allocations"
WARMUP_STEPS = 200
IMAGE_BYTES = 84 * 84 * 4
#: Each config: its label, the target its server serves, the observation bytes of a step.
CONFIGS: dict[str, tuple[str, str, int]] = {
    "cartpole-1": ("CartPole, one env", "CartPole-v1", 16),
    "cartpole-64": ("CartPole, N=64 batched", "CartPole-v1", 64 * 16),
    "image-8": ("84x84x4 uint8, N=8 batched, shared section", "_envs:make_image_env", 8 * IMAGE_BYTES),
    "image-8-socket": ("84x84x4 uint8, N=8 batched, through the socket", "_envs:make_image_env", 8 * IMAGE_BYTES),
}
PATHS = {"native": "native listener", "main": "main port"}


def make_client(config: str, url: str, native: bool) -> Any:
    """The benchmark client of ``config`` on ``url``: ``open()``, ``step(i)``, ``close()``."""
    from _clients import OursClient
    from bench_vector import VecClient

    if config == "cartpole-1":
        return OursClient(url, busy_poll=0, native=native)
    env, num_envs = ("cartpole", 64) if config == "cartpole-64" else ("image", 8)
    remote = {"mode": "batched", "encoding": "msgpack", "busy_poll": 0, "native": native,
              "shared_memory": config != "image-8-socket"}
    return VecClient("batched", env, num_envs, url, remote)


def measure(step: Callable[[int], object], steps: int) -> dict[str, float]:
    """Run ``step(k)`` for k in ``range(steps)`` under ``tracemalloc``: the median bytes a
    step held above the memory live before it (``transient``), and the memory live after
    the last step against after the middle one, per step (``net``)."""
    transient = np.zeros(steps)  # filled in place: the measuring keeps nothing per step
    tracemalloc.start()
    try:
        for k in range(steps):
            before, _ = tracemalloc.get_traced_memory()
            tracemalloc.reset_peak()
            step(k)
            after, peak = tracemalloc.get_traced_memory()
            transient[k] = peak - before
            if k == steps // 2:
                middle = after
    finally:
        tracemalloc.stop()
    return {"transient": float(np.median(transient)), "net": (after - middle) / (steps - 1 - steps // 2)}


def client_side(config: str, url: str, native: bool, steps: int) -> dict[str, float]:
    """:func:`measure` of ``config``'s client in this process."""
    client = make_client(config, url, native)
    client.open()
    try:
        for i in range(WARMUP_STEPS):
            client.step(i)
        return measure(lambda k: client.step(WARMUP_STEPS + k), steps)
    finally:
        client.close()


def drive(config: str, url: str, native: bool) -> int:
    """The client of :func:`server_side`, in its own process: warms up, writes ``r``
    (ready), then makes one step for each ``s`` it reads, writing ``d`` (done) after each,
    until EOF. One byte each way, unbuffered: the measuring side allocates nothing for them."""
    answers = os.dup(1)
    os.dup2(2, 1)  # a library's stray print goes to stderr, not into the exchange
    client = make_client(config, url, native)
    client.open()
    try:
        for i in range(WARMUP_STEPS):
            client.step(i)
        os.write(answers, b"r")
        i = WARMUP_STEPS
        while os.read(0, 1) == b"s":
            client.step(i)
            i += 1
            os.write(answers, b"d")
    finally:
        client.close()
    return 0


def server_side(config: str, url: str, native: bool, steps: int) -> dict[str, float]:
    """:func:`measure` of the server in this process, stepped by a client process of
    ``config`` (the byte each way that tells the client to step and hears it did is a
    cached one-byte object: nothing allocated)."""
    argv = [sys.executable, __file__, "--drive", config, url, "native" if native else "main"]
    with subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, bufsize=0, cwd=ROOT,
                          env=H.python_env()) as driver:
        assert driver.stdin is not None and driver.stdout is not None
        ask, hear = driver.stdin.fileno(), driver.stdout.fileno()
        try:
            if os.read(hear, 1) != b"r":
                raise RuntimeError(f"the client of {config} failed before its steps (exit {driver.poll()})")

            def step(k: int) -> None:
                os.write(ask, b"s")
                if os.read(hear, 1) != b"d":
                    raise RuntimeError(f"the client of {config} failed in its steps (exit {driver.poll()})")

            result = measure(step, steps)
            driver.stdin.close()
            if driver.wait(timeout=60) != 0:
                raise RuntimeError(f"the client of {config} exited with {driver.returncode}")
        finally:
            if driver.poll() is None:
                driver.kill()
    return result


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--drive"]:
        config, url, path = argv[1:4]
        return drive(config, url, path == "native")
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--steps", type=int, default=2000, help="steps measured per config and rep")
    parser.add_argument("--no-doc", action="store_true", help="do not rewrite docs/benchmarks.md")
    args = parser.parse_args(argv)
    args.window = None  # counted in steps, not timed
    run = H.run_record(__file__, argv, args, ["gymnasium", "numpy", "msgpack", "picows", "openenv-gym"])
    measured: dict[str, dict[str, dict[str, list[float]]]] = {
        side: {f"{config}/{path}": {"transient": [], "net": []} for config in CONFIGS for path in PATHS}
        for side in ("client", "server")
    }
    targets = sorted({target for _, target, _ in CONFIGS.values()})
    configs = [(config, path) for config in CONFIGS for path in PATHS]

    processes = H.ProcessSet()
    try:
        servers = {
            target: processes.add(H.Server(
                f"allocations-{target.replace(':', '-')}",
                lambda port, target=target: H.openenv_gym_argv("serve", target, "--port", port, "--busy-poll", 0),
                ready="http:/health", env=H.python_env(), cwd=HERE,
                log_path=HERE / "results" / "logs" / f"allocations-{target.replace(':', '-')}.log",
            )).start()
            for target in targets
        }
        for target, server in servers.items():
            if not server.wait_ready(60):
                raise RuntimeError(f"the server of {target} failed: {server.error}")
        for rep, (config, path) in H.interleaved(configs, args.reps):
            result = client_side(config, servers[CONFIGS[config][1]].base_url, path == "native", args.steps)
            for key, value in result.items():
                measured["client"][f"{config}/{path}"][key].append(value)
            H.progress(f"rep {rep + 1} client {config} {path}: transient {result['transient']:,.0f} B, "
                       f"net {result['net']:,.0f} B")
    finally:
        processes.stop_all()

    from _envs import make_image_env

    import openenv_gym

    served = {"CartPole-v1": "CartPole-v1", "_envs:make_image_env": make_image_env}
    for target in targets:
        with openenv_gym.local_server(served[target]) as url:
            for rep, (config, path) in H.interleaved([c for c in configs if CONFIGS[c[0]][1] == target], args.reps):
                result = server_side(config, url, path == "native", args.steps)
                for key, value in result.items():
                    measured["server"][f"{config}/{path}"][key].append(value)
                H.progress(f"rep {rep + 1} server {config} {path}: transient {result['transient']:,.0f} B, "
                           f"net {result['net']:,.0f} B a step")
    data = {**run, "steps": args.steps, "bytes": measured}
    H.publish(data, RESULTS_PATH, render, None if args.no_doc else DOC_TAG)
    return 0


def render(data: dict) -> str:
    measured = data["bytes"]
    lines = [
        "## What a step allocates on the hot path",
        "",
        f"Command: `{data['command']}` ({data['reps']} reps of {data['steps']} steps after a warm-up of "
        f"{WARMUP_STEPS}, the configs interleaved; median [min–max] over the reps). Machine: "
        f"{H.format_machine(data['machine'])}. Started {data['started'][:19]}.",
        "",
        "Bytes a step held above the memory live before it (`tracemalloc`'s peak; the median over "
        "the steps), and the memory live after the last step against after the middle one, per "
        "step (0: nothing accumulates). "
        "Polling off, msgpack; the client with `copy=True` (each batch of observations a fresh "
        "array, counted).",
        "",
        "| config | path | observations a step | client: transient | client: left live "
        "| server: transient | server: left live |",
        "|---|---|---|---|---|---|---|",
    ]
    for config, (label, _, obs_bytes) in CONFIGS.items():
        for path, path_label in PATHS.items():
            client, server = measured["client"][f"{config}/{path}"], measured["server"][f"{config}/{path}"]
            cells = [H.fmt_mmm(H.summarize(values[key]), 4 if key == "transient" else 2)
                     for values in (client, server) for key in ("transient", "net")]
            lines.append(f"| {label} | {path_label} | {obs_bytes:,} B | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.exit(main())
