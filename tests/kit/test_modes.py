"""Upstream's runtime graders (openenv 0.10's ``run_validation``, through the local
provider) pass on a server in either of OpenEnv's modes: the graders speak ``/schema``
and ``/ws``, which both modes serve; production mode drops only the stateless HTTP
``/reset``, ``/step`` and ``/state``. And a package whose app has a ``set_state``
hook gets a kit declaring it."""

from __future__ import annotations

import shutil
import urllib.error
import urllib.request

import pytest

from tests.conftest import ROOT

validation = pytest.importorskip("openenv.validation")
upstream = pytest.importorskip("openenv_gym.kit.upstream")

#: What each of 0.10's runtime graders answers on the local provider, in both modes.
from tests.kit.test_upstream import RUNTIME  # noqa: E402


def reset_status(base_url: str) -> int:
    request = urllib.request.Request(base_url + "/reset", data=b"{}", method="POST",
                                     headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status
    except urllib.error.HTTPError as exc:
        return exc.code


@pytest.mark.parametrize(("mode", "reset"), [("simulation", 200), ("production", 404)])
def test_upstreams_runtime_graders_pass_in_both_modes(mode, reset, monkeypatch):
    monkeypatch.setenv("OPENENV_MODE", mode)  # the package's create_app reads it; its server inherits it
    package = ROOT / "wrappers" / "cartpole"
    subject = upstream.start_package(package)
    try:
        assert reset_status(subject.base_url) == reset  # the server runs in that mode
    finally:
        subject.stop()
    report = upstream.validate(package, validation.Level.RUNTIME)
    found = {result.check_id: result.status.value for result in report.results}
    assert {check: found.get(check) for check in RUNTIME} == RUNTIME, report.results
    assert report.verdict is validation.Verdict.WARN  # the SKIPs of graders 0.10 lacks


def test_a_package_with_a_set_state_hook_declares_it(tmp_path):
    from openenv_gym.kit import make_kit

    package = tmp_path / "cartpole"
    shutil.copytree(ROOT / "wrappers" / "cartpole", package, ignore=shutil.ignore_patterns("__pycache__"))
    app = package / "server" / "app.py"
    app.write_text(app.read_text().replace(
        'app = openenv_gym.create_app("CartPole-v1", web=True)',
        'app = openenv_gym.create_app("CartPole-v1", web=True, set_state=lambda env, state: env.reset())',
    ))
    assert "set_state=" in app.read_text()
    make_kit(str(package), package)
    assert "    set_state: true\n" in (package / "openenv.yaml").read_text()
    report = validation.run_validation(package, max_level=validation.Level.STATIC)
    assert report.verdict is validation.Verdict.PASS, report.results
