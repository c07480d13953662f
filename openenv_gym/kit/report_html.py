"""The ``openenv-gym check`` report as one self-contained HTML page.

    $ openenv-gym check wrappers/cartpole --html report.html

:func:`report_html` turns a report (upstream's shape: ``results`` of ``{check_id,
status, measured, evidence, remediation, duration_s}`` and a ``verdict``, as
``--json`` writes it) into a page that needs nothing else: the target, the command,
a table of every check with its status, evidence and what it measured, and the two
figures of :mod:`.report_figures` (the returns of the canaries, the oracle and the
learner; the learning curve against its goal) drawn as inline SVG in pure Python, so
that the ``validate`` extra alone renders it, without matplotlib.

The page is meant to be embedded as well as opened: a server shows it in a sandboxed
``<iframe>``. So it holds no script, loads nothing (no font, stylesheet or image from
elsewhere; its Content-Security-Policy forbids it), and escapes every string that comes
from the report: an env names itself, and its checks quote what it sent, so a
``<script>`` in a name or a reason must come out as text.

    >>> report = {"target": "<b>CartPole</b>", "verdict": "fail", "results": [
    ...     {"check_id": "semantic.oracle_max", "status": "fail", "evidence": ["oracle return 9 < 500"],
    ...      "measured": {"oracle_return": 9.0, "goal": float("nan")}, "duration_s": 0.5}]}
    >>> page = report_html(report, command="openenv-gym check CartPole-v1")
    >>> page.startswith("<!DOCTYPE html>") and "<script" not in page and "<b>" not in page
    True
    >>> '<span class="status fail">FAIL</span>' in page and "&lt;b&gt;CartPole&lt;/b&gt;" in page
    True
"""

from __future__ import annotations

import html
import math
from collections.abc import Iterable, Sequence
from typing import Any

from .report_figures import finite, is_canary, report_figures

__all__ = ["report_html"]

#: The statuses the page styles; any other (a newer upstream's) is shown as it is, unstyled.
STYLED_STATUSES = ("pass", "warn", "skip", "fail", "error")
#: Of a long list in ``measured`` (a learning curve), the page shows this many items.
LIST_SHOWN = 6

_STYLE = """
:root { color-scheme: light; --pass: #1a7f37; --warn: #9a6700; --skip: #6e7781; --fail: #cf222e;
        --error: #8250df; --other: #57606a; --line: #d0d7de; }
* { box-sizing: border-box; }
body { margin: 0; padding: 24px; font: 14px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif;
       color: #1f2328; background: #fff; }
h1 { font-size: 20px; margin: 0 0 4px; overflow-wrap: anywhere; }
h2 { font-size: 16px; margin: 24px 0 8px; }
.meta { margin: 2px 0; color: #57606a; overflow-wrap: anywhere; }
code { font: 12.5px ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; }
.command { background: #f6f8fa; border: 1px solid var(--line); border-radius: 6px; padding: 2px 6px; }
.status { display: inline-block; min-width: 48px; padding: 1px 6px; border-radius: 10px; color: #fff;
          font-size: 11.5px; font-weight: 600; text-align: center; letter-spacing: .03em;
          background: var(--other); }
.status.verdict { font-size: 13px; padding: 2px 10px; }
.status.pass { background: var(--pass); } .status.warn { background: var(--warn); }
.status.skip { background: var(--skip); } .status.fail { background: var(--fail); }
.status.error { background: var(--error); }
.figures { display: flex; flex-wrap: wrap; gap: 16px; align-items: flex-start; }
figure { margin: 0; flex: 1 1 420px; max-width: 600px; border: 1px solid var(--line); border-radius: 6px;
         padding: 8px; }
figcaption { font-weight: 600; margin-bottom: 4px; }
figure svg { display: block; width: 100%; height: auto; }
svg text { font: 11px system-ui, -apple-system, "Segoe UI", sans-serif; fill: #1f2328; }
svg .muted { fill: #57606a; font-style: italic; }
svg .inside { fill: #fff; }
svg .grid { stroke: #eaeef2; } svg .axis { stroke: #8c959f; }
svg .bar { fill: #2da44e; } svg .bar.canary { fill: #8c959f; } svg .bar.learner { fill: #0969da; }
svg .curve { fill: none; stroke: #0969da; stroke-width: 2; } svg .point { fill: #0969da; }
svg .goal { stroke: #cf222e; stroke-width: 1.5; stroke-dasharray: 6 4; }
.none { color: #57606a; font-style: italic; }
table { border-collapse: collapse; width: 100%; }
th, td { text-align: left; vertical-align: top; padding: 6px 8px; border-bottom: 1px solid var(--line); }
th { background: #f6f8fa; font-weight: 600; }
td.check { white-space: nowrap; }
td.evidence, td.measured { overflow-wrap: anywhere; }
td.seconds { text-align: right; white-space: nowrap; color: #57606a; }
tr.fail td, tr.error td { background: #fff5f5; }
td p { margin: 0 0 2px; }
.remediation { color: #9a6700; }
dl { margin: 0; display: grid; grid-template-columns: auto 1fr; gap: 0 8px; }
dt { color: #57606a; } dd { margin: 0; }
"""


def report_html(report: dict, *, command: str | None = None) -> str:
    """``report`` as one HTML document (see the module): its target and ``command``
    (the command line that made it, when known), its verdict, the figures of its
    returns and learning curve, and a row for each check."""
    results = list(report.get("results") or [])
    target = str(report.get("target", "unnamed target"))
    manifest = report.get("manifest")
    env_name = manifest.get("name") if isinstance(manifest, dict) else None
    title = f"openenv-gym check: {target}"
    lines = [
        "<!DOCTYPE html>",
        '<html lang="en">',
        "<head>",
        '<meta charset="utf-8">',
        # Nothing to load, nothing to run: the page is whole, and safe inside an iframe.
        "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'\">",
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>{_text(title)}</title>",
        f"<style>{_STYLE}</style>",
        "</head>",
        "<body>",
        "<header>",
        f"<h1><code>openenv-gym check</code> report: {_text(target)}</h1>",
    ]
    if env_name is not None and str(env_name) != target:
        lines.append(f'<p class="meta">env: <b>{_text(env_name)}</b></p>')
    if command is not None:
        lines.append(f'<p class="meta">produced by <code class="command">{_text(command)}</code></p>')
    lines += [
        f'<p class="meta">verdict: {_status(report.get("verdict", "unknown"), "verdict")} &middot; '
        f"{_text(_summary(results))}</p>",
        *_provenance(report),
        "</header>",
        "<h2>Returns</h2>",
        '<section class="figures">',
        _figures(report),
        "</section>",
        "<h2>Checks</h2>",
        _table(results),
        "</body>",
        "</html>",
    ]
    return "\n".join(lines) + "\n"


def _text(value: object) -> str:
    """``value`` as text for HTML or SVG, escaped (quotes too: it may sit in an attribute)."""
    return html.escape(str(value), quote=True)


def _number(value: object) -> str:
    """A number as the page shows it: integral floats without ``.0``, six significant
    digits, and what is not a finite number said plainly.

    >>> [_number(v) for v in (500.0, 237.406, 1 / 3, 4125, 1e-5, float("nan"), float("-inf"), None, True)]
    ['500', '237.406', '0.333333', '4125', '1e-05', 'NaN', '-∞', 'n/a', 'true']
    """
    if value is None:
        return "n/a"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value):
            return "NaN"
        if math.isinf(value):
            return "∞" if value > 0 else "-∞"
        if value.is_integer() and abs(value) < 1e15:
            return str(int(value))
        return format(value, ".6g")
    return str(value)


def _value(value: object) -> str:
    """Escaped HTML of one value of ``measured``; a long list shortened to its first and
    last items and its length.

    >>> _value([1.5, None, "<x>"])
    '1.5, n/a, &lt;x&gt;'
    >>> _value(list(range(10)))
    '0, 1, 2, 3, 4, &hellip; 9 (10 values)'
    >>> _value({"a": 1, "b": [2.0]})
    'a: 1; b: 2'
    """
    if isinstance(value, dict):
        return "; ".join(f"{_text(key)}: {_value(item)}" for key, item in value.items()) or "none"
    if isinstance(value, (list, tuple)):
        if not value:
            return "none"
        if len(value) <= LIST_SHOWN:
            return ", ".join(_value(item) for item in value)
        shown = ", ".join(_value(item) for item in value[: LIST_SHOWN - 1])
        return f"{shown}, &hellip; {_value(value[-1])} ({len(value)} values)"
    if isinstance(value, str):
        return _text(value)
    return _text(_number(value))


def _flattened(measured: dict, prefix: str = "") -> Iterable[tuple[str, object]]:
    """``measured``'s leaves with their dotted paths: ``{"sessions_1": {"p50_ms": 4}}``
    is ``("sessions_1.p50_ms", 4)``; a list stays one leaf."""
    for key, value in measured.items():
        path = f"{prefix}{key}"
        if isinstance(value, dict) and value:
            yield from _flattened(value, f"{path}.")
        else:
            yield path, value


def _status(status: object, *classes: str) -> str:
    name = str(status).lower()
    style = name if name in STYLED_STATUSES else "other"
    return f'<span class="{" ".join(["status", style, *classes])}">{_text(name.upper())}</span>'


def _summary(results: Sequence[dict]) -> str:
    """``28 checks in 84.5 s: 21 pass, 7 skip``, statuses in the order of the table.

    >>> _summary([{"status": "pass", "duration_s": 1.25}, {"status": "skip", "duration_s": None}])
    '2 checks in 1.2 s: 1 pass, 1 skip'
    >>> _summary([{"status": "fail"}])
    '1 check: 1 fail'
    """
    counts: dict[str, int] = {}
    for result in results:
        status = str(result.get("status", "unknown")).lower()
        counts[status] = counts.get(status, 0) + 1
    durations = [seconds for seconds in (finite(r.get("duration_s")) for r in results) if seconds is not None]
    took = f" in {_seconds(sum(durations))} s" if durations else ""
    tally = ", ".join(f"{count} {status}" for status, count in counts.items())
    checks = "1 check" if len(results) == 1 else f"{len(results)} checks"
    return f"{checks}{took}" + (f": {tally}" if tally else "")


def _seconds(value: object) -> str:
    """A duration to the precision worth reading: ``23.9``, ``0.86``, ``0.0002``, ``116``."""
    seconds = finite(value)
    if seconds is None:
        return "" if value is None else _number(value)
    if seconds >= 100:
        return f"{seconds:.0f}"
    if seconds >= 1:
        return f"{seconds:.1f}"
    return format(seconds, ".2g")


def _provenance(report: dict) -> list[str]:
    """Who checked, with which policy and schema, and which source: a line, when the
    report says any of it."""
    facts = [(label, report.get(key)) for label, key in (
        ("checked by", "checked_by"), ("policy", "policy_version"), ("lane", "lane"),
        ("levels", "levels_run"), ("report schema", "report_schema_version"), ("source digest", "source_digest"),
    )]
    shown = [f"{label} {_value(value)}" for label, value in facts if value not in (None, "", [])]
    return [f'<p class="meta">{" &middot; ".join(shown)}</p>'] if shown else []


def _table(results: Sequence[dict]) -> str:
    rows = [
        "<table>",
        "<thead><tr><th>status</th><th>check</th><th>evidence</th><th>measured</th>"
        '<th class="seconds">s</th></tr></thead>',
        "<tbody>",
    ]
    for result in results:
        status = str(result.get("status", "unknown")).lower()
        evidence = result.get("evidence") or []
        if isinstance(evidence, str):
            evidence = [evidence]
        reasons = "".join(f"<p>{_text(line)}</p>" for line in evidence)
        remediation = result.get("remediation")
        if remediation:
            reasons += f'<p class="remediation">what to do: {_value(remediation)}</p>'
        measured = result.get("measured") or {}
        details = ("<dl>" + "".join(f"<dt>{_text(path)}</dt><dd>{_value(value)}</dd>"
                                    for path, value in _flattened(measured)) + "</dl>") if measured else ""
        rows.append(
            f'<tr class="{status if status in STYLED_STATUSES else "other"}">'
            f"<td>{_status(status)}</td>"
            f'<td class="check"><code>{_text(result.get("check_id", "?"))}</code></td>'
            f'<td class="evidence">{reasons}</td>'
            f'<td class="measured">{details}</td>'
            f'<td class="seconds">{_seconds(result.get("duration_s"))}</td></tr>'
        )
    if not results:
        rows.append('<tr><td colspan="5" class="none">the report holds no checks</td></tr>')
    rows += ["</tbody>", "</table>"]
    return "\n".join(rows)


# Figures -------------------------------------------------------------------------------

#: Width of each figure's SVG canvas (its viewBox: the page scales it to fit).
FIGURE_WIDTH = 560


def _figures(report: dict) -> str:
    figures = report_figures(report)
    return "\n".join([
        '<figure><figcaption>oracle vs canaries vs learner</figcaption>',
        _returns_svg(figures.returns),
        "</figure>",
        '<figure><figcaption>learning curve</figcaption>',
        _curve_svg(figures.curve, figures.goal, figures.learner),
        "</figure>",
    ])


def _ticks(low: float, high: float, count: int = 5) -> list[float]:
    """Round tick values covering ``[low, high]``, about ``count`` steps of 1, 2, 2.5 or 5
    times a power of ten; the first and last ticks are the axis' ends.

    >>> _ticks(0, 500)
    [0.0, 100.0, 200.0, 300.0, 400.0, 500.0]
    >>> _ticks(-1234, 0)
    [-1250.0, -1000.0, -750.0, -500.0, -250.0, 0.0]
    >>> _ticks(3, 3)
    [2.0, 3.0, 4.0]
    """
    if high - low <= 0 or not math.isfinite(high - low):
        return [low - 1.0, float(low), low + 1.0] if high == low else [float(low), float(high)]
    raw = (high - low) / count
    magnitude = 10 ** math.floor(math.log10(raw))
    step = next(m * magnitude for m in (1, 2, 2.5, 5, 10) if m * magnitude >= raw * (1 - 1e-9))
    first, last = math.floor(low / step + 1e-9), math.ceil(high / step - 1e-9)
    return [float(i * step) for i in range(first, last + 1)]


def _svg(height: float, label: str, body: Iterable[str]) -> str:
    return "\n".join([
        f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {FIGURE_WIDTH} {height:.0f}" role="img" '
        f'aria-label="{_text(label)}">',
        f"<title>{_text(label)}</title>",
        *body,
        "</svg>",
    ])


def _nothing(message: str) -> str:
    return _svg(60, message, [f'<text class="muted" x="{FIGURE_WIDTH / 2:.0f}" y="34" '
                              f'text-anchor="middle">{_text(message)}</text>'])


def _returns_svg(returns: dict[str, Any]) -> str:
    """A horizontal bar for each return, from zero; a return that is missing or not
    finite gets no bar but says so."""
    if not returns:
        return _nothing("no returns in the report (canary_floor, oracle_max and learnability did not run)")
    drawable = [value for value in map(finite, returns.values()) if value is not None]
    ticks = _ticks(min([0.0, *drawable]), max([0.0, *drawable]))
    low, high = ticks[0], ticks[-1]
    left, right, top, row = 120.0, FIGURE_WIDTH - 16.0, 8.0, 30.0
    bottom = top + row * len(returns)

    def x(value: float) -> float:
        return left + (value - low) / (high - low) * (right - left)

    body = []
    for tick in ticks:
        body.append(f'<line class="grid" x1="{x(tick):.1f}" y1="{top:.1f}" x2="{x(tick):.1f}" y2="{bottom:.1f}"/>')
        body.append(f'<text x="{x(tick):.1f}" y="{bottom + 14:.1f}" text-anchor="middle">{_number(tick)}</text>')
    for index, (name, value) in enumerate(returns.items()):
        middle = top + row * index + row / 2
        kind = "canary" if is_canary(name) else "learner" if name.startswith("learner") else "other"
        body.append(f'<text x="{left - 8:.1f}" y="{middle + 4:.1f}" text-anchor="end">{_text(name)}</text>')
        drawn = finite(value)
        if drawn is None:
            body.append(f'<text class="muted" x="{left + 6:.1f}" y="{middle + 4:.1f}">'
                        f"{_text(_number(value))} (nothing to draw)</text>")
            continue
        start, end = sorted((x(0.0), x(drawn)))
        body.append(f'<rect class="bar {kind}" x="{start:.1f}" y="{middle - row * 0.35:.1f}" '
                    f'width="{max(end - start, 0.5):.1f}" height="{row * 0.7:.1f}" data-value="{_number(drawn)}">'
                    f"<title>{_text(name)}: {_number(drawn)}</title></rect>")
        body.append(_bar_label(_number(drawn), drawn, start, end, middle, left, right))
    body.append(f'<line class="axis" x1="{x(0.0):.1f}" y1="{top:.1f}" x2="{x(0.0):.1f}" y2="{bottom:.1f}"/>')
    body.append(f'<text class="muted" x="{(left + right) / 2:.1f}" y="{bottom + 32:.1f}" text-anchor="middle">'
                "return (canaries, learner: mean over the kit&#x27;s seeds; oracle: seed 0)</text>")
    return _svg(bottom + 42, "returns of the canaries, the oracle and the learner", body)


def _bar_label(text: str, value: float, start: float, end: float, middle: float, left: float,
               right: float) -> str:
    """The value at the bar's outer end, outside it; inside it (white) when outside
    would leave the plot."""
    room = 7.0 * len(text) + 8
    if value >= 0:
        outside = end + room <= right
        at, anchor = (end + 4, "start") if outside else (end - 4, "end")
    else:
        outside = start - room >= left
        at, anchor = (start - 4, "end") if outside else (start + 4, "start")
    css = "" if outside else ' class="inside"'
    return f'<text{css} x="{at:.1f}" y="{middle + 4:.1f}" text-anchor="{anchor}">{text}</text>'


def _curve_svg(curve: Sequence[Any], goal: Any, learner: str) -> str:
    """The learner's return at each evaluation, a line broken where a return is missing
    or not finite, and the goal as a dashed line."""
    points = [(index, finite(value)) for index, value in enumerate(curve, start=1)]
    drawable = [value for _, value in points if value is not None]
    if not drawable:
        return _nothing("the learner did not train (no learnability curve in the report)" if not curve
                        else f"no finite return among the learner's {len(curve)} evaluations")
    target = finite(goal)
    y_ticks = _ticks(min(drawable + ([target] if target is not None else [])),
                     max(drawable + ([target] if target is not None else [])))
    x_axis = _ticks(1, max(len(curve), 2))
    x_ticks = [tick for tick in x_axis if tick == int(tick)]  # evaluations are counted
    left, right, top, bottom = 52.0, FIGURE_WIDTH - 16.0, 30.0, 250.0
    x_low, x_high, y_low, y_high = x_axis[0], x_axis[-1], y_ticks[0], y_ticks[-1]

    def x(step: float) -> float:
        return left + (step - x_low) / (x_high - x_low) * (right - left)

    def y(value: float) -> float:
        return bottom - (value - y_low) / (y_high - y_low) * (bottom - top)

    body = []
    for tick in y_ticks:
        body.append(f'<line class="grid" x1="{left:.1f}" y1="{y(tick):.1f}" x2="{right:.1f}" y2="{y(tick):.1f}"/>')
        body.append(f'<text x="{left - 6:.1f}" y="{y(tick) + 4:.1f}" text-anchor="end">{_number(tick)}</text>')
    for tick in x_ticks:
        body.append(f'<text x="{x(tick):.1f}" y="{bottom + 16:.1f}" text-anchor="middle">{_number(tick)}</text>')
    body.append(f'<line class="axis" x1="{left:.1f}" y1="{bottom:.1f}" x2="{right:.1f}" y2="{bottom:.1f}"/>')
    if target is not None:
        body.append(f'<line class="goal" x1="{left:.1f}" y1="{y(target):.1f}" x2="{right:.1f}" '
                    f'y2="{y(target):.1f}" data-value="{_number(target)}"/>')
    for segment in _segments(points):
        if len(segment) == 1 or len(curve) <= 30:
            body += [f'<circle class="point" cx="{x(step):.1f}" cy="{y(value):.1f}" r="2.5"/>'
                     for step, value in segment]
        if len(segment) > 1:
            path = " ".join(f"{x(step):.1f},{y(value):.1f}" for step, value in segment)
            body.append(f'<polyline class="curve" points="{path}"/>')
    body.append(f'<text class="muted" x="{(left + right) / 2:.1f}" y="{bottom + 34:.1f}" '
                'text-anchor="middle">evaluation</text>')
    body += _legend(learner, target, left + 8, 8.0)
    gaps = len(curve) - len(drawable)
    if gaps:
        body.append(f'<text class="muted" x="{(left + right) / 2:.1f}" y="{bottom + 52:.1f}" '
                    f'text-anchor="middle">{gaps} of {len(curve)} returns missing or not finite: '
                    "left as gaps</text>")
    return _svg(bottom + (62 if gaps else 44), f"learning curve of {learner}", body)


def _segments(points: Sequence[tuple[int, float | None]]) -> list[list[tuple[int, float]]]:
    """Runs of consecutive finite points: a missing return breaks the line.

    >>> _segments([(1, 1.0), (2, None), (3, 2.0), (4, 3.0)])
    [[(1, 1.0)], [(3, 2.0), (4, 3.0)]]
    """
    runs: list[list[tuple[int, float]]] = [[]]
    for step, value in points:
        if value is None:
            if runs[-1]:
                runs.append([])
        else:
            runs[-1].append((step, value))
    return [run for run in runs if run]


def _legend(learner: str, goal: float | None, left: float, top: float) -> list[str]:
    entries = [("curve", f"{learner}")]
    if goal is not None:
        entries.append(("goal", f"goal: canary floor + margin ({_number(goal)})"))
    items, at = [], left
    for css, label in entries:
        items.append(f'<line class="{css}" x1="{at:.1f}" y1="{top + 6:.1f}" x2="{at + 22:.1f}" y2="{top + 6:.1f}"/>')
        items.append(f'<text x="{at + 28:.1f}" y="{top + 10:.1f}">{_text(label)}</text>')
        at += 28 + 6.2 * len(label) + 18
    return items
