"""What every check takes and gives: a :class:`Checker`, the server under check with what it
is held to and what the checks have seen on it so far, and a :class:`Result`, one check's
finding in upstream's ``CheckResult`` shape.

A check is a function of the checker (:mod:`.rfc008`, :mod:`.hacking`, :mod:`.learnability`,
:mod:`.throughput`). It plays its episodes through :meth:`Checker.episode`, which keeps every
reward, return and step, for the checks that look back over all of them
(``hacking.reward_range``, ``hacking.info_reward``).

    >>> result = Result("semantic.floor_gap", "pass", ["gap 10, margin 1"], {"floor": 0.0})
    >>> sorted(result.as_dict())
    ['check_id', 'duration_s', 'evidence', 'measured', 'remediation', 'status']
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import gymnasium as gym

from .. import mean_returns
from ..remote import ServerFacts, session
from .declared import Declared
from .play import Policy, RecordedEpisode, RecordedStep, play, scripted


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


class Checker:
    """What every check plays through: one server, a package's (started and stopped by
    :func:`~.run.run_checks`) or one at a URL, whose :class:`~.remote.ServerFacts` are
    ``facts``; what it is held to, ``kit``; and what the checks have seen on it so far."""

    def __init__(self, kit: Declared, url: str, restart: Callable[[], Any] | None, pid: int | None,
                 facts: ServerFacts | None = None) -> None:
        self.kit = kit
        self.url = url
        self.restart = restart
        self.pid = pid
        self.facts = facts
        self.rewards_seen: list[tuple[str, float]] = []
        self.returns_seen: list[tuple[str, float]] = []
        self.steps_seen: list[RecordedStep] = []
        #: At a URL, what found the observed top (the learner, a probe).
        self.observed_by: str | None = None

    @property
    def chance(self) -> bool:
        """Whether the server's episodes are chance: it ignores reset's seed, so each return is a draw."""
        return self.facts is not None and self.facts.seed_problem is not None

    @contextmanager
    def session(self, url: str | None = None) -> Iterator[gym.Env]:
        with session(url or self.url) as env:
            yield env

    def episode(
        self, policy_for: Callable[[gym.Env], Policy], *, seed: int, label: str, url: str | None = None,
        max_steps: int = 1000,
    ) -> RecordedEpisode:
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

    def replay(self, trajectory: dict, *, url: str | None = None) -> RecordedEpisode:
        """``trajectory`` played again, as far as it was recorded."""
        return self.episode(
            lambda env: scripted(env.action_space, trajectory["actions"]),
            seed=trajectory["reset"]["seed"], label=trajectory["name"], url=url,
            max_steps=len(trajectory["actions"]),
        )

    def at_the_top(self, check_id: str) -> Result | None:
        """At a URL without an observed top: the SKIP of a check that compares with the top."""
        if self.kit.reward_range is not None or self.kit.observed_top is not None:
            return None
        return Result(check_id, "skip", ["no declared range, and no return above the canaries' was observed (the "
                                         "learner found none), so the top is unknown at a URL"])
