"""The built-in TextArena server: upstream textarena_env's schema and frames, seeded episodes.

The reference is a capture of upstream's own server playing GuessTheNumber-v0
(``tests/upstream/captures/textarena.json.gz``, see ``tests/upstream/record.py``).
"""

from __future__ import annotations

import contextlib
import random
import re
import socket
from collections.abc import Iterator
from typing import Any

import pytest

pytest.importorskip("textarena")

import openenv_gym  # noqa: E402
from openenv_gym import create_app  # noqa: E402
from openenv_gym.catalog.textarena_env import TextArenaEnvironment, _WordleSignals  # noqa: E402
from tests.catalog import builtin  # noqa: E402
from tests.conftest import asgi_server  # noqa: E402

#: What the captured server played (its TEXTARENA_ENV_ID), and that game's range of numbers.
GAME: dict[str, Any] = {"env_id": "GuessTheNumber-v0"}
NUMBERS = range(1, 21)


@pytest.fixture(scope="module")
def url() -> Iterator[str]:
    with asgi_server(create_app(TextArenaEnvironment, env_kwargs=GAME)) as served:
        yield served


@pytest.fixture(scope="module")
def capture() -> dict:
    return builtin.capture("textarena", "TEXTARENA_ENV_ID", "GuessTheNumber-v0")


session = builtin.raw_session


def episode_targets(exchanges: list[dict]) -> list[set[int]]:
    """The numbers upstream's server can have drawn for each episode of a capture, read off
    its hints, its wins and the state it reported."""
    episodes: list[set[int]] = []
    for exchange in exchanges:
        sent, reply = exchange["send"], exchange["recv"].get("data", {})
        if sent["type"] == "reset":
            episodes.append(set(NUMBERS))
        elif sent["type"] == "step":
            text = reply["observation"]["messages"][-1]["content"]
            for guess, hint in re.findall(r"\[Player\] \[(\d+)\]\n\[GAME\] The target number is (\w+)\.", text):
                episodes[-1] = {n for n in episodes[-1] if (n < int(guess) if hint == "lower" else n > int(guess))}
            if reply["done"] and reply["reward"] == 1.0:  # a win: the guess was the number
                won = re.search(r"\[(\d+)\]", sent["data"]["message"])
                assert won is not None, sent
                episodes[-1] &= {int(won.group(1))}
        elif sent["type"] == "state":
            episodes[-1] &= {reply["raw_state"]["game_state"]["game_number"]}
    return episodes


def seed_drawing(targets: set[int]) -> int:
    """A seed whose episode draws one of ``targets`` on our env."""
    env = TextArenaEnvironment(**GAME)
    for seed in range(1000):
        env.reset(seed=seed)
        if env.state()["raw_state"]["game_state"]["game_number"] in targets:
            return seed
    raise AssertionError(f"no seed below 1000 draws one of {sorted(targets)}")


def without_episode_id(frame: dict) -> dict:
    if frame["type"] == "state":
        assert isinstance(frame["data"]["episode_id"], str)
        return {**frame, "data": {k: v for k, v in frame["data"].items() if k != "episode_id"}}
    return frame


# -- against upstream's capture ---------------------------------------------------------


def test_schema_health_and_metadata_are_upstreams(url, capture):
    assert builtin.http_json(url + "/schema") == capture["schema"] == TextArenaEnvironment.schema_document()
    assert builtin.http_json(url + "/health")["status"] == capture["health"]["status"]  # ours adds session counts
    assert builtin.http_json(url + "/metadata").keys() == capture["metadata"].keys()
    reset = builtin.http_json(url + "/reset", {"seed": 0})
    assert builtin.shape(reset) == builtin.shape(capture["http"]["reset"]["body"])
    assert reset["observation"]["prompt"] == capture["http"]["reset"]["body"]["observation"]["prompt"]


def test_scripted_episode_replays_frame_for_frame(url, capture):
    """Upstream ignores seeds: each episode here gets a seed that draws the number upstream
    drew, and then every reply (observations, rewards, dones, state) is upstream's exactly."""
    exchanges = capture["sessions"][0]["exchanges"]
    seeds = iter([seed_drawing(targets) for targets in episode_targets(exchanges)])
    with session(url) as ws:
        for exchange in exchanges:
            sent, theirs = exchange["send"], exchange["recv"]
            if sent["type"] == "reset":
                sent = {**sent, "data": {**sent["data"], "seed": next(seeds)}}
            ours = ws.send(sent)
            assert builtin.shape(ours) == builtin.shape(theirs), sent
            assert without_episode_id(ours) == without_episode_id(theirs), sent


def test_error_probes_answer_as_upstream(url, capture):
    probes = capture["sessions"][1:]
    assert {"empty action", "message of the wrong type", "unknown key", "invalid JSON"} <= {p["name"] for p in probes}
    for probe in probes:
        with session(url) as ws:
            for exchange in probe["exchanges"]:
                ours, theirs = ws.send(exchange["send"]), exchange["recv"]
                assert ours["type"] == theirs["type"], probe["name"]
                if theirs["type"] == "error":  # pydantic's "url" aside, the same error
                    assert ours["data"]["code"] == theirs["data"]["code"], probe["name"]
                    assert ours["data"]["message"] == theirs["data"]["message"], probe["name"]
                    expected = [{k: v for k, v in e.items() if k != "url"} for e in theirs["data"].get("errors", [])]
                    assert ours["data"].get("errors", []) == expected, probe["name"]
                else:  # a step before any reset plays the constructor's (unseeded) game, as upstream
                    assert builtin.shape(ours) == builtin.shape(theirs), probe["name"]


# -- better than upstream: seeds, sessions ------------------------------------------------


def test_seeded_sessions_repeat_and_do_not_disturb_each_other(url):
    """Two sessions seeded alike answer alike, with a third drawing numbers in between; the
    unseeded episode after a seeded one goes on with the session's own stream; the process's
    global generator (the server runs in this process) is untouched."""
    outside = random.getstate()
    guesses = ["[10]", "[5]", "no number", "[15]", "[2]"]
    replies: dict[str, list] = {"a": [], "b": []}
    with session(url) as a, session(url) as b, session(url) as other:
        for name, ws in (("a", a), ("b", b)):
            for seed in (7, None):
                replies[name].append(ws.send({"type": "reset", "data": {"seed": seed}}))
                for guess in guesses:
                    other.send({"type": "reset", "data": {}})  # draws from the generator
                    replies[name].append(ws.send({"type": "step", "data": {"message": guess}}))
                    if replies[name][-1]["data"]["done"]:
                        break
                replies[name].append(without_episode_id(ws.send({"type": "state"})))
        assert other.send({"type": "state"})["data"]["step_count"] == 0
    assert replies["a"] == replies["b"]
    assert random.getstate() == outside


def test_binary_search_wins_guess_the_number_through_the_official_client(url):
    from openenv import GenericEnvClient

    with GenericEnvClient(base_url=url).sync() as client:
        result = client.reset(seed=11)
        low, high = map(int, re.search(r"between (\d+) and (\d+)", result.observation["prompt"]).groups())
        assert (result.reward, result.done, result.observation["legal_players"]) == (0.0, False, [0])
        for _ in range(10):  # the game's turns
            guess = (low + high) // 2
            result = client.step({"message": f"I guess [{guess}]"})
            if result.done:
                break
            hint = result.observation["messages"][-1]["content"].splitlines()[-1]
            low, high = (low, guess - 1) if "lower" in hint else (guess + 1, high)
        assert (result.done, result.reward) == (True, 1.0)
        state = client.state()
        assert state["raw_state"]["game_state"]["game_number"] == guess
        assert state["step_count"] == state["turn"] <= 5  # ceil(log2(20)) guesses at most
        assert state["last_reward"] == 1.0


def test_remote_env_plays_it_as_a_gymnasium_env(url):
    env = openenv_gym.RemoteEnv(url)
    try:
        obs, info = env.reset(seed=3)
        assert obs in env.observation_space
        assert obs["prompt"].startswith("[GAME] You are Player 0. You are playing Guess The Number.")
        assert info["metadata"]["turn"] == 0
        obs, reward, terminated, truncated, info = env.step("[10]")
        assert obs in env.observation_space and not truncated
        assert obs["messages"][0]["content"].endswith(("lower.", "higher.", "[Player] [10]"))
        assert info["metadata"]["turn"] == 1 and info["metadata"]["env_id"] == "GuessTheNumber-v0"
        obs, reward, terminated, truncated, info = env.step("no number")  # an invalid move: no turn
        assert info["metadata"]["turn"] == 1 and "invalid move" in obs["messages"][0]["content"]
    finally:
        env.close()


# -- configuration, turn limits, word games ------------------------------------------------


def test_configuration_from_upstreams_variables_and_keywords(monkeypatch):
    monkeypatch.setenv("TEXTARENA_ENV_ID", "GuessTheNumber-v0")
    monkeypatch.setenv("TEXTARENA_KW_MAX_NUMBER", "5")
    monkeypatch.setenv("TEXTARENA_MAX_TURNS", "3")
    env = TextArenaEnvironment()
    assert "between 1 and 5 within 3 turns" in env.reset(seed=0).fields["prompt"]
    assert (env.state()["env_id"], env.state()["max_turns"]) == ("GuessTheNumber-v0", 3)
    env = TextArenaEnvironment(max_number=8, max_turns=4)  # keywords before variables
    assert "between 1 and 8 within 4 turns" in env.reset(seed=0).fields["prompt"]
    monkeypatch.setenv("TEXTARENA_KW_MAX_NUMBER", "many")
    with pytest.raises(ValueError, match=r"TEXTARENA_KW_MAX_NUMBER='many'.*takes an integer as max_number"):
        TextArenaEnvironment()
    monkeypatch.delenv("TEXTARENA_KW_MAX_NUMBER")
    with pytest.raises(ValueError, match="takes no keyword 'colour'; it takes min_number, max_number, max_turns"):
        TextArenaEnvironment(colour="red")
    with pytest.raises(ValueError, match="refused num_players=2"):
        TextArenaEnvironment(num_players=2)
    with pytest.raises(ValueError, match="no game 'GuessTheNumbr-v0'; did you mean GuessTheNumber-v0"):
        TextArenaEnvironment("GuessTheNumbr-v0")


def test_max_turns_ends_a_game_that_has_no_turn_limit_of_its_own():
    env = TextArenaEnvironment("TicTacToe-v0", num_players=2, max_turns=2)
    env.reset(seed=0)
    first = env.step({"message": "[0]"})
    assert (first.done, first.fields["current_player_id"], first.fields["legal_players"]) == (False, 1, [0, 1])
    second = env.step({"message": "[4]"})
    assert (second.done, second.reward, env.state()["turn"]) == (True, 0.0, 2)


def test_word_games_without_nltk_data_fail_clearly_and_never_download(monkeypatch):
    nltk = pytest.importorskip("nltk")
    with contextlib.suppress(LookupError):
        nltk.data.find("corpora/words")
        pytest.skip("NLTK's words corpus is installed here: Wordle-v0 loads")
    attempts: list = []

    def refuse(sock: socket.socket, address: Any) -> None:
        attempts.append(address)
        raise OSError("this test allows no network")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    with pytest.raises(LookupError, match=r"Wordle-v0 needs the NLTK data .*words.*python -m nltk\.downloader"):
        TextArenaEnvironment("Wordle-v0")
    assert attempts == []


def test_wordle_reward_signals_follow_upstreams_heuristics():
    """Wordle-v0 needs NLTK data this machine lacks: the signals on a history as Wordle renders it."""
    history = [{
        "sender_id": -1, "category": "MESSAGE",
        "content": "\n[GAME] You are Playing Wordle.\nFeedback for each letter will be given as follows:\n"
                   "[Player] [crane]\n[GAME] You submitted [crane].\nFeedback:\nC R A N E\nX G Y X G\n"
                   "You have 5 guesses left.",
    }]
    signals = _WordleSignals()
    assert signals("[crane]", history, 0.0) == {
        "wordle.greens": 0.4, "wordle.yellows": 0.2, "wordle.repetitions": 1.0, "wordle.correct": 0.0,
    }
    assert signals("CRANE!", history, 0.0)["wordle.repetitions"] == 0.0  # the same guess, unbracketed
    assert signals("[Crane] again", history, 1.0)["wordle.repetitions"] == -1.0
    assert signals("no", [], 1.0) == {
        "wordle.greens": 0.0, "wordle.yellows": 0.0, "wordle.repetitions": 1.0, "wordle.correct": 1.0,
    }
    signals.reset()
    assert signals("[crane]", history, 0.0)["wordle.repetitions"] == 1.0
