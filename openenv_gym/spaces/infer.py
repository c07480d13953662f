"""Best-effort spaces for the plain JSON Schemas that stock OpenEnv servers publish.

A stock server publishes the pydantic JSON Schemas of its action and observation models,
with no shapes or dtypes. :func:`infer_space` and :func:`infer_fields` map them to
Gymnasium spaces a user can train on, each with converters between the server's JSON and
values of the space (an :class:`InferredSpace`); what has no better space travels as JSON
text in a ``Text`` space.

This module is the driver: which rule a schema gets (:func:`_infer`, the one place that
recurses), and the public converters. The rules are :mod:`.infer_scalars` (one value) and
:mod:`.infer_composites` (unions, ``Optional``, arrays, objects); the spaces beyond
Gymnasium's, :mod:`.inferred_spaces`; reading a schema's ``$ref`` s and bounds,
:mod:`.schema_reading`.

Example::

    >>> inferred = infer_space({"type": "array", "items": {"type": "number"}, "minItems": 2, "maxItems": 2})
    >>> inferred.space
    Box(-inf, inf, (2,), float64)
    >>> inferred.to_json(inferred.to_space([0.5, 2]))
    [0.5, 2.0]
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any, NamedTuple

from gymnasium import spaces as gs

from ._common import _what
from .infer_composites import _array_rule, _dict_rule, _Member, _type_list_rule, _union_rule
from .infer_scalars import (
    _bool_rule,
    _enum_rule,
    _int_rule,
    _json_rule,
    _numeric_box,
    _Rule,
    _scalar_box_rule,
    _string_rule,
)
from .inferred_spaces import (
    INFERRED_JSON_MAX_LENGTH,
    INFERRED_TEXT_MAX_LENGTH,
    InferredText,
    JsonText,
    NullableBox,
    random_json,
)

# What spaces/stock.py reads schemas with, importable from here as before the split.
from .schema_reading import _Ctx as _Ctx
from .schema_reading import _resolve as _resolve

__all__ = [
    "INFERRED_TEXT_MAX_LENGTH", "INFERRED_JSON_MAX_LENGTH", "InferredSpace", "InferredText", "JsonText", "NullableBox",
    "infer_space", "infer_fields", "random_json",
]


class InferredSpace(NamedTuple):
    """A best-effort Gymnasium space for a plain JSON Schema, with converters both ways."""

    space: gs.Space
    """The inferred space."""
    to_space: Callable[[Any], Any]
    """JSON value from the server -> value in :attr:`space` (raises SpaceValueError if it does not fit)."""
    to_json: Callable[[Any], Any]
    """Value in :attr:`space` -> JSON value to send (raises SpaceValueError if it does not fit)."""


_MAX_INFER_DEPTH = 32


def _infer(schema: Any, ctx: _Ctx, depth: int, seen: frozenset[str]) -> _Rule:
    """The rule for ``schema``, first match wins (as :func:`infer_space` lists them): past
    :data:`_MAX_INFER_DEPTH` levels, or for a ``$ref`` that cannot be resolved, JSON text."""
    if depth > _MAX_INFER_DEPTH:
        return _json_rule(schema, ctx)
    resolved = _resolve(schema, ctx, seen)
    if resolved is None:
        return _json_rule({}, ctx)
    schema, seen = resolved
    if not isinstance(schema, Mapping):
        return _json_rule({}, ctx)
    member = _member(ctx, depth, seen)

    if isinstance(schema.get("enum"), list) and schema["enum"]:
        return _enum_rule(list(schema["enum"]))
    if "const" in schema:
        return _enum_rule([schema["const"]])
    for key in ("anyOf", "oneOf"):
        members = schema.get(key)
        if isinstance(members, list):
            return _union_rule(schema, members, ctx, seen, member)
    kind = schema.get("type")
    if isinstance(kind, list):
        return _type_list_rule(schema, kind, ctx, member)
    return _typed_rule(schema, _implied_type(schema) if kind is None else kind, ctx, seen, member)


def _member(ctx: _Ctx, depth: int, seen: frozenset[str]) -> _Member:
    """What infers the rule of a schema inside one at ``depth``: :func:`_infer`, a level deeper."""

    def member(schema: Any) -> _Rule:
        return _infer(schema, ctx, depth + 1, seen)

    return member


def _implied_type(schema: Mapping[str, Any]) -> str | None:
    """The ``type`` a schema without one implies: ``object`` with ``properties``, ``array`` with
    ``items`` or ``prefixItems``."""
    if isinstance(schema.get("properties"), Mapping):
        return "object"
    if "items" in schema or "prefixItems" in schema:
        return "array"
    return None


def _typed_rule(schema: Mapping[str, Any], kind: Any, ctx: _Ctx, seen: frozenset[str], member: _Member) -> _Rule:
    """The rule for a schema of one ``type`` (``kind``); JSON text for an unknown one, or an
    object without properties."""
    if kind == "boolean":
        return _bool_rule()
    if kind == "integer":
        return _int_rule(schema)
    if kind == "number":
        box = _numeric_box(schema)
        return _json_rule(schema, ctx) if box is None else _scalar_box_rule(box)
    if kind == "string":
        return _string_rule(schema)
    if kind == "null":
        return _enum_rule([None])
    if kind == "array":
        return _array_rule(schema, ctx, seen, member)
    if kind == "object":
        props = schema.get("properties")
        if isinstance(props, Mapping) and props:
            return _dict_rule(props, (), member)
    return _json_rule(schema, ctx)


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
      category meaning null; a number Box uses ``-inf`` and an integer Box -2**63 (each with
      its low widened to include it); Text uses ``""`` and a Sequence the empty sequence (so a genuine ``""`` /
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
    return _public(_dict_rule(props, exclude, _member(ctx, 0, seen)))
