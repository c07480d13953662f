"""The built-in OpenSpiel server against upstream OpenEnv's ``openspiel_env``.

Served by ``openenv_gym.create_app`` on real uvicorn servers on 127.0.0.1, it is
compared with the capture of upstream's own server (``tests/upstream/captures/
openspiel.json.gz``: catch, recorded by ``tests/upstream/record.py``): the same
``/schema``, the same replies to the scripted episode (value for value, once our
seed drops catch's ball in the column upstream's did), the same answers to the
error probes, except the one on purpose (an illegal ``action_id``). Then what
upstream does not do: seeded episodes that replay exactly, sessions that do not
disturb each other, simultaneous-move games; and every game upstream lists as
supported, played to its end.
"""

from __future__ import annotations

import json
import random
import subprocess
import sys
from collections.abc import Callable, Iterator
from typing import Any

import pytest

import openenv_gym
from tests.catalog import builtin
from tests.conftest import ROOT, subprocess_env

pytest.importorskip("pyspiel")

from openenv_gym.catalog.openspiel_env import (  # noqa: E402
    SUPPORTED_GAMES,
    OpenSpielEnvironment,
)

#: OpenSpiel's player id once the game is over (``pyspiel.PlayerId.TERMINAL``).
TERMINAL = -4
#: Steps within which every supported game ends under random play (2048 takes the most).
MAX_STEPS = 5000


@pytest.fixture(scope="module")
def capture() -> dict:
    return builtin.capture("openspiel", "OPENSPIEL_GAME", "catch")


@pytest.fixture(scope="module")
def serve() -> Iterator[Callable[..., str]]:
    """``serve(**env_kwargs)``: the URL of a server of OpenSpielEnvironment(**env_kwargs)."""
    yield from builtin.serving(OpenSpielEnvironment)


Session = builtin.RawSession
session = builtin.raw_session
http_json = builtin.http_json
shape = builtin.shape


def catch_seed(column: int) -> int:
    """A seed whose catch game drops the ball in ``column`` (row 0 of ``info_state``)."""
    env = OpenSpielEnvironment("catch")
    for seed in range(1000):
        if env.reset(seed=seed).fields["info_state"].index(1.0) == column:
            return seed
    raise AssertionError(f"no seed below 1000 drops the ball in column {column}")


def replay(ws: Session, frame: Any, theirs: dict) -> dict:
    """Send ``frame``; a seeded reset goes out with the seed that gives upstream's ball column."""
    if isinstance(frame, dict) and frame.get("type") == "reset" and theirs.get("type") == "observation":
        column = theirs["data"]["observation"]["info_state"].index(1.0)
        frame = {"type": "reset", "data": {**frame.get("data", {}), "seed": catch_seed(column)}}
    return ws.send(frame)


def assert_same_state(mine: dict, theirs: dict) -> None:
    assert isinstance(mine["episode_id"], str) and isinstance(theirs["episode_id"], str)
    assert {**mine, "episode_id": None} == {**theirs, "episode_id": None}


# -- upstream's server, as captured ------------------------------------------------


def test_schema_and_metadata_are_upstreams(capture, serve):
    url = serve(game_name="catch")
    schema = http_json(f"{url}/schema")
    for part in ("action", "observation", "reset_observation", "state"):
        assert schema[part] == capture["schema"][part], part
    assert OpenSpielEnvironment.schema_document() == capture["schema"]
    assert shape(http_json(f"{url}/metadata")) == shape(capture["metadata"])


def test_scripted_episode_replays_value_for_value(capture, serve):
    """Catch is deterministic given the actions once the ball's column is drawn: with our seed
    for upstream's column, every reply of the capture's episode is upstream's, to the value."""
    scripted = next(s for s in capture["sessions"] if s["name"] == "scripted episode")
    with session(serve(game_name="catch")) as ws:
        for exchange in scripted["exchanges"]:
            theirs = exchange["recv"]
            mine = replay(ws, exchange["send"], theirs)
            if theirs["type"] == "state":
                assert_same_state(mine["data"], theirs["data"])
            else:
                assert mine == theirs, exchange["send"]


def test_error_probes_answer_as_upstream(capture, serve):
    url = serve(game_name="catch")
    for probe in capture["sessions"]:
        if probe["name"] == "scripted episode":
            continue
        with session(url) as ws:
            for exchange in probe["exchanges"]:
                theirs, mine = exchange["recv"], replay(ws, exchange["send"], exchange["recv"])
                where = (probe["name"], exchange["send"])
                if probe["name"] == "out-of-range action" and exchange["send"]["type"] == "step":
                    # On purpose: upstream hands id 99 to the engine (catch moves the paddle right;
                    # tic_tac_toe and 2048 write past their boards); ours refuses it.
                    assert theirs["type"] == "observation"
                    assert mine["data"]["code"] == "EXECUTION_ERROR", where
                    assert "[0, 1, 2]" in mine["data"]["message"]
                elif theirs["type"] == "error":
                    assert mine["type"] == "error", where
                    assert mine["data"]["code"] == theirs["data"]["code"], where
                    assert mine["data"]["message"] == theirs["data"]["message"], where
                    pick = ("type", "loc", "input")
                    assert [{k: e[k] for k in pick} for e in mine["data"].get("errors", [])] == [
                        {k: e[k] for k in pick} for e in theirs["data"].get("errors", [])
                    ], where
                elif theirs["type"] == "state":
                    assert_same_state(mine["data"], theirs["data"])
                elif exchange["send"]["type"] == "reset":
                    assert mine == theirs, where
                else:  # a step before any reset: a new game, its ball wherever it falls
                    assert shape(mine) == shape(theirs), where
                    assert mine["data"]["observation"]["game_phase"] == "initial"


def test_http_reset_and_a_second_session_answer_as_upstream(capture, serve):
    url = serve(game_name="catch")
    reply = http_json(f"{url}/reset", {})
    theirs = capture["http"]["reset"]["body"]
    assert shape(reply["observation"]) == shape(theirs["observation"])
    assert (reply["reward"], reply["done"]) == (theirs["reward"], theirs["done"])
    with session(url) as first, session(url) as second:
        first.reset()
        assert shape(second.reset()) == shape(capture["second_session"])


def test_action_game_name_and_params_are_checked_then_ignored(serve):
    """As upstream: the game is the server's (upstream's own client always sends
    ``game_name="catch"``); the two fields are only type-checked."""
    url = serve(game_name="catch")
    with session(url) as plain, session(url) as decorated:
        assert plain.reset(seed=4) == decorated.reset(seed=4)
        for action in (0, 2, 2, 1):
            extra = {"game_name": "tic_tac_toe", "game_params": {"rows": 3}}
            assert plain.step(action) == decorated.step(action, **extra)
        for field, value, kind in (("game_name", 5, "string_type"), ("game_params", [1], "dict_type")):
            error = decorated.step(1, **{field: value})["data"]
            assert error["code"] == "VALIDATION_ERROR"
            assert [(e["type"], e["loc"]) for e in error["errors"]] == [(kind, [field])]


# -- better than upstream ---------------------------------------------------------


def play(ws: Session, seed: int | None, choose: Callable[[int, list[int]], int], steps: int = 40) -> list[dict]:
    """A reset and up to ``steps`` moves chosen from the legal actions; every reply."""
    replies = [ws.reset(seed=seed) if seed is not None else ws.reset()]
    for i in range(steps):
        data = replies[-1]["data"]
        if data["done"]:
            break
        replies.append(ws.step(choose(i, data["observation"]["legal_actions"])))
    return replies


def scripted(i: int, legal: list[int]) -> int:
    return legal[(7 * i) % len(legal)]


def test_seeded_episodes_replay_exactly(serve):
    """Kuhn poker draws the deal and the random opponent's moves: two sessions with the same
    seed and the same actions get the same replies, episode after episode (unseeded resets go
    on from the seeded stream); another seed gets other deals."""
    url = serve(game_name="kuhn_poker")

    def episodes(seed: int) -> list[list[dict]]:
        with session(url) as ws:
            return [play(ws, seed if n == 0 else None, scripted) for n in range(12)]

    first = episodes(7)
    assert first == episodes(7)
    assert first != episodes(8)
    assert len({json.dumps(episode) for episode in first}) > 1
    assert all(episode[-1]["data"]["done"] for episode in first)


def test_sessions_at_once_are_independent(serve):
    url = serve(game_name="tic_tac_toe")
    solo, solo_states = {}, {}
    for seed in (1, 2):
        with session(url) as alone:
            solo[seed] = play(alone, seed, scripted)
            solo_states[seed] = alone.state()
    with session(url) as a, session(url) as b:
        together = {1: [a.reset(seed=1)], 2: [b.reset(seed=2)]}
        for i in range(40):  # interleaved: a step of one, then of the other
            for seed, ws in ((1, a), (2, b)):
                data = together[seed][-1]["data"]
                if not data["done"]:
                    together[seed].append(ws.step(scripted(i, data["observation"]["legal_actions"])))
        assert together == solo
        for seed, ws in ((1, a), (2, b)):  # and each session keeps its own bookkeeping
            assert_same_state(ws.state(), solo_states[seed])
        assert a.state()["episode_id"] != b.state()["episode_id"]


def test_illegal_actions_are_refused_and_the_game_goes_on(serve):
    """Upstream hands these to the engine: for 10**12, tic_tac_toe's reads past its board
    and kills the server process. Ours answers EXECUTION_ERROR and the game is unchanged."""
    url = serve(game_name="tic_tac_toe")
    with session(url) as ws:
        ws.reset(seed=0)
        legal = ws.step(4)["data"]["observation"]["legal_actions"]
        before = ws.state()
        for bad in (4, 99, 10**12, -1):
            error = ws.step(bad)["data"]
            assert error["code"] == "EXECUTION_ERROR"
            assert f"action_id {bad} is not a legal action of tic_tac_toe" in error["message"]
            assert str(legal) in error["message"]
        assert ws.state() == before
        assert ws.step(legal[0])["type"] == "observation"
    assert http_json(f"{url}/health")["status"] == "healthy"


# -- the games and the opponents ----------------------------------------------------


@pytest.mark.parametrize("game", SUPPORTED_GAMES)
def test_every_supported_game_plays_a_seeded_episode_to_its_end(serve, game):
    url = serve(game_name=game)
    rng = random.Random(game)
    with session(url) as ws:
        reply, moves = ws.reset(seed=3), 0
        first = reply["data"]
        assert (first["reward"], first["done"], first["observation"]["game_phase"]) == (None, False, "initial")
        while not reply["data"]["done"]:
            assert moves < MAX_STEPS, f"{game} did not end within {MAX_STEPS} moves"
            legal = reply["data"]["observation"]["legal_actions"]
            reply = ws.step(rng.choice(legal))
            assert reply["type"] == "observation"
            assert isinstance(reply["data"]["reward"], float)
            moves += 1
            if not reply["data"]["done"]:
                assert reply["data"]["observation"]["game_phase"] == "playing"
        last = reply["data"]["observation"]
        assert (last["game_phase"], last["legal_actions"], last["current_player_id"]) == ("terminal", [], TERMINAL)
        assert all(isinstance(x, float) for x in last["info_state"])
        state = ws.state()
        assert state["game_name"] == game and state["step_count"] >= moves
        assert state["num_players"] == (2 if game in ("tic_tac_toe", "kuhn_poker") else 1)
        if state["num_players"] == 2:  # the opponent's moves count too
            assert state["step_count"] > moves and last["opponent_last_action"] is not None
        # As upstream: a step after the end starts a new game in the same episode bookkeeping.
        again = ws.step(0)["data"]
        assert (again["reward"], again["done"], again["observation"]["game_phase"]) == (None, False, "initial")
        assert again["observation"]["opponent_last_action"] is None
        after = ws.state()
        assert after["episode_id"] == state["episode_id"] and after["step_count"] == state["step_count"] + 1


def test_opponent_opens_when_the_agent_plays_second(serve):
    url = serve(game_name="tic_tac_toe", agent_player=1, opponent_policy="first")
    with session(url) as ws:
        data = ws.reset(seed=0)["data"]
        assert data["reward"] == 0.0 and data["done"] is False
        assert data["observation"]["game_phase"] == "playing"
        assert data["observation"]["opponent_last_action"] == 0
        assert data["observation"]["legal_actions"] == list(range(1, 9))
        assert ws.state()["step_count"] == 1 and ws.state()["agent_player"] == 1


@pytest.mark.parametrize("policy, reply", [("first", 0), ("last", 8), ("middle", 5)])
def test_fixed_opponent_policies(policy, reply):
    """The agent takes the centre; the opponent the first, last or middle free cell."""
    env = OpenSpielEnvironment("tic_tac_toe", opponent_policy=policy)
    env.reset()
    assert env.step({"action_id": 4}).fields["opponent_last_action"] == reply


def test_simultaneous_move_games_are_played():
    """Upstream cannot reset these; here the opponents choose with the agent."""
    env = OpenSpielEnvironment("matrix_rps", opponent_policy="first")
    obs = env.reset(seed=0)
    assert obs.fields["current_player_id"] == -2 and obs.fields["legal_actions"] == [0, 1, 2]
    obs = env.step({"action_id": 1})  # paper against rock
    assert (obs.reward, obs.done, obs.fields["opponent_last_action"]) == (1.0, True, 0)
    env = OpenSpielEnvironment("goofspiel")
    obs, moves = env.reset(seed=1), 0
    while not obs.done and moves < 100:
        obs, moves = env.step({"action_id": obs.fields["legal_actions"][0]}), moves + 1
    assert obs.done and obs.fields["game_phase"] == "terminal"


# -- configuration ----------------------------------------------------------------


def test_configuration_from_keywords_and_upstreams_variables(monkeypatch):
    monkeypatch.setenv("OPENSPIEL_GAME", "kuhn_poker")
    monkeypatch.setenv("OPENSPIEL_AGENT_PLAYER", "1")
    monkeypatch.setenv("OPENSPIEL_OPPONENT_POLICY", "last")
    state = OpenSpielEnvironment().state()
    assert (state["game_name"], state["agent_player"], state["opponent_policy"]) == ("kuhn_poker", 1, "last")
    env = OpenSpielEnvironment("catch", agent_player=0, opponent_policy="random", game_params={"rows": 5})
    assert env.state()["game_params"] == {"rows": 5} and len(env.reset().fields["info_state"]) == 25
    monkeypatch.setenv("OPENSPIEL_AGENT_PLAYER", "one")
    with pytest.raises(ValueError, match=r"\$OPENSPIEL_AGENT_PLAYER must be an integer"):
        OpenSpielEnvironment("tic_tac_toe")


@pytest.mark.parametrize("kwargs, message", [
    ({"game_name": "tic_tac_to"}, "did you mean 'tic_tac_toe'"),
    ({"game_name": "catch", "game_params": {"rows": "x"}}, "Wrong type for parameter rows"),
    ({"game_name": "mfg_crowd_modelling"}, "mean-field game"),
    ({"game_name": "catch", "opponent_policy": "mcts"}, "opponent_policy must be one of random, first"),
    ({"game_name": "catch", "agent_player": 1}, r"0 \(a one-player game\)"),
    ({"game_name": "tic_tac_toe", "agent_player": -1}, "0 to 1, not -1"),
])
def test_bad_configuration_says_what_to_do(kwargs, message):
    with pytest.raises(ValueError, match=message):
        OpenSpielEnvironment(**kwargs)


def test_without_open_spiel_the_error_names_the_extra():
    code = "import sys; sys.modules['pyspiel'] = None; import openenv_gym.catalog.openspiel_env"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                         cwd=ROOT, env=subprocess_env())
    assert out.returncode != 0
    assert "pip install 'openenv-gym[openspiel]'" in out.stderr and "'pyspiel'" in out.stderr


# -- clients --------------------------------------------------------------------


def test_official_generic_client_plays(serve):
    from openenv import GenericEnvClient

    fields = set(OpenSpielEnvironment.observation_schema["properties"]) - {"reward", "done"}
    with GenericEnvClient(base_url=serve(game_name="catch")).sync() as client:
        result = client.reset(seed=0)
        assert set(result.observation) == fields and result.reward is None and result.done is False
        for _ in range(20):
            result = client.step({"action_id": 1})
            if result.done:
                break
        assert result.done and result.reward in (-1.0, 1.0)
        assert result.observation["game_phase"] == "terminal"
        assert client.state()["game_name"] == "catch"


def test_remote_env_plays_with_an_action_mask(serve):
    env = openenv_gym.RemoteEnv(serve(game_name="tic_tac_toe"))
    try:
        assert env.action_space.n == 9
        obs, info = env.reset(seed=0)
        assert obs in env.observation_space
        rng = random.Random(0)
        for _ in range(9):
            legal = [a for a, ok in enumerate(info["action_mask"]) if ok]
            obs, reward, terminated, truncated, info = env.step(rng.choice(legal))
            assert obs in env.observation_space
            if terminated or truncated:
                break
        assert terminated and reward in (-1.0, 0.0, 1.0)
    finally:
        env.close()
