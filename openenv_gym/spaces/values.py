"""Values of a space on the wire: :func:`encode`, :func:`decode`, :func:`contains`, :func:`neutral`.

:func:`encode` turns a value of a space into wire data, either pure JSON types
(``arrays=False``) or with ``np.ndarray`` leaves for the msgpack codec (``arrays=True``).
:func:`decode` turns either back into a value: it checks structure, dtype and shape (not
bounds) and raises :class:`~openenv_gym.spaces.SpaceValueError` naming the offending item.
Wire data comes from the network, so nothing it holds makes :func:`decode` build more than
the space implies; sequences stop at :data:`MAX_SEQUENCE_LENGTH` items.

Example::

    >>> from gymnasium import spaces
    >>> space = spaces.Dict({"n": spaces.Discrete(4), "xy": spaces.Box(-1.0, 1.0, shape=(2,))})
    >>> encode(space, {"n": np.int64(3), "xy": np.zeros(2, np.float32)})
    {'n': 3, 'xy': [0.0, 0.0]}
    >>> contains(space, decode(space, {"n": 3, "xy": [0.5, -0.5]}))
    True
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
from gymnasium import spaces as gs
from gymnasium.spaces import GraphInstance

from ._common import _SUPPORTED, _err, _key_path, _short_list, _what

__all__ = ["MAX_SEQUENCE_LENGTH", "encode", "decode", "neutral", "contains"]

MAX_SEQUENCE_LENGTH = 1_000_000
"""Longest Sequence (and stacked Sequence, Graph node/edge list) :func:`decode` accepts."""


# ---------------------------------------------------------------------------------------------
# Arrays: shared by encode and decode
# ---------------------------------------------------------------------------------------------


def _array_spec(space: gs.Space) -> tuple[np.dtype, tuple[int, ...]] | None:
    if isinstance(space, (gs.Box, gs.MultiDiscrete, gs.MultiBinary)):
        return np.dtype(space.dtype), tuple(space.shape)
    if isinstance(space, gs.Discrete):
        return np.dtype(getattr(space, "dtype", np.int64)), ()
    return None


def _leaf_path(path: str, index: int, shape: tuple[int, ...]) -> str:
    if not shape:
        return path
    return path + "".join(f"[{int(j)}]" for j in np.unravel_index(index, shape))


def _expected(dtype: np.dtype) -> str:
    return {"f": "a number", "i": "an integer", "u": "an integer", "b": "a boolean"}[dtype.kind]


def _norm_leaf(x: Any, dtype: np.dtype, where: Callable[[], str]) -> Any:
    """Check one leaf of a nested list; return it as a Python bool / int / float."""
    kind = dtype.kind
    if isinstance(x, (bool, np.bool_)):
        if kind == "b":
            return bool(x)
        raise _err(where(), f"expected {_expected(dtype)}, got a boolean {bool(x)!r}")
    if kind == "b":
        raise _err(where(), f"expected a boolean, got {_what(x)}")
    if isinstance(x, (int, np.integer)):
        return int(x)
    if isinstance(x, (float, np.floating)):
        if kind == "f":
            return float(x)
        if math.isfinite(x) and float(x).is_integer():
            return int(x)
        raise _err(where(), f"expected an integer, got {float(x)!r}")
    raise _err(where(), f"expected {_expected(dtype)}, got {_what(x)}")


def _flat_to_array(flat: list[Any], dtype: np.dtype, shape: tuple[int, ...], path: str) -> np.ndarray:
    kind = dtype.kind
    ok: tuple[type, ...] = {"f": (float, int), "i": (int,), "u": (int,), "b": (bool,)}[kind]
    if not all(type(x) in ok for x in flat):
        flat = [_norm_leaf(x, dtype, functools.partial(_leaf_path, path, i, shape)) for i, x in enumerate(flat)]
    if kind in "iu" and flat:
        info = np.iinfo(dtype)
        lo, hi = min(flat), max(flat)
        if lo < info.min or hi > info.max:
            bad = next(i for i, x in enumerate(flat) if not info.min <= x <= info.max)
            raise _err(
                _leaf_path(path, bad, shape),
                f"{flat[bad]} is out of range for {dtype} ({info.min}..{info.max})",
            )
    try:
        with np.errstate(over="raise"):
            arr = np.array(flat, dtype=dtype)
    except (OverflowError, FloatingPointError):
        big = float(np.finfo(dtype).max) if kind == "f" else 0.0
        for i, x in enumerate(flat):
            try:
                too_big = math.isfinite(x) and abs(float(x)) > big
            except OverflowError:
                too_big = True
            if too_big:
                raise _err(_leaf_path(path, i, shape), f"{x} is out of range for {dtype}") from None
        raise _err(path, f"values are out of range for {dtype}") from None
    return arr.reshape(shape)


def _collect(data: Any, shape: tuple[int, ...], dim: int, path: str, out: list[Any]) -> None:
    if dim == len(shape):
        out.append(data)
        return
    if isinstance(data, np.ndarray) and data.shape == shape[dim:]:  # a list of arrays
        out.extend(data.reshape(-1).tolist())
        return
    whole = f"array of shape {shape}" if dim == 0 else f"shape {shape[dim:]}, a part of an array of shape {shape}"
    if not isinstance(data, (list, tuple)):
        raise _err(path, f"expected a list of {shape[dim]} items ({whole}), got {_what(data)}")
    if len(data) != shape[dim]:
        raise _err(path, f"expected {shape[dim]} items ({whole}), got {len(data)}")
    if dim == len(shape) - 1:
        out.extend(data)
    else:
        for i, item in enumerate(data):
            _collect(item, shape, dim + 1, f"{path}[{i}]", out)


def _cast_array(arr: np.ndarray, dtype: np.dtype, path: str) -> np.ndarray:
    src, dst = arr.dtype.kind, dtype.kind
    if src not in "biuf":
        raise _err(path, f"expected an array of {dtype}, got dtype {arr.dtype}")
    if dst == "b" or src == "b":
        if src != dst:
            raise _err(path, f"expected an array of {dtype}, got dtype {arr.dtype}")
        return arr.astype(dtype)
    if dst == "f":
        try:
            with np.errstate(over="raise"):
                return arr.astype(dtype)
        except FloatingPointError:
            raise _err(path, f"values of dtype {arr.dtype} overflow {dtype}") from None
    info = np.iinfo(dtype)
    if src == "f":
        bad = ~np.isfinite(arr) | (arr != np.trunc(arr))
        if np.any(bad):
            i = int(np.flatnonzero(bad)[0])
            raise _err(_leaf_path(path, i, arr.shape), f"expected an integer, got {arr.flat[i]!r}")
    if arr.size:
        lo, hi = arr.min(), arr.max()
        lo = int(lo) if src in "iu" else float(lo)
        hi = int(hi) if src in "iu" else float(hi)
        if lo < info.min or hi > info.max:
            flat = arr.reshape(-1)
            i = int(np.flatnonzero((flat < info.min) | (flat > info.max))[0]) if src in "f" else next(
                j for j, x in enumerate(flat.tolist()) if not info.min <= x <= info.max
            )
            where = _leaf_path(path, i, arr.shape)
            raise _err(where, f"{flat[i]} is out of range for {dtype} ({info.min}..{info.max})")
    return arr.astype(dtype)


def _to_array(
    data: Any,
    dtype: np.dtype,
    shape: tuple[int, ...],
    path: str,
    *,
    batch: bool = False,
    any_int: bool = False,
) -> Any:
    """Check ``data`` against (dtype, shape) and return it as an ndarray of that dtype.

    ``batch=True`` allows a leading dimension of any length up to MAX_SEQUENCE_LENGTH.
    ndarrays of the right dtype and shape (and, for shape (), numpy scalars of the right dtype)
    are returned as they are (no copy). Lists are
    checked (structure first, so nothing larger than the shape is ever built) before numpy
    sees them.
    """
    if isinstance(data, np.generic) and not batch and data.dtype == dtype and shape == ():
        return data  # a numpy scalar of the right dtype stays what it is (Box.sample returns them)
    if isinstance(data, (np.ndarray, np.generic)):
        arr = np.asarray(data)
        if batch:
            if arr.ndim != len(shape) + 1 or arr.shape[1:] != shape:
                expected = "(" + ", ".join(["n", *map(str, shape)]) + ("," if not shape else "") + ")"
                raise _err(path, f"expected an array of shape {expected}, got shape {arr.shape}")
            if arr.shape[0] > MAX_SEQUENCE_LENGTH:
                raise _err(path, f"{arr.shape[0]} items exceed the limit of {MAX_SEQUENCE_LENGTH}")
        elif arr.shape != shape:
            raise _err(path, f"expected an array of shape {shape}, got shape {arr.shape}")
        if arr.dtype == dtype or (any_int and arr.dtype.kind in "iu"):
            return arr
        return _cast_array(arr, dtype, path)
    if batch:
        if not isinstance(data, (list, tuple)):
            raise _err(path, f"expected a list of arrays of shape {shape}, got {_what(data)}")
        if len(data) > MAX_SEQUENCE_LENGTH:
            raise _err(path, f"{len(data)} items exceed the limit of {MAX_SEQUENCE_LENGTH}")
        shape = (len(data),) + shape
    flat: list[Any] = []
    _collect(data, shape, 0, path, flat)
    return _flat_to_array(flat, dtype, shape, path)


def _array_out(arr: np.ndarray, arrays: bool) -> Any:
    if arrays:
        return arr if arr.flags.c_contiguous else np.ascontiguousarray(arr)
    return arr.tolist()


def _integer(x: Any, path: str, what: str = "an integer") -> Any:
    """A Python int, or a numpy integer scalar kept as it is; integral floats become int."""
    if isinstance(x, (bool, np.bool_)):
        raise _err(path, f"expected {what}, got a boolean {bool(x)!r}")
    if isinstance(x, (int, np.integer)):
        return x
    if isinstance(x, np.ndarray) and x.shape == () and x.dtype.kind in "iu":
        return x[()]
    if isinstance(x, (float, np.floating)):
        if math.isfinite(x) and float(x).is_integer():
            return int(x)
        raise _err(path, f"expected {what}, got {float(x)!r}")
    raise _err(path, f"expected {what}, got {_what(x)}")


# ---------------------------------------------------------------------------------------------
# encode
# ---------------------------------------------------------------------------------------------


def encode(space: gs.Space, value: Any, *, arrays: bool = False, path: str = "value") -> Any:
    """Convert ``value`` (an element of ``space``) to wire data.

    With ``arrays=False`` the result has only JSON types: Box / MultiDiscrete / MultiBinary
    become nested lists of the space's dtype (float32 via ``float()`` so float32 -> JSON ->
    float32 is exact), Discrete an int, Text a str, Tuple a list, Dict a dict (str keys, space
    order), Sequence a list (stacked: one nested list), Graph ``{"nodes", "edges",
    "edge_links"}``, OneOf ``[index, value]``. Non-finite floats stay Python floats (``json``
    writes them as ``NaN`` / ``Infinity``).

    With ``arrays=True`` (for msgpack) the array values are C-contiguous ndarrays of the space
    dtype (the same object when it already is one) and numpy scalars stay numpy scalars;
    everything else is as with ``arrays=False``.

    ``path`` names the value in error messages.

    Raises:
        SpaceValueError: if the value does not fit the space's structure, dtype or shape.

    Example::

        >>> from gymnasium import spaces
        >>> space = spaces.Tuple([spaces.Discrete(3), spaces.Box(0, 1, shape=(2,), dtype=np.float32)])
        >>> encode(space, (np.int64(2), np.array([0.1, 1.0], dtype=np.float32)))
        [2, [0.10000000149011612, 1.0]]
        >>> encode(space, (np.int64(2), np.array([0.1, 1.0], dtype=np.float32)), arrays=True)
        [np.int64(2), array([0.1, 1. ], dtype=float32)]
    """
    kind = type(space)  # the commonest values first, as the general path encodes them
    if type(value) is np.ndarray and kind in _ARRAY_SPACES and (value.dtype, value.shape) == (space.dtype, space.shape):
        if not arrays:
            return value.tolist()
        return value if value.flags.c_contiguous else np.ascontiguousarray(value)
    if type(value) is int and kind is gs.Discrete:
        return value
    return _encode(space, value, path, arrays)


#: The spaces whose values are one ndarray (of the space's dtype and shape).
_ARRAY_SPACES = frozenset({gs.Box, gs.MultiBinary, gs.MultiDiscrete})


@functools.singledispatch
def _encode(space: Any, value: Any, path: str, arrays: bool) -> Any:
    raise TypeError(
        f"{path}: cannot encode values of {type(space).__module__}.{type(space).__qualname__}; "
        f"supported space types are {_SUPPORTED}"
    )


@_encode.register(gs.Box)
@_encode.register(gs.MultiDiscrete)
@_encode.register(gs.MultiBinary)
def _encode_array(space: gs.Space, value: Any, path: str, arrays: bool) -> Any:
    dtype, shape = _array_spec(space)  # type: ignore[misc]
    return _array_out(_to_array(value, dtype, shape, path), arrays)


@_encode.register(gs.Discrete)
def _encode_discrete(space: gs.Discrete, value: Any, path: str, arrays: bool) -> Any:
    v = _integer(value, path)
    return v if arrays else int(v)


@_encode.register(gs.Text)
def _encode_text(space: gs.Text, value: Any, path: str, arrays: bool) -> Any:
    if not isinstance(value, str):
        raise _err(path, f"expected a string, got {_what(value)}")
    return str(value)


def _check_items(value: Any, n: int, path: str, what: str) -> None:
    if not isinstance(value, (list, tuple)):
        raise _err(path, f"expected {what} of {n} items, got {_what(value)}")
    if len(value) != n:
        raise _err(path, f"expected {what} of {n} items, got {len(value)}")


@_encode.register(gs.Tuple)
def _encode_tuple(space: gs.Tuple, value: Any, path: str, arrays: bool) -> Any:
    _check_items(value, len(space.spaces), path, "a tuple")
    return [_encode(s, v, f"{path}[{i}]", arrays) for i, (s, v) in enumerate(zip(space.spaces, value))]


def _check_keys(space: gs.Dict, value: Any, path: str) -> None:
    if not isinstance(value, Mapping):
        raise _err(path, f"expected an object with keys {_short_list(space.spaces)}, got {_what(value)}")
    missing = [k for k in space.spaces if k not in value]
    extra = [k for k in value if k not in space.spaces]
    if missing or extra:
        problems = []
        if missing:
            problems.append(f"missing key(s) {_short_list(missing)}")
        if extra:
            problems.append(f"unexpected key(s) {_short_list(extra)}")
        raise _err(path, " and ".join(problems))


@_encode.register(gs.Dict)
def _encode_dict(space: gs.Dict, value: Any, path: str, arrays: bool) -> Any:
    _check_keys(space, value, path)
    return {k: _encode(s, value[k], _key_path(path, k), arrays) for k, s in space.spaces.items()}


def _check_length(value: Any, path: str, what: str = "a list") -> None:
    if not isinstance(value, (list, tuple)):
        raise _err(path, f"expected {what}, got {_what(value)}")
    if len(value) > MAX_SEQUENCE_LENGTH:
        raise _err(path, f"{len(value)} items exceed the limit of {MAX_SEQUENCE_LENGTH}")


def _encode_batched(space: gs.Space, value: Any, path: str, arrays: bool) -> Any:
    spec = _array_spec(space)
    if spec is not None:
        return _array_out(_to_array(value, spec[0], spec[1], path, batch=True), arrays)
    if isinstance(space, gs.Tuple):
        _check_items(value, len(space.spaces), path, "a tuple")
        return [_encode_batched(s, v, f"{path}[{i}]", arrays) for i, (s, v) in enumerate(zip(space.spaces, value))]
    if isinstance(space, gs.Dict):
        _check_keys(space, value, path)
        return {k: _encode_batched(s, value[k], _key_path(path, k), arrays) for k, s in space.spaces.items()}
    _check_length(value, path)
    return [_encode(space, v, f"{path}[{i}]", arrays) for i, v in enumerate(value)]


@_encode.register(gs.Sequence)
def _encode_sequence(space: gs.Sequence, value: Any, path: str, arrays: bool) -> Any:
    if space.stack:
        return _encode_batched(space.feature_space, value, path, arrays)
    _check_length(value, path, "a tuple")
    return [_encode(space.feature_space, v, f"{path}[{i}]", arrays) for i, v in enumerate(value)]


def _graph_parts(value: Any, path: str) -> tuple[Any, Any, Any]:
    if isinstance(value, Mapping):
        extra = [k for k in value if k not in ("nodes", "edges", "edge_links")]
        if extra:
            raise _err(path, f"unexpected key(s) {_short_list(extra)} in a graph")
        if "nodes" not in value:
            raise _err(path, "missing key 'nodes'")
        return value["nodes"], value.get("edges"), value.get("edge_links")
    if isinstance(value, GraphInstance):
        return value.nodes, value.edges, value.edge_links
    raise _err(path, f"expected a GraphInstance or an object with nodes, edges, edge_links, got {_what(value)}")


@_encode.register(gs.Graph)
def _encode_graph(space: gs.Graph, value: Any, path: str, arrays: bool) -> Any:
    nodes, edges, links = _graph_parts(value, path)
    out_nodes = _encode_batched(space.node_space, nodes, f"{path}.nodes", arrays)
    if edges is None and links is None:
        return {"nodes": out_nodes, "edges": None, "edge_links": None}
    if space.edge_space is None or edges is None or links is None:
        raise _err(
            path, "edges and edge_links must both be given (and the space must have an edge_space) or both be None"
        )
    out_edges = _encode_batched(space.edge_space, edges, f"{path}.edges", arrays)
    out_links = _to_array(links, np.dtype(np.int64), (2,), f"{path}.edge_links", batch=True, any_int=True)
    return {"nodes": out_nodes, "edges": out_edges, "edge_links": _array_out(out_links, arrays)}


@_encode.register(gs.OneOf)
def _encode_one_of(space: gs.OneOf, value: Any, path: str, arrays: bool) -> Any:
    _check_items(value, 2, path, "an (index, value) pair")
    index = _one_of_index(space, value[0], f"{path}[0]")
    return [index if arrays else int(index), _encode(space.spaces[int(index)], value[1], f"{path}[1]", arrays)]


def _one_of_index(space: gs.OneOf, x: Any, path: str) -> Any:
    if isinstance(x, (float, np.floating)):
        raise _err(path, f"expected a subspace index, got {float(x)!r}")
    index = _integer(x, path, "a subspace index")
    if not 0 <= int(index) < len(space.spaces):
        raise _err(path, f"subspace index {int(index)} is out of range (OneOf has {len(space.spaces)} subspaces)")
    return index


# ---------------------------------------------------------------------------------------------
# decode
# ---------------------------------------------------------------------------------------------


def decode(space: gs.Space, data: Any, *, path: str = "value") -> Any:
    """Convert wire data (from either encoding) to a value of ``space``.

    Box / MultiDiscrete / MultiBinary become ndarrays of the space's dtype and shape; an
    ndarray that already has them is returned as it is (zero-copy, possibly read-only), and
    so is a numpy scalar of the right dtype for a shape ``()`` Box (``Box.sample`` returns
    those for integer Boxes).
    Lists are checked first: non-numbers (including bools, None and strings in a numeric
    array), wrong lengths, ragged nesting and integers that would overflow the dtype are
    errors, never silent wraparound. Discrete gives a Python int for JSON data and keeps a
    numpy integer scalar as it is; floats with a fractional part, bools and strings are errors.
    Text gives a str, Tuple a tuple, Dict a dict in the space's key order (missing and extra
    keys are errors), Sequence a tuple (stacked: an ndarray, as ``Sequence.sample`` returns),
    Graph a :class:`~gymnasium.spaces.GraphInstance` (JSON edge_links decode to int32 like
    ``Graph.sample``'s), OneOf ``(index, value)``.

    Bounds are not checked (``space.contains`` does that); structure, dtype and shape are.
    Hostile input cannot make it build an array larger than the space's shape implies, and a
    Sequence longer than :data:`MAX_SEQUENCE_LENGTH` is an error. ``path`` names the value in
    error messages.

    Raises:
        SpaceValueError: if the data does not fit, naming the path of the offending item.

    Example::

        >>> from gymnasium import spaces
        >>> decode(spaces.Box(0, 255, shape=(2, 2), dtype=np.uint8), [[1, 2], [3, 4]])
        array([[1, 2],
               [3, 4]], dtype=uint8)
        >>> decode(spaces.Box(0, 255, shape=(2,), dtype=np.uint8), [1, 256], path="obs")
        Traceback (most recent call last):
        ...
        openenv_gym.errors.SpaceValueError: obs[1]: 256 is out of range for uint8 (0..255)
    """
    # The commonest values, as the general path below returns them, without its dispatch: an
    # ndarray of the space's own dtype and shape, and a Python int for a Discrete.
    kind = type(space)
    if type(data) is np.ndarray and kind in _ARRAY_SPACES and (data.dtype, data.shape) == (space.dtype, space.shape):
        return data
    if type(data) is int and kind is gs.Discrete:
        return data
    return _decode(space, data, path)


@functools.singledispatch
def _decode(space: Any, data: Any, path: str) -> Any:
    raise TypeError(
        f"{path}: cannot decode values of {type(space).__module__}.{type(space).__qualname__}; "
        f"supported space types are {_SUPPORTED}"
    )


@_decode.register(gs.Box)
@_decode.register(gs.MultiDiscrete)
@_decode.register(gs.MultiBinary)
def _decode_array(space: gs.Space, data: Any, path: str) -> Any:
    dtype, shape = _array_spec(space)  # type: ignore[misc]
    return _to_array(data, dtype, shape, path)


@_decode.register(gs.Discrete)
def _decode_discrete(space: gs.Discrete, data: Any, path: str) -> Any:
    return _integer(data, path)


@_decode.register(gs.Text)
def _decode_text(space: gs.Text, data: Any, path: str) -> Any:
    if not isinstance(data, str):
        raise _err(path, f"expected a string, got {_what(data)}")
    return str(data)


@_decode.register(gs.Tuple)
def _decode_tuple(space: gs.Tuple, data: Any, path: str) -> Any:
    _check_items(data, len(space.spaces), path, "a list")
    return tuple(_decode(s, x, f"{path}[{i}]") for i, (s, x) in enumerate(zip(space.spaces, data)))


@_decode.register(gs.Dict)
def _decode_dict(space: gs.Dict, data: Any, path: str) -> Any:
    _check_keys(space, data, path)
    return {k: _decode(s, data[k], _key_path(path, k)) for k, s in space.spaces.items()}


def _same_length(lengths: list[int | None], path: str) -> int | None:
    known = {n for n in lengths if n is not None}
    if len(known) > 1:
        raise _err(path, f"batched parts have different lengths {sorted(known)}")
    return known.pop() if known else None


def _decode_batched(space: gs.Space, data: Any, path: str) -> tuple[Any, int | None]:
    """Decode ``n`` values of ``space`` batched the way Gymnasium stacks them; returns (value, n)."""
    spec = _array_spec(space)
    if spec is not None:
        arr = _to_array(data, spec[0], spec[1], path, batch=True)
        return arr, arr.shape[0]
    if isinstance(space, gs.Tuple):
        _check_items(data, len(space.spaces), path, "a list")
        parts = [_decode_batched(s, x, f"{path}[{i}]") for i, (s, x) in enumerate(zip(space.spaces, data))]
        return tuple(p[0] for p in parts), _same_length([p[1] for p in parts], path)
    if isinstance(space, gs.Dict):
        _check_keys(space, data, path)
        decoded = {k: _decode_batched(s, data[k], _key_path(path, k)) for k, s in space.spaces.items()}
        return {k: v[0] for k, v in decoded.items()}, _same_length([v[1] for v in decoded.values()], path)
    _check_length(data, path)
    return tuple(_decode(space, x, f"{path}[{i}]") for i, x in enumerate(data)), len(data)


@_decode.register(gs.Sequence)
def _decode_sequence(space: gs.Sequence, data: Any, path: str) -> Any:
    if space.stack:
        return _decode_batched(space.feature_space, data, path)[0]
    _check_length(data, path)
    return tuple(_decode(space.feature_space, x, f"{path}[{i}]") for i, x in enumerate(data))


@_decode.register(gs.Graph)
def _decode_graph(space: gs.Graph, data: Any, path: str) -> Any:
    nodes, edges, links = _graph_parts(data, path)
    out_nodes, _ = _decode_batched(space.node_space, nodes, f"{path}.nodes")
    if edges is None and links is None:
        return GraphInstance(out_nodes, None, None)
    if space.edge_space is None:
        raise _err(path, "this graph space has no edge_space, so edges and edge_links must be null")
    if edges is None or links is None:
        raise _err(path, "edges and edge_links must both be null or both be given")
    out_edges, n_edges = _decode_batched(space.edge_space, edges, f"{path}.edges")
    out_links = _to_array(links, np.dtype(np.int32), (2,), f"{path}.edge_links", batch=True, any_int=True)
    if n_edges is not None and out_links.shape[0] != n_edges:
        raise _err(path, f"{n_edges} edges but {out_links.shape[0]} edge_links")
    return GraphInstance(out_nodes, out_edges, out_links)


@_decode.register(gs.OneOf)
def _decode_one_of(space: gs.OneOf, data: Any, path: str) -> Any:
    _check_items(data, 2, path, "an [index, value] pair")
    index = _one_of_index(space, data[0], f"{path}[0]")
    return index, _decode(space.spaces[int(index)], data[1], f"{path}[1]")


# ---------------------------------------------------------------------------------------------
# neutral values and membership
# ---------------------------------------------------------------------------------------------


def neutral(space: gs.Space) -> Any:
    """A fixed, harmless value of ``space``: what a field a server left out of an
    observation (with no schema default) stands for.

    Zero clipped into a Box's or MultiDiscrete's bounds, a Discrete's ``start``,
    the shortest string of a Text's first character (``""`` when allowed), empty
    Sequences and Graphs, and the same, element by element, inside Tuple and Dict.

        >>> neutral(gs.Dict({"n": gs.Discrete(3, start=1), "s": gs.Text(5, min_length=0)}))
        {'n': 1, 's': ''}

    A space may name its own (``neutral_value``: JSON text's is ``"null"``).
    """
    own = getattr(space, "neutral_value", None)
    if own is not None:
        return own
    if isinstance(space, gs.Box):
        return np.clip(np.zeros(space.shape, space.dtype), space.low, space.high).astype(space.dtype)
    if isinstance(space, gs.Discrete):
        return int(space.start)
    if isinstance(space, gs.MultiDiscrete):
        return np.asarray(space.start, dtype=space.dtype).copy()
    if isinstance(space, gs.MultiBinary):
        return np.zeros(space.shape, dtype=space.dtype)
    if isinstance(space, gs.Text):
        return space.character_list[0] * space.min_length if space.min_length else ""
    if isinstance(space, gs.Tuple):
        return tuple(neutral(s) for s in space.spaces)
    if isinstance(space, gs.Dict):
        return {k: neutral(s) for k, s in space.spaces.items()}
    if isinstance(space, gs.Sequence):
        return decode(space, [])
    if isinstance(space, gs.Graph):
        edges: list[Any] | None = None if space.edge_space is None else []
        return decode(space, {"nodes": [], "edges": edges, "edge_links": edges})
    if isinstance(space, gs.OneOf):
        return (0, neutral(space.spaces[0]))
    raise TypeError(f"no neutral value for {type(space).__name__}; supported: {_SUPPORTED}")


def contains(space: gs.Space, value: Any) -> bool:
    """``space.contains`` that answers ``False`` where some Gymnasium versions
    raise (an int too large for the space's dtype, for instance), with fast
    paths for the commonest actions: a Python int in a ``Discrete``, an
    ndarray in a ``Box`` or a ``MultiDiscrete`` (a batch of ``Discrete``
    actions), which servers check at every step.

        >>> contains(gs.Discrete(2), 10**30)
        False
        >>> contains(gs.MultiDiscrete([2, 2]), np.array([1, 2]))
        False
    """
    if type(value) is int and type(space) is gs.Discrete:
        return int(space.start) <= value < int(space.start) + int(space.n)
    if type(value) is np.ndarray:
        if type(space) is gs.Box:
            return _within(space, value, space.low, space.high)
        if type(space) is gs.MultiDiscrete:  # start + nvec - 1 fits the dtype: no overflow, unlike x - start
            return _within(space, value, space.start, space.start + (space.nvec - 1))
    try:
        return bool(space.contains(value))
    except (TypeError, ValueError, OverflowError):
        return False


def _within(space: gs.Box | gs.MultiDiscrete, value: np.ndarray, low: np.ndarray, high: np.ndarray) -> bool:
    """What Gymnasium's ``Box`` and ``MultiDiscrete`` ``contains`` answer for an
    ndarray (its shape, a dtype that casts safely to the space's, every entry
    from ``low`` to ``high``; NaN is not), with the array's own reductions:
    ``np.all`` costs more than the comparisons it reduces, and this runs at every step."""
    if value.shape != space.shape or not np.can_cast(value.dtype, space.dtype):
        return False
    return bool((value >= low).all() and (value <= high).all())
