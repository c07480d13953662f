"""JSON-RPC 2.0 and MCP's tools as OpenEnv serves them (``openenv_gym.protocol.mcp``)."""

from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from openenv_gym.errors import ProtocolError, ToolCallError
from openenv_gym.protocol import codec_for, mcp, messages
from tests.protocol.helpers import each_subprotocol, through_frames, validation_reason

#: MCP's tool result (the protocol may call it McpToolResult: tools.py has a ToolResult too).
McpResult = getattr(mcp, "McpToolResult", None) or mcp.ToolResult


def refused(payload) -> mcp.JsonRpcError:
    with pytest.raises(mcp.JsonRpcError) as caught:
        mcp.parse_request(payload)
    return caught.value


# -- the error codes ------------------------------------------------------------------


def test_the_error_codes_are_json_rpc_2_0s():
    assert (mcp.PARSE_ERROR_CODE, mcp.INVALID_REQUEST, mcp.METHOD_NOT_FOUND, mcp.INVALID_PARAMS,
            mcp.INTERNAL_ERROR, mcp.SERVER_ERROR) == (-32700, -32600, -32601, -32602, -32603, -32000)


def test_an_error_response_carries_the_id_code_message_and_data():
    assert mcp.error_response(7, mcp.METHOD_NOT_FOUND, "Method not found: x", {"m": "x"}) == {
        "jsonrpc": "2.0", "id": 7, "error": {"code": -32601, "message": "Method not found: x", "data": {"m": "x"}}
    }


def test_a_result_response_echoes_the_id():
    assert mcp.result_response("req-1", {"tools": []}) == {"jsonrpc": "2.0", "id": "req-1", "result": {"tools": []}}


def test_a_parse_error_has_a_null_id():
    assert mcp.PARSE_ERROR == {"jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": "Parse error", "data": None}}
    assert mcp.parse_error("Invalid JSON: x")["error"] == {"code": -32700, "message": "Parse error: Invalid JSON: x", "data": None}


def test_a_frame_that_is_not_json_is_answered_by_a_parse_error():
    with pytest.raises(ProtocolError) as caught:
        codec_for(None).decode('{"jsonrpc": "2.0", "id": 1')
    response = mcp.error_for(caught.value)
    assert response["id"] is None and response["error"]["code"] == mcp.PARSE_ERROR_CODE
    assert response["error"]["message"].startswith("Parse error: Invalid JSON")


@pytest.mark.parametrize("code", sorted(mcp.CLOSING_ERRORS))
def test_a_refused_session_is_answered_by_a_server_error(code):
    response = mcp.error_for(ProtocolError(code, "The server is at capacity"))
    assert response["error"] == {"code": mcp.SERVER_ERROR, "message": "The server is at capacity", "data": None}


# -- parse_request --------------------------------------------------------------------


@pytest.mark.parametrize("request_id", [1, 0, -3, 2**70, "abc", "", None])
def test_a_request_keeps_its_id(request_id):
    request = mcp.parse_request({"jsonrpc": "2.0", "id": request_id, "method": "tools/list"})
    assert request == mcp.Request(request_id, "tools/list", {}, notification=False)


def test_a_request_without_an_id_member_is_a_notification():
    request = mcp.parse_request({"jsonrpc": "2.0", "method": "notifications/initialized"})
    assert request.notification and request.id is None


def test_a_null_id_is_a_request_not_a_notification():
    assert not mcp.parse_request({"jsonrpc": "2.0", "id": None, "method": "ping"}).notification


def test_params_are_kept_and_default_to_an_empty_object():
    params = {"name": "act", "arguments": {"x": 1}}
    assert mcp.parse_request({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params}).params == params
    assert mcp.parse_request({"jsonrpc": "2.0", "id": 1, "method": "m", "params": None}).params == {}


@pytest.mark.parametrize("payload", [[], "tools/list", 3, None])
def test_a_payload_that_is_not_an_object_is_an_invalid_request(payload):
    assert refused(payload).response == mcp.error_response(
        None, mcp.INVALID_REQUEST, "Invalid request: expected a JSON object"
    )


@pytest.mark.parametrize(
    "payload, reason",
    [({"id": 4, "method": "m"}, "missing jsonrpc"),
     ({"jsonrpc": "2.0", "id": 4}, "missing method"),
     ({"id": 4}, "missing jsonrpc, method"),
     ({"jsonrpc": "1.0", "id": 4, "method": "m"}, "jsonrpc must be '2.0' and method a string"),
     ({"jsonrpc": 2.0, "id": 4, "method": "m"}, "jsonrpc must be '2.0' and method a string"),
     ({"jsonrpc": "2.0", "id": 4, "method": 5}, "jsonrpc must be '2.0' and method a string")],
)
def test_what_is_not_a_request_is_an_invalid_request_echoing_the_id(payload, reason):
    error = refused(payload)
    assert error.response == mcp.error_response(4, mcp.INVALID_REQUEST, f"Invalid request: {reason}")
    assert str(error) == f"Invalid request: {reason}"


def test_a_notification_that_is_not_a_request_is_still_answered_with_a_null_id():
    """JSON-RPC answers an Invalid Request whatever its id: without a valid method there is
    no notification, only a malformed object."""
    assert refused({"jsonrpc": "2.0"}).response["error"]["code"] == mcp.INVALID_REQUEST
    assert refused({"jsonrpc": "2.0"}).response["id"] is None


@pytest.mark.parametrize("request_id", [True, [1], {"a": 1}])
def test_an_id_of_a_type_json_rpc_does_not_allow_is_answered_as_null(request_id):
    assert refused({"jsonrpc": "2.0", "id": request_id}).response["id"] is None
    assert mcp.parse_request({"jsonrpc": "2.0", "id": request_id, "method": "m"}).id is None


@pytest.mark.parametrize("params", [[1, 2], "x", 3])
def test_params_that_are_not_an_object_are_invalid_params(params):
    error = refused({"jsonrpc": "2.0", "id": "q", "method": "tools/call", "params": params})
    assert error.response == mcp.error_response("q", mcp.INVALID_PARAMS, "Invalid params: expected an object")


def test_a_notification_with_invalid_params_gets_no_response():
    assert refused({"jsonrpc": "2.0", "method": "tools/call", "params": [1]}).response is None


_IDS = st.one_of(st.integers(), st.text(max_size=5), st.none(), st.booleans(), st.lists(st.integers(), max_size=2))
_PAYLOADS = st.fixed_dictionaries({}, optional={
    "jsonrpc": st.sampled_from(["2.0", "1.0", 2]),
    "id": _IDS,
    "method": st.one_of(st.sampled_from(["tools/list", "tools/call"]), st.integers()),
    "params": st.one_of(st.none(), st.dictionaries(st.text(max_size=3), st.integers(), max_size=2),
                        st.lists(st.integers(), max_size=2)),
})


@settings(max_examples=200, deadline=None)
@given(_PAYLOADS)
def test_a_response_is_due_unless_a_well_formed_request_has_no_id(payload):
    """JSON-RPC's rules on any payload: a notification (a request without ``id``) is never
    answered, anything else always is, and an id JSON-RPC allows comes back as it was sent."""
    well_formed = payload.get("jsonrpc") == "2.0" and isinstance(payload.get("method"), str)
    notification = well_formed and "id" not in payload
    request_id = payload.get("id")
    echoed = request_id if isinstance(request_id, (str, int)) and not isinstance(request_id, bool) else None
    try:
        request = mcp.parse_request(payload)
    except mcp.JsonRpcError as exc:
        assert (exc.response is None) is notification
        if exc.response is not None:
            assert exc.response["id"] == echoed and exc.response["jsonrpc"] == "2.0"
            assert exc.response["error"]["code"] in (mcp.INVALID_REQUEST, mcp.INVALID_PARAMS)
    else:
        assert well_formed and request.notification is notification and request.id == echoed


# -- batches --------------------------------------------------------------------------


def test_an_empty_batch_is_one_invalid_request():
    with pytest.raises(mcp.JsonRpcError) as caught:
        mcp.check_batch([])
    assert caught.value.response == mcp.error_response(None, mcp.INVALID_REQUEST, "Invalid request: an empty batch")


def test_a_batch_of_the_most_requests_is_taken():
    assert mcp.check_batch([{}] * mcp.MAX_BATCH_REQUESTS) is None


def test_a_batch_of_more_requests_is_refused_naming_the_limit():
    with pytest.raises(mcp.JsonRpcError) as caught:
        mcp.check_batch([{}] * (mcp.MAX_BATCH_REQUESTS + 1))
    assert caught.value.response["id"] is None and caught.value.response["error"]["code"] == mcp.INVALID_REQUEST
    assert caught.value.response["error"]["message"] == (
        "Invalid request: a batch of 101 requests; send at most 100 in one batch"
    )


@each_subprotocol
def test_json_rpc_messages_travel_without_an_envelope(subprotocol):
    codec = codec_for(subprotocol)
    batch = [{"jsonrpc": "2.0", "id": 1, "method": "tools/list"}, {"jsonrpc": "2.0", "method": "ping"}]
    assert through_frames(codec, mcp.JsonRpcMessage(batch).to_wire()) == batch
    responses = [mcp.result_response(1, {"tools": []}), mcp.error_response(2, mcp.METHOD_NOT_FOUND, "no")]
    assert through_frames(codec, mcp.JsonRpcReply(responses).to_wire()) == responses


def test_a_json_rpc_error_for_a_notification_holds_no_response():
    response = mcp.error_response(None, mcp.INVALID_PARAMS, "Invalid params")
    assert mcp.JsonRpcError(response, notification=True).response is None
    assert mcp.JsonRpcError(response).response is response


# -- tools ----------------------------------------------------------------------------

SCHEMA = {"type": "object", "properties": {"action": {"type": "string"}}, "required": ["action"]}


def test_a_tool_listing_for_mcp_clients_has_the_specifications_fields():
    assert mcp.ToolSpec("act", "Move.", SCHEMA).listing(spec=True) == {
        "name": "act", "description": "Move.", "inputSchema": SCHEMA
    }
    out = {"type": "object"}
    assert mcp.ToolSpec("act", "Move.", SCHEMA, out).listing(spec=True)["outputSchema"] == out


def test_a_tool_listing_in_openenvs_dialect_has_every_field_of_mcps_tool():
    assert mcp.ToolSpec("act", "Move.", SCHEMA).listing(spec=False) == {
        "name": "act", "title": None, "description": "Move.", "inputSchema": SCHEMA, "outputSchema": None,
        "icons": None, "annotations": None, "meta": None, "execution": None,
    }


def test_an_object_result_is_its_own_structured_content():
    result = McpResult.of_value({"reward": np.float32(0.5), "obs": np.arange(2)})
    assert result == McpResult('{"reward":0.5,"obs":[0,1]}', {"reward": 0.5, "obs": [0, 1]}, {"reward": 0.5, "obs": [0, 1]})


@pytest.mark.parametrize("value, text", [(3, "3"), ([1, "é"], '[1,"é"]'), ("plain text", "plain text"), (None, "null")])
def test_any_other_result_is_wrapped_as_fastmcp_wraps_it(value, text):
    assert McpResult.of_value(value) == McpResult(text, {"result": value}, value, {"fastmcp": {"wrap_result": True}})


def test_a_result_for_mcp_clients_is_the_specifications_call_tool_result():
    assert McpResult.of_value({"a": 1}).to_wire(spec=True) == {
        "content": [{"type": "text", "text": '{"a":1}'}], "structuredContent": {"a": 1}, "isError": False
    }
    assert "structuredContent" not in McpResult("t", None, None).to_wire(spec=True)


def test_a_result_in_openenvs_dialect_has_fastmcps_fields():
    assert McpResult.of_value(2).to_wire(spec=False) == {
        "content": [mcp.text_content("2")], "structured_content": {"result": 2},
        "meta": {"fastmcp": {"wrap_result": True}}, "data": 2, "is_error": False,
    }
    assert mcp.text_content("2") == {"type": "text", "text": "2", "annotations": None, "meta": None}


def test_a_failed_tool_is_an_error_result_and_openenvs_tool_error():
    error = ToolCallError("Error calling tool 'act': 7 is out of range", error_type="invalid_args")
    assert mcp.tool_failure(error) == {"content": [{"type": "text", "text": error.message}], "isError": True}
    assert mcp.tool_error_data(error) == {"error_type": "invalid_args", "message": error.message}


def test_an_unknown_tool_is_named_cut_short():
    error = mcp.tool_not_found("t" * 500)
    assert error.error_type == "tool_not_found"
    assert error.message == f"Unknown tool: '{'t' * 100}... (400 more characters)'"


@pytest.mark.parametrize("requested", list(mcp.PROTOCOL_VERSIONS))
def test_initialize_answers_the_protocol_version_asked_for(requested):
    assert mcp.initialize_result(requested, "env", "1.0") == {
        "protocolVersion": requested, "capabilities": {"tools": {}}, "serverInfo": {"name": "env", "version": "1.0"}
    }


def test_initialize_carries_the_env_instructions_when_there_are_some():
    assert mcp.initialize_result(None, "env", "1.0", "Walk to G.")["instructions"] == "Walk to G."
    assert "instructions" not in mcp.initialize_result(None, "env", "1.0", "")


@pytest.mark.parametrize("requested", [None, "1999-01-01", 3, ["2025-06-18"]])
def test_initialize_answers_the_newest_version_to_any_other(requested):
    assert mcp.initialize_result(requested, "env", "1.0")["protocolVersion"] == mcp.PROTOCOL_VERSIONS[-1]


# -- tool actions inside /ws steps ----------------------------------------------------


def test_a_step_without_a_type_is_the_envs_own_action():
    assert mcp.tool_action({"action": 1}) is None


@pytest.mark.parametrize("fields, action", [
    ({"type": "list_tools"}, mcp.ListTools()),
    ({"type": "list_tools", "metadata": {}}, mcp.ListTools()),
    ({"type": "call_tool", "tool_name": "act"}, mcp.CallTool("act", {})),
    ({"type": "call_tool", "tool_name": "act", "arguments": {"a": 1}, "metadata": {}}, mcp.CallTool("act", {"a": 1})),
])
def test_tool_actions_parse(fields, action):
    assert mcp.tool_action(fields) == action


@pytest.mark.parametrize("fields, expected", [
    ({"type": "jump"}, (["type"], "Input should be 'list_tools' or 'call_tool'", "literal_error")),
    ({"type": "list_tools", "tool_name": "x"}, (["tool_name"], "Extra inputs are not permitted", "extra_forbidden")),
    ({"type": "call_tool"}, (["tool_name"], "Field required", "missing")),
    ({"type": "call_tool", "tool_name": 3}, (["tool_name"], "Input should be a valid string", "string_type")),
    ({"type": "call_tool", "tool_name": "a", "arguments": [1]}, (["arguments"], "Input should be a valid dictionary", "dict_type")),
    ({"type": "call_tool", "tool_name": "a", "seed": 1}, (["seed"], "Extra inputs are not permitted", "extra_forbidden")),
], ids=["unknown-type", "extra-on-list", "no-name", "name-not-str", "arguments-not-object", "extra-on-call"])
def test_bad_tool_actions_are_refused_naming_the_field(fields, expected):
    with pytest.raises(ProtocolError) as caught:
        mcp.tool_action(fields)
    assert validation_reason(caught.value) == expected


def test_a_list_tools_step_is_answered_by_openenvs_list_tools_observation():
    reply = mcp.tools_observation([mcp.ToolSpec("act", "Move.", SCHEMA)])
    assert reply == messages.Observation(
        {"metadata": {}, "tools": [{"name": "act", "description": "Move.", "input_schema": SCHEMA}]}, None, False
    )


def test_a_call_tool_step_is_answered_with_the_result_the_reward_and_done():
    reply = mcp.tool_observation("act", McpResult.of_value({"x": 1}), reward=1.0, done=True)
    assert reply.reward == 1.0 and reply.done is True
    assert reply.observation == {
        "metadata": {}, "tool_name": "act", "result": McpResult.of_value({"x": 1}).to_wire(spec=False), "error": None
    }


def test_a_failed_call_tool_step_carries_the_error_and_no_result():
    error = ToolCallError("boom", error_type="execution_error")
    reply = mcp.tool_observation("act", error, reward=None, done=False)
    assert reply.observation["result"] is None
    assert reply.observation["error"] == {"error_type": "execution_error", "message": "boom"}


@each_subprotocol
def test_tool_observations_come_back_equal_through_real_frames(subprotocol):
    codec = codec_for(subprotocol)
    reply = mcp.tool_observation("act", McpResult.of_value([1, 2]), reward=0.5, done=False)
    assert messages.parse_reply(through_frames(codec, reply.to_wire()), messages.WS_REPLIES) == reply
    assert json.loads(reply.observation["result"]["content"][0]["text"]) == [1, 2]

