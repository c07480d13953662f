"""MCP tools reached through ``/ws`` steps, on the client's side (``openenv_gym.protocol.tools``),
read back from what ``openenv_gym.protocol.mcp`` serves."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from openenv_gym.errors import ErrorCode, ProtocolError, ToolCallError
from openenv_gym.protocol import codec_for, mcp, messages, tools
from tests.protocol.helpers import each_subprotocol, through_frames

#: MCP's tool result as a server builds it (the protocol may call it McpToolResult).
McpResult = getattr(mcp, "McpToolResult", None) or mcp.ToolResult
SCHEMA = {"type": "object", "properties": {"action": {"type": "string"}}}
EMPTY_SCHEMA = {"type": "object", "properties": {}}


def received(codec, reply: messages.Observation) -> messages.Observation:
    """A server's reply as the client reads it, through real frames."""
    return messages.parse_reply(through_frames(codec, reply.to_wire()), messages.WS_REPLIES)


# -- Tool -----------------------------------------------------------------------------


@pytest.mark.parametrize("key", ["input_schema", "inputSchema"])
def test_a_tool_is_read_with_either_spelling_of_its_schema(key):
    assert tools.Tool.from_data({"name": "act", "description": "Move.", key: SCHEMA}) == tools.Tool("act", "Move.", SCHEMA)


def test_a_tool_without_a_schema_or_description_takes_no_arguments():
    assert tools.Tool.from_data({"name": "ping", "description": None, "input_schema": "none"}) == tools.Tool(
        "ping", "", EMPTY_SCHEMA
    )


@pytest.mark.parametrize("data", [None, "act", ["act"], {}, {"name": ""}, {"name": 3}, {"description": "x"}])
def test_a_tool_without_a_name_is_a_session_error(data):
    with pytest.raises(ProtocolError) as caught:
        tools.Tool.from_data(data)
    assert caught.value.code is ErrorCode.SESSION_ERROR
    assert caught.value.message == f"a tool without a name: {data!r}"


def test_a_tool_error_quotes_at_most_300_characters():
    with pytest.raises(ProtocolError) as caught:
        tools.Tool.from_data({"description": "x" * 10_000})
    assert len(caught.value.message) == 300


@settings(max_examples=60, deadline=None)
@given(st.builds(tools.Tool, st.text(min_size=1, max_size=10), st.text(max_size=20),
                 st.dictionaries(st.text(max_size=5), st.integers(-5, 5), max_size=3)))
def test_a_tool_comes_back_from_its_wire_form(tool):
    assert tools.Tool.from_data(json.loads(json.dumps(tool.to_wire()))) == tool


@pytest.mark.parametrize("listing", [lambda spec: spec.step_listing(), lambda spec: spec.listing(spec=True),
                                     lambda spec: spec.listing(spec=False)], ids=["ws-step", "mcp-spec", "openenv"])
def test_every_listing_a_server_makes_reads_as_the_same_tool(listing):
    assert tools.Tool.from_data(listing(mcp.ToolSpec("act", "Move.", SCHEMA))) == tools.Tool("act", "Move.", SCHEMA)


# -- the steps ------------------------------------------------------------------------


@each_subprotocol
def test_a_list_tools_step_reaches_the_server_as_list_tools(subprotocol):
    step = messages.parse_message(through_frames(codec_for(subprotocol), tools.list_tools_step().to_wire()),
                                  messages.WS_MESSAGES)
    assert mcp.tool_action(step.fields) == mcp.ListTools()


@each_subprotocol
def test_a_call_tool_step_reaches_the_server_as_that_call(subprotocol):
    step = tools.call_tool_step("act", {"action": "down", "n": [1, 2]})
    parsed = messages.parse_message(through_frames(codec_for(subprotocol), step.to_wire()), messages.WS_MESSAGES)
    assert mcp.tool_action(parsed.fields) == mcp.CallTool("act", {"action": "down", "n": [1, 2]})


def test_a_call_tool_step_copies_its_arguments():
    arguments = {"a": 1}
    step = tools.call_tool_step("act", arguments)
    arguments["a"] = 2
    assert step.fields["arguments"] == {"a": 1}


# -- read_tools -----------------------------------------------------------------------


@each_subprotocol
def test_the_tools_a_server_lists_are_read_back(subprotocol):
    reply = mcp.tools_observation([mcp.ToolSpec("act", "Move.", SCHEMA), mcp.ToolSpec("look", "", EMPTY_SCHEMA)])
    assert tools.read_tools(received(codec_for(subprotocol), reply)) == [
        tools.Tool("act", "Move.", SCHEMA), tools.Tool("look", "", EMPTY_SCHEMA)
    ]


@pytest.mark.parametrize("observation", [{}, {"tools": None}, {"tools": {"act": {}}}, {"obs": [0, 1]}])
def test_a_reply_without_a_tool_list_reads_as_none(observation):
    assert tools.read_tools(messages.Observation(observation, 0.0, False)) is None


def test_a_listed_tool_without_a_name_is_a_session_error():
    with pytest.raises(ProtocolError) as caught:
        tools.read_tools(messages.Observation({"tools": [{"name": "a"}, {"description": "b"}]}, None, False))
    assert caught.value.code is ErrorCode.SESSION_ERROR


# -- read_tool_result -----------------------------------------------------------------

_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**63), 2**63 - 1) | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
    max_leaves=8,
)


@each_subprotocol
@settings(max_examples=40, deadline=None)
@given(value=_VALUES, reward=st.none() | st.floats(-10, 10), done=st.booleans())
def test_what_a_tool_returned_comes_back_with_the_steps_reward_and_done(subprotocol, value, reward, done):
    served = McpResult.of_value(value)
    reply = mcp.tool_observation("act", served, reward=reward, done=done)
    assert tools.read_tool_result(received(codec_for(subprotocol), reply)) == tools.ToolResult(
        served.text, reward, done, value
    )


@each_subprotocol
@pytest.mark.parametrize("error_type", ["tool_not_found", "invalid_args", "execution_error"])
def test_a_failed_call_raises_the_servers_error_type_and_message(subprotocol, error_type):
    reply = mcp.tool_observation("act", ToolCallError("7 is out of range", error_type=error_type), reward=0.0, done=False)
    with pytest.raises(ToolCallError) as caught:
        tools.read_tool_result(received(codec_for(subprotocol), reply))
    assert (caught.value.error_type, caught.value.message) == (error_type, "7 is out of range")


def test_an_error_that_is_not_an_object_is_an_execution_error_with_its_text():
    with pytest.raises(ToolCallError) as caught:
        tools.read_tool_result(messages.Observation({"error": "it broke", "result": None}, None, False))
    assert (caught.value.error_type, caught.value.message) == ("execution_error", "it broke")


def test_an_error_object_without_fields_is_an_execution_error():
    with pytest.raises(ToolCallError) as caught:
        tools.read_tool_result(messages.Observation({"error": {"detail": 1}, "result": None}, None, False))
    assert (caught.value.error_type, caught.value.message) == ("execution_error", "")


@pytest.mark.parametrize("flag", ["is_error", "isError"])
def test_a_result_marked_as_an_error_raises_with_its_text(flag):
    result = {"content": [{"type": "text", "text": "no such cell"}], flag: True}
    with pytest.raises(ToolCallError) as caught:
        tools.read_tool_result(messages.Observation({"result": result, "error": None}, 0.0, False))
    assert (caught.value.error_type, caught.value.message) == ("execution_error", "no such cell")


def test_a_result_without_data_gives_its_structured_content():
    result = {"content": [], "structured_content": {"score": 2}}
    assert tools.read_tool_result(messages.Observation({"result": result}, 1, True)) == tools.ToolResult(
        '{"score": 2}', 1.0, True, {"score": 2}
    )


def test_a_result_that_is_no_object_is_its_own_data():
    assert tools.read_tool_result(messages.Observation({"result": [1, 2]}, None, False)) == tools.ToolResult(
        "[1, 2]", None, False, [1, 2]
    )


# -- result_text ----------------------------------------------------------------------


def test_the_text_of_a_result_is_its_text_blocks_one_a_line():
    blocks = [{"type": "text", "text": "a"}, {"type": "image", "data": "..."}, {"type": "text", "text": "b"}, "junk"]
    assert tools.result_text({"content": blocks, "data": {"x": 1}}) == "a\nb"


@pytest.mark.parametrize("result, text", [
    ({"content": [], "data": "plain"}, "plain"),
    ({"structuredContent": {"x": 1}}, '{"x": 1}'),
    ({"content": "not a list", "structured_content": [1]}, "[1]"),
    ({}, "null"),
    (5, "5"),
    ("already text", "already text"),
])
def test_a_result_without_text_blocks_is_its_data_as_json(result, text):
    assert tools.result_text(result) == text
