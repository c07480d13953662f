"""The HTML report of ``openenv-gym check`` (:mod:`openenv_gym.kit.report_html`): a row for
every check, the returns and the learning curve drawn from the report's own numbers, every
string of the report escaped, missing and non-finite numbers shown as such, nothing loaded
and nothing run."""

from __future__ import annotations

import copy
import json
import math
from html.parser import HTMLParser
from pathlib import Path

import pytest

from openenv_gym.kit.report_html import report_html

#: A real report: ``openenv-gym check wrappers/cartpole``, as docs/validation-cartpole.json.
CARTPOLE = Path(__file__).parent.parent / "data" / "validation-cartpole.json"
COMMAND = "openenv-gym check wrappers/cartpole"
XSS = "<script>alert(1)</script>"


class Page(HTMLParser):
    """The parts of a page the tests read: each table row's cells (text), and each
    element with its attributes and all the text inside it."""

    def __init__(self, text: str) -> None:
        super().__init__(convert_charrefs=True)
        self.rows: list[list[str]] = []
        self.elements: list[tuple[str, dict[str, str], list[str]]] = []
        self._open: list[tuple[str, dict[str, str], list[str]]] = []
        self.feed(text)
        self.close()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        element = (tag, {name: value or "" for name, value in attrs}, [])
        self.elements.append(element)
        if tag == "tr":
            self.rows.append([])
        if tag == "td":
            self.rows[-1].append("")
        if tag not in ("line", "circle", "meta", "polyline", "br"):  # void or self-closed here
            self._open.append(element)

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.elements.append((tag, {name: value or "" for name, value in attrs}, []))

    def handle_endtag(self, tag: str) -> None:
        while self._open and self._open.pop()[0] != tag:
            pass

    def handle_data(self, data: str) -> None:
        for _, _, text in self._open:  # an element's text is all the text inside it
            text.append(data)
        if any(tag == "td" for tag, _, _ in self._open):
            self.rows[-1][-1] += data

    def find(self, tag: str, css: str | None = None) -> list[tuple[dict[str, str], str]]:
        """Every ``tag`` (with the class ``css``): its attributes and its own text."""
        return [(attrs, "".join(text)) for name, attrs, text in self.elements
                if name == tag and (css is None or css in attrs.get("class", "").split())]


@pytest.fixture
def cartpole() -> dict:
    return json.loads(CARTPOLE.read_text(encoding="utf-8"))


def measured(report: dict, check_id: str) -> dict:
    return next(r["measured"] for r in report["results"] if r["check_id"] == check_id)


def test_every_check_is_a_row_with_its_status_and_evidence(cartpole):
    page = Page(report_html(cartpole, command=COMMAND))
    rows = [row for row in page.rows if row]  # the header row has <th>s, no cells
    assert [(row[0], row[1]) for row in rows] == [
        (r["status"].upper(), r["check_id"]) for r in cartpole["results"]]
    assert len(rows) == 28
    statuses = [attrs["class"] for attrs, _ in page.find("span", "status")]
    assert statuses[0] == "status warn verdict"  # the report's verdict, then one per check
    assert statuses[1:] == [f"status {r['status']}" for r in cartpole["results"]]
    for row, result in zip(rows, cartpole["results"]):
        assert all(line in row[2] for line in result["evidence"]), row
    learnability = next(row for row in rows if row[1] == "learning.learnability")
    assert "evaluations116" in learnability[3] and "(116 values)" in learnability[3]


def test_the_header_names_the_target_the_env_the_command_and_the_verdict(cartpole):
    text = report_html(cartpole, command=COMMAND)
    page = Page(text)
    assert page.find("title")[0][1] == "openenv-gym check: wrappers/cartpole"
    assert "wrappers/cartpole" in page.find("h1")[0][1]
    assert page.find("code", "command")[0][1] == COMMAND
    assert "env: " in text and "<b>cartpole</b>" in text
    assert "28 checks in 84.5 s: 21 pass, 7 skip" in text
    assert "produced by" not in report_html(cartpole)  # no command: no line for it


def test_the_returns_figure_has_a_bar_for_each_canary_the_oracle_and_the_learner(cartpole):
    page = Page(report_html(cartpole))
    bars = {text.rpartition(":")[0]: (attrs["class"], float(attrs["data-value"]))
            for attrs, text in page.find("rect", "bar")}
    canaries = measured(cartpole, "semantic.canary_floor")["returns"]
    assert canaries == {"constant": 9.125, "first-legal": 9.5, "random": 25.1875}
    assert bars == {
        **{name: ("bar canary", value) for name, value in canaries.items()},
        "oracle": ("bar other", measured(cartpole, "semantic.oracle_max")["oracle_return"]),
        "learner (best)": ("bar learner", max(measured(cartpole, "learning.learnability")["curve"])),
    }
    widths = {text.rpartition(":")[0]: float(attrs["width"]) for attrs, text in page.find("rect", "bar")}
    assert widths["oracle"] > widths["learner (best)"] > widths["random"] > widths["constant"] > 0


def test_the_learning_curve_has_a_point_per_evaluation_and_the_goal(cartpole):
    learning = measured(cartpole, "learning.learnability")
    page = Page(report_html(cartpole))
    ((curve, _),) = page.find("polyline", "curve")
    points = [tuple(map(float, point.split(","))) for point in curve["points"].split()]
    assert len(points) == len(learning["curve"]) == 116
    xs, ys = zip(*points)
    assert list(xs) == sorted(xs)
    # SVG's y grows downwards: the best evaluation (the last, 278.875) is the highest point,
    # the first ones (9.5) the lowest, and equal returns sit at equal heights.
    assert min(ys) == ys[-1] and max(ys) == ys[0] == ys[1] == ys[2]
    (goal,) = [attrs for attrs, _ in page.find("line", "goal") if "data-value" in attrs]
    assert float(goal["data-value"]) == pytest.approx(learning["goal"], abs=1e-3)
    assert ys[-1] < float(goal["y1"]) < ys[-2]  # the last evaluation crossed the goal
    assert page.find("title")[-1][1] == "learning curve of linear-policy random search"


def test_every_string_of_the_report_is_escaped(cartpole):
    report = copy.deepcopy(cartpole)
    report["target"] = XSS
    report["manifest"]["name"] = XSS
    report["checked_by"] = XSS
    results = {r["check_id"]: r for r in report["results"]}
    results["semantic.oracle_max"].update(evidence=[XSS], remediation=XSS, status="fail")
    results["semantic.canary_floor"]["measured"]["returns"][XSS] = 1.0
    results["learning.learnability"]["measured"]["learner"] = XSS
    results["perf.throughput"]["measured"][XSS] = {XSS: XSS}
    results["static.manifest"].update(check_id=XSS, status=XSS)
    text = report_html(report, command=f"openenv-gym check '{XSS}'")
    assert "<script" not in text.lower()
    assert text.count("&lt;script&gt;alert(1)&lt;/script&gt;") >= 12
    page = Page(text)
    assert not page.find("script")
    assert not [attrs for _, attrs, _ in page.elements if any(name.startswith("on") for name in attrs)]
    # Escaped, the strings read as they were.
    assert page.find("code", "command")[0][1] == f"openenv-gym check '{XSS}'"
    assert XSS in {text.rpartition(":")[0] for _, text in page.find("rect", "bar")}


def test_a_quote_in_a_string_cannot_leave_its_attribute():
    report = {"target": 'x" onload="alert(1)', "verdict": "pass", "results": [
        {"check_id": "learning.learnability", "status": "pass", "evidence": [],
         "measured": {"learner": '"><svg onload=alert(1)>', "goal": 1.0, "curve": [0.0, 2.0]}}]}
    page = Page(report_html(report))
    assert not [attrs for _, attrs, _ in page.elements if any(name.startswith("on") for name in attrs)]
    assert len(page.find("svg")) == 2


def test_missing_and_non_finite_numbers_are_shown_as_such():
    # What json.loads gives for a report json.dumps wrote with NaN and infinities in it.
    report = json.loads(json.dumps({"target": "Pendulum-v1", "verdict": "fail", "results": [
        {"check_id": "semantic.canary_floor", "status": "pass", "evidence": ["e"], "duration_s": math.nan,
         "measured": {"returns": {"constant": -1200.5, "first-legal": None, "random": math.nan}}},
        {"check_id": "semantic.oracle_max", "status": "fail", "evidence": ["e"], "duration_s": None,
         "measured": {"oracle_return": math.inf}},
        {"check_id": "learning.learnability", "status": "error", "evidence": [], "duration_s": 2.0,
         "measured": {"learner": "q", "goal": None, "curve": [-1500, math.nan, None, -900, -800, -math.inf]}},
    ]}))
    page = Page(report_html(report))
    bars = {text.rpartition(":")[0]: float(attrs["data-value"]) for attrs, text in page.find("rect", "bar")}
    assert bars == {"constant": -1200.5, "learner (best)": -800.0}  # only what is finite is drawn
    notes = [text for _, text in page.find("text", "muted")]
    assert {"n/a (nothing to draw)", "NaN (nothing to draw)", "∞ (nothing to draw)"} <= set(notes)
    assert "3 of 6 returns missing or not finite: left as gaps" in notes
    assert [len(attrs["points"].split()) for attrs, _ in page.find("polyline", "curve")] == [2]  # -900, -800
    assert len(page.find("circle", "point")) == 3  # every finite return has its point (a short curve)
    assert not page.find("line", "goal")
    rows = {row[1]: row for row in page.rows if row}
    assert rows["semantic.canary_floor"][3] == "returns.constant-1200.5returns.first-legaln/areturns.randomNaN"
    assert rows["semantic.canary_floor"][4] == "NaN" and rows["semantic.oracle_max"][4] == ""
    assert rows["learning.learnability"][4] == "2.0"


def test_a_report_without_figures_or_checks_still_renders():
    text = report_html({"target": "t", "verdict": "pass", "results": []})
    assert "no returns in the report" in text and "the learner did not train" in text
    assert "the report holds no checks" in text
    odd = report_html({"target": "t", "verdict": "warn", "results": [
        {"check_id": "x.newer", "status": "unheard-of", "evidence": "one string", "measured": None}]})
    assert '<span class="status other">UNHEARD-OF</span>' in odd and "<p>one string</p>" in odd


def test_the_page_loads_nothing_and_runs_nothing(cartpole):
    text = report_html(cartpole, command=COMMAND)
    assert "default-src 'none'" in Page(text).find("meta")[1][0]["content"]
    for loader in ("<script", "src=", "href=", "url(", "@import", "<link", "<iframe", "<img", "javascript:"):
        assert loader not in text.lower(), loader
    assert text.replace('xmlns="http://www.w3.org/2000/svg"', "").count("://") == 0  # no address at all



def test_the_committed_example_is_what_the_report_renders_today():
    docs = Path(__file__).parent.parent.parent / "docs"
    report = json.loads((docs / "validation-cartpole.json").read_text(encoding="utf-8"))
    assert (docs / "validation-cartpole.html").read_text(encoding="utf-8") == report_html(report, command=COMMAND), (
        "docs/validation-cartpole.html is stale: regenerate it with the command in docs/validation.md")


def test_check_writes_the_html_report_as_it_writes_the_markdown_even_on_a_failure(cartpole, tmp_path, monkeypatch,
                                                                                  capsys):
    """The wiring of ``--html``, from the command line to the file, on a stub of the checks
    (test_checks.py runs the real ones): written beside ``--json`` and ``--markdown``, with
    the command that made it, whatever the verdict."""
    from openenv_gym.cli import main
    from openenv_gym.kit.checks import run

    failing = copy.deepcopy(cartpole)
    failing["verdict"] = "fail"
    failing["results"][0]["status"] = "fail"
    checked = []

    def run_checks(target, **options):
        checked.append((target, options["upstream"]))
        return failing

    monkeypatch.setattr(run, "run_checks", run_checks)
    page, markdown = tmp_path / "out" / "report.html", tmp_path / "report.md"
    page.parent.mkdir()
    assert main(["check", "wrappers/cartpole", "--skip-upstream", "--html", str(page),
                 "--markdown", str(markdown)]) == 1
    assert checked == [("wrappers/cartpole", False)]
    assert "verdict: FAIL" in capsys.readouterr().out
    text = page.read_text(encoding="utf-8")
    assert text == report_html(failing, command="openenv-gym check wrappers/cartpole --skip-upstream")
    assert '<span class="status fail verdict">FAIL</span>' in text
    assert markdown.exists()  # both, from one run


def test_check_without_html_writes_no_page(cartpole, tmp_path, monkeypatch):
    from openenv_gym.cli import _parser, main
    from openenv_gym.kit.checks import run

    assert _parser().parse_args(["check", "CartPole-v1"]).html is None
    assert _parser().parse_args(["check", "CartPole-v1", "--html", "r.html"]).html == "r.html"
    monkeypatch.setattr(run, "run_checks", lambda target, **options: cartpole)
    monkeypatch.chdir(tmp_path)
    assert main(["check", "wrappers/cartpole", "--json", "report.json"]) == 0  # a WARN exits 0
    assert sorted(path.name for path in tmp_path.iterdir()) == ["report.json"]
