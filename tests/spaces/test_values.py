"""Tests for openenv_gym.spaces.values: encode, decode, neutral."""

from __future__ import annotations

import numpy as np
import pytest
from gymnasium import spaces as gs
from gymnasium.spaces import GraphInstance
from gymnasium.utils.env_checker import data_equivalence
from hypothesis import assume, given
from hypothesis import strategies as st

from openenv_gym import spaces as og_spaces
from openenv_gym.spaces import SpaceValueError
from tests.spaces.strategies import BOX_DTYPES, SETTINGS, all_spaces, canonical, json_roundtrip, sample


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


@SETTINGS
@given(all_spaces)
def test_neutral_values_belong_to_their_space(space):
    value = og_spaces.neutral(space)
    assert space.contains(value), (space, value)


_BOUNDED = st.one_of(
    st.builds(
        lambda low, width, shape, dtype: gs.Box(low % 100, low % 100 + width, shape=shape, dtype=dtype)
        if dtype is np.uint8 else gs.Box(low, low + width, shape=shape, dtype=dtype),
        st.integers(-50, 50), st.integers(0, 100), st.sampled_from([(), (3,), (2, 2)]),
        st.sampled_from([np.float32, np.float64, np.int64, np.uint8]),
    ),
    st.builds(
        lambda nvec, start: gs.MultiDiscrete(nvec, start=start[: len(nvec)] + [0] * (len(nvec) - len(start))),
        st.lists(st.integers(1, 9), min_size=1, max_size=4), st.lists(st.integers(-5, 5), max_size=4),
    ),
)


@SETTINGS
@given(_BOUNDED, st.data())
def test_contains_answers_as_gymnasium_for_arrays(space, data):
    """The ndarray fast path of ``contains`` (Box, MultiDiscrete) gives Gymnasium's
    answer: shapes, dtypes that do or do not cast safely, bounds, NaN."""
    shape = data.draw(st.sampled_from([space.shape, (*space.shape, 1), (4,)]))
    dtype = data.draw(st.sampled_from([np.float64, np.float32, np.int64, np.int8, np.uint8, np.bool_]))
    raw = data.draw(st.lists(
        st.one_of(st.integers(-60, 160), st.floats(allow_infinity=True)),
        min_size=int(np.prod(shape)), max_size=int(np.prod(shape)),
    ))
    with np.errstate(invalid="ignore", over="ignore"):
        value = np.array(raw, dtype=np.float64).astype(dtype).reshape(shape)
    expected = space.contains(value)
    assert og_spaces.contains(space, value) is expected
