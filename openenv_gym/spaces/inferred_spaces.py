"""The spaces :func:`~openenv_gym.spaces.infer_space` gives beyond Gymnasium's own:
:class:`InferredText` (a schema string), :class:`JsonText` (a value no other space fits, as
JSON text) and :class:`NullableBox` (an ``Optional`` number).

Each samples values that fit the schema it was inferred from, so that a sampled action is
one the server can read: :class:`JsonText` samples with :func:`random_json`, a small random
JSON value that fits a schema.

    >>> import numpy as np
    >>> random_json({"type": "array", "items": {"enum": ["UP", "DOWN"]}, "minItems": 2, "maxItems": 2},
    ...             np.random.default_rng(1))
    ['UP', 'DOWN']
"""

from __future__ import annotations

import copy
import functools
import json
import math
import re
import unicodedata
from collections.abc import Mapping
from typing import Any

import numpy as np
from gymnasium import spaces as gs

from .schema_reading import _Ctx, _float_bounds, _int_bounds, _resolve

INFERRED_TEXT_MAX_LENGTH = 65536
"""``max_length`` of the Text space inferred for a JSON Schema string without ``maxLength``."""

INFERRED_JSON_MAX_LENGTH = 1 << 20
"""``max_length`` of the Text space that carries values :func:`~openenv_gym.spaces.infer_space`
does not understand."""


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
        >>> from openenv_gym.spaces import infer_space
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

        >>> from openenv_gym.spaces import infer_space
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


class NullableBox(gs.Box):
    """The scalar ``Box`` of an ``Optional`` number: the field's own ``Box`` with its low widened
    to hold ``null_value``, the sentinel that stands for null (``-inf``, or ``-2**63`` for
    integers). :meth:`sample` draws within the field's own bounds, or null one time in ten, so
    a sampled action fits the field's schema.

        >>> from openenv_gym.spaces import infer_space
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
