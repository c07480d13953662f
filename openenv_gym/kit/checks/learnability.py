"""``learning.learnability``: a small learner (:mod:`~openenv_gym.kit.learning`) beats the
canary floor by the margin within a bounded number of episodes, with its curve.

It trains in process with a package's env, and over the wire at a URL, where a legal-random
against reward-greedy probe stands in when no bundled learner fits the spaces. At a URL, the
best return it finds above the canaries becomes the observed top
(:attr:`~.declared.Declared.observed_top`) that the checks after it compare with: it runs
before them.
"""

from __future__ import annotations

import math
import statistics
import time
from typing import Any

import gymnasium as gym
import numpy as np

from ..remote import URL_MAX_STEPS
from .checker import Checker, Result
from .play import _action_key, _legal_choices

#: Training episodes (and seconds) the learnability probe may use.
LEARNING_EPISODES = 2000
LEARNING_BUDGET_S = 60.0
#: Episodes each strategy of the legal-random vs reward-greedy probe plays.
PROBE_EPISODES = 20


def learnability(checker: Checker) -> Result:
    if checker.kit.root is None:
        return _learnability_over_the_wire(checker)
    from ..learning import learn

    floor = checker.kit.floor
    goal = floor + checker.kit.floor_margin
    trained = learn(checker.kit.root.resolve(), goal=goal, episodes=LEARNING_EPISODES, budget_s=LEARNING_BUDGET_S,
                    eval_seeds=checker.kit.canary_seeds)
    if trained["learner"] is None:
        return Result("learning.learnability", "skip", [f"no bundled learner for {trained['spaces']}"])
    return _learned(checker, trained["learner"], trained["curve"], floor, goal, checker.kit.floor_margin)


def _learned(checker: Checker, learner: str, curve: list[float], floor: float, goal: float, margin: float) -> Result:
    reached = next((i for i, total in enumerate(curve) if total >= goal), None)
    measured = {"learner": learner, "goal": goal, "evaluations": len(curve), "curve": curve}
    if reached is not None:
        return Result("learning.learnability", "pass",
                      [f"{learner} reached {curve[reached]:g} >= canary floor {floor:g} + margin "
                       f"{margin:g} at evaluation {reached + 1}"], measured)
    evidence = [f"{learner}: best {max(curve, default=math.nan):g} in {len(curve)} evaluations, "
                f"below canary floor {floor:g} + margin {margin:g}"]
    seen = [r for _, r in checker.returns_seen] + [float(t["return"]) for t in checker.kit.canaries] + curve
    if seen and floor >= max(seen):
        evidence.append(f"the canaries already score the best return seen ({max(seen):g}): a trivial policy gets "
                        f"the most this env was seen to pay")
    return Result("learning.learnability", "fail", evidence, measured,
                  "the reward must depend on the actions: a learner could not beat the canaries")


def observed_margin(checker: Checker) -> float:
    """At a URL, the margin a return must clear the canary floor by: a tenth of the spread of
    the canaries' returns (at least 5% of the floor's size, and more than nothing)."""
    returns = [float(t["return"]) for t in checker.kit.canaries]
    spread = max(returns) - min(returns) if returns else 0.0
    return max(0.1 * spread, 0.05 * abs(checker.kit.floor), 1e-6)


def _learnability_over_the_wire(checker: Checker) -> Result:
    """The bundled learner trained over the wire, within :data:`LEARNING_BUDGET_S`; where
    none fits the spaces, a legal-random against a reward-greedy probe. What it finds above
    the canary floor becomes the observed top the checks after it compare with."""
    from ..learning import learner_for

    floor, margin = checker.kit.floor, observed_margin(checker)
    checker.kit.floor_margin = margin
    goal = floor + margin
    with checker.session() as env:
        recorded = _Recorded(env, checker)
        obs, _ = recorded.reset(seed=checker.kit.seed)
        learner = learner_for(env.observation_space, env.action_space, obs)
        if learner is None:
            return _greedy_probe(checker, recorded, floor, goal)
        curve = learner.train(recorded, goal=goal, episodes=LEARNING_EPISODES, budget_s=LEARNING_BUDGET_S,
                              eval_seeds=checker.kit.canary_seeds, max_steps=URL_MAX_STEPS)
    _observe_top(checker, max(curve, default=-math.inf), goal, learner.name)
    result = _learned(checker, learner.name, curve, floor, goal, margin)
    result.evidence.append(f"trained over the wire on {checker.url}, {URL_MAX_STEPS} steps an episode at most, "
                           f"within {LEARNING_BUDGET_S:g} s")
    return result


def _greedy_probe(checker: Checker, env: gym.Env, floor: float, goal: float) -> Result:
    """Legal-random against reward-greedy (the legal action whose rewards so far averaged
    best, regardless of the state; a tenth of the moves random), :data:`PROBE_EPISODES` episodes
    each: does the reward answer the actions at all? A probe this simple finding nothing is
    no verdict on what a real learner (or a language model) could do."""
    space = env.action_space
    rng = np.random.default_rng(checker.kit.seed)
    paid: dict[str, list[float]] = {}
    deadline = time.monotonic() + LEARNING_BUDGET_S
    means: dict[str, float] = {}
    for strategy in ("legal-random", "reward-greedy"):
        totals = []
        for episode in range(PROBE_EPISODES):
            if time.monotonic() > deadline:
                break
            obs, info = env.reset(seed=checker.kit.seed + episode)
            total = 0.0
            for _ in range(URL_MAX_STEPS):
                choices = _legal_choices(space, obs, info)
                if choices is None:
                    return Result("learning.learnability", "skip", [
                        f"no bundled learner for {env.observation_space} -> {space}, and no list of legal actions "
                        f"to probe with: free-form actions are a language model's task (openenv_gym.trl)"])
                keyed = {_action_key(c): c for c in choices}
                if strategy == "reward-greedy" and rng.random() > 0.1 and any(k in paid for k in keyed):
                    best = max((k for k in keyed if k in paid), key=lambda k: statistics.fmean(paid[k]))
                    action = keyed[best]
                else:
                    action = choices[int(rng.integers(len(choices)))]
                obs, reward, terminated, truncated, info = env.step(action)
                paid.setdefault(_action_key(action), []).append(float(reward))
                total += float(reward)
                if terminated or truncated:
                    break
            totals.append(total)
        means[strategy] = statistics.fmean(totals) if totals else math.nan
    measured = {"learner": "legal-random vs reward-greedy probe", "goal": goal, "returns": means,
                "episodes": PROBE_EPISODES}
    greedy = means["reward-greedy"]
    _observe_top(checker, greedy, goal, "the reward-greedy probe")
    evidence = [f"no bundled learner for {env.observation_space} -> {space}; over the wire, mean return of "
                f"legal-random {means['legal-random']:g}, reward-greedy {greedy:g} (canary floor {floor:g})"]
    if greedy >= goal:
        return Result("learning.learnability", "pass",
                      [*evidence, "the reward answers the actions: greedy beats the canary floor"], measured)
    return Result("learning.learnability", "skip",
                  [*evidence, "inconclusive: a probe this simple found no signal, which says nothing of what a "
                              "real learner could find"], measured)


def _observe_top(checker: Checker, best: float, goal: float, by: str) -> None:
    """At a URL, ``best`` (a return ``by`` a learner or probe) becomes the observed top when it
    clears the goal (the canary floor plus the observed margin)."""
    if checker.kit.reward_range is None and math.isfinite(best) and best >= goal:
        checker.kit.observed_top = max(best, *(r for _, r in checker.returns_seen))
        checker.observed_by = by


class _Recorded(gym.Wrapper):
    """An env whose every reward the checker sees (for the observed reward range)."""

    def __init__(self, env: gym.Env, checker: Checker) -> None:
        super().__init__(env)
        self.checker = checker

    def step(self, action: Any) -> Any:
        step = self.env.step(action)
        self.checker.rewards_seen.append(("learning", float(step[1])))
        return step
