"""``/ws``'s typed messages and the one envelope validator (``openenv_gym.protocol.messages``)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from openenv_gym import errors
from openenv_gym.errors import ErrorCode, ProtocolError
from openenv_gym.protocol import codec_for, messages
from tests.protocol.helpers import each_subprotocol, through_frames, validation_reason

WS = messages.WS_MESSAGES

# -- parse_message: envelopes ---------------------------------------------------------


@pytest.mark.parametrize(
    "envelope, expected",
    [
        ({"type": "reset"}, messages.Reset()),
        ({"type": "reset", "data": None}, messages.Reset()),
        ({"type": "reset", "data": {"seed": 3, "episode_id": "e1"}}, messages.Reset(3, "e1")),
        ({"type": "step", "data": {"action": [1, 2]}}, messages.Step({"action": [1, 2]})),
        ({"type": "step", "data": {}}, messages.Step({})),
        ({"type": "state"}, messages.State()),
        ({"type": "close"}, messages.Close()),
        ({"type": "render"}, messages.Render()),
        ({"type": "mcp", "data": {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}},
         messages.McpRequest({"jsonrpc": "2.0", "id": 1, "method": "tools/list"})),
    ],
)
def test_each_ws_message_type_parses_to_its_class(envelope, expected):
    assert messages.parse_message(envelope, WS) == expected


@pytest.mark.parametrize("message", [None, [], "reset", 3, np.int64(1)])
def test_a_message_that_is_not_an_object_is_a_dict_type_error(message):
    with pytest.raises(ProtocolError) as caught:
        messages.parse_message(message, WS)
    assert validation_reason(caught.value) == ([], "Input should be a valid dictionary", "dict_type")


def test_an_unknown_type_is_named_in_the_error():
    with pytest.raises(ProtocolError) as caught:
        messages.parse_message({"type": "jump"}, WS)
    assert caught.value.code is ErrorCode.UNKNOWN_TYPE
    assert caught.value.message == "Unknown message type: jump"


def test_a_type_that_is_not_a_string_is_shown_by_its_repr():
    with pytest.raises(ProtocolError) as caught:
        messages.parse_message({"type": ["reset"]}, WS)
    assert caught.value.code is ErrorCode.UNKNOWN_TYPE
    assert caught.value.message == "Unknown message type: ['reset']"


def test_an_extension_route_lists_the_types_it_expects():
    with pytest.raises(ProtocolError) as caught:
        messages.parse_message({"type": "jump"}, WS, expected=True)
    assert caught.value.message == "Unknown message type: jump (expected close, mcp, render, reset, state, step)"


def test_a_long_unknown_type_is_quoted_cut_short():
    with pytest.raises(ProtocolError) as caught:
        messages.parse_message({"type": "x" * 10_000}, WS)
    assert caught.value.message == f"Unknown message type: {'x' * 100}... (9900 more characters)"


def test_an_extra_envelope_key_is_forbidden_by_name():
    with pytest.raises(ProtocolError) as caught:
        messages.parse_message({"type": "step", "data": {}, "seed": 1}, WS)
    assert validation_reason(caught.value) == (["seed"], "Extra inputs are not permitted", "extra_forbidden")
    assert caught.value.extra["errors"][0]["input"] == 1


@pytest.mark.parametrize("kind", ["state", "close", "render"])
def test_a_type_without_data_refuses_a_data_key(kind):
    with pytest.raises(ProtocolError) as caught:
        messages.parse_message({"type": kind, "data": None}, WS)
    assert validation_reason(caught.value) == (["data"], "Extra inputs are not permitted", "extra_forbidden")


@pytest.mark.parametrize("envelope", [{"type": "step"}, {"type": "step", "data": None}, {"type": "mcp"}])
def test_a_type_that_requires_data_refuses_none(envelope):
    with pytest.raises(ProtocolError) as caught:
        messages.parse_message(envelope, WS)
    assert validation_reason(caught.value) == (["data"], "Field required", "missing")


@pytest.mark.parametrize("data", [[], "x", 1, True])
def test_data_that_is_not_an_object_is_a_dict_type_error(data):
    with pytest.raises(ProtocolError) as caught:
        messages.parse_message({"type": "reset", "data": data}, WS)
    assert validation_reason(caught.value) == (["data"], "Input should be a valid dictionary", "dict_type")
    assert caught.value.extra["errors"][0]["input"] == data


_JSONISH = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**63), 2**63 - 1) | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4),
    max_leaves=12,
)


@settings(max_examples=150, deadline=None)
@given(st.dictionaries(st.sampled_from(["type", "data", "seed", "x"]),
                       st.one_of(st.sampled_from(sorted(WS)), _JSONISH), max_size=4))
def test_any_envelope_parses_or_is_refused_with_an_openenv_code(envelope):
    try:
        message = messages.parse_message(envelope, WS)
    except ProtocolError as exc:
        assert exc.code in (ErrorCode.UNKNOWN_TYPE, ErrorCode.VALIDATION_ERROR)
    else:
        assert type(message) is WS[envelope["type"]]


# -- Reset's data ---------------------------------------------------------------------


@pytest.mark.parametrize("seed", [True, 1.0, "1", [1]])
def test_a_reset_seed_must_be_an_integer(seed):
    with pytest.raises(ProtocolError) as caught:
        messages.Reset.from_data({"seed": seed})
    assert validation_reason(caught.value) == (["seed"], "Input should be a valid integer or null", "int_type")


@pytest.mark.parametrize("seed", [-1, np.int32(-5)])
def test_a_reset_seed_must_not_be_negative(seed):
    with pytest.raises(ProtocolError) as caught:
        messages.Reset.from_data({"seed": seed})
    assert validation_reason(caught.value) == (
        ["seed"], "Input should be greater than or equal to 0", "greater_than_equal"
    )


def test_a_numpy_seed_becomes_a_python_int():
    seed = messages.Reset.from_data({"seed": np.uint64(2**63)}).seed
    assert type(seed) is int and seed == 2**63


@pytest.mark.parametrize("episode_id", [7, "e" * 256])
def test_an_episode_id_is_a_string_of_at_most_255_characters(episode_id):
    with pytest.raises(ProtocolError) as caught:
        messages.Reset.from_data({"episode_id": episode_id})
    loc, msg, _ = validation_reason(caught.value)
    assert loc == ["episode_id"] and msg == "Input should be a string of at most 255 characters"


def test_an_episode_id_of_255_characters_is_taken():
    assert messages.Reset.from_data({"episode_id": "e" * 255}).episode_id == "e" * 255


def test_reset_keys_that_are_not_reserved_are_gymnasium_options():
    reset = messages.Reset.from_data({"seed": 1, "level": 2, "episode_id": "a", "injected_state": {"x": 1}})
    assert reset == messages.Reset(1, "a", {"level": 2}, {"x": 1})
    assert messages.Reset.from_data({"seed": 1}).options is None


# -- round trips: to_wire -> frames -> parse --------------------------------------------

_OPTION_KEYS = st.text(min_size=1, max_size=8).filter(lambda k: k not in messages.RESERVED_RESET_KEYS)
_RESETS = st.builds(
    messages.Reset,
    seed=st.none() | st.integers(0, 2**63),
    episode_id=st.none() | st.text(max_size=255),
    options=st.none() | st.dictionaries(_OPTION_KEYS, _JSONISH, min_size=1, max_size=3),
    injected_state=st.none() | st.dictionaries(st.text(max_size=4), st.integers(-(2**63), 2**63 - 1), min_size=1, max_size=3),
)


@each_subprotocol
@settings(max_examples=50, deadline=None)
@given(reset=_RESETS)
def test_resets_come_back_equal_through_real_frames(subprotocol, reset):
    codec = codec_for(subprotocol)
    assert messages.parse_message(through_frames(codec, reset.to_wire()), WS) == reset


@each_subprotocol
@pytest.mark.parametrize(
    "message",
    [messages.Step({"action": {"x": [1.5, None], "s": "é"}}), messages.State(), messages.Close(), messages.Render(),
     messages.McpRequest({"jsonrpc": "2.0", "id": "a", "method": "tools/call", "params": {"name": "t"}})],
    ids=lambda m: type(m).__name__,
)
def test_client_messages_come_back_equal_through_real_frames(subprotocol, message):
    codec = codec_for(subprotocol)
    assert messages.parse_message(through_frames(codec, message.to_wire()), WS) == message


def test_bare_messages_equal_only_their_own_type():
    assert messages.State() == messages.State() and hash(messages.State()) == hash(messages.State())
    assert messages.State() != messages.Close()
    assert repr(messages.Render()) == "Render()"


@each_subprotocol
@pytest.mark.parametrize(
    "reply",
    [messages.Observation({"obs": [1, 2]}, 1.5, False),
     messages.Observation({"obs": 0, "metadata": {"k": 1}}, None, True, {"k": 1}),
     messages.StateReply({"episode_id": "e", "step_count": 3}),
     messages.RenderReply("ansi", "text"),
     messages.RenderReply("rgb_array", [[[0, 1, 2]]], "|u1"),
     messages.McpReply({"jsonrpc": "2.0", "id": 1, "result": {}})],
    ids=lambda m: type(m).__name__,
)
def test_replies_come_back_equal_through_real_frames(subprotocol, reply):
    codec = codec_for(subprotocol)
    assert messages.parse_reply(through_frames(codec, reply.to_wire()), messages.WS_REPLIES) == reply


# -- parse_reply ----------------------------------------------------------------------


@pytest.mark.parametrize("message", [None, [1], {"data": {}}, {"type": 3, "data": {}}])
def test_a_malformed_server_message_is_a_session_error(message):
    with pytest.raises(ProtocolError) as caught:
        messages.parse_reply(message, messages.WS_REPLIES)
    assert caught.value.code is ErrorCode.SESSION_ERROR
    assert caught.value.message.startswith("Malformed server message: ")


@pytest.mark.parametrize("message", [{"type": "state"}, {"type": "state", "data": [1]}])
def test_a_server_message_without_a_data_object_is_a_session_error(message):
    with pytest.raises(ProtocolError) as caught:
        messages.parse_reply(message, messages.WS_REPLIES)
    assert caught.value.code is ErrorCode.SESSION_ERROR
    assert caught.value.message.startswith("Server message 'state' has no 'data' object")


def test_an_unexpected_reply_type_names_the_replies_expected():
    with pytest.raises(ProtocolError) as caught:
        messages.parse_reply({"type": "vector_opened", "data": {}}, messages.WS_REPLIES)
    assert caught.value.code is ErrorCode.SESSION_ERROR
    assert caught.value.message.startswith(
        "Unexpected server message 'vector_opened' (expected mcp, observation, render, state)"
    )


def test_a_huge_malformed_reply_is_previewed_not_quoted_whole():
    with pytest.raises(ProtocolError) as caught:
        messages.parse_reply({"type": "state", "data": "x" * 100_000}, messages.WS_REPLIES)
    assert len(caught.value.message) < 300


def test_an_observation_reply_needs_an_observation_object():
    with pytest.raises(ProtocolError) as caught:
        messages.parse_reply({"type": "observation", "data": {"observation": [1], "done": False}}, messages.WS_REPLIES)
    assert caught.value.code is ErrorCode.SESSION_ERROR
    assert "Observation without an 'observation' object" in caught.value.message


def test_an_observation_reply_ignores_metadata_that_is_not_an_object():
    reply = messages.Observation.from_data({"observation": {}, "metadata": [1], "reward": 2.0})
    assert reply == messages.Observation({}, 2.0, False, None)


@pytest.mark.parametrize(
    "code, raised",
    [(ErrorCode.INVALID_JSON, errors.InvalidJsonError), (ErrorCode.UNKNOWN_TYPE, errors.UnknownTypeError),
     (ErrorCode.VALIDATION_ERROR, errors.ValidationError), (ErrorCode.EXECUTION_ERROR, errors.ExecutionError),
     (ErrorCode.CAPACITY_REACHED, errors.CapacityReachedError), (ErrorCode.FACTORY_ERROR, errors.FactoryError),
     (ErrorCode.SESSION_ERROR, errors.SessionError)],
)
def test_an_error_frame_raises_the_remote_error_of_its_code(code, raised):
    frame = messages.ErrorReply.of(ProtocolError(code, "went wrong", active_sessions=2)).to_wire()
    with pytest.raises(raised) as caught:
        messages.parse_reply(through_frames(codec_for(None), frame), messages.WS_REPLIES)
    assert caught.value.message == "went wrong" and caught.value.details == {"active_sessions": 2}


def test_a_validation_error_frame_carries_its_errors_to_the_client():
    error = messages.validation_error(["action"], "Input should be 0 or 1", 7)
    with pytest.raises(errors.ValidationError) as caught:
        messages.parse_reply(messages.ErrorReply.of(error).to_wire(), messages.WS_REPLIES)
    assert caught.value.details["errors"] == [
        {"type": "value_error", "loc": ["action"], "msg": "Input should be 0 or 1", "input": 7}
    ]
    assert "action: Input should be 0 or 1" in str(caught.value)


@pytest.mark.parametrize("code", list(ErrorCode))
def test_an_error_reply_closes_the_connection_only_for_the_closing_codes(code):
    assert messages.ErrorReply(code, "m").closes is (code in errors.CLOSING_ERRORS)


# -- RenderReply ----------------------------------------------------------------------


def test_a_json_rgb_frame_is_rebuilt_with_its_dtype():
    frame = messages.RenderReply("rgb_array", [[[1, 2, 3]]], "|u1").decoded_frame()
    assert isinstance(frame, np.ndarray) and frame.dtype == np.uint8 and frame.shape == (1, 1, 3)


@pytest.mark.parametrize(
    "frame, dtype",
    [("ansi text", None), (None, "|u1"), (np.zeros((2, 2), np.uint8), "|u1"), ([np.zeros(2, np.uint8)], "|u1")],
    ids=["ansi", "none", "array", "array-list"],
)
def test_frames_that_need_no_rebuilding_come_back_as_they_are(frame, dtype):
    assert messages.RenderReply("x", frame, dtype).decoded_frame() is frame


# -- errors: entries, echoes, problem lists, field checks -----------------------------


def test_validation_error_holds_one_pydantic_style_entry():
    error = messages.validation_error(["data", "seed"], "Input should be a valid integer", "x", "int_type")
    assert error.code is ErrorCode.VALIDATION_ERROR and error.message == "Invalid message"
    assert error.extra == {
        "errors": [{"type": "int_type", "loc": ["data", "seed"], "msg": "Input should be a valid integer", "input": "x"}]
    }


def test_an_error_entry_cuts_a_long_key_short():
    (key,) = messages.error_entry(["k" * 500], "m", 1)["loc"]
    assert key == "k" * 100 + "... (400 more characters)"


@pytest.mark.parametrize("value", [[0] * 1001, "x" * 1001, {str(i): i for i in range(600)}, np.zeros(1001)])
def test_a_large_value_is_described_not_echoed(value):
    echoed = messages.error_entry([], "m", value)["input"]
    assert isinstance(echoed, str) and echoed.startswith(f"{type(value).__name__} too large to echo (over 1000")
    assert len(echoed) < 200


def test_a_value_within_the_echo_limit_is_echoed_as_json():
    assert messages.error_entry([], "m", {"a": (1, np.int8(2)), "b": "x" * 900})["input"] == {"a": [1, 2], "b": "x" * 900}


def test_invalid_counts_the_problems_it_does_not_list():
    entries = [messages.error_entry([i], "m", i) for i in range(2)]
    assert "more_errors" not in messages.invalid(*entries, count=2).extra
    error = messages.invalid(*entries, count=9)
    assert error.message == "Invalid message: 9 problems, the first 2 listed"
    assert error.extra["more_errors"] == 7 and error.extra["errors"] == entries


def test_problems_list_the_first_five_with_their_extra_keys():
    problems = messages.Problems()
    assert not problems
    for i in range(messages.MAX_LISTED_ERRORS + 3):
        problems.add([f"k{i}"], "bad", i, expected="int")
    error = problems.error()
    assert [e["loc"] for e in error.extra["errors"]] == [[f"k{i}"] for i in range(5)]
    assert error.extra["errors"][0]["expected"] == "int" and error.extra["more_errors"] == 3


def test_check_fields_names_an_extra_key_before_a_missing_one():
    with pytest.raises(ProtocolError) as caught:
        messages.check_fields({"z": 1}, frozenset({"a"}), frozenset({"a"}))
    assert validation_reason(caught.value) == (["z"], "Extra inputs are not permitted", "extra_forbidden")


def test_check_fields_names_the_first_missing_key_in_sorted_order():
    with pytest.raises(ProtocolError) as caught:
        messages.check_fields({"b": 1}, frozenset({"d", "c", "b"}), frozenset({"b", "c", "d"}))
    assert validation_reason(caught.value) == (["c"], "Field required", "missing")


def test_check_fields_takes_the_required_and_the_allowed():
    assert messages.check_fields({"a": 1, "m": 2}, frozenset({"a"}), frozenset({"a", "m"})) is None
