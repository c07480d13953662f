"""The ``openenv-gym check`` report as Markdown, with its plots.

    $ openenv-gym check wrappers/cartpole --markdown docs/validation-cartpole.md

writes the Markdown table of every check and, with matplotlib installed, a PNG
beside it: the returns of the oracle, the canaries and the learner, and the
learner's curve against the goal it had to reach.
"""

from __future__ import annotations

import math
from pathlib import Path

from .report_figures import finite, is_canary, report_figures

__all__ = ["write_markdown"]


def _plot(report: dict, path: Path) -> bool:
    """Draw the plots into ``path``; ``False`` without matplotlib. A return that is
    missing or not finite gets no bar, and leaves a gap in the curve."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    figures = report_figures(report)
    returns = {name: value for name, value in figures.returns.items() if finite(value) is not None}
    curve = [math.nan if finite(value) is None else finite(value) for value in figures.curve]
    figure, (left, right) = plt.subplots(1, 2, figsize=(10, 3.6))
    names = list(returns)
    left.barh(names, [returns[n] for n in names], color=["#888" if is_canary(n) else "#2a7" for n in names])
    left.set_xlabel("return (canaries, learner: mean over the kit's seeds; oracle: seed 0)")
    left.set_title("oracle vs canaries vs learner")
    if curve:
        right.plot(range(1, len(curve) + 1), curve, label=figures.learner)
        if finite(figures.goal) is not None:
            right.axhline(figures.goal, color="#c33", linestyle="--", label="canary floor + margin")
        right.set_xlabel("evaluation")
        right.set_ylabel("return")
        right.legend(loc="lower right")
    right.set_title("learning curve")
    figure.tight_layout()
    figure.savefig(path, dpi=90)
    plt.close(figure)
    return True


def write_markdown(report: dict, path: str | Path, *, command: str) -> Path:
    """Write ``report`` as Markdown to ``path`` (and ``<stem>.png`` beside it); return ``path``."""
    path = Path(path)
    image = path.with_suffix(".png")
    lines = [
        f"# `openenv-gym check` report: {report['target']}",
        "",
        f"Produced by `{command}`. Verdict: **{report['verdict'].upper()}**.",
        "",
    ]
    if _plot(report, image):
        lines += [f"![returns and learning curve]({image.name})", ""]
    lines += ["| status | check | evidence |", "|---|---|---|"]
    for result in report["results"]:
        evidence = "; ".join(result["evidence"]).replace("|", "\\|")
        lines.append(f"| {result['status'].upper()} | `{result['check_id']}` | {evidence} |")
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path
