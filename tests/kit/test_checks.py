"""``openenv-gym check``: a sound env passes every check; each planted defect is caught by
the check named for it, and by no unrelated check."""

from __future__ import annotations

import json

import pytest

from openenv_gym.cli import main
from openenv_gym.kit import make_kit
from openenv_gym.kit.checks import run_checks, table, throughput
from openenv_gym.kit.report_html import report_html
from tests.kit import planted

pytest.importorskip("openenv.validation")

#: Every check openenv-gym adds (upstream's are tested in test_upstream.py).
OURS = {
    "runtime.episode_determinism", "runtime.episode_isolation", "semantic.oracle_max", "semantic.floor_gap",
    "semantic.canary_floor", "semantic.replayability", "semantic.no_solution_leakage",
    "semantic.resource_envelope", "hacking.repeated_action", "hacking.reward_range", "learning.learnability",
    "perf.throughput", "hacking.out_of_space", "hacking.boundary_actions", "hacking.reset_abuse",
    "hacking.info_reward",
}


@pytest.fixture(autouse=True)
def short_throughput_probe(monkeypatch):
    """The throughput probe measures; it cannot fail. A few steps keep these tests short."""
    monkeypatch.setattr(throughput, "THROUGHPUT_STEPS", 10)


def checked(tmp_path, env: str, edit=None) -> dict[str, str]:
    root = planted.package(tmp_path / env.lower(), env)
    make_kit(str(root), oracle="tests.kit.planted:oracle")
    if edit is not None:
        edit(root)
    report = run_checks(root, upstream=False)
    return {r["check_id"]: r["status"] for r in report["results"]}


def failures(found: dict[str, str]) -> set[str]:
    return {check for check, status in found.items() if status in ("fail", "error")}


def test_the_sound_lock_passes_every_check(tmp_path):
    found = checked(tmp_path, "Lock")
    assert set(found) == OURS
    assert failures(found) == set(), found


@pytest.mark.parametrize(
    "env, caught_by",
    [
        ("Nondeterministic", {"runtime.episode_determinism"}),
        ("Leaky", {"semantic.no_solution_leakage"}),
        ("Backdoor", {"hacking.repeated_action"}),
        ("Bleeding", {"runtime.episode_isolation"}),
        ("Overflow", {"hacking.boundary_actions"}),
        ("Farm", {"hacking.reset_abuse"}),
        ("Tipped", {"hacking.info_reward"}),
    ],
)
def test_a_planted_defect_is_caught_by_its_check_alone(tmp_path, env, caught_by):
    assert failures(checked(tmp_path, env)) == caught_by


def test_a_reward_outside_the_declared_range_is_caught(tmp_path):
    def narrow(root):  # the author declares less than the lock pays (6)
        manifest = root / "openenv.yaml"
        manifest.write_text(manifest.read_text().replace("range: [0.0, 6.0]", "range: [0.0, 5.5]"))

    assert failures(checked(tmp_path, "Lock", narrow)) == {"hacking.reward_range"}


def test_an_env_deaf_to_its_actions_is_unlearnable(tmp_path):
    found = failures(checked(tmp_path, "Deaf"))
    # Every policy earns the same, so the canaries and any repeated action sit at the top as
    # well: the same defect, seen from three more sides.
    assert found == {
        "learning.learnability", "semantic.floor_gap", "semantic.canary_floor", "hacking.repeated_action",
    }


def test_the_cli_prints_a_table_writes_the_json_and_html_and_exits_1_on_a_failure(tmp_path, capsys):
    root = planted.package(tmp_path / "backdoor", "Backdoor")
    make_kit(str(root), oracle="tests.kit.planted:oracle")
    report, page = tmp_path / "report.json", tmp_path / "report.html"
    assert main(["check", str(root), "--skip-upstream", "--json", str(report), "--html", str(page)]) == 1
    out = capsys.readouterr()
    assert "FAIL   hacking.repeated_action" in out.out and "verdict: FAIL" in out.out
    assert "semantic.oracle_max ..." in out.err  # progress, one line per check
    written = json.loads(report.read_text())
    assert written["verdict"] == "fail"
    assert table(written).splitlines()[-1] == "verdict: FAIL"
    assert page.read_text() == report_html(written, command=f"openenv-gym check {root} --skip-upstream")


def test_a_package_without_a_kit_is_checked_as_a_server_and_told_to_make_one(tmp_path, capsys):
    root = planted.package(tmp_path / "lock", "Lock")
    main(["check", str(root), "--json", str(tmp_path / "report.json")])
    assert f"run `openenv-gym kit {root}` first" in capsys.readouterr().out
    report = json.loads((tmp_path / "report.json").read_text())
    statuses = {r["check_id"]: r["status"] for r in report["results"]}
    assert "error" not in statuses.values()
    # Started here: a fresh server to replay in, and its process to measure.
    assert statuses["runtime.episode_determinism"] == "pass"
    assert statuses["semantic.resource_envelope"] == "skip"
    envelope = next(r for r in report["results"] if r["check_id"] == "semantic.resource_envelope")
    assert envelope["measured"]["peak_rss_mb"] > 0
