"""Session telemetry on ``/ws`` (``validation_open`` / ``validation_read``), in the shapes
upstream's ``runtime.seed_control`` and ``runtime.trajectory_record`` graders read: the
record equals what a collector sent and received, exchange by exchange."""

from __future__ import annotations

import json

import pytest

import openenv_gym
from openenv_gym.server import hosting
from openenv_gym.server.telemetry import MAX_STEPS, TOKEN_VARIABLE
from tests.envs import Counter
from tests.server.raw import ask, http, ws

TOKEN = "per-run-validation-token-" + "0" * 24


def opened(sock, token: str = TOKEN) -> dict:
    return ask(sock, {"type": "validation_open", "data": {"schema_version": 1, "token": token}})


def read(sock, capability: str) -> dict:
    return ask(sock, {"type": "validation_read", "data": {"schema_version": 1, "capability": capability}})


def collect(sock, messages: list[dict]) -> list[dict]:
    """Send each message as upstream's collector does; the transcript it keeps."""
    transcript = []
    for message in messages:
        request = json.dumps(message, allow_nan=False)
        sock.send(request)
        transcript.append({"operation": message["type"], "request": json.loads(request),
                           "response": json.loads(sock.recv(timeout=30))})
    return transcript


@pytest.fixture(scope="module")
def url():
    with openenv_gym.local_server("CartPole-v1", validation_token=TOKEN) as url:
        yield url


def test_the_record_is_the_collectors_transcript_and_the_seed_is_reported(url):
    with ws(url) as sock:
        answer = opened(sock)
        assert answer["type"] == "validation_open" and set(answer["data"]) == {"schema_version", "capability"}
        assert answer["data"]["schema_version"] == 1
        capability = answer["data"]["capability"]
        plan = [{"type": "reset", "data": {"seed": 42, "episode_id": "validation-seed-42"}}, {"type": "state"}]
        for action in (0, 1, 1):
            plan += [{"type": "step", "data": {"action": action}}, {"type": "state"}]
        transcript = collect(sock, plan)
        snapshot = read(sock, capability)
    assert snapshot == {"type": "validation", "data": {
        "schema_version": 1,
        "seed": {"requested": True, "accepted": True, "value": 42},
        "rubric": [],
        "rubric_error": None,
        "attribution": [{"step_index": i, "rubric": []} for i in range(3)],
        "trajectory": {"schema_version": 1, "source": "openenv-server", "records": transcript,
                       "complete": True, "reason": None},
    }}
    assert TOKEN not in json.dumps(snapshot) and capability not in json.dumps(snapshot)


def test_a_reset_without_a_seed_is_reported_as_not_requested_and_errors_are_not_recorded(url):
    with ws(url) as sock:
        capability = opened(sock)["data"]["capability"]
        assert ask(sock, {"type": "step", "data": {"action": 0}})["type"] == "error"  # before reset
        transcript = collect(sock, [{"type": "reset"}])
        ask(sock, {"type": "step", "data": {"action": 7}})  # not in the action space
        snapshot = read(sock, capability)["data"]
    assert snapshot["seed"] == {"requested": False, "accepted": False, "value": None}
    assert snapshot["trajectory"]["records"] == transcript


def test_refusals_are_clear_never_echo_secrets_and_the_session_goes_on(url):
    wrong = "wrong-token-" + "x" * 30
    with ws(url) as first, ws(url) as second:
        refused = read(first, "c" * 40)
        assert refused["data"]["code"] == "VALIDATION_ERROR" and "capability" in refused["data"]["message"]
        for data in ({}, {"schema_version": 1, "token": wrong}, {"schema_version": 2, "token": TOKEN},
                     {"schema_version": 1, "token": "short"}):
            refused = ask(first, {"type": "validation_open", "data": data})
            assert refused["type"] == "error" and refused["data"]["code"] == "VALIDATION_ERROR", refused
            assert TOKEN not in json.dumps(refused) and wrong not in json.dumps(refused)
        mine, theirs = opened(first)["data"]["capability"], opened(second)["data"]["capability"]
        assert mine != theirs
        assert read(first, theirs)["data"]["code"] == "VALIDATION_ERROR"
        assert "already open" in opened(first)["data"]["message"]
        assert read(first, mine)["type"] == "validation"
        assert ask(first, {"type": "reset", "data": {"seed": 1}})["type"] == "observation"
    with ws(url) as late:
        ask(late, {"type": "reset", "data": {"seed": 0}})
        refused = opened(late)
        assert refused["data"]["code"] == "VALIDATION_ERROR" and "first message" in refused["data"]["message"]
        assert ask(late, {"type": "state"})["type"] == "state"


def test_the_record_is_bounded_and_says_so(url):
    with ws(url) as sock:
        capability = opened(sock)["data"]["capability"]
        ask(sock, {"type": "reset", "data": {"seed": 0}})
        done = False
        for _ in range(MAX_STEPS + 5):
            done = done or ask(sock, {"type": "step", "data": {"action": 0}})["data"]["done"]
            if done:
                ask(sock, {"type": "reset", "data": {"seed": 0}})
                done = False
        trajectory = read(sock, capability)["data"]["trajectory"]
    assert trajectory["complete"] is False and trajectory["reason"] == "Session telemetry budget exceeded"
    assert sum(record["operation"] == "step" for record in trajectory["records"]) == MAX_STEPS


def test_without_a_token_or_in_production_mode_telemetry_is_off_and_nothing_is_recorded(monkeypatch):
    def no_telemetry(*args, **kwargs):
        raise AssertionError("a server without telemetry built a session's telemetry")

    monkeypatch.setattr(hosting, "SessionTelemetry", no_telemetry)
    monkeypatch.delenv(TOKEN_VARIABLE, raising=False)
    with openenv_gym.local_server("CartPole-v1") as url, ws(url) as sock:
        refused = opened(sock)
        assert refused["data"]["code"] == "UNKNOWN_TYPE" and TOKEN_VARIABLE in refused["data"]["message"]
        assert ask(sock, {"type": "reset", "data": {"seed": 4}})["type"] == "observation"
    monkeypatch.setenv(TOKEN_VARIABLE, TOKEN)
    with openenv_gym.local_server("CartPole-v1", mode="production") as url, ws(url) as sock:
        assert opened(sock)["data"]["code"] == "UNKNOWN_TYPE"
        assert ask(sock, {"type": "reset", "data": {"seed": 4}})["type"] == "observation"


def test_the_token_comes_from_the_environment_and_must_be_long_enough(monkeypatch):
    monkeypatch.setenv(TOKEN_VARIABLE, TOKEN)
    with openenv_gym.local_server("CartPole-v1") as url, ws(url) as sock:
        assert opened(sock)["type"] == "validation_open"
    with pytest.raises(ValueError, match="32 to 256 characters"):
        openenv_gym.create_app("CartPole-v1", validation_token="short")


def test_a_pettingzoo_seat_reports_its_seed():
    pytest.importorskip("pettingzoo")
    with openenv_gym.local_server("pettingzoo.classic.tictactoe_v3", validation_token=TOKEN) as url, ws(url) as sock:
        capability = opened(sock)["data"]["capability"]
        transcript = collect(sock, [{"type": "reset", "data": {"seed": 3}}, {"type": "state"}])
        snapshot = read(sock, capability)["data"]
    assert snapshot["seed"] == {"requested": True, "accepted": True, "value": 3}
    assert snapshot["trajectory"]["records"] == transcript


def test_tools_list_answers_no_tools_for_an_env_without_tools():
    request = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
    with openenv_gym.local_server(Counter) as url:
        assert http(url, "/mcp", request) == (200, {"jsonrpc": "2.0", "id": 1, "result": {"tools": []}})
        with ws(url) as sock:
            reply = ask(sock, {"type": "mcp", "data": request})
            assert reply["data"]["result"] == {"tools": []}
