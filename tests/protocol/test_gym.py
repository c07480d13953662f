"""The actions, observations and frames of Gymnasium servers on ``/ws`` (``openenv_gym.protocol.gym``)."""

from __future__ import annotations

import numpy as np
import pytest
from gymnasium import spaces as gs
from gymnasium.utils.env_checker import data_equivalence
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from openenv_gym.errors import ErrorCode, ProtocolError
from openenv_gym.protocol import JSON_SUBPROTOCOL, MSGPACK_SUBPROTOCOL, codec_for, messages
from openenv_gym.protocol import gym as gym_protocol
from tests.protocol.helpers import MSGPACK_SUBPROTOCOLS, each_subprotocol, through_frames, validation_reason
from tests.spaces.strategies import canonical, nested_spaces, sample

BOX = gs.Box(-1.0, 1.0, (2,), np.float32)
# Sequence(Box(shape=()), stack=True).contains makes Box.contains warn about casting scalars.
pytestmark = pytest.mark.filterwarnings("ignore:.*Casting input x to numpy array.*")
SPACES = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def sent_step(codec, space, action) -> messages.Step:
    """The step a server reads: built by the client, through real frames, parsed."""
    wire = through_frames(codec, gym_protocol.action_step(codec, space, action).to_wire())
    return messages.parse_message(wire, messages.WS_MESSAGES)


def refusal(codec, space, fields) -> tuple[list, str, str]:
    with pytest.raises(ProtocolError) as caught:
        gym_protocol.read_action(codec, space, messages.Step(fields))
    return validation_reason(caught.value)


# -- actions --------------------------------------------------------------------------


@each_subprotocol
@SPACES
@given(space=nested_spaces(2), seed=st.integers(0, 2**32 - 1))
def test_any_action_comes_back_as_it_was_sent(subprotocol, space, seed):
    action = sample(space, seed)
    assume(space.contains(action))  # Gymnasium 1.2's Graph.sample ignores a node dtype
    codec = codec_for(subprotocol)
    read = gym_protocol.read_action(codec, space, sent_step(codec, space, action))
    if subprotocol in MSGPACK_SUBPROTOCOLS:
        assert data_equivalence(read, action, exact=True)
    else:
        assert data_equivalence(canonical(space, read), canonical(space, action), exact=True)


EMPTY_SEQUENCE = gs.Sequence(BOX, stack=True)
NO_ITEMS = np.zeros((0, 2), np.float32)


@each_subprotocol
def test_an_empty_stacked_sequence_is_an_action_of_its_space(subprotocol):
    codec = codec_for(subprotocol)
    assert gym_protocol.read_action(codec, EMPTY_SEQUENCE, sent_step(codec, EMPTY_SEQUENCE, NO_ITEMS)).shape == (0, 2)


def test_an_empty_stacked_sequence_observation_reaches_an_openenv_gym_json_peer():
    read = sent_observation(codec_for(JSON_SUBPROTOCOL), EMPTY_SEQUENCE, NO_ITEMS, reward=0,
                            terminated=False, truncated=False, info={})
    assert read.obs.shape == (0, 2)


def test_a_stock_peer_gets_a_plain_json_action():
    assert gym_protocol.action_step(codec_for(None), BOX, np.zeros(2, np.float32)).fields == {"action": [0.0, 0.0]}


def test_an_openenv_gym_json_peer_gets_the_actions_type_hints():
    fields = gym_protocol.action_step(codec_for(JSON_SUBPROTOCOL), BOX, np.zeros(2, np.float32)).fields
    assert fields == {"action": [0.0, 0.0], "types": {"nd": "<f4"}}


def test_a_msgpack_peer_gets_the_array_itself():
    action = gym_protocol.action_step(codec_for(MSGPACK_SUBPROTOCOL), BOX, np.zeros(2, np.float32)).fields["action"]
    assert isinstance(action, np.ndarray) and action.dtype == np.float32


@each_subprotocol
def test_an_action_object_needs_its_action(subprotocol):
    assert refusal(codec_for(subprotocol), BOX, {"metadata": {}}) == (["action"], "Field required", "missing")


@each_subprotocol
def test_an_action_object_may_carry_metadata(subprotocol):
    read = gym_protocol.read_action(codec_for(subprotocol), gs.Discrete(3), messages.Step({"action": 2, "metadata": {"a": 1}}))
    assert read == 2


@each_subprotocol
def test_an_action_object_refuses_fields_of_its_own(subprotocol):
    assert refusal(codec_for(subprotocol), gs.Discrete(3), {"action": 1, "seed": 3}) == (
        ["seed"], "Extra inputs are not permitted", "extra_forbidden"
    )


def test_type_hints_are_an_extra_field_from_a_stock_peer():
    assert refusal(codec_for(None), BOX, {"action": [0, 0], "types": {"nd": "<f4"}})[0] == ["types"]


def test_type_hints_from_an_openenv_gym_peer_rebuild_the_action():
    action = gym_protocol.read_action(codec_for(JSON_SUBPROTOCOL), gs.Discrete(3),
                                      messages.Step({"action": 2, "types": {"np": "<i8"}}))
    assert type(action) is np.int64 and action == 2


@each_subprotocol
def test_an_action_outside_the_space_is_refused_naming_it_and_the_space(subprotocol):
    loc, msg, _ = refusal(codec_for(subprotocol), gs.Discrete(2), {"action": 5})
    assert loc == ["action"] and msg == "Action 5 is not in the action space Discrete(2)"


@pytest.mark.parametrize("data", ["left", [0.0], {"x": 1}, None])
def test_an_action_that_does_not_decode_is_refused_with_the_spaces_reason(data):
    loc, msg, _ = refusal(codec_for(None), BOX, {"action": data})
    assert loc == ["action"] and msg.startswith("value")


def test_read_value_names_the_field_it_was_given():
    with pytest.raises(ProtocolError) as caught:
        gym_protocol.read_value(codec_for(None), gs.Discrete(2), 9, None, ["actions", "player_0"])
    assert validation_reason(caught.value)[0] == ["actions", "player_0"]


def test_check_action_fields_takes_the_required_fields_and_metadata():
    codec = codec_for(None)
    assert gym_protocol.check_action_fields(codec, {"a": 1, "b": 2, "metadata": {}}, frozenset({"a", "b"})) is None


# -- observations ---------------------------------------------------------------------


def sent_observation(codec, space, obs, **kwargs) -> gym_protocol.GymStep:
    """What a client reads of the observation a server built, through real frames."""
    wire = through_frames(codec, gym_protocol.observation(codec, space, obs, **kwargs).to_wire())
    return gym_protocol.read_observation(codec, space, messages.parse_reply(wire, messages.WS_REPLIES))


@each_subprotocol
@SPACES
@given(space=nested_spaces(2), seed=st.integers(0, 2**32 - 1))
def test_any_observation_comes_back_as_it_was_sent(subprotocol, space, seed):
    obs = sample(space, seed)
    assume(space.contains(obs))
    codec = codec_for(subprotocol)
    read = sent_observation(codec, space, obs, reward=0.5, terminated=False, truncated=False, info={})
    if subprotocol in MSGPACK_SUBPROTOCOLS:
        assert data_equivalence(read.obs, obs, exact=True)
    else:
        assert data_equivalence(canonical(space, read.obs), canonical(space, obs), exact=True)


@each_subprotocol
def test_a_step_reply_says_reward_terminated_truncated_and_info(subprotocol):
    read = sent_observation(codec_for(subprotocol), BOX, np.zeros(2, np.float32),
                            reward=2.5, terminated=np.bool_(True), truncated=0, info={"lives": 3})
    assert read[1:] == (2.5, True, False, {"lives": 3}, None)  # no text was sent


def test_a_reset_reply_has_no_reward_and_reads_as_zero():
    reply = gym_protocol.observation(codec_for(None), BOX, np.zeros(2, np.float32), reward=None,
                                     terminated=False, truncated=False, info={})
    assert reply.reward is None and reply.done is False
    assert gym_protocol.read_observation(codec_for(None), BOX, reply).reward == 0.0


@pytest.mark.parametrize("terminated, truncated, done", [(False, False, False), (True, False, True), (False, True, True)])
def test_an_observation_is_done_when_terminated_or_truncated(terminated, truncated, done):
    reply = gym_protocol.observation(codec_for(None), BOX, np.zeros(2, np.float32), reward=0,
                                     terminated=terminated, truncated=truncated, info={})
    assert reply.done is done


@pytest.mark.parametrize("subprotocol", [JSON_SUBPROTOCOL, *MSGPACK_SUBPROTOCOLS], ids=["gym-json", "msgpack-v2", "msgpack"])
@pytest.mark.parametrize("reward", [3, np.float32(0.25), np.int64(-1)], ids=["int", "float32", "int64"])
def test_an_openenv_gym_peer_gets_the_rewards_exact_type(subprotocol, reward):
    read = sent_observation(codec_for(subprotocol), BOX, np.zeros(2, np.float32), reward=reward,
                            terminated=False, truncated=False, info={})
    assert type(read.reward) is type(reward) and read.reward == reward


def test_a_stock_peer_gets_every_reward_as_a_float():
    read = sent_observation(codec_for(None), BOX, np.zeros(2, np.float32), reward=np.int64(3),
                            terminated=False, truncated=False, info={})
    assert type(read.reward) is float and read.reward == 3.0


@pytest.mark.parametrize("subprotocol", [JSON_SUBPROTOCOL, *MSGPACK_SUBPROTOCOLS], ids=["gym-json", "msgpack-v2", "msgpack"])
def test_an_openenv_gym_peer_gets_the_infos_exact_types(subprotocol):
    info = {"mask": np.array([1, 0], np.int8), "pair": (1, 2)}
    read = sent_observation(codec_for(subprotocol), BOX, np.zeros(2, np.float32), reward=0,
                            terminated=False, truncated=False, info=info)
    assert read.info["mask"].dtype == np.int8 and read.info["pair"] == (1, 2)


def test_an_info_that_is_not_a_dict_is_wrapped_in_one():
    read = sent_observation(codec_for(None), BOX, np.zeros(2, np.float32), reward=0,
                            terminated=False, truncated=False, info=[1, 2])
    assert read.info == {"info": [1, 2]}


def test_extra_fields_and_text_travel_beside_the_observation():
    reply = gym_protocol.observation(codec_for(None), BOX, np.zeros(2, np.float32), reward=0, terminated=False,
                                     truncated=False, info={}, extra={"agent": "p1"}, text="at the origin")
    assert reply.observation["agent"] == "p1" and reply.observation["text"] == "at the origin"


def test_a_stock_peer_gets_no_type_hints():
    reply = gym_protocol.observation(codec_for(None), BOX, np.zeros(2, np.float32), reward=1, terminated=False,
                                     truncated=False, info={"m": np.zeros(1, np.int8)})
    assert "types" not in reply.observation


@pytest.mark.parametrize("obs", [np.zeros(3, np.float32), "left", None])
def test_an_observation_outside_the_space_is_the_envs_fault(obs):
    with pytest.raises(ProtocolError) as caught:
        gym_protocol.observation(codec_for(None), BOX, obs, reward=0, terminated=False, truncated=False, info={})
    assert caught.value.code is ErrorCode.EXECUTION_ERROR
    assert caught.value.message.startswith(
        "The environment returned an observation that does not fit its observation space Box("
    )


# -- frames ---------------------------------------------------------------------------


@each_subprotocol
def test_an_rgb_frame_comes_back_as_the_array_it_was(subprotocol):
    codec = codec_for(subprotocol)
    frame = np.arange(12, dtype=np.uint8).reshape(2, 2, 3)
    wire = through_frames(codec, gym_protocol.render_reply(codec, "rgb_array", frame).to_wire())
    read = messages.parse_reply(wire, messages.WS_REPLIES).decoded_frame()
    assert read.dtype == np.uint8
    np.testing.assert_array_equal(read, frame)


@each_subprotocol
def test_a_list_of_rgb_frames_comes_back_as_arrays(subprotocol):
    codec = codec_for(subprotocol)
    frames = [np.zeros((1, 1, 3), np.uint8), np.ones((1, 1, 3), np.uint8)]
    wire = through_frames(codec, gym_protocol.render_reply(codec, "rgb_array_list", frames).to_wire())
    read = messages.parse_reply(wire, messages.WS_REPLIES).decoded_frame()
    np.testing.assert_array_equal(np.asarray(read), np.asarray(frames))
    assert np.asarray(read).dtype == np.uint8


@pytest.mark.parametrize("frame", ["+--+\n|@ |\n+--+", None])
def test_text_and_missing_frames_travel_as_they_are(frame):
    reply = gym_protocol.render_reply(codec_for(None), "ansi", frame)
    assert reply == messages.RenderReply("ansi", frame) and reply.decoded_frame() == frame
