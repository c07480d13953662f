"""The methods openenv_gym.trl makes of tools read back, through transformers'
``get_json_schema`` (what TRL shows the model), as the tools' own schemas."""

from __future__ import annotations

import pytest

pytest.importorskip("trl")

from transformers.utils import get_json_schema  # noqa: E402

from openenv_gym.protocol.tools import Tool  # noqa: E402
from openenv_gym.trl import ToolEnvironment, tool_function  # noqa: E402

CASES = [
    # (argument schema, what get_json_schema gives back, besides the description)
    ({"type": "string", "enum": ["left", "right"]}, {"type": "string", "enum": ["left", "right"]}),
    ({"type": "integer", "minimum": 0, "maximum": 8}, {"type": "integer"}),
    ({"type": "number"}, {"type": "number"}),
    ({"type": "boolean"}, {"type": "boolean"}),
    ({"type": "array", "items": {"type": "integer"}}, {"type": "array", "items": {"type": "integer"}}),
    ({"type": "object"}, {"type": "object"}),
]


@pytest.mark.parametrize(("schema", "expected"), CASES)
def test_each_argument_type_reads_back(schema, expected):
    tool = Tool("act", "Take one action.", {"type": "object", "properties": {"action": schema}, "required": ["action"]})
    method = tool_function(tool).__get__(ToolEnvironment())
    read = get_json_schema(method)["function"]
    assert read["name"] == "act"
    assert read["description"] == "Take one action."
    assert read["parameters"]["required"] == ["action"]
    argument = dict(read["parameters"]["properties"]["action"])
    assert argument.pop("description").startswith("The action.")
    assert argument == expected


def test_optional_arguments_and_their_descriptions():
    tool = Tool("act", "Add to the count.", {
        "type": "object", "required": ["increment"],
        "properties": {
            "increment": {"type": "integer", "minimum": 1, "maximum": 5, "description": "How much to add."},
            "mode": {"type": "string", "enum": ["add", "double"], "description": "Args: how to add."},
        },
    })
    read = get_json_schema(tool_function(tool).__get__(ToolEnvironment()))["function"]["parameters"]
    assert read["required"] == ["increment"]
    assert read["properties"]["increment"]["description"] == "How much to add. (minimum 1, maximum 5)"
    # A description that would end the docstring's Args section is defused.
    assert read["properties"]["mode"]["description"] == "Args - how to add."
    assert read["properties"]["mode"]["enum"] == ["add", "double"]


def test_a_call_with_arguments_the_tool_does_not_take_is_a_value_error():
    tool = Tool("act", "Take one action.", {"type": "object", "properties": {"action": {"type": "integer"}},
                                            "required": ["action"]})
    method = tool_function(tool).__get__(ToolEnvironment())
    with pytest.raises(ValueError, match="act: missing a required argument: 'action'"):
        method(direction=1)
    with pytest.raises(ValueError, match="act: got an unexpected keyword argument 'direction'"):
        method(action=1, direction=1)


@pytest.mark.parametrize("name", ["reset", "get_reward", "_hidden", "not-an-identifier"])
def test_names_that_cannot_be_tools(name):
    with pytest.raises(ValueError, match="cannot be a method TRL calls"):
        tool_function(Tool(name))
