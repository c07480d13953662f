"""The bodies of OpenEnv's HTTP routes (``openenv_gym.protocol.http``): limits first, then
parsing, then answers in FastAPI's shapes."""

from __future__ import annotations

import json

import pytest

from openenv_gym.errors import ErrorCode, ProtocolError
from openenv_gym.protocol import Limits, http, mcp, messages

SMALL = Limits(max_frame_bytes=64, max_depth=4)


def http_refused(call) -> http.HttpError:
    with pytest.raises(http.HttpError) as caught:
        call()
    return caught.value


def json_invalid(error: http.HttpError) -> str:
    """The message of an INVALID_JSON answer, checked to be in FastAPI's ``detail`` shape."""
    assert error.payload["code"] == "INVALID_JSON"
    ((entry),) = error.payload["detail"]
    assert entry["type"] == "json_invalid" and entry["loc"] == ["body"]
    return entry["msg"]


# -- http_error -----------------------------------------------------------------------


def test_a_validation_error_is_422_with_its_errors_as_the_detail():
    error = messages.validation_error(["seed"], "Input should be a valid integer or null", "x", "int_type")
    answer = http.http_error(error)
    assert (answer.status, answer.payload) == (422, {"detail": error.extra["errors"], "code": "VALIDATION_ERROR"})


def test_a_validation_error_without_entries_has_its_message_as_the_detail():
    answer = http.http_error(ProtocolError(ErrorCode.VALIDATION_ERROR, "no telemetry here"))
    assert answer.payload["detail"] == "no telemetry here"


def test_capacity_is_503_with_the_session_counts():
    answer = http.http_error(ProtocolError(ErrorCode.CAPACITY_REACHED, "full", active_sessions=4, max_sessions=4))
    assert (answer.status, answer.payload) == (
        503, {"detail": "full", "code": "CAPACITY_REACHED", "active_sessions": 4, "max_sessions": 4}
    )


def test_invalid_json_is_422_and_a_body_too_large_413():
    assert http.http_error(ProtocolError(ErrorCode.INVALID_JSON, "bad")).status == 422
    assert http.http_error(ProtocolError(ErrorCode.INVALID_JSON, "big", too_large=True)).status == 413


@pytest.mark.parametrize("code", [ErrorCode.EXECUTION_ERROR, ErrorCode.FACTORY_ERROR, ErrorCode.SESSION_ERROR,
                                  ErrorCode.UNKNOWN_TYPE])
def test_any_other_error_is_500_with_its_message(code):
    answer = http.http_error(ProtocolError(code, "the env raised"))
    assert (answer.status, answer.payload) == (500, {"detail": "the env raised", "code": code.value})


def test_an_http_error_says_its_status_and_detail():
    assert str(http.HttpError(404, {"detail": "Not Found"})) == "HTTP 404: Not Found"


# -- sizes ----------------------------------------------------------------------------


@pytest.mark.parametrize("declared", [None, "0", "64"])
def test_a_declared_size_within_the_limit_is_taken(declared):
    assert http.check_declared_size(declared, SMALL) is None


def test_a_declared_size_over_the_limit_is_413_before_the_body_is_read():
    error = http_refused(lambda: http.check_declared_size("65", SMALL))
    assert error.status == 413
    assert json_invalid(error) == "Frame of 65 bytes exceeds the limit of 64 bytes"


@pytest.mark.parametrize("declared", ["ten", "", "6.5"])
def test_a_content_length_that_is_not_a_number_is_422(declared):
    error = http_refused(lambda: http.check_declared_size(declared, SMALL))
    assert error.status == 422
    assert json_invalid(error) == f"Invalid Content-Length {declared!r}"


# -- parse_body -----------------------------------------------------------------------


@pytest.mark.parametrize("raw", [b"", b"  \n\t"])
def test_an_empty_body_is_an_empty_object(raw):
    assert http.parse_body(raw, SMALL) == {}


def test_a_body_is_parsed_as_json():
    assert http.parse_body(b'{"seed": 1, "x": [1, 2]}', SMALL) == {"seed": 1, "x": [1, 2]}


def test_a_body_over_the_size_limit_is_413():
    error = http_refused(lambda: http.parse_body(b" " * 65, SMALL))
    assert error.status == 413
    assert json_invalid(error) == "Frame of 65 bytes exceeds the limit of 64 bytes"


@pytest.mark.parametrize("raw, reason", [(b'{"seed": ', "Invalid JSON"), (b"\xff\xfe{}", "Invalid JSON"),
                                         (b"[[[[[0]]]]]", "Message nesting exceeds the limit of 4 levels")])
def test_a_body_that_is_not_json_within_the_limits_is_422(raw, reason):
    error = http_refused(lambda: http.parse_body(raw, SMALL))
    assert error.status == 422
    assert json_invalid(error).startswith(reason)


# -- POST /reset ----------------------------------------------------------------------


def test_a_reset_body_is_the_reset_data():
    assert http.reset_request(b'{"seed": 3, "episode_id": "e", "level": 2}', Limits()) == messages.Reset(
        3, "e", {"level": 2}
    )


def test_an_empty_reset_body_is_a_plain_reset():
    assert http.reset_request(b"", Limits()) == messages.Reset()


@pytest.mark.parametrize("raw", [b"[1]", b'"seed"', b"3"])
def test_a_reset_body_that_is_not_an_object_is_422(raw):
    error = http_refused(lambda: http.reset_request(raw, Limits()))
    assert (error.status, error.payload) == (422, {"detail": "The request body must be a JSON object"})


def test_a_reset_body_with_a_bad_seed_is_422_naming_the_field():
    error = http_refused(lambda: http.reset_request(b'{"seed": -1}', Limits()))
    assert error.status == 422 and error.payload["code"] == "VALIDATION_ERROR"
    assert error.payload["detail"][0]["loc"] == ["seed"]
    assert error.payload["detail"][0]["msg"] == "Input should be greater than or equal to 0"


# -- POST /step -----------------------------------------------------------------------


def test_a_step_body_gives_the_step_and_the_seeded_reset_before_it():
    assert http.step_request(b'{"action": {"action": 1}, "seed": 5}', Limits()) == (
        messages.Step({"action": 1}), messages.Reset(5)
    )


def test_a_step_body_without_a_seed_resets_unseeded():
    assert http.step_request(b'{"action": {}}', Limits()) == (messages.Step({}), messages.Reset())


@pytest.mark.parametrize("raw, loc, kind, says", [
    (b"{}", ["body", "action"], "missing", "Field required"),
    (b"", ["body", "action"], "missing", "Field required"),
    (b'{"seed": 1}', ["body", "action"], "missing", "Field required"),
    (b'{"action": 1}', ["body", "action"], "dict_type", "Input should be a valid dictionary"),
    (b'{"action": [1]}', ["body", "action"], "dict_type", "Input should be a valid dictionary"),
    (b'{"action": null}', ["body", "action"], "dict_type", "Input should be a valid dictionary"),
    (b"[1]", ["body"], "model_attributes_type", "Input should be a valid dictionary or object"),
    (b"5", ["body"], "model_attributes_type", "Input should be a valid dictionary or object"),
])
def test_a_step_body_needs_an_action_object_and_says_what_it_got_instead(raw, loc, kind, says):
    error = http_refused(lambda: http.step_request(raw, Limits()))
    assert error.status == 422
    ((entry),) = error.payload["detail"]
    assert (entry["loc"], entry["type"]) == (loc, kind) and entry["msg"].startswith(says)
    assert entry["input"] == (json.loads(raw)["action"] if kind == "dict_type" else json.loads(raw or b"{}"))


@pytest.mark.parametrize("seed, msg", [(-2, "Input should be greater than or equal to 0"),
                                       (True, "Input should be a valid integer or null")])
def test_a_step_body_with_a_bad_integer_seed_is_422(seed, msg):
    error = http_refused(lambda: http.step_request(json.dumps({"action": {}, "seed": seed}).encode(), Limits()))
    assert error.status == 422 and error.payload["detail"][0]["msg"] == msg


def test_a_step_body_is_held_to_the_limits():
    assert http_refused(lambda: http.step_request(b'{"action": {"a": [[[[1]]]]}}', SMALL)).status == 422


# -- POST /mcp ------------------------------------------------------------------------


@pytest.mark.parametrize("payload", [{"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
                                     [{"jsonrpc": "2.0", "method": "ping"}], "x"])
def test_a_json_rpc_body_is_the_decoded_payload_whatever_its_shape(payload):
    assert http.jsonrpc_request(json.dumps(payload).encode(), Limits()) == payload


def test_a_json_rpc_body_over_the_size_limit_is_413_not_a_json_rpc_answer():
    error = http_refused(lambda: http.jsonrpc_request(b" " * 65, SMALL))
    assert error.status == 413


@pytest.mark.parametrize("raw, reason", [(b"{", "Parse error: Invalid JSON"), (b"", "Parse error: Invalid JSON"),
                                         (b"[[[[[1]]]]]", "Parse error: Message nesting exceeds the limit of 4 levels")])
def test_a_json_rpc_body_that_is_not_json_is_a_parse_error_with_a_null_id(raw, reason):
    with pytest.raises(mcp.JsonRpcError) as caught:
        http.jsonrpc_request(raw, SMALL)
    response = caught.value.response
    assert response["id"] is None and response["error"]["code"] == mcp.PARSE_ERROR_CODE
    assert response["error"]["message"].startswith(reason)


@pytest.mark.parametrize("seed", ["3", 1.5])
def test_a_step_body_with_a_seed_that_is_not_an_integer_is_422(seed):
    error = http_refused(lambda: http.step_request(json.dumps({"action": {}, "seed": seed}).encode(), Limits()))
    assert error.status == 422 and error.payload["detail"][0]["loc"] == ["seed"]
