"""Every package in ``wrappers/`` passes upstream's real validator (openenv 0.10's
``run_validation``), static and runtime levels, with its committed kit; the runtime
level through :class:`~openenv_gym.kit.upstream.LocalProvider`, which starts the
package's own server on 127.0.0.1 and stops it when the run ends."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.conftest import ROOT

validation = pytest.importorskip("openenv.validation")
upstream = pytest.importorskip("openenv_gym.kit.upstream")

WRAPPERS = sorted(p.name for p in (ROOT / "wrappers").iterdir() if (p / "openenv.yaml").is_file())
#: Upstream's runtime graders in 0.10, and what each must answer on a local provider.
RUNTIME = {
    "runtime.startup": "pass",
    "runtime.reward_well_formed": "pass",
    "runtime.observation_schema": "pass",
    "runtime.state_contract": "pass",
    "runtime.network_policy": "skip",  # needs a provider that enforces networking (Docker's)
}


def statuses(report) -> dict[str, str]:
    return {result.check_id: result.status.value for result in report.results}


@pytest.mark.parametrize("package", WRAPPERS)
def test_the_package_passes_upstreams_static_level(package):
    report = validation.run_validation(ROOT / "wrappers" / package, max_level=validation.Level.STATIC)
    assert report.verdict is validation.Verdict.PASS, report.results


@pytest.mark.parametrize("package", WRAPPERS)
def test_the_package_passes_upstreams_runtime_graders_on_its_own_server(package):
    report = upstream.validate(ROOT / "wrappers" / package, validation.Level.RUNTIME)
    found = statuses(report)
    assert {check: found.get(check) for check in RUNTIME} == RUNTIME, report.results
    network = next(r for r in report.results if r.check_id == "runtime.network_policy")
    assert network.evidence == ["missing provider capabilities: network_policy"]
    # What is left are the graders 0.10 does not have: SKIP, which makes the verdict WARN.
    assert report.verdict is validation.Verdict.WARN
    assert all(status in ("pass", "skip") for status in found.values()), report.results


def test_a_reward_outside_the_declared_range_fails_upstreams_grader(tmp_path):
    package = tmp_path / "cartpole"
    shutil.copytree(ROOT / "wrappers" / "cartpole", package, ignore=shutil.ignore_patterns("__pycache__"))
    manifest = package / "openenv.yaml"
    manifest.write_text(manifest.read_text().replace("range: [0.0, 500.0]", "range: [0.0, 0.5]"))
    report = upstream.validate(package, validation.Level.RUNTIME)
    assert statuses(report)["runtime.reward_well_formed"] == "fail"
    assert report.verdict is validation.Verdict.FAIL


def test_a_server_that_cannot_start_fails_startup_with_its_last_words(tmp_path):
    package = tmp_path / "broken"
    shutil.copytree(ROOT / "wrappers" / "cartpole", package, ignore=shutil.ignore_patterns("__pycache__"))
    (package / "server" / "app.py").write_text("raise SystemExit('no env here')\n")
    report = upstream.validate(package, validation.Level.RUNTIME)
    startup = next(r for r in report.results if r.check_id == "runtime.startup")
    assert startup.status.value == "fail" and "no env here" in startup.evidence[0]


def test_the_committed_kits_name_files_that_exist():
    for package in WRAPPERS:
        root = ROOT / "wrappers" / package
        manifest = validation.run_validation(root, max_level=validation.Level.STATIC).manifest
        assert (root / manifest.execution.probe_path).is_file()
        assert (root / manifest.capabilities.canaries).is_file()
        if manifest.capabilities.oracle is not None:
            assert (root / manifest.capabilities.oracle.location).is_file()
        assert Path(root / "validation" / "kit.json").is_file()
