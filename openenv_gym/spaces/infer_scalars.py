"""The rules :func:`~openenv_gym.spaces.infer_space` follows for a schema of one value: an
``enum`` or ``const``, a boolean, an integer, a number, a string, and the fallback for what
no space fits (JSON text).

A rule (:class:`_Rule`) is a space with its two converters, ``to_space(json_value, path)``
and ``to_json(value, path)``, each raising :class:`~openenv_gym.spaces.SpaceValueError`
that names the path, and its ``kind``, which tells the rules built on it
(:mod:`~openenv_gym.spaces.infer_composites`) how to add null to it or stack it into an
array.

    >>> rule = _int_rule({"type": "integer", "minimum": 1, "maximum": 3})
    >>> rule.space, rule.kind, rule.to_space(2, "value")
    (Discrete(3, start=1), 'discrete', 2)
"""

from __future__ import annotations

import copy
import json
import math
from collections.abc import Callable, Mapping
from typing import Any, NamedTuple

import numpy as np
from gymnasium import spaces as gs

from ._common import _err, _short_list, _what
from .inferred_spaces import (
    INFERRED_JSON_MAX_LENGTH,
    INFERRED_TEXT_MAX_LENGTH,
    _json_text,
    _outside_charset,
    _permissive_text,
)
from .schema_reading import _INT64, _Ctx, _float_bounds, _int_bounds
from .values import _integer, _to_array


class _Rule(NamedTuple):
    space: gs.Space
    to_space: Callable[[Any, str], Any]
    to_json: Callable[[Any, str], Any]
    kind: str  # discrete | number | integer | numeric_array | text | json | sequence | tuple | dict | other


def _json_rule(schema: Mapping[str, Any] | None = None, ctx: _Ctx | None = None) -> _Rule:
    def to_space(v: Any, p: str) -> str:
        try:
            text = json.dumps(v, separators=(",", ":"), ensure_ascii=True)
        except (TypeError, ValueError) as e:
            raise _err(p, f"value is not JSON: {e}") from None
        if len(text) > INFERRED_JSON_MAX_LENGTH:
            raise _err(
                p, f"JSON text of {len(text)} characters exceeds the inferred limit of {INFERRED_JSON_MAX_LENGTH}"
            )
        return text

    def to_json(v: Any, p: str) -> Any:
        if not isinstance(v, str):
            raise _err(p, f"expected JSON text, got {_what(v)}")
        try:
            return json.loads(v)
        except ValueError as e:
            raise _err(p, f"invalid JSON text: {e}") from None

    space = _json_text(schema if isinstance(schema, Mapping) else {}, ctx.defs if ctx is not None else {})
    return _Rule(space, to_space, to_json, "json")


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
        lo = -math.inf if ilo is None or ilo <= _INT64.min else min(ilo, _INT64.max)
        hi = math.inf if ihi is None or ihi >= _INT64.max else max(ihi, _INT64.min)
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
            return _json_rule(schema)
        if _INT64.min <= lo and hi <= _INT64.max and hi - lo + 1 <= _INT64.max:
            def to_space(v: Any, p: str) -> int:
                return _json_int(v, p)

            def to_json(v: Any, p: str) -> int:
                return int(_integer(v, p))

            return _Rule(gs.Discrete(hi - lo + 1, start=lo), to_space, to_json, "discrete")
    box = _numeric_box(schema)
    return _json_rule(schema) if box is None else _scalar_box_rule(box)


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
