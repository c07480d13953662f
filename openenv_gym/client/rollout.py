"""One rollout's episode as a trainer scores it: what the env's tool calls brought, and
the rules that make one reward of it.

A trainer that scores whole rollouts (TRL's ``get_reward``, the last turn of SkyRL's
``TextEnv``) keeps a :class:`Rollout` of each episode and asks :func:`scorer` for the
rule: the episode's return (``"return"``), the reward of its last step if it ended
(``"terminal"``: outcome-only, nothing for an episode left unfinished), or a function of
the rollout (reward shaping, a penalty for an unfinished episode), each optionally
clipped into ``clip=(lo, hi)``.

    >>> episode = Rollout(reward=-13.0, last_reward=-1.0, steps=13, done=True)
    >>> scorer("return")(episode), scorer("terminal")(episode), scorer("return", clip=(-1, 1))(episode)
    (-13.0, -1.0, -1.0)
    >>> scorer(lambda rollout: rollout.reward / rollout.steps)(episode)
    -1.0
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from ..protocol.tools import ToolResult

__all__ = ["Rollout", "ScoreRule", "SCORE_RULES", "DEFAULT_PROMPT", "scorer"]

#: The named rules of :func:`scorer`.
SCORE_RULES = ("return", "terminal")
#: The user message a rollout on an env's tools starts with when given none (TRL's
#: :func:`~openenv_gym.trl.seed_dataset`, verifiers' taskset); the first observation follows it.
DEFAULT_PROMPT = (
    "You act in an environment through the tools you are given: each call takes one action and shows what "
    "follows. Reach the best outcome you can. The environment's first observation:"
)

@dataclass
class Rollout:
    """The episode of one rollout, as its tool calls (or turns) reported it.

    Attributes:
        reward: The episode's return so far (the sum of its steps' rewards).
        last_reward: The reward of its last step (0 before any).
        steps: The calls the env answered without an error.
        done: Whether the episode is over (terminated or truncated).
        truncated: Whether it was cut short by the env's time limit (Gymnasium's
            ``truncated``); ``False`` when the server does not say.
    """

    reward: float = 0.0
    last_reward: float = 0.0
    steps: int = 0
    done: bool = False
    truncated: bool = False

    def record(self, result: ToolResult) -> None:
        """Count one answered call: its reward, and how the episode stands after it."""
        self.last_reward = result.reward or 0.0
        self.reward += self.last_reward
        self.steps += 1
        self.done, self.truncated = result.done, result.truncated


#: How a rollout's reward is decided: a name of :data:`SCORE_RULES`, or a function of the
#: :class:`Rollout`.
ScoreRule = Literal["return", "terminal"] | Callable[[Rollout], float]


def scorer(rule: ScoreRule = "return", clip: tuple[float, float] | None = None) -> Callable[[Rollout], float]:
    """The function scoring a :class:`Rollout` by ``rule``, clipped into ``clip`` if given.

    Raises:
        ValueError: ``rule`` is neither a function nor a name of :data:`SCORE_RULES`, or
            ``clip`` is not ``(lo, hi)`` with ``lo <= hi``.
    """
    if not callable(rule) and rule not in SCORE_RULES:
        raise ValueError(f"score={rule!r} is no rule: use one of {', '.join(map(repr, SCORE_RULES))} or a function "
                         "of the rollout (its reward, last_reward, steps, done, truncated)")
    if clip is not None and not (len(clip) == 2 and float(clip[0]) <= float(clip[1])):
        raise ValueError(f"clip={clip!r}: give (lo, hi) with lo <= hi")
    low, high = (float(clip[0]), float(clip[1])) if clip is not None else (float("-inf"), float("inf"))

    def score(rollout: Rollout) -> float:
        if callable(rule):
            value = float(rule(rollout))
        elif rule == "terminal":
            value = rollout.last_reward if rollout.done else 0.0
        else:
            value = rollout.reward
        return min(max(value, low), high)

    return score
