"""``openenv-gym check TARGET``: upstream's validation graders without Docker, then the
checks upstream leaves "not implemented", and probes beyond RFC 008.

    $ openenv-gym check wrappers/cartpole --json report.json
    $ openenv-gym check CartPole-v1                  # a kit generated on the fly
    $ openenv-gym check http://127.0.0.1:8000        # a server we did not start
    $ openenv-gym check OpenEnv/envs/maze_env --python venv/bin/python   # a package without a kit

A package with a validation kit (``openenv-gym kit``) is checked against it; for an env (a
Gymnasium id, ``module:factory``) a kit is generated into a temporary directory. The
package's own server is started on 127.0.0.1 (:func:`~.upstream.start_package`) and every
check plays episodes over the wire, as an agent would. At a URL (:mod:`.remote`), what
the server lets us know stands in for the kit: canaries recorded over the wire, whether it
holds two sessions at once (a one-session server SKIPs what needs two), whether it honours
seeds, the reward range observed, the best return the learner (trained over the wire)
reached as the top; what needs a kit SKIPs with its reason (:data:`URL_SKIPS`), and each
verdict a URL makes weaker says how (:data:`~.remote.WEAKER_AT_A_URL`). A package without
a kit (upstream OpenEnv's ``envs/<env>``) is started here and checked as a URL, with the
fresh servers and the process a URL lacks. The checks:

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
  the top), ``hacking.out_of_space`` (an action outside the space is refused, and the
  session goes on as if it had not been sent), ``hacking.boundary_actions`` (the
  bounds of the space are accepted and paid within the range), ``hacking.reset_abuse``
  (resetting after a reward, or after every step, earns no more per step than
  playing on), ``hacking.info_reward`` (the same observation and action are not paid
  differently according to a field of ``info``), ``learning.learnability`` (a small
  learner, :mod:`.learning`, beats the canary floor by the margin within a bounded
  number of episodes, with its curve; it trains in process with a package's env, over the
  wire at a URL, where a legal-random against reward-greedy probe stands in when no
  bundled learner fits the spaces), and
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
import os
import statistics
import sys
import tempfile
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

from ... import spaces
from ...errors import OpenEnvGymError, RemoteError, ValidationError
from ...server.multiagent import action_mask
from ...spaces.stock import LEGAL_ACTIONS
from .. import KIT_FILES, mean_returns
from ..remote import (
    URL_CHANCE_SEEDS,
    URL_EPISODE_S,
    URL_MAX_STEPS,
    URL_RECORDING_S,
    URL_SEEDS,
    WEAKER_AT_A_URL,
    ServerFacts,
    outside_schema,
    read_facts,
    session,
)

__all__ = ["Result", "Episode", "run_checks", "main", "verdict", "LEARNING_EPISODES"]

#: Training episodes (and seconds) the learnability probe may use.
LEARNING_EPISODES = 2000
LEARNING_BUDGET_S = 60.0
#: Distinct actions the repeated-action probe tries, and how many seeds (from the kit's) it
#: plays each from: a probe's return, like a canary's, is its mean over seeds.
REPEATED_ACTIONS = 16
PROBE_SEEDS = 8
#: Upstream's evidence for a check it has no grader for.
NOT_IMPLEMENTED = "grader not implemented in this build"
#: Steps of the throughput probe, per session, and the seconds they may take at most.
THROUGHPUT_STEPS = 300
THROUGHPUT_BUDGET_S = 30.0
#: Seeds (the first probe seeds) each action-like field is followed on: its mean return counts.
LEAKAGE_SEEDS = 3
#: Seconds a package without a kit may take to start (openenv's own import takes a few).
PACKAGE_STARTUP_S = 120.0
#: Episodes each strategy of the legal-random vs reward-greedy probe plays.
PROBE_EPISODES = 20
#: States (the first ones of the reference episode) the boundary probe plays each bound from.
BOUNDARY_POSITIONS = 8
#: Steps each reset-abuse strategy plays (at most the reference episode's length).
RESET_ABUSE_STEPS = 200


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
class Step:
    """One step as the agent saw it: the observation and ``info`` before it, the action, the reward."""

    observation: str  # a digest
    info: dict[str, Any]  # the scalar fields only
    action: str  # the action, as JSON
    reward: float


@dataclass
class Episode:
    """What one episode over the wire gave: rewards, a digest of every observation and info,
    and its steps."""

    rewards: list[float]
    digest: str
    ended: bool
    steps: list[Step] = field(default_factory=list)
    actions: list[Any] = field(default_factory=list)

    @property
    def total(self) -> float:
        return float(sum(self.rewards))


@dataclass
class Declared:
    """A package's declarations and kit files, as the checks read them (for a URL, :meth:`recorded`)."""

    root: Path | None
    reward_range: tuple[float, float] | None
    oracle_tolerance: float
    floor_margin: float
    memory_mb: int | None
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

    @classmethod
    def recorded(cls, url: str, reward_range: tuple[float, float] | None = None, *, chance: bool = False) -> Declared:
        """What a server at ``url`` lets us know without a kit: its canaries' trajectories,
        played now on :data:`~.remote.URL_SEEDS` seeds (:data:`~.remote.URL_CHANCE_SEEDS` when
        ``chance``: a server that ignores seeds, whose episodes are draws, and whose floor is a
        mean that wants more of them, as far as :data:`~.remote.URL_RECORDING_S` seconds allow)
        and cut after :data:`~.remote.URL_MAX_STEPS` steps (a kit's are measured in process,
        where steps are cheap), or after :data:`~.remote.URL_EPISODE_S` seconds. Nothing is
        declared but ``reward_range`` (a package's ``openenv.yaml`` may declare one): no oracle
        or resources; the top and the margin are observed later (:meth:`Checker.learnability`)."""
        from ..policies import canaries

        trajectories = []
        deadline = time.monotonic() + URL_RECORDING_S
        with session(url) as env:
            for seed in range(URL_CHANCE_SEEDS if chance else URL_SEEDS):
                if seed >= URL_SEEDS and time.monotonic() > deadline:
                    break
                for name, policy in canaries(env.action_space, seed).items():
                    episode = play(env, policy, seed=seed, max_steps=URL_MAX_STEPS, max_seconds=URL_EPISODE_S)
                    trajectories.append({"name": name, "reset": {"seed": seed}, "return": episode.total,
                                         "actions": [spaces.encode(env.action_space, a) for a in episode.actions]})
        return cls(root=None, reward_range=reward_range, oracle_tolerance=0.0, floor_margin=0.0, memory_mb=None,
                   canaries=trajectories, oracle=None, plan={}, measured={"seed": 0})

    @property
    def seed(self) -> int:
        """The kit's seed: its canaries played this one and the seeds after it."""
        return int(self.measured.get("seed", 0))

    @property
    def canary_seeds(self) -> list[int]:
        return sorted({int(t["reset"]["seed"]) for t in self.canaries})

    @property
    def probe_seeds(self) -> list[int]:
        """The seeds a probe plays each of its policies from: the first of the canaries'; at a URL
        (canaries on fewer seeds, and a server that may ignore them), :data:`PROBE_SEEDS` seeds."""
        return self.canary_seeds[:PROBE_SEEDS] if self.root is not None else list(range(PROBE_SEEDS))

    @property
    def floor(self) -> float:
        """The best canary's mean return, as the kit recorded it."""
        return max(mean_returns(self.canaries).values())

    #: At a URL: the best return observed (the learner's, the probes'), when it is above the
    #: canary floor by the observed margin; it stands in for the declared top (None: unknown).
    observed_top: float | None = None

    @property
    def top(self) -> float:
        if self.reward_range is not None:
            return self.reward_range[1]
        assert self.observed_top is not None, "no declared or observed top (the checks needing one SKIP)"
        return self.observed_top

    def within_range(self, reward: float) -> bool:
        """``True`` when ``reward`` is within the declared range (always, without one)."""
        return self.reward_range is None or self.reward_range[0] <= reward <= self.reward_range[1]

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


def play(env: gym.Env, policy: Policy, *, seed: int, max_steps: int = 1000,
         max_seconds: float | None = None) -> Episode:
    """One episode of ``policy`` on ``env`` (a :class:`~openenv_gym.RemoteEnv`), cut after
    ``max_steps`` steps or, when given, ``max_seconds`` seconds (a slow server's)."""
    deadline = math.inf if max_seconds is None else time.monotonic() + max_seconds
    digest = hashlib.sha256()
    obs, info = env.reset(seed=seed)
    digest.update(_digest(obs, info))
    rewards: list[float] = []
    steps: list[Step] = []
    actions: list[Any] = []
    for _ in range(max_steps):
        action = policy(obs, info, action_mask(obs, info))
        actions.append(action)
        seen = Step(hashlib.sha256(_digest(obs)).hexdigest(), _scalars(info), _digest(action).decode(), 0.0)
        obs, reward, terminated, truncated, info = env.step(action)
        seen.reward = float(reward)
        steps.append(seen)
        rewards.append(float(reward))
        digest.update(_digest(obs, float(reward), bool(terminated), bool(truncated), info))
        if terminated or truncated:
            return Episode(rewards, digest.hexdigest(), True, steps, actions)
        if time.monotonic() > deadline:
            break
    return Episode(rewards, digest.hexdigest(), False, steps, actions)


def _scalars(info: dict) -> dict[str, Any]:
    """The fields of ``info`` holding one number, string or flag."""
    return {key: value.item() if isinstance(value, np.generic) else value for key, value in info.items()
            if isinstance(value, (bool, int, float, str, np.generic))}


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
    """Runs every check against one server: a package's (started and stopped by
    :func:`run_checks`), or one at a URL, whose :class:`~.remote.ServerFacts` are ``facts``."""

    def __init__(self, kit: Declared, url: str, restart: Callable[[], Any] | None, pid: int | None,
                 facts: ServerFacts | None = None) -> None:
        self.kit = kit
        self.url = url
        self.restart = restart
        self.pid = pid
        self.facts = facts
        self.rewards_seen: list[tuple[str, float]] = []
        self.returns_seen: list[tuple[str, float]] = []
        self.steps_seen: list[Step] = []
        #: At a URL, what found the observed top (the learner, a probe).
        self.observed_by: str | None = None

    @contextmanager
    def session(self, url: str | None = None) -> Iterator[gym.Env]:
        with session(url or self.url) as env:
            yield env

    def episode(
        self, policy_for: Callable[[gym.Env], Policy], *, seed: int, label: str, url: str | None = None,
        max_steps: int = 1000,
    ) -> Episode:
        with self.session(url) as env:
            result = play(env, policy_for(env), seed=seed, max_steps=max_steps)
        self.rewards_seen.extend((label, r) for r in result.rewards)
        self.rewards_seen.append((f"{label} (return)", result.total))
        self.returns_seen.append((label, result.total))
        self.steps_seen.extend(result.steps)
        return result

    def reference(self) -> dict:
        """The episode the probes start from: the oracle's, else the best canary's at the kit's seed."""
        if self.kit.oracle is not None:
            return self.kit.oracle
        means = mean_returns(self.kit.canaries)
        best = max(means, key=means.__getitem__)
        return next(t for t in self.kit.canaries if t["name"] == best and t["reset"]["seed"] == self.kit.seed)

    def replay(self, trajectory: dict, *, url: str | None = None) -> Episode:
        """``trajectory`` played again, as far as it was recorded."""
        return self.episode(
            lambda env: scripted(env.action_space, trajectory["actions"]),
            seed=trajectory["reset"]["seed"], label=trajectory["name"], url=url,
            max_steps=len(trajectory["actions"]),
        )

    # -- RFC 008 -----------------------------------------------------------------------------

    def episode_determinism(self) -> Result:
        random = next(t for t in self.kit.canaries if t["name"] == "random" and t["reset"]["seed"] == self.kit.seed)
        runs = [self.replay(random), self.replay(random)]
        where = ["a seeded episode replays identically in 2 fresh sessions and a fresh server"]
        if self.restart is None:
            where = ["a seeded episode replays identically in 2 fresh sessions",
                     "not checked: a fresh server (a server at a URL cannot be restarted from here)"]
        else:
            fresh = self.restart()
            try:
                runs.append(self.replay(random, url=fresh.url))
            finally:
                fresh.stop()
        digests = {r.digest for r in runs}
        measured = {"replays": len(runs), "distinct_traces": len(digests)}
        seed_problem = self.facts.seed_problem if self.facts is not None else None
        if len(digests) == 1 and seed_problem is None:
            return Result("runtime.episode_determinism", "pass", where, measured)
        evidence = [f"seed {random['reset']['seed']}, same actions: {len(digests)} different traces in "
                    f"{len(runs)} replays (returns {[r.total for r in runs]})"]
        remediation = ("make every random draw of the env come from the generator reset(seed=...) seeds "
                       "(self.np_random), not from global or unseeded state")
        if self.facts is not None:
            if seed_problem:
                evidence.append(seed_problem)
            remediation = (
                f"the server at {self.url} ({self.facts.name}) does not replay a seeded episode: a learner's "
                f"seeded evaluations on it are not repeatable. If you run this server, {remediation}; if it is "
                f"one of upstream OpenEnv's envs, `openenv-gym list` shows whether openenv-gym has a built-in "
                f"server for it that does (gym.make('openenv/<Name>-v0') with no base_url)")
        return Result("runtime.episode_determinism", "fail", evidence, measured, remediation)

    def episode_isolation(self) -> Result:
        # The longest recorded episode, played twice at once: with state shared between
        # sessions, each session's steps move the other's.
        if self.facts is not None and self.facts.one_session:
            return Result("runtime.episode_isolation", "skip",
                          [f"not checkable here: {self.facts.one_session}; isolation needs two sessions at once"])
        if self.facts is not None and self.facts.seed_problem:
            return Result("runtime.episode_isolation", "skip", [
                f"unmet dependency: runtime.episode_determinism ({self.facts.seed_problem}): two episodes that "
                f"differ cannot tell shared state from chance"])
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
        """Every shipped canary trajectory replayed over the wire: its return, by :func:`_label`."""
        return {_label(t): self.replay(t).total for t in self.kit.canaries}

    def canary_means(self, returns: dict[str, float]) -> dict[str, float]:
        """Each canary's mean return over its seeds, from :meth:`canary_returns`."""
        return mean_returns([{"name": t["name"], "return": returns[_label(t)]} for t in self.kit.canaries])

    def floor_gap(self, returns: dict[str, float]) -> Result:
        if skipped := self.at_the_top("semantic.floor_gap"):
            return skipped
        floor = max(self.canary_means(returns).values())
        gap = self.kit.top - floor
        measured = {"floor": floor, "top": self.kit.top, "floor_margin": self.kit.floor_margin,
                    "seeds": len(self.kit.canary_seeds)}
        evidence = [f"best canary mean return {floor:g} over {len(self.kit.canary_seeds)} seeds; the top is "
                    f"{self.kit.top:g} (gap {gap:g}, margin {self.kit.floor_margin:g})"]
        if gap >= self.kit.floor_margin:
            return Result("semantic.floor_gap", "pass", evidence, measured)
        return Result("semantic.floor_gap", "fail", evidence, measured,
                      "a trivial policy already scores the top: make the reward harder to get without the task "
                      "(for a game, a stronger opponent)")

    def canary_floor(self, returns: dict[str, float]) -> Result:
        if skipped := self.at_the_top("semantic.canary_floor"):
            return skipped
        returns = self.canary_means(returns)
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
        recorded = {_label(t): float(t["return"]) for t in self.kit.canaries}
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
        if skipped := self.at_the_top("semantic.no_solution_leakage"):
            return skipped
        leaks = []
        with self.session() as env:
            obs, info = env.reset(seed=0)
            fields = _action_fields(env.action_space, obs, info)
        seeds = self.kit.probe_seeds[:LEAKAGE_SEEDS]
        for where, key in fields:
            total = statistics.fmean(
                self.episode(functools.partial(_follow, where=where, key=key), seed=seed,
                             label=f"follow {where}[{key!r}]").total for seed in seeds)
            if self.kit.reached_top(total) and not any(map(self.kit.reached_top, self.canary_means(returns).values())):
                leaks.append(f"playing {where}[{key!r}] as the action returns {total:g} on average over "
                             f"{len(seeds)} seeds (the top is {self.kit.top:g})")
        measured = {"fields_followed": [f"{w}[{k!r}]" for w, k in fields], "seeds": len(seeds)}
        if not leaks:
            return Result("semantic.no_solution_leakage", "pass",
                          [f"{len(fields)} action-like fields followed; none reaches the top"], measured)
        return Result("semantic.no_solution_leakage", "fail", leaks, measured,
                      "remove the answer from what the agent sees (observation and info)")

    def resource_envelope(self) -> Result:
        if self.pid is None:
            return Result("semantic.resource_envelope", "skip",
                          ["the server's process is not ours to measure, and no memory_mb is declared"])
        peak = _peak_rss_mb(self.pid)
        if peak is None:
            return Result("semantic.resource_envelope", "skip", ["no /proc/PID/status here to read the peak RSS"])
        if self.kit.memory_mb is None:
            return Result("semantic.resource_envelope", "skip",
                          [f"measured, nothing declared to compare with: server peak RSS {peak:.0f} MB after every "
                           f"check so far"], {"peak_rss_mb": round(peak, 1)})
        measured = {"peak_rss_mb": round(peak, 1), "memory_mb": self.kit.memory_mb}
        evidence = [f"server peak RSS {peak:.0f} MB after every check so far; declared {self.kit.memory_mb} MB"]
        if peak <= self.kit.memory_mb:
            return Result("semantic.resource_envelope", "pass", evidence, measured)
        return Result("semantic.resource_envelope", "fail", evidence, measured,
                      "raise resources.memory_mb (or regenerate the kit)")

    # -- beyond RFC 008 ----------------------------------------------------------------------

    def repeated_action(self) -> Result:
        if skipped := self.at_the_top("hacking.repeated_action"):
            return skipped
        with self.session() as env:
            candidates = _repeatable_actions(env.action_space)
        best: tuple[float, Any] = (-math.inf, None)
        seeds = self.kit.probe_seeds
        for action in candidates:
            mean = statistics.fmean(
                self.episode(functools.partial(_constant, action), seed=seed, label=f"repeat {action!r}").total
                for seed in seeds)
            best = max(best, (mean, action), key=lambda pair: pair[0])
        measured = {"actions_tried": len(candidates), "seeds": len(seeds), "best_return": best[0]}
        evidence = [f"best mean return of one action repeated over {len(seeds)} seeds: {best[0]:g} "
                    f"(action {best[1]!r}); top {self.kit.top:g}"]
        if not self.kit.reached_top(best[0]):
            return Result("hacking.repeated_action", "pass", evidence, measured)
        return Result("hacking.repeated_action", "fail", evidence, measured,
                      "repeating one action must not earn the top reward")

    def out_of_space(self) -> Result:
        """Actions outside the action space must be refused (a validation error), and the session
        must go on as if they had never been sent. Outside means outside the server's own
        ``/schema``: for an openenv-gym server, its exact space; for a stock server, its action
        model's JSON Schema (:func:`~.remote.outside_schema`), sent as it is."""
        reference = self.reference()
        with self.session() as env:
            valid = spaces.decode(env.action_space, reference["actions"][0])
            stock = self.facts is not None and not self.facts.extended
            if stock:
                assert self.facts is not None
                wire = _remote(env).contract.view.act(valid)
                candidates = [(name, functools.partial(_send_raw, data=data))
                              for name, data in outside_schema(self.facts.schema.get("action") or {}, wire)]
            else:
                candidates = [(name, functools.partial(_send, action=action))
                              for name, action in _outside(env.action_space, valid)]
        if not candidates:
            return Result("hacking.out_of_space", "skip", ["no value outside this action space to try"])
        seed = reference["reset"]["seed"]
        plain = set()
        for _ in range(2):  # the step without a refused action before it, twice: is there one answer?
            with self.session() as env:
                env.reset(seed=seed)
                plain.add(_step_digest(env.step(valid)))
        # None: not deterministic (here, or a server that ignores seeds), nothing to compare.
        expected = plain.pop() if len(plain) == 1 and not (self.facts and self.facts.seed_problem) else None
        problems: list[str] = []
        unsendable: list[str] = []
        for name, send in candidates:
            with self.session() as env:
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

    def boundary_actions(self) -> Result:
        """The bounds of the action space, played from the first states of the reference episode:
        each accepted, with a finite reward inside the declared range."""
        reference = self.reference()
        seed = reference["reset"]["seed"]
        with self.session() as env:
            bounds = _bounds(env.action_space)
            prefix = [spaces.decode(env.action_space, a) for a in reference["actions"]]
        positions = range(min(len(prefix), BOUNDARY_POSITIONS))
        problems = []
        for name, action in bounds:
            for t in positions:
                with self.session() as env:
                    env.reset(seed=seed)
                    for earlier in prefix[:t]:
                        env.step(earlier)
                    where = f"{name} after {t} steps of the {reference['name']} episode (seed {seed})"
                    try:
                        reward = float(env.step(action)[1])
                    except OpenEnvGymError as exc:
                        problems.append(f"{where}: refused: {exc}")
                        continue
                if not math.isfinite(reward) or not self.kit.within_range(reward):
                    problems.append(f"{where}: reward {reward:g} outside {_range_text(self.kit.reward_range)}")
        measured = {"bounds": [name for name, _ in bounds], "positions": len(positions)}
        evidence = [f"{len(bounds)} bounds of the action space, each from the first {len(positions)} states of the "
                    f"{reference['name']} episode"]
        if not bounds:
            return Result("hacking.boundary_actions", "skip", ["no bounds to try in this action space"])
        if not problems:
            return Result("hacking.boundary_actions", "pass",
                          [f"{evidence[0]}: accepted, rewards within {_range_text(self.kit.reward_range)}"], measured)
        return Result("hacking.boundary_actions", "fail", problems[:10], measured,
                      "the bounds of the action space are actions like any other: accept them and pay within "
                      "the declared range")

    def reset_abuse(self) -> Result:
        """Resetting right after a rewarded step, or after every step, must not earn more reward per
        step than playing the reference episode through. On a server whose episodes are chance (it
        ignores seeds), playing on is measured the same way, and farming must clear three standard
        errors of the difference: one recorded episode is one draw."""
        reference = self.reference()
        seed = reference["reset"]["seed"]
        budget = min(RESET_ABUSE_STEPS, max(1, len(reference["actions"])))
        chance = self.facts is not None and self.facts.seed_problem is not None
        strategies: list[tuple[str, Callable[[float], bool]]] = [
            ("reset after each rewarded step", lambda r: r > 0), ("reset after every step", lambda r: True)]
        if chance:
            strategies.insert(0, ("play on", lambda r: False))
        paid: dict[str, list[float]] = {}
        with self.session() as env:
            actions = [spaces.decode(env.action_space, a) for a in reference["actions"]]
            for strategy, reset_after in strategies:
                rewards = paid[strategy] = []
                t = 0
                env.reset(seed=seed)
                for _ in range(budget):
                    _, reward, terminated, truncated, _ = env.step(actions[min(t, len(actions) - 1)])
                    rewards.append(float(reward))
                    t += 1
                    self.rewards_seen.append((strategy, float(reward)))
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

    def info_reward(self) -> Result:
        """Over every step played so far: the same observation and action must not pay differently
        according to a field of ``info`` the agent saw (the reward would follow what ``info`` shows,
        not what the agent observes and does)."""
        groups: dict[tuple[str, str], list[Step]] = {}
        for step in self.steps_seen:
            groups.setdefault((step.observation, step.action), []).append(step)
        varying = [steps for steps in groups.values() if len({s.reward for s in steps}) > 1]
        keys = sorted({key for steps in varying for s in steps for key in s.info})
        found = [key for key in keys if all(_separates(key, steps) for steps in varying)]
        measured = {"steps": len(self.steps_seen), "pairs_seen_again": sum(len(g) > 1 for g in groups.values()),
                    "pairs_paying_differently": len(varying)}
        evidence = [f"{len(self.steps_seen)} steps: {len(varying)} (observation, action) pairs paid differently"]
        if not found:
            return Result("hacking.info_reward", "pass", [f"{evidence[0]}, none according to a field of info"],
                          measured)
        return Result("hacking.info_reward", "fail",
                      [f"{evidence[0]}, each according to info[{key!r}]" for key in found], measured,
                      "pay for what the agent observes and does; state the reward depends on belongs in the "
                      "observation")

    def reward_range(self) -> Result:
        if self.kit.reward_range is None:  # a URL: the range observed
            rewards = [r for _, r in self.rewards_seen if not _is_return(_)]
            measured = {"rewards_checked": len(rewards), "declared": None,
                        "observed": [min(rewards), max(rewards)] if rewards else None}
            if not rewards:
                return Result("hacking.reward_range", "skip", ["no step was played: nothing observed"], measured)
            bad = [(label, r) for label, r in self.rewards_seen if not math.isfinite(r)]
            if bad:
                return Result("hacking.reward_range", "fail",
                              [f"{label}: {r:g} is not finite" for label, r in bad[:10]], measured,
                              "rewards must be finite numbers")
            return Result("hacking.reward_range", "pass",
                          [f"observed, not declared: {len(rewards)} rewards of every probe within "
                           f"[{min(rewards):g}, {max(rewards):g}]"], measured)
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
        if self.kit.root is None:
            return self._learnability_over_the_wire()
        from ..learning import learn

        floor = self.kit.floor
        goal = floor + self.kit.floor_margin
        trained = learn(self.kit.root.resolve(), goal=goal, episodes=LEARNING_EPISODES, budget_s=LEARNING_BUDGET_S,
                        eval_seeds=self.kit.canary_seeds)
        if trained["learner"] is None:
            return Result("learning.learnability", "skip", [f"no bundled learner for {trained['spaces']}"])
        return self._learned(trained["learner"], trained["curve"], floor, goal, self.kit.floor_margin)

    def _learned(self, learner: str, curve: list[float], floor: float, goal: float, margin: float) -> Result:
        reached = next((i for i, total in enumerate(curve) if total >= goal), None)
        measured = {"learner": learner, "goal": goal, "evaluations": len(curve), "curve": curve}
        if reached is not None:
            return Result("learning.learnability", "pass",
                          [f"{learner} reached {curve[reached]:g} >= canary floor {floor:g} + margin "
                           f"{margin:g} at evaluation {reached + 1}"], measured)
        evidence = [f"{learner}: best {max(curve, default=math.nan):g} in {len(curve)} evaluations, "
                    f"below canary floor {floor:g} + margin {margin:g}"]
        seen = [r for _, r in self.returns_seen] + [float(t["return"]) for t in self.kit.canaries] + curve
        if seen and floor >= max(seen):
            evidence.append(f"the canaries already score the best return seen ({max(seen):g}): a trivial policy gets "
                            f"the most this env was seen to pay")
        return Result("learning.learnability", "fail", evidence, measured,
                      "the reward must depend on the actions: a learner could not beat the canaries")

    def observed_margin(self) -> float:
        """At a URL, the margin a return must clear the canary floor by: a tenth of the spread of
        the canaries' returns (at least 5% of the floor's size, and more than nothing)."""
        returns = [float(t["return"]) for t in self.kit.canaries]
        spread = max(returns) - min(returns) if returns else 0.0
        return max(0.1 * spread, 0.05 * abs(self.kit.floor), 1e-6)

    def _learnability_over_the_wire(self) -> Result:
        """The bundled learner trained over the wire, within :data:`LEARNING_BUDGET_S`; where
        none fits the spaces, a legal-random against a reward-greedy probe. What it finds above
        the canary floor becomes the observed top the checks after it compare with."""
        from ..learning import learner_for

        floor, margin = self.kit.floor, self.observed_margin()
        self.kit.floor_margin = margin
        goal = floor + margin
        with self.session() as env:
            recorded = _Recorded(env, self)
            obs, _ = recorded.reset(seed=self.kit.seed)
            learner = learner_for(env.observation_space, env.action_space, obs)
            if learner is None:
                return self._greedy_probe(recorded, floor, goal)
            curve = learner.train(recorded, goal=goal, episodes=LEARNING_EPISODES, budget_s=LEARNING_BUDGET_S,
                                  eval_seeds=self.kit.canary_seeds, max_steps=URL_MAX_STEPS)
        self._observe_top(max(curve, default=-math.inf), goal, learner.name)
        result = self._learned(learner.name, curve, floor, goal, margin)
        result.evidence.append(f"trained over the wire on {self.url}, {URL_MAX_STEPS} steps an episode at most, "
                               f"within {LEARNING_BUDGET_S:g} s")
        return result

    def _greedy_probe(self, env: gym.Env, floor: float, goal: float) -> Result:
        """Legal-random against reward-greedy (the legal action whose rewards so far averaged
        best, regardless of the state; a tenth of the moves random), :data:`PROBE_EPISODES` episodes
        each: does the reward answer the actions at all? A probe this simple finding nothing is
        no verdict on what a real learner (or a language model) could do."""
        space = env.action_space
        rng = np.random.default_rng(self.kit.seed)
        paid: dict[str, list[float]] = {}
        deadline = time.monotonic() + LEARNING_BUDGET_S
        means: dict[str, float] = {}
        for strategy in ("legal-random", "reward-greedy"):
            totals = []
            for episode in range(PROBE_EPISODES):
                if time.monotonic() > deadline:
                    break
                obs, info = env.reset(seed=self.kit.seed + episode)
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
        self._observe_top(greedy, goal, "the reward-greedy probe")
        evidence = [f"no bundled learner for {env.observation_space} -> {space}; over the wire, mean return of "
                    f"legal-random {means['legal-random']:g}, reward-greedy {greedy:g} (canary floor {floor:g})"]
        if greedy >= goal:
            return Result("learning.learnability", "pass",
                          [*evidence, "the reward answers the actions: greedy beats the canary floor"], measured)
        return Result("learning.learnability", "skip",
                      [*evidence, "inconclusive: a probe this simple found no signal, which says nothing of what a "
                                  "real learner could find"], measured)

    def _observe_top(self, best: float, goal: float, by: str) -> None:
        """At a URL, ``best`` (a return ``by`` a learner or probe) becomes the observed top when it
        clears the goal (the canary floor plus the observed margin)."""
        if self.kit.reward_range is None and math.isfinite(best) and best >= goal:
            self.kit.observed_top = max(best, *(r for _, r in self.returns_seen))
            self.observed_by = by

    def at_the_top(self, check_id: str) -> Result | None:
        """At a URL without an observed top: the SKIP of a check that compares with the top."""
        if self.kit.reward_range is not None or self.kit.observed_top is not None:
            return None
        return Result(check_id, "skip", ["no declared range, and no return above the canaries' was observed (the "
                                         "learner found none), so the top is unknown at a URL"])

    def throughput(self) -> Result:
        measured: dict[str, Any] = {}
        evidence: list[str] = []
        counts: tuple[int, ...] = (1, 4)
        if self.facts is not None and self.facts.one_session:
            counts = (1,)
            evidence.append(f"4 sessions not measured: {self.facts.one_session}")
        for sessions in counts:
            latencies: list[list[float]] = [[] for _ in range(sessions)]
            failures: list[BaseException] = []
            started = time.perf_counter()
            threads = [threading.Thread(target=self._timed_steps, args=(latencies[i], failures))
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

    def _timed_steps(self, out: list[float], failures: list[BaseException]) -> None:
        try:
            with self.session() as env:
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


class _Recorded(gym.Wrapper):
    """An env whose every reward the checker sees (for the observed reward range)."""

    def __init__(self, env: gym.Env, checker: Checker) -> None:
        super().__init__(env)
        self.checker = checker

    def step(self, action: Any) -> Any:
        step = self.env.step(action)
        self.checker.rewards_seen.append(("learning", float(step[1])))
        return step


def _is_return(label: str) -> bool:
    return label.endswith("(return)")


def _legal_choices(space: gym.Space, obs: Any, info: dict) -> list[Any] | None:
    """The legal actions as a list: a ``Discrete``'s by its mask (all, without one), else the
    ones ``info`` lists; ``None`` when there is no list."""
    if isinstance(space, gym.spaces.Discrete):
        mask = action_mask(obs, info)
        start, n = int(space.start), int(space.n)
        legal = [start + int(i) for i in np.flatnonzero(mask)] if mask is not None else list(range(start, start + n))
        return legal or [start]
    listed = info.get(LEGAL_ACTIONS) if isinstance(info, dict) else None
    return list(listed) if isinstance(listed, list) and listed else None


def _action_key(action: Any) -> str:
    return json.dumps(action, sort_keys=True, default=_jsonable)


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


def _separates(key: str, steps: list[Step]) -> bool:
    """``True`` when ``info[key]`` takes several values over ``steps`` and each value comes with one reward."""
    if not all(key in s.info for s in steps):
        return False
    rewards: dict[Any, set[float]] = {}
    for s in steps:
        rewards.setdefault(s.info[key], set()).add(s.reward)
    return len(rewards) > 1 and all(len(r) == 1 for r in rewards.values())


def _label(trajectory: dict) -> str:
    """A recorded trajectory's name and seed: ``random (seed 3)``."""
    return f"{trajectory['name']} (seed {trajectory['reset']['seed']})"


def _sample(space: gym.Space, obs: Any, info: dict) -> Any:
    """A random action, legal by the mask (or ``info``'s list of legal actions) when there is one."""
    mask = action_mask(obs, info)
    if mask is not None and isinstance(space, gym.spaces.Discrete):
        return space.sample(np.asarray(mask, dtype=np.int8))
    listed = _legal_choices(space, obs, info) if not isinstance(space, gym.spaces.Discrete) else None
    if listed:
        return listed[int(space.np_random.integers(len(listed)))]
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


# -- running ------------------------------------------------------------------------------------


#: What a check needs that a server at a URL does not give, by check id.
URL_SKIPS = {
    "static.manifest": "upstream's graders read a package's openenv.yaml and start it through a provider; a URL "
    "is a running server (check its package directory instead)",
    "semantic.oracle_max": "no oracle: a URL comes without a validation kit",
    "semantic.replayability": "no recorded trajectories to replay: a URL comes without a validation kit (a seeded "
    "episode replayed in fresh sessions is runtime.episode_determinism)",
}


def is_url(target: str) -> bool:
    """``True`` for the URL of a running server (``http://``, ``https://``, ``ws://``, ``wss://``)."""
    return target.split("://", 1)[0] in ("http", "https", "ws", "wss")


def run_checks(
    target: str | Path,
    *,
    upstream: bool = True,
    progress: Callable[[str], None] | None = None,
    env_kwargs: dict[str, Any] | None = None,
    oracle: str | None = None,
    server_env: dict[str, str] | None = None,
    python: str | None = None,
) -> dict:
    """Every check on ``target``; the report as a JSON-able dict in upstream's shape.

    ``target`` is a package directory holding a validation kit; a Gymnasium id,
    ``module:factory`` or PettingZoo module (with ``env_kwargs``), whose kit (and
    package) :func:`~openenv_gym.kit.make_kit` writes into a temporary directory first,
    with ``oracle`` as its oracle hook; the URL of any OpenEnv server, where what cannot be
    checked without a kit or a server of our own SKIPs, saying why; or a package directory
    without a kit (upstream OpenEnv's ``envs/<env>``), started here with ``server_env`` and
    ``python`` (:class:`~openenv_gym.server.package.PackageServer`) and checked as a URL,
    with the fresh servers and the process a URL lacks, and the reward range its
    ``openenv.yaml`` declares, if it declares one.
    """
    from ..target import is_package

    say = progress or (lambda line: None)
    name = str(target)
    if (is_url(name) or is_package(target)) and (env_kwargs or oracle):
        raise ValueError(f"--env-kwargs and --oracle make a kit for an env; {name} is a "
                         f"{'URL' if is_url(name) else 'package, whose kit `openenv-gym kit PACKAGE` makes'}")
    if (server_env or python) and not (is_package(target) and not has_kit(Path(target))):
        raise ValueError("--server-env and --python start an OpenEnv package without a validation kit "
                         f"(upstream's envs/<env>); {name} is not one")
    if is_url(name):
        return _report(name, _url_results(name.rstrip("/"), say), {})
    if is_package(target) and not has_kit(Path(target)):
        return _report(name, _unkitted_package_results(Path(target), say, server_env, python), {})
    if is_package(target):
        return _package_report(Path(target), name, upstream, say)
    from .. import make_kit

    if "" not in sys.path and os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())  # module:factory of this directory, for the server we start too
    with tempfile.TemporaryDirectory(prefix="openenv-gym-check-") as tmp:
        say(f"generating a validation kit for {name} (openenv-gym kit) ...")
        make_kit(name, tmp, env_kwargs=env_kwargs, oracle=oracle)
        return _package_report(Path(tmp), name, upstream, say)


def _package_report(root: Path, name: str, upstream: bool, say: Callable[[str], None]) -> dict:
    """Upstream's graders (unless ``upstream`` is false), then ours, on the package ``root``."""
    from ..upstream import Level, start_package, validate

    kit = Declared.load(root)
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
        checker = Checker(kit, subject.base_url, lambda: start_package(root).server, subject.process.pid)
        results.extend(_our_checks(checker, say))
    finally:
        subject.stop()
    # Upstream's "not implemented" placeholders give way to the checks implemented here.
    ours = {r.check_id for r in results if r.evidence != [NOT_IMPLEMENTED]}
    results = [r for r in results if not (r.check_id in ours and r.evidence == [NOT_IMPLEMENTED])]
    return _report(name, results, report)


def has_kit(root: Path) -> bool:
    """``True`` when the package ``root`` holds a validation kit (``openenv-gym kit`` wrote one)."""
    return (root / KIT_FILES["kit"]).is_file()


def _declared_range(root: Path) -> tuple[float, float] | None:
    """The reward range a package's ``openenv.yaml`` declares (``validation.reward.range``), if any."""
    manifest = yaml.safe_load((root / "openenv.yaml").read_text(encoding="utf-8")) or {}
    block = manifest.get("validation") if isinstance(manifest, dict) else None
    reward = block.get("reward") if isinstance(block, dict) else None
    declared = reward.get("range") if isinstance(reward, dict) else None
    if isinstance(declared, list) and len(declared) == 2 and all(isinstance(v, (int, float)) for v in declared):
        return float(declared[0]), float(declared[1])
    return None


def _unkitted_package_results(root: Path, say: Callable[[str], None], server_env: dict[str, str] | None,
                              python: str | None) -> list[Result]:
    """A package without a kit, started here and checked as a server at a URL (see :func:`run_checks`)."""
    from ...server.package import PackageServer

    def start() -> PackageServer:
        return PackageServer(root, env=server_env, python=python, startup_timeout=PACKAGE_STARTUP_S)

    say(f"starting {root} (its own app, no validation kit) ...")
    server = start()
    try:
        return _url_results(server.url, say, restart=start, pid=server.pid, reward_range=_declared_range(root),
                            package=root)
    finally:
        server.stop()


def _url_results(url: str, say: Callable[[str], None], *, restart: Callable[[], Any] | None = None,
                 pid: int | None = None, reward_range: tuple[float, float] | None = None,
                 package: Path | None = None) -> list[Result]:
    """Our checks on a server we neither started nor have a kit for: what the server lets us
    know (:func:`~.remote.read_facts`) and canaries recorded over the wire stand in for the
    kit; what needs more SKIPs with :data:`URL_SKIPS`' reason, and what a URL makes weaker
    says so (:data:`~.remote.WEAKER_AT_A_URL`). A server whose env fails to reset or step gets
    a report too: every check ERRORs with what the server said, and what to do about it."""
    say(f"reading {url}: its schema, whether it holds two sessions, whether it honours seeds ...")
    try:
        facts = read_facts(url)
        say(f"recording canaries at {url} ...")
        kit = Declared.recorded(url, reward_range, chance=facts.seed_problem is not None)
    except RemoteError as exc:
        evidence = [f"the server answered {exc.code.value}: {exc.message}"]
        return [Result(check_id, "error", evidence, {}, server_fault(exc.message)) for check_id in ALL_CHECKS]
    checker = Checker(kit, url, restart, pid, facts)
    results = [Result(check_id, "skip", [reason]) for check_id, reason in URL_SKIPS.items()
               if not check_id.startswith(("semantic.", "hacking.", "learning."))]
    if package is not None:  # a package without a kit, started here
        results[0] = Result("static.manifest", "skip", [
            f"upstream's static grader reads the package's validation: block, and {package} has none: for "
            f"an env openenv-gym serves, run `openenv-gym kit {package}` first for every check a kit allows"])
    results.extend(_our_checks(checker, say))
    for result in results:
        weaker = WEAKER_AT_A_URL.get(result.check_id)
        restarted = restart is not None and result.check_id == "runtime.episode_determinism"
        if weaker and result.status in ("pass", "fail") and not restarted:
            result.evidence.append(f"weaker at a URL: {weaker}")
    return results


def server_fault(message: str) -> str:
    """What to do about an env that fails on the server, in words a user can act on."""
    if "nltk" in message.lower():
        return ("the server's env needs NLTK data it could not load (an offline server cannot download it): run "
                "`python -m nltk.downloader <the data it names>` where the server runs, or serve a game that needs "
                "none (upstream textarena_env: TEXTARENA_ENV_ID=GuessTheNumber-v0; openenv-gym's "
                "gym.make('openenv/TextArena-v0') plays it offline)")
    return "the server's env raised on reset or step: its log has the traceback; fix the env, or its configuration"


def _our_checks(checker: Checker, say: Callable[[str], None]) -> list[Result]:
    """The checks implemented here, in order; those :data:`URL_SKIPS` names SKIP on a URL."""
    returns: dict[str, float] = {}  # the canaries' returns over the wire, played once for 4 checks

    def floor_gap() -> Result:
        returns.update(checker.canary_returns())
        return checker.floor_gap(returns)

    plan: list[tuple[str, Callable[[], Result]]] = [
        ("runtime.episode_determinism", checker.episode_determinism),
        ("runtime.episode_isolation", checker.episode_isolation),
        # Before the checks that compare with the top: at a URL, its best return is the observed top.
        ("learning.learnability", checker.learnability),
        ("semantic.oracle_max", checker.oracle_max),
        ("semantic.floor_gap", floor_gap),
        ("semantic.canary_floor", lambda: checker.canary_floor(returns)),
        ("semantic.replayability", lambda: checker.replayability(returns)),
        ("semantic.no_solution_leakage", lambda: checker.no_solution_leakage(returns)),
        ("hacking.repeated_action", checker.repeated_action),
        ("hacking.out_of_space", checker.out_of_space),
        ("hacking.boundary_actions", checker.boundary_actions),
        ("hacking.reset_abuse", checker.reset_abuse),
        ("perf.throughput", checker.throughput),
        ("hacking.info_reward", checker.info_reward),
        ("hacking.reward_range", checker.reward_range),
        ("semantic.resource_envelope", checker.resource_envelope),
    ]
    results = []
    for check_id, check in plan:
        if checker.kit.root is None and check_id in URL_SKIPS:
            results.append(Result(check_id, "skip", [URL_SKIPS[check_id]]))
            say(f"{check_id}: SKIP")
        else:
            results.append(_timed(check_id, check, say))
    return results


#: Every check implemented here, in the order they run.
ALL_CHECKS = (
    "runtime.episode_determinism", "runtime.episode_isolation", "learning.learnability", "semantic.oracle_max",
    "semantic.floor_gap", "semantic.canary_floor", "semantic.replayability", "semantic.no_solution_leakage",
    "hacking.repeated_action", "hacking.out_of_space", "hacking.boundary_actions", "hacking.reset_abuse",
    "perf.throughput", "hacking.info_reward", "hacking.reward_range", "semantic.resource_envelope",
)


def _report(name: str, results: list[Result], upstream_report: dict) -> dict:
    return {
        **upstream_report,
        "report_schema_version": upstream_report.get("report_schema_version", "2"),
        "target": name,
        "checked_by": "openenv-gym check",
        "results": [r.as_dict() for r in results],
        "verdict": verdict(results),
    }


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


def main(target: str, *, json_path: str | None = None, markdown_path: str | None = None,
         upstream: bool = True, env_kwargs: dict[str, Any] | None = None, oracle: str | None = None,
         server_env: dict[str, str] | None = None, python: str | None = None) -> int:
    """``openenv-gym check``: progress on stderr, the table on stdout; 1 on FAIL or ERROR."""
    from .. import ProbeError

    try:
        report = run_checks(target, upstream=upstream, progress=lambda line: print(line, file=sys.stderr),
                            env_kwargs=env_kwargs, oracle=oracle, server_env=server_env, python=python)
    except (FileNotFoundError, ImportError, ProbeError, ValueError) as exc:
        where = f"cannot check {target}: " if is_url(target) else ""  # a server's schema: say whose
        print(f"openenv-gym: {where}{exc}", file=sys.stderr)
        return 1
    except (OpenEnvGymError, OSError) as exc:  # a URL that does not answer as an OpenEnv server
        print(f"openenv-gym: cannot check {target}: {exc} (is an OpenEnv server listening there?)", file=sys.stderr)
        return 1
    except Exception as exc:  # noqa: BLE001 - a server that answers what no OpenEnv server would
        if not is_url(target):
            raise
        print(f"openenv-gym: cannot check {target}: it answered what an OpenEnv server does not "
              f"({type(exc).__name__}: {exc})", file=sys.stderr)
        return 1
    print(table(report))
    if json_path:
        Path(json_path).write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")
    if markdown_path:
        from ..report import write_markdown

        command = " ".join(["openenv-gym check", target, *(["--skip-upstream"] if not upstream else [])])
        write_markdown(report, markdown_path, command=command)
    return 1 if report["verdict"] == "fail" else 0
