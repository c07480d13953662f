"""The pytest plugin of the adapted suites' runs (``-p tests.conformance.plugin``),
Gymnasium's and Stable-Baselines3's alike: one
:class:`~tests.conformance.hosting.AppHost` for the session and, after each
test, what its replacements opened closed and its servers drained.

With ``--conformance-outcomes PATH`` it also writes every case's outcome to
``PATH`` as JSON, ``{node id: {"outcome", "message"}}`` (``passed``,
``failed``, ``error`` for a failing setup or teardown, ``skipped``,
``xfailed``, ``xpassed``; a module that fails to import is an ``error`` under
its own node id; ``message`` is the first line of the error), which is
what a run that checks the outcomes (``test_sb3_vec_envs.py``) reads back.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from . import hosting
from .hosting import AppHost, app_host

#: How long a recorded error message may be.
MESSAGE_CHARS = 400


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--conformance-outcomes", metavar="PATH", default=None,
                     help="write every case's outcome to PATH (JSON)")


def pytest_configure(config: pytest.Config) -> None:
    path = config.getoption("--conformance-outcomes")
    if path:
        config.pluginmanager.register(_Outcomes(Path(path)), "conformance-outcomes")


class _Outcomes:
    """Collects the outcome of every case and writes them when the session ends."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.cases: dict[str, dict[str, str]] = {}

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        case = self.cases.setdefault(report.nodeid, {"outcome": "passed", "message": ""})
        if case["outcome"] in ("failed", "error"):
            return  # the first failure of a case is its outcome
        if hasattr(report, "wasxfail"):
            case["outcome"] = "xpassed" if report.passed else "xfailed"
        elif report.failed:
            case["outcome"] = "failed" if report.when == "call" else "error"
            case["message"] = _message(report)
        elif report.skipped:
            case["outcome"] = "skipped"
            case["message"] = _message(report)

    def pytest_collectreport(self, report: pytest.CollectReport) -> None:
        if report.failed:  # a module that does not import: its cases never run
            self.cases[report.nodeid or "<collection>"] = {"outcome": "error", "message": _message(report)}

    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        self.path.write_text(json.dumps(self.cases, indent=1, sort_keys=True) + "\n")


def _message(report: pytest.TestReport | pytest.CollectReport) -> str:
    """The first line of what ``report`` says went wrong (or why it was skipped)."""
    longrepr: Any = report.longrepr
    crash = getattr(longrepr, "reprcrash", None)
    if crash is not None:
        text = crash.message
    elif isinstance(longrepr, tuple) and len(longrepr) == 3:  # a skip: (file, line, reason)
        text = str(longrepr[2])
    else:
        text = str(longrepr)
    lines = text.strip().splitlines()
    return (lines[0] if lines else "")[:MESSAGE_CHARS]


@pytest.fixture(scope="session", autouse=True)
def conformance_host() -> Iterator[AppHost]:
    with app_host() as host:
        hosting.use_host(host)
        try:
            yield host
        finally:
            hosting.use_host(None)


@pytest.fixture(autouse=True)
def _release_servers(conformance_host: AppHost) -> Iterator[None]:
    yield
    hosting.close_made()
    conformance_host.release_all()
