"""Best-effort spaces for the plain JSON Schemas that stock OpenEnv servers publish.

A stock server publishes the pydantic JSON Schemas of its action and observation models,
with no shapes or dtypes. :func:`infer_space` and :func:`infer_fields` map them to
Gymnasium spaces a user can train on, each with converters between the server's JSON and
values of the space (an :class:`InferredSpace`); what has no better space travels as JSON
text in a ``Text`` space.

Example::

    >>> inferred = infer_space({"type": "array", "items": {"type": "number"}, "minItems": 2, "maxItems": 2})
    >>> inferred.space
    Box(-inf, inf, (2,), float64)
    >>> inferred.to_json(inferred.to_space([0.5, 2]))
    [0.5, 2.0]
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

from ._common import _err, _key_path, _short_list, _what
from .description import MAX_BOX_ELEMENTS
from .values import MAX_SEQUENCE_LENGTH, _check_items, _check_length, _integer, _to_array, neutral

__all__ = [
    "INFERRED_TEXT_MAX_LENGTH", "INFERRED_JSON_MAX_LENGTH", "InferredSpace", "InferredText", "JsonText", "NullableBox",
    "infer_space", "infer_fields", "random_json",
]

INFERRED_TEXT_MAX_LENGTH = 65536
"""``max_length`` of the Text space inferred for a JSON Schema string without ``maxLength``."""

INFERRED_JSON_MAX_LENGTH = 1 << 20
"""``max_length`` of the Text space that carries values :func:`infer_space` does not understand."""

_INT64 = np.iinfo(np.int64)


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


class InferredText(gs.Text):
    """The ``Text`` space inferred for a JSON Schema string: a permissive charset shared by
    every instance.

    The charset holds ~55,000 characters; Gymnasium deep-copies spaces (``batch_space``, a
    vector env's single spaces), which would copy its tables for every env. Copies of an
    ``InferredText`` share them (they never change) and get their own random generator.

        >>> import copy
        >>> text = infer_space({"type": "string", "maxLength": 8}).space
        >>> text
        InferredText(0, 8, charset=<55525 printable characters>)
        >>> copy.deepcopy(text)._char_index is text._char_index
        True
    """

    #: Characters above ``min_length`` a sample has at most: a schema string without
    #: ``maxLength`` allows 65,536, and a sampled action that long helps no one.
    SAMPLE_SPREAD = 32

    def sample(self, mask: Any = None, probability: Any = None) -> str:
        """A random string of the charset, at most :attr:`SAMPLE_SPREAD` characters longer than
        ``min_length`` (Gymnasium's ``Text.sample`` when given a mask or probabilities)."""
        if mask is not None or probability is not None:
            return super().sample(mask=mask, probability=probability)
        longest = min(self.max_length, self.min_length + self.SAMPLE_SPREAD)
        length = int(self.np_random.integers(self.min_length, longest + 1))
        picks = self.np_random.integers(len(self.character_list), size=length)
        return "".join(self.character_list[i] for i in picks)

    def __deepcopy__(self, memo: dict) -> InferredText:
        clone = copy.copy(self)
        clone._np_random = copy.deepcopy(self._np_random, memo)
        return clone

    def __repr__(self) -> str:
        charset = f"<{len(self.character_set)} printable characters>"
        return f"{type(self).__name__}({self.min_length}, {self.max_length}, charset={charset})"


class JsonText(InferredText):
    """Values a plain JSON Schema describes but no other space fits (a free-form object such
    as ``Dict[str, Any]``, an ``anyOf`` of unrelated types, ``{}``), as compact JSON text.

    :meth:`contains` accepts JSON text only, and :meth:`sample` draws JSON text of a value
    that fits :attr:`schema` (a free-form object samples as ``{}`` or a small object), so a
    sampled action is one the server can read.

        >>> space = infer_space({"type": "object", "additionalProperties": {"type": "integer"}}).space
        >>> _ = space.seed(0)
        >>> all(isinstance(json.loads(space.sample()), dict) for _ in range(5))
        True
        >>> space.contains("{not json"), space.contains('{"a": 1}')
        (False, True)
    """

    #: The JSON Schema the values follow (local ``$ref`` s resolve from :attr:`defs`).
    schema: Mapping[str, Any] = {}
    defs: Mapping[str, Any] = {}
    #: What :func:`~openenv_gym.spaces.neutral` gives: JSON's null.
    neutral_value = "null"

    def sample(self, mask: Any = None, probability: Any = None) -> str:
        value = random_json(self.schema, self.np_random, defs=self.defs)
        return json.dumps(value, separators=(",", ":"), ensure_ascii=True)

    def contains(self, x: Any) -> bool:
        if not (isinstance(x, str) and super().contains(x)):
            return False
        try:
            json.loads(x)
        except ValueError:
            return False
        return True

    def __repr__(self) -> str:
        title = self.schema.get("title") or self.schema.get("type") or "any"
        return f"JsonText({title})"


@functools.lru_cache(maxsize=64)
def _text_prototype(min_length: int, max_length: int, kind: type[InferredText] = InferredText) -> InferredText:
    return kind(max_length, min_length=min_length, charset=_permissive_charset())


def _permissive_text(min_length: int, max_length: int) -> InferredText:
    # Building a Text over ~55k characters takes tens of ms; a shallow copy of a never-sampled
    # prototype shares the immutable character tables and gets its own RNG on first use.
    return copy.copy(_text_prototype(min_length, max_length))


def _json_text(schema: Mapping[str, Any], defs: Mapping[str, Any]) -> JsonText:
    space = copy.copy(_text_prototype(0, INFERRED_JSON_MAX_LENGTH, JsonText))
    assert isinstance(space, JsonText)
    space.schema, space.defs = schema, defs
    return space


#: Items (of an array) and keys (of a free-form object) :func:`random_json` draws at most.
_RANDOM_ITEMS = 3


def random_json(schema: Any, rng: np.random.Generator, *, defs: Mapping[str, Any] | None = None,
                depth: int = 0) -> Any:
    """A random JSON value that fits ``schema`` (small: a few items per array or object,
    short strings, numbers within the schema's bounds), for sampling actions.

    Follows local ``$ref`` s, ``enum`` / ``const``, ``anyOf`` / ``oneOf`` (one member),
    ``type`` lists, and each type's bounds; fills an object's required properties (and each
    optional one with probability one half). ``{}`` (any value) gives ``null``, a number or
    a short string.

        >>> random_json({"type": "integer", "minimum": 3, "maximum": 3}, np.random.default_rng(0))
        3
    """
    defs = (schema.get("$defs") or schema.get("definitions") or {}) if defs is None and isinstance(
        schema, Mapping) else (defs or {})
    resolved = _resolve(schema, _Ctx(defs), frozenset())
    schema = resolved[0] if resolved is not None else {}
    if not isinstance(schema, Mapping) or depth > 8:
        return None
    if isinstance(schema.get("enum"), list) and schema["enum"]:
        return copy.deepcopy(schema["enum"][int(rng.integers(len(schema["enum"])))])
    if "const" in schema:
        return copy.deepcopy(schema["const"])
    for key in ("anyOf", "oneOf"):
        members = schema.get(key)
        if isinstance(members, list) and members:
            return random_json(members[int(rng.integers(len(members)))], rng, defs=defs, depth=depth + 1)
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = kind[int(rng.integers(len(kind)))] if kind else None
    if kind is None:
        kind = "object" if "properties" in schema else "array" if "items" in schema else None
    if kind == "null":
        return None
    if kind == "boolean":
        return bool(rng.integers(2))
    if kind == "integer":
        low, high = _int_bounds(schema)
        low = -10 if low is None else low
        high = low + 20 if high is None else high
        return int(rng.integers(low, max(low, high) + 1)) if high - low < 2**62 else int(low)
    if kind == "number":
        low_f, high_f = _float_bounds(schema)
        low_f = -10.0 if not math.isfinite(low_f) else low_f
        high_f = low_f + 20.0 if not math.isfinite(high_f) else high_f
        return float(rng.uniform(low_f, high_f))
    if kind == "string":
        length = _random_count(schema, "minLength", "maxLength", 8, rng)
        return "".join(chr(int(c)) for c in rng.integers(ord("a"), ord("z") + 1, size=length))
    if kind == "array":
        count = _random_count(schema, "minItems", "maxItems", _RANDOM_ITEMS, rng)
        return [random_json(schema.get("items", {}), rng, defs=defs, depth=depth + 1) for _ in range(count)]
    if kind == "object":
        found = schema.get("properties")
        properties: Mapping[str, Any] = found if isinstance(found, Mapping) else {}
        required = set(schema.get("required") or [])
        value = {key: random_json(sub, rng, defs=defs, depth=depth + 1) for key, sub in properties.items()
                 if key in required or rng.integers(2)}
        extra = schema.get("additionalProperties")
        if not properties and isinstance(extra, Mapping) and extra:
            for i in range(int(rng.integers(_RANDOM_ITEMS))):
                value[f"key{i}"] = random_json(extra, rng, defs=defs, depth=depth + 1)
        return value
    return [None, 0, "x"][int(rng.integers(3))]


def _random_count(schema: Mapping[str, Any], low_key: str, high_key: str, spread: int,
                  rng: np.random.Generator) -> int:
    """A length between the schema's bounds ``low_key`` and ``high_key``, at most ``spread``
    above the lower one."""
    low, high = schema.get(low_key), schema.get(high_key)
    shortest = low if isinstance(low, int) and not isinstance(low, bool) and low >= 0 else 0
    longest = high if isinstance(high, int) and not isinstance(high, bool) else shortest + spread
    return int(rng.integers(shortest, max(shortest, min(longest, shortest + spread)) + 1))


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
        # -inf stands for null: inside the space (its low is widened to include it), unlike nan.
        widened = NullableBox(space, -math.inf)  # type: ignore[arg-type]

        def f_to_space(v: Any, p: str) -> Any:
            return np.array(-math.inf) if v is None else inner.to_space(v, p)

        def f_to_json(v: Any, p: str) -> Any:
            out = inner.to_json(v, p)
            return None if out == -math.inf else out

        return _Rule(widened, f_to_space, f_to_json, "other")
    if inner.kind == "integer":
        sentinel = int(_INT64.min)
        box = NullableBox(space, sentinel)  # type: ignore[arg-type]

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
    return _json_rule(schema)


class NullableBox(gs.Box):
    """The scalar ``Box`` of an ``Optional`` number: the field's own ``Box`` with its low widened
    to hold ``null_value``, the sentinel that stands for null (``-inf``, or ``-2**63`` for
    integers). :meth:`sample` draws within the field's own bounds, or null one time in ten, so
    a sampled action fits the field's schema.

        >>> space = infer_space({"anyOf": [{"type": "number", "minimum": 0, "maximum": 1}, {"type": "null"}]}).space
        >>> space.low, space.high, space.null_value
        (array(-inf), array(1.), -inf)
        >>> _ = space.seed(0)
        >>> all(space.null_value == s or 0 <= s <= 1 for s in (space.sample() for _ in range(50)))
        True
    """

    def __init__(self, declared: gs.Box, null_value: float) -> None:
        super().__init__(low=-math.inf, high=declared.high, shape=(), dtype=declared.dtype)
        self.declared = declared
        self.null_value = null_value

    def sample(self, mask: Any = None, probability: Any = None) -> np.ndarray:
        if self.np_random.random() < 0.1:
            return np.array(self.null_value, dtype=self.dtype)
        self.declared.seed(int(self.np_random.integers(2**31)))
        return self.declared.sample()


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
        return _json_rule(schema, ctx)
    resolved = _resolve(schema, ctx, seen)
    if resolved is None:
        return _json_rule({}, ctx)
    schema, seen = resolved
    if not isinstance(schema, Mapping):
        return _json_rule({}, ctx)

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
        return _json_rule(schema, ctx)

    t = schema.get("type")
    if isinstance(t, list):
        types = [x for x in t if x != "null"]
        if not types:
            return _enum_rule([None])
        if len(types) != 1:
            return _json_rule(schema, ctx)
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
        return _json_rule(schema, ctx) if box is None else _scalar_box_rule(box)
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
    return _json_rule(schema, ctx)


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

    n_min: Any = schema.get("minItems")
    n_max: Any = schema.get("maxItems")
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
        feature: gs.Box[Any] = inner.space  # type: ignore[assignment]
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
    return _public(_dict_rule(props, exclude, ctx, 0, seen))
