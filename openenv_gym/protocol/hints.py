"""Exact types over JSON: values as JSON types, plus *type hints* to rebuild them.

JSON carries no numpy types and no tuples. For values without a space to
guide them (``info`` dicts), an openenv-gym peer on a JSON session adds type
hints beside the plain JSON value; an openenv-gym peer uses them to rebuild the
exact types, and a stock peer simply ignores them.

A hint mirrors the value: ``{"nd": dtype}`` for an ndarray sent as nested
lists (``{"nd": [dtype, shape]}`` for one with no items, whose shape ``[]`` does not
say: ``(0, 3)`` say), ``{"np": dtype}`` for a numpy scalar, ``{"py": "int"}`` for an int
sent as a JSON float (a reward), ``{"tuple": {index: hint}}`` for a tuple,
``{"dict": {key: hint}}`` / ``{"list": {index: hint}}`` for containers
holding hinted values. Values that JSON keeps exactly get none.

    >>> import numpy as np
    >>> info = {"pos": np.arange(2, dtype=np.int8), "pair": (1, "a")}
    >>> wire, hints = jsonable(info), type_hints(info)
    >>> wire, hints
    ({'pos': [0, 1], 'pair': [1, 'a']}, {'dict': {'pos': {'nd': '|i1'}, 'pair': {'tuple': {}}}})
    >>> apply_type_hints(wire, hints)
    {'pos': array([0, 1], dtype=int8), 'pair': (1, 'a')}

Which codec sends hints is the codec's decision
(:attr:`~openenv_gym.protocol.codecs.Codec.hints`).
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["ARRAY_DTYPES", "jsonable", "type_hints", "number_hint", "apply_type_hints"]

#: Array dtypes that travel (fixed-size numeric and bool; never object).
ARRAY_DTYPES = frozenset(
    np.dtype(name).str.lstrip("<>|=")
    for name in (
        "bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
        "float16", "float32", "float64", "complex64", "complex128",
    )
)


#: The types JSON carries as they are.
_PLAIN = frozenset({int, float, str, bool, type(None)})


def jsonable(value: Any) -> Any:
    """Convert numpy scalars and arrays (and tuples) inside ``value`` to JSON types.

    Used for ``info`` dicts and error payloads, which have no space to guide
    them. Values JSON cannot carry (objects, bytes) become their ``repr``, so
    nothing raises halfway through a reply; non-finite floats are kept (Python's
    json writes them as ``NaN``/``Infinity``, which every OpenEnv client reads).
    """
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        # A flat list of plain values (an Atari screen's 100,800 ints) is copied as it is.
        if all(type(v) in _PLAIN for v in value):
            return list(value)
        return [jsonable(v) for v in value]
    if isinstance(value, np.ndarray):
        if value.dtype.kind in "biuf" or value.dtype.kind == "U":
            return value.tolist()  # Python scalars, nested lists: JSON already
        return jsonable(value.tolist())  # nested lists of Python objects, or one (a 0-d array)
    if isinstance(value, np.generic):
        return jsonable(value.item())
    if isinstance(value, (bytes, bytearray)):
        return value.decode("latin-1")
    return repr(value)


def type_hints(value: Any) -> Any:
    """The type hints for ``value``, or ``None`` when JSON keeps it exactly."""
    if isinstance(value, np.ndarray):
        if value.dtype.str.lstrip("<>|=") not in ARRAY_DTYPES:
            return None
        return {"nd": [value.dtype.str, list(value.shape)] if value.size == 0 else value.dtype.str}
    if isinstance(value, np.generic):
        return {"np": value.dtype.str} if value.dtype.str.lstrip("<>|=") in ARRAY_DTYPES else None
    if isinstance(value, dict):
        inner = {str(k): h for k, v in value.items() if (h := type_hints(v)) is not None}
        return {"dict": inner} if inner else None
    if isinstance(value, (list, tuple)):
        inner = {str(i): h for i, v in enumerate(value) if (h := type_hints(v)) is not None}
        if isinstance(value, tuple):
            return {"tuple": inner}
        return {"list": inner} if inner else None
    return None


def number_hint(value: Any) -> Any:
    """The type hint for a number sent as a JSON float (rewards): ``None`` for a
    Python ``float``, ``{"py": "int"}`` for an int, ``{"np": dtype}`` for numpy."""
    if type(value) is float:
        return None
    if isinstance(value, np.generic):
        return type_hints(value)
    if isinstance(value, int) and not isinstance(value, bool):
        return {"py": "int"}
    return None


def apply_type_hints(value: Any, hints: Any) -> Any:
    """Rebuild exact types from a JSON value and its :func:`type_hints`.

    Hints that do not fit the value are ignored (they come from the peer and
    must never make decoding fail).
    """
    if not isinstance(hints, dict) or len(hints) != 1:
        return value
    ((kind, inner),) = hints.items()
    try:
        if kind == "py" and inner == "int" and isinstance(value, (int, float)):
            return int(value)
        if kind == "nd" and isinstance(inner, list) and len(inner) == 2:  # an empty array, with its shape
            dtype, shape = inner
            if value != [] or not isinstance(dtype, str) or dtype.lstrip("<>|=") not in ARRAY_DTYPES:
                return value
            if not isinstance(shape, list) or not all(type(n) is int and 0 <= n for n in shape):
                return value
            return np.zeros(tuple(shape), dtype=np.dtype(dtype)) if 0 in shape else value
        if kind in ("nd", "np") and isinstance(inner, str):
            if inner.lstrip("<>|=") not in ARRAY_DTYPES:
                return value
            array = np.asarray(value, dtype=np.dtype(inner))
            return array if kind == "nd" else array[()]
        if kind == "dict" and isinstance(value, dict) and isinstance(inner, dict):
            return {k: apply_type_hints(v, inner.get(k)) for k, v in value.items()}
        if kind in ("list", "tuple") and isinstance(value, list) and isinstance(inner, dict):
            items = [apply_type_hints(v, inner.get(str(i))) for i, v in enumerate(value)]
            return tuple(items) if kind == "tuple" else items
    except (TypeError, ValueError, OverflowError):
        return value
    return value
