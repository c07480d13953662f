"""Tests for openenv_gym.spaces.schema: JSON Schemas for the JSON encoding of values."""

from __future__ import annotations

import json

import jsonschema
import numpy as np
from gymnasium import spaces as gs
from hypothesis import given
from hypothesis import strategies as st

from openenv_gym import spaces as og_spaces
from tests.spaces.strategies import SETTINGS, all_spaces, json_roundtrip, sample


@SETTINGS
@given(all_spaces, st.integers(0, 2**32 - 1))
def test_json_schema_is_valid_and_accepts_encoded_samples(space, seed):
    schema = og_spaces.to_json_schema(space)
    jsonschema.Draft202012Validator.check_schema(schema)
    json.dumps(schema, allow_nan=False)
    value = sample(space, seed)
    if space.contains(value):
        jsonschema.Draft202012Validator(schema).validate(json_roundtrip(og_spaces.encode(space, value)))


def test_json_schema_examples():
    box = gs.Box(low=np.array([0.0, -1.0], dtype=np.float32), high=np.array([1.0, np.inf], dtype=np.float32), dtype=np.float32)
    assert og_spaces.to_json_schema(box) == {
        "type": "array", "items": {"type": "number", "minimum": -1.0}, "minItems": 2, "maxItems": 2,
    }
    assert og_spaces.to_json_schema(gs.Box(0, 1, shape=(), dtype=np.float64)) == {
        "type": "number", "minimum": 0.0, "maximum": 1.0,
    }
    assert og_spaces.to_json_schema(gs.Box(0, 1, shape=(1,), dtype=bool))["items"] == {"type": "boolean"}
    assert og_spaces.to_json_schema(gs.Text(5, min_length=2)) == {"type": "string", "minLength": 2, "maxLength": 5}
    schema = og_spaces.to_json_schema(gs.Dict([("b", gs.Discrete(2)), ("a", gs.MultiBinary(2))]))
    assert schema["required"] == ["b", "a"] and schema["additionalProperties"] is False
    tup = og_spaces.to_json_schema(gs.Tuple([gs.Discrete(2)]))
    assert tup["prefixItems"] == [{"type": "integer", "minimum": 0, "maximum": 1}] and tup["items"] is False
    one_of = og_spaces.to_json_schema(gs.OneOf([gs.Discrete(2), gs.Text(3)]))
    validator = jsonschema.Draft202012Validator(one_of)
    assert validator.is_valid([0, 1]) and validator.is_valid([1, "ab"])
    assert not validator.is_valid([0, "ab"]) and not validator.is_valid([2, 1])
    graph = jsonschema.Draft202012Validator(og_spaces.to_json_schema(gs.Graph(gs.Discrete(3), gs.Box(0, 1, shape=(2,)))))
    assert graph.is_valid({"nodes": [0, 2], "edges": None, "edge_links": None})
    assert graph.is_valid({"nodes": [0, 2], "edges": [[0.5, 0.5]], "edge_links": [[0, 1]]})
    assert not graph.is_valid({"nodes": [0, 2], "edges": [[0.5, 0.5]], "edge_links": [[0, 1, 2]]})
    assert og_spaces.SCHEMA_EXTENSION_KEY not in json.dumps(og_spaces.to_json_schema(gs.Discrete(2)))
