"""PettingZoo games on ``/agents`` (``openenv_gym.protocol.agents``)."""

from __future__ import annotations

import numpy as np
import pytest
from gymnasium import spaces as gs

from openenv_gym.errors import ErrorCode, ProtocolError
from openenv_gym.protocol import JSON_SUBPROTOCOL, MSGPACK_SUBPROTOCOL, agents, codec_for, messages
from tests.protocol.helpers import each_subprotocol, through_frames, validation_reason

ACTIONS = {"p0": gs.Discrete(3), "p1": gs.Box(-1.0, 1.0, (2,), np.float32)}
OBSERVATIONS = {"p0": gs.Dict({"board": gs.Box(0, 1, (2, 2), np.int8), "mask": gs.MultiBinary(3)}),
                "p1": gs.Tuple((gs.Discrete(4), gs.Box(0.0, 1.0, (1,), np.float32)))}


def sent_step(codec, actions: dict, api: str) -> messages.Step:
    """The game step a server reads: built by the client, through real frames, parsed."""
    wire = through_frames(codec, agents.game_step(codec, ACTIONS, actions, api).to_wire())
    return messages.parse_message(wire, messages.WS_MESSAGES)


def refusal(call) -> tuple[list, str, str]:
    with pytest.raises(ProtocolError) as caught:
        call()
    return validation_reason(caught.value)


def a_game() -> dict:
    return {
        "observations": {"p0": {"board": np.eye(2, dtype=np.int8), "mask": np.array([1, 0, 1], np.int8)},
                         "p1": (np.int64(3), np.array([0.5], np.float32))},
        "rewards": {"p0": np.float32(1.0), "p1": -1},
        "terminations": {"p0": np.bool_(True), "p1": 0},
        "truncations": {"p0": False, "p1": False},
        "infos": {"p0": {"turns": np.int16(4)}, "p1": {}},
        "agent_selection": "p1",
    }


# -- steps ----------------------------------------------------------------------------


@each_subprotocol
def test_an_aec_step_brings_the_acting_agents_action(subprotocol):
    codec = codec_for(subprotocol)
    step = sent_step(codec, {"p1": np.array([0.5, -0.5], np.float32)}, "aec")
    action = agents.read_aec_step(codec, ACTIONS, step, "p1")
    np.testing.assert_array_equal(action, [0.5, -0.5])
    assert action.dtype == np.float32


@each_subprotocol
def test_an_aec_step_of_an_agent_that_is_done_brings_none(subprotocol):
    codec = codec_for(subprotocol)
    step = sent_step(codec, {"p0": None}, "aec")
    assert step.fields == {"action": None}
    assert agents.read_aec_step(codec, ACTIONS, step, "p0") is None


@each_subprotocol
def test_a_parallel_step_brings_every_agents_action(subprotocol):
    codec = codec_for(subprotocol)
    step = sent_step(codec, {"p0": 2, "p1": np.zeros(2, np.float32)}, "parallel")
    actions = agents.read_parallel_step(codec, ACTIONS, step)
    assert actions.keys() == {"p0", "p1"} and int(actions["p0"]) == 2
    np.testing.assert_array_equal(actions["p1"], [0.0, 0.0])


def test_an_aec_step_names_one_agent():
    with pytest.raises(ValueError):
        agents.game_step(codec_for(None), ACTIONS, {"p0": 1, "p1": np.zeros(2, np.float32)}, "aec")


def test_an_aec_action_outside_the_agents_space_is_refused_naming_the_field():
    loc, msg, _ = refusal(lambda: agents.read_aec_step(codec_for(None), ACTIONS, messages.Step({"action": 7}), "p0"))
    assert loc == ["action"] and msg == "Action 7 is not in the action space Discrete(3)"


def test_an_aec_step_for_an_agent_without_a_space_is_refused():
    loc, msg, _ = refusal(lambda: agents.read_aec_step(codec_for(None), ACTIONS, messages.Step({"action": 1}), "p9"))
    assert loc == ["action"] and msg == "Unknown agent 'p9'"


@pytest.mark.parametrize("fields, expected", [
    ({}, (["action"], "Field required", "missing")),
    ({"actions": {"p0": 1}}, (["actions"], "Extra inputs are not permitted", "extra_forbidden")),
])
def test_an_aec_step_holds_one_action_field(fields, expected):
    assert refusal(lambda: agents.read_aec_step(codec_for(None), ACTIONS, messages.Step(fields), "p0")) == expected


@pytest.mark.parametrize("fields, expected", [
    ({}, (["actions"], "Field required", "missing")),
    ({"action": 1}, (["action"], "Extra inputs are not permitted", "extra_forbidden")),
    ({"actions": [1, 2]}, (["actions"], "Input should be an object of agent: action", "value_error")),
])
def test_a_parallel_step_holds_an_object_of_actions(fields, expected):
    assert refusal(lambda: agents.read_parallel_step(codec_for(None), ACTIONS, messages.Step(fields))) == expected


def test_a_parallel_action_is_refused_naming_its_agent():
    step = messages.Step({"actions": {"p0": 1, "p1": [5.0, 0.0]}})
    loc, msg, _ = refusal(lambda: agents.read_parallel_step(codec_for(None), ACTIONS, step))
    assert loc == ["actions", "p1"] and msg.startswith("Action [5.0, 0.0] is not in the action space Box(")


def test_a_parallel_action_of_an_unknown_agent_is_refused_naming_it():
    step = messages.Step({"actions": {"ghost": 1}})
    assert refusal(lambda: agents.read_parallel_step(codec_for(None), ACTIONS, step))[:2] == (
        ["actions", "ghost"], "Unknown agent 'ghost'"
    )


def test_type_hints_in_a_game_step_are_taken_only_from_an_openenv_gym_peer():
    step = messages.Step({"action": 1, "types": {"np": "<i8"}})
    assert refusal(lambda: agents.read_aec_step(codec_for(None), ACTIONS, step, "p0"))[0] == ["types"]
    assert agents.read_aec_step(codec_for(JSON_SUBPROTOCOL), ACTIONS, step, "p0") == 1


# -- the game -------------------------------------------------------------------------


def read_back(codec, agents_left: list[str], game: dict) -> tuple[messages.Observation, dict]:
    frame = agents.game_observation(codec, OBSERVATIONS, agents_left, game)
    reply = messages.parse_reply(through_frames(codec, frame.to_wire()), messages.WS_REPLIES)
    return reply, agents.read_game(codec, OBSERVATIONS, reply)


@each_subprotocol
def test_the_whole_game_comes_back_through_real_frames(subprotocol):
    _, game = read_back(codec_for(subprotocol), ["p0", "p1"], a_game())
    assert game["agents"] == ["p0", "p1"] and game["agent_selection"] == "p1"
    np.testing.assert_array_equal(game["observations"]["p0"]["board"], np.eye(2))
    assert game["observations"]["p0"]["board"].dtype == np.int8
    assert int(game["observations"]["p1"][0]) == 3
    assert game["terminations"] == {"p0": True, "p1": False} and game["truncations"] == {"p0": False, "p1": False}
    assert game["rewards"] == {"p0": 1.0, "p1": -1} and game["infos"] == {"p0": {"turns": 4}, "p1": {}}


@pytest.mark.parametrize("subprotocol", [JSON_SUBPROTOCOL, MSGPACK_SUBPROTOCOL], ids=["gym-json", "msgpack"])
def test_an_openenv_gym_peer_gets_the_games_exact_types(subprotocol):
    _, game = read_back(codec_for(subprotocol), ["p0", "p1"], a_game())
    assert type(game["rewards"]["p0"]) is np.float32 and type(game["infos"]["p0"]["turns"]) is np.int16


def test_a_stock_peer_gets_plain_json_and_no_hints():
    codec = codec_for(None)
    reply, game = read_back(codec, ["p0", "p1"], a_game())
    assert "types" not in reply.observation
    assert type(game["rewards"]["p0"]) is float and type(game["infos"]["p0"]["turns"]) is int


def test_terminations_and_truncations_travel_as_plain_bools():
    frame = agents.game_observation(codec_for(None), OBSERVATIONS, ["p0", "p1"], a_game())
    assert [type(v) for v in frame.observation["terminations"].values()] == [bool, bool]


@pytest.mark.parametrize("agents_left, done", [(["p0"], False), ([], True)])
def test_a_game_is_done_once_no_agent_is_left(agents_left, done):
    frame = agents.game_observation(codec_for(None), OBSERVATIONS, agents_left, {"observations": {}})
    assert frame.done is done and frame.reward is None and frame.observation["agents"] == agents_left


@pytest.mark.parametrize("observations", [
    {"p0": {"board": np.zeros((3, 3), np.int8), "mask": np.zeros(3, np.int8)}},
    {"nobody": 1},
], ids=["outside-its-space", "unknown-agent"])
def test_an_observation_that_does_not_fit_its_agent_is_the_envs_fault(observations):
    with pytest.raises(ProtocolError) as caught:
        agents.game_observation(codec_for(None), OBSERVATIONS, ["p0"], {"observations": observations})
    assert caught.value.code is ErrorCode.EXECUTION_ERROR
    assert caught.value.message.startswith(
        "The environment returned an observation that does not fit its agent's observation space"
    )


def test_a_game_frame_without_observations_reads_as_no_observations():
    reply = messages.Observation({"agents": []}, None, True)
    assert agents.read_game(codec_for(None), OBSERVATIONS, reply) == {"agents": [], "observations": {}}
