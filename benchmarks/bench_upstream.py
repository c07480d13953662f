#!/usr/bin/env python
"""What the spaces inferred for upstream OpenEnv's envs cost, side by side with the anchor.

    python benchmarks/bench_upstream.py                       # the built-in servers, 5 reps
    python benchmarks/bench_upstream.py --envs OpenEnv/envs --python venv/bin/python   # and upstream's

Measured in one run, reps interleaved, every server on 127.0.0.1 started here and stopped:

1. **Opening four sessions of an echo server**: ``RemoteVectorEnv(url, 4)`` (its inferred
   ``Text`` spaces copied into four sub-spaces) against four official ``GenericEnvClient``
   sessions (no spaces at all), on the built-in echo server (and upstream's echo_env).
2. **An Atari step**: ``gym.make("openenv/Atari-v0")`` stepping pong (a 100,800-int screen as
   JSON lists, decoded into a ``uint8`` image ``Box``) on the built-in server, against the
   official client's step on the same server, and, with ``--envs``, both on upstream's
   atari_env; with the cost of ``observation_space.contains`` of one observation.

Writes the ``upstream`` section of ``docs/upstream.md`` (not with ``--no-doc``).
"""

from __future__ import annotations

import argparse
import contextlib
import statistics
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))

import _harness as H  # noqa: E402

DOC_PATH = ROOT / "docs" / "upstream.md"
DOC_TAG = "upstream"
#: Steps of an Atari window (after 3 warm-up steps).
ATARI_STEPS = 60


@contextlib.contextmanager
def builtin(name: str) -> Iterator[str]:
    from openenv_gym.catalog import get
    from openenv_gym.catalog.embedded import EmbeddedServer

    get(name).builtin_server()
    server = EmbeddedServer.start(name, env_kwargs={"game": "pong"} if name == "Atari" else None)
    try:
        yield server.url
    finally:
        server.stop()


@contextlib.contextmanager
def upstream(envs: Path, package: str, python: str, env: dict[str, str]) -> Iterator[str]:
    import openenv_gym

    with openenv_gym.local_server(envs / package, env=env, python=python, startup_timeout=120) as url:
        yield url


def open_vector(url: str) -> float:
    import openenv_gym

    started = time.perf_counter()
    vec = openenv_gym.RemoteVectorEnv(url, 4, mode="sessions")
    took = time.perf_counter() - started
    vec.close()
    return took


def open_official(url: str) -> float:
    from openenv import GenericEnvClient

    started = time.perf_counter()
    clients = [GenericEnvClient(base_url=url).sync() for _ in range(4)]
    for client in clients:
        client.__enter__()
        client.reset()
    took = time.perf_counter() - started
    for client in clients:
        client.__exit__(None, None, None)
    return took


def atari_steps_ours(url: str) -> float:
    """Milliseconds a step, through the catalog's view (a uint8 image Box)."""
    import gymnasium as gym

    env = gym.make("openenv/Atari-v0", base_url=url, disable_env_checker=True)
    try:
        env.reset(seed=0)
        for _ in range(3):
            env.step(0)
        started = time.perf_counter()
        for _ in range(ATARI_STEPS):
            env.step(1)
        return 1000 * (time.perf_counter() - started) / ATARI_STEPS
    finally:
        env.close()


def atari_steps_official(url: str) -> float:
    from openenv import GenericEnvClient

    with GenericEnvClient(base_url=url).sync() as client:
        client.reset()
        for _ in range(3):
            client.step({"action_id": 0})
        started = time.perf_counter()
        for _ in range(ATARI_STEPS):
            client.step({"action_id": 1})
        return 1000 * (time.perf_counter() - started) / ATARI_STEPS


def atari_contains(url: str) -> float:
    """Milliseconds of ``observation_space.contains`` of one observation (Gymnasium's env checker
    calls it on every step of ``gym.make``'s env)."""
    import gymnasium as gym

    env = gym.make("openenv/Atari-v0", base_url=url, disable_env_checker=True)
    try:
        obs, _ = env.reset(seed=0)
        started = time.perf_counter()
        for _ in range(20):
            assert env.observation_space.contains(obs)
        return 1000 * (time.perf_counter() - started) / 20
    finally:
        env.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--envs", type=Path, help="upstream OpenEnv's envs/ directory, to measure its servers too")
    parser.add_argument("--python", default=sys.executable, help="the interpreter that runs upstream's servers")
    parser.add_argument("--no-doc", action="store_true")
    args = parser.parse_args(argv)
    info = H.machine_info(["openenv-gym", "openenv", "gymnasium", "ale-py"])
    results: dict[str, list[float]] = {}
    with contextlib.ExitStack() as stack:
        servers = {"built-in echo": stack.enter_context(builtin("Echo")),
                   "built-in Atari": stack.enter_context(builtin("Atari"))}
        if args.envs is not None:
            servers["upstream echo_env"] = stack.enter_context(upstream(args.envs, "echo_env", args.python, {}))
            servers["upstream atari_env"] = stack.enter_context(
                upstream(args.envs, "atari_env", args.python, {"ATARI_GAME": "pong"}))
        configs: list[tuple[str, str, Callable[[str], float]]] = []
        for where, url in servers.items():
            if "echo" in where:
                configs += [(f"{where}: RemoteVectorEnv(url, 4), s", url, open_vector),
                            (f"{where}: 4 GenericEnvClient sessions, s", url, open_official)]
            else:
                configs += [(f"{where}: gym.make step, ms", url, atari_steps_ours),
                            (f"{where}: GenericEnvClient step, ms", url, atari_steps_official),
                            (f"{where}: observation_space.contains, ms", url, atari_contains)]
        for rep, (label, url, measure) in H.interleaved(configs, args.reps):
            H.progress(f"rep {rep + 1}/{args.reps}: {label}")
            results.setdefault(label, []).append(measure(url))
    lines = [
        f"`{H.command_line(Path(__file__), sys.argv[1:] if argv is None else argv)}`, {args.reps} reps interleaved, "
        f"median [min-max]; {H.format_machine(info)}.", "",
        "| measured | median [min-max] |", "|---|---|",
        *(f"| {label} | {H.fmt_mmm(H.summarize(values))} |" for label, values in results.items()),
    ]
    ratios = {where: statistics.median(H.paired_ratios(results[f"{where}: gym.make step, ms"],
                                                       results[f"{where}: GenericEnvClient step, ms"]))
              for where in servers if "Atari" in where or "atari" in where}
    lines += ["", *(f"- {where}: a `gym.make` step costs {ratio:.2f}x the official client's "
                    f"(which decodes no image)" for where, ratio in ratios.items())]
    body = "\n".join(lines)
    print(body)
    if not args.no_doc:
        H.update_markdown_section(DOC_PATH, DOC_TAG, body, intro="# Upstream OpenEnv's own environments")
    return 0


if __name__ == "__main__":
    sys.exit(main())
