"""Gymnasium spaces and their values on the wire.

This module is the single place that knows how a :class:`gymnasium.spaces.Space` and the
values in it look on the wire. Everything else (server, client, wire codecs) calls it.

* :func:`describe` / :func:`restore` turn a space into a lossless, JSON-able description and
  back, so an openenv-gym client recovers the server's exact spaces.
* :func:`to_json_schema` gives a standard JSON Schema (draft 2020-12) for the JSON encoding of
  the space's values, so stock OpenEnv tools and RFC 008 validators can check them. The exact
  description travels next to it under :data:`SCHEMA_EXTENSION_KEY`.
* :func:`encode` / :func:`decode` convert values to wire data and back, either as pure JSON
  types (``arrays=False``) or with ``np.ndarray`` leaves for the msgpack codec (``arrays=True``).
  :func:`decode` checks structure, dtype and shape (not bounds: ``space.contains`` does that)
  and raises :class:`SpaceValueError` naming the path of the offending item.
* :func:`infer_space` / :func:`infer_fields` map the plain pydantic JSON Schemas that stock
  OpenEnv servers publish to best-effort spaces.

Example::

    >>> import json
    >>> import numpy as np
    >>> from gymnasium import spaces
    >>> space = spaces.Dict([("pos", spaces.Box(-1.0, 1.0, shape=(3,))), ("n", spaces.Discrete(4, start=1))])
    >>> restore(json.loads(json.dumps(describe(space)))) == space
    True
    >>> wire = encode(space, {"pos": np.array([0.5, -0.25, 0.0], dtype=np.float32), "n": 2})
    >>> wire
    {'pos': [0.5, -0.25, 0.0], 'n': 2}
    >>> decode(space, wire)["pos"].dtype
    dtype('float32')
    >>> decode(space, {"pos": [0.5, "x", 0.0], "n": 2}, path="obs")
    Traceback (most recent call last):
    ...
    openenv_gym.spaces.SpaceValueError: obs["pos"][1]: expected a number, got str 'x'
"""

from __future__ import annotations

import copy
import functools
import json
import math
import re
import unicodedata
from collections.abc import Callable, Iterable, Mapping
from typing import Any, NamedTuple

import numpy as np
from gymnasium import spaces as gs
from gymnasium.spaces import GraphInstance

__all__ = [
    "FORMAT",
    "SCHEMA_EXTENSION_KEY",
    "MAX_SEQUENCE_LENGTH",
    "SpaceValueError",
    "describe",
    "restore",
    "to_json_schema",
    "encode",
    "decode",
    "InferredSpace",
    "infer_space",
    "infer_fields",
    "neutral",
    "contains",
]

FORMAT = "openenv-gym.space/1"
"""Version tag of the space description format produced by :func:`describe`."""

SCHEMA_EXTENSION_KEY = "x-openenv-gym-space"
"""Key under which ``{"format": FORMAT, "space": describe(space)}`` is embedded in a JSON Schema."""

MAX_SEQUENCE_LENGTH = 1_000_000
"""Longest Sequence (and stacked Sequence, Graph node/edge list) :func:`decode` accepts."""

MAX_DESCRIPTION_DEPTH = 64
"""Deepest nesting of spaces :func:`restore` accepts."""

MAX_BOX_ELEMENTS = 1 << 26
"""Largest Box / MultiDiscrete / MultiBinary (in elements) :func:`restore` builds.

Restoring allocates the bounds arrays, so a description must not be able to ask for gigabytes.
"""

MAX_NDIM = 32

INFERRED_TEXT_MAX_LENGTH = 65536
"""``max_length`` of the Text space inferred for a JSON Schema string without ``maxLength``."""

INFERRED_JSON_MAX_LENGTH = 1 << 20
"""``max_length`` of the Text space that carries values :func:`infer_space` does not understand."""

_SUPPORTED = "Box, Discrete, MultiDiscrete, MultiBinary, Text, Tuple, Dict, Sequence, Graph, OneOf"

_BOX_DTYPES: dict[str, np.dtype] = {
    name: np.dtype(name)
    for name in (
        "float16", "float32", "float64",
        "int8", "int16", "int32", "int64",
        "uint8", "uint16", "uint32", "uint64",
        "bool",
    )
}
_INT_DTYPES: dict[str, np.dtype] = {k: v for k, v in _BOX_DTYPES.items() if v.kind in "iu"}
_INT64 = np.iinfo(np.int64)


class SpaceValueError(ValueError):
    """Wire data (or a value) does not fit a space's structure, dtype or shape.

    The message starts with the path of the offending item inside the value, for example
    ``obs["pos"][2]: expected a number, got str 'x'``; the path alone is in :attr:`path`.
    """

    def __init__(self, message: str, path: str = "") -> None:
        super().__init__(message)
        self.path = path


def _err(path: str, problem: str) -> SpaceValueError:
    return SpaceValueError(f"{path}: {problem}", path)


def _key_path(path: str, key: Any) -> str:
    if isinstance(key, str):
        return f"{path}[{json.dumps(key, ensure_ascii=False)}]"
    return f"{path}[{key!r}]"


def _what(x: Any) -> str:
    """Short description of a value for error messages: its type and a truncated repr."""
    if isinstance(x, np.ndarray):
        return f"ndarray of dtype {x.dtype} and shape {x.shape}"
    r = repr(x)
    if len(r) > 40:
        r = r[:37] + "..."
    return f"{type(x).__name__} {r}"


def _short_list(items: Iterable[Any], limit: int = 10) -> str:
    items = list(items)
    text = ", ".join(repr(k) for k in items[:limit])
    return text + (f", ... ({len(items)} in all)" if len(items) > limit else "")


# ---------------------------------------------------------------------------------------------
# describe
# ---------------------------------------------------------------------------------------------


def describe(space: gs.Space) -> dict[str, Any]:
    """Return a lossless JSON-able description of ``space``.

    The description is a dict with a ``"type"`` key naming the space class and the fields
    that define it; :func:`restore` inverts it exactly (``restore(describe(s)) == s``, bounds
    bit for bit, dtypes included), for every Gymnasium space, arbitrarily nested.
    ``json.dumps(describe(s), allow_nan=False)`` always works: infinite Box bounds are the
    strings ``"inf"`` / ``"-inf"``, and a Box bound that is the same everywhere is stored once
    as a scalar. Dict keys keep their order because they are a list of ``[key, description]``
    pairs.

    Raises:
        TypeError: for space types (or Box dtypes) that have no description, naming it.

    Example::

        >>> from gymnasium import spaces
        >>> describe(spaces.Box(0.0, float("inf"), shape=(2,)))
        {'type': 'Box', 'dtype': 'float32', 'shape': [2], 'low': 0.0, 'high': 'inf'}
        >>> describe(spaces.Discrete(3, start=-1))
        {'type': 'Discrete', 'n': 3, 'start': -1, 'dtype': 'int64'}
    """
    return _describe(space, "space")


@functools.singledispatch
def _describe(space: Any, path: str) -> dict[str, Any]:
    raise TypeError(
        f"{path}: cannot describe {type(space).__module__}.{type(space).__qualname__}; "
        f"supported space types are {_SUPPORTED}"
    )


def _dtype_name(dtype: Any, allowed: Mapping[str, np.dtype], path: str, what: str) -> str:
    dt = np.dtype(dtype)
    if dt.name not in allowed or allowed[dt.name] != dt:
        raise TypeError(f"{path}: {what} dtype {dt} is not supported; supported dtypes are {', '.join(allowed)}")
    return dt.name


def _float_to_json(v: float) -> float | str:
    if math.isinf(v):
        return "inf" if v > 0 else "-inf"
    return float(v)


def _nest(flat: list[Any], shape: tuple[int, ...]) -> Any:
    if not shape:
        return flat[0]
    if len(shape) == 1:
        return list(flat)
    step = math.prod(shape[1:])
    return [_nest(flat[i * step : (i + 1) * step], shape[1:]) for i in range(shape[0])]


def _bound_to_json(values: np.ndarray, bounded: np.ndarray, inf: str) -> Any:
    kind = values.dtype.kind
    bounded = np.broadcast_to(np.asarray(bounded, dtype=bool), values.shape)

    def convert(v: Any, b: bool) -> Any:
        if kind == "f":
            return _float_to_json(v)
        if kind == "b":
            return int(v)
        return int(v) if b else inf

    if values.size:
        first = values.flat[0]
        uniform = bool(np.all(values == first)) and bool(np.all(bounded == bounded.flat[0]))
        if uniform and kind == "f":
            uniform = bool(np.all(np.signbit(values) == np.signbit(first)))
        if uniform:  # stored once as a scalar
            return convert(first.item(), bool(bounded.flat[0]))
    items = [convert(v, b) for v, b in zip(values.ravel().tolist(), bounded.ravel().tolist())]
    return _nest(items, values.shape)


@_describe.register(gs.Box)
def _describe_box(space: gs.Box, path: str) -> dict[str, Any]:
    name = _dtype_name(space.dtype, _BOX_DTYPES, path, "Box")
    return {
        "type": "Box",
        "dtype": name,
        "shape": [int(d) for d in space.shape],
        "low": _bound_to_json(space.low, space.bounded_below, "-inf"),
        "high": _bound_to_json(space.high, space.bounded_above, "inf"),
    }


@_describe.register(gs.Discrete)
def _describe_discrete(space: gs.Discrete, path: str) -> dict[str, Any]:
    name = _dtype_name(getattr(space, "dtype", np.int64), _INT_DTYPES, path, "Discrete")
    return {"type": "Discrete", "n": int(space.n), "start": int(space.start), "dtype": name}


@_describe.register(gs.MultiDiscrete)
def _describe_multi_discrete(space: gs.MultiDiscrete, path: str) -> dict[str, Any]:
    name = _dtype_name(space.dtype, _INT_DTYPES, path, "MultiDiscrete")
    start = getattr(space, "start", None)
    if start is None:
        start = np.zeros_like(space.nvec)
    return {
        "type": "MultiDiscrete",
        "nvec": np.asarray(space.nvec).tolist(),
        "start": np.asarray(start).tolist(),
        "dtype": name,
    }


@_describe.register(gs.MultiBinary)
def _describe_multi_binary(space: gs.MultiBinary, path: str) -> dict[str, Any]:
    n = space.n
    if isinstance(n, (int, np.integer)):
        return {"type": "MultiBinary", "n": int(n)}
    return {"type": "MultiBinary", "n": [int(x) for x in n]}


@_describe.register(gs.Text)
def _describe_text(space: gs.Text, path: str) -> dict[str, Any]:
    chars = getattr(space, "character_list", None)
    charset = "".join(chars) if chars is not None else "".join(sorted(space.character_set))
    return {
        "type": "Text",
        "min_length": int(space.min_length),
        "max_length": int(space.max_length),
        "charset": charset,
    }


@_describe.register(gs.Tuple)
def _describe_tuple(space: gs.Tuple, path: str) -> dict[str, Any]:
    return {
        "type": "Tuple",
        "spaces": [_describe(s, f"{path}.spaces[{i}]") for i, s in enumerate(space.spaces)],
    }


@_describe.register(gs.Dict)
def _describe_dict(space: gs.Dict, path: str) -> dict[str, Any]:
    pairs = []
    for key, sub in space.spaces.items():
        if not isinstance(key, str):
            raise TypeError(f"{path}: Dict keys must be str to go on the wire, got key {key!r}")
        pairs.append([key, _describe(sub, f"{path}.spaces[{key!r}]")])
    return {"type": "Dict", "spaces": pairs}


@_describe.register(gs.Sequence)
def _describe_sequence(space: gs.Sequence, path: str) -> dict[str, Any]:
    return {
        "type": "Sequence",
        "space": _describe(space.feature_space, f"{path}.feature_space"),
        "stack": bool(space.stack),
    }


@_describe.register(gs.Graph)
def _describe_graph(space: gs.Graph, path: str) -> dict[str, Any]:
    return {
        "type": "Graph",
        "node_space": _describe(space.node_space, f"{path}.node_space"),
        "edge_space": None if space.edge_space is None else _describe(space.edge_space, f"{path}.edge_space"),
    }


@_describe.register(gs.OneOf)
def _describe_one_of(space: gs.OneOf, path: str) -> dict[str, Any]:
    return {
        "type": "OneOf",
        "spaces": [_describe(s, f"{path}.spaces[{i}]") for i, s in enumerate(space.spaces)],
    }


# ---------------------------------------------------------------------------------------------
# restore
# ---------------------------------------------------------------------------------------------


def restore(description: Mapping[str, Any]) -> gs.Space:
    """Rebuild the space that :func:`describe` described.

    Also accepts the wrapper ``{"format": FORMAT, "space": description}`` that is embedded in
    JSON Schemas under :data:`SCHEMA_EXTENSION_KEY`.

    Raises:
        ValueError: if the description is malformed (unknown type, missing or extra field,
            wrong field type, inconsistent bounds, unsupported format version, too large or too
            deep); the message names the offending field, e.g. ``description["spaces"][1]["n"]``.

    Example::

        >>> restore({"type": "Discrete", "n": 3, "start": -1})
        Discrete(3, start=-1)
        >>> restore({"type": "Box", "dtype": "uint8", "shape": [2], "low": 0, "high": [255, 7]})
        Box(0, [255   7], (2,), uint8)
    """
    path = "description"
    if isinstance(description, Mapping) and "type" not in description and "space" in description:
        fmt = description.get("format")
        if fmt != FORMAT:
            raise ValueError(f"{path}['format']: unsupported space description format {fmt!r}, expected {FORMAT!r}")
        description = description["space"]
        path = "description['space']"
    return _restore(description, path, 0)


def _restore(d: Any, path: str, depth: int) -> gs.Space:
    if depth > MAX_DESCRIPTION_DEPTH:
        raise ValueError(f"{path}: spaces nested deeper than {MAX_DESCRIPTION_DEPTH} levels")
    if not isinstance(d, Mapping):
        raise ValueError(f"{path}: expected an object describing a space, got {_what(d)}")
    kind = d.get("type")
    entry = _RESTORERS.get(kind) if isinstance(kind, str) else None
    if entry is None:
        raise ValueError(f"{path}['type']: unknown space type {kind!r}; expected one of {_SUPPORTED}")
    fn, required, optional = entry
    missing = [k for k in required if k not in d]
    if missing:
        raise ValueError(f"{path}: {kind} description is missing {_short_list(missing)}")
    extra = [k for k in d if k != "type" and k not in required and k not in optional]
    if extra:
        raise ValueError(f"{path}: unexpected field(s) {_short_list(extra)} in {kind} description")
    return fn(d, path, depth)


def _construct(path: str, ctor: Callable[..., gs.Space], *args: Any, **kwargs: Any) -> gs.Space:
    try:
        return ctor(*args, **kwargs)
    except (TypeError, ValueError, AssertionError, OverflowError) as e:
        raise ValueError(f"{path}: invalid {ctor.__name__}: {e}") from e


def _int_field(d: Mapping[str, Any], key: str, path: str, minimum: int | None = None) -> int:
    v = d[key]
    if isinstance(v, bool) or not isinstance(v, int):
        raise ValueError(f"{path}[{key!r}]: expected an integer, got {_what(v)}")
    if minimum is not None and v < minimum:
        raise ValueError(f"{path}[{key!r}]: must be >= {minimum}, got {v}")
    return v


def _dtype_field(d: Mapping[str, Any], key: str, path: str, allowed: Mapping[str, np.dtype]) -> np.dtype:
    v = d[key]
    if not isinstance(v, str) or v not in allowed:
        raise ValueError(f"{path}[{key!r}]: unsupported dtype {v!r}; expected one of {', '.join(allowed)}")
    return allowed[v]


def _shape_field(v: Any, path: str) -> tuple[int, ...]:
    if not isinstance(v, list) or len(v) > MAX_NDIM:
        raise ValueError(f"{path}: expected a list of at most {MAX_NDIM} dimensions, got {_what(v)}")
    for i, dim in enumerate(v):
        if isinstance(dim, bool) or not isinstance(dim, int) or dim < 0:
            raise ValueError(f"{path}[{i}]: expected a non-negative integer, got {_what(dim)}")
    if math.prod(v) > MAX_BOX_ELEMENTS:
        raise ValueError(f"{path}: shape {tuple(v)} has more than {MAX_BOX_ELEMENTS} elements")
    return tuple(v)


def _walk_nested(x: Any, shape: tuple[int, ...], path: str, leaf: Callable[[Any, str], Any], out: list[Any]) -> None:
    if not shape:
        out.append(leaf(x, path))
        return
    if not isinstance(x, list):
        raise ValueError(f"{path}: expected a list of {shape[0]} items, got {_what(x)}")
    if len(x) != shape[0]:
        raise ValueError(f"{path}: expected {shape[0]} items, got {len(x)}")
    for i, item in enumerate(x):
        _walk_nested(item, shape[1:], f"{path}[{i}]", leaf, out)


def _nested_shape(x: Any, path: str) -> tuple[int, ...]:
    shape = []
    while isinstance(x, list):
        shape.append(len(x))
        if len(shape) > MAX_NDIM:
            raise ValueError(f"{path}: nested deeper than {MAX_NDIM} levels")
        if not x:
            break
        x = x[0]
    return tuple(shape)


_INF_MARK = object()


def _restore_bound(x: Any, dtype: np.dtype, shape: tuple[int, ...], path: str, inf: str) -> tuple[Any, np.ndarray | None]:
    """Parse a Box bound; returns (scalar or array, bounded-mask for int arrays with infinities)."""
    kind = dtype.kind

    def leaf(v: Any, p: str) -> Any:
        if kind == "f":
            if v in ("inf", "-inf"):
                return float(v)
            if isinstance(v, bool) or not isinstance(v, (int, float)):
                raise ValueError(f"{p}: expected a number or 'inf' / '-inf', got {_what(v)}")
            try:
                f = float(v)
            except OverflowError:
                raise ValueError(f"{p}: {v} is too large for {dtype}") from None
            if math.isnan(f):
                raise ValueError(f"{p}: NaN is not a valid Box bound")
            return f
        if kind == "b":
            if v not in (0, 1):
                raise ValueError(f"{p}: expected 0 or 1 for a bool Box bound, got {_what(v)}")
            return int(v)
        if v == inf:
            return _INF_MARK
        if isinstance(v, bool) or not isinstance(v, int):
            raise ValueError(f"{p}: expected an integer or {inf!r}, got {_what(v)}")
        info = np.iinfo(dtype)
        if not info.min <= v <= info.max:
            raise ValueError(f"{p}: {v} is out of range for {dtype} ({info.min}..{info.max})")
        return v

    if not isinstance(x, list):
        v = leaf(x, path)
        if v is _INF_MARK:
            return (math.inf if inf == "inf" else -math.inf), None
        return v, None
    flat: list[Any] = []
    _walk_nested(x, shape, path, leaf, flat)
    mask = None
    if kind in "iu" and any(v is _INF_MARK for v in flat):
        info = np.iinfo(dtype)
        fill = int(info.max if inf == "inf" else info.min)
        mask = np.array([v is not _INF_MARK for v in flat], dtype=bool).reshape(shape)
        flat = [fill if v is _INF_MARK else v for v in flat]
    try:
        with np.errstate(over="raise"):
            arr = np.array(flat, dtype=dtype).reshape(shape)
    except (FloatingPointError, OverflowError) as e:
        raise ValueError(f"{path}: a bound is out of range for {dtype}: {e}") from None
    return arr, mask


def _restore_box(d: Mapping[str, Any], path: str, depth: int) -> gs.Space:
    dtype = _dtype_field(d, "dtype", path, _BOX_DTYPES)
    shape = _shape_field(d["shape"], f"{path}['shape']")
    low, low_mask = _restore_bound(d["low"], dtype, shape, f"{path}['low']", "-inf")
    high, high_mask = _restore_bound(d["high"], dtype, shape, f"{path}['high']", "inf")
    box = _construct(path, gs.Box, low, high, shape=shape, dtype=dtype)
    # Integer Boxes remember which bounds were infinite (for sampling); restore that exactly.
    if low_mask is not None:
        box.bounded_below = low_mask
    if high_mask is not None:
        box.bounded_above = high_mask
    return box


def _restore_discrete(d: Mapping[str, Any], path: str, depth: int) -> gs.Space:
    n = _int_field(d, "n", path, minimum=1)
    start = _int_field(d, "start", path) if "start" in d else 0
    dtype = _dtype_field(d, "dtype", path, _INT_DTYPES) if "dtype" in d else np.dtype(np.int64)
    info = np.iinfo(dtype)
    if not (n <= info.max and info.min <= start and start + n - 1 <= info.max):
        raise ValueError(f"{path}: n={n}, start={start} do not fit dtype {dtype}")
    kwargs: dict[str, Any] = {"start": start}
    if dtype != np.int64:
        kwargs["dtype"] = dtype
    return _construct(path, gs.Discrete, n, **kwargs)


def _restore_int_array(x: Any, dtype: np.dtype, path: str, shape: tuple[int, ...] | None = None) -> np.ndarray:
    if shape is None:
        shape = _nested_shape(x, path)
    if math.prod(shape) > MAX_BOX_ELEMENTS:
        raise ValueError(f"{path}: more than {MAX_BOX_ELEMENTS} elements")
    info = np.iinfo(dtype)

    def leaf(v: Any, p: str) -> int:
        if isinstance(v, bool) or not isinstance(v, int):
            raise ValueError(f"{p}: expected an integer, got {_what(v)}")
        if not info.min <= v <= info.max:
            raise ValueError(f"{p}: {v} is out of range for {dtype}")
        return v

    flat: list[int] = []
    _walk_nested(x, shape, path, leaf, flat)
    return np.array(flat, dtype=dtype).reshape(shape)


def _restore_multi_discrete(d: Mapping[str, Any], path: str, depth: int) -> gs.Space:
    dtype = _dtype_field(d, "dtype", path, _INT_DTYPES) if "dtype" in d else np.dtype(np.int64)
    nvec = _restore_int_array(d["nvec"], dtype, f"{path}['nvec']")
    kwargs: dict[str, Any] = {"dtype": dtype}
    if "start" in d:
        start = _restore_int_array(d["start"], dtype, f"{path}['start']", nvec.shape)
        if np.any(start != 0):
            kwargs["start"] = start
    return _construct(path, gs.MultiDiscrete, nvec, **kwargs)


def _restore_multi_binary(d: Mapping[str, Any], path: str, depth: int) -> gs.Space:
    n = d["n"]
    if isinstance(n, list):
        shape = _shape_field(n, f"{path}['n']")
        if not shape or min(shape) < 1:
            raise ValueError(f"{path}['n']: expected a non-empty list of positive integers, got {n!r}")
        return _construct(path, gs.MultiBinary, list(shape))
    n = _int_field(d, "n", path, minimum=1)
    if n > MAX_BOX_ELEMENTS:
        raise ValueError(f"{path}['n']: more than {MAX_BOX_ELEMENTS} elements")
    return _construct(path, gs.MultiBinary, n)


def _restore_text(d: Mapping[str, Any], path: str, depth: int) -> gs.Space:
    min_length = _int_field(d, "min_length", path, minimum=0)
    max_length = _int_field(d, "max_length", path, minimum=0)
    charset = d["charset"]
    if not isinstance(charset, str):
        raise ValueError(f"{path}['charset']: expected a string of characters, got {_what(charset)}")
    return _construct(path, gs.Text, max_length, min_length=min_length, charset=charset)


def _restore_list(d: Mapping[str, Any], key: str, path: str, depth: int, nonempty: bool = False) -> list[gs.Space]:
    items = d[key]
    if not isinstance(items, list) or (nonempty and not items):
        raise ValueError(f"{path}[{key!r}]: expected a {'non-empty ' if nonempty else ''}list of space descriptions, got {_what(items)}")
    return [_restore(item, f"{path}[{key!r}][{i}]", depth + 1) for i, item in enumerate(items)]


def _restore_tuple(d: Mapping[str, Any], path: str, depth: int) -> gs.Space:
    return _construct(path, gs.Tuple, _restore_list(d, "spaces", path, depth))


def _restore_dict(d: Mapping[str, Any], path: str, depth: int) -> gs.Space:
    items = d["spaces"]
    if isinstance(items, Mapping):
        items = [[k, v] for k, v in items.items()]
    if not isinstance(items, list):
        raise ValueError(f"{path}['spaces']: expected a list of [key, description] pairs, got {_what(items)}")
    pairs: list[tuple[str, gs.Space]] = []
    seen: set[str] = set()
    for i, pair in enumerate(items):
        p = f"{path}['spaces'][{i}]"
        if not isinstance(pair, (list, tuple)) or len(pair) != 2 or not isinstance(pair[0], str):
            raise ValueError(f"{p}: expected a [key, description] pair with a string key, got {_what(pair)}")
        if pair[0] in seen:
            raise ValueError(f"{p}: duplicate key {pair[0]!r}")
        seen.add(pair[0])
        pairs.append((pair[0], _restore(pair[1], f"{p}[1]", depth + 1)))
    return _construct(path, gs.Dict, pairs)


def _restore_sequence(d: Mapping[str, Any], path: str, depth: int) -> gs.Space:
    stack = d.get("stack", False)
    if not isinstance(stack, bool):
        raise ValueError(f"{path}['stack']: expected true or false, got {_what(stack)}")
    feature = _restore(d["space"], f"{path}['space']", depth + 1)
    return _construct(path, gs.Sequence, feature, stack=stack)


def _restore_graph(d: Mapping[str, Any], path: str, depth: int) -> gs.Space:
    node = _restore(d["node_space"], f"{path}['node_space']", depth + 1)
    edge = d.get("edge_space")
    edge_space = None if edge is None else _restore(edge, f"{path}['edge_space']", depth + 1)
    return _construct(path, gs.Graph, node, edge_space)


def _restore_one_of(d: Mapping[str, Any], path: str, depth: int) -> gs.Space:
    return _construct(path, gs.OneOf, _restore_list(d, "spaces", path, depth, nonempty=True))


_RESTORERS: dict[str, tuple[Callable[[Mapping[str, Any], str, int], gs.Space], tuple[str, ...], tuple[str, ...]]] = {
    "Box": (_restore_box, ("dtype", "shape", "low", "high"), ()),
    "Discrete": (_restore_discrete, ("n",), ("start", "dtype")),
    "MultiDiscrete": (_restore_multi_discrete, ("nvec",), ("start", "dtype")),
    "MultiBinary": (_restore_multi_binary, ("n",), ()),
    "Text": (_restore_text, ("min_length", "max_length", "charset"), ()),
    "Tuple": (_restore_tuple, ("spaces",), ()),
    "Dict": (_restore_dict, ("spaces",), ()),
    "Sequence": (_restore_sequence, ("space",), ("stack",)),
    "Graph": (_restore_graph, ("node_space",), ("edge_space",)),
    "OneOf": (_restore_one_of, ("spaces",), ()),
}


# ---------------------------------------------------------------------------------------------
# JSON Schema
# ---------------------------------------------------------------------------------------------


def to_json_schema(space: gs.Space) -> dict[str, Any]:
    """Return a standard JSON Schema (draft 2020-12) for the JSON encoding of ``space``'s values.

    The schema describes what ``encode(space, value)`` produces (see :func:`encode`): Box,
    MultiDiscrete and MultiBinary values are nested arrays with ``minItems == maxItems`` per
    dimension (a Box of shape ``()`` is a bare number), with ``minimum`` / ``maximum`` when
    finite (the smallest low / largest high for per-element bounds); Discrete is a bounded
    integer; Text a string with ``minLength`` / ``maxLength``; Tuple an array with
    ``prefixItems``; Dict an object with every key required and no others; Sequence an array;
    Graph an object ``{nodes, edges, edge_links}``; OneOf a pair ``[index, value]``.
    It does not carry the exact description; callers add
    ``{SCHEMA_EXTENSION_KEY: {"format": FORMAT, "space": describe(space)}}`` next to it.

    Example::

        >>> from gymnasium import spaces
        >>> to_json_schema(spaces.Discrete(3, start=1))
        {'type': 'integer', 'minimum': 1, 'maximum': 3}
        >>> to_json_schema(spaces.Box(0, 255, shape=(2,), dtype=np.uint8))
        {'type': 'array', 'items': {'type': 'integer', 'minimum': 0, 'maximum': 255}, 'minItems': 2, 'maxItems': 2}
    """
    return _schema(space, "space")


@functools.singledispatch
def _schema(space: Any, path: str) -> dict[str, Any]:
    raise TypeError(
        f"{path}: no JSON Schema for {type(space).__module__}.{type(space).__qualname__}; "
        f"supported space types are {_SUPPORTED}"
    )


def _nd_schema(element: dict[str, Any], shape: tuple[int, ...]) -> dict[str, Any]:
    schema = element
    for dim in reversed(shape):
        schema = {"type": "array", "items": schema, "minItems": int(dim), "maxItems": int(dim)}
    return schema


def _box_element_schema(space: gs.Box) -> dict[str, Any]:
    kind = space.dtype.kind
    if kind == "b":
        return {"type": "boolean"}
    if kind in "iu":
        schema: dict[str, Any] = {"type": "integer"}
        if space.low.size:
            schema["minimum"] = int(space.low.min())
            schema["maximum"] = int(space.high.max())
        return schema
    schema = {"type": "number"}
    if space.low.size:
        lo, hi = float(space.low.min()), float(space.high.max())
        if math.isfinite(lo):
            schema["minimum"] = lo
        if math.isfinite(hi):
            schema["maximum"] = hi
    return schema


def _element_schema(space: gs.Space) -> tuple[dict[str, Any], tuple[int, ...]] | None:
    """Element schema and shape for spaces whose values are (or batch into) ndarrays."""
    if isinstance(space, gs.Box):
        return _box_element_schema(space), space.shape
    if isinstance(space, gs.Discrete):
        return {"type": "integer", "minimum": int(space.start), "maximum": int(space.start) + int(space.n) - 1}, ()
    if isinstance(space, gs.MultiDiscrete):
        start = np.asarray(getattr(space, "start", np.zeros_like(space.nvec)))
        schema: dict[str, Any] = {"type": "integer"}
        if space.nvec.size:
            schema["minimum"] = int(start.min())
            schema["maximum"] = int((start.astype(object) + space.nvec.astype(object) - 1).max())
        return schema, space.shape
    if isinstance(space, gs.MultiBinary):
        return {"type": "integer", "minimum": 0, "maximum": 1}, space.shape
    return None


@_schema.register(gs.Box)
@_schema.register(gs.Discrete)
@_schema.register(gs.MultiDiscrete)
@_schema.register(gs.MultiBinary)
def _schema_array(space: gs.Space, path: str) -> dict[str, Any]:
    element, shape = _element_schema(space)  # type: ignore[misc]
    return _nd_schema(element, shape)


@_schema.register(gs.Text)
def _schema_text(space: gs.Text, path: str) -> dict[str, Any]:
    return {"type": "string", "minLength": int(space.min_length), "maxLength": int(space.max_length)}


def _fixed_array_schema(items: list[dict[str, Any]]) -> dict[str, Any]:
    if not items:  # prefixItems must be non-empty
        return {"type": "array", "items": False, "maxItems": 0}
    return {"type": "array", "prefixItems": items, "items": False, "minItems": len(items), "maxItems": len(items)}


@_schema.register(gs.Tuple)
def _schema_tuple(space: gs.Tuple, path: str) -> dict[str, Any]:
    return _fixed_array_schema([_schema(s, f"{path}[{i}]") for i, s in enumerate(space.spaces)])


def _object_schema(properties: dict[str, Any]) -> dict[str, Any]:
    return {"type": "object", "properties": properties, "required": list(properties), "additionalProperties": False}


@_schema.register(gs.Dict)
def _schema_dict(space: gs.Dict, path: str) -> dict[str, Any]:
    return _object_schema({k: _schema(s, _key_path(path, k)) for k, s in space.spaces.items()})


def _batched_schema(space: gs.Space, path: str) -> dict[str, Any]:
    """Schema of ``n`` values of ``space`` batched the way Gymnasium stacks them."""
    element = _element_schema(space)
    if element is not None:
        items = _nd_schema(*element)
    elif isinstance(space, gs.Tuple):
        return _fixed_array_schema([_batched_schema(s, f"{path}[{i}]") for i, s in enumerate(space.spaces)])
    elif isinstance(space, gs.Dict):
        return _object_schema({k: _batched_schema(s, _key_path(path, k)) for k, s in space.spaces.items()})
    else:
        items = _schema(space, f"{path}[*]")
    return {"type": "array", "items": items, "maxItems": MAX_SEQUENCE_LENGTH}


@_schema.register(gs.Sequence)
def _schema_sequence(space: gs.Sequence, path: str) -> dict[str, Any]:
    if space.stack:
        return _batched_schema(space.feature_space, path)
    return {"type": "array", "items": _schema(space.feature_space, f"{path}[*]"), "maxItems": MAX_SEQUENCE_LENGTH}


@_schema.register(gs.Graph)
def _schema_graph(space: gs.Graph, path: str) -> dict[str, Any]:
    nodes = _batched_schema(space.node_space, f"{path}.nodes")
    if space.edge_space is None:
        edges: dict[str, Any] = {"type": "null"}
        links: dict[str, Any] = {"type": "null"}
    else:
        edges = {"anyOf": [_batched_schema(space.edge_space, f"{path}.edges"), {"type": "null"}]}
        pair = {"type": "array", "items": {"type": "integer", "minimum": 0}, "minItems": 2, "maxItems": 2}
        links = {"anyOf": [{"type": "array", "items": pair, "maxItems": MAX_SEQUENCE_LENGTH}, {"type": "null"}]}
    return _object_schema({"nodes": nodes, "edges": edges, "edge_links": links})


@_schema.register(gs.OneOf)
def _schema_one_of(space: gs.OneOf, path: str) -> dict[str, Any]:
    return {
        "oneOf": [
            _fixed_array_schema([{"const": i}, _schema(s, f"{path}[{i}]")]) for i, s in enumerate(space.spaces)
        ]
    }


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
        flat = [_norm_leaf(x, dtype, lambda i=i: _leaf_path(path, i, shape)) for i, x in enumerate(flat)]
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
    if not isinstance(data, (list, tuple)):
        raise _err(path, f"expected a list of {shape[dim]} items (array of shape {shape}), got {_what(data)}")
    if len(data) != shape[dim]:
        raise _err(path, f"expected {shape[dim]} items (array of shape {shape}), got {len(data)}")
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
            raise _err(_leaf_path(path, i, arr.shape), f"{flat[i]} is out of range for {dtype} ({info.min}..{info.max})")
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
    return _encode(space, value, path, arrays)


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
        raise _err(path, "edges and edge_links must both be given (and the space must have an edge_space) or both be None")
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
        openenv_gym.spaces.SpaceValueError: obs[1]: 256 is out of range for uint8 (0..255)
    """
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
# Inference from plain JSON Schemas (stock OpenEnv / pydantic)
# ---------------------------------------------------------------------------------------------


class InferredSpace(NamedTuple):
    """A best-effort Gymnasium space for a plain JSON Schema, with converters both ways."""

    space: gs.Space
    """The inferred space."""
    to_space: Callable[[Any], Any]
    """JSON value from the server -> value in :attr:`space` (raises SpaceValueError if it does not fit)."""
    to_json: Callable[[Any], Any]
    """Value in :attr:`space` -> JSON value to send (raises SpaceValueError if it does not fit)."""


class _Rule(NamedTuple):
    space: gs.Space
    to_space: Callable[[Any, str], Any]
    to_json: Callable[[Any, str], Any]
    kind: str  # discrete | number | integer | numeric_array | text | json | sequence | tuple | dict | other


@functools.lru_cache(maxsize=1)
def _permissive_charset() -> str:
    """Every printable BMP character, the Unicode space separators, and tab, newline, return."""
    return "".join(
        c
        for c in map(chr, range(0x10000))
        if c.isprintable() or c in "\t\n\r" or unicodedata.category(c) == "Zs"
    )


@functools.lru_cache(maxsize=1)
def _outside_charset() -> re.Pattern[str]:
    codes = sorted(map(ord, _permissive_charset()))
    ranges: list[tuple[int, int]] = []
    for c in codes:
        if ranges and ranges[-1][1] == c - 1:
            ranges[-1] = (ranges[-1][0], c)
        else:
            ranges.append((c, c))
    parts = "".join(
        re.escape(chr(a)) if a == b else f"{re.escape(chr(a))}-{re.escape(chr(b))}" for a, b in ranges
    )
    return re.compile(f"[^{parts}]")


@functools.lru_cache(maxsize=64)
def _text_prototype(min_length: int, max_length: int) -> gs.Text:
    return gs.Text(max_length, min_length=min_length, charset=_permissive_charset())


def _permissive_text(min_length: int, max_length: int) -> gs.Text:
    # Building a Text over ~55k characters takes tens of ms; a shallow copy of a never-sampled
    # prototype shares the immutable character tables and gets its own RNG on first use.
    return copy.copy(_text_prototype(min_length, max_length))


def _json_rule() -> _Rule:
    def to_space(v: Any, p: str) -> str:
        try:
            text = json.dumps(v, separators=(",", ":"), ensure_ascii=True)
        except (TypeError, ValueError) as e:
            raise _err(p, f"value is not JSON: {e}") from None
        if len(text) > INFERRED_JSON_MAX_LENGTH:
            raise _err(p, f"JSON text of {len(text)} characters exceeds the inferred limit of {INFERRED_JSON_MAX_LENGTH}")
        return text

    def to_json(v: Any, p: str) -> Any:
        if not isinstance(v, str):
            raise _err(p, f"expected JSON text, got {_what(v)}")
        try:
            return json.loads(v)
        except ValueError as e:
            raise _err(p, f"invalid JSON text: {e}") from None

    return _Rule(_permissive_text(0, INFERRED_JSON_MAX_LENGTH), to_space, to_json, "json")


def _enum_key(v: Any) -> Any:
    if isinstance(v, bool):
        return ("bool", v)
    if isinstance(v, (list, dict)):
        return ("json", json.dumps(v, sort_keys=True))
    return ("scalar", v)


def _enum_rule(values: list[Any]) -> _Rule:
    index: dict[Any, int] = {}
    for i, v in enumerate(values):
        try:
            index.setdefault(_enum_key(v), i)
        except TypeError:
            pass

    def to_space(v: Any, p: str) -> int:
        try:
            return index[_enum_key(v)]
        except (KeyError, TypeError):
            raise _err(p, f"{_what(v)} is not one of the allowed values {_short_list(values)}") from None

    def to_json(v: Any, p: str) -> Any:
        i = int(_integer(v, p))
        if not 0 <= i < len(values):
            raise _err(p, f"index {i} is out of range for {len(values)} allowed values")
        return copy.deepcopy(values[i])

    return _Rule(gs.Discrete(len(values)), to_space, to_json, "discrete")


def _bool_rule() -> _Rule:
    def to_space(v: Any, p: str) -> int:
        if not isinstance(v, (bool, np.bool_)):
            raise _err(p, f"expected a boolean, got {_what(v)}")
        return int(v)

    def to_json(v: Any, p: str) -> bool:
        i = int(_integer(v, p))
        if i not in (0, 1):
            raise _err(p, f"expected 0 or 1 for a boolean, got {i}")
        return bool(i)

    return _Rule(gs.Discrete(2), to_space, to_json, "discrete")


def _number(x: Any) -> float | None:
    return float(x) if isinstance(x, (int, float)) and not isinstance(x, bool) else None


def _bounds(schema: Mapping[str, Any]) -> tuple[float | None, bool, float | None, bool]:
    """(low, low_exclusive, high, high_exclusive) from minimum/maximum/exclusive*."""
    lo, hi = schema.get("minimum"), schema.get("maximum")
    lo = lo if _number(lo) is not None else None
    hi = hi if _number(hi) is not None else None
    lo_ex = hi_ex = False
    ex_lo, ex_hi = schema.get("exclusiveMinimum"), schema.get("exclusiveMaximum")
    if ex_lo is True and lo is not None:  # draft 4 spelling
        lo_ex = True
    elif _number(ex_lo) is not None and (lo is None or ex_lo >= lo):
        lo, lo_ex = ex_lo, True
    if ex_hi is True and hi is not None:
        hi_ex = True
    elif _number(ex_hi) is not None and (hi is None or ex_hi <= hi):
        hi, hi_ex = ex_hi, True
    return lo, lo_ex, hi, hi_ex


def _int_bounds(schema: Mapping[str, Any]) -> tuple[int | None, int | None]:
    lo, lo_ex, hi, hi_ex = _bounds(schema)
    ilo = ihi = None
    try:
        if lo is not None:
            ilo = math.floor(lo) + 1 if lo_ex else math.ceil(lo)
        if hi is not None:
            ihi = math.ceil(hi) - 1 if hi_ex else math.floor(hi)
    except (OverflowError, ValueError):
        return None, None
    return ilo, ihi


def _float_bounds(schema: Mapping[str, Any]) -> tuple[float, float]:
    lo, lo_ex, hi, hi_ex = _bounds(schema)
    try:
        flo = -math.inf if lo is None else float(lo)
        fhi = math.inf if hi is None else float(hi)
    except OverflowError:
        return -math.inf, math.inf
    if lo_ex:
        flo = math.nextafter(flo, math.inf)
    if hi_ex:
        fhi = math.nextafter(fhi, -math.inf)
    return flo, fhi


def _json_int(v: Any, p: str) -> int:
    i = int(_integer(v, p))
    return i


def _numeric_box(schema: Mapping[str, Any], shape: tuple[int, ...] = ()) -> gs.Box | None:
    """A Box for a plain "integer" / "number" item schema (bounds from the schema), else None."""
    if schema.get("type") == "number":
        lo, hi = _float_bounds(schema)
        dtype: Any = np.float64
    elif schema.get("type") == "integer":
        ilo, ihi = _int_bounds(schema)
        lo = -math.inf if ilo is None or ilo <= _INT64.min else min(ilo, _INT64.max)  # type: ignore[assignment]
        hi = math.inf if ihi is None or ihi >= _INT64.max else max(ihi, _INT64.min)  # type: ignore[assignment]
        dtype = np.int64
    else:
        return None
    try:
        return gs.Box(low=lo, high=hi, shape=shape, dtype=dtype)
    except (ValueError, TypeError):
        return None


def _scalar_box_rule(box: gs.Box) -> _Rule:
    is_int = box.dtype.kind in "iu"

    def to_space(v: Any, p: str) -> np.ndarray:
        return _to_array(v, box.dtype, (), p)

    def to_json(v: Any, p: str) -> Any:
        arr = _to_array(v, box.dtype, (), p)
        return int(arr) if is_int else float(arr)

    return _Rule(box, to_space, to_json, "integer" if is_int else "number")


def _int_rule(schema: Mapping[str, Any]) -> _Rule:
    lo, hi = _int_bounds(schema)
    if lo is not None and hi is not None:
        if lo > hi:
            return _json_rule()
        if _INT64.min <= lo and hi <= _INT64.max and hi - lo + 1 <= _INT64.max:
            def to_space(v: Any, p: str) -> int:
                return _json_int(v, p)

            def to_json(v: Any, p: str) -> int:
                return int(_integer(v, p))

            return _Rule(gs.Discrete(hi - lo + 1, start=lo), to_space, to_json, "discrete")
    box = _numeric_box(schema)
    return _json_rule() if box is None else _scalar_box_rule(box)


def _string_rule(schema: Mapping[str, Any]) -> _Rule:
    min_length = schema.get("minLength", 0)
    max_length = schema.get("maxLength", INFERRED_TEXT_MAX_LENGTH)
    if not isinstance(min_length, int) or isinstance(min_length, bool) or min_length < 0:
        min_length = 0
    if not isinstance(max_length, int) or isinstance(max_length, bool) or max_length < min_length:
        max_length = max(min_length, INFERRED_TEXT_MAX_LENGTH)
    outside = _outside_charset()

    def to_space(v: Any, p: str) -> str:
        if not isinstance(v, str):
            raise _err(p, f"expected a string, got {_what(v)}")
        s = outside.sub("\ufffd", v)[:max_length]
        if len(s) < min_length:
            raise _err(p, f"string of length {len(s)} is shorter than minLength {min_length}")
        return s

    def to_json(v: Any, p: str) -> str:
        if not isinstance(v, str):
            raise _err(p, f"expected a string, got {_what(v)}")
        return str(v)

    return _Rule(_permissive_text(min_length, max_length), to_space, to_json, "text")


def _nullable(inner: _Rule, schema: Mapping[str, Any]) -> _Rule:
    space = inner.space
    if inner.kind == "discrete":
        n, start = int(space.n), int(space.start)  # type: ignore[attr-defined]
        null = start + n

        def d_to_space(v: Any, p: str) -> Any:
            return null if v is None else inner.to_space(v, p)

        def d_to_json(v: Any, p: str) -> Any:
            return None if int(_integer(v, p)) == null else inner.to_json(v, p)

        return _Rule(gs.Discrete(n + 1, start=start), d_to_space, d_to_json, "other")
    if inner.kind == "number":
        def f_to_space(v: Any, p: str) -> Any:
            return np.array(np.nan) if v is None else inner.to_space(v, p)

        def f_to_json(v: Any, p: str) -> Any:
            out = inner.to_json(v, p)
            return None if math.isnan(out) else out

        return _Rule(space, f_to_space, f_to_json, "other")
    if inner.kind == "integer":
        box = gs.Box(low=-math.inf, high=space.high if space.bounded_above.all() else math.inf, shape=(), dtype=np.int64)  # type: ignore[attr-defined]
        sentinel = int(_INT64.min)

        def i_to_space(v: Any, p: str) -> Any:
            return np.array(sentinel, dtype=np.int64) if v is None else inner.to_space(v, p)

        def i_to_json(v: Any, p: str) -> Any:
            out = inner.to_json(v, p)
            return None if out == sentinel else out

        return _Rule(box, i_to_space, i_to_json, "other")
    if inner.kind == "text":
        def t_to_space(v: Any, p: str) -> Any:
            return "" if v is None else inner.to_space(v, p)

        def t_to_json(v: Any, p: str) -> Any:
            return None if v == "" else inner.to_json(v, p)

        return _Rule(space, t_to_space, t_to_json, "other")
    if inner.kind == "sequence":
        feature = space.feature_space  # type: ignore[attr-defined]
        if space.stack:  # type: ignore[attr-defined]
            def empty() -> Any:
                return np.zeros((0,) + tuple(feature.shape), dtype=feature.dtype)
        else:
            def empty() -> Any:
                return ()

        def s_to_space(v: Any, p: str) -> Any:
            return empty() if v is None else inner.to_space(v, p)

        def s_to_json(v: Any, p: str) -> Any:
            return None if len(v) == 0 else inner.to_json(v, p)

        return _Rule(space, s_to_space, s_to_json, "other")
    return _json_rule()


class _Ctx(NamedTuple):
    defs: Mapping[str, Any]


_MAX_INFER_DEPTH = 32


def _resolve(schema: Any, ctx: _Ctx, seen: frozenset[str]) -> tuple[Any, frozenset[str]] | None:
    """Follow local "$ref"s (and single-element allOf); None when a ref can't be resolved or recurses."""
    for _ in range(64):
        if not isinstance(schema, Mapping):
            return schema, seen
        if "$ref" in schema:
            ref = schema["$ref"]
            if not isinstance(ref, str):
                return None
            for prefix in ("#/$defs/", "#/definitions/"):
                if ref.startswith(prefix):
                    name = ref[len(prefix):].replace("~1", "/").replace("~0", "~")
                    break
            else:
                return None
            target = ctx.defs.get(name) if isinstance(ctx.defs, Mapping) else None
            if name in seen or not isinstance(target, Mapping):
                return None
            seen = seen | {name}
            schema = {**target, **{k: v for k, v in schema.items() if k != "$ref"}}
            continue
        all_of = schema.get("allOf")
        if isinstance(all_of, list) and len(all_of) == 1 and isinstance(all_of[0], Mapping):
            schema = {**{k: v for k, v in schema.items() if k != "allOf"}, **all_of[0]}
            continue
        return schema, seen
    return None


def _is_null(schema: Any, ctx: _Ctx, seen: frozenset[str]) -> bool:
    resolved = _resolve(schema, ctx, seen)
    if resolved is None or not isinstance(resolved[0], Mapping):
        return False
    s = resolved[0]
    return s.get("type") == "null" or s.get("enum") == [None] or ("const" in s and s["const"] is None)


def _infer(schema: Any, ctx: _Ctx, depth: int, seen: frozenset[str]) -> _Rule:
    if depth > _MAX_INFER_DEPTH:
        return _json_rule()
    resolved = _resolve(schema, ctx, seen)
    if resolved is None:
        return _json_rule()
    schema, seen = resolved
    if not isinstance(schema, Mapping):
        return _json_rule()

    if isinstance(schema.get("enum"), list) and schema["enum"]:
        return _enum_rule(list(schema["enum"]))
    if "const" in schema:
        return _enum_rule([schema["const"]])

    for key in ("anyOf", "oneOf"):
        members = schema.get(key)
        if not isinstance(members, list):
            continue
        rest = {k: v for k, v in schema.items() if k not in ("anyOf", "oneOf")}
        if len(members) == 1 and isinstance(members[0], Mapping):
            return _infer({**rest, **members[0]}, ctx, depth + 1, seen)
        if len(members) == 2:
            nulls = [_is_null(m, ctx, seen) for m in members]
            if nulls.count(True) == 1:
                other = members[nulls.index(False)]
                return _nullable(_infer(other, ctx, depth + 1, seen), schema)
        return _json_rule()

    t = schema.get("type")
    if isinstance(t, list):
        types = [x for x in t if x != "null"]
        if not types:
            return _enum_rule([None])
        if len(types) != 1:
            return _json_rule()
        inner = _infer({**schema, "type": types[0]}, ctx, depth + 1, seen)
        return _nullable(inner, schema) if "null" in t else inner
    if t is None:
        if isinstance(schema.get("properties"), Mapping):
            t = "object"
        elif "items" in schema or "prefixItems" in schema:
            t = "array"
    if t == "boolean":
        return _bool_rule()
    if t == "integer":
        return _int_rule(schema)
    if t == "number":
        box = _numeric_box(schema)
        return _json_rule() if box is None else _scalar_box_rule(box)
    if t == "string":
        return _string_rule(schema)
    if t == "null":
        return _enum_rule([None])
    if t == "array":
        return _array_rule(schema, ctx, depth, seen)
    if t == "object":
        props = schema.get("properties")
        if isinstance(props, Mapping) and props:
            return _dict_rule(props, (), ctx, depth, seen)
    return _json_rule()


def _array_rule(schema: Mapping[str, Any], ctx: _Ctx, depth: int, seen: frozenset[str]) -> _Rule:
    prefix = schema.get("prefixItems")
    items = schema.get("items", True)
    if prefix is None and isinstance(items, list):  # draft 4-7 tuple spelling
        prefix = items
    if isinstance(prefix, list):
        rules = [_infer(p, ctx, depth + 1, seen) for p in prefix]

        def t_to_space(v: Any, p: str) -> tuple[Any, ...]:
            _check_items(v, len(rules), p, "an array")
            return tuple(r.to_space(x, f"{p}[{i}]") for i, (r, x) in enumerate(zip(rules, v)))

        def t_to_json(v: Any, p: str) -> list[Any]:
            _check_items(v, len(rules), p, "a tuple")
            return [r.to_json(x, f"{p}[{i}]") for i, (r, x) in enumerate(zip(rules, v))]

        return _Rule(gs.Tuple([r.space for r in rules]), t_to_space, t_to_json, "tuple")

    n_min, n_max = schema.get("minItems"), schema.get("maxItems")
    fixed = (
        isinstance(n_min, int) and not isinstance(n_min, bool) and n_min == n_max and 0 <= n_min <= MAX_SEQUENCE_LENGTH
    )
    resolved = _resolve(items, ctx, seen)
    item_schema = resolved[0] if resolved is not None else None
    leaf = _numeric_box(item_schema) if isinstance(item_schema, Mapping) and not (
        "enum" in item_schema or "const" in item_schema
    ) else None
    inner = _scalar_box_rule(leaf) if leaf is not None else _infer(items, ctx, depth + 1, seen)

    if inner.kind in ("number", "integer", "numeric_array"):
        feature: gs.Box = inner.space  # type: ignore[assignment]
        dtype = feature.dtype
        if fixed and math.prod((n_min,) + feature.shape) <= MAX_BOX_ELEMENTS:
            lo = feature.low.flat[0] if feature.bounded_below.all() and feature.low.size else -math.inf
            hi = feature.high.flat[0] if feature.bounded_above.all() and feature.high.size else math.inf
            shape = (n_min,) + tuple(feature.shape)
            box = gs.Box(low=lo, high=hi, shape=shape, dtype=dtype)

            def a_to_space(v: Any, p: str) -> np.ndarray:
                return _to_array(v, dtype, shape, p)

            def a_to_json(v: Any, p: str) -> Any:
                return _to_array(v, dtype, shape, p).tolist()

            return _Rule(box, a_to_space, a_to_json, "numeric_array")

        fshape = tuple(feature.shape)

        def b_to_space(v: Any, p: str) -> np.ndarray:
            return _to_array(v, dtype, fshape, p, batch=True)

        def b_to_json(v: Any, p: str) -> Any:
            return _to_array(v, dtype, fshape, p, batch=True).tolist()

        return _Rule(gs.Sequence(feature, stack=True), b_to_space, b_to_json, "sequence")

    def s_to_space(v: Any, p: str) -> tuple[Any, ...]:
        _check_length(v, p, "an array")
        return tuple(inner.to_space(x, f"{p}[{i}]") for i, x in enumerate(v))

    def s_to_json(v: Any, p: str) -> list[Any]:
        _check_length(v, p, "a tuple")
        return [inner.to_json(x, f"{p}[{i}]") for i, x in enumerate(v)]

    return _Rule(gs.Sequence(inner.space), s_to_space, s_to_json, "sequence")


def _dict_rule(
    props: Mapping[str, Any], exclude: Iterable[str], ctx: _Ctx, depth: int, seen: frozenset[str]
) -> _Rule:
    excluded = set(exclude)
    rules = {k: _infer(s, ctx, depth + 1, seen) for k, s in props.items() if k not in excluded}
    defaults = {
        k: s["default"] for k, s in props.items() if k in rules and isinstance(s, Mapping) and "default" in s
    }

    def to_space(v: Any, p: str) -> dict[str, Any]:
        if not isinstance(v, Mapping):
            raise _err(p, f"expected an object, got {_what(v)}")
        out = {}
        for k, r in rules.items():
            if k in v:
                out[k] = r.to_space(v[k], _key_path(p, k))
            elif k in defaults:
                out[k] = r.to_space(copy.deepcopy(defaults[k]), _key_path(p, k))
            else:
                out[k] = neutral(r.space)
        return out

    def to_json(v: Any, p: str) -> dict[str, Any]:
        if not isinstance(v, Mapping):
            raise _err(p, f"expected a dict, got {_what(v)}")
        missing = [k for k in rules if k not in v]
        if missing:
            raise _err(p, f"missing key(s) {_short_list(missing)}")
        return {k: r.to_json(v[k], _key_path(p, k)) for k, r in rules.items()}

    return _Rule(gs.Dict([(k, r.space) for k, r in rules.items()]), to_space, to_json, "dict")


def _public(rule: _Rule) -> InferredSpace:
    def to_space(value: Any) -> Any:
        return rule.to_space(value, "value")

    def to_json(value: Any) -> Any:
        return rule.to_json(value, "value")

    return InferredSpace(rule.space, to_space, to_json)


def infer_space(schema: Mapping[str, Any], *, defs: Mapping[str, Any] | None = None) -> InferredSpace:
    """Infer a best-effort space for a plain JSON Schema (as stock OpenEnv servers publish).

    Stock servers publish pydantic JSON Schemas with no shapes or dtypes; this maps them to
    spaces a Gymnasium user can work with, plus converters: ``to_space`` (JSON value from the
    server -> value in ``space``, accepted by ``space.contains`` for data matching the schema,
    with the one exception noted for nullable numbers) and ``to_json`` (value in ``space`` ->
    JSON value to send). Local ``"$ref": "#/$defs/X"`` are resolved from ``defs`` (default:
    ``schema["$defs"]``); a single-element ``allOf`` is unwrapped. Rules, first match wins:

    * ``enum`` (or ``const``) of JSON values -> ``Discrete(len(values))``; the index stands for
      the value. ``{"type": "null"}`` is the one-value enum ``[None]``.
    * ``boolean`` -> ``Discrete(2)``; ``to_space`` gives 0 / 1, ``to_json`` gives False / True.
    * ``integer`` with both bounds (``minimum`` / ``maximum`` or ``exclusiveMinimum`` /
      ``exclusiveMaximum``) -> ``Discrete(high - low + 1, start=low)``, Python ints.
    * other ``integer`` -> ``Box(shape=(), dtype=int64)`` with the given bound(s) or the int64
      range; values are 0-d arrays.
    * ``number`` -> ``Box(shape=(), dtype=float64)``, ``-inf..inf`` or the given bounds
      (exclusive bounds move one ulp inward).
    * ``string`` -> ``Text(min_length=minLength or 0, max_length=maxLength or 65536)`` over a
      permissive shared charset: every printable character of the Basic Multilingual Plane,
      the Unicode space separators (e.g. no-break space), tab, newline and carriage return.
      ``to_space`` replaces characters outside it (controls, astral-plane characters such as
      emoji) with U+FFFD and truncates to ``max_length`` - both lossy, and the only way to keep
      every string inside the space.
    * ``array`` with ``prefixItems`` (or a list ``items``) -> ``Tuple`` of the items.
    * ``array`` of ``number`` / ``integer`` with ``minItems == maxItems`` -> ``Box`` of that
      length (float64 / int64, bounds from the item schema); nested fixed-length arrays give a
      multi-dimensional Box.
    * ``array`` of numbers, integers or fixed-length numeric arrays without a fixed length ->
      ``Sequence(Box(item shape), stack=True)``; values are ndarrays of shape ``(n, ...)``.
    * any other ``array`` -> ``Sequence(inferred item)``; values are tuples.
    * ``object`` with ``properties`` -> ``Dict`` over all of them, in order. ``to_space``
      fills a missing key from its ``default`` (error if there is none) and drops keys that
      are not properties.
    * ``anyOf`` / ``oneOf`` / ``type`` list of ``T`` and null (pydantic ``Optional[T]``) -> the
      space for ``T``, with null mapped to a neutral value and back: Discrete gets an extra last
      category meaning null; a number Box uses ``nan`` (which ``Box.contains`` rejects: the one
      exception to the guarantee above); an integer Box uses -2**63 (its low is widened to
      include it); Text uses ``""`` and a Sequence the empty sequence (so a genuine ``""`` /
      ``[]`` is sent back as null). Any other ``Optional`` falls through to the next rule.
    * anything else (objects with only ``additionalProperties`` or no properties, ``anyOf`` of
      unrelated types, unresolvable or recursive ``$ref``, ``{}``) -> ``Text`` holding the
      value as compact ASCII JSON text (lossless; ``to_space = json.dumps``,
      ``to_json = json.loads``), at most 1 MiB.

    Converters raise :class:`SpaceValueError` (naming the path) for data that does not fit.

    Example::

        >>> inferred = infer_space({"type": "object", "properties": {
        ...     "move": {"enum": ["UP", "DOWN"]}, "speed": {"type": "integer", "minimum": 1, "maximum": 3}}})
        >>> inferred.space
        Dict('move': Discrete(2), 'speed': Discrete(3, start=1))
        >>> inferred.to_space({"move": "DOWN", "speed": 2})
        {'move': 1, 'speed': 2}
        >>> inferred.to_json({"move": 0, "speed": 3})
        {'move': 'UP', 'speed': 3}
    """
    if not isinstance(schema, Mapping):
        raise TypeError(f"expected a JSON Schema object (dict), got {_what(schema)}")
    if defs is None:
        defs = schema.get("$defs") or schema.get("definitions") or {}
    return _public(_infer(schema, _Ctx(defs), 0, frozenset()))


def infer_fields(
    object_schema: Mapping[str, Any],
    *,
    exclude: Iterable[str] = (),
    defs: Mapping[str, Any] | None = None,
) -> InferredSpace:
    """Infer a ``Dict`` space from an object schema's properties, leaving out ``exclude``.

    The client uses it for stock OpenEnv observations (``exclude=("done", "reward",
    "metadata")``) and actions (``exclude=("metadata",)``). Property rules are those of
    :func:`infer_space`; a top-level ``"$ref"`` is resolved. ``to_space`` ignores the excluded
    keys (and any other unknown key) in the server's JSON; ``to_json`` emits only the fields.

    Raises:
        ValueError: if the schema is not an object schema.

    Example::

        >>> schema = {"type": "object", "properties": {"done": {"type": "boolean"}, "count": {"type": "integer"}}}
        >>> fields = infer_fields(schema, exclude=("done",))
        >>> fields.space
        Dict('count': Box(-9223372036854775808, 9223372036854775807, (), int64))
        >>> fields.to_space({"done": False, "count": 3})
        {'count': array(3)}
    """
    if not isinstance(object_schema, Mapping):
        raise TypeError(f"expected a JSON Schema object (dict), got {_what(object_schema)}")
    if defs is None:
        defs = object_schema.get("$defs") or object_schema.get("definitions") or {}
    ctx = _Ctx(defs)
    resolved = _resolve(object_schema, ctx, frozenset())
    if resolved is None or not isinstance(resolved[0], Mapping):
        raise ValueError("object_schema: cannot resolve its $ref")
    schema, seen = resolved
    props = schema.get("properties", {})
    if schema.get("type", "object") != "object" or not isinstance(props, Mapping):
        raise ValueError(f"object_schema: expected an object schema with properties, got type {schema.get('type')!r}")
    return _public(_dict_rule(props, exclude, ctx, 0, seen))


def neutral(space: gs.Space) -> Any:
    """A fixed, harmless value of ``space``: what a field a server left out of an
    observation (with no schema default) stands for.

    Zero clipped into a Box's or MultiDiscrete's bounds, a Discrete's ``start``,
    the shortest string of a Text's first character (``""`` when allowed), empty
    Sequences and Graphs, and the same, element by element, inside Tuple and Dict.

        >>> neutral(gs.Dict({"n": gs.Discrete(3, start=1), "s": gs.Text(5, min_length=0)}))
        {'n': 1, 's': ''}
    """
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
        edges = None if space.edge_space is None else []
        return decode(space, {"nodes": [], "edges": edges, "edge_links": edges})
    if isinstance(space, gs.OneOf):
        return (0, neutral(space.spaces[0]))
    raise TypeError(f"no neutral value for {type(space).__name__}; supported: {_SUPPORTED}")


def contains(space: gs.Space, value: Any) -> bool:
    """``space.contains`` that answers ``False`` where some Gymnasium versions
    raise (an int too large for the space's dtype, for instance), with a fast
    path for the commonest action of all, a Python int in a ``Discrete``.

        >>> contains(gs.Discrete(2), 10**30)
        False
    """
    if type(value) is int and type(space) is gs.Discrete:
        return int(space.start) <= value < int(space.start) + int(space.n)
    try:
        return bool(space.contains(value))
    except (TypeError, ValueError, OverflowError):
        return False
