"""``openenv-gym check PACKAGE``: upstream's validation graders without Docker, then the
checks upstream leaves "not implemented", and probes beyond RFC 008.

    $ openenv-gym check wrappers/cartpole --json report.json

The package must hold a validation kit (``openenv-gym kit``). Its own server is
started on 127.0.0.1 (:func:`~.upstream.start_package`) and every check plays
episodes over the wire, as an agent would:

* upstream (openenv 0.10): ``static.manifest`` and the ``runtime.*`` graders, through
  :class:`~.upstream.LocalProvider`;
* RFC 008, with its ids: ``runtime.episode_determinism`` (a seeded episode replays
  identically in fresh sessions and in a fresh server), ``runtime.episode_isolation``
  (stepping one session never changes another), ``semantic.oracle_max``,
  ``semantic.floor_gap``, ``semantic.canary_floor``, ``semantic.replayability`` (the
  kit's recorded returns reproduce), ``semantic.no_solution_leakage`` (no field of
  the observation or ``info`` that, followed as an action, reaches the top),
  ``semantic.resource_envelope`` (the server's peak RSS within ``memory_mb``);
* beyond it: ``hacking.reward_range`` (every reward of every probe within the
  declared range), ``hacking.repeated_action`` (no single action, repeated, reaches
  the top), ``learning.learnability`` (a small learner, :mod:`.learning`, beats the
  canary floor by the margin within a bounded number of episodes, with its curve;
  it trains in process with the env, not over the wire), and
  ``perf.throughput`` (steps/s and p50/p99 step latency, 1 and 4 sessions).

The report has upstream's shape (``results`` of ``{check_id, status, measured,
evidence, remediation, duration_s}`` and a ``verdict``); the exit status is 1 when
any check FAILs or ERRORs, else 0.
"""

from __future__ import annotations

import functools
import hashlib
import itertools
import json
import math
import statistics
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import yaml

from .. import spaces
from ..server.multiagent import action_mask
from . import KIT_FILES

__all__ = ["Result", "Episode", "run_checks", "main", "verdict", "LEARNING_EPISODES"]

#: Training episodes (and seconds) the learnability probe may use.
LEARNING_EPISODES = 300
LEARNING_BUDGET_S = 60.0
#: Distinct actions the repeated-action probe tries, and the seeds it plays each from.
REPEATED_ACTIONS = 16
PROBE_SEEDS = (0, 1, 2)
#: Upstream's evidence for a check it has no grader for.
NOT_IMPLEMENTED = "grader not implemented in this build"
#: Steps of the throughput probe, per session.
THROUGHPUT_STEPS = 300


@dataclass
class Result:
    """One check's finding, in upstream's ``CheckResult`` shape."""

    check_id: str
    status: str  # pass, fail, skip, error
    evidence: list[str]
    measured: dict[str, Any] = field(default_factory=dict)
    remediation: str | None = None
    duration_s: float = 0.0

    def as_dict(self) -> dict[str, Any]:
        return {
            "check_id": self.check_id, "status": self.status, "measured": self.measured,
            "evidence": self.evidence, "remediation": self.remediation, "duration_s": round(self.duration_s, 4),
        }


@dataclass
class Episode:
    """What one episode over the wire gave: rewards, and a digest of every observation and info."""

    rewards: list[float]
    digest: str
    ended: bool

    @property
    def total(self) -> float:
        return float(sum(self.rewards))


@dataclass
class Declared:
    """A package's declarations and kit files, as the checks read them."""

    root: Path
    reward_range: tuple[float, float]
    oracle_tolerance: float
    floor_margin: float
    memory_mb: int
    canaries: list[dict]
    oracle: dict | None
    plan: dict
    measured: dict

    @classmethod
    def load(cls, root: Path) -> Declared:
        manifest = yaml.safe_load((root / "openenv.yaml").read_text(encoding="utf-8")) or {}
        block = manifest.get("validation")
        if not isinstance(block, dict) or not (root / KIT_FILES["kit"]).is_file():
            raise FileNotFoundError(f"{root} has no validation kit: run `openenv-gym kit {root}` first")

        def read(key: str) -> Any:
            path = root / KIT_FILES[key]
            return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else None

        reward = block["reward"]
        return cls(
            root=root,
            reward_range=(float(reward["range"][0]), float(reward["range"][1])),
            oracle_tolerance=float(reward.get("oracle_tolerance", 0.0)),
            floor_margin=float(reward["floor_margin"]),
            memory_mb=int(block["resources"]["memory_mb"]),
            canaries=read("canaries")["trajectories"],
            oracle=read("oracle"),
            plan=read("plan"),
            measured=read("kit"),
        )

    @property
    def top(self) -> float:
        return self.reward_range[1]

    def reached_top(self, total: float) -> bool:
        """``True`` when a return is within the floor margin of the top: what no trivial policy may get."""
        return total >= self.top - self.floor_margin


# -- playing over the wire --------------------------------------------------------------------

#: ``policy(observation, info, mask) -> action``, as in :mod:`.policies`.
Policy = Callable[[Any, dict, Any], Any]


def _digest(*values: Any) -> bytes:
    return json.dumps(values, sort_keys=True, default=_jsonable).encode()


def _jsonable(value: Any) -> Any:
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, np.generic):
        return value.item()
    return repr(value)


def play(env: gym.Env, policy: Policy, *, seed: int, max_steps: int = 1000) -> Episode:
    """One episode of ``policy`` on ``env`` (a :class:`~openenv_gym.RemoteEnv`)."""
    digest = hashlib.sha256()
    obs, info = env.reset(seed=seed)
    digest.update(_digest(obs, info))
    rewards: list[float] = []
    for _ in range(max_steps):
        obs, reward, terminated, truncated, info = env.step(policy(obs, info, action_mask(obs, info)))
        rewards.append(float(reward))
        digest.update(_digest(obs, float(reward), bool(terminated), bool(truncated), info))
        if terminated or truncated:
            return Episode(rewards, digest.hexdigest(), True)
    return Episode(rewards, digest.hexdigest(), False)


def scripted(space: gym.Space, wire_actions: list[Any]) -> Policy:
    """The policy playing recorded wire actions in order (the last one again, should the env go on)."""
    actions = [spaces.decode(space, a) for a in wire_actions]
    steps = itertools.count()

    def policy(obs: Any, info: dict, mask: Any) -> Any:
        return actions[min(next(steps), len(actions) - 1)]

    return policy


def _constant(value: Any, env: gym.Env) -> Policy:
    """The policy playing ``value`` every step."""
    return lambda obs, info, mask: value


class Checker:
    """Runs every check against one package's server (started and stopped by :func:`run_checks`)."""

    def __init__(self, kit: Declared, url: str, restart: Callable[[], Any], pid: int) -> None:
        self.kit = kit
        self.url = url
        self.restart = restart
        self.pid = pid
        self.rewards_seen: list[tuple[str, float]] = []

    @contextmanager
    def session(self, url: str | None = None) -> Iterator[gym.Env]:
        from ..client import RemoteEnv

        env = RemoteEnv(url or self.url)
        try:
            yield env
        finally:
            env.close()

    def episode(
        self, policy_for: Callable[[gym.Env], Policy], *, seed: int, label: str, url: str | None = None
    ) -> Episode:
        with self.session(url) as env:
            result = play(env, policy_for(env), seed=seed)
        self.rewards_seen.extend((label, r) for r in result.rewards)
        self.rewards_seen.append((f"{label} (return)", result.total))
        return result

    def replay(self, trajectory: dict, *, url: str | None = None) -> Episode:
        return self.episode(
            lambda env: scripted(env.action_space, trajectory["actions"]),
            seed=trajectory["reset"]["seed"], label=trajectory["name"], url=url,
        )

    # -- RFC 008 -----------------------------------------------------------------------------

    def episode_determinism(self) -> Result:
        random = next(t for t in self.kit.canaries if t["name"] == "random")
        runs = [self.replay(random), self.replay(random)]
        fresh = self.restart()
        try:
            runs.append(self.replay(random, url=fresh.base_url))
        finally:
            fresh.stop()
        digests = {r.digest for r in runs}
        measured = {"replays": len(runs), "distinct_traces": len(digests)}
        if len(digests) == 1:
            return Result("runtime.episode_determinism", "pass",
                          ["a seeded episode replays identically in 2 fresh sessions and a fresh server"], measured)
        return Result("runtime.episode_determinism", "fail",
                      [f"seed {random['reset']['seed']}, same actions: {len(digests)} different traces in "
                       f"{len(runs)} replays (returns {[r.total for r in runs]})"], measured,
                      "make every random draw of the env come from the generator reset(seed=...) seeds "
                      "(self.np_random), not from global or unseeded state")

    def episode_isolation(self) -> Result:
        # The longest recorded episode, played twice at once: with state shared between
        # sessions, each session's steps move the other's.
        trajectory = max([*self.kit.canaries, *([self.kit.oracle] if self.kit.oracle else [])],
                         key=lambda t: len(t["actions"]))
        alone, again = self.replay(trajectory), self.replay(trajectory)
        if alone.digest != again.digest:
            return Result("runtime.episode_isolation", "skip", ["unmet dependency: runtime.episode_determinism"])
        seed = trajectory["reset"]["seed"]
        with self.session() as other, self.session() as env:
            other_policy = scripted(other.action_space, trajectory["actions"])
            other_obs, other_info = other.reset(seed=seed)
            other_done = False
            policy = scripted(env.action_space, trajectory["actions"])
            obs, info = env.reset(seed=seed)
            digest = hashlib.sha256(_digest(obs, info))
            rewards: list[float] = []
            for _ in range(len(trajectory["actions"])):
                if not other_done:  # the other session steps between each of this one's steps
                    other_obs, _, ended, cut, other_info = other.step(
                        other_policy(other_obs, other_info, action_mask(other_obs, other_info)))
                    other_done = ended or cut
                obs, reward, terminated, truncated, info = env.step(policy(obs, info, action_mask(obs, info)))
                rewards.append(float(reward))
                digest.update(_digest(obs, float(reward), bool(terminated), bool(truncated), info))
                if terminated or truncated:
                    break
        evidence = f"the {trajectory['name']} episode, played beside a copy of itself"
        if digest.hexdigest() == alone.digest:
            return Result("runtime.episode_isolation", "pass", [f"{evidence}, equals the episode alone"])
        return Result("runtime.episode_isolation", "fail",
                      [f"{evidence}, returned {sum(rewards):g}; alone {alone.total:g}: one session's state "
                       f"reaches another"], {},
                      "keep all episode state on the env instance (no module-level or class-level state)")

    def oracle_max(self) -> Result:
        oracle = self.kit.oracle
        if oracle is None:
            return Result("semantic.oracle_max", "fail", ["the package declares no oracle"], {},
                          "give the kit an oracle: `openenv-gym kit PACKAGE --oracle module:policy`")
        got = self.replay(oracle).total
        goal = self.kit.top - self.kit.oracle_tolerance
        evidence = [f"oracle return {got:g} over the wire; the declared top is {self.kit.top:g}"]
        threshold = self.kit.measured.get("reward_threshold")
        if threshold is not None and threshold < goal:
            goal = float(threshold)
            evidence.append(f"goal: Gymnasium's reward_threshold {threshold:g} (the env's 'solved' return)")
        measured = {"oracle_return": got, "goal": goal}
        if got >= goal:
            return Result("semantic.oracle_max", "pass", evidence, measured)
        return Result("semantic.oracle_max", "fail", evidence, measured,
                      "ship an oracle that reaches the top of reward.range, or declare the range the env can reach")

    def canary_returns(self) -> dict[str, float]:
        return {t["name"]: self.replay(t).total for t in self.kit.canaries}

    def floor_gap(self, returns: dict[str, float]) -> Result:
        floor = max(returns.values())
        gap = self.kit.top - floor
        measured = {"floor": floor, "top": self.kit.top, "floor_margin": self.kit.floor_margin}
        evidence = [f"best canary return {floor:g}; the top is {self.kit.top:g} (gap {gap:g}, "
                    f"margin {self.kit.floor_margin:g})"]
        if gap >= self.kit.floor_margin:
            return Result("semantic.floor_gap", "pass", evidence, measured)
        return Result("semantic.floor_gap", "fail", evidence, measured,
                      "a trivial policy already scores the top: make the reward harder to get without the task "
                      "(for a game, a stronger opponent)")

    def canary_floor(self, returns: dict[str, float]) -> Result:
        high = {name: total for name, total in returns.items() if self.kit.reached_top(total)}
        evidence = [f"{name}: {total:g}" for name, total in returns.items()]
        if not high:
            return Result("semantic.canary_floor", "pass",
                          [f"no canary within {self.kit.floor_margin:g} of the top {self.kit.top:g}", *evidence],
                          {"returns": returns})
        return Result("semantic.canary_floor", "fail",
                      [f"canaries within the margin of the top: {sorted(high)}", *evidence], {"returns": returns},
                      "the reward must not be reachable by a constant, first-legal or random policy")

    def replayability(self, returns: dict[str, float]) -> Result:
        recorded = {t["name"]: float(t["return"]) for t in self.kit.canaries}
        if self.kit.oracle is not None:
            recorded["oracle"] = float(self.kit.oracle["return"])
            returns = {**returns, "oracle": self.replay(self.kit.oracle).total}
        differ = {
            k: (recorded[k], returns[k]) for k in recorded if not math.isclose(recorded[k], returns[k], abs_tol=1e-9)
        }
        if not differ:
            return Result("semantic.replayability", "pass",
                          [f"{len(recorded)} recorded trajectories reproduce their returns"],
                          {"replayed": len(recorded)})
        return Result("semantic.replayability", "fail",
                      [f"{name}: recorded {a:g}, replayed {b:g}" for name, (a, b) in differ.items()], {},
                      "regenerate the kit (`openenv-gym kit PACKAGE`) after changing the env, and seed it fully")

    def no_solution_leakage(self, returns: dict[str, float]) -> Result:
        """Follow each field of the observation and ``info`` whose values are actions: none may reach the top."""
        leaks = []
        with self.session() as env:
            obs, info = env.reset(seed=0)
            fields = _action_fields(env.action_space, obs, info)
        for where, key in fields:
            total = self.episode(functools.partial(_follow, where=where, key=key), seed=0,
                                 label=f"follow {where}[{key!r}]").total
            if self.kit.reached_top(total) and not any(self.kit.reached_top(r) for r in returns.values()):
                leaks.append(f"playing {where}[{key!r}] as the action returns {total:g} (the top is {self.kit.top:g})")
        measured = {"fields_followed": [f"{w}[{k!r}]" for w, k in fields]}
        if not leaks:
            return Result("semantic.no_solution_leakage", "pass",
                          [f"{len(fields)} action-like fields followed; none reaches the top"], measured)
        return Result("semantic.no_solution_leakage", "fail", leaks, measured,
                      "remove the answer from what the agent sees (observation and info)")

    def resource_envelope(self) -> Result:
        peak = _peak_rss_mb(self.pid)
        if peak is None:
            return Result("semantic.resource_envelope", "skip", ["no /proc/PID/status here to read the peak RSS"])
        measured = {"peak_rss_mb": round(peak, 1), "memory_mb": self.kit.memory_mb}
        evidence = [f"server peak RSS {peak:.0f} MB after every check so far; declared {self.kit.memory_mb} MB"]
        if peak <= self.kit.memory_mb:
            return Result("semantic.resource_envelope", "pass", evidence, measured)
        return Result("semantic.resource_envelope", "fail", evidence, measured,
                      "raise resources.memory_mb (or regenerate the kit)")

    # -- beyond RFC 008 ----------------------------------------------------------------------

    def repeated_action(self) -> Result:
        with self.session() as env:
            candidates = _repeatable_actions(env.action_space)
        best: tuple[float, Any] = (-math.inf, None)
        for action in candidates:
            for seed in PROBE_SEEDS:
                total = self.episode(functools.partial(_constant, action), seed=seed, label=f"repeat {action!r}").total
                best = max(best, (total, action), key=lambda pair: pair[0])
        measured = {"actions_tried": len(candidates), "best_return": best[0]}
        evidence = [f"best return of one action repeated: {best[0]:g} (action {best[1]!r}); top {self.kit.top:g}"]
        if not self.kit.reached_top(best[0]):
            return Result("hacking.repeated_action", "pass", evidence, measured)
        return Result("hacking.repeated_action", "fail", evidence, measured,
                      "repeating one action must not earn the top reward")

    def reward_range(self) -> Result:
        low, high = self.kit.reward_range
        outside = [(label, r) for label, r in self.rewards_seen if not (low <= r <= high and math.isfinite(r))]
        measured = {"rewards_checked": len(self.rewards_seen)}
        if not outside:
            return Result("hacking.reward_range", "pass",
                          [f"{len(self.rewards_seen)} rewards and returns of every probe within [{low:g}, {high:g}]"],
                          measured)
        return Result("hacking.reward_range", "fail",
                      [f"{label}: {r:g} outside [{low:g}, {high:g}]" for label, r in outside[:10]], measured,
                      "bound the reward, or declare the range it really has")

    def learnability(self) -> Result:
        from .learning import learn

        floor = max(float(t["return"]) for t in self.kit.canaries)
        goal = floor + self.kit.floor_margin
        trained = learn(self.kit.root.resolve(), goal=goal, episodes=LEARNING_EPISODES, budget_s=LEARNING_BUDGET_S)
        if trained["learner"] is None:
            return Result("learning.learnability", "skip", [f"no bundled learner for {trained['spaces']}"])
        curve = trained["curve"]
        reached = next((i for i, total in enumerate(curve) if total >= goal), None)
        measured = {"learner": trained["learner"], "goal": goal, "evaluations": len(curve), "curve": curve}
        if reached is not None:
            return Result("learning.learnability", "pass",
                          [f"{trained['learner']} reached {curve[reached]:g} >= canary floor {floor:g} + margin "
                           f"{self.kit.floor_margin:g} at evaluation {reached + 1}"], measured)
        return Result("learning.learnability", "fail",
                      [f"{trained['learner']}: best {max(curve, default=math.nan):g} in {len(curve)} evaluations, "
                       f"below canary floor {floor:g} + margin {self.kit.floor_margin:g}"], measured,
                      "the reward must depend on the actions: a learner could not beat the canaries")

    def throughput(self) -> Result:
        measured: dict[str, Any] = {}
        for sessions in (1, 4):
            latencies: list[list[float]] = [[] for _ in range(sessions)]
            started = time.perf_counter()
            threads = [threading.Thread(target=self._timed_steps, args=(latencies[i],)) for i in range(sessions)]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join(timeout=120)
            elapsed = time.perf_counter() - started
            every = sorted(x for run in latencies for x in run)
            if every:
                measured[f"sessions_{sessions}"] = {
                    "steps_per_s": round(len(every) / elapsed, 1),
                    "p50_ms": round(1000 * statistics.median(every), 3),
                    "p99_ms": round(1000 * every[min(len(every) - 1, int(0.99 * len(every)))], 3),
                }
        evidence = [f"{k}: {v['steps_per_s']} steps/s, p50 {v['p50_ms']} ms, p99 {v['p99_ms']} ms"
                    for k, v in measured.items()]
        return Result("perf.throughput", "pass", evidence, measured)

    def _timed_steps(self, out: list[float]) -> None:
        with self.session() as env:
            env.action_space.seed(0)
            obs, info = env.reset(seed=0)
            for _ in range(THROUGHPUT_STEPS):
                action = _sample(env.action_space, action_mask(obs, info))
                started = time.perf_counter()
                obs, _, terminated, truncated, info = env.step(action)
                out.append(time.perf_counter() - started)
                if terminated or truncated:
                    obs, info = env.reset()


def _sample(space: gym.Space, mask: Any) -> Any:
    if mask is not None and isinstance(space, gym.spaces.Discrete):
        return space.sample(np.asarray(mask, dtype=np.int8))
    return space.sample()


def _repeatable_actions(space: gym.Space) -> list[Any]:
    if isinstance(space, gym.spaces.Discrete):
        start = int(space.start)
        return list(range(start, start + min(int(space.n), REPEATED_ACTIONS)))
    if isinstance(space, gym.spaces.Box):
        middle = np.clip(np.zeros(space.shape, space.dtype), space.low, space.high).astype(space.dtype)
        return [space.low.copy(), middle, space.high.copy()]
    return []


def _action_fields(space: gym.Space, obs: Any, info: dict) -> list[tuple[str, str]]:
    """``(holder, key)`` of each field of a Dict observation or of ``info`` whose value is an action."""
    found: list[tuple[str, str]] = []
    for where, holder in (("obs", obs), ("info", info)):
        if isinstance(holder, dict):
            found.extend((where, key) for key, value in holder.items()
                         if key != "action_mask" and spaces.contains(space, _as_action(space, value)))
    return found


def _as_action(space: gym.Space, value: Any) -> Any:
    if isinstance(space, gym.spaces.Discrete) and isinstance(value, (int, np.integer)) and not isinstance(value, bool):
        return int(value)
    return value


def _follow(env: gym.Env, *, where: str, key: str) -> Policy:
    """The policy playing the value of ``where[key]`` (``obs`` or ``info``) when it is an action."""
    space = env.action_space

    def policy(obs: Any, info: dict, mask: Any) -> Any:
        holder = obs if where == "obs" else info
        value = _as_action(space, holder.get(key)) if isinstance(holder, dict) else None
        return value if spaces.contains(space, value) else _sample(space, mask)

    return policy


def _peak_rss_mb(pid: int) -> float | None:
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return None
    for line in status.splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return None


# -- running ------------------------------------------------------------------------------------


def run_checks(package: str | Path, *, upstream: bool = True, progress: Callable[[str], None] | None = None) -> dict:
    """Every check on ``package``; the report as a JSON-able dict in upstream's shape."""
    from .upstream import Level, start_package, validate

    root = Path(package)
    kit = Declared.load(root)
    say = progress or (lambda line: None)
    results: list[Result] = []
    report: dict[str, Any] = {}
    if upstream:
        say("upstream graders (openenv.validation) through the local provider ...")
        upstream_report = validate(root, Level.RUNTIME)
        report = json.loads(upstream_report.model_dump_json())
        results.extend(Result(**{k: r[k] for k in ("check_id", "status", "measured", "evidence", "remediation",
                                                    "duration_s")}) for r in report["results"])
    subject = start_package(root)
    try:
        checker = Checker(kit, subject.base_url, lambda: start_package(root), subject.process.pid)
        plan: list[tuple[str, Callable[[], Result]]] = [
            ("runtime.episode_determinism", checker.episode_determinism),
            ("runtime.episode_isolation", checker.episode_isolation),
            ("semantic.oracle_max", checker.oracle_max),
        ]
        for name, check in plan:
            results.append(_timed(name, check, say))
        returns: dict[str, float] = {}  # the canaries' returns over the wire, played once for 4 checks

        def floor_gap() -> Result:
            returns.update(checker.canary_returns())
            return checker.floor_gap(returns)

        results.append(_timed("semantic.floor_gap", floor_gap, say))
        for name, check in [
            ("semantic.canary_floor", lambda: checker.canary_floor(returns)),
            ("semantic.replayability", lambda: checker.replayability(returns)),
            ("semantic.no_solution_leakage", lambda: checker.no_solution_leakage(returns)),
            ("hacking.repeated_action", checker.repeated_action),
            ("learning.learnability", checker.learnability),
            ("perf.throughput", checker.throughput),
            ("hacking.reward_range", checker.reward_range),
            ("semantic.resource_envelope", checker.resource_envelope),
        ]:
            results.append(_timed(name, check, say))
    finally:
        subject.stop()
    ours = {r.check_id for r in results if r.check_id.split(".")[0] in ("semantic", "hacking", "learning", "perf")
            or r.check_id in ("runtime.episode_determinism", "runtime.episode_isolation")}
    # Upstream's "not implemented" placeholders give way to the checks implemented here.
    results = [r for r in results if not (r.check_id in ours and r.evidence == [NOT_IMPLEMENTED])]
    report.update({
        "report_schema_version": report.get("report_schema_version", "2"),
        "target": str(root),
        "checked_by": "openenv-gym check",
        "results": [r.as_dict() for r in results],
        "verdict": verdict(results),
    })
    return report


def _timed(name: str, check: Callable[[], Result], say: Callable[[str], None]) -> Result:
    say(f"{name} ...")
    started = time.perf_counter()
    try:
        result = check()
    except Exception as exc:  # noqa: BLE001 - a check that crashes is an ERROR in the report, not a crash
        result = Result(name, "error", [f"{type(exc).__name__}: {exc}"])
    result.duration_s = time.perf_counter() - started
    return result


def verdict(results: list[Result]) -> str:
    """``fail`` when a check failed or errored, ``warn`` when one was skipped, else ``pass``."""
    statuses = {r.status for r in results}
    if statuses & {"fail", "error"}:
        return "fail"
    return "warn" if "skip" in statuses else "pass"


def table(report: dict) -> str:
    """The report as a terminal table: one line per check, then the verdict."""
    width = max(len(r["check_id"]) for r in report["results"])
    lines = [f"{r['status'].upper():<5}  {r['check_id']:<{width}}  {(r['evidence'] or [''])[0]}"
             for r in report["results"]]
    return "\n".join([*lines, f"verdict: {report['verdict'].upper()}"])


def main(package: str, *, json_path: str | None = None, markdown_path: str | None = None,
         upstream: bool = True) -> int:
    """``openenv-gym check``: progress on stderr, the table on stdout; 1 on FAIL or ERROR."""
    try:
        report = run_checks(package, upstream=upstream, progress=lambda line: print(line, file=sys.stderr))
    except (FileNotFoundError, ImportError) as exc:
        print(f"openenv-gym: {exc}", file=sys.stderr)
        return 1
    print(table(report))
    if json_path:
        Path(json_path).write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")
    if markdown_path:
        from .report import write_markdown

        command = " ".join(["openenv-gym check", package, *(["--skip-upstream"] if not upstream else [])])
        write_markdown(report, markdown_path, command=command)
    return 1 if report["verdict"] == "fail" else 0
