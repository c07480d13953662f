"""Text of the values of every Gymnasium space: what :class:`~openenv_gym.text.TextView`
falls back on when nothing knows the env.

One function per concept:

* :func:`describe_space`: what the values look like, in words (for a system prompt, and
  in every error message as what is legal);
* :func:`value_text`: an observation, for a model to read (numbers to 4 significant
  digits, big arrays summarized);
* :func:`action_text`: an action, exactly (floats in the shortest form that reads back
  to the same value of the space's dtype), in a form :func:`parse_value` reads back;
* :func:`parse_value`: a value read from a reply (JSON, or the bare text of a name, a
  number or a bit string) into the space, checked against its range, bounds, shape,
  charset and length. Nothing is clipped, rounded or coerced: a value that does not fit
  is an :class:`~openenv_gym.text.ActionParseError` naming what was received and what is
  legal;
* :func:`parse_reply`: the same for a model's whole reply, in any of the forms
  :func:`~openenv_gym.text.read_reply` reads.

    >>> from gymnasium import spaces
    >>> box = spaces.Box(-1.0, 1.0, shape=(2,))
    >>> describe_space(box)
    'a list of 2 numbers, each from -1.0 to 1.0'
    >>> parse_value(box, [0.5, 1.5])  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    openenv_gym.errors.ActionParseError: action[1]: got 1.5, above the upper bound 1.0; legal: a list of 2 numbers, ...
    >>> action_text(box, parse_value(box, [0.1, -0.3]))
    '[0.1, -0.3]'
"""

from __future__ import annotations

import functools
import json
import math
import re
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from gymnasium import spaces as gs

from .. import spaces
from .reply import NO_JSON, ActionParseError, Reply, read_reply, shorten

__all__ = ["describe_space", "value_text", "action_text", "parse_reply", "parse_value", "MAX_LISTED", "MAX_ARRAY_TEXT"]

#: Arrays with more elements than this are summarized in observation text.
MAX_ARRAY_TEXT = 64
#: Longest list of names, keys or characters a description spells out.
MAX_LISTED = 30
#: How deep :func:`describe_space` describes nested spaces before it refers to the schema.
MAX_DESCRIBED_DEPTH = 3
_INTEGER = re.compile(r"[+-]?\d+")


# ---------------------------------------------------------------------------------------------
# numbers
# ---------------------------------------------------------------------------------------------


def _exact(x: Any) -> str:
    """The shortest text that reads back to ``x`` in its own dtype (JSON's NaN and Infinity)."""
    if isinstance(x, (bool, np.bool_)):
        return "true" if x else "false"
    if isinstance(x, (int, np.integer)):
        return str(int(x))
    f = float(x)
    if math.isnan(f):
        return "NaN"
    if math.isinf(f):
        return "Infinity" if f > 0 else "-Infinity"
    text = str(x) if isinstance(x, np.floating) else repr(f)
    return text if ("." in text or "e" in text) else text + ".0"


def _short(x: Any) -> str:
    """A number for a model to read: 4 significant digits."""
    if isinstance(x, (bool, np.bool_)):
        return str(int(x))
    if isinstance(x, (int, np.integer)):
        return str(int(x))
    return f"{float(x):.4g}"


def _bound(x: Any) -> str:
    return _exact(x).replace("Infinity", "inf")


def _range(low: Any, high: Any) -> str:
    lo, hi = float(low), float(high)
    if math.isinf(lo) and math.isinf(hi):
        return "any value"
    if math.isinf(lo):
        return f"at most {_bound(high)}"
    if math.isinf(hi):
        return f"at least {_bound(low)}"
    if lo == hi:
        return f"exactly {_bound(low)}"
    return f"from {_bound(low)} to {_bound(high)}"


def _listed(items: Sequence[str], limit: int = MAX_LISTED) -> str:
    text = ", ".join(items[:limit])
    return text + (f", ... ({len(items)} in all)" if len(items) > limit else "")


def _shape(shape: tuple[int, ...]) -> str:
    return "(" + ", ".join(map(str, shape)) + ("," if len(shape) == 1 else "") + ")"


# ---------------------------------------------------------------------------------------------
# describe_space
# ---------------------------------------------------------------------------------------------


def describe_space(space: gs.Space, *, names: Sequence[str] | None = None, _depth: int = 0) -> str:
    """What the values of ``space`` look like, in words.

    ``names`` are the names of a ``Discrete`` space's values (of its components for a
    1-D ``Box``).

        >>> from gymnasium import spaces
        >>> describe_space(spaces.Discrete(4), names=["left", "down", "right", "up"])
        'one of left, down, right, up (or their numbers 0 to 3)'
        >>> describe_space(spaces.Dict({"n": spaces.Discrete(3, start=1), "on": spaces.MultiBinary(2)}))
        'a JSON object with the keys "n" (an integer from 1 to 3), "on" (a list of 2 bits (0 or 1), or ...)'
    """
    if _depth > MAX_DESCRIBED_DEPTH:
        return "a nested value (as the JSON Schema describes it)"
    return _describe(space, names, _depth)


@functools.singledispatch
def _describe(space: Any, names: Sequence[str] | None, depth: int) -> str:
    return f"a value of {space}"


@_describe.register(gs.Discrete)
def _describe_discrete(space: gs.Discrete, names: Sequence[str] | None, depth: int) -> str:
    start, n = int(space.start), int(space.n)
    numbers = f"{start} to {start + n - 1}" if n > 1 else str(start)
    if names:
        return f"one of {_listed(list(names))} (or their numbers {numbers})"
    return f"an integer from {numbers}" if n > 1 else f"the integer {start}"


def _element(dtype: np.dtype, plural: bool) -> str:
    if dtype.kind == "b":
        return "booleans (true or false)" if plural else "a boolean (true or false)"
    if dtype.kind in "iu":
        return "integers" if plural else "an integer"
    return "numbers" if plural else "a number"


def _array_intro(shape: tuple[int, ...], what: str) -> str:
    if len(shape) == 1:
        return f"a list of {shape[0]} {what}"
    return f"a nested list of shape {_shape(shape)} of {what}"


def _per_element(ranges: list[str], labels: Sequence[str] | None) -> str:
    labels = list(labels) if labels else [f"[{i}]" for i in range(len(ranges))]
    return ", ".join(f"{label} {r}" for label, r in zip(labels, ranges))


@_describe.register(gs.Box)
def _describe_box(space: gs.Box, names: Sequence[str] | None, depth: int) -> str:
    dtype, shape = space.dtype, space.shape
    low, high = space.low.reshape(-1), space.high.reshape(-1)
    if not shape:
        return f"{_element(dtype, False)}, {_range(low[0], high[0])}" if dtype.kind != "b" else _element(dtype, False)
    if not low.size:
        return f"an empty list (shape {_shape(shape)})"
    uniform = bool(np.all(low == low[0]) and np.all(high == high[0]))
    if low.size == 1:
        alone = "true or false" if dtype.kind == "b" else f"{_element(dtype, False)} {_range(low[0], high[0])}"
        label = f"{names[0]}: " if names else ""
        return f"{label}{alone} (alone or in a list of shape {_shape(shape)})"
    if dtype.kind == "b" and uniform:
        return _array_intro(shape, _element(dtype, True))
    intro = _array_intro(shape, _element(dtype, True))
    if uniform and not names:
        return f"{intro}, each {_range(low[0], high[0])}"
    if low.size <= MAX_LISTED // 3 or names:
        return f"{intro}: " + _per_element([_range(a, b) for a, b in zip(low, high)], names)
    return f"{intro}, each within its own bounds (from {_bound(low.min())} to {_bound(high.max())} in all)"


def _md_start(space: gs.MultiDiscrete) -> np.ndarray:
    return np.asarray(getattr(space, "start", np.zeros_like(space.nvec)))


@_describe.register(gs.MultiDiscrete)
def _describe_multi_discrete(space: gs.MultiDiscrete, names: Sequence[str] | None, depth: int) -> str:
    start, nvec = _md_start(space).reshape(-1), space.nvec.reshape(-1)
    intro = _array_intro(space.shape, "integers")
    ranges = [f"from {int(s)} to {int(s) + int(n) - 1}" for s, n in zip(start, nvec)]
    if len(set(ranges)) == 1:
        return f"{intro}, each {ranges[0]}"
    if len(ranges) <= MAX_LISTED // 3:
        return f"{intro}: " + _per_element(ranges, None)
    return f"{intro}, each within its own range"


@_describe.register(gs.MultiBinary)
def _describe_multi_binary(space: gs.MultiBinary, names: Sequence[str] | None, depth: int) -> str:
    shape = tuple(int(n) for n in np.atleast_1d(space.n))
    if len(shape) == 1:
        example = ("0110" * shape[0])[: shape[0]]
        return f"a list of {shape[0]} bits (0 or 1), or a string of {shape[0]} bits like \"{example}\""
    return _array_intro(shape, "bits (0 or 1)")


def _charset(space: gs.Text) -> str:
    chars = space.character_list
    if len(chars) <= MAX_LISTED * 3:
        return f"from the characters {json.dumps(''.join(chars), ensure_ascii=False)}"
    sample = json.dumps("".join(chars[:MAX_LISTED]), ensure_ascii=False)
    return f"from a set of {len(chars)} characters (the first {MAX_LISTED}: {sample})"


@_describe.register(gs.Text)
def _describe_text(space: gs.Text, names: Sequence[str] | None, depth: int) -> str:
    lo, hi = int(space.min_length), int(space.max_length)
    length = f"{lo} to {hi}" if lo != hi else str(lo)
    return f"a string of {length} characters {_charset(space)}"


@_describe.register(gs.Dict)
def _describe_dict(space: gs.Dict, names: Sequence[str] | None, depth: int) -> str:
    if not space.spaces:
        return "an empty JSON object {}"
    parts = [
        f"{json.dumps(k, ensure_ascii=False)} ({describe_space(s, _depth=depth + 1)})" for k, s in space.spaces.items()
    ]
    return f"a JSON object with the keys {_listed(parts, MAX_LISTED // 3)}"


@_describe.register(gs.Tuple)
def _describe_tuple(space: gs.Tuple, names: Sequence[str] | None, depth: int) -> str:
    if not space.spaces:
        return "an empty JSON list []"
    parts = [f"[{i}] {describe_space(s, _depth=depth + 1)}" for i, s in enumerate(space.spaces)]
    return f"a JSON list of {len(parts)} items: {_listed(parts, MAX_LISTED // 3)}"


@_describe.register(gs.Sequence)
def _describe_sequence(space: gs.Sequence, names: Sequence[str] | None, depth: int) -> str:
    return f"a JSON list of any length, each item {describe_space(space.feature_space, _depth=depth + 1)}"


@_describe.register(gs.Graph)
def _describe_graph(space: gs.Graph, names: Sequence[str] | None, depth: int) -> str:
    nodes = describe_space(space.node_space, _depth=depth + 1)
    if space.edge_space is None:
        return f'a graph {{"nodes": [...], "edges": null, "edge_links": null}}, each node {nodes}'
    edges = describe_space(space.edge_space, _depth=depth + 1)
    return (
        f'a graph {{"nodes": [...], "edges": [...], "edge_links": [[from, to], ...]}} (or null edges and '
        f"edge_links), each node {nodes}, each edge {edges}, links between node indices"
    )


@_describe.register(gs.OneOf)
def _describe_one_of(space: gs.OneOf, names: Sequence[str] | None, depth: int) -> str:
    parts = [f"[{i}, {describe_space(s, _depth=depth + 1)}]" for i, s in enumerate(space.spaces)]
    return f"a JSON pair [choice, value], one of {_listed(parts, MAX_LISTED // 3)}"


# ---------------------------------------------------------------------------------------------
# value_text (observations)
# ---------------------------------------------------------------------------------------------


def value_text(space: gs.Space, value: Any) -> str:
    """An observation as text for a model: numbers to 4 significant digits, arrays of up to
    :data:`MAX_ARRAY_TEXT` elements as (nested) lists, one row per line, bigger arrays as
    their shape and statistics, a ``Dict`` as ``key: value`` lines.

        >>> from gymnasium import spaces
        >>> value_text(spaces.Box(0, 1, shape=(2, 2)), np.array([[0.5, 1/3], [0, 1]]))
        '[[0.5, 0.3333],\\n [0, 1]]'
        >>> grid = spaces.Dict([("pos", spaces.Discrete(5)), ("goal", spaces.Discrete(5))])
        >>> print(value_text(grid, {"pos": 1, "goal": 4}))
        pos: 1
        goal: 4
        >>> value_text(spaces.Box(0, 255, shape=(210, 160, 3), dtype=np.uint8), np.zeros((210, 160, 3), np.uint8))
        'an array of shape (210, 160, 3) and dtype uint8: min 0, max 0, mean 0'
    """
    return _text(space, value)


@functools.singledispatch
def _text(space: Any, value: Any) -> str:
    return str(value)


def _array_text(arr: np.ndarray) -> str:
    if arr.size > MAX_ARRAY_TEXT:
        numeric = arr.astype(np.float64)
        return (
            f"an array of shape {_shape(arr.shape)} and dtype {arr.dtype}: min {_short(numeric.min())}, "
            f"max {_short(numeric.max())}, mean {_short(numeric.mean())}"
        )
    if arr.ndim == 0:
        return _short(arr[()])
    return _rows(arr, 1)


def _rows(arr: np.ndarray, indent: int) -> str:
    if arr.ndim == 1:
        return "[" + ", ".join(_short(x) for x in arr) + "]"
    sep = ",\n" + " " * indent
    return "[" + sep.join(_rows(row, indent + 1) for row in arr) + "]"


@_text.register(gs.Box)
@_text.register(gs.MultiDiscrete)
@_text.register(gs.MultiBinary)
def _text_array(space: gs.Space, value: Any) -> str:
    return _array_text(np.asarray(value))


@_text.register(gs.Discrete)
def _text_discrete(space: gs.Discrete, value: Any) -> str:
    return str(int(value))


@_text.register(gs.Text)
def _text_text(space: gs.Text, value: Any) -> str:
    return str(value)


def _indented(key: str, text: str) -> str:
    if "\n" not in text:
        return f"{key}: {text}"
    return f"{key}:\n" + "\n".join("  " + line for line in text.splitlines())


@_text.register(gs.Dict)
def _text_dict(space: gs.Dict, value: Any) -> str:
    return "\n".join(_indented(str(k), _text(s, value[k])) for k, s in space.spaces.items())


@_text.register(gs.Tuple)
def _text_tuple(space: gs.Tuple, value: Any) -> str:
    parts = [_text(s, v) for s, v in zip(space.spaces, value)]
    if all("\n" not in p for p in parts) and sum(map(len, parts)) <= 80:
        return "(" + ", ".join(parts) + ")"
    return "\n".join(_indented(f"[{i}]", p) for i, p in enumerate(parts))


@_text.register(gs.Sequence)
@_text.register(gs.Graph)
@_text.register(gs.OneOf)
def _text_json(space: gs.Space, value: Any) -> str:
    return _dumps(spaces.encode(space, value, arrays=True), _short)


# ---------------------------------------------------------------------------------------------
# action_text
# ---------------------------------------------------------------------------------------------


def action_text(space: gs.Space, value: Any, *, names: Sequence[str] | None = None) -> str:
    """An action as the text :func:`parse_value` (after :func:`~openenv_gym.text.read_reply`)
    reads back to the same value: a ``Discrete`` value's name (``names``) or number, a
    ``Text`` value as it is (JSON-quoted when it would not read back as itself), anything
    else as JSON with floats in the shortest form exact for the space's dtype.

        >>> from gymnasium import spaces
        >>> action_text(spaces.Discrete(4), 2, names=["left", "down", "right", "up"])
        'right'
        >>> action_text(spaces.Box(-2.0, 2.0, shape=(1,)), np.array([0.1], dtype=np.float32))
        '[0.1]'
        >>> action_text(spaces.Tuple([spaces.Discrete(2), spaces.Text(5)]), (1, "abc"))
        '[1, "abc"]'
    """
    if isinstance(space, gs.Discrete):
        index = int(value) - int(space.start)
        if names and not 0 <= index < len(names):
            raise ValueError(f"{value} is not an action of {space}")
        return names[index] if names else str(int(value))
    if isinstance(space, gs.Text):
        text = str(value)
        try:
            reads_back = parse_reply(space, text) == text
        except ActionParseError:
            reads_back = False
        return text if reads_back else json.dumps(text, ensure_ascii=False)
    return _dumps(spaces.encode(space, value, arrays=True), _exact)


def _dumps(data: Any, number: Any) -> str:
    """JSON text of wire data (``encode(..., arrays=True)``), numbers written by ``number``."""
    if isinstance(data, np.ndarray):
        if data.ndim == 0:
            return number(data[()])
        return "[" + ", ".join(_dumps(item, number) for item in data) + "]"
    if isinstance(data, (bool, np.bool_, int, float, np.integer, np.floating)):
        return number(data)
    if isinstance(data, str):
        return json.dumps(data, ensure_ascii=False)
    if data is None:
        return "null"
    if isinstance(data, Mapping):
        items = (f"{json.dumps(str(k), ensure_ascii=False)}: {_dumps(v, number)}" for k, v in data.items())
        return "{" + ", ".join(items) + "}"
    return "[" + ", ".join(_dumps(item, number) for item in data) + "]"


# ---------------------------------------------------------------------------------------------
# parse_value
# ---------------------------------------------------------------------------------------------


def parse_reply(space: gs.Space, reply: Any, *, names: Sequence[str] | None = None, path: str = "action") -> Any:
    """The action a model's reply names: :func:`~openenv_gym.text.read_reply` on a string
    reply (a value that is not a string, as a tool call's decoded arguments give, is taken
    as JSON already), ``{"action": value}`` unwrapped (unless the space is a ``Dict`` with
    an ``"action"`` key), then :func:`parse_value`. A ``Text`` space takes the reply itself
    when that is a legal value (so a tool call's string argument is never unquoted),
    else what the reply's JSON or tags hold.

        >>> from gymnasium import spaces
        >>> parse_reply(spaces.Discrete(3), '{"action": 2}')
        2
        >>> parse_reply(spaces.Discrete(3), "<action>3</action>")  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        openenv_gym.errors.ActionParseError: ... '<action>3</action>': action: got 3, out of range; legal: ... 0 to 2

    Raises:
        ActionParseError: naming the reply, the offending part and what is legal.
    """
    if isinstance(space, gs.Text) and isinstance(reply, str) and space.contains(reply):
        return reply
    try:
        value = _reply_value(space, read_reply(reply)) if isinstance(reply, str) else _unwrapped(space, reply)
        return parse_value(space, value, names=names, path=path)
    except ActionParseError as exc:
        quoted = shorten(reply) if isinstance(reply, str) else _got(reply)
        raise ActionParseError(
            f"cannot read an action from {quoted}: {exc}", received=reply, legal=exc.legal
        ) from None


def _unwrapped(space: gs.Space, value: Any) -> Any:
    if isinstance(value, Mapping) and set(value) == {"action"}:
        if not (isinstance(space, gs.Dict) and "action" in space.spaces):
            return value["action"]
    return value


def _reply_value(space: gs.Space, reply: Reply) -> Any:
    """The value a read reply gives ``space``: its JSON, else its bare text (and the text
    where JSON would misread it: a Text space's ``123``, a MultiBinary's bits ``1010``)."""
    value = _unwrapped(space, reply.value)
    if value is NO_JSON:
        return reply.text
    if isinstance(space, gs.Text) and not isinstance(value, str):
        return reply.text
    if isinstance(space, gs.MultiBinary) and isinstance(value, int) and not isinstance(value, bool):
        return reply.text
    return value


def parse_value(space: gs.Space, value: Any, *, names: Sequence[str] | None = None, path: str = "action") -> Any:
    """Check ``value`` (JSON data, or the bare text of a reply) against ``space`` and
    return it as a value of the space.

    Besides the JSON encoding of :func:`openenv_gym.spaces.encode`, it takes a
    ``Discrete`` value's name (``names``, any case) or its number as a string, a
    ``MultiBinary`` value as a string of bits (``"0110"``) and a one-element ``Box``
    value as a bare number. Integral floats are integers (``2.0`` is ``2``); anything
    else that does not fit (``1.5`` for an integer, a number outside a range or bounds, a
    list of the wrong length, a character outside a ``Text`` charset) is an error.

        >>> from gymnasium import spaces
        >>> parse_value(spaces.Discrete(4), "Down", names=["left", "down", "right", "up"])
        1
        >>> parse_value(spaces.MultiBinary(4), "0110")
        array([0, 1, 1, 0], dtype=int8)
        >>> parse_value(spaces.Text(4, charset="abc"), "abd")  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        openenv_gym.errors.ActionParseError: action: got 'abd', the character 'd' is not allowed; legal: ... "abc"

    Raises:
        ActionParseError: naming the path of the offending item, what it got and what is legal.
    """
    return _parse(space, value, names, path)


def _got(value: Any) -> str:
    if isinstance(value, str):
        return shorten(value, 60)
    if isinstance(value, np.ndarray):
        return f"an array of shape {_shape(value.shape)}" if value.size > 8 else _dumps(value, _exact)
    if isinstance(value, (bool, np.bool_, int, float, np.integer, np.floating)):
        return _exact(value)
    try:
        text = json.dumps(value, ensure_ascii=False, default=repr)
    except (TypeError, ValueError, RecursionError):
        text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _fail(space: gs.Space, value: Any, why: str, path: str, names: Sequence[str] | None = None) -> ActionParseError:
    legal = describe_space(space, names=names)
    return ActionParseError(f"{path}: got {_got(value)}, {why}; legal: {legal}", received=value, legal=legal)


def _decoded(space: gs.Space, value: Any, path: str, names: Sequence[str] | None = None) -> Any:
    try:
        return spaces.decode(space, value, path=path)
    except spaces.SpaceValueError as exc:
        legal = describe_space(space, names=names)
        raise ActionParseError(f"{exc}; legal: {legal}", received=value, legal=legal) from None


def _element_path(path: str, index: int, shape: tuple[int, ...]) -> str:
    if not shape:
        return path
    return path + "".join(f"[{int(j)}]" for j in np.unravel_index(index, shape))


@functools.singledispatch
def _parse(space: Any, value: Any, names: Sequence[str] | None, path: str) -> Any:
    raise TypeError(f"no text view of {type(space).__name__} spaces")


def _integer(space: gs.Space, value: Any, path: str, names: Sequence[str] | None) -> int:
    """An integer from a JSON number or a string of digits (bools and fractions are errors)."""
    if isinstance(value, str):
        if not _INTEGER.fullmatch(value.strip()):
            raise _fail(space, value, "not an action name" if names else "not an integer", path, names)
        return int(value.strip())
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise _fail(space, value, "not an integer", path, names)
    if isinstance(value, (float, np.floating)) and not (math.isfinite(value) and float(value).is_integer()):
        raise _fail(space, value, "not an integer", path, names)
    return int(value)


@_parse.register(gs.Discrete)
def _parse_discrete(space: gs.Discrete, value: Any, names: Sequence[str] | None, path: str) -> int:
    start, n = int(space.start), int(space.n)
    if names and isinstance(value, str):
        lowered = [name.lower() for name in names]
        if value.strip().lower() in lowered:
            return start + lowered.index(value.strip().lower())
    number = _integer(space, value, path, names)
    if not start <= number < start + n:
        raise _fail(space, value, "out of range", path, names)
    return number


def _first_outside(flat: np.ndarray, low: np.ndarray, high: np.ndarray) -> tuple[int, str] | None:
    with np.errstate(invalid="ignore"):
        bad = (flat < low) | (flat > high)
        if flat.dtype.kind == "f":
            bad |= np.isnan(flat)
    if not np.any(bad):
        return None
    i = int(np.flatnonzero(bad)[0])
    if flat.dtype.kind == "f" and np.isnan(flat[i]):
        return i, "not a number"
    if flat[i] < low[i]:
        return i, f"below the lower bound {_bound(low[i])}"
    return i, f"above the upper bound {_bound(high[i])}"


@_parse.register(gs.Box)
def _parse_box(space: gs.Box, value: Any, names: Sequence[str] | None, path: str) -> Any:
    shape = space.shape
    if shape and math.prod(shape) == 1 and not isinstance(value, (list, tuple, np.ndarray)):
        for _ in shape:
            value = [value]  # a bare number for a one-element Box
    arr = np.asarray(_decoded(space, value, path, names))
    flat = arr.reshape(-1)
    outside = _first_outside(flat, space.low.reshape(-1), space.high.reshape(-1))
    if outside is not None:
        i, why = outside
        raise _fail(space, flat[i], why, _element_path(path, i, shape), names)
    return arr


@_parse.register(gs.MultiDiscrete)
def _parse_multi_discrete(space: gs.MultiDiscrete, value: Any, names: Sequence[str] | None, path: str) -> Any:
    arr = np.asarray(_decoded(space, value, path))
    flat = arr.reshape(-1).astype(object)
    low = _md_start(space).reshape(-1).astype(object)
    high = low + space.nvec.reshape(-1).astype(object) - 1
    outside = _first_outside(flat, low, high)
    if outside is not None:
        i, _ = outside
        raise _fail(space, flat[i], "out of range", _element_path(path, i, space.shape))
    return arr


@_parse.register(gs.MultiBinary)
def _parse_multi_binary(space: gs.MultiBinary, value: Any, names: Sequence[str] | None, path: str) -> Any:
    shape = tuple(int(n) for n in np.atleast_1d(space.n))
    if isinstance(value, str):
        bits = value.strip()
        if len(shape) != 1 or len(bits) != shape[0] or set(bits) - {"0", "1"}:
            raise _fail(space, value, f"not a string of {math.prod(shape)} bits", path)
        value = [int(b) for b in bits]
    arr = np.asarray(_decoded(space, value, path))
    flat = arr.reshape(-1)
    outside = _first_outside(flat, np.zeros_like(flat), np.ones_like(flat))
    if outside is not None:
        raise _fail(space, flat[outside[0]], "not a bit", _element_path(path, outside[0], shape))
    return arr


@_parse.register(gs.Text)
def _parse_text(space: gs.Text, value: Any, names: Sequence[str] | None, path: str) -> str:
    if not isinstance(value, str):
        raise _fail(space, value, "not a string", path)
    if not int(space.min_length) <= len(value) <= int(space.max_length):
        raise _fail(space, value, f"{len(value)} characters long", path)
    bad = next((c for c in value if c not in space.character_set), None)
    if bad is not None:
        raise _fail(space, value, f"the character {bad!r} is not allowed", path)
    return value


def _items(space: gs.Space, value: Any, path: str, n: int | None) -> Sequence[Any]:
    if not isinstance(value, (list, tuple)):
        raise _fail(space, value, "not a JSON list", path)
    if n is not None and len(value) != n:
        raise _fail(space, value, f"{len(value)} items", path)
    if len(value) > spaces.MAX_SEQUENCE_LENGTH:
        raise _fail(space, value, f"more than {spaces.MAX_SEQUENCE_LENGTH} items", path)
    return value


@_parse.register(gs.Tuple)
def _parse_tuple(space: gs.Tuple, value: Any, names: Sequence[str] | None, path: str) -> tuple[Any, ...]:
    items = _items(space, value, path, len(space.spaces))
    return tuple(_parse(s, v, None, f"{path}[{i}]") for i, (s, v) in enumerate(zip(space.spaces, items)))


@_parse.register(gs.Dict)
def _parse_dict(space: gs.Dict, value: Any, names: Sequence[str] | None, path: str) -> dict[str, Any]:
    if not isinstance(value, Mapping):
        raise _fail(space, value, "not a JSON object", path)
    missing = [k for k in space.spaces if k not in value]
    extra = [k for k in value if k not in space.spaces]
    if missing or extra:
        problems = ([f"missing the keys {_listed([json.dumps(k) for k in missing])}"] if missing else []) + (
            [f"unexpected keys {_listed([json.dumps(str(k)) for k in extra])}"] if extra else []
        )
        raise _fail(space, value, " and ".join(problems), path)
    return {
        k: _parse(s, value[k], None, f"{path}[{json.dumps(k, ensure_ascii=False)}]") for k, s in space.spaces.items()
    }


def _contained(space: gs.Space, value: Any, path: str) -> Any:
    decoded = _decoded(space, value, path)
    if not spaces.contains(space, decoded):
        raise _fail(space, value, "outside the space (a value breaks its bounds or range)", path)
    return decoded


@_parse.register(gs.Sequence)
def _parse_sequence(space: gs.Sequence, value: Any, names: Sequence[str] | None, path: str) -> Any:
    if space.stack:
        return _contained(space, value, path)
    items = _items(space, value, path, None)
    return tuple(_parse(space.feature_space, v, None, f"{path}[{i}]") for i, v in enumerate(items))


@_parse.register(gs.Graph)
def _parse_graph(space: gs.Graph, value: Any, names: Sequence[str] | None, path: str) -> Any:
    return _contained(space, value, path)


@_parse.register(gs.OneOf)
def _parse_one_of(space: gs.OneOf, value: Any, names: Sequence[str] | None, path: str) -> tuple[int, Any]:
    choice, inner = _items(space, value, path, 2)
    index = _integer(space, choice, f"{path}[0]", None)
    if not 0 <= index < len(space.spaces):
        raise _fail(space, choice, f"not a choice (there are {len(space.spaces)})", f"{path}[0]")
    return index, _parse(space.spaces[index], inner, None, f"{path}[1]")
