"""The ``openenv-gym check`` report written to files: Markdown with its plots, or HTML.

    $ openenv-gym check wrappers/cartpole --markdown docs/validation-cartpole.md
    $ openenv-gym check wrappers/cartpole --html docs/validation-cartpole.html

:func:`write_markdown` writes the Markdown table of every check and, with matplotlib
installed, a PNG beside it: the returns of the oracle, the canaries and the learner, and
the learner's curve against the goal it had to reach (:mod:`.report_figures`).
:func:`write_html` writes the one-file page of :func:`~.report_html.report_html`, the
same figures drawn in SVG, which needs no matplotlib. Both take the report as
``--json`` writes it, so a saved report can be rendered again without checking again:

    >>> import json, pathlib, tempfile
    >>> report = json.loads(pathlib.Path("docs/validation-cartpole.json").read_text())  # doctest: +SKIP
    >>> report = {"target": "CartPole-v1", "verdict": "pass", "results": [
    ...     {"check_id": "semantic.oracle_max", "status": "pass", "evidence": ["oracle return 500"],
    ...      "measured": {"oracle_return": 500.0}, "duration_s": 5.8}]}
    >>> with tempfile.TemporaryDirectory() as directory:
    ...     page = write_html(report, pathlib.Path(directory) / "report.html", command="openenv-gym check CartPole-v1")
    ...     text = page.read_text(encoding="utf-8")
    >>> page.name, "semantic.oracle_max" in text
    ('report.html', True)
"""

from __future__ import annotations

import math
from pathlib import Path

from .report_figures import finite, is_canary, report_figures
from .report_html import report_html

__all__ = ["write_html", "write_markdown"]


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


def write_html(report: dict, path: str | Path, *, command: str | None = None) -> Path:
    """Write ``report`` as one self-contained HTML page to ``path``
    (:func:`~.report_html.report_html`); return ``path``."""
    path = Path(path)
    path.write_text(report_html(report, command=command), encoding="utf-8")
    return path
