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


TAXI_MAP = "\n".join(["+---------+", "|R: | : :G|", "| : | : : |", "| : : : : |", "| | : | : |", "|Y| : |B: |", "+---------+"])


@pytest.fixture(scope="module")
def served():
    """A served FrozenLake and a served Taxi."""
    import openenv_gym

    with openenv_gym.local_server("FrozenLake-v1", env_kwargs={"is_slippery": False}) as frozen_lake:
        with openenv_gym.local_server("Taxi-v4") as taxi:
            yield {"FrozenLake": frozen_lake, "Taxi": taxi}


def shown_act(cls):
    """The act tool as TRL shows it to the model."""
    from openenv_gym.trl import model_tools

    [act] = [tool for tool in model_tools(cls()) if tool.__name__ == "act"]
    return get_json_schema(act)["function"]


@pytest.mark.parametrize("tools", ["server", "client"])
def test_the_act_schema_takes_the_numbers_its_description_offers(served, tools):
    """The act tool's argument: the action names or their numbers, as its description
    says and the env reads them, on both routes; a number plays as its name does."""
    jsonschema = pytest.importorskip("jsonschema")
    from openenv_gym.client.tools import env_tools
    from openenv_gym.trl import environment_factory

    [act] = [tool for tool in env_tools(served["FrozenLake"], tools=tools).tools if tool.name == "act"]
    argument = act.input_schema["properties"]["action"]
    assert argument["description"].endswith("(or their numbers 0 to 3)")
    for value in ("left", "up", 0, 3):
        jsonschema.validate(value, argument)
    for value in ("jump", 4, -1):
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate(value, argument)
    FrozenLake = environment_factory(served["FrozenLake"], tools=tools)
    shown = shown_act(FrozenLake)["parameters"]["properties"]["action"]
    assert shown["anyOf"] == [{"type": "string", "enum": ["left", "down", "right", "up"]}, {"type": "integer"}]
    assert "(or their numbers 0 to 3)" in shown["description"]
    by_name, by_number = FrozenLake(), FrozenLake()
    by_name.reset(seed=0), by_number.reset(seed=0)
    assert by_name.act(action="right") == by_number.act(action=2)


def test_taxi_s_map_keeps_its_lines_in_the_act_tool(served):
    """Taxi's task holds its map: the act tool's description keeps its line breaks, on
    the server's MCP tool, the one made on the client, and what TRL shows the model."""
    from openenv_gym.client.tools import env_tools
    from openenv_gym.trl import environment_factory

    descriptions = {}
    for tools in ("server", "client"):
        [act] = [tool for tool in env_tools(served["Taxi"], tools=tools).tools if tool.name == "act"]
        descriptions[tools] = act.description
        assert TAXI_MAP in shown_act(environment_factory(served["Taxi"], tools=tools))["description"]
    assert TAXI_MAP in descriptions["server"]
    assert descriptions["server"] == descriptions["client"]  # one text whatever the route
