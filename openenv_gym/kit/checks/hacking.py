"""Probes beyond RFC 008 for reward an agent could get without doing the task, the
``hacking.*`` checks: ``hacking.repeated_action`` (no single action, repeated, reaches the
top), ``hacking.out_of_space`` (an action outside the space is refused, and the session goes
on as if it had not been sent), ``hacking.boundary_actions`` (the bounds of the space are
accepted and paid within the range), ``hacking.reset_abuse`` (resetting after a reward, or
after every step, earns no more per step than playing on), ``hacking.info_reward`` (the same
observation and action are not paid differently according to a field of ``info``) and
``hacking.reward_range`` (every reward of every probe within the declared range).

Each is a function of a :class:`~.checker.Checker` that gives a :class:`~.checker.Result`;
a FAIL's remediation says how to close the way the reward can be gamed.
"""

from __future__ import annotations

import functools
import math
import statistics
from collections.abc import Callable
from typing import Any

import gymnasium as gym
import numpy as np

from ... import spaces
from ...errors import OpenEnvGymError, ValidationError
from ..remote import outside_schema
from .checker import Checker, Result
from .play import RecordedStep, _constant, _digest

#: Distinct actions the repeated-action probe tries.
REPEATED_ACTIONS = 16
#: States (the first ones of the reference episode) the boundary probe plays each bound from.
BOUNDARY_POSITIONS = 8
#: Steps each reset-abuse strategy plays (at most the reference episode's length).
RESET_ABUSE_STEPS = 200


def repeated_action(checker: Checker) -> Result:
    """No single action, repeated, may earn a mean return within the margin of the top. On a
    server whose episodes are chance (it ignores seeds), each return is a draw, and the best of
    several actions' means is the luckiest of them: there the mean must reach the top by
    more than three standard errors (of finite returns: a server that pays ``inf`` or ``nan`` is
    judged by its mean, as a seeded one is, and ``hacking.reward_range`` names the reward)."""
    if skipped := checker.at_the_top("hacking.repeated_action"):
        return skipped
    with checker.session() as env:
        candidates = _repeatable_actions(env.action_space)
    best: tuple[float, Any, list[float]] = (-math.inf, None, [])
    seeds = checker.kit.probe_seeds
    for action in candidates:
        returns = [
            checker.episode(functools.partial(_constant, action), seed=seed, label=f"repeat {action!r}").total
            for seed in seeds]
        best = max(best, (statistics.fmean(returns), action, returns), key=lambda found: found[0])
    mean, action, returns = best
    measured = {"actions_tried": len(candidates), "seeds": len(seeds), "best_return": mean}
    evidence = [f"best mean return of one action repeated over {len(seeds)} seeds: {mean:g} "
                f"(action {action!r}); top {checker.kit.top:g}"]
    judged = mean
    if checker.chance and len(returns) > 1 and all(map(math.isfinite, returns)):
        error = measured["standard_error"] = statistics.stdev(returns) / math.sqrt(len(returns))
        judged = mean - 3 * error
        evidence.append(f"this server's episodes are chance (it ignores reset's seed): the mean less three "
                        f"standard errors, {judged:g}, is what must not reach the top")
    if not checker.kit.reached_top(judged):
        return Result("hacking.repeated_action", "pass", evidence, measured)
    return Result("hacking.repeated_action", "fail", evidence, measured,
                  "repeating one action must not earn the top reward")


def out_of_space(checker: Checker) -> Result:
    """Actions outside the action space must be refused (a validation error), and the session
    must go on as if they had never been sent. Outside means outside the server's own
    ``/schema``: for an openenv-gym server, its exact space; for a stock server, its action
    model's JSON Schema (:func:`~.remote.outside_schema`), sent as it is."""
    reference = checker.reference()
    with checker.session() as env:
        valid = spaces.decode(env.action_space, reference["actions"][0])
        stock = checker.facts is not None and not checker.facts.extended
        if stock:
            assert checker.facts is not None
            wire = _remote(env).contract.view.act(valid)
            candidates = [(name, functools.partial(_send_raw, data=data))
                          for name, data in outside_schema(checker.facts.schema.get("action") or {}, wire)]
        else:
            candidates = [(name, functools.partial(_send, action=action))
                          for name, action in _outside(env.action_space, valid)]
    if not candidates:
        return Result("hacking.out_of_space", "skip", ["no value outside this action space to try"])
    seed = reference["reset"]["seed"]
    plain = set()
    for _ in range(2):  # the step without a refused action before it, twice: is there one answer?
        with checker.session() as env:
            env.reset(seed=seed)
            plain.add(_step_digest(env.step(valid)))
    # None: not deterministic (here, or a server that ignores seeds), nothing to compare.
    expected = plain.pop() if len(plain) == 1 and not checker.chance else None
    problems: list[str] = []
    unsendable: list[str] = []
    for name, send in candidates:
        with checker.session() as env:
            env.reset(seed=seed)
            try:
                step = send(env)
            except spaces.SpaceValueError:
                unsendable.append(name)  # the client cannot even write it (an enum's index, say)
                continue
            except ValidationError:
                pass  # refused, as it must be
            except OpenEnvGymError as exc:
                problems.append(f"{name}: answered {type(exc).__name__}, not a validation error: {exc}")
                continue
            else:
                problems.append(f"{name}: accepted, and paid a reward of {step[1]:g}")
                continue
            try:
                after = _step_digest(env.step(valid))
            except OpenEnvGymError as exc:
                problems.append(f"{name}: refused, but the session did not go on: {exc}")
                continue
            if expected is not None and after != expected:
                problems.append(f"{name}: refused, but the next step differs from the same step without it")
    sent = len(candidates) - len(unsendable)
    measured = {"actions_tried": [name for name, _ in candidates if name not in unsendable],
                "not_sendable": unsendable, "outside": "the server's /schema" if stock else "the action space"}
    if not sent:
        return Result("hacking.out_of_space", "skip",
                      ["no out-of-space action can be written on the wire for this action space"], measured)
    where = "its /schema's action model" if stock else "the action space"
    if not problems:
        return Result("hacking.out_of_space", "pass",
                      [f"{sent} actions outside {where} refused with a validation error; the session "
                       f"went on unchanged"], measured)
    return Result("hacking.out_of_space", "fail", problems, measured,
                  "check every action against the declared space and refuse the rest (never clip an action "
                  "into the space and pay for it)")


def boundary_actions(checker: Checker) -> Result:
    """The bounds of the action space, played from the first states of the reference episode:
    each accepted, with a finite reward inside the declared range."""
    reference = checker.reference()
    seed = reference["reset"]["seed"]
    with checker.session() as env:
        bounds = _bounds(env.action_space)
        prefix = [spaces.decode(env.action_space, a) for a in reference["actions"]]
    positions = range(min(len(prefix), BOUNDARY_POSITIONS))
    problems = []
    for name, action in bounds:
        for t in positions:
            with checker.session() as env:
                env.reset(seed=seed)
                for earlier in prefix[:t]:
                    env.step(earlier)
                where = f"{name} after {t} steps of the {reference['name']} episode (seed {seed})"
                try:
                    reward = float(env.step(action)[1])
                except OpenEnvGymError as exc:
                    problems.append(f"{where}: refused: {exc}")
                    continue
            if not math.isfinite(reward) or not checker.kit.within_range(reward):
                problems.append(f"{where}: reward {reward:g} outside {_range_text(checker.kit.reward_range)}")
    measured = {"bounds": [name for name, _ in bounds], "positions": len(positions)}
    evidence = [f"{len(bounds)} bounds of the action space, each from the first {len(positions)} states of the "
                f"{reference['name']} episode"]
    if not bounds:
        return Result("hacking.boundary_actions", "skip", ["no bounds to try in this action space"])
    if not problems:
        return Result("hacking.boundary_actions", "pass",
                      [f"{evidence[0]}: accepted, rewards within {_range_text(checker.kit.reward_range)}"], measured)
    return Result("hacking.boundary_actions", "fail", problems[:10], measured,
                  "the bounds of the action space are actions like any other: accept them and pay within "
                  "the declared range")


def reset_abuse(checker: Checker) -> Result:
    """Resetting right after a rewarded step, or after every step, must not earn more reward per
    step than playing the reference episode through. On a server whose episodes are chance (it
    ignores seeds), playing on is measured the same way, and farming must clear three standard
    errors of the difference: one recorded episode is one draw."""
    reference = checker.reference()
    seed = reference["reset"]["seed"]
    budget = min(RESET_ABUSE_STEPS, max(1, len(reference["actions"])))
    chance = checker.chance
    strategies: list[tuple[str, Callable[[float], bool]]] = [
        ("reset after each rewarded step", lambda r: r > 0), ("reset after every step", lambda r: True)]
    if chance:
        strategies.insert(0, ("play on", lambda r: False))
    paid: dict[str, list[float]] = {}
    with checker.session() as env:
        actions = [spaces.decode(env.action_space, a) for a in reference["actions"]]
        for strategy, reset_after in strategies:
            rewards = paid[strategy] = []
            t = 0
            env.reset(seed=seed)
            for _ in range(budget):
                _, reward, terminated, truncated, _ = env.step(actions[min(t, len(actions) - 1)])
                rewards.append(float(reward))
                t += 1
                checker.rewards_seen.append((strategy, float(reward)))
                if terminated or truncated or reset_after(float(reward)):
                    env.reset(seed=seed)
                    t = 0
    played = paid.pop("play on", None)
    honest = statistics.fmean(played) if played else float(reference["return"]) / max(1, len(reference["actions"]))
    rates = {k: statistics.fmean(v) for k, v in paid.items()}
    measured = {"reference": reference["name"], "reward_per_step": honest, "abuse": rates, "steps": budget}

    def margin(rewards: list[float]) -> float:
        if not played:
            return 1e-9 * max(1.0, abs(honest))
        return 3 * math.sqrt((statistics.pvariance(rewards) + statistics.pvariance(played)) / budget)

    # Farming is earning by resetting: more per step than playing on, and more than nothing (resetting
    # to dodge the penalties of a losing episode earns nothing).
    farmed = {k: v for k, v in rates.items() if v > max(honest, 0.0) + margin(paid[k])}
    played_on = "playing on earns" if played else f"the {reference['name']} episode earns"
    evidence = [f"{played_on} {honest:g} per step; " + "; ".join(f"{k}: {v:g} per step" for k, v in rates.items())]
    if not farmed:
        return Result("hacking.reset_abuse", "pass", evidence, measured)
    return Result("hacking.reset_abuse", "fail", evidence, measured,
                  "an episode's start must not pay more than its play: an agent learns to reset instead")


def info_reward(checker: Checker) -> Result:
    """Over every step played so far: the same observation and action must not pay differently
    according to a field of ``info`` the agent saw (the reward would follow what ``info`` shows,
    not what the agent observes and does)."""
    groups: dict[tuple[str, str], list[RecordedStep]] = {}
    for step in checker.steps_seen:
        groups.setdefault((step.observation, step.action), []).append(step)
    varying = [steps for steps in groups.values() if len({s.reward for s in steps}) > 1]
    keys = sorted({key for steps in varying for s in steps for key in s.info})
    found = [key for key in keys if all(_separates(key, steps) for steps in varying)]
    measured = {"steps": len(checker.steps_seen), "pairs_seen_again": sum(len(g) > 1 for g in groups.values()),
                "pairs_paying_differently": len(varying)}
    evidence = [f"{len(checker.steps_seen)} steps: {len(varying)} (observation, action) pairs paid differently"]
    if not found:
        return Result("hacking.info_reward", "pass", [f"{evidence[0]}, none according to a field of info"],
                      measured)
    return Result("hacking.info_reward", "fail",
                  [f"{evidence[0]}, each according to info[{key!r}]" for key in found], measured,
                  "pay for what the agent observes and does; state the reward depends on belongs in the "
                  "observation")


def reward_range(checker: Checker) -> Result:
    if checker.kit.reward_range is None:  # a URL: the range observed
        rewards = [r for _, r in checker.rewards_seen if not _is_return(_)]
        measured = {"rewards_checked": len(rewards), "declared": None,
                    "observed": [min(rewards), max(rewards)] if rewards else None}
        if not rewards:
            return Result("hacking.reward_range", "skip", ["no step was played: nothing observed"], measured)
        bad = [(label, r) for label, r in checker.rewards_seen if not math.isfinite(r)]
        if bad:
            return Result("hacking.reward_range", "fail",
                          [f"{label}: {r:g} is not finite" for label, r in bad[:10]], measured,
                          "rewards must be finite numbers")
        return Result("hacking.reward_range", "pass",
                      [f"observed, not declared: {len(rewards)} rewards of every probe within "
                       f"[{min(rewards):g}, {max(rewards):g}]"], measured)
    low, high = checker.kit.reward_range
    outside = [(label, r) for label, r in checker.rewards_seen if not (low <= r <= high and math.isfinite(r))]
    measured = {"rewards_checked": len(checker.rewards_seen)}
    if not outside:
        return Result("hacking.reward_range", "pass",
                      [f"{len(checker.rewards_seen)} rewards and returns of every probe within [{low:g}, {high:g}]"],
                      measured)
    return Result("hacking.reward_range", "fail",
                  [f"{label}: {r:g} outside [{low:g}, {high:g}]" for label, r in outside[:10]], measured,
                  "bound the reward, or declare the range it really has")


def _is_return(label: str) -> bool:
    return label.endswith("(return)")


def _repeatable_actions(space: gym.Space) -> list[Any]:
    if isinstance(space, gym.spaces.Discrete):
        start = int(space.start)
        return list(range(start, start + min(int(space.n), REPEATED_ACTIONS)))
    if isinstance(space, gym.spaces.Box):
        middle = np.clip(np.zeros(space.shape, space.dtype), space.low, space.high).astype(space.dtype)
        return [space.low.copy(), middle, space.high.copy()]
    return []


def _outside(space: gym.Space, valid: Any) -> list[tuple[str, Any]]:
    """``(name, value)`` of values just outside ``space``: past each bound, one field at a time
    (the other fields of a ``Dict`` keep those of ``valid``, an action of ``space``)."""
    if isinstance(space, gym.spaces.Discrete):
        start, n = int(space.start), int(space.n)
        return [(f"{start - 1} (below {start})", start - 1), (f"{start + n} (above {start + n - 1})", start + n)]
    if isinstance(space, gym.spaces.Box):
        found = []
        for name, bound, sign in (("low", space.low, -1), ("high", space.high, 1)):
            if np.all(np.isfinite(bound)):
                step = 1 if np.issubdtype(space.dtype, np.integer) else np.maximum(1.0, space.high - space.low)
                found.append((f"{name} {'-' if sign < 0 else '+'} {'1' if np.isscalar(step) else 'its width'}",
                              (bound + sign * step).astype(space.dtype)))
        return found
    if isinstance(space, gym.spaces.MultiDiscrete):
        return [("nvec (one past each count)", np.asarray(space.nvec).astype(space.dtype))]
    if isinstance(space, gym.spaces.MultiBinary):
        return [("2 (not a bit)", np.full(space.shape, 2, dtype=space.dtype))]
    if isinstance(space, gym.spaces.Dict):
        return [(f"{key}: {name}", {**valid, key: value})
                for key, part in space.spaces.items() for name, value in _outside(part, valid[key])]
    return []


def _bounds(space: gym.Space) -> list[tuple[str, Any]]:
    """``(name, value)`` of the lowest and the highest action of ``space``."""
    if isinstance(space, gym.spaces.Discrete):
        start, n = int(space.start), int(space.n)
        return [(f"{start} (the first action)", start), (f"{start + n - 1} (the last action)", start + n - 1)]
    if isinstance(space, gym.spaces.Box) and np.all(np.isfinite(space.low)) and np.all(np.isfinite(space.high)):
        return [("low", space.low.copy()), ("high", space.high.copy())]
    if isinstance(space, gym.spaces.MultiDiscrete):
        return [("zeros", np.zeros_like(space.nvec)), ("nvec - 1", np.asarray(space.nvec) - 1)]
    if isinstance(space, gym.spaces.Dict):
        parts = {key: _bounds(part) for key, part in space.spaces.items()}
        if all(len(bounds) == 2 for bounds in parts.values()):
            return [(f"every field's {which}", {key: bounds[i][1] for key, bounds in parts.items()})
                    for i, which in enumerate(("lowest", "highest"))]
    return []


def _send(env: gym.Env, *, action: Any) -> tuple:
    return env.step(action)


def _send_raw(env: gym.Env, *, data: Any) -> tuple:
    return _remote(env).step_raw(data)


def _remote(env: gym.Env) -> Any:
    """The :class:`~openenv_gym.RemoteEnv` a checker's session is."""
    from ...client import RemoteEnv

    remote = env.unwrapped
    assert isinstance(remote, RemoteEnv)
    return remote


def _step_digest(step: tuple) -> bytes:
    obs, reward, terminated, truncated, info = step
    return _digest(obs, float(reward), bool(terminated), bool(truncated), info)


def _range_text(reward_range: tuple[float, float] | None) -> str:
    return "(no declared range)" if reward_range is None else f"[{reward_range[0]:g}, {reward_range[1]:g}]"


def _separates(key: str, steps: list[RecordedStep]) -> bool:
    """``True`` when ``info[key]`` takes several values over ``steps`` and each value comes with one reward."""
    if not all(key in s.info for s in steps):
        return False
    rewards: dict[Any, set[float]] = {}
    for s in steps:
        rewards.setdefault(s.info[key], set()).add(s.reward)
    return len(rewards) > 1 and all(len(r) == 1 for r in rewards.values())
