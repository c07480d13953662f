"""TextView: describe, observations with their legal actions, masks from info or the
observation, the position a view remembers, tool schemas."""

from __future__ import annotations

import numpy as np
import pytest
from gymnasium import spaces as gs

from openenv_gym import spaces
from openenv_gym.text import MAX_LISTED_ACTIONS, ActionParseError, Components, Field, TextView, read_reply

NAMES = ["left", "down", "right", "up"]


def named() -> TextView:
    return TextView(gs.Discrete(16), gs.Discrete(4), env_id="Grid-v0", action_names=NAMES,
                    action_meanings=["go west", "go south", "go east", "go north"])


def test_describe_says_task_observation_actions_and_how_to_answer():
    text = named().describe()
    assert text.splitlines() == [
        "The environment Grid-v0.",
        "Observation: an integer from 0 to 15",
        "Actions: left (go west), down (go south), right (go east), up (go north) (or their numbers 0 to 3)",
        'Answer with one action, as a bare value, as JSON, as a ```json code block, as {"action": ...} or inside '
        "<action></action> tags, for example <action>left</action>",
    ]
    task = TextView(gs.Discrete(2), gs.Box(-1.0, 1.0, shape=(2,)), task="Steer the boat.").describe()
    assert task.startswith("Steer the boat.\n")
    assert "Actions: a list of 2 numbers, each from -1.0 to 1.0" in task
    assert "for example <action>[0.0, 0.0]</action>" in task


def test_the_example_action_is_legal():
    for space in (gs.Discrete(3, start=5), gs.Box(1.0, 2.0, shape=(2,)), gs.Text(4, min_length=2, charset="xy"),
                  gs.MultiDiscrete([2, 3], start=[1, 1])):
        view = TextView(gs.Discrete(2), space)
        assert space.contains(view.parse_action(view.example_action()))


def test_observation_text_uses_the_format_and_lists_masked_actions():
    view = TextView(gs.Box(-5.0, 5.0, shape=(2,)), gs.Discrete(4), action_names=NAMES,
                    observation=Components((Field("x", unit="m"), Field("y", unit="m"))))
    assert view.obs_to_text(np.array([1.5, -2.0], np.float32)) == "x: 1.5 m\ny: -2 m"
    text = view.obs_to_text(np.array([0.0, 0.0], np.float32), {"action_mask": np.array([0, 1, 1, 0], np.int8)})
    assert text == "x: 0 m\ny: 0 m\nLegal actions: down, right"
    assert "Observation: one line for each of: x (m); y (m)" in view.describe()


def test_legal_actions_sources():
    view = named()
    assert view.legal_actions() == NAMES  # a small Discrete space without a mask: all actions
    assert view.legal_actions({"action_mask": [0, 0, 1, 1]}) == ["right", "up"]
    assert view.legal_actions(obs={"observation": 3, "action_mask": np.array([1, 0, 0, 0])}) == ["left"]
    assert view.legal_actions({"action_mask": [0, 0, 0, 0]}) == []
    assert view.legal_actions({"action_mask": [1, 1]}) == NAMES  # a mask of another shape is not this one's
    big = TextView(gs.Discrete(2), gs.Discrete(MAX_LISTED_ACTIONS + 1))
    assert big.legal_actions() is None
    assert big.legal_actions({"action_mask": np.eye(1, MAX_LISTED_ACTIONS + 1, 7)[0]}) == ["7"]
    assert TextView(gs.Discrete(2), gs.Box(0.0, 1.0, shape=(2,))).legal_actions() is None
    assert TextView(gs.Discrete(2), gs.Discrete(3, start=-1)).legal_actions() == ["-1", "0", "1"]


def test_masked_actions_are_refused_with_the_legal_ones():
    view = named()
    info = {"action_mask": np.array([1, 0, 0, 1], np.int8)}
    with pytest.raises(ActionParseError) as caught:
        view.parse_action("<action>down</action>", info=info)
    assert str(caught.value) == "cannot play '<action>down</action>': down is not legal now; legal actions: left, up"
    assert view.parse_action("up", info=info) == 3
    with pytest.raises(ActionParseError, match="legal actions: none"):
        view.parse_action("up", info={"action_mask": np.zeros(4, np.int8)})


def test_the_view_remembers_the_rendered_position():
    view = named()
    view.obs_to_text(5, {"action_mask": np.array([0, 1, 0, 0])})
    assert view.legal_actions() == ["down"]
    with pytest.raises(ActionParseError, match="legal actions: down"):
        view.parse_action("left")
    assert view.parse_action("left", info={"action_mask": np.ones(4)}) == 0  # explicit context wins
    view.obs_to_text(6, {})
    assert view.parse_action("left") == 0


def test_tool_call_arguments_are_json_already():
    view = TextView(gs.Discrete(2), gs.Box(-1.0, 1.0, shape=(2,)))
    assert np.array_equal(view.parse_action([0.5, -0.25]), np.array([0.5, -0.25], np.float32))
    assert np.array_equal(view.parse_action({"action": [0.5, -0.25]}), np.array([0.5, -0.25], np.float32))
    with pytest.raises(ActionParseError, match=r"cannot read an action from \[0.5, 2\]: action\[1\]: got 2.0, above"):
        view.parse_action([0.5, 2])
    assert named().parse_action(2) == 2 and named().parse_action("right") == 2


def test_action_json_schema():
    assert named().action_json_schema() == {
        "anyOf": [{"type": "string", "enum": NAMES}, {"type": "integer", "minimum": 0, "maximum": len(NAMES) - 1}]
    }
    box = gs.Box(-1.0, 1.0, shape=(2,))
    assert TextView(gs.Discrete(2), box).action_json_schema() == spaces.to_json_schema(box)
    # The schema describes the text action_to_text writes.
    view = TextView(gs.Discrete(2), gs.Dict({"a": gs.Discrete(3), "b": box}))
    jsonschema = pytest.importorskip("jsonschema")
    action = view.action_space.sample()
    jsonschema.validate(read_reply(view.action_to_text(action)).value, view.action_json_schema())


def test_action_names_are_checked():
    with pytest.raises(ValueError, match="3 action names for 4 actions: give one name each"):
        TextView(gs.Discrete(2), gs.Discrete(4), action_names=["a", "b", "c"])
    with pytest.raises(ValueError, match="differ in more than case"):
        TextView(gs.Discrete(2), gs.Discrete(2), action_names=["Left", "left"])
    with pytest.raises(ValueError, match="2 action names for 1 components of the action"):
        TextView(gs.Discrete(2), gs.Box(-1.0, 1.0, shape=(1,)), action_names=["force", "torque"])
    with pytest.raises(ValueError, match="not MultiBinary"):
        TextView(gs.Discrete(2), gs.MultiBinary(2), action_names=["a", "b"])
