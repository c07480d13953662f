"""Tests for openenv_gym.spaces.description: describe and restore."""

from __future__ import annotations

import json
import math

import gymnasium as gym
import numpy as np
import pytest
from gymnasium import spaces as gs
from hypothesis import given
from hypothesis import strategies as st

from openenv_gym import spaces as og_spaces
from tests.spaces.strategies import SETTINGS, all_spaces, boxes, json_roundtrip


@SETTINGS
@given(all_spaces)
def test_describe_restore_roundtrip(space):
    description = og_spaces.describe(space)
    text = json.dumps(description, allow_nan=False)
    restored = og_spaces.restore(json.loads(text))
    assert restored == space
    # Exact, not just allclose: describing the restored space gives the same JSON.
    assert og_spaces.describe(restored) == json.loads(text)
    assert type(restored) is type(space)


@SETTINGS
@given(boxes())
def test_box_restore_is_bit_exact(box):
    restored = og_spaces.restore(json_roundtrip(og_spaces.describe(box)))
    assert restored.dtype == box.dtype and restored.shape == box.shape
    assert restored.low.tobytes() == box.low.tobytes()
    assert restored.high.tobytes() == box.high.tobytes()
    assert np.array_equal(restored.bounded_below, box.bounded_below)
    assert np.array_equal(restored.bounded_above, box.bounded_above)


def test_describe_examples():
    assert og_spaces.describe(gs.Box(-1.0, math.inf, shape=(2,), dtype=np.float32)) == {
        "type": "Box", "dtype": "float32", "shape": [2], "low": -1.0, "high": "inf",
    }
    box = gs.Box(low=np.array([0, 2**64 - 2], dtype=np.uint64), high=np.array([2**64 - 1] * 2, dtype=np.uint64), dtype=np.uint64)
    d = og_spaces.describe(box)
    assert d["low"] == [0, 2**64 - 2] and d["high"] == 2**64 - 1
    assert og_spaces.restore(json_roundtrip(d)).low.tolist() == [0, 2**64 - 2]
    f32 = np.float32(0.1)
    d = og_spaces.describe(gs.Box(low=f32, high=np.float32(1), shape=(), dtype=np.float32))
    assert np.float32(json_roundtrip(d)["low"]) == f32
    d = og_spaces.describe(gs.Dict([("b", gs.Discrete(2)), ("a", gs.Text(3, charset="xyz"))]))
    assert [k for k, _ in d["spaces"]] == ["b", "a"]
    assert d["spaces"][1][1] == {"type": "Text", "min_length": 1, "max_length": 3, "charset": "xyz"}
    assert og_spaces.describe(gs.MultiBinary([2, 3])) == {"type": "MultiBinary", "n": [2, 3]}
    assert og_spaces.describe(gs.MultiBinary(4)) == {"type": "MultiBinary", "n": 4}
    assert og_spaces.describe(gs.Graph(gs.Discrete(3), None))["edge_space"] is None


def test_restore_accepts_the_schema_extension_wrapper():
    space = gs.Tuple([gs.Discrete(2), gs.Text(4)])
    wrapper = {"format": og_spaces.FORMAT, "space": og_spaces.describe(space)}
    assert og_spaces.restore(wrapper) == space
    with pytest.raises(ValueError, match="format"):
        og_spaces.restore({"format": "openenv-gym.space/99", "space": og_spaces.describe(space)})


def test_integer_box_with_infinite_bounds_keeps_boundedness():
    box = gs.Box(low=np.array([-np.inf, 0.0]), high=np.array([5.0, np.inf]), dtype=np.int32)
    d = og_spaces.describe(box)
    assert d["low"] == ["-inf", 0] and d["high"] == [5, "inf"]
    restored = og_spaces.restore(json_roundtrip(d))
    assert restored.bounded_below.tolist() == [False, True]
    assert restored.bounded_above.tolist() == [True, False]
    assert restored.low.tolist() == box.low.tolist()


class _CustomSpace(gs.Space):
    pass


def test_describe_unknown_space_raises_type_error():
    with pytest.raises(TypeError, match="_CustomSpace.*Box, Discrete"):
        og_spaces.describe(_CustomSpace())
    with pytest.raises(TypeError, match=r"space\.spaces\[1\]"):
        og_spaces.describe(gs.Tuple([gs.Discrete(2), _CustomSpace()]))
    with pytest.raises(TypeError):
        og_spaces.to_json_schema(_CustomSpace())


@pytest.mark.parametrize(
    ("description", "match"),
    [
        ([], "expected an object"),
        ({"type": "Nope"}, "unknown space type"),
        ({"type": "Discrete"}, "missing 'n'"),
        ({"type": "Discrete", "n": 0}, "must be >= 1"),
        ({"type": "Discrete", "n": True}, "expected an integer"),
        ({"type": "Discrete", "n": 2, "colour": "red"}, "unexpected field"),
        ({"type": "Discrete", "n": 300, "dtype": "int8"}, "do not fit"),
        ({"type": "Box", "dtype": "object", "shape": [], "low": 0, "high": 1}, "unsupported dtype"),
        ({"type": "Box", "dtype": "float32", "shape": [2], "low": [0, 1, 2], "high": 1}, r"\['low'\]: expected 2 items"),
        ({"type": "Box", "dtype": "float32", "shape": [2], "low": 2, "high": 1}, "invalid Box"),
        ({"type": "Box", "dtype": "float32", "shape": [], "low": "nan", "high": 1}, "expected a number"),
        ({"type": "Box", "dtype": "uint8", "shape": [], "low": -1, "high": 1}, "out of range"),
        ({"type": "Box", "dtype": "float32", "shape": [10**9, 10**9], "low": 0, "high": 1}, "more than"),
        ({"type": "Tuple", "spaces": [{"type": "Discrete", "n": -1}]}, r"\['spaces'\]\[0\]"),
        ({"type": "Dict", "spaces": [["a", {"type": "Discrete", "n": 2}], ["a", {"type": "Discrete", "n": 2}]]}, "duplicate"),
        ({"type": "OneOf", "spaces": []}, "non-empty"),
        ({"type": "Sequence", "space": {"type": "Discrete", "n": 2}, "stack": "yes"}, "stack"),
        ({"type": "Text", "min_length": 3, "max_length": 2, "charset": "ab"}, "invalid Text"),
    ],
)
def test_restore_rejects_invalid_descriptions(description, match):
    with pytest.raises(ValueError, match=match):
        og_spaces.restore(description)


@SETTINGS
@given(all_spaces, st.data())
def test_restore_of_mutated_descriptions_raises_only_value_error(space, data):
    description = json_roundtrip(og_spaces.describe(space))
    junk = data.draw(st.one_of(st.none(), st.booleans(), st.integers(), st.floats(), st.text(max_size=4), st.just([]), st.just({})))

    def mutate(x):
        if isinstance(x, list) and x and data.draw(st.booleans()):
            i = data.draw(st.integers(0, len(x) - 1))
            return x[:i] + [mutate(x[i])] + x[i + 1 :]
        if isinstance(x, dict) and x and data.draw(st.booleans()):
            k = data.draw(st.sampled_from(sorted(x)))
            return {**x, k: mutate(x[k])}
        return junk

    try:
        restored = og_spaces.restore(mutate(description))
    except ValueError:
        return
    assert isinstance(restored, gym.Space)


def test_restore_rejects_very_deep_nesting():
    d = {"type": "Discrete", "n": 2}
    for _ in range(200):
        d = {"type": "Tuple", "spaces": [d]}
    with pytest.raises(ValueError, match="deeper"):
        og_spaces.restore(d)


def test_a_budget_bounds_the_bounds_of_every_space_restored_with_it():
    """A ``BoundsBudget`` counts the bytes of bounds (a Box's low and high, a MultiDiscrete's
    nvec and start) before they are allocated, across every ``restore`` given it; the error
    names the limit."""
    box = {"type": "Box", "dtype": "float32", "shape": [100], "low": 0, "high": 1}  # 800 bytes of bounds
    budget = og_spaces.BoundsBudget(2000, "max_message_bytes")
    og_spaces.restore(box, budget=budget)
    og_spaces.restore({"type": "Tuple", "spaces": [{"type": "Discrete", "n": 3}, box]}, budget=budget)
    assert budget.spent == 1600
    with pytest.raises(ValueError, match=r"take 800 bytes \(after 1,600 .*limit of 2,000 bytes \(max_message_bytes\)"):
        og_spaces.restore(box, budget=budget)
    with pytest.raises(ValueError, match=r"\['spaces'\]\[1\]: the bounds of a MultiDiscrete of shape \(3,\)"):
        og_spaces.restore({"type": "Tuple", "spaces": [box, {"type": "MultiDiscrete", "nvec": [2, 2, 2]}]},
                          budget=og_spaces.BoundsBudget(840))
    huge = {"type": "Box", "dtype": "float64", "shape": [4096, 4096], "low": 0, "high": 1}
    with pytest.raises(ValueError, match="268,435,456 bytes"):
        og_spaces.restore(huge, budget=og_spaces.BoundsBudget(1 << 20))
