"""The built-in Atari server against upstream OpenEnv's ``atari_env``.

Served by ``openenv_gym.create_app`` on real uvicorn servers on 127.0.0.1, it is
compared with the capture of upstream's own server (``tests/upstream/captures/
atari.json.gz``: pong, recorded by ``tests/upstream/record.py``): the same
``/schema``, the same replies to the scripted episode (screens included: pong
without sticky actions is deterministic given the actions), the same answers to
the error probes. The answers upstream gave to further probes of its live server
(pydantic's lax validation of ``AtariAction``, a game played to its end) are
written down here. Then what upstream does not do: seeded episodes that replay
exactly, and sessions that do not disturb each other.
"""

from __future__ import annotations

import re
import subprocess
import sys
from collections.abc import Callable, Iterator

import pytest

import openenv_gym
from openenv_gym.errors import ProtocolError
from tests.catalog import builtin
from tests.conftest import subprocess_env

pytest.importorskip("ale_py")

from openenv_gym.catalog.atari_env import AtariEnvironment  # noqa: E402

UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
PONG_ACTIONS = ["Action.NOOP", "Action.FIRE", "Action.RIGHT", "Action.LEFT", "Action.RIGHTFIRE", "Action.LEFTFIRE"]
URL = "https://errors.pydantic.dev/2.14/v/"


@pytest.fixture(scope="module")
def capture() -> dict:
    return builtin.capture("atari", "ATARI_GAME", "pong")


@pytest.fixture(scope="module")
def serve() -> Iterator[Callable[..., str]]:
    """``serve(**env_kwargs)``: the URL of a server of AtariEnvironment(**env_kwargs)."""
    yield from builtin.serving(AtariEnvironment)


Session = builtin.RawSession
session = builtin.raw_session
http_json = builtin.http_json
shape = builtin.shape


def without_episode_id(reply: dict) -> dict:
    """``reply`` with a state's episode id (a fresh uuid4 on both servers) checked and left out."""
    if reply.get("type") != "state":
        return reply
    data = dict(reply["data"])
    assert UUID.fullmatch(data.pop("episode_id"))
    return {**reply, "data": data}


# -- the same server as upstream's ---------------------------------------------------------


def test_schema_and_metadata_are_upstreams(capture, serve):
    url = serve()
    assert http_json(url + "/schema") == capture["schema"]
    metadata = http_json(url + "/metadata")
    assert set(metadata) == set(capture["metadata"])
    assert metadata["name"] == "atari_env" and "Arcade Learning Environment" in metadata["description"]


def test_scripted_episode_replays_the_capture(capture, serve):
    """Every reply of upstream's scripted episode (reset, six steps, state, the seeded
    reset again), value for value: screens, counters, ``action_meanings``; but for
    ``frame_number`` after the second seeded reset, which upstream carries on (24) and ours
    starts afresh (0: a seeded episode replays exactly, counters included)."""
    (episode,) = [s for s in capture["sessions"] if s["name"] == "scripted episode"]
    with session(serve()) as ours:
        for number, exchange in enumerate(episode["exchanges"]):
            reply, theirs = ours.send(exchange["send"]), exchange["recv"]
            assert shape(reply) == shape(theirs), exchange["send"]
            if number == len(episode["exchanges"]) - 1:
                assert theirs["data"]["observation"]["frame_number"] == 24
                assert reply["data"]["observation"]["frame_number"] == 0
                for frame in (reply, theirs):
                    frame["data"]["observation"]["frame_number"] = None
            assert without_episode_id(reply) == without_episode_id(theirs), exchange["send"]
    first = episode["exchanges"][0]["recv"]["data"]
    assert first["metadata"] == {"game_name": "pong", "action_meanings": PONG_ACTIONS}


def test_error_probes_get_upstreams_answers(capture, serve):
    """Pydantic's entries for bad actions, word for word; the protocol's errors; a step
    before any reset plays (upstream's env has its game loaded when it is made). An
    out-of-range ``action_id`` is upstream's EXECUTION_ERROR, its message after the
    exception's type, as openenv-gym's server words every error an env raises."""
    probes = [s for s in capture["sessions"] if s["name"] != "scripted episode"]
    assert {p["name"] for p in probes} >= {"empty action", "action_id of the wrong type", "unknown key",
                                           "step before any reset", "out-of-range action"}
    for probe in probes:
        with session(serve()) as ours:
            for exchange in probe["exchanges"]:
                reply, upstream = ours.send(exchange["send"]), exchange["recv"]
                assert reply["type"] == upstream["type"], probe["name"]
                if upstream["type"] == "error" and upstream["data"]["code"] == "EXECUTION_ERROR":
                    assert reply["data"]["code"] == "EXECUTION_ERROR"
                    assert reply["data"]["message"] == "ValueError: " + upstream["data"]["message"]
                else:
                    assert without_episode_id(reply) == without_episode_id(upstream), probe["name"]


def test_http_reset_is_upstreams(capture, serve):
    assert http_json(serve() + "/reset", {"seed": 0}) == capture["http"]["reset"]["body"]


#: Steps upstream's live server (ATARI_GAME=pong) was probed with after a reset, and the error
#: entry it answered (``None``: an observation, the step played).
UPSTREAM_STEP_ANSWERS: list[tuple[dict, dict | None]] = [
    ({"action_id": True}, None),
    ({"action_id": 2.0}, None),
    ({"action_id": " 3 "}, None),
    ({"action_id": 0, "full_action_space": "yes"}, None),
    ({"action_id": 0, "full_action_space": 1}, None),
    ({"action_id": 0, "obs_type": "ram", "game_name": "breakout"}, None),  # accepted, ignored
    ({"action_id": 0, "metadata": {"a": 1}}, None),
    ({"action_id": 1.5}, {"type": "int_from_float", "loc": ["action_id"], "input": 1.5,
                          "msg": "Input should be a valid integer, got a number with a fractional part"}),
    ({"action_id": "1e2"}, {"type": "int_parsing", "loc": ["action_id"], "input": "1e2",
                            "msg": "Input should be a valid integer, unable to parse string as an integer"}),
    ({"action_id": None}, {"type": "int_type", "loc": ["action_id"], "input": None,
                           "msg": "Input should be a valid integer"}),
    ({"action_id": [1]}, {"type": "int_type", "loc": ["action_id"], "input": [1],
                          "msg": "Input should be a valid integer"}),
    ({"action_id": 0, "obs_type": "foo"}, {
        "type": "literal_error", "loc": ["obs_type"], "input": "foo",
        "msg": "Input should be 'rgb', 'grayscale' or 'ram'", "ctx": {"expected": "'rgb', 'grayscale' or 'ram'"}}),
    ({"action_id": 0, "game_name": 5}, {"type": "string_type", "loc": ["game_name"], "input": 5,
                                        "msg": "Input should be a valid string"}),
    ({"action_id": 0, "metadata": 5}, {"type": "dict_type", "loc": ["metadata"], "input": 5,
                                       "msg": "Input should be a valid dictionary"}),
]


def test_lax_validation_is_upstreams(serve):
    with session(serve()) as ours:
        ours.reset()
        for action, entry in UPSTREAM_STEP_ANSWERS:
            reply = ours.send({"type": "step", "data": action})
            if entry is None:
                assert reply["type"] == "observation", action
            else:
                assert reply["data"]["code"] == "VALIDATION_ERROR", action
                assert reply["data"]["errors"] == [{**entry, "url": URL + entry["type"]}], action


def test_validation_orders_errors_as_pydantic():
    """Each field in the model's order (``metadata`` first), then each unknown key; and a
    value that is no object at all."""
    with pytest.raises(ProtocolError) as caught:
        AtariEnvironment.parse_action({"zzz": 1, "full_action_space": 2, "metadata": [], "aaa": 2})
    errors = caught.value.extra["errors"]
    assert [(e["type"], e["loc"]) for e in errors] == [
        ("dict_type", ["metadata"]), ("missing", ["action_id"]), ("bool_parsing", ["full_action_space"]),
        ("extra_forbidden", ["zzz"]), ("extra_forbidden", ["aaa"]),
    ]
    assert AtariEnvironment.parse_action({"action_id": "1_0.00", "full_action_space": "Off"}) == {
        "action_id": 10, "full_action_space": False}
    with pytest.raises(ProtocolError) as caught:
        AtariEnvironment.parse_action([0])
    assert caught.value.extra["errors"][0]["type"] == "dict_type"


def test_a_game_played_to_its_end_is_upstreams(serve):
    """Pong with NOOPs is lost 21-0; upstream's live server (frameskip 4) ended it after
    764 steps at frame 3056 on this screen, with a last reward of -1.0, and answered
    further steps with the same frame, reward 0.0 and done. Frameskip 64 gets there in
    48 steps, to the same frame (a step stops at the game's end)."""
    with session(serve(frameskip=64)) as ours:
        ours.reset(seed=0)
        rewards = []
        for _ in range(60):
            reply = ours.step(0)["data"]
            rewards.append(reply["reward"])
            if reply["done"]:
                break
        assert reply["done"] and len(rewards) == 48 and sum(rewards) == -21.0 and rewards[-1] == -1.0
        obs = reply["observation"]
        assert (obs["episode_frame_number"], obs["frame_number"], obs["lives"]) == (3056, 3056, 0)
        assert sum(obs["screen"]) == 9913200
        after = ours.step(1)["data"]
        assert after["done"] and after["reward"] == 0.0
        assert after["observation"]["screen"] == obs["screen"]
        assert ours.state()["step_count"] == 49
        again = ours.reset()["data"]
        assert not again["done"] and again["observation"]["frame_number"] == 3056


# -- better than upstream ----------------------------------------------------------------


def test_a_seeded_episode_replays_exactly(serve):
    """With sticky actions (the ALE's random draws), the same seed and actions give the
    same replies, in two sessions at once and in a session that resets again; another
    seed another episode. Upstream ignores the seed."""
    url = serve(repeat_action_probability=0.25)
    actions = [(i // 3) % 6 for i in range(30)]

    def episode(ours: Session, seed: int) -> list[dict]:
        replies = [ours.reset(seed=seed)]
        replies += [ours.step(a) for a in actions]
        return replies

    def played(replies: list[dict]) -> list[dict]:
        return [{**r["data"], "observation": {k: v for k, v in r["data"]["observation"].items()
                                              if k != "frame_number"}} for r in replies]

    with session(url) as one, session(url) as two:
        first = episode(one, 7)
        assert episode(two, 7) == first
        assert played(episode(one, 7)) == played(first)  # frame_number goes on; the rest replays
        other = episode(two, 8)
    screens = [[r["data"]["observation"]["screen"] for r in replies] for replies in (first, other)]
    assert screens[0] != screens[1]


def test_sessions_at_once_are_independent(serve):
    url = serve()
    with session(url) as one, session(url) as two:
        one.reset(seed=0, episode_id="one")
        two.reset(seed=0, episode_id="two")
        for _ in range(5):
            one.step(2)
        alone = two.step(2)["data"]["observation"]
        assert (alone["episode_frame_number"], alone["frame_number"]) == (4, 4)
        assert (one.state()["step_count"], two.state()["step_count"]) == (5, 1)
        assert (one.state()["episode_id"], two.state()["episode_id"]) == ("one", "two")


def test_configuration_is_upstreams_app_settings(serve):
    """The ``ATARI_*`` settings of upstream's app, as ``env_kwargs``."""
    url = serve(game="breakout", obs_type="ram", full_action_space=True, mode=4, difficulty=1,
                repeat_action_probability=0.1, frameskip=2)
    with session(url) as ours:
        data = ours.reset(seed=0)["data"]
        obs = data["observation"]
        assert obs["screen_shape"] == [128] and len(obs["screen"]) == 128
        assert obs["legal_actions"] == list(range(18)) and len(data["metadata"]["action_meanings"]) == 18
        assert data["metadata"]["game_name"] == "breakout" and obs["lives"] == 5
        played = ours.step(17)["data"]["observation"]
        assert played["episode_frame_number"] == obs["episode_frame_number"] + 2  # frameskip 2
        state = ours.state()
    del state["episode_id"]
    assert state == {"step_count": 1, "game_name": "breakout", "obs_type": "ram", "full_action_space": True,
                     "mode": 4, "difficulty": 1, "repeat_action_probability": 0.1, "frameskip": 2}
    gray = AtariEnvironment(obs_type="grayscale").reset().fields
    assert gray["screen_shape"] == [210, 160] and len(gray["screen"]) == 210 * 160


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"game": "SpaceInvaders"}, "the ALE has no game 'SpaceInvaders'; did you mean 'space_invaders'"),
    ({"mode": 5}, "pong has no mode 5; its modes are [0, 1]"),
    ({"obs_type": "rgb_array"}, "obs_type must be 'rgb', 'grayscale' or 'ram'"),
    ({"frameskip": 0}, "frameskip must be a positive integer"),
    ({"full_action_space": "false"}, "full_action_space must be True or False, not 'false'"),
    ({"repeat_action_probability": 1.5}, "repeat_action_probability must be a number from 0 to 1"),
])
def test_bad_configuration_says_what_to_use(kwargs, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        AtariEnvironment(**kwargs)


def test_missing_ale_names_the_extra():
    code = "import sys; sys.modules['ale_py'] = None; import openenv_gym.catalog.atari_env"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                            env=subprocess_env())
    assert result.returncode != 0
    assert "the built-in atari server needs the module 'ale_py'" in result.stderr
    assert "pip install 'openenv-gym[atari]'" in result.stderr


# -- clients -----------------------------------------------------------------------------


def test_official_client_plays(serve):
    from openenv import GenericEnvClient

    with GenericEnvClient(base_url=serve()).sync() as client:
        result = client.reset(seed=0)
        assert result.observation["screen_shape"] == [210, 160, 3] and result.done is False
        assert result.observation["metadata"]["action_meanings"] == PONG_ACTIONS
        for action_id in (1, 2, 3):
            result = client.step({"action_id": action_id})
        assert result.reward == 0.0 and result.observation["episode_frame_number"] == 12
        assert client.state()["step_count"] == 3


def test_remote_env_plays(serve):
    env = openenv_gym.RemoteEnv(serve())
    try:
        assert env.action_space.n == 6
        obs, info = env.reset(seed=0)
        assert obs in env.observation_space and obs["screen"].shape == (210, 160, 3)
        assert info["action_mask"].tolist() == [1] * 6
        for action in (0, 2, 3):
            obs, reward, terminated, truncated, info = env.step(action)
            assert obs in env.observation_space
        assert (reward, terminated, truncated) == (0.0, False, False)
        assert int(obs["episode_frame_number"]) == 12
    finally:
        env.close()
