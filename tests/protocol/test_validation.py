"""Session telemetry on ``/ws`` (``openenv_gym.protocol.validation``): ``validation_open`` and
``validation_read``, whose secrets an error never echoes."""

from __future__ import annotations

import json

import pytest

from openenv_gym.errors import ErrorCode, ProtocolError
from openenv_gym.protocol import codec_for, messages, validation
from tests.protocol.helpers import each_subprotocol, through_frames, validation_reason

TOKEN = "t0ken-" + "x" * 40
CAPABILITY = "cap-" + "y" * 60
#: Each telemetry message, the key of its secret, and that secret.
SECRETS = [(validation.ValidationOpen, "token", TOKEN), (validation.ValidationRead, "capability", CAPABILITY)]
SECRET_IDS = ["validation_open", "validation_read"]
REPLIES = {cls.type: cls for cls in (validation.ValidationOpened, validation.ValidationSnapshot)}


def refused(kind, data) -> ProtocolError:
    with pytest.raises(ProtocolError) as caught:
        kind.from_data(data)
    return caught.value


def echoes(error: ProtocolError, secret: str) -> bool:
    """Whether the error frame answering ``error`` holds ``secret`` anywhere."""
    return secret in json.dumps(messages.ErrorReply.of(error).to_wire())


# -- the messages ---------------------------------------------------------------------


def test_validation_open_carries_the_token_and_the_schema_version():
    message = messages.parse_message(
        {"type": "validation_open", "data": {"schema_version": 1, "token": TOKEN}}, validation.VALIDATION_MESSAGES
    )
    assert message == validation.ValidationOpen(TOKEN) and message.schema_version == validation.TELEMETRY_VERSION


def test_validation_read_carries_the_capability():
    message = messages.parse_message(
        {"type": "validation_read", "data": {"schema_version": 1, "capability": CAPABILITY}},
        validation.VALIDATION_MESSAGES,
    )
    assert message == validation.ValidationRead(CAPABILITY)


@pytest.mark.parametrize("message", [validation.ValidationOpen(TOKEN), validation.ValidationRead(CAPABILITY),
                                     validation.ValidationOpened(CAPABILITY)], ids=lambda m: type(m).__name__)
def test_a_secret_is_left_out_of_a_messages_repr(message):
    assert TOKEN not in repr(message) and CAPABILITY not in repr(message)


@pytest.mark.parametrize("kind", ["validation_open", "validation_read"])
def test_telemetry_messages_require_their_data(kind):
    with pytest.raises(ProtocolError) as caught:
        messages.parse_message({"type": kind}, validation.VALIDATION_MESSAGES)
    assert validation_reason(caught.value) == (["data"], "Field required", "missing")


@each_subprotocol
@pytest.mark.parametrize("message", [validation.ValidationOpen(TOKEN), validation.ValidationRead(CAPABILITY)],
                         ids=SECRET_IDS)
def test_telemetry_messages_come_back_equal_through_real_frames(subprotocol, message):
    wire = through_frames(codec_for(subprotocol), message.to_wire())
    assert messages.parse_message(wire, validation.VALIDATION_MESSAGES) == message


# -- what is refused, and what the refusal says ---------------------------------------


@pytest.mark.parametrize("kind, key, secret", SECRETS, ids=SECRET_IDS)
@pytest.mark.parametrize("length", [validation.MIN_SECRET_CHARS, validation.MAX_SECRET_CHARS])
def test_a_secret_of_either_bound_length_is_taken(kind, key, secret, length):
    assert kind.from_data({"schema_version": 1, key: "s" * length}) == kind("s" * length)


@pytest.mark.parametrize("kind, key, secret", SECRETS, ids=SECRET_IDS)
@pytest.mark.parametrize("bad", ["s" * 31, "s" * 257, 12345, ["s" * 40], None], ids=["short", "long", "int", "list", "null"])
def test_a_secret_of_the_wrong_type_or_length_is_refused_redacted(kind, key, secret, bad):
    error = refused(kind, {"schema_version": 1, key: bad})
    assert validation_reason(error) == ([key], "Input should be a string of 32 to 256 characters", "string_type")
    assert error.extra["errors"][0]["input"] == validation.REDACTED


@pytest.mark.parametrize("kind, key, secret", SECRETS, ids=SECRET_IDS)
@pytest.mark.parametrize("version", [2, 0, "1", 1.0, True, None])
def test_the_schema_version_must_be_the_integer_1(kind, key, secret, version):
    error = refused(kind, {"schema_version": version, key: secret})
    assert validation_reason(error) == (["schema_version"], "Input should be 1", "literal_error")
    assert error.extra["errors"][0]["input"] == version and not echoes(error, secret)


@pytest.mark.parametrize("kind, key, secret", SECRETS, ids=SECRET_IDS)
def test_an_extra_key_is_refused_by_name_without_the_secret(kind, key, secret):
    error = refused(kind, {"schema_version": 1, key: secret, "seed": 3})
    assert validation_reason(error) == (["seed"], "Extra inputs are not permitted", "extra_forbidden")
    assert not echoes(error, secret)


@pytest.mark.parametrize("kind, key, secret", SECRETS, ids=SECRET_IDS)
def test_a_missing_secret_is_named(kind, key, secret):
    assert validation_reason(refused(kind, {"schema_version": 1})) == ([key], "Field required", "missing")


@pytest.mark.parametrize("kind, key, secret", SECRETS, ids=SECRET_IDS)
def test_an_overlong_secret_is_refused_without_any_of_it_in_the_error_frame(kind, key, secret):
    error = refused(kind, {"schema_version": 1, key: secret + "z" * 300})
    assert not echoes(error, secret)


@pytest.mark.parametrize("kind, key, secret", SECRETS, ids=SECRET_IDS)
def test_a_missing_schema_version_is_refused_without_echoing_the_secret(kind, key, secret):
    error = refused(kind, {key: secret})
    assert validation_reason(error)[0] == ["schema_version"]
    assert not echoes(error, secret)


# -- the replies ----------------------------------------------------------------------


@each_subprotocol
def test_the_capability_comes_back_through_real_frames(subprotocol):
    reply = validation.ValidationOpened(CAPABILITY)
    wire = through_frames(codec_for(subprotocol), reply.to_wire())
    assert wire["data"]["schema_version"] == 1
    assert messages.parse_reply(wire, REPLIES) == reply


def a_snapshot(**changes) -> validation.ValidationSnapshot:
    records = [validation.trajectory_record("reset", {"type": "reset", "data": {"seed": 1}},
                                            {"type": "observation", "data": {"observation": {}, "done": False}})]
    fields = {"seed": {"requested": 1, "accepted": True, "value": 1}, "records": records,
              "attribution": [{"step_index": 0, "rubric": []}]}
    return validation.ValidationSnapshot(**{**fields, **changes})


@each_subprotocol
@pytest.mark.parametrize("snapshot", [a_snapshot(), a_snapshot(seed=None, complete=False, reason="capped")],
                         ids=["complete", "capped"])
def test_the_sessions_record_comes_back_through_real_frames(subprotocol, snapshot):
    wire = through_frames(codec_for(subprotocol), snapshot.to_wire())
    assert messages.parse_reply(wire, REPLIES) == snapshot


def test_the_record_has_upstreams_shape_with_no_rubrics():
    data = a_snapshot().to_wire()["data"]
    assert data["schema_version"] == 1 and data["rubric"] == [] and data["rubric_error"] is None
    assert data["trajectory"]["source"] == "openenv-server" and data["trajectory"]["schema_version"] == 1


def test_a_record_without_a_trajectory_reads_as_incomplete_and_empty():
    assert validation.ValidationSnapshot.from_data({"seed": None}) == validation.ValidationSnapshot(
        None, [], [], complete=False
    )


def test_a_trajectory_record_is_the_operation_request_and_response():
    assert validation.trajectory_record("state", {"type": "state"}, {"type": "state", "data": {}}) == {
        "operation": "state", "request": {"type": "state"}, "response": {"type": "state", "data": {}}
    }


def test_a_telemetry_refusal_is_a_validation_error_the_session_survives():
    error = validation.telemetry_refused("telemetry was not opened on this session")
    assert error.code is ErrorCode.VALIDATION_ERROR and error.message == "telemetry was not opened on this session"
    assert not messages.ErrorReply.of(error).closes


def test_the_recorded_operations_are_reset_step_and_state():
    assert validation.RECORDED_OPERATIONS == {"reset", "step", "state"}
