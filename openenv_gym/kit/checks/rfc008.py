"""The checks of OpenEnv's RFC 008, under its ids: ``runtime.episode_determinism`` (a seeded
episode replays identically in fresh sessions and in a fresh server),
``runtime.episode_isolation`` (stepping one session never changes another),
``semantic.oracle_max``, ``semantic.floor_gap``, ``semantic.canary_floor``,
``semantic.replayability`` (the kit's recorded returns reproduce),
``semantic.no_solution_leakage`` (no field of the observation or ``info`` that, followed as an
action, reaches the top) and ``semantic.resource_envelope`` (the server's peak RSS within
``memory_mb``).

Each is a function of a :class:`~.checker.Checker` that gives a :class:`~.checker.Result`.
The four that compare with the canaries share their returns over the wire, played once
(:func:`canary_returns`).
"""

from __future__ import annotations

import functools
import hashlib
import math
import statistics
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np

from ... import spaces
from ...server.multiagent import action_mask
from .. import mean_returns
from .checker import Checker, Result
from .play import Policy, _digest, _sample, scripted

#: Seeds (the first probe seeds) each action-like field is followed on: its mean return counts.
LEAKAGE_SEEDS = 3


def episode_determinism(checker: Checker) -> Result:
    random = next(t for t in checker.kit.canaries if t["name"] == "random" and t["reset"]["seed"] == checker.kit.seed)
    runs = [checker.replay(random), checker.replay(random)]
    where = ["a seeded episode replays identically in 2 fresh sessions and a fresh server"]
    if checker.restart is None:
        where = ["a seeded episode replays identically in 2 fresh sessions",
                 "not checked: a fresh server (a server at a URL cannot be restarted from here)"]
    else:
        fresh = checker.restart()
        try:
            runs.append(checker.replay(random, url=fresh.url))
        finally:
            fresh.stop()
    digests = {r.digest for r in runs}
    measured = {"replays": len(runs), "distinct_traces": len(digests)}
    seed_problem = checker.facts.seed_problem if checker.facts is not None else None
    if len(digests) == 1 and seed_problem is None:
        return Result("runtime.episode_determinism", "pass", where, measured)
    evidence = [f"seed {random['reset']['seed']}, same actions: {len(digests)} different traces in "
                f"{len(runs)} replays (returns {[r.total for r in runs]})"]
    remediation = ("make every random draw of the env come from the generator reset(seed=...) seeds "
                   "(self.np_random), not from global or unseeded state")
    if checker.facts is not None:
        if seed_problem:
            evidence.append(seed_problem)
        remediation = (
            f"the server at {checker.url} ({checker.facts.name}) does not replay a seeded episode: a learner's "
            f"seeded evaluations on it are not repeatable. If you run this server, {remediation}; if it is "
            f"one of upstream OpenEnv's envs, `openenv-gym list` shows whether openenv-gym has a built-in "
            f"server for it that does (gym.make('openenv/<Name>-v0') with no base_url)")
    return Result("runtime.episode_determinism", "fail", evidence, measured, remediation)


def episode_isolation(checker: Checker) -> Result:
    # The longest recorded episode, played twice at once: with state shared between
    # sessions, each session's steps move the other's.
    if checker.facts is not None and checker.facts.one_session:
        return Result("runtime.episode_isolation", "skip",
                      [f"not checkable here: {checker.facts.one_session}; isolation needs two sessions at once"])
    if checker.facts is not None and checker.facts.seed_problem:
        return Result("runtime.episode_isolation", "skip", [
            f"unmet dependency: runtime.episode_determinism ({checker.facts.seed_problem}): two episodes that "
            f"differ cannot tell shared state from chance"])
    trajectory = max([*checker.kit.canaries, *([checker.kit.oracle] if checker.kit.oracle else [])],
                     key=lambda t: len(t["actions"]))
    alone, again = checker.replay(trajectory), checker.replay(trajectory)
    if alone.digest != again.digest:
        return Result("runtime.episode_isolation", "skip", ["unmet dependency: runtime.episode_determinism"])
    seed = trajectory["reset"]["seed"]
    with checker.session() as other, checker.session() as env:
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


def oracle_max(checker: Checker) -> Result:
    oracle = checker.kit.oracle
    if oracle is None:
        return Result("semantic.oracle_max", "fail", ["the package declares no oracle"], {},
                      "give the kit an oracle: `openenv-gym kit PACKAGE --oracle module:policy`")
    got = checker.replay(oracle).total
    goal = checker.kit.top - checker.kit.oracle_tolerance
    evidence = [f"oracle return {got:g} over the wire; the declared top is {checker.kit.top:g}"]
    threshold = checker.kit.measured.get("reward_threshold")
    if threshold is not None and threshold < goal:
        goal = float(threshold)
        evidence.append(f"goal: Gymnasium's reward_threshold {threshold:g} (the env's 'solved' return)")
    measured = {"oracle_return": got, "goal": goal}
    if got >= goal:
        return Result("semantic.oracle_max", "pass", evidence, measured)
    return Result("semantic.oracle_max", "fail", evidence, measured,
                  "ship an oracle that reaches the top of reward.range, or declare the range the env can reach")


def canary_returns(checker: Checker) -> dict[str, float]:
    """Every shipped canary trajectory replayed over the wire: its return, by :func:`_label`."""
    return {_label(t): checker.replay(t).total for t in checker.kit.canaries}


def canary_means(checker: Checker, returns: dict[str, float]) -> dict[str, float]:
    """Each canary's mean return over its seeds, from :func:`canary_returns`."""
    return mean_returns([{"name": t["name"], "return": returns[_label(t)]} for t in checker.kit.canaries])


def floor_gap(checker: Checker, returns: dict[str, float]) -> Result:
    if skipped := checker.at_the_top("semantic.floor_gap"):
        return skipped
    floor = max(canary_means(checker, returns).values())
    gap = checker.kit.top - floor
    measured = {"floor": floor, "top": checker.kit.top, "floor_margin": checker.kit.floor_margin,
                "seeds": len(checker.kit.canary_seeds)}
    evidence = [f"best canary mean return {floor:g} over {len(checker.kit.canary_seeds)} seeds; the top is "
                f"{checker.kit.top:g} (gap {gap:g}, margin {checker.kit.floor_margin:g})"]
    if gap >= checker.kit.floor_margin:
        return Result("semantic.floor_gap", "pass", evidence, measured)
    return Result("semantic.floor_gap", "fail", evidence, measured,
                  "a trivial policy already scores the top: make the reward harder to get without the task "
                  "(for a game, a stronger opponent)")


def canary_floor(checker: Checker, returns: dict[str, float]) -> Result:
    if skipped := checker.at_the_top("semantic.canary_floor"):
        return skipped
    returns = canary_means(checker, returns)
    high = {name: total for name, total in returns.items() if checker.kit.reached_top(total)}
    evidence = [f"{name}: {total:g}" for name, total in returns.items()]
    if not high:
        return Result("semantic.canary_floor", "pass",
                      [f"no canary within {checker.kit.floor_margin:g} of the top {checker.kit.top:g}", *evidence],
                      {"returns": returns})
    return Result("semantic.canary_floor", "fail",
                  [f"canaries within the margin of the top: {sorted(high)}", *evidence], {"returns": returns},
                  "the reward must not be reachable by a constant, first-legal or random policy")


def replayability(checker: Checker, returns: dict[str, float]) -> Result:
    recorded = {_label(t): float(t["return"]) for t in checker.kit.canaries}
    if checker.kit.oracle is not None:
        recorded["oracle"] = float(checker.kit.oracle["return"])
        returns = {**returns, "oracle": checker.replay(checker.kit.oracle).total}
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


def no_solution_leakage(checker: Checker, returns: dict[str, float]) -> Result:
    """Follow each field of the observation and ``info`` whose values are actions: none may reach the top."""
    if skipped := checker.at_the_top("semantic.no_solution_leakage"):
        return skipped
    leaks = []
    with checker.session() as env:
        obs, info = env.reset(seed=0)
        fields = _action_fields(env.action_space, obs, info)
    seeds = checker.kit.probe_seeds[:LEAKAGE_SEEDS]
    for where, key in fields:
        total = statistics.fmean(
            checker.episode(functools.partial(_follow, where=where, key=key), seed=seed,
                            label=f"follow {where}[{key!r}]").total for seed in seeds)
        if checker.kit.reached_top(total) and not any(
                map(checker.kit.reached_top, canary_means(checker, returns).values())):
            leaks.append(f"playing {where}[{key!r}] as the action returns {total:g} on average over "
                         f"{len(seeds)} seeds (the top is {checker.kit.top:g})")
    measured = {"fields_followed": [f"{w}[{k!r}]" for w, k in fields], "seeds": len(seeds)}
    if not leaks:
        return Result("semantic.no_solution_leakage", "pass",
                      [f"{len(fields)} action-like fields followed; none reaches the top"], measured)
    return Result("semantic.no_solution_leakage", "fail", leaks, measured,
                  "remove the answer from what the agent sees (observation and info)")


def resource_envelope(checker: Checker) -> Result:
    if checker.pid is None:
        return Result("semantic.resource_envelope", "skip",
                      ["the server's process is not ours to measure, and no memory_mb is declared"])
    peak = _peak_rss_mb(checker.pid)
    if peak is None:
        return Result("semantic.resource_envelope", "skip", ["no /proc/PID/status here to read the peak RSS"])
    if checker.kit.memory_mb is None:
        return Result("semantic.resource_envelope", "skip",
                      [f"measured, nothing declared to compare with: server peak RSS {peak:.0f} MB after every "
                       f"check so far"], {"peak_rss_mb": round(peak, 1)})
    measured = {"peak_rss_mb": round(peak, 1), "memory_mb": checker.kit.memory_mb}
    evidence = [f"server peak RSS {peak:.0f} MB after every check so far; declared {checker.kit.memory_mb} MB"]
    if peak <= checker.kit.memory_mb:
        return Result("semantic.resource_envelope", "pass", evidence, measured)
    return Result("semantic.resource_envelope", "fail", evidence, measured,
                  "raise resources.memory_mb (or regenerate the kit)")


def _label(trajectory: dict) -> str:
    """A recorded trajectory's name and seed: ``random (seed 3)``."""
    return f"{trajectory['name']} (seed {trajectory['reset']['seed']})"


def _action_fields(space: gym.Space, obs: Any, info: dict) -> list[tuple[str, str]]:
    """``(holder, key)`` of each field of a Dict observation or of ``info`` whose value is an action."""
    found: list[tuple[str, str]] = []
    for where, holder in (("obs", obs), ("info", info)):
        if isinstance(holder, dict):
            found.extend((where, key) for key, value in holder.items()
                         if key != "action_mask" and _is_action(space, _as_action(space, value)))
    return found


def _is_action(space: gym.Space, value: Any) -> bool:
    """``True`` when ``value`` is an action of ``space`` (a flag is not, though Python counts it an int)."""
    return not isinstance(value, (bool, np.bool_)) and bool(spaces.contains(space, value))


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
        return value if _is_action(space, value) else _sample(space, obs, info)

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
