"""What a check report plots, read out of the report: one place for the Markdown
report's PNG (:mod:`.report`) and the HTML report's SVG (:mod:`.report_html`).

Two figures: the returns of the canaries, the oracle and the learner side by side (is
the env worth training on: the oracle far above every canary, the learner close to
the oracle), and the learner's curve against the goal it had to reach. A report says
nothing of a figure when its check did not run or measured nothing; a value it holds
may be ``None`` or not finite (a crashed learner, an env paying NaN), which the figures
keep as they are, for each renderer to draw as missing.

    >>> report = {"results": [
    ...     {"check_id": "semantic.canary_floor", "measured": {"returns": {"constant": 9.0, "random": 25.0}}},
    ...     {"check_id": "semantic.oracle_max", "measured": {"oracle_return": 500.0}},
    ...     {"check_id": "learning.learnability",
    ...      "measured": {"learner": "random search", "goal": 262.5, "curve": [9.5, 66.0, 278.8]}}]}
    >>> figures = report_figures(report)
    >>> figures.returns
    {'constant': 9.0, 'random': 25.0, 'oracle': 500.0, 'learner (best)': 278.8}
    >>> [name for name in figures.returns if is_canary(name)]
    ['constant', 'random']
    >>> figures.curve, figures.goal, figures.learner
    ([9.5, 66.0, 278.8], 262.5, 'random search')
    >>> report_figures({"results": []}).returns
    {}
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

__all__ = ["CANARIES", "Figures", "finite", "is_canary", "measured", "report_figures"]

#: The canaries a kit records (:mod:`openenv_gym.kit.probe`): trivial policies whose
#: returns make the floor an env's learner must beat.
CANARIES = ("constant", "first-legal", "random")


def measured(report: dict, check_id: str) -> dict[str, Any]:
    """The ``measured`` of the check ``check_id`` in ``report``; ``{}`` when it did not run.

    >>> measured({"results": [{"check_id": "perf.throughput", "measured": {"steps": 10}}]}, "perf.throughput")
    {'steps': 10}
    >>> measured({"results": []}, "perf.throughput")
    {}
    """
    return next((r.get("measured") or {} for r in report["results"] if r["check_id"] == check_id), {})


def finite(value: object) -> float | None:
    """``value`` as a float when it is a finite number, else ``None`` (``None``, NaN,
    infinities, a string, ``True``): what a figure can draw.

    >>> finite(3), finite(float("nan")), finite(None), finite(float("-inf")), finite("3")
    (3.0, None, None, None, None)
    """
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value) if math.isfinite(value) else None


def is_canary(name: str) -> bool:
    """Whether the bar ``name`` of :attr:`Figures.returns` is a canary's (drawn grey)."""
    return name in CANARIES


@dataclass(frozen=True)
class Figures:
    """The two figures of a report: see :func:`report_figures`."""

    #: bar -> return: each canary's mean return, the oracle's, and the learner's best
    #: evaluation, in that order; a value may be ``None`` or not finite.
    returns: dict[str, Any] = field(default_factory=dict)
    #: the learner's return at each evaluation (empty when it did not train).
    curve: list[Any] = field(default_factory=list)
    #: the return the learner had to reach: the canary floor plus the margin.
    goal: Any = None
    #: which learner trained (``learning.learnability`` names it).
    learner: str = "learner"


def report_figures(report: dict) -> Figures:
    """Read :class:`Figures` out of ``report`` (upstream's shape: ``results`` of
    ``{check_id, status, measured, ...}``); see the module's example."""
    returns: dict[str, Any] = dict(measured(report, "semantic.canary_floor").get("returns") or {})
    oracle = measured(report, "semantic.oracle_max")
    if "oracle_return" in oracle:
        returns["oracle"] = oracle["oracle_return"]
    learning = measured(report, "learning.learnability")
    curve = list(learning.get("curve") or [])
    drawable = [value for value in map(finite, curve) if value is not None]
    if curve:
        returns["learner (best)"] = max(drawable) if drawable else None
    return Figures(returns=returns, curve=curve, goal=learning.get("goal"),
                   learner=str(learning.get("learner") or "learner"))
