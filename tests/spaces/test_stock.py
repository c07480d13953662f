"""StockView: every rule of infer_view on small schemas, the overrides, the errors; and the
spaces it infers for upstream OpenEnv's own servers, on their captured schemas and replies."""

from __future__ import annotations

import copy
import json

import gymnasium as gym
import numpy as np
import pytest

from openenv_gym.errors import ProtocolMismatchError
from openenv_gym.spaces import InferredText, JsonText, infer_space, infer_view, needs_first_observation
from openenv_gym.spaces.infer import random_json
from openenv_gym.spaces.stock import (
    ACTION_MASK,
    EXTRA_FIELDS,
    LEGAL_ACTIONS,
    MISSING_FIELDS,
    NULL_FIELDS,
    UNLISTED_LEGAL_ACTIONS,
    described_range,
)
from tests.upstream.replay import CAPTURED, UNSENDABLE, load, observations, sent_actions


def schema_of(action: dict, observation: dict, *, required: list[str] | None = None, description: str = "") -> dict:
    return {
        "action": {"type": "object", "properties": action, "required": list(action) if required is None else required,
                   "description": description},
        "observation": {"type": "object", "properties": observation},
    }


INT = {"type": "integer"}
INTS = {"type": "array", "items": INT}


# -- actions --------------------------------------------------------------------------------


def test_one_required_field_is_the_action_space_itself():
    view = infer_view(schema_of({"move": {"enum": ["UP", "DOWN"]}}, {}))
    assert view.action_space == gym.spaces.Discrete(2)
    assert view.act(1) == {"move": "DOWN"}


def test_optional_action_fields_are_left_out_and_their_default_applies():
    schema = schema_of({"action_id": INT, "game_name": {"type": "string", "default": "catch"},
                        "game_params": {"type": "object", "additionalProperties": True}},
                       {"legal_actions": INTS}, required=["action_id"])
    view = infer_view(schema, first_observation={"legal_actions": [0, 1, 2]})
    assert view.action_space == gym.spaces.Discrete(3)
    assert view.act(2) == {"action_id": 2}
    assert "the server's default 'catch' applies" in view.rules["action.game_name"]
    # Brought back in: with its inferred space (...) or a JSON Schema of the field's own.
    view = infer_view(schema, first_observation={"legal_actions": [0, 1, 2]},
                      action_fields={"game_name": ..., "game_params": {"type": "object", "properties": {
                          "rows": {"type": "integer", "minimum": 4, "maximum": 8}}}})
    assert isinstance(view.action_space, gym.spaces.Dict)
    assert view.action_space["game_params"] == gym.spaces.Dict({"rows": gym.spaces.Discrete(5, start=4)})
    sent = view.act({"action_id": np.int64(1), "game_name": "tic_tac_toe", "game_params": {"rows": 6}})
    assert sent == {"action_id": 1, "game_name": "tic_tac_toe", "game_params": {"rows": 6}}
    assert view.legal is None  # a mask belongs to an action of one field


def test_without_a_required_field_every_field_is_the_agents():
    schema = schema_of({"code": {"type": "string", "default": ""}, "is_final": {"type": "boolean", "default": False}},
                       {}, required=[])
    view = infer_view(schema)
    assert set(view.action_space.spaces) == {"code", "is_final"}
    assert view.act({"code": "x = 1", "is_final": 1}) == {"code": "x = 1", "is_final": True}


def test_a_required_field_cannot_be_left_out_and_overrides_are_checked():
    schema = schema_of({"code": {"type": "string"}}, {})
    with pytest.raises(ValueError, match="leaves out 'code', which the server requires"):
        infer_view(schema, action_fields={"code": None})
    with pytest.raises(TypeError, match="must be a gymnasium space, a JSON Schema"):
        infer_view(schema, action_fields={"code": 3})
    with pytest.raises(ValueError, match="not a field of the server's schema"):
        infer_view(schema, action_fields={"nope": ...})


@pytest.mark.parametrize("text, expected", [
    ("column: The column index (0 to 6) where the piece will be placed.", (0, 6)),
    ("an id in [0, 5]", (0, 5)),
    ("a number between 1 and 20", (1, 20)),
    ("from -2 to 2", (-2, 2)),
    ("the (6-9) range", (6, 9)),
    ("the step count", None),
    ("(7 to 3)", None),
])
def test_described_ranges(text, expected):
    assert described_range(text) == expected


def test_an_integer_bounded_by_the_models_docstring():
    schema = schema_of({"column": INT}, {}, description="Action.\n\nAttributes:\n    column: The column (0 to 6).")
    view = infer_view(schema)
    assert view.action_space == gym.spaces.Discrete(7)
    assert "the range 0..6 its description states" in view.rules["action.column"]


def test_legal_actions_give_a_discrete_action_and_a_mask():
    schema = schema_of({"action": INT}, {"legal_actions": INTS, "position": INTS})
    assert needs_first_observation(schema)
    view = infer_view(schema, first_observation={"legal_actions": [3], "position": [0, 0]})
    assert view.action_space == gym.spaces.Discrete(4)
    assert "the largest legal action of the first observation (3) + 1" in view.rules["action.action"]
    obs, info = view.observe({"legal_actions": [1, 3], "position": [2, 1]})
    assert set(obs) == {"position"} and info[ACTION_MASK].tolist() == [0, 1, 0, 1]
    assert info[ACTION_MASK].dtype == np.int8
    # A legal action past n is listed, never dropped silently.
    obs, info = view.observe({"legal_actions": [0, 9], "position": [2, 1]})
    assert info[ACTION_MASK].tolist() == [1, 0, 0, 0] and info[UNLISTED_LEGAL_ACTIONS] == [9]


def test_action_names_in_metadata_count_the_actions():
    schema = schema_of({"action_id": INT}, {"legal_actions": INTS})
    first = {"legal_actions": [0, 1], "metadata": {"action_meanings": ["NOOP", "FIRE", "RIGHT", "LEFT"]}}
    view = infer_view(schema, first_observation=first)
    assert view.action_space == gym.spaces.Discrete(4)
    assert "one per name in the first observation's metadata (4 names)" in view.rules["action.action_id"]


def test_bounds_beat_the_legal_list_and_flags_count_by_length():
    schema = schema_of({"column": {"type": "integer", "minimum": 0, "maximum": 6}}, {"legal_actions": INTS})
    view = infer_view(schema, first_observation={"legal_actions": [2]})
    assert view.action_space == gym.spaces.Discrete(7)
    assert view.observe({"legal_actions": [2, 5]})[1][ACTION_MASK].tolist() == [0, 0, 1, 0, 0, 1, 0]
    flags = infer_view(schema_of({"phase_id": INT}, {"action_mask": INTS}), first_observation={"action_mask": [1, 0, 1]})
    assert flags.action_space == gym.spaces.Discrete(3)
    assert flags.observe({"action_mask": [0, 1, 1]})[1][ACTION_MASK].tolist() == [0, 1, 1]
    # An action_mask of other numbers lists ids (upstream SUMO-RL's phases).
    ids = infer_view(schema_of({"phase_id": INT}, {"action_mask": INTS}), first_observation={"action_mask": [0, 1, 2, 3]})
    assert ids.action_space == gym.spaces.Discrete(4)
    assert ids.observe({"action_mask": [0, 2]})[1][ACTION_MASK].tolist() == [1, 0, 1, 0]


def test_legal_strings_are_listed_for_a_string_action():
    schema = schema_of({"move": {"type": "string"}}, {"fen": {"type": "string"},
                                                     "legal_moves": {"type": "array", "items": {"type": "string"}}})
    assert needs_first_observation(schema)
    view = infer_view(schema)
    assert isinstance(view.action_space, gym.spaces.Text) and view.act("e2e4") == {"move": "e2e4"}
    obs, info = view.observe({"fen": "8/8/8/8/8/8/8/8 w - - 0 1", "legal_moves": ["e2e4", "d2d4"]})
    assert set(obs) == {"fen"} and info[LEGAL_ACTIONS] == ["e2e4", "d2d4"]


def test_no_first_observation_no_mask_and_the_rules_say_why():
    view = infer_view(schema_of({"action": INT}, {"legal_actions": INTS}), first_observation_source="none: HTTP 404")
    assert isinstance(view.action_space, gym.spaces.Box) and view.legal is None
    assert view.rules["first observation"] == "none: HTTP 404"
    assert "no first observation with legal actions" in view.rules["action.action"]


def test_a_schema_without_a_side_is_refused_and_odd_keywords_are_ignored():
    """A side that is no object schema is a ProtocolMismatchError, unless its space is given
    whole; keywords of the wrong type inside a side (``required``, ``anyOf``, ``description``)
    are ignored, as the rest of the inference ignores what it cannot use."""
    with pytest.raises(ProtocolMismatchError, match="no observation schema .*got int 5; pass observation_space="):
        infer_view({"observation": 5, "action": schema_of({"a": INT}, {})["action"]})
    assert infer_view({"observation": 5, "action": {}}, observation_space=gym.spaces.Discrete(2),
                      action_space=gym.spaces.Discrete(3)).observation_space == gym.spaces.Discrete(2)
    odd = schema_of({"a": {**INT, "description": 5}, "b": {"anyOf": 5}}, {}, required=[])
    odd["action"]["required"] = 5
    view = infer_view(odd)
    assert set(view.action_space.spaces) == {"a", "b"}


# -- observations ---------------------------------------------------------------------------


def test_lists_of_numbers_take_the_shape_of_the_first_observation():
    schema = schema_of({"a": INT}, {"board": {"type": "array", "items": INTS},
                                    "info_state": {"type": "array", "items": {"type": "number"}},
                                    "history": INTS})
    first = {"board": [[0, 1, 0], [1, -1, 0]], "info_state": [0.5, 1.0], "history": []}
    view = infer_view(schema, first_observation=first)
    space = view.observation_space
    assert space["board"] == gym.spaces.Box(np.iinfo(np.int64).min, np.iinfo(np.int64).max, (2, 3), np.int64)
    assert space["info_state"].shape == (2,) and space["info_state"].dtype == np.float64
    assert isinstance(space["history"], gym.spaces.Sequence)  # empty in the first observation: unknown
    obs, _ = view.observe({"board": [[1, 1, 1], [0, 0, 0]], "info_state": [0, 0], "history": [1, 2]})
    assert obs in space
    with pytest.raises(ValueError, match=r"expected a list of shape \(2,\).*observation_fields=\{'info_state'"):
        view.observe({"board": [[1, 1, 1], [0, 0, 0]], "info_state": [0, 0, 0], "history": []})


def test_a_flat_screen_takes_its_sibling_shape_as_uint8():
    schema = schema_of({"a": INT}, {"screen": INTS, "screen_shape": INTS})
    screen = np.arange(2 * 3 * 3) % 256
    view = infer_view(schema, first_observation={"screen": screen.tolist(), "screen_shape": [2, 3, 3]})
    assert view.observation_space["screen"] == gym.spaces.Box(0, 255, (2, 3, 3), np.uint8)
    obs, _ = view.observe({"screen": screen.tolist(), "screen_shape": [2, 3, 3]})
    assert obs["screen"].dtype == np.uint8 and obs["screen"][1, 2, 2] == 17
    with pytest.raises(ValueError, match="outside uint8's range"):
        view.observe({"screen": [300] * 18, "screen_shape": [2, 3, 3]})


def test_nulls_are_named_in_info_and_missing_and_extra_fields_too():
    schema = schema_of({"a": INT}, {"last": {"anyOf": [INT, {"type": "null"}], "default": None},
                                    "label": {"type": "string", "default": "none"}})
    view = infer_view(schema)
    obs, info = view.observe({"last": None, "surprise": 1})
    assert obs["last"] == np.iinfo(np.int64).min and obs["label"] == "none"
    assert info[NULL_FIELDS] == ["last"] and info[EXTRA_FIELDS] == {"surprise": 1} and info[MISSING_FIELDS] == ["label"]
    assert "-2**63 stands for null" in view.rules["observation.last"]


def test_an_observation_field_left_out_goes_to_info():
    view = infer_view(schema_of({"a": INT}, {"x": INT, "message": {"type": "string"}}),
                      observation_fields={"message": None, "x": {"type": "integer", "minimum": 0, "maximum": 4}})
    assert view.observation_space == gym.spaces.Dict({"x": gym.spaces.Discrete(5)})
    obs, info = view.observe({"x": 3, "message": "hello"})
    assert obs == {"x": 3} and info[EXTRA_FIELDS] == {"message": "hello"}


# -- the spaces behind it ---------------------------------------------------------------------


def test_free_form_json_samples_fit_their_schema():
    space = infer_space({"type": "object", "additionalProperties": True}).space
    assert isinstance(space, JsonText)
    space.seed(0)
    for _ in range(50):
        sample = space.sample()
        assert space.contains(sample) and isinstance(json.loads(sample), dict)
    assert not space.contains("not json") and space.contains("[1, 2]")
    rng = np.random.default_rng(0)
    schema = {"type": "object", "required": ["n", "tags"], "properties": {
        "n": {"type": "integer", "minimum": 3, "maximum": 5},
        "tags": {"type": "array", "minItems": 1, "maxItems": 2, "items": {"enum": ["a", "b"]}},
        "note": {"anyOf": [{"type": "string", "maxLength": 4}, {"type": "null"}]}}}
    for _ in range(50):
        value = random_json(schema, rng)
        assert 3 <= value["n"] <= 5 and 1 <= len(value["tags"]) <= 2 and set(value["tags"]) <= {"a", "b"}
        assert value.get("note") is None or len(value["note"]) <= 4


def test_inferred_text_is_shared_not_copied_and_samples_short_strings():
    text = infer_space({"type": "string"}).space
    assert isinstance(text, InferredText)
    copies = [copy.deepcopy(text) for _ in range(3)]  # benchmarks/bench_upstream.py times them
    assert all(c._char_index is text._char_index for c in copies)
    copies[0].seed(1)
    assert all(len(copies[0].sample()) <= 32 for _ in range(20))
    batched = gym.vector.utils.batch_space(gym.spaces.Dict({"a": text, "b": text}), 16)
    assert batched["a"][3]._char_index is text._char_index


# -- upstream's own servers, on their captures ----------------------------------------------------


@pytest.mark.parametrize("name", CAPTURED)
def test_every_captured_observation_is_in_the_inferred_space(name):
    capture = load(name)
    view = infer_view(capture["schema"], first_observation=capture["http"]["reset"]["body"]["observation"])
    seen = 0
    for fields in observations(capture):
        obs, info = view.observe(fields)
        assert view.observation_space.contains(obs), (name, fields)
        if view.legal is not None and view.legal.kind != "values":
            assert info[ACTION_MASK].shape == (view.action_space.n,)
        seen += 1
    assert seen >= 5


@pytest.mark.parametrize("name", CAPTURED)
def test_every_captured_action_is_written_back_exactly(name):
    """Each action of the scripted episode, read into the inferred space and written out again,
    is the same JSON: the view writes actions as upstream's servers take them."""
    capture = load(name)
    view = infer_view(capture["schema"], first_observation=capture["http"]["reset"]["body"]["observation"])
    fields = set(view.act(view.action_space.sample()))
    checked = 0
    for action in sent_actions(capture):
        if set(action) == fields:  # not an MCP step of another shape (echo's list_tools)
            assert view.act(view.action.to_space(action)) == action
            checked += 1
    assert checked or name in UNSENDABLE
