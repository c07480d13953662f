"""The rules :func:`~openenv_gym.spaces.infer_space` builds from the rules of the schemas
inside a schema: unions (``anyOf`` / ``oneOf``, a ``type`` list), ``Optional`` values (one
type or null), arrays (a ``Tuple``, a ``Box``, a ``Sequence``) and objects (a ``Dict``).

The member rules come from the driver (:mod:`~openenv_gym.spaces.infer`), as a
``member(schema) -> _Rule`` that infers one level deeper, so that these rules know nothing
of depth limits and the driver is the one place that recurses.

    >>> from openenv_gym.spaces.infer_scalars import _bool_rule
    >>> rule = _nullable(_bool_rule(), {"type": ["boolean", "null"]})
    >>> rule.space, rule.to_space(None, "value"), rule.to_json(2, "value")
    (Discrete(3), 2, None)
"""

from __future__ import annotations

import copy
import math
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import numpy as np
from gymnasium import spaces as gs

from ._common import _err, _key_path, _short_list, _what
from .description import MAX_BOX_ELEMENTS
from .infer_scalars import _enum_rule, _json_rule, _numeric_box, _Rule, _scalar_box_rule
from .inferred_spaces import NullableBox
from .schema_reading import _INT64, _Ctx, _is_null, _resolve
from .values import MAX_SEQUENCE_LENGTH, _check_items, _check_length, _integer, _to_array, neutral

#: Infers the rule of a schema inside the one at hand (one level deeper).
_Member = Callable[[Any], _Rule]


# -- unions and Optional -------------------------------------------------------------------


def _union_rule(
    schema: Mapping[str, Any], members: list[Any], ctx: _Ctx, seen: frozenset[str], member: _Member
) -> _Rule:
    """An ``anyOf`` / ``oneOf`` of ``members``: one member is that member (with the schema's
    other keys), a member and null is :func:`_nullable`, anything else JSON text."""
    rest = {k: v for k, v in schema.items() if k not in ("anyOf", "oneOf")}
    if len(members) == 1 and isinstance(members[0], Mapping):
        return member({**rest, **members[0]})
    if len(members) == 2:
        nulls = [_is_null(m, ctx, seen) for m in members]
        if nulls.count(True) == 1:
            other = members[nulls.index(False)]
            return _nullable(member(other), schema)
    return _json_rule(schema, ctx)


def _type_list_rule(schema: Mapping[str, Any], listed: list[Any], ctx: _Ctx, member: _Member) -> _Rule:
    """A ``type`` list: null alone is the one-value enum ``[None]``, one type the schema of that
    type (:func:`_nullable` when null is listed too), several types JSON text."""
    types = [x for x in listed if x != "null"]
    if not types:
        return _enum_rule([None])
    if len(types) != 1:
        return _json_rule(schema, ctx)
    inner = member({**schema, "type": types[0]})
    return _nullable(inner, schema) if "null" in listed else inner


def _nullable(inner: _Rule, schema: Mapping[str, Any]) -> _Rule:
    """``inner``'s space with a value that stands for null (:data:`_NULLABLE`),
    or JSON text for a kind of rule that has none."""
    make = _NULLABLE.get(inner.kind)
    return _json_rule(schema) if make is None else make(inner)


def _null_as_extra_category(inner: _Rule) -> _Rule:
    """A ``Discrete``: one more category, the last, is null."""
    space = inner.space
    n, start = int(space.n), int(space.start)  # type: ignore[attr-defined]
    null = start + n

    def to_space(v: Any, p: str) -> Any:
        return null if v is None else inner.to_space(v, p)

    def to_json(v: Any, p: str) -> Any:
        return None if int(_integer(v, p)) == null else inner.to_json(v, p)

    return _Rule(gs.Discrete(n + 1, start=start), to_space, to_json, "other")


def _null_in_box(inner: _Rule, null_value: float, dtype: Any = None) -> _Rule:
    """A scalar ``Box``: ``null_value``, inside the space (a :class:`NullableBox`, its low
    widened to include it; unlike nan), is null."""
    box = NullableBox(inner.space, null_value)  # type: ignore[arg-type]

    def to_space(v: Any, p: str) -> Any:
        return np.array(null_value, dtype=dtype) if v is None else inner.to_space(v, p)

    def to_json(v: Any, p: str) -> Any:
        out = inner.to_json(v, p)
        return None if out == null_value else out

    return _Rule(box, to_space, to_json, "other")


def _null_as_empty_text(inner: _Rule) -> _Rule:
    """A ``Text``: ``""`` is null (so a genuine ``""`` is sent back as null)."""

    def to_space(v: Any, p: str) -> Any:
        return "" if v is None else inner.to_space(v, p)

    def to_json(v: Any, p: str) -> Any:
        return None if v == "" else inner.to_json(v, p)

    return _Rule(inner.space, to_space, to_json, "other")


def _null_as_empty_sequence(inner: _Rule) -> _Rule:
    """A ``Sequence``: the empty sequence is null (so a genuine ``[]`` is sent back as null)."""
    space = inner.space
    feature = space.feature_space  # type: ignore[attr-defined]
    if space.stack:  # type: ignore[attr-defined]
        def empty() -> Any:
            return np.zeros((0,) + tuple(feature.shape), dtype=feature.dtype)
    else:
        def empty() -> Any:
            return ()

    def to_space(v: Any, p: str) -> Any:
        return empty() if v is None else inner.to_space(v, p)

    def to_json(v: Any, p: str) -> Any:
        return None if len(v) == 0 else inner.to_json(v, p)

    return _Rule(space, to_space, to_json, "other")


#: How null joins a rule's space, by the rule's kind: a number uses ``-inf`` and an integer
#: ``-2**63``. The other kinds (a Box of several numbers, a Tuple, a Dict, JSON text) have no
#: value to spare, and an ``Optional`` of them is JSON text.
_NULLABLE: dict[str, Callable[[_Rule], _Rule]] = {
    "discrete": _null_as_extra_category,
    "number": lambda inner: _null_in_box(inner, -math.inf),
    "integer": lambda inner: _null_in_box(inner, int(_INT64.min), np.int64),
    "text": _null_as_empty_text,
    "sequence": _null_as_empty_sequence,
}


# -- arrays --------------------------------------------------------------------------------


def _array_rule(schema: Mapping[str, Any], ctx: _Ctx, seen: frozenset[str], member: _Member) -> _Rule:
    """An ``array``: a ``Tuple`` of its ``prefixItems`` (or of a list ``items``, drafts 4 to 7);
    of numbers, a ``Box`` when its length is fixed and a stacked ``Sequence`` when not; of
    anything else, a ``Sequence`` of its item."""
    prefix = schema.get("prefixItems")
    items = schema.get("items", True)
    if prefix is None and isinstance(items, list):  # draft 4-7 tuple spelling
        prefix = items
    if isinstance(prefix, list):
        return _tuple_rule([member(p) for p in prefix])
    inner = _item_rule(items, ctx, seen, member)
    if inner.kind in ("number", "integer", "numeric_array"):
        feature: gs.Box[Any] = inner.space  # type: ignore[assignment]
        length = _fixed_length(schema)
        if length is not None and math.prod((length,) + feature.shape) <= MAX_BOX_ELEMENTS:
            return _box_array_rule(feature, length)
        return _stacked_sequence_rule(feature)
    return _sequence_rule(inner)


def _item_rule(items: Any, ctx: _Ctx, seen: frozenset[str], member: _Member) -> _Rule:
    """The rule of an array's item: a plain number or integer is a scalar ``Box`` (an integer
    with both bounds too, which alone would be a ``Discrete``), so the array is numeric."""
    resolved = _resolve(items, ctx, seen)
    item_schema = resolved[0] if resolved is not None else None
    leaf = _numeric_box(item_schema) if isinstance(item_schema, Mapping) and not (
        "enum" in item_schema or "const" in item_schema
    ) else None
    return _scalar_box_rule(leaf) if leaf is not None else member(items)


def _fixed_length(schema: Mapping[str, Any]) -> int | None:
    """The array's length when ``minItems == maxItems`` (within :data:`MAX_SEQUENCE_LENGTH`)."""
    n_min: Any = schema.get("minItems")
    n_max: Any = schema.get("maxItems")
    fixed = (
        isinstance(n_min, int) and not isinstance(n_min, bool) and n_min == n_max and 0 <= n_min <= MAX_SEQUENCE_LENGTH
    )
    return n_min if fixed else None


def _tuple_rule(rules: list[_Rule]) -> _Rule:
    def to_space(v: Any, p: str) -> tuple[Any, ...]:
        _check_items(v, len(rules), p, "an array")
        return tuple(r.to_space(x, f"{p}[{i}]") for i, (r, x) in enumerate(zip(rules, v)))

    def to_json(v: Any, p: str) -> list[Any]:
        _check_items(v, len(rules), p, "a tuple")
        return [r.to_json(x, f"{p}[{i}]") for i, (r, x) in enumerate(zip(rules, v))]

    return _Rule(gs.Tuple([r.space for r in rules]), to_space, to_json, "tuple")


def _box_array_rule(feature: gs.Box[Any], length: int) -> _Rule:
    """``length`` items of the ``Box`` ``feature``: one ``Box`` of shape ``(length, *item shape)``,
    with the item's bounds."""
    dtype = feature.dtype
    lo = feature.low.flat[0] if feature.bounded_below.all() and feature.low.size else -math.inf
    hi = feature.high.flat[0] if feature.bounded_above.all() and feature.high.size else math.inf
    shape = (length,) + tuple(feature.shape)
    box = gs.Box(low=lo, high=hi, shape=shape, dtype=dtype)

    def to_space(v: Any, p: str) -> np.ndarray:
        return _to_array(v, dtype, shape, p)

    def to_json(v: Any, p: str) -> Any:
        return _to_array(v, dtype, shape, p).tolist()

    return _Rule(box, to_space, to_json, "numeric_array")


def _stacked_sequence_rule(feature: gs.Box[Any]) -> _Rule:
    """Any number of items of the ``Box`` ``feature``: values are ndarrays of shape ``(n, ...)``."""
    dtype = feature.dtype
    fshape = tuple(feature.shape)

    def to_space(v: Any, p: str) -> np.ndarray:
        return _to_array(v, dtype, fshape, p, batch=True)

    def to_json(v: Any, p: str) -> Any:
        return _to_array(v, dtype, fshape, p, batch=True).tolist()

    return _Rule(gs.Sequence(feature, stack=True), to_space, to_json, "sequence")


def _sequence_rule(inner: _Rule) -> _Rule:
    """Any number of items of ``inner``: values are tuples."""

    def to_space(v: Any, p: str) -> tuple[Any, ...]:
        _check_length(v, p, "an array")
        return tuple(inner.to_space(x, f"{p}[{i}]") for i, x in enumerate(v))

    def to_json(v: Any, p: str) -> list[Any]:
        _check_length(v, p, "a tuple")
        return [inner.to_json(x, f"{p}[{i}]") for i, x in enumerate(v)]

    return _Rule(gs.Sequence(inner.space), to_space, to_json, "sequence")


# -- objects -------------------------------------------------------------------------------


def _dict_rule(props: Mapping[str, Any], exclude: Iterable[str], member: _Member) -> _Rule:
    """An ``object``'s ``properties`` but ``exclude``: a ``Dict`` over them, in order."""
    excluded = set(exclude)
    rules = {k: member(s) for k, s in props.items() if k not in excluded}
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
