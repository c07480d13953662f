"""Reading the plain JSON Schemas that stock OpenEnv servers publish: local ``$ref`` s followed,
nulls told apart, numeric bounds in every spelling.

What :func:`~openenv_gym.spaces.infer_space` and :func:`~openenv_gym.spaces.random_json`
ask of a schema before they choose a space or a value for it. :func:`_resolve` follows
``"$ref": "#/$defs/X"`` (and a single-element ``allOf``) through :class:`_Ctx`'s definitions,
and gives up on a ``$ref`` it cannot resolve or one that recurses; the bounds read
``minimum`` / ``maximum`` and both spellings of the exclusive ones (draft 4's flags, later
drafts' numbers).

    >>> ctx = _Ctx({"Move": {"enum": ["UP", "DOWN"]}})
    >>> _resolve({"$ref": "#/$defs/Move"}, ctx, frozenset())
    ({'enum': ['UP', 'DOWN']}, frozenset({'Move'}))
    >>> _int_bounds({"type": "integer", "exclusiveMinimum": 0, "maximum": 9})
    (1, 9)
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, NamedTuple

import numpy as np

_INT64 = np.iinfo(np.int64)


class _Ctx(NamedTuple):
    defs: Mapping[str, Any]


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
