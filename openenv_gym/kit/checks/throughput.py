"""``perf.throughput``: steps per second and p50/p99 step latency over the wire, with one
session and with four at once (one only, on a server that holds a single session).

Each session steps a random legal action for :data:`THROUGHPUT_STEPS` steps at most, within
:data:`THROUGHPUT_BUDGET_S` seconds; the latency is the time of each ``step`` call alone.
"""

from __future__ import annotations

import statistics
import threading
import time
from typing import Any

from .checker import Checker, Result
from .play import _sample

#: Steps of the throughput probe, per session, and the seconds they may take at most.
THROUGHPUT_STEPS = 300
THROUGHPUT_BUDGET_S = 30.0


def throughput(checker: Checker) -> Result:
    measured: dict[str, Any] = {}
    evidence: list[str] = []
    counts: tuple[int, ...] = (1, 4)
    if checker.facts is not None and checker.facts.one_session:
        counts = (1,)
        evidence.append(f"4 sessions not measured: {checker.facts.one_session}")
    for sessions in counts:
        latencies: list[list[float]] = [[] for _ in range(sessions)]
        failures: list[BaseException] = []
        started = time.perf_counter()
        threads = [threading.Thread(target=_timed_steps, args=(checker, latencies[i], failures))
                   for i in range(sessions)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=120)
        elapsed = time.perf_counter() - started
        if failures:
            first = failures[0]
            return Result("perf.throughput", "error", [
                f"{sessions} session(s): {len(failures)} failed; the first: {type(first).__name__}: {first}"],
                measured)
        every = sorted(x for run in latencies for x in run)
        if every:
            measured[f"sessions_{sessions}"] = {
                "steps_per_s": round(len(every) / elapsed, 1),
                "p50_ms": round(1000 * statistics.median(every), 3),
                "p99_ms": round(1000 * every[min(len(every) - 1, int(0.99 * len(every)))], 3),
            }
    evidence[:0] = [f"{k}: {v['steps_per_s']} steps/s, p50 {v['p50_ms']} ms, p99 {v['p99_ms']} ms"
                    for k, v in measured.items()]
    return Result("perf.throughput", "pass", evidence, measured)


def _timed_steps(checker: Checker, out: list[float], failures: list[BaseException]) -> None:
    try:
        with checker.session() as env:
            env.action_space.seed(0)
            obs, info = env.reset(seed=0)
            deadline = time.monotonic() + THROUGHPUT_BUDGET_S
            for _ in range(THROUGHPUT_STEPS):
                action = _sample(env.action_space, obs, info)
                started = time.perf_counter()
                obs, _, terminated, truncated, info = env.step(action)
                out.append(time.perf_counter() - started)
                if terminated or truncated:
                    obs, info = env.reset()
                if time.monotonic() > deadline:
                    break
    except Exception as exc:  # noqa: BLE001 - reported in the result, not as a thread's traceback
        failures.append(exc)
