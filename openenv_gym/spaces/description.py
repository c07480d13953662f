"""Lossless JSON descriptions of Gymnasium spaces: :func:`describe` and :func:`restore`.

An openenv-gym server publishes ``describe(space)`` for its spaces (tagged with
:data:`FORMAT` in its JSON Schemas); the client calls :func:`restore` on it and gets the
server's exact spaces back, dtypes and bounds bit for bit. A description comes from the
network, so :func:`restore` checks every field and refuses descriptions that are too large
or too deep (:data:`MAX_BOX_ELEMENTS`, :data:`MAX_NDIM`, :data:`MAX_DESCRIPTION_DEPTH`), and
bounds within a :class:`BoundsBudget` what the spaces it builds may allocate.

Example::

    >>> import json
    >>> from gymnasium import spaces
    >>> space = spaces.Tuple([spaces.Discrete(3), spaces.MultiBinary([2, 2])])
    >>> restore(json.loads(json.dumps(describe(space)))) == space
    True
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Mapping
from typing import Any, cast

import numpy as np
from gymnasium import spaces as gs

from ._common import _SUPPORTED, _short_list, _what

__all__ = ["FORMAT", "MAX_DESCRIPTION_DEPTH", "MAX_BOX_ELEMENTS", "MAX_NDIM", "BoundsBudget", "describe", "restore"]

FORMAT = "openenv-gym.space/1"
"""Version tag of the space description format produced by :func:`describe`."""

MAX_DESCRIPTION_DEPTH = 64
"""Deepest nesting of spaces :func:`restore` accepts."""

MAX_BOX_ELEMENTS = 1 << 26
"""Largest Box / MultiDiscrete / MultiBinary (in elements) :func:`restore` builds.

Restoring allocates the bounds arrays, so a description must not be able to ask for gigabytes.
"""

MAX_NDIM = 32
"""Most dimensions :func:`restore` accepts in a shape or in nested lists of bounds."""

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


class BoundsBudget:
    """The most bytes the bounds of restored spaces may take together: a ``Box``'s ``low``
    and ``high``, a ``MultiDiscrete``'s ``nvec`` and ``start``, each an array of the space's
    shape and dtype.

    A description of a few hundred bytes can declare a ``Box`` of gigabytes within
    :data:`MAX_BOX_ELEMENTS`, and :func:`restore` allocates its bounds. A client passes one
    budget to every :func:`restore` of a server's spaces, so that together they stay within
    it; ``limit`` names the limit in the error (the option that raises it).

        >>> budget = BoundsBudget(1 << 20, "max_message_bytes")
        >>> box = {"type": "Box", "dtype": "float64", "shape": [4096, 4096], "low": 0, "high": 1}
        >>> restore(box, budget=budget)  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        ValueError: description: the bounds of a Box ... take 268,435,456 bytes, over the limit of 1,048,576 ...
    """

    def __init__(self, max_bytes: int, limit: str = "max_bytes") -> None:
        self.max_bytes = max_bytes
        self.limit = limit
        #: Bytes of bounds the spaces restored so far take.
        self.spent = 0

    def spend(self, nbytes: int, path: str, what: str) -> None:
        """Count the ``nbytes`` of bounds of ``what`` (at ``path``), before they are
        allocated; ``ValueError`` when they would take the total past the budget."""
        if self.spent + nbytes > self.max_bytes:
            before = f" (after {self.spent:,} for the spaces before it)" if self.spent else ""
            raise ValueError(
                f"{path}: the bounds of {what} take {nbytes:,} bytes{before}, over the limit of "
                f"{self.max_bytes:,} bytes ({self.limit})"
            )
        self.spent += nbytes


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


def restore(description: Mapping[str, Any], *, budget: BoundsBudget | None = None) -> gs.Space:
    """Rebuild the space that :func:`describe` described.

    Also accepts the wrapper ``{"format": FORMAT, "space": description}`` that is embedded in
    JSON Schemas under :data:`SCHEMA_EXTENSION_KEY`. ``budget`` bounds the bytes its bounds
    arrays may take (with those of the other spaces restored with the same budget); without
    one, only :data:`MAX_BOX_ELEMENTS` bounds them.

    Raises:
        ValueError: if the description is malformed (unknown type, missing or extra field,
            wrong field type, inconsistent bounds, unsupported format version, too large or too
            deep, bounds past the budget); the message names the offending field, e.g.
            ``description["spaces"][1]["n"]``.

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
            raise ValueError(
                f"{path}['format']: unsupported space description format {fmt!r}, expected {FORMAT!r} "
                f"(upgrade openenv-gym on one side)"
            )
        description = description["space"]
        path = "description['space']"
    return _restore(description, path, 0, budget)


def _restore(d: Any, path: str, depth: int, budget: BoundsBudget | None) -> gs.Space:
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
    return fn(d, path, depth, budget)


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


def _restore_bound(
    x: Any, dtype: np.dtype, shape: tuple[int, ...], path: str, inf: str
) -> tuple[Any, np.ndarray | None]:
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


def _restore_box(d: Mapping[str, Any], path: str, depth: int, budget: BoundsBudget | None) -> gs.Space:
    dtype = _dtype_field(d, "dtype", path, _BOX_DTYPES)
    shape = _shape_field(d["shape"], f"{path}['shape']")
    if budget is not None:
        budget.spend(2 * math.prod(shape) * dtype.itemsize, path, f"a Box of shape {shape} and dtype {dtype}")
    low, low_mask = _restore_bound(d["low"], dtype, shape, f"{path}['low']", "-inf")
    high, high_mask = _restore_bound(d["high"], dtype, shape, f"{path}['high']", "inf")
    box = cast(gs.Box, _construct(path, gs.Box, low, high, shape=shape, dtype=dtype))
    # Integer Boxes remember which bounds were infinite (for sampling); restore that exactly.
    if low_mask is not None:
        box.bounded_below = low_mask
    if high_mask is not None:
        box.bounded_above = high_mask
    return box


def _restore_discrete(d: Mapping[str, Any], path: str, depth: int, budget: BoundsBudget | None) -> gs.Space:
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


def _restore_multi_discrete(d: Mapping[str, Any], path: str, depth: int, budget: BoundsBudget | None) -> gs.Space:
    dtype = _dtype_field(d, "dtype", path, _INT_DTYPES) if "dtype" in d else np.dtype(np.int64)
    if budget is not None:
        shape = _nested_shape(d["nvec"], f"{path}['nvec']")
        budget.spend(2 * math.prod(shape) * dtype.itemsize, path, f"a MultiDiscrete of shape {shape} and dtype {dtype}")
    nvec = _restore_int_array(d["nvec"], dtype, f"{path}['nvec']")
    kwargs: dict[str, Any] = {"dtype": dtype}
    if "start" in d:
        start = _restore_int_array(d["start"], dtype, f"{path}['start']", nvec.shape)
        if np.any(start != 0):
            kwargs["start"] = start
    return _construct(path, gs.MultiDiscrete, nvec, **kwargs)


def _restore_multi_binary(d: Mapping[str, Any], path: str, depth: int, budget: BoundsBudget | None) -> gs.Space:
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


def _restore_text(d: Mapping[str, Any], path: str, depth: int, budget: BoundsBudget | None) -> gs.Space:
    min_length = _int_field(d, "min_length", path, minimum=0)
    max_length = _int_field(d, "max_length", path, minimum=0)
    charset = d["charset"]
    if not isinstance(charset, str):
        raise ValueError(f"{path}['charset']: expected a string of characters, got {_what(charset)}")
    return _construct(path, gs.Text, max_length, min_length=min_length, charset=charset)


def _restore_list(
    d: Mapping[str, Any], key: str, path: str, depth: int, budget: BoundsBudget | None, nonempty: bool = False
) -> list[gs.Space]:
    items = d[key]
    if not isinstance(items, list) or (nonempty and not items):
        what = f"{'non-empty ' if nonempty else ''}list of space descriptions"
        raise ValueError(f"{path}[{key!r}]: expected a {what}, got {_what(items)}")
    return [_restore(item, f"{path}[{key!r}][{i}]", depth + 1, budget) for i, item in enumerate(items)]


def _restore_tuple(d: Mapping[str, Any], path: str, depth: int, budget: BoundsBudget | None) -> gs.Space:
    return _construct(path, gs.Tuple, _restore_list(d, "spaces", path, depth, budget))


def _restore_dict(d: Mapping[str, Any], path: str, depth: int, budget: BoundsBudget | None) -> gs.Space:
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
        pairs.append((pair[0], _restore(pair[1], f"{p}[1]", depth + 1, budget)))
    return _construct(path, gs.Dict, pairs)


def _restore_sequence(d: Mapping[str, Any], path: str, depth: int, budget: BoundsBudget | None) -> gs.Space:
    stack = d.get("stack", False)
    if not isinstance(stack, bool):
        raise ValueError(f"{path}['stack']: expected true or false, got {_what(stack)}")
    feature = _restore(d["space"], f"{path}['space']", depth + 1, budget)
    return _construct(path, gs.Sequence, feature, stack=stack)


def _restore_graph(d: Mapping[str, Any], path: str, depth: int, budget: BoundsBudget | None) -> gs.Space:
    node = _restore(d["node_space"], f"{path}['node_space']", depth + 1, budget)
    edge = d.get("edge_space")
    edge_space = None if edge is None else _restore(edge, f"{path}['edge_space']", depth + 1, budget)
    return _construct(path, gs.Graph, node, edge_space)


def _restore_one_of(d: Mapping[str, Any], path: str, depth: int, budget: BoundsBudget | None) -> gs.Space:
    return _construct(path, gs.OneOf, _restore_list(d, "spaces", path, depth, budget, nonempty=True))


_Restorer = Callable[[Mapping[str, Any], str, int, "BoundsBudget | None"], gs.Space]
_RESTORERS: dict[str, tuple[_Restorer, tuple[str, ...], tuple[str, ...]]] = {
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
