"""``openenv-gym check`` on every kind of target: a Gymnasium id or ``module:factory`` (its kit
generated on the fly), and the URL of any OpenEnv server, where what cannot be checked SKIPs
with its reason."""

from __future__ import annotations

import pytest

from openenv_gym.cli import main
from openenv_gym.kit.checks import URL_SKIPS, run_checks, throughput
from tests.conftest import asgi_server
from tests.kit import planted

pytest.importorskip("openenv.validation")


@pytest.fixture(autouse=True)
def short_throughput_probe(monkeypatch):
    monkeypatch.setattr(throughput, "THROUGHPUT_STEPS", 10)


def statuses(report: dict) -> dict[str, str]:
    return {r["check_id"]: r["status"] for r in report["results"]}


def test_a_module_factory_is_checked_on_a_kit_generated_on_the_fly():
    report = run_checks("tests.kit.planted:Lock", upstream=False, oracle="tests.kit.planted:oracle")
    assert report["target"] == "tests.kit.planted:Lock"
    assert set(statuses(report).values()) == {"pass"}, report["results"]


def test_an_env_id_is_checked_from_the_cli(capsys):
    assert main(["check", "FrozenLake-v1", "--env-kwargs", '{"is_slippery": false}', "--skip-upstream"]) == 0
    out = capsys.readouterr()
    assert "generating a validation kit for FrozenLake-v1" in out.err
    assert "verdict: PASS" in out.out


def test_at_a_url_what_cannot_be_checked_skips_with_its_reason(stock_url):
    # A server on openenv's own create_app: no kit, no process of ours.
    report = run_checks(stock_url)
    found = statuses(report)
    assert "error" not in found.values()
    for check_id, reason in URL_SKIPS.items():
        assert found[check_id] == "skip"
        assert next(r for r in report["results"] if r["check_id"] == check_id)["evidence"] == [reason]
    # Found out over the wire, and labelled so: the reward range observed, the learner trained here.
    by_id = {r["check_id"]: r for r in report["results"]}
    assert by_id["hacking.reward_range"]["evidence"][0].startswith("observed, not declared: ")
    assert by_id["hacking.reward_range"]["measured"]["observed"] == [1.0, 5.0]
    assert "weaker at a URL" in by_id["hacking.reward_range"]["evidence"][-1]
    assert by_id["learning.learnability"]["status"] in ("pass", "fail", "skip")
    assert "weaker at a URL" in by_id["runtime.episode_determinism"]["evidence"][-1]
    assert "not checked: a fresh server" in by_id["runtime.episode_determinism"]["evidence"][1]
    # The stock server's /schema says what is outside: its pydantic bounds (1..5), types and extra keys.
    assert by_id["hacking.out_of_space"]["status"] == "pass"
    assert set(by_id["hacking.out_of_space"]["measured"]["actions_tried"]) >= {
        "increment: 0 (below its minimum 1)", "increment: 6 (above its maximum 5)", "an unknown key"}
    assert found["runtime.episode_isolation"] == "pass"  # eight sessions at once


def test_an_out_of_space_action_clipped_into_a_reward_is_caught():
    with asgi_server(planted.clipping_app()) as url:
        report = run_checks(url)
    failed = {check for check, status in statuses(report).items() if status in ("fail", "error")}
    assert failed == {"hacking.out_of_space"}
    evidence = next(r for r in report["results"] if r["check_id"] == "hacking.out_of_space")["evidence"]
    assert evidence[0].startswith("increment: 0 (below its minimum 1): accepted, and paid a reward of")


def test_options_that_make_a_kit_are_refused_for_a_url(capsys):
    assert main(["check", "http://127.0.0.1:9", "--oracle", "x:y"]) == 1
    assert "--env-kwargs and --oracle make a kit for an env" in capsys.readouterr().err


def test_a_url_where_no_server_answers_says_so(capsys):
    assert main(["check", "http://127.0.0.1:9"]) == 1
    assert "is an OpenEnv server listening there?" in capsys.readouterr().err
