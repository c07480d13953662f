"""Tests for openenv_gym.spaces.infer: spaces inferred from plain JSON Schemas, on schemas captured from real servers."""

from __future__ import annotations

import copy
import json
import pathlib

import jsonschema
import numpy as np
import pytest
from gymnasium import spaces as gs
from gymnasium.utils.env_checker import data_equivalence

from openenv_gym import spaces as og_spaces
from openenv_gym.spaces import SpaceValueError
from tests.spaces.strategies import canonical, json_roundtrip

#: Schemas captured from real OpenEnv servers (openenv 0.10 and upstream envs).
CAPTURES = pathlib.Path(__file__).parent.parent / "data"


def real_schemas():
    schemas = []
    for env, classes in json.loads((CAPTURES / "real-env-json-schemas.json").read_text()).items():
        for cls, schema in classes.items():
            schemas.append(pytest.param(schema, id=f"{env}.{cls}"))
    counter = json.loads((CAPTURES / "schema-counter-0.10.0.json").read_text())
    for key, schema in counter.items():
        schemas.append(pytest.param(schema, id=f"counter.{key}"))
    return schemas


@pytest.mark.parametrize("schema", real_schemas())
def test_infer_space_on_real_schemas(schema):
    inferred = og_spaces.infer_space(schema)
    assert isinstance(inferred.space, gs.Dict)
    assert list(inferred.space.spaces) == list(schema["properties"])
    # The inferred space itself goes on the wire exactly.
    assert og_spaces.restore(json_roundtrip(og_spaces.describe(inferred.space))) == inferred.space
    fields = og_spaces.infer_fields(schema, exclude=("done", "reward", "metadata"))
    assert set(fields.space.spaces) == set(schema["properties"]) - {"done", "reward", "metadata"}
    # A sample of the inferred fields converts to JSON that matches the original schema
    # (random text is not JSON, so JSON-text fields get a valid JSON text instead).
    sampled = fields.space.sample()
    for key, sub in fields.space.spaces.items():
        if isinstance(sub, gs.Text) and sub.max_length == og_spaces.INFERRED_JSON_MAX_LENGTH:
            sampled[key] = "{}" if schema["properties"][key].get("type") == "object" else "null"
    as_json = fields.to_json(sampled)
    jsonschema.Draft202012Validator({**schema, "required": []}).validate(as_json)


def load_real(env, cls):
    return json.loads((CAPTURES / "real-env-json-schemas.json").read_text())[env][cls]


# Hand-written example values that match the real schemas, with no lossy cases in them
# (no "" / [] for nullable fields, no characters outside the permissive charset).
REAL_EXAMPLES = [
    ("chess_env", "ChessAction", {"metadata": {"k": [1, 2]}, "move": "e2e4"}),
    ("chess_env", "ChessObservation", {
        "done": False, "reward": 1, "metadata": {}, "fen": "8/8/8/8/8/8/8/8 w - - 0 1",
        "legal_moves": ["e2e4", "d2d4"], "is_check": True, "result": None,
    }),
    ("atari_env", "AtariAction", {"metadata": {}, "action_id": 3, "game_name": "pong", "obs_type": "ram", "full_action_space": False}),
    ("atari_env", "AtariObservation", {
        "done": True, "reward": -1.0, "metadata": {}, "screen": [0, 255, 17, 3], "screen_shape": [2, 2],
        "legal_actions": [0, 1, 2], "lives": 3, "episode_frame_number": 10, "frame_number": 12,
    }),
    ("grid_world_env", "GridWorldAction", {"metadata": {}, "action": "LEFT"}),
    ("grid_world_env", "GridWorldObservation", {"done": False, "reward": 0.5, "metadata": {}, "x": -1, "y": 4, "message": "moved\nleft"}),
    ("snake_env", "SnakeObservation", {
        "done": False, "reward": None, "metadata": {}, "grid": [[0, 1], [2, 3], [4, 5]],
        "observation": [[[0.5, 1.0]], [[2.0, -3.25]]], "episode_score": 2.5, "episode_steps": 3,
        "episode_fruits": 1, "episode_kills": 0, "alive": True,
    }),
    ("dm_control_env", "DMControlAction", {"metadata": {}, "values": [0.1, -0.2]}),
    ("dm_control_env", "DMControlObservation", {
        "done": False, "reward": 0.25, "metadata": {}, "observations": {"position": [0.1, 0.2], "velocity": [1.0]},
        "pixels": "iVBORw0KGgo=",
    }),
    ("connect4_env", "Connect4Observation", {"done": False, "reward": None, "metadata": {}, "board": [[0, 1, 2]], "legal_actions": [0, 6]}),
    ("openspiel_env", "OpenSpielObservation", {
        "done": False, "reward": 0, "metadata": {}, "info_state": [0.0, 1.0, 0.5], "legal_actions": [0, 2],
        "game_phase": "playing", "current_player_id": 0, "opponent_last_action": None,
    }),
    ("openspiel_env", "OpenSpielObservation", {
        "done": False, "reward": 0, "metadata": {}, "info_state": [0.0], "legal_actions": [1],
        "game_phase": "terminal", "current_player_id": 1, "opponent_last_action": 7,
    }),
    ("browsergym_env", "BrowserGymObservation", {
        "done": False, "reward": None, "metadata": {}, "text": "héllo wörld — ok", "url": "https://x.org", "screenshot": [[[1, 2, 3], [4, 5, 6]]],
        "goal": "g", "axtree_txt": "", "pruned_html": "<p>hi</p>", "error": "", "last_action_error": False,
    }),
    ("textarena_env", "TextArenaObservation", {
        "done": False, "reward": None, "metadata": {}, "prompt": "play", "messages": [{"sender_id": 0, "content": "hi", "category": "chat"}],
        "current_player_id": 0, "legal_players": [0, 1], "info": {"turn": 1, "nested": {"a": [1, None]}},
    }),
    ("coding_env", "CodeObservation", {"done": True, "reward": 1.0, "metadata": {}, "stdout": "ok\n", "stderr": "", "exit_code": 0}),
    ("wildfire_env", "WildfireAction", {"metadata": {}, "action": "water", "x": 3, "y": None}),
    ("wildfire_env", "WildfireObservation", {
        "done": False, "reward": 0.0, "metadata": {}, "grid": [0, 1, 2, 1], "width": 2, "height": 2, "step": 1, "wind_dir": "N",
        "humidity": 0.3, "burning_count": 1, "burned_count": 0, "reward_hint": 0.0, "remaining_water": 5, "remaining_breaks": 2,
    }),
    ("sumo_rl_env", "SumoObservation", {
        "done": False, "reward": None, "metadata": {}, "observation": [0.1, 0.2], "observation_shape": [2], "action_mask": [1, 0], "sim_time": 5.0,
    }),
    ("unity_env", "UnityAction", {"metadata": {}, "discrete_actions": [1, 2], "continuous_actions": None}),
    ("unity_env", "UnityObservation", {
        "done": False, "reward": 0.0, "metadata": {}, "vector_observations": [1.5], "visual_observations": None,
        "behavior_name": "b", "action_spec_info": {"n": 2}, "observation_spec_info": {},
    }),
    ("finrl_env", "FinRLObservation", {"done": False, "reward": 0.0, "metadata": {}, "state": [1.0, 2.0], "portfolio_value": 10.5, "date": "2024-01-01"}),
    ("atari_env", "AtariState", {
        "episode_id": "e1", "step_count": 4, "game_name": "pong", "obs_type": "rgb", "full_action_space": True,
        "mode": None, "difficulty": 2, "repeat_action_probability": 0.25, "frameskip": 4,
    }),
]


def _json_equal(a, b):
    """== with the JSON reading of numbers (1 == 1.0) but bools kept distinct from numbers."""
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, dict):
        return isinstance(b, dict) and list(a) == list(b) and all(_json_equal(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return isinstance(b, list) and len(a) == len(b) and all(_json_equal(x, y) for x, y in zip(a, b))
    return a == b


def inferred_contains(space, value):
    """space.contains (null of an Optional number is -inf, inside its space)."""
    return space.contains(value)


@pytest.mark.parametrize(("env", "cls", "value"), REAL_EXAMPLES, ids=[f"{e}.{c}.{i}" for i, (e, c, _) in enumerate(REAL_EXAMPLES)])
def test_infer_space_real_examples_roundtrip(env, cls, value):
    schema = load_real(env, cls)
    jsonschema.Draft202012Validator(schema).validate(value)
    inferred = og_spaces.infer_space(schema)
    converted = inferred.to_space(copy.deepcopy(value))
    assert inferred_contains(inferred.space, converted)
    assert _json_equal(inferred.to_json(converted), value)
    # The converted value also goes through the exact wire codecs.
    wire = json.loads(json.dumps(og_spaces.encode(inferred.space, converted)))
    assert inferred_contains(inferred.space, og_spaces.decode(inferred.space, wire))
    fields = og_spaces.infer_fields(schema, exclude=("done", "reward", "metadata"))
    field_value = fields.to_space(value)
    assert fields.space.contains(field_value)
    expected = {k: v for k, v in value.items() if k not in ("done", "reward", "metadata")}
    assert _json_equal(fields.to_json(field_value), expected)


def test_infer_counter_schema():
    counter = json.loads((CAPTURES / "schema-counter-0.10.0.json").read_text())
    action = og_spaces.infer_fields(counter["action"], exclude=("metadata",))
    assert action.space == gs.Dict([("increment", gs.Discrete(10, start=1))])
    assert action.to_space({"increment": 7, "metadata": {}}) == {"increment": 7}
    assert action.to_json({"increment": np.int64(7)}) == {"increment": 7}
    obs = og_spaces.infer_fields(counter["observation"], exclude=("done", "reward", "metadata"))
    assert list(obs.space.spaces) == ["count", "frame"]
    frame = obs.space["frame"]
    assert isinstance(frame, gs.Sequence) and not frame.stack
    assert frame.feature_space == gs.Sequence(gs.Box(-np.inf, np.inf, shape=(), dtype=np.int64), stack=True)
    value = obs.to_space({"count": 2, "frame": [[1, 2, 3], [4, 5, 6]], "done": False, "reward": None})
    assert obs.space.contains(value)
    assert obs.to_json(value) == {"count": 2, "frame": [[1, 2, 3], [4, 5, 6]]}
    state = og_spaces.infer_space(counter["state"])
    step_count = state.space["step_count"]
    assert step_count.dtype == np.int64 and step_count.low == 0 and step_count.high == np.iinfo(np.int64).max


def rule(schema, **kwargs):
    return og_spaces.infer_space(schema, **kwargs)


def test_rule_integer_bounded_is_discrete():
    r = rule({"type": "integer", "minimum": -2, "maximum": 3})
    assert r.space == gs.Discrete(6, start=-2)
    assert r.to_space(3) == 3 and type(r.to_space(3)) is int and r.to_json(np.int64(-2)) == -2
    assert rule({"type": "integer", "exclusiveMinimum": 0, "exclusiveMaximum": 5}).space == gs.Discrete(4, start=1)
    assert rule({"type": "integer", "minimum": 0, "exclusiveMaximum": 2.5}).space == gs.Discrete(3)
    with pytest.raises(SpaceValueError):
        r.to_space(1.5)
    with pytest.raises(SpaceValueError):
        r.to_space(True)


def test_rule_integer_unbounded_is_int64_box():
    r = rule({"type": "integer"})
    assert r.space == gs.Box(-np.inf, np.inf, shape=(), dtype=np.int64)
    v = r.to_space(-(2**63))
    assert r.space.contains(v) and v.dtype == np.int64 and r.to_json(v) == -(2**63)
    assert type(r.to_json(r.to_space(5))) is int
    with pytest.raises(SpaceValueError, match="out of range"):
        r.to_space(2**63)
    half = rule({"type": "integer", "minimum": 0})
    assert half.space.low == 0 and half.space.high == np.iinfo(np.int64).max


def test_rule_number_is_float64_box():
    r = rule({"type": "number"})
    assert r.space == gs.Box(-np.inf, np.inf, shape=(), dtype=np.float64)
    v = r.to_space(0.1)
    assert r.space.contains(v) and r.to_json(v) == 0.1 and type(r.to_json(v)) is float
    assert r.to_json(r.to_space(3)) == 3
    bounded = rule({"type": "number", "minimum": 0, "exclusiveMaximum": 1})
    assert bounded.space.low == 0.0 and bounded.space.high < 1.0 and bounded.space.high == np.nextafter(1.0, 0)
    for bad in ("1.0", True, None, [1.0]):
        with pytest.raises(SpaceValueError):
            r.to_space(bad)


def test_rule_boolean_is_discrete_2():
    r = rule({"type": "boolean"})
    assert r.space == gs.Discrete(2)
    assert r.to_space(True) == 1 and type(r.to_space(False)) is int
    assert r.to_json(1) is True and r.to_json(np.int64(0)) is False
    with pytest.raises(SpaceValueError):
        r.to_space(1)


def test_rule_enum_and_const():
    r = rule({"enum": ["rgb", "grayscale", "ram"], "type": "string"})
    assert r.space == gs.Discrete(3)
    assert r.to_space("ram") == 2 and r.to_json(0) == "rgb"
    with pytest.raises(SpaceValueError, match="not one of"):
        r.to_space("cmyk")
    mixed = rule({"enum": [1, True, None, "1", 2.5]})
    assert [mixed.to_space(v) for v in (1, True, None, "1", 2.5)] == [0, 1, 2, 3, 4]
    assert [mixed.to_json(i) for i in range(5)] == [1, True, None, "1", 2.5]
    c = rule({"const": "fixed"})
    assert c.space == gs.Discrete(1) and c.to_space("fixed") == 0 and c.to_json(0) == "fixed"
    ref = rule({"$ref": "#/$defs/Move"}, defs={"Move": {"enum": ["UP", "DOWN"]}})
    assert ref.space == gs.Discrete(2) and ref.to_space("DOWN") == 1


def test_rule_string_is_permissive_text():
    r = rule({"type": "string"})
    assert isinstance(r.space, gs.Text)
    assert r.space.min_length == 0 and r.space.max_length == 65536
    charset = r.space.character_set
    assert {"\t", "\n", "\r", " ", "é", "中", "\u00a0"} <= charset
    assert "\x00" not in charset and "\U0001f600" not in charset
    text = "multi\nline\ttext, ünïcödé 中文"
    assert r.space.contains(r.to_space(text)) and r.to_json(r.to_space(text)) == text
    # Lossy but always inside the space: controls / astral characters become U+FFFD.
    assert r.to_space("a\x00b\U0001f600") == "a\ufffdb\ufffd"
    assert r.space.contains(r.to_space("a\x00b\U0001f600"))
    short = rule({"type": "string", "minLength": 2, "maxLength": 4})
    assert (short.space.min_length, short.space.max_length) == (2, 4)
    assert short.to_space("abcdef") == "abcd"
    with pytest.raises(SpaceValueError, match="shorter"):
        short.to_space("a")
    # The charset is built once and shared.
    assert rule({"type": "string"}).space.character_set is r.space.character_set


def test_rule_fixed_length_arrays_are_boxes():
    r = rule({"type": "array", "items": {"type": "number"}, "minItems": 3, "maxItems": 3})
    assert r.space == gs.Box(-np.inf, np.inf, shape=(3,), dtype=np.float64)
    assert r.to_json(r.to_space([1, 2.5, 3])) == [1.0, 2.5, 3.0]
    nested = rule({
        "type": "array", "minItems": 2, "maxItems": 2,
        "items": {"type": "array", "minItems": 3, "maxItems": 3, "items": {"type": "integer", "minimum": 0, "maximum": 255}},
    })
    assert nested.space == gs.Box(0, 255, shape=(2, 3), dtype=np.int64)
    v = nested.to_space([[1, 2, 3], [4, 5, 6]])
    assert nested.space.contains(v) and nested.to_json(v) == [[1, 2, 3], [4, 5, 6]]
    with pytest.raises(SpaceValueError, match=r"value\[1\]"):
        nested.to_space([[1, 2, 3], [4, 5]])
    with pytest.raises(SpaceValueError, match=r"value\[0\]\[1\]"):
        nested.to_space([[1, "2", 3], [4, 5, 6]])


def test_rule_variable_length_numeric_arrays_are_stacked_sequences():
    r = rule({"type": "array", "items": {"type": "number"}})
    assert r.space == gs.Sequence(gs.Box(-np.inf, np.inf, shape=(), dtype=np.float64), stack=True)
    v = r.to_space([0.5, 1, 2])
    assert isinstance(v, np.ndarray) and v.shape == (3,) and r.space.contains(v)
    assert r.to_json(v) == [0.5, 1.0, 2.0]
    assert r.to_space([]).shape == (0,)
    ints = rule({"type": "array", "items": {"type": "integer"}})
    assert ints.to_space([1, 2]).dtype == np.int64
    with pytest.raises(SpaceValueError, match=r"value\[1\]"):
        ints.to_space([1, True])
    pairs = rule({"type": "array", "items": {"type": "array", "items": {"type": "number"}, "minItems": 2, "maxItems": 2}})
    assert pairs.space == gs.Sequence(gs.Box(-np.inf, np.inf, shape=(2,), dtype=np.float64), stack=True)
    assert pairs.to_space([[1, 2], [3, 4]]).shape == (2, 2)


def test_rule_other_arrays_are_sequences():
    r = rule({"type": "array", "items": {"type": "string"}})
    assert isinstance(r.space, gs.Sequence) and not r.space.stack and isinstance(r.space.feature_space, gs.Text)
    v = r.to_space(["a", "b"])
    assert v == ("a", "b") and r.space.contains(v) and r.to_json(v) == ["a", "b"]
    objs = rule({"type": "array", "items": {"$ref": "#/$defs/M"}}, defs={"M": {"type": "object", "properties": {"id": {"type": "integer"}}}})
    assert isinstance(objs.space.feature_space, gs.Dict)
    assert objs.to_json(objs.to_space([{"id": 1}, {"id": 2}])) == [{"id": 1}, {"id": 2}]
    anything = rule({"type": "array"})
    assert anything.to_json(anything.to_space([1, "a", None])) == [1, "a", None]


def test_rule_prefix_items_are_tuples():
    r = rule({"type": "array", "prefixItems": [{"type": "integer"}, {"type": "string"}], "minItems": 2, "maxItems": 2})
    assert isinstance(r.space, gs.Tuple) and len(r.space.spaces) == 2
    v = r.to_space([5, "x"])
    assert r.space.contains(v) and r.to_json(v) == [5, "x"]
    with pytest.raises(SpaceValueError):
        r.to_space([5])


def test_rule_objects_are_dicts_in_order():
    schema = {"type": "object", "properties": {"z": {"type": "boolean"}, "a": {"type": "string", "default": "dflt"}}, "required": ["z"]}
    r = rule(schema)
    assert list(r.space.spaces) == ["z", "a"]
    assert r.to_space({"z": True, "a": "x"}) == {"z": 1, "a": "x"}
    assert r.to_space({"z": False}) == {"z": 0, "a": "dflt"}  # default fills a missing key
    assert r.to_space({"z": False, "unknown": 1}) == {"z": 0, "a": "dflt"}  # unknown keys dropped
    # A required key the server left out, with no default, takes the neutral value.
    assert r.to_space({"a": "x"}) == {"z": 0, "a": "x"}
    nested = rule({"$ref": "#/$defs/Outer", "$defs": {
        "Outer": {"type": "object", "properties": {"inner": {"$ref": "#/$defs/Inner"}}},
        "Inner": {"type": "object", "properties": {"v": {"type": "number"}}},
    }})
    assert isinstance(nested.space["inner"], gs.Dict)
    with pytest.raises(SpaceValueError, match=r'value\["inner"\]\["v"\]'):
        nested.to_space({"inner": {"v": "x"}})


@pytest.mark.parametrize(
    "schema",
    [
        {"type": "object", "additionalProperties": True},
        {"type": "object", "additionalProperties": {"type": "array", "items": {"type": "number"}}},
        {"type": "object"},
        {"anyOf": [{"type": "boolean"}, {"type": "integer"}, {"type": "number"}, {"type": "null"}]},
        {"anyOf": [{"type": "string"}, {"type": "integer"}]},
        {},
        {"$ref": "#/$defs/Missing"},
    ],
)
def test_rule_fallback_is_json_text(schema):
    r = rule(schema)
    assert isinstance(r.space, gs.Text)
    for value in ({"a": [1, 2.5, None, "é\u0000"], "b": {"c": True}}, [1, "x"], 3, None, "s"):
        text = r.to_space(value)
        assert r.space.contains(text), text
        assert r.to_json(text) == value


def test_rule_recursive_ref_terminates():
    r = rule({"$ref": "#/$defs/Node", "$defs": {"Node": {"type": "object", "properties": {"v": {"type": "integer"}, "child": {"$ref": "#/$defs/Node"}}}}})
    assert isinstance(r.space, gs.Dict) and isinstance(r.space["child"], gs.Text)
    value = {"v": 1, "child": {"v": 2, "child": None}}
    converted = r.to_space(value)
    assert r.space.contains(converted) and r.to_json(converted) == value


def test_rule_optional_values():
    opt_str = rule({"anyOf": [{"type": "string"}, {"type": "null"}]})
    assert isinstance(opt_str.space, gs.Text)
    assert opt_str.to_space(None) == "" and opt_str.to_json("") is None and opt_str.to_json("x") == "x"
    opt_int = rule({"anyOf": [{"type": "integer"}, {"type": "null"}]})
    assert opt_int.space.dtype == np.int64
    null = opt_int.to_space(None)
    assert opt_int.space.contains(null) and opt_int.to_json(null) is None and opt_int.to_json(opt_int.to_space(4)) == 4
    opt_bounded = rule({"anyOf": [{"type": "integer", "minimum": 0, "maximum": 2}, {"type": "null"}]})
    assert opt_bounded.space == gs.Discrete(4)
    assert opt_bounded.to_space(None) == 3 and opt_bounded.to_json(3) is None and opt_bounded.to_json(2) == 2
    opt_bool = rule({"type": ["boolean", "null"]})
    assert opt_bool.space == gs.Discrete(3) and opt_bool.to_space(None) == 2 and opt_bool.to_json(1) is True
    opt_enum = rule({"anyOf": [{"$ref": "#/$defs/E"}, {"type": "null"}], "default": None}, defs={"E": {"enum": ["a", "b"]}})
    assert opt_enum.space == gs.Discrete(3) and opt_enum.to_space(None) == 2 and opt_enum.to_json(2) is None
    opt_num = rule({"anyOf": [{"type": "number"}, {"type": "null"}]})
    assert opt_num.space == gs.Box(-np.inf, np.inf, shape=(), dtype=np.float64)
    null = opt_num.to_space(None)
    assert null == -np.inf and opt_num.space.contains(null) and opt_num.to_json(null) is None
    opt_ranged = rule({"anyOf": [{"type": "number", "minimum": 0, "maximum": 1}, {"type": "null"}]})
    assert opt_ranged.space == gs.Box(-np.inf, 1.0, shape=(), dtype=np.float64)  # widened to hold null
    assert opt_num.to_json(opt_num.to_space(1.5)) == 1.5
    opt_list = rule({"anyOf": [{"type": "array", "items": {"type": "integer"}}, {"type": "null"}]})
    assert isinstance(opt_list.space, gs.Sequence) and opt_list.space.stack
    empty = opt_list.to_space(None)
    assert opt_list.space.contains(empty) and empty.shape == (0,) and opt_list.to_json(empty) is None
    opt_obj = rule({"anyOf": [{"type": "object", "properties": {"a": {"type": "integer"}}}, {"type": "null"}]})
    assert isinstance(opt_obj.space, gs.Text)  # no neutral Dict value: JSON text, lossless
    assert opt_obj.to_json(opt_obj.to_space(None)) is None and opt_obj.to_json(opt_obj.to_space({"a": 1})) == {"a": 1}


def test_infer_fields_excludes_and_resolves_top_level_ref():
    schema = {
        "$ref": "#/$defs/Obs",
        "$defs": {"Obs": {"type": "object", "properties": {"done": {"type": "boolean"}, "reward": {"type": "number"}, "x": {"type": "integer"}}}},
    }
    fields = og_spaces.infer_fields(schema, exclude=("done", "reward"))
    assert list(fields.space.spaces) == ["x"]
    assert fields.to_json(fields.to_space({"done": True, "reward": 1.0, "x": 3})) == {"x": 3}
    empty = og_spaces.infer_fields({"type": "object", "properties": {"done": {"type": "boolean"}}}, exclude=("done",))
    assert empty.space == gs.Dict() and empty.to_space({"done": True}) == {}
    with pytest.raises(ValueError):
        og_spaces.infer_fields({"type": "string"})


def test_inferred_values_encode_exactly():
    """Inferred spaces are ordinary spaces: their values go through encode/decode."""
    schema = load_real("snake_env", "SnakeObservation")
    inferred = og_spaces.infer_fields(schema, exclude=("done", "reward", "metadata"))
    value = inferred.to_space(REAL_EXAMPLES[6][2])
    decoded = og_spaces.decode(inferred.space, json_roundtrip(og_spaces.encode(inferred.space, value)))
    assert data_equivalence(canonical(inferred.space, value), canonical(inferred.space, decoded), exact=True)
