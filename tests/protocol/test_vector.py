"""Batched vector sessions on ``/vector`` (``openenv_gym.protocol.vector``)."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.vector import AutoresetMode
from gymnasium.vector.utils import batch_space
from hypothesis import given, settings
from hypothesis import strategies as st

from openenv_gym.errors import ErrorCode, ProtocolError
from openenv_gym.protocol import JSON_SUBPROTOCOL, MSGPACK_SUBPROTOCOL, codec_for, messages, vector
from tests.protocol.helpers import each_subprotocol, through_frames, validation_reason

SINGLE = gym.spaces.Box(-1.0, 1.0, (2,), np.float32)
BATCHED = batch_space(SINGLE, 3)


def refusal(call) -> tuple[list, str, str]:
    with pytest.raises(ProtocolError) as caught:
        call()
    return validation_reason(caught.value)


# -- autoreset_mode -------------------------------------------------------------------


@pytest.mark.parametrize("value", [AutoresetMode.SAME_STEP, "SameStep", "SAME_STEP", "same_step", "Same_Step"])
def test_an_autoreset_mode_is_named_by_the_enum_its_value_or_its_name_in_any_case(value):
    assert vector.autoreset_mode(value) is AutoresetMode.SAME_STEP


@pytest.mark.parametrize("value", ["sometimes", "", 1, None])
def test_any_other_autoreset_mode_is_a_value_error_listing_the_choices(value):
    with pytest.raises(ValueError) as caught:
        vector.autoreset_mode(value)
    assert str(caught.value) == (
        f"autoreset_mode must be a gymnasium AutoresetMode or one of 'NextStep', 'SameStep', 'Disabled', not {value!r}"
    )


# -- vector_open ----------------------------------------------------------------------


def test_vector_open_takes_a_size_and_defaults_to_next_step_autoreset():
    assert vector.VectorOpen.from_data({"num_envs": 4}) == vector.VectorOpen(4, AutoresetMode.NEXT_STEP)
    assert vector.VectorOpen.from_data({"num_envs": 1, "autoreset_mode": "Disabled"}).autoreset_mode is (
        AutoresetMode.DISABLED
    )


@pytest.mark.parametrize("num_envs", [0, -1, True, 2.0, "2", None])
def test_vector_open_needs_a_positive_integer_size(num_envs):
    data = {} if num_envs is None else {"num_envs": num_envs}
    assert refusal(lambda: vector.VectorOpen.from_data(data))[:2] == (["num_envs"], "Input should be a positive integer")


def test_vector_open_refuses_an_unknown_autoreset_mode_naming_the_choices():
    loc, msg, _ = refusal(lambda: vector.VectorOpen.from_data({"num_envs": 2, "autoreset_mode": "later"}))
    assert loc == ["autoreset_mode"] and "'NextStep', 'SameStep', 'Disabled'" in msg and "'later'" in msg


def test_a_vector_session_opens_with_vector_open_only():
    with pytest.raises(ProtocolError) as caught:
        messages.parse_message({"type": "reset"}, vector.OPEN_MESSAGES, expected=True)
    assert caught.value.code is ErrorCode.UNKNOWN_TYPE
    assert caught.value.message == "Unknown message type: reset (expected vector_open)"


def test_vector_open_requires_its_data():
    with pytest.raises(ProtocolError) as caught:
        messages.parse_message({"type": "vector_open"}, vector.OPEN_MESSAGES)
    assert validation_reason(caught.value) == (["data"], "Field required", "missing")


# -- reset and step -------------------------------------------------------------------


@pytest.mark.parametrize("seed", [None, 0, 7, [1, None, 3], [np.int64(2)]])
def test_a_vector_reset_seed_is_one_int_one_per_env_or_none(seed):
    assert vector.VectorReset.from_data({"seed": seed}).seed == seed


@pytest.mark.parametrize("seed", [-1, [1, -1], True, [False], "1", 1.5, {"a": 1}])
def test_a_vector_reset_refuses_any_other_seed(seed):
    assert refusal(lambda: vector.VectorReset.from_data({"seed": seed}))[:2] == (
        ["seed"], "Input should be a non-negative integer, a list of them, or null"
    )


@pytest.mark.parametrize("options", [[1], "mask", 3])
def test_vector_reset_options_are_an_object_or_null(options):
    assert refusal(lambda: vector.VectorReset.from_data({"options": options}))[:2] == (
        ["options"], "Input should be a valid dictionary or null"
    )


def test_a_vector_reset_refuses_an_injected_state_rather_than_ignore_it():
    loc, msg, _ = refusal(lambda: vector.VectorReset.from_data({"injected_state": {"x": 1}}))
    assert loc == ["injected_state"] and msg.startswith("A vector session does not set states")


def test_a_vector_reset_with_null_data_resets_everything_unseeded():
    assert messages.parse_message({"type": "reset", "data": None}, vector.VECTOR_MESSAGES) == vector.VectorReset()


def test_a_vector_step_needs_its_actions():
    assert refusal(lambda: vector.VectorStep.from_data({"action": [0, 1]})) == (["actions"], "Field required", "missing")


def test_an_open_vector_session_speaks_these_messages():
    assert sorted(vector.VECTOR_MESSAGES) == [
        "call", "close", "get_attr", "is_wrapped", "render", "reset", "set_attr", "step"
    ]
    assert vector.VECTOR_MESSAGES["reset"] is vector.VectorReset and vector.VECTOR_MESSAGES["step"] is vector.VectorStep


# -- round trips ----------------------------------------------------------------------


@each_subprotocol
@pytest.mark.parametrize(
    "message",
    [vector.VectorReset(), vector.VectorReset([0, 1, 2], {"reset_mask": [True, False, True]}, {"seed": None}),
     vector.VectorStep([[0.5, -0.5]] * 3), vector.VectorStep({"a": [1, 2]}, {"dict": {}}),
     vector.GetAttr("spec", [0]), vector.Call("render"), vector.SetAttr("gravity", [1.0, 2.0]),
     vector.IsWrapped("gymnasium.wrappers.common.TimeLimit"), messages.Render(), messages.Close()],
    ids=lambda m: type(m).__name__,
)
def test_vector_messages_come_back_equal_through_real_frames(subprotocol, message):
    codec = codec_for(subprotocol)
    assert messages.parse_message(through_frames(codec, message.to_wire()), vector.VECTOR_MESSAGES) == message


@each_subprotocol
@pytest.mark.parametrize("mode", list(AutoresetMode))
def test_vector_open_comes_back_equal_through_real_frames(subprotocol, mode):
    codec = codec_for(subprotocol)
    message = vector.VectorOpen(5, mode)
    assert messages.parse_message(through_frames(codec, message.to_wire()), vector.OPEN_MESSAGES) == message


@each_subprotocol
def test_vector_opened_comes_back_equal_through_real_frames(subprotocol):
    codec = codec_for(subprotocol)
    reply = vector.VectorOpened(8, "NextStep", "sync")
    assert reply.to_wire()["data"]["version"] == vector.VECTOR_VERSION
    assert messages.parse_reply(through_frames(codec, reply.to_wire()), vector.OPEN_REPLIES) == reply


@each_subprotocol
@pytest.mark.parametrize(
    "reply",
    [vector.VectorObservation([[0.0, 1.0]], {"a": [1]}),
     vector.VectorObservation([[0.0]], {}, [1.0], [False], [True], {"infos": {"dict": {}}}),
     vector.RenderFrames(["frame-0", None]), vector.CallReply([1, 2]), vector.GetAttrReply(["x"]),
     vector.IsWrappedReply([True, False]), vector.SetAttrDone()],
    ids=lambda m: type(m).__name__,
)
def test_vector_replies_come_back_equal_through_real_frames(subprotocol, reply):
    codec = codec_for(subprotocol)
    assert messages.parse_reply(through_frames(codec, reply.to_wire()), vector.VECTOR_REPLIES) == reply


def test_a_reset_reply_carries_no_rewards_terminations_or_truncations():
    assert vector.VectorObservation([0], {}).to_wire() == {"type": "vector_observation", "data": {"obs": [0], "infos": {}}}


def test_a_vector_observation_reads_missing_infos_as_empty_and_drops_types_that_are_no_object():
    assert vector.VectorObservation.from_data({"obs": [0], "infos": None, "types": [1]}) == vector.VectorObservation([0], {})


# -- infos ----------------------------------------------------------------------------


def test_object_arrays_of_infos_travel_as_lists_and_come_back_as_object_arrays():
    infos = {"name": np.array(["a", None], dtype=object), "inner": {"k": np.array([1, "x"], dtype=object)}}
    tree = vector.pack_infos(infos)
    assert tree == {"name": ["a", None], "inner": {"k": [1, "x"]}}
    back = vector.unpack_infos(tree)
    assert back["name"].dtype == object and back["name"].tolist() == ["a", None]
    assert back["inner"]["k"].dtype == object and back["inner"]["k"].tolist() == [1, "x"]


def test_numeric_infos_stay_arrays_when_packed_and_scalars_come_back_as_arrays():
    mask = np.array([True, False])
    assert vector.pack_infos({"_x": mask})["_x"] is mask
    assert vector.unpack_infos({"x": 3})["x"] == np.asarray(3)


@pytest.mark.parametrize("tree", [None, [1], "infos", 3])
def test_infos_that_are_not_an_object_unpack_to_nothing(tree):
    assert vector.unpack_infos(tree) == {}


_ITEMS = st.none() | st.integers(-5, 5) | st.text(max_size=3)


@settings(max_examples=60, deadline=None)
@given(st.dictionaries(st.text(min_size=1, max_size=4), st.lists(_ITEMS, min_size=1, max_size=4), max_size=4))
def test_unpack_infos_undoes_pack_infos_for_object_arrays(columns):
    infos = {}
    for key, items in columns.items():
        infos[key] = np.empty(len(items), dtype=object)
        infos[key][:] = items
    back = vector.unpack_infos(vector.pack_infos(infos))
    assert back.keys() == infos.keys()
    for key in infos:
        assert back[key].dtype == object and back[key].tolist() == infos[key].tolist()


def _step_infos() -> dict:
    final = np.array([None, np.full(2, 0.5, np.float32), None], dtype=object)
    return {"final_obs": final, "_final_obs": np.array([False, True, False]),
            "count": np.array([1, 2, 3], np.int8), "_count": np.ones(3, bool)}


@each_subprotocol
def test_a_step_reply_brings_back_observations_rewards_flags_and_final_observations(subprotocol):
    codec = codec_for(subprotocol)
    obs = np.linspace(-1, 1, 6, dtype=np.float32).reshape(3, 2)
    reply = vector.vector_observation(codec, BATCHED, obs, _step_infos(), single_space=SINGLE,
                                      rewards=[1, 0, 2], terminations=[0, 1, 0], truncations=[0, 0, 1])
    read = messages.parse_reply(through_frames(codec, reply.to_wire()), vector.VECTOR_REPLIES)
    np.testing.assert_array_equal(codec.unpack_space(BATCHED, read.obs), obs)
    np.testing.assert_array_equal(read.rewards, [1.0, 0.0, 2.0])
    assert list(read.terminations) == [False, True, False] and list(read.truncations) == [False, False, True]
    infos = vector.read_infos(codec, read, SINGLE)
    assert infos["final_obs"][0] is None and infos["final_obs"][2] is None
    final = infos["final_obs"][1]
    assert final.dtype == np.float32 and final.tolist() == [0.5, 0.5]


@pytest.mark.parametrize("subprotocol", [MSGPACK_SUBPROTOCOL, JSON_SUBPROTOCOL], ids=["msgpack", "gym-json"])
def test_an_openenv_gym_peer_gets_the_exact_info_types_back(subprotocol):
    codec = codec_for(subprotocol)
    reply = vector.vector_observation(codec, BATCHED, np.zeros((3, 2), np.float32), _step_infos(), single_space=SINGLE)
    infos = vector.read_infos(codec, messages.parse_reply(through_frames(codec, reply.to_wire()), vector.VECTOR_REPLIES),
                              SINGLE)
    assert infos["count"].dtype == np.int8 and infos["_final_obs"].dtype == np.bool_


def test_a_reset_reply_has_no_rewards():
    reply = vector.vector_observation(codec_for(None), BATCHED, np.zeros((3, 2), np.float32), {}, single_space=SINGLE)
    assert reply.rewards is None and "rewards" not in reply.to_wire()["data"]


def test_observations_outside_the_batched_space_are_the_envs_fault():
    with pytest.raises(ProtocolError) as caught:
        vector.vector_observation(codec_for(None), BATCHED, np.zeros((2, 2), np.float32), {}, single_space=SINGLE)
    assert caught.value.code is ErrorCode.EXECUTION_ERROR
    assert caught.value.message.startswith("The vector env returned observations that do not fit Box(")


def test_a_final_observation_outside_the_single_space_is_the_envs_fault_and_named():
    infos = {"final_obs": np.array([np.zeros(5, np.float32), None, None], dtype=object)}
    with pytest.raises(ProtocolError) as caught:
        vector.vector_observation(codec_for(None), BATCHED, np.zeros((3, 2), np.float32), infos, single_space=SINGLE)
    assert caught.value.code is ErrorCode.EXECUTION_ERROR and "infos.final_obs[0]" in caught.value.message


# -- attribute values -----------------------------------------------------------------


def _values_through_frames(codec, values: list) -> list:
    reply = vector.values_reply(codec, vector.GetAttrReply, values)
    return vector.read_values(codec, messages.parse_reply(through_frames(codec, reply.to_wire()), vector.VECTOR_REPLIES))


VALUES = [np.int64(3), (1, "a"), {"g": np.float32(0.5)}]


@pytest.mark.parametrize("subprotocol", [MSGPACK_SUBPROTOCOL, JSON_SUBPROTOCOL], ids=["msgpack", "gym-json"])
def test_per_env_values_come_back_with_their_exact_types_to_an_openenv_gym_peer(subprotocol):
    read = _values_through_frames(codec_for(subprotocol), VALUES)
    assert read == VALUES
    assert type(read[0]) is np.int64 and type(read[1]) is tuple and type(read[2]["g"]) is np.float32


def test_per_env_values_come_back_as_plain_json_to_a_stock_peer():
    assert _values_through_frames(codec_for(None), VALUES) == [3, [1, "a"], {"g": 0.5}]


def test_read_values_refuses_a_reply_that_holds_no_values():
    with pytest.raises(ProtocolError) as caught:
        vector.read_values(codec_for(None), vector.VectorOpened(1, "NextStep", "sync"))
    assert caught.value.code is ErrorCode.SESSION_ERROR and caught.value.message == "Expected values, got 'vector_opened'"
