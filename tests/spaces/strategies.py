"""Hypothesis strategies that draw any Gymnasium space, nested, and helpers the spaces tests share."""

from __future__ import annotations

import inspect
import json
import math

import numpy as np
from gymnasium import spaces as gs
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

SETTINGS = settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)

FLOAT_DTYPES = [np.float16, np.float32, np.float64]
INT_DTYPES = [np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64]
BOX_DTYPES = FLOAT_DTYPES + INT_DTYPES + [np.bool_]
DISCRETE_HAS_DTYPE = "dtype" in inspect.signature(gs.Discrete.__init__).parameters

shapes = st.lists(st.integers(0, 3), max_size=3).map(tuple)


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
    # No NUL: Gymnasium's Text.sample joins a numpy string array, which drops trailing
    # NULs, so a space with NUL in its charset samples values it does not contain.
    charset = draw(
        st.lists(
            st.characters(codec="utf-8", exclude_categories=["Cs"], exclude_characters="\x00"),
            min_size=1, max_size=8, unique=True
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
