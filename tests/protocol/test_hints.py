"""Exact types over JSON (``openenv_gym.protocol.hints``): values as JSON types, and the type
hints that rebuild numpy types and tuples."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from gymnasium.utils.env_checker import data_equivalence
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from openenv_gym.protocol import hints


def over_json(value):
    """``value`` and its hints as a peer reads them: both through JSON text, then rebuilt."""
    wire = json.loads(json.dumps(hints.jsonable(value)))
    return hints.apply_type_hints(wire, json.loads(json.dumps(hints.type_hints(value))))


# -- jsonable -------------------------------------------------------------------------


@pytest.mark.parametrize("value, plain", [
    (np.int8(-3), -3), (np.uint64(2**64 - 1), 2**64 - 1), (np.float32(0.5), 0.5), (np.bool_(True), True),
    (np.arange(4, dtype=np.int16).reshape(2, 2), [[0, 1], [2, 3]]), (np.array(2.5), 2.5),
    ((1, (2, "a")), [1, [2, "a"]]), ({1: np.int8(2), "k": [np.float64(1.5)]}, {"1": 2, "k": [1.5]}),
    (np.array(["ab", "c"]), ["ab", "c"]), (b"\x00\xff", "\x00\xff"), (bytearray(b"ab"), "ab"),
    (np.array([None, np.int8(1)], dtype=object), [None, 1]),
])
def test_jsonable_turns_numpy_values_tuples_and_bytes_into_json_types(value, plain):
    assert hints.jsonable(value) == plain
    assert json.loads(json.dumps(hints.jsonable(value))) == plain


def test_jsonable_writes_what_json_cannot_carry_as_its_repr():
    assert hints.jsonable({"c": 1 + 2j, "s": {1}}) == {"c": "(1+2j)", "s": "{1}"}


def test_jsonable_keeps_non_finite_floats():
    plain = hints.jsonable([math.inf, np.float64(-math.inf), np.nan])
    assert plain[:2] == [math.inf, -math.inf] and math.isnan(plain[2])


def test_jsonable_copies_a_flat_list_of_plain_values():
    flat = [1, 2.0, "x", None, True]
    assert hints.jsonable(flat) == flat and hints.jsonable(flat) is not flat


# -- type_hints and number_hint -------------------------------------------------------


@pytest.mark.parametrize("value", [1, 1.5, "x", None, True, [1, "a"], {"a": [1.0]}, np.array(["s"]),
                                   np.array([None], dtype=object), np.datetime64("2020-01-01")])
def test_values_json_keeps_or_cannot_rebuild_get_no_hint(value):
    assert hints.type_hints(value) is None


@pytest.mark.parametrize("value, hint", [
    (np.zeros(2, np.float32), {"nd": "<f4"}), (np.uint8(1), {"np": "|u1"}), (np.bool_(False), {"np": "|b1"}),
    ((), {"tuple": {}}), ((1, np.int8(2)), {"tuple": {"1": {"np": "|i1"}}}),
    ([1, np.zeros(1, np.int64)], {"list": {"1": {"nd": "<i8"}}}),
    ({"a": 1, 2: (3,)}, {"dict": {"2": {"tuple": {}}}}),
])
def test_type_hints_mirror_the_value(value, hint):
    assert hints.type_hints(value) == hint


@pytest.mark.parametrize("number, hint", [
    (1.5, None), (3, {"py": "int"}), (True, None), (None, None),
    (np.float32(1), {"np": "<f4"}), (np.int64(1), {"np": "<i8"}),
])
def test_a_numbers_hint_says_what_type_the_json_float_was(number, hint):
    assert hints.number_hint(number) == hint


def test_an_int_reward_sent_as_a_float_comes_back_an_int():
    assert type(hints.apply_type_hints(3.0, hints.number_hint(3))) is int


# -- apply_type_hints -----------------------------------------------------------------


def test_hints_rebuild_arrays_scalars_and_tuples():
    value = {"pos": np.arange(3, dtype=np.uint16), "t": (np.float16(0.5), [1, (2,)]), "n": np.int32(-7)}
    assert data_equivalence(over_json(value), value, exact=True)


@pytest.mark.parametrize("value, hint", [
    ([1, 2], {"nd": "|O"}), ([1, 2], {"nd": "<U2"}), ([1], {"nd": "<M8[s]"}), (["a"], {"nd": "<f8"}),
    (1000, {"np": "|i1"}), (10**400, {"np": "<f8"}), ([1], {"dict": {"0": {"np": "<f8"}}}),
    ({"a": 1}, {"tuple": {}}), (1.5, {"py": "str"}), ([1], {"nd": "<f8", "np": "<f8"}), ([1], "nd"),
    ([1], {"list": [1]}), ([1], {"nd": 3}),
])
def test_hints_that_do_not_fit_the_value_leave_it_as_it_is(value, hint):
    assert hints.apply_type_hints(value, hint) == value


def test_hints_for_some_items_leave_the_others_as_they_are():
    assert hints.apply_type_hints([1, 2, 3], {"list": {"1": {"np": "<i2"}, "9": {"np": "<i2"}}}) == [1, np.int16(2), 3]


_JSON_HOSTILE = st.recursive(
    st.none() | st.integers() | st.text(max_size=4) | st.floats(allow_nan=False),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner, max_size=3),
    max_leaves=10,
)
_HINTS = st.recursive(
    st.sampled_from(["<f4", "|u1", "|b1", "|O", "<c16", "x"]).map(lambda dtype: {"nd": dtype})
    | st.sampled_from(["<i8", "|i1", "<f2"]).map(lambda dtype: {"np": dtype})
    | st.just({"py": "int"}) | _JSON_HOSTILE,
    lambda inner: st.tuples(st.sampled_from(["dict", "list", "tuple"]),
                            st.dictionaries(st.sampled_from(["0", "1", "2", "a"]), inner, max_size=3))
    .map(lambda kind_inner: {kind_inner[0]: kind_inner[1]}),
    max_leaves=8,
)


@settings(max_examples=200, deadline=None)
@given(_JSON_HOSTILE, _HINTS)
def test_hints_a_peer_made_up_never_make_decoding_fail(value, hint):
    """Hints come from the peer: whatever they say, applying them returns a value (one that
    still travels as JSON), and a hint of no known shape leaves the value as it is."""
    rebuilt = hints.apply_type_hints(value, hint)
    json.dumps(hints.jsonable(rebuilt))
    if not (isinstance(hint, dict) and len(hint) == 1 and next(iter(hint)) in ("nd", "np", "py", "dict", "list", "tuple")):
        assert rebuilt is value


# -- the round trip -------------------------------------------------------------------

_DTYPES = st.sampled_from(["bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
                           "float16", "float32", "float64"]).map(np.dtype)
#: Shapes whose nested lists carry them: no axis of length 0 before another axis.
_SHAPES = hnp.array_shapes(min_dims=0, max_dims=3, min_side=1, max_side=3) | st.just((0,))


@st.composite
def _arrays(draw, shapes=_SHAPES):
    dtype = draw(_DTYPES)
    elements = {"allow_nan": False, "allow_infinity": False} if dtype.kind == "f" else None
    return draw(hnp.arrays(dtype, draw(shapes), elements=elements))


_NUMPY_SCALARS = _arrays(shapes=st.just(())).map(lambda array: array[()])

_EXACT_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**63), 2**63 - 1) | st.floats(allow_nan=False) | st.text(max_size=4)
    | _arrays() | _NUMPY_SCALARS,
    lambda inner: st.lists(inner, max_size=3) | st.lists(inner, max_size=3).map(tuple)
    | st.dictionaries(st.text(max_size=3), inner, max_size=3),
    max_leaves=10,
)


@settings(max_examples=150, deadline=None)
@given(_EXACT_VALUES)
def test_any_value_comes_back_with_its_exact_types_over_json(value):
    assert data_equivalence(over_json(value), value, exact=True)


def test_an_empty_array_of_more_than_one_axis_keeps_its_shape_over_json():
    assert over_json(np.zeros((0, 3), np.float32)).shape == (0, 3)
