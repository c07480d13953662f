"""Tests for openenv_gym.spaces: descriptions, JSON Schemas, value codecs and schema inference."""

from __future__ import annotations

import copy
import inspect
import json
import math
import pathlib
import warnings

import gymnasium as gym
import jsonschema
import numpy as np
import pytest
from gymnasium import spaces as gs
from gymnasium.spaces import GraphInstance
from gymnasium.utils.env_checker import data_equivalence
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from openenv_gym import spaces as og_spaces
from openenv_gym.spaces import SpaceValueError

#: Schemas captured from real OpenEnv servers (openenv 0.10 and upstream envs).
CAPTURES = pathlib.Path(__file__).parent / "data"

SETTINGS = settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)

FLOAT_DTYPES = [np.float16, np.float32, np.float64]
INT_DTYPES = [np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64]
BOX_DTYPES = FLOAT_DTYPES + INT_DTYPES + [np.bool_]
DISCRETE_HAS_DTYPE = "dtype" in inspect.signature(gs.Discrete.__init__).parameters


@pytest.fixture(autouse=True)
def _quiet_gymnasium():
    # Sequence(Box(shape=()), stack=True).contains makes Box.contains warn about casting scalars.
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*Casting input x to numpy array.*")
        yield


# ---------------------------------------------------------------------------------------------
# Strategies
# ---------------------------------------------------------------------------------------------

shapes = st.lists(st.integers(0, 3), max_size=3).map(tuple)
nonempty_shapes = st.lists(st.integers(1, 3), max_size=3).map(tuple)


@st.composite
def boxes(draw, dtypes=BOX_DTYPES, shape_strategy=shapes):
    dtype = np.dtype(draw(st.sampled_from(dtypes)))
    shape = draw(shape_strategy)
    size = math.prod(shape)
    if dtype.kind == "b":
        if draw(st.booleans()) and size:
            low = np.array(draw(st.lists(st.booleans(), min_size=size, max_size=size)), dtype=bool).reshape(shape)
            return gs.Box(low=low, high=np.ones(shape, dtype=bool), dtype=bool)
        return gs.Box(low=0, high=1, shape=shape, dtype=bool)
    if dtype.kind == "f":
        lim = 1024.0 if dtype == np.float16 else 2.0**100
        value = st.floats(-lim, lim, allow_nan=False, width=dtype.itemsize * 8)
        mode = draw(st.sampled_from(["inf", "finite", "low", "high", "elements"]))
        if mode == "elements" and size:
            lows = draw(st.lists(st.one_of(value, st.just(-math.inf)), min_size=size, max_size=size))
            spans = draw(st.lists(st.one_of(st.floats(0, 100), st.just(math.inf)), min_size=size, max_size=size))
            low = np.array(lows, dtype=np.float64)
            with np.errstate(invalid="ignore"):
                high = np.where(np.isinf(low), np.array(spans) + 1.0, low + np.array(spans))
            low = low.astype(dtype).reshape(shape)
            high = np.maximum(high.astype(dtype).reshape(shape), low)
            return gs.Box(low=low, high=high, dtype=dtype)
        a, b = sorted([draw(value), draw(value)])
        b = a if a == b else b  # Box(0.0, -0.0).sample() fails in numpy's uniform
        low = a if mode in ("finite", "low") else -math.inf
        high = b if mode in ("finite", "high") else math.inf
        return gs.Box(low=low, high=high, shape=shape, dtype=dtype)
    info = np.iinfo(dtype)
    # Keep sampled ranges away from the int64 edges (Box.sample computes high + 1 in int64).
    lo_lim, hi_lim = max(int(info.min), -(2**62)), min(int(info.max), 2**62)
    value = st.integers(lo_lim, hi_lim)
    mode = draw(st.sampled_from(["full", "finite", "elements", "extreme"] + (["inf"] if dtype.kind == "i" else [])))
    if mode == "extreme":  # full dtype range; describe/restore must be exact here too
        return gs.Box(low=int(info.min), high=int(info.max), shape=shape, dtype=dtype)
    if mode == "inf":
        return gs.Box(low=-math.inf, high=draw(value), shape=shape, dtype=dtype)
    if mode == "elements" and size:
        lows = draw(st.lists(value, min_size=size, max_size=size))
        highs = [min(x + draw(st.integers(0, 100)), hi_lim) for x in lows]
        return gs.Box(
            low=np.array(lows, dtype=dtype).reshape(shape), high=np.array(highs, dtype=dtype).reshape(shape), dtype=dtype
        )
    a, b = sorted([draw(value), draw(value)])
    return gs.Box(low=a, high=b, shape=shape, dtype=dtype)


@st.composite
def discretes(draw):
    n = draw(st.integers(1, 10))
    start = draw(st.integers(-5, 5))
    if DISCRETE_HAS_DTYPE and draw(st.booleans()):
        return gs.Discrete(n, start=start, dtype=draw(st.sampled_from([np.int8, np.int16, np.int32, np.int64])))
    return gs.Discrete(n, start=start)


@st.composite
def multi_discretes(draw):
    shape = draw(st.lists(st.integers(1, 3), min_size=1, max_size=2).map(tuple))
    size = math.prod(shape)
    nvec = np.array(draw(st.lists(st.integers(1, 5), min_size=size, max_size=size))).reshape(shape)
    dtype = draw(st.sampled_from([np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint32]))
    lo = 0 if np.dtype(dtype).kind == "u" else -3
    start = np.array(draw(st.lists(st.integers(lo, 3), min_size=size, max_size=size))).reshape(shape)
    return gs.MultiDiscrete(nvec, dtype=dtype, start=start)


multi_binaries = st.one_of(
    st.integers(1, 4).map(gs.MultiBinary),
    st.lists(st.integers(1, 3), min_size=1, max_size=3).map(gs.MultiBinary),
)


@st.composite
def texts(draw):
    charset = draw(
        st.lists(
            st.characters(codec="utf-8", exclude_categories=["Cs"]), min_size=1, max_size=8, unique=True
        ).map("".join)
    )
    min_length = draw(st.integers(0, 3))
    max_length = draw(st.integers(min_length, 8))
    return gs.Text(max_length, min_length=min_length, charset=charset)


keys = st.text(st.characters(codec="utf-8", exclude_categories=["Cs"]), min_size=1, max_size=5)
array_leaves = st.one_of(boxes(), discretes(), multi_discretes(), multi_binaries)
graph_node_spaces = st.one_of(
    boxes(dtypes=[np.float32, np.float64, np.int32], shape_strategy=st.lists(st.integers(1, 3), max_size=2).map(tuple)),
    discretes(),
)
graphs = st.builds(gs.Graph, graph_node_spaces, st.one_of(st.none(), graph_node_spaces))
leaves = st.one_of(array_leaves, texts(), graphs)


def composites(children):
    return st.one_of(
        st.lists(children, max_size=3).map(gs.Tuple),
        st.lists(st.tuples(keys, children), max_size=3, unique_by=lambda kv: kv[0]).map(gs.Dict),
        st.builds(gs.Sequence, children, stack=st.just(False)),
        st.builds(gs.Sequence, array_leaves, stack=st.just(True)),
        st.lists(children, min_size=1, max_size=3).map(gs.OneOf),
    )


def nested_spaces(depth=3):
    if depth == 0:
        return leaves
    return st.one_of(leaves, composites(nested_spaces(depth - 1)))


all_spaces = nested_spaces(3)


def json_roundtrip(x):
    return json.loads(json.dumps(x, allow_nan=False))


def canonical(space, value):
    """Discrete values (and OneOf indices) compare by value: JSON decodes them to int."""
    if isinstance(space, gs.Discrete):
        return int(value)
    if isinstance(space, (gs.Box, gs.MultiDiscrete, gs.MultiBinary)):
        return np.asarray(value)  # Box.sample returns numpy scalars for some shape () Boxes
    if isinstance(space, gs.Tuple):
        return tuple(canonical(s, v) for s, v in zip(space.spaces, value))
    if isinstance(space, gs.Dict):
        return {k: canonical(s, value[k]) for k, s in space.spaces.items()}
    if isinstance(space, gs.Sequence) and not space.stack:
        return tuple(canonical(space.feature_space, v) for v in value)
    if isinstance(space, gs.OneOf):
        return (int(value[0]), canonical(space.spaces[int(value[0])], value[1]))
    return value


def sample(space, seed):
    space.seed(seed)
    return space.sample()


# ---------------------------------------------------------------------------------------------
# describe / restore
# ---------------------------------------------------------------------------------------------


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


# ---------------------------------------------------------------------------------------------
# encode / decode
# ---------------------------------------------------------------------------------------------


@SETTINGS
@given(all_spaces, st.integers(0, 2**32 - 1))
def test_json_value_roundtrip(space, seed):
    value = sample(space, seed)
    assume(space.contains(value))  # Gymnasium 1.2's Graph.sample ignores a node dtype
    wire = json_roundtrip(og_spaces.encode(space, value))
    decoded = og_spaces.decode(space, wire)
    assert space.contains(decoded) == space.contains(value)
    assert data_equivalence(canonical(space, value), canonical(space, decoded), exact=True)
    # Canonical types from JSON: Discrete is a Python int.
    if isinstance(space, gs.Discrete):
        assert type(decoded) is int


@SETTINGS
@given(all_spaces, st.integers(0, 2**32 - 1))
def test_arrays_value_roundtrip_preserves_types(space, seed):
    value = sample(space, seed)
    assume(space.contains(value))
    wire = og_spaces.encode(space, value, arrays=True)
    decoded = og_spaces.decode(space, wire)
    assert data_equivalence(value, decoded, exact=True)
    assert space.contains(decoded) == space.contains(value)


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


def test_float32_json_roundtrip_is_exact():
    space = gs.Box(-np.inf, np.inf, shape=(1000,), dtype=np.float32)
    value = np.random.default_rng(0).standard_normal(1000).astype(np.float32) * np.float32(1e-3)
    decoded = og_spaces.decode(space, json_roundtrip(og_spaces.encode(space, value)))
    assert decoded.dtype == np.float32 and decoded.tobytes() == value.tobytes()


def test_extreme_integers_roundtrip():
    space = gs.Box(low=0, high=2**64 - 1, shape=(2,), dtype=np.uint64)
    value = np.array([2**64 - 1, 2**63 + 1], dtype=np.uint64)
    decoded = og_spaces.decode(space, json_roundtrip(og_spaces.encode(space, value)))
    assert decoded.dtype == np.uint64 and decoded.tolist() == value.tolist()
    space = gs.Box(low=-np.inf, high=np.inf, shape=(2,), dtype=np.int64)
    value = np.array([-(2**63), 2**63 - 1], dtype=np.int64)
    assert og_spaces.decode(space, json_roundtrip(og_spaces.encode(space, value))).tolist() == value.tolist()


def test_arrays_encoding_is_zero_copy():
    space = gs.Box(0, 1, shape=(4, 3), dtype=np.float32)
    value = space.sample()
    wire = og_spaces.encode(space, value, arrays=True)
    assert wire is value
    value.setflags(write=False)
    assert og_spaces.decode(space, value) is value  # read-only arrays are fine, no copy
    # Non-contiguous or wrong-dtype arrays are converted once.
    view = np.zeros((3, 4), dtype=np.float32).T
    out = og_spaces.encode(space, view, arrays=True)
    assert out.flags.c_contiguous and out.dtype == np.float32
    out = og_spaces.encode(space, np.zeros((4, 3)), arrays=True)
    assert out.dtype == np.float32
    assert isinstance(og_spaces.encode(gs.Discrete(3), np.int64(2), arrays=True), np.int64)
    assert type(og_spaces.encode(gs.Discrete(3), np.int64(2))) is int


def test_decode_types():
    assert type(og_spaces.decode(gs.Discrete(3), 2)) is int
    assert type(og_spaces.decode(gs.Discrete(3), np.int64(2))) is np.int64
    assert og_spaces.decode(gs.Discrete(3), 2.0) == 2
    assert og_spaces.decode(gs.Tuple([gs.Discrete(2)]), [1]) == (1,)
    seq = og_spaces.decode(gs.Sequence(gs.Discrete(5), stack=True), [1, 2, 3])
    assert isinstance(seq, np.ndarray) and seq.dtype == np.int64 and seq.tolist() == [1, 2, 3]
    assert og_spaces.decode(gs.Sequence(gs.Text(3)), ["a", "b"]) == ("a", "b")
    d = og_spaces.decode(gs.Dict([("z", gs.Discrete(2)), ("a", gs.Discrete(2))]), {"a": 0, "z": 1})
    assert list(d) == ["z", "a"]
    g = og_spaces.decode(gs.Graph(gs.Box(0, 1, shape=(2,)), gs.Discrete(3)), {"nodes": [[0, 1]], "edges": [2], "edge_links": [[0, 0]]})
    assert isinstance(g, GraphInstance) and g.nodes.dtype == np.float32 and g.edge_links.shape == (1, 2)
    assert og_spaces.decode(gs.OneOf([gs.Discrete(2), gs.Text(2)]), [1, "ab"]) == (1, "ab")
    # Integral floats are accepted for integer arrays; bools only for bool Boxes.
    assert og_spaces.decode(gs.Box(0, 9, shape=(2,), dtype=np.int32), [1.0, 2]).tolist() == [1, 2]
    assert og_spaces.decode(gs.Box(0, 1, shape=(2,), dtype=bool), [True, False]).tolist() == [True, False]
    assert og_spaces.decode(gs.Box(0, 1, shape=(), dtype=np.float64), 1).shape == ()


def named(space):
    return gs.Dict([("pos", space)])


@pytest.mark.parametrize(
    ("space", "data", "path"),
    [
        (named(gs.Box(0, 1, shape=(3,))), {"pos": [0, 1, "x"]}, 'obs["pos"][2]'),
        (named(gs.Box(0, 1, shape=(3,))), {"pos": [0, 1, None]}, 'obs["pos"][2]'),
        (named(gs.Box(0, 1, shape=(3,))), {"pos": [0, True, 1]}, 'obs["pos"][1]'),
        (named(gs.Box(0, 1, shape=(3,))), {"pos": [0, 1]}, 'obs["pos"]'),
        (named(gs.Box(0, 1, shape=(2, 2))), {"pos": [[0, 1], [1]]}, 'obs["pos"][1]'),
        (named(gs.Box(0, 1, shape=(2, 2))), {"pos": [[0, 1], [1, [2]]]}, 'obs["pos"][1][1]'),
        (named(gs.Box(0, 1, shape=(2,))), {"pos": np.zeros(3)}, 'obs["pos"]'),
        (named(gs.Box(0, 1, shape=(2,))), {"pos": np.array(["a", "b"])}, 'obs["pos"]'),
        (named(gs.Box(0, 1, shape=(2,), dtype=np.uint8)), {"pos": [1, 256]}, 'obs["pos"][1]'),
        (named(gs.Box(0, 1, shape=(2,), dtype=np.int8)), {"pos": np.array([1, 300])}, 'obs["pos"][1]'),
        (named(gs.Box(0, 1, shape=(2,), dtype=np.int8)), {"pos": [1, 2.5]}, 'obs["pos"][1]'),
        (named(gs.Box(0, 1, shape=(2,), dtype=np.int64)), {"pos": [1, 2**64]}, 'obs["pos"][1]'),
        (named(gs.Box(0, 1, shape=(2,), dtype=np.float32)), {"pos": [1, 1e300]}, 'obs["pos"][1]'),
        (named(gs.Box(0, 1, shape=(2,), dtype=bool)), {"pos": [1, 0]}, 'obs["pos"][0]'),
        (named(gs.Box(0, 1, shape=(2,))), {"pos": np.array([True, False])}, 'obs["pos"]'),
        (named(gs.Discrete(3)), {"pos": 1.5}, 'obs["pos"]'),
        (named(gs.Discrete(3)), {"pos": True}, 'obs["pos"]'),
        (named(gs.Discrete(3)), {"pos": "1"}, 'obs["pos"]'),
        (named(gs.Discrete(3)), {"pos": float("nan")}, 'obs["pos"]'),
        (named(gs.Text(3)), {"pos": 3}, 'obs["pos"]'),
        (named(gs.MultiBinary(2)), {"pos": [0, "1"]}, 'obs["pos"][1]'),
        (named(gs.Discrete(3)), {}, "obs"),
        (named(gs.Discrete(3)), {"pos": 1, "extra": 2}, "obs"),
        (named(gs.Discrete(3)), [1], "obs"),
        (named(gs.Tuple([gs.Discrete(2), gs.Discrete(2)])), {"pos": [1]}, 'obs["pos"]'),
        (named(gs.OneOf([gs.Discrete(2)])), {"pos": [1, 0]}, 'obs["pos"][0]'),
        (named(gs.OneOf([gs.Discrete(2)])), {"pos": [0, 1.5]}, 'obs["pos"][1]'),
        (named(gs.Sequence(gs.Discrete(2))), {"pos": [0, 1, "a"]}, 'obs["pos"][2]'),
        (named(gs.Sequence(gs.Discrete(2))), {"pos": "ab"}, 'obs["pos"]'),
        (named(gs.Sequence(gs.Box(0, 1, shape=(2,)), stack=True)), {"pos": [[0, 1], [1]]}, 'obs["pos"][1]'),
        (named(gs.Graph(gs.Discrete(2), None)), {"pos": {"nodes": [0], "edges": [1], "edge_links": [[0, 0]]}}, 'obs["pos"]'),
        (named(gs.Graph(gs.Discrete(2), gs.Discrete(2))), {"pos": {"nodes": [0], "edges": [1], "edge_links": [[0]]}}, 'obs["pos"].edge_links[0]'),
        (named(gs.Graph(gs.Discrete(2), gs.Discrete(2))), {"pos": {"nodes": [0], "edges": [1, 1], "edge_links": [[0, 0]]}}, 'obs["pos"]'),
    ],
)
def test_decode_bad_data_names_the_path(space, data, path):
    with pytest.raises(SpaceValueError) as info:
        og_spaces.decode(space, data, path="obs")
    assert str(info.value).startswith(path + ":"), str(info.value)
    assert info.value.path == path


def test_encode_rejects_structural_mismatch():
    with pytest.raises(SpaceValueError, match=r'value\["a"\]: expected an array of shape \(2,\)'):
        og_spaces.encode(gs.Dict({"a": gs.Box(0, 1, shape=(2,))}), {"a": np.zeros(3)})
    with pytest.raises(SpaceValueError, match="missing key"):
        og_spaces.encode(gs.Dict({"a": gs.Discrete(2)}), {})
    with pytest.raises(SpaceValueError):
        og_spaces.encode(gs.Text(3), 5)
    with pytest.raises(SpaceValueError):
        og_spaces.encode(gs.Box(0, 255, shape=(1,), dtype=np.uint8), np.array([-1]))


def test_decode_limits_hostile_input():
    with pytest.raises(SpaceValueError, match="exceed the limit"):
        og_spaces.decode(gs.Sequence(gs.Discrete(2)), [0] * (og_spaces.MAX_SEQUENCE_LENGTH + 1))
    with pytest.raises(SpaceValueError, match="exceed the limit"):
        og_spaces.decode(gs.Sequence(gs.Discrete(2), stack=True), [0] * (og_spaces.MAX_SEQUENCE_LENGTH + 1))
    # A long list for a small Box fails on its length, before anything is converted.
    with pytest.raises(SpaceValueError, match="expected 2 items"):
        og_spaces.decode(gs.Box(0, 1, shape=(2,)), [[0.0] * 10] * 100_000)
    deep = 0
    for _ in range(5000):
        deep = [deep]
    with pytest.raises(SpaceValueError):
        og_spaces.decode(gs.Box(0, 1, shape=(2,)), deep)


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=5),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=3), children, max_size=4),
    max_leaves=12,
)
numpy_junk = st.one_of(
    st.builds(np.zeros, st.lists(st.integers(0, 3), max_size=3).map(tuple), st.sampled_from(BOX_DTYPES + [np.complex64])),
    st.builds(np.array, st.lists(st.text(max_size=2), max_size=3)),
    st.builds(lambda: np.array([None, 1], dtype=object)),
    st.sampled_from([np.int64(3), np.float32(1.5), np.bool_(True), np.str_("x"), b"bytes"]),
)


@SETTINGS
@given(all_spaces, st.one_of(json_values, numpy_junk))
def test_decode_junk_raises_only_space_value_error(space, junk):
    try:
        og_spaces.decode(space, junk)
    except SpaceValueError as e:
        assert str(e).startswith("value")


@SETTINGS
@given(all_spaces, st.integers(0, 2**32 - 1), st.data())
def test_decode_mutated_samples_raises_only_space_value_error(space, seed, data):
    """Replace one random node of a valid encoded sample by junk."""
    wire = json_roundtrip(og_spaces.encode(space, sample(space, seed)))
    junk = data.draw(json_values)

    def mutate(x):
        if isinstance(x, list) and x and data.draw(st.booleans()):
            i = data.draw(st.integers(0, len(x) - 1))
            return x[:i] + [mutate(x[i])] + x[i + 1 :]
        if isinstance(x, dict) and x and data.draw(st.booleans()):
            k = data.draw(st.sampled_from(sorted(x)))
            return {**x, k: mutate(x[k])}
        return junk

    try:
        og_spaces.decode(space, mutate(wire))
    except SpaceValueError:
        pass


# ---------------------------------------------------------------------------------------------
# infer_space / infer_fields
# ---------------------------------------------------------------------------------------------


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


def contains_but_nan(space, value):
    """space.contains, except that nan (null of an Optional number, documented) is accepted."""
    if isinstance(space, gs.Dict):
        return list(value) == list(space.spaces) and all(contains_but_nan(s, value[k]) for k, s in space.spaces.items())
    if isinstance(space, gs.Box) and space.dtype.kind == "f" and np.all(np.isnan(value)):
        return np.shape(value) == space.shape
    return space.contains(value)


@pytest.mark.parametrize(("env", "cls", "value"), REAL_EXAMPLES, ids=[f"{e}.{c}.{i}" for i, (e, c, _) in enumerate(REAL_EXAMPLES)])
def test_infer_space_real_examples_roundtrip(env, cls, value):
    schema = load_real(env, cls)
    jsonschema.Draft202012Validator(schema).validate(value)
    inferred = og_spaces.infer_space(schema)
    converted = inferred.to_space(copy.deepcopy(value))
    assert contains_but_nan(inferred.space, converted)
    assert _json_equal(inferred.to_json(converted), value)
    # The converted value also goes through the exact wire codecs.
    wire = json.loads(json.dumps(og_spaces.encode(inferred.space, converted)))
    assert contains_but_nan(inferred.space, og_spaces.decode(inferred.space, wire))
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
    assert np.isnan(opt_num.to_space(None)) and opt_num.to_json(opt_num.to_space(None)) is None
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


@SETTINGS
@given(all_spaces)
def test_neutral_values_belong_to_their_space(space):
    value = og_spaces.neutral(space)
    assert space.contains(value), (space, value)
