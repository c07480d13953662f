"""A stock OpenEnv server's named fields as Gymnasium spaces: :class:`StockView`.

A stock server (any OpenEnv server not written with openenv-gym: upstream's own envs, the
hub's) publishes at ``/schema`` the pydantic JSON Schemas of its action and observation
models: field names and JSON types, rarely bounds, never shapes. :func:`infer_view` reads
them, and, when the schema leaves a shape or a count open, the first observation the server
sends (an HTTP ``POST /reset``, which holds no session), and decides each field's space by the
rules below, first match wins. It writes down which rule decided each field
(:attr:`StockView.rules`; :meth:`StockView.describe` prints them), and every field can be
overridden (``observation_fields=`` / ``action_fields=``: a space, or ``None`` to leave the
field out).

Actions:

* a field the schema does not require (it has a default, as upstream OpenSpiel's
  ``game_name="catch"``) is left out, so the server's default applies, unless no field is
  required (then every field is the agent's to choose);
* an integer with ``minimum`` and ``maximum``, or with a range in its description
  (``column: The column index (0 to 6)`` in the model's docstring), is ``Discrete`` over it;
* an integer field paired with a list of legal actions in the observation
  (:data:`LEGAL_FIELDS`: ``legal_actions``, ``legal_moves``, ...): ``Discrete(n)``, where ``n``
  comes from the bounds above, else from the length of a list of action names in the first
  observation's metadata (``action_meanings``, Atari's), else from its largest legal action
  + 1; ``info["action_mask"]`` (``int8``, ``n``) marks the legal ones, Gymnasium's way. A flag
  list (an ``action_mask`` of 0 and 1 only) gives ``n`` by its length; an ``action_mask`` with
  other numbers lists action ids, as ``legal_actions`` does;
* a string field paired with a list of legal strings (chess's ``legal_moves``):
  ``info["legal_actions"]`` lists them;
* when one field is left, the action space is that field's space (``Discrete(4)``, not
  ``Dict(action: Discrete(4))``); the field's name wraps it on the wire;
* anything else as :func:`~openenv_gym.spaces.infer_space` decides.

Observations:

* the paired list of legal actions moves to ``info`` (the mask says the same);
* a list of numbers (or a nested list) is a ``Box`` of the shape it has in the first
  observation, reshaped by a sibling ``<name>_shape`` field when there is one (Atari's
  ``screen`` by ``screen_shape``: ``(210, 160, 3)``); its integers are ``uint8`` in
  ``[0, 255]`` when the sibling shape makes it an image and every value fits, else ``int64``;
  lists whose length varies by nature (``legal_*``, ``valid_*``, ``available_*``,
  ``possible_*``), and lists that are empty in the first observation, stay ``Sequence`` s;
* anything else as :func:`~openenv_gym.spaces.infer_space` decides (a null of an
  ``Optional`` field is a sentinel inside the space: ``-2**63`` for integers, ``-inf`` for numbers, ``""`` for
  strings, an extra last category for enums); the fields that were null in an observation
  are listed in ``info["openenv_gym.null_fields"]``.

Example, on the schema of upstream's maze and the first observation it sends::

    >>> schema = {
    ...     "action": {"type": "object", "required": ["action"],
    ...                "properties": {"action": {"type": "integer"}}},
    ...     "observation": {"type": "object", "properties": {
    ...         "legal_actions": {"type": "array", "items": {"type": "integer"}},
    ...         "current_position": {"type": "array", "items": {"type": "integer"}}}}}
    >>> view = infer_view(schema, first_observation={"legal_actions": [3], "current_position": [0, 0]})
    >>> view.action_space, view.observation_space
    (Discrete(4), Dict('current_position': Box(-9223372036854775808, 9223372036854775807, (2,), int64)))
    >>> obs, info = view.observe({"legal_actions": [1, 3], "current_position": [0, 1]})
    >>> obs["current_position"], info["action_mask"]
    (array([0, 1]), array([0, 1, 0, 1], dtype=int8))
    >>> view.act(3)
    {'action': 3}
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
from gymnasium import spaces as gs

from ..errors import ProtocolMismatchError
from ._common import _err, _short_list, _what
from .description import MAX_BOX_ELEMENTS
from .infer import InferredSpace, _Ctx, _resolve, infer_space
from .values import decode, encode, neutral

__all__ = [
    "StockView",
    "LegalActions",
    "infer_view",
    "needs_first_observation",
    "LEGAL_FIELDS",
    "ACTION_MASK",
    "LEGAL_ACTIONS",
    "NULL_FIELDS",
    "UNLISTED_LEGAL_ACTIONS",
    "EXTRA_FIELDS",
    "MISSING_FIELDS",
    "RESERVED_OBSERVATION_FIELDS",
]

#: Observation fields OpenEnv itself puts on every observation.
RESERVED_OBSERVATION_FIELDS = ("done", "reward", "metadata")
#: Observation fields that list the legal actions, in the order they are looked for.
LEGAL_FIELDS = ("legal_actions", "legal_moves", "available_actions", "valid_actions", "valid_moves",
                "legal_action_mask", "action_mask")
#: Observation lists whose length varies by nature: never a fixed-shape ``Box``.
_VARIABLE_LENGTH = re.compile(r"^(legal|valid|available|possible)_|_mask$")
#: Metadata keys of the first observation that name every action, in order.
_ACTION_NAMES = ("action_meanings", "action_names")

#: ``info`` key of the legal actions of a ``Discrete`` action, as Gymnasium's Taxi puts them.
ACTION_MASK = "action_mask"
#: ``info`` key of the legal actions of any other action space (chess's legal moves).
LEGAL_ACTIONS = "legal_actions"
#: ``info`` key naming the fields that were null in this observation.
NULL_FIELDS = "openenv_gym.null_fields"
#: ``info`` key of legal actions the ``Discrete`` action space cannot express (past its ``n``).
UNLISTED_LEGAL_ACTIONS = "openenv_gym.unlisted_legal_actions"
#: ``info`` key holding the observation fields of a stock server that are not in the
#: observation space (an answer of another shape, say), by name.
EXTRA_FIELDS = "openenv_gym.extra_fields"
#: ``info`` key naming the fields of the observation space the server left out (they
#: take their schema default, else :func:`~openenv_gym.spaces.neutral`).
MISSING_FIELDS = "openenv_gym.missing_fields"

#: Largest ``Discrete`` a described range or a legal-action list may give.
_MAX_DISCRETE = 1_000_000

#: Per-field overrides: a space, a JSON Schema of the field, ``...`` (the server's own schema
#: of it: brings in a field left out by default), or ``None`` (leave it out).
FieldOverrides = Mapping[str, Any]


@dataclass(frozen=True)
class LegalActions:
    """Where an observation lists the legal actions, and how they map to the action space.

    ``kind`` is ``"ids"`` (a list of ``Discrete`` actions), ``"flags"`` (one 0/1 per
    action) or ``"values"`` (a list of actions of any other space, such as chess's UCI
    strings); ``n`` and ``start`` are the ``Discrete`` action space's.
    """

    field: str
    kind: Literal["ids", "flags", "values"]
    n: int = 0
    start: int = 0

    def info(self, legal: Any) -> dict[str, Any]:
        """The ``info`` entries for one observation's list of legal actions."""
        if not isinstance(legal, (list, tuple)):
            return {}
        if self.kind == "values":
            return {LEGAL_ACTIONS: list(legal)}
        mask = np.zeros(self.n, dtype=np.int8)
        if self.kind == "flags":
            flags = np.asarray(legal[: self.n], dtype=np.int8)
            mask[: len(flags)] = flags != 0
            return {ACTION_MASK: mask}
        unlisted = []
        for action in legal:
            index = action - self.start if isinstance(action, int) and not isinstance(action, bool) else -1
            if 0 <= index < self.n:
                mask[index] = 1
            else:
                unlisted.append(action)
        return {ACTION_MASK: mask, **({UNLISTED_LEGAL_ACTIONS: unlisted} if unlisted else {})}


@dataclass(frozen=True)
class StockView:
    """How one stock server's named fields look as Gymnasium spaces (:func:`infer_view`).

    :meth:`observe` turns the fields of an observation into a value of
    :attr:`observation_space` and the ``info`` entries the view adds; :meth:`act` turns an
    action of :attr:`action_space` into the action object the server takes.
    """

    observation: InferredSpace
    action: InferredSpace
    legal: LegalActions | None = None
    #: Which rule decided each field's space (``"observation.screen"`` -> why), in order.
    rules: Mapping[str, str] = field(default_factory=dict)

    @property
    def observation_space(self) -> gs.Space:
        return self.observation.space

    @property
    def action_space(self) -> gs.Space:
        return self.action.space

    def observe(self, fields: Mapping[str, Any]) -> tuple[Any, dict[str, Any]]:
        """``(observation, info)`` for the named fields of one observation (without
        ``done``, ``reward`` and ``metadata``, which the caller reads)."""
        fields = dict(fields)
        info: dict[str, Any] = {}
        known = self.observation_space.spaces if isinstance(self.observation_space, gs.Dict) else None
        if self.legal is not None and (known is None or self.legal.field not in known):
            info.update(self.legal.info(fields.pop(self.legal.field, None)))
        if known is not None:
            # Nothing is dropped silently: fields outside the space go to info, and fields
            # the server left out (they take their default or a neutral value) are named there.
            extra = {k: fields.pop(k) for k in list(fields) if k not in known}
            missing = [k for k in known if k not in fields]
            nulls = [k for k in known if k in fields and fields[k] is None]
            if extra:
                info[EXTRA_FIELDS] = extra
            if missing:
                info[MISSING_FIELDS] = missing
            if nulls:
                info[NULL_FIELDS] = nulls
        return self.observation.to_space(fields), info

    def act(self, action: Any) -> dict[str, Any]:
        """The action object (named fields) for ``action``, a value of :attr:`action_space`."""
        data = self.action.to_json(action)
        if not isinstance(data, dict):
            raise TypeError(
                f"a stock OpenEnv server takes an action object of named fields; the action space "
                f"must be a Dict of those fields (or one field's space), not {self.action_space}"
            )
        return data

    def describe(self) -> str:
        """The view as a table: each field, its space and the rule that chose it."""
        width = max((len(k) for k in self.rules), default=0)
        lines = [f"{name:<{width}}  {why}" for name, why in self.rules.items()]
        return "\n".join(lines)


def needs_first_observation(schema: Mapping[str, Any]) -> bool:
    """``True`` when the schema leaves open something the first observation would settle:
    an observation list's shape, or the count of the actions a legal list pairs with (both
    are lists)."""
    observation = _properties(schema.get("observation"))
    return any(_is_array(s, _defs(schema.get("observation"))) for s in observation.values())


def infer_view(
    schema: Mapping[str, Any],
    *,
    first_observation: Mapping[str, Any] | None = None,
    observation_fields: FieldOverrides | None = None,
    action_fields: FieldOverrides | None = None,
    observation_space: gs.Space | None = None,
    action_space: gs.Space | None = None,
    first_observation_source: str = "",
) -> StockView:
    """The :class:`StockView` of a stock server, from its ``/schema`` document and, when at
    hand, the fields of its first observation (the ``observation`` of a reset reply; its
    ``metadata`` may name the actions). See the module docstring for the rules.

    ``observation_fields`` / ``action_fields`` override single fields: a space (its values
    travel as :func:`~openenv_gym.spaces.encode` writes them), a JSON Schema of the field
    (``{"enum": ["UP", "DOWN"]}``, ``{"type": "integer", "minimum": 0, "maximum": 3}``: its
    space is inferred as above), ``...`` (the space the server's own schema gives, for an
    optional action field) or ``None`` (leave the field out; an observation field then goes
    to ``info["openenv_gym.extra_fields"]``); ``observation_space`` / ``action_space`` replace
    a whole side (a ``Dict`` of fields, or one field's space when the side has one field).
    ``first_observation_source`` says, in :attr:`StockView.rules`, where the first observation
    came from (or why there is none).

    Raises:
        ProtocolMismatchError: the schema has no object schema for a side that is not given whole.
        ValueError: an override leaves out a field the server requires.
    """
    rules: dict[str, str] = {"first observation": first_observation_source} if first_observation_source else {}
    first = dict(first_observation or {})
    metadata = first.pop("metadata", None)
    metadata = metadata if isinstance(metadata, Mapping) else {}

    observation_schema = _object(schema.get("observation"), "observation", observation_space)
    action_schema = _object(schema.get("action"), "action", action_space)
    obs_props = {k: v for k, v in _properties(observation_schema).items() if k not in RESERVED_OBSERVATION_FIELDS}
    act_props = {k: v for k, v in _properties(action_schema).items() if k != "metadata"}
    obs_defs, act_defs = _defs(observation_schema), _defs(action_schema)

    # -- the action -----------------------------------------------------------------------
    overrides = dict(action_fields or {})
    listed = action_schema.get("required")
    required = {name for name in listed if isinstance(name, str)} if isinstance(listed, list) else set()
    act_rules: dict[str, InferredSpace] = {}
    for name in [*act_props, *sorted(set(overrides) - set(act_props))]:
        where, prop = f"action.{name}", act_props.get(name)
        if name in overrides:
            if overrides[name] is None and name in required:
                raise ValueError(f"action_fields leaves out {name!r}, which the server requires")
            given = _override(overrides[name], prop, act_defs, "action_fields", name)
            if given is None:
                rules[where] = "left out (action_fields)"
            else:
                act_rules[name], rules[where] = given
            continue
        if name not in required and required & set(act_props):
            default = prop.get("default") if isinstance(prop, Mapping) else None
            rules[where] = ("left out: not required, the server's default "
                            f"{'applies' if default is None else repr(default) + ' applies'}; "
                            "action_fields={" + repr(name) + ": ...} sends it")
            continue
        prop, why = _described_bounds(prop, name, action_schema)
        inferred = infer_space(prop if isinstance(prop, Mapping) else {}, defs=act_defs)
        act_rules[name] = inferred
        rules[where] = f"{inferred.space}: {why or _schema_rule(prop, inferred.space, act_defs)}"

    legal = None
    if action_space is None and len(act_rules) == 1:
        name = next(iter(act_rules))
        paired = _paired_legal(obs_props, obs_defs, observation_fields)
        if paired is not None:
            act_rules[name], legal, why = _pair(act_rules[name], paired, first, metadata)
            rules[f"action.{name}"] = why.replace("<bounds>", rules[f"action.{name}"].split(": ", 1)[-1])
    action = _whole(action_space, "action") if action_space is not None else _action_object(act_rules)

    # -- the observation ------------------------------------------------------------------
    overrides = dict(observation_fields or {})
    obs_rules: dict[str, InferredSpace] = {}
    for name in [*obs_props, *sorted(set(overrides) - set(obs_props))]:
        where, prop = f"observation.{name}", obs_props.get(name)
        if legal is not None and name == legal.field and name not in overrides:
            rules[where] = f"in info[{(LEGAL_ACTIONS if legal.kind == 'values' else ACTION_MASK)!r}]"
            continue
        if name in overrides:
            given = _override(overrides[name], prop, obs_defs, "observation_fields", name)
            if given is None:
                rules[where] = f"left out (observation_fields): in info[{EXTRA_FIELDS!r}]"
            else:
                obs_rules[name], rules[where] = given
            continue
        shaped = _shaped_list(name, prop, obs_defs, first, obs_props)
        if shaped is not None:
            obs_rules[name], why = shaped
        else:
            obs_rules[name] = infer_space(prop if isinstance(prop, Mapping) else {}, defs=obs_defs)
            why = _schema_rule(prop, obs_rules[name].space, obs_defs)
        rules[where] = f"{obs_rules[name].space}: {why}"
    observation = _whole(observation_space, "observation") if observation_space is not None else _fields_object(
        obs_rules, {k: p["default"] for k, p in obs_props.items() if isinstance(p, Mapping) and "default" in p})
    return StockView(observation, action, legal, rules)


# -- the pieces ---------------------------------------------------------------------------


def _object(schema: Any, what: str, whole: gs.Space | None) -> Mapping[str, Any]:
    if isinstance(schema, Mapping):
        resolved = _resolve(schema, _Ctx(_defs(schema)), frozenset())
        if resolved is not None and isinstance(resolved[0], Mapping):
            return resolved[0]
    if whole is not None:
        return {}
    raise ProtocolMismatchError(
        f"no {what} schema (an object of the {what}'s fields), got {_what(schema)}; "
        f"pass {what}_space= to give its space"
    )


def _properties(schema: Any) -> dict[str, Any]:
    props = schema.get("properties") if isinstance(schema, Mapping) else None
    return dict(props) if isinstance(props, Mapping) else {}


def _defs(schema: Any) -> Mapping[str, Any]:
    if not isinstance(schema, Mapping):
        return {}
    return schema.get("$defs") or schema.get("definitions") or {}


def _override(given: Any, prop: Any, defs: Mapping[str, Any], keyword: str,
              name: str) -> tuple[InferredSpace, str] | None:
    """A field as an override says: ``(rule, why)``, or ``None`` to leave it out.

    ``given`` is a space (its values travel as :func:`~openenv_gym.spaces.encode` writes
    them), a JSON Schema for the field (its space inferred by
    :func:`~openenv_gym.spaces.infer_space`: ``{"enum": [...]}``, bounds, ...), ``...`` (the
    space the server's own schema of the field gives, for a field left out by default), or
    ``None``."""
    if given is None:
        return None
    source = "not in the schema; " if prop is None else ""
    if given is Ellipsis:
        if prop is None:
            raise ValueError(f"{keyword}: {name!r} is not a field of the server's schema, so ... cannot infer it")
        inferred = infer_space(prop if isinstance(prop, Mapping) else {}, defs=defs)
        return inferred, f"{inferred.space}: {_schema_rule(prop, inferred.space, defs)} ({keyword}: ...)"
    if isinstance(given, Mapping):
        inferred = infer_space(given, defs=defs)
        return inferred, f"{inferred.space}: {source}the JSON Schema {keyword} gives"
    if isinstance(given, gs.Space):
        space = given
        rule = InferredSpace(space, lambda value: decode(space, value), lambda value: encode(space, value))
        return rule, f"{space}: {source}given ({keyword})"
    raise TypeError(f"{keyword}[{name!r}] must be a gymnasium space, a JSON Schema (dict), ... or None, "
                    f"not {_what(given)}")


def _whole(space: gs.Space, what: str) -> InferredSpace:
    """A whole side the user gave: a ``Dict`` of fields, or one field's space."""
    parts = space.spaces if isinstance(space, gs.Dict) else None

    def to_space(value: Any) -> Any:
        if parts is not None and isinstance(value, Mapping):
            return {k: decode(s, value[k], path=k) if k in value else neutral(s) for k, s in parts.items()}
        return decode(space, value)

    return InferredSpace(space, to_space, lambda value: encode(space, value))


def _fields_object(rules: Mapping[str, InferredSpace], defaults: Mapping[str, Any]) -> InferredSpace:
    """The ``Dict`` of the observation's fields: a missing field takes its default, else neutral."""
    space = gs.Dict([(k, r.space) for k, r in rules.items()])

    def to_space(fields: Any) -> dict[str, Any]:
        if not isinstance(fields, Mapping):
            raise _err("observation", f"expected an object of named fields, got {_what(fields)}")
        out = {}
        for key, rule in rules.items():
            if key in fields:
                out[key] = rule.to_space(fields[key])
            elif key in defaults:
                out[key] = rule.to_space(defaults[key])
            else:
                out[key] = neutral(rule.space)
        return out

    def to_json(value: Any) -> dict[str, Any]:
        return {k: r.to_json(value[k]) for k, r in rules.items()}

    return InferredSpace(space, to_space, to_json)


def _action_object(rules: Mapping[str, InferredSpace]) -> InferredSpace:
    """The action: one field's space when there is one field, else a ``Dict`` of them."""
    if len(rules) == 1:
        (name, rule), = rules.items()
        return InferredSpace(rule.space, lambda fields: rule.to_space(fields[name]),
                             lambda value: {name: rule.to_json(value)})
    space = gs.Dict([(k, r.space) for k, r in rules.items()])

    def to_json(value: Any) -> dict[str, Any]:
        if not isinstance(value, Mapping):
            raise _err("action", f"expected a dict of the fields {_short_list(rules)}, got {_what(value)}")
        missing = [k for k in rules if k not in value]
        if missing:
            raise _err("action", f"missing key(s) {_short_list(missing)}")
        return {k: r.to_json(value[k]) for k, r in rules.items()}

    return InferredSpace(space, lambda fields: {k: r.to_space(fields[k]) for k, r in rules.items()}, to_json)


def _schema_rule(prop: Any, space: gs.Space, defs: Mapping[str, Any]) -> str:
    """In words, which of :func:`~openenv_gym.spaces.infer_space`'s rules gave ``space``."""
    resolved = _resolve(prop, _Ctx(defs), frozenset())
    schema = resolved[0] if resolved is not None and isinstance(resolved[0], Mapping) else {}
    members = schema.get("anyOf") or schema.get("oneOf")
    members = members if isinstance(members, list) else []
    nullable = any(isinstance(m, Mapping) and m.get("type") == "null" for m in members) or (
        isinstance(schema.get("type"), list) and "null" in schema["type"])
    if type(space).__name__ == "JsonText":
        what = "free-form JSON, as text (samples fit the schema)"
    elif isinstance(space, gs.Discrete) and schema.get("type") == "boolean":
        what = "a boolean: 0 is false, 1 true"
    elif isinstance(space, gs.Discrete):
        what = "the schema's enum" if "enum" in schema or "$ref" in prop else "the schema's bounds"
        what += "; the last category stands for null" if nullable else ""
    elif isinstance(space, gs.Text):
        what = "a string" + ('; "" stands for null' if nullable else "")
    elif isinstance(space, gs.Sequence):
        what = "a list of varying length" + ("; empty stands for null" if nullable else "")
    elif isinstance(space, gs.Box) and nullable:
        what = "a number or null; -inf stands for null" if space.dtype.kind == "f" else (
            "an integer or null; -2**63 stands for null")
    elif isinstance(space, gs.Box):
        bounded = bool(np.all(space.bounded_below) and np.all(space.bounded_above))
        what = "the schema's bounds" if bounded else "the schema's JSON type (no bounds given)"
    else:
        what = "the schema's JSON type"
    return what


# -- ranges written in descriptions --------------------------------------------------------

_RANGES = (
    re.compile(r"\(\s*(-?\d+)\s*(?:to|-|–|\.\.)\s*(-?\d+)\s*\)"),   # (0 to 6), (0-6)
    re.compile(r"\[\s*(-?\d+)\s*,\s*(-?\d+)\s*\]"),                 # [0, 5]
    re.compile(r"\bbetween\s+(-?\d+)\s+and\s+(-?\d+)\b"),          # between 0 and 6
    re.compile(r"\bfrom\s+(-?\d+)\s+to\s+(-?\d+)\b"),              # from 0 to 6
)


def described_range(text: str) -> tuple[int, int] | None:
    """The integer range a description states, if it states one.

        >>> described_range("column: The column index (0 to 6) where the piece will be placed.")
        (0, 6)
        >>> described_range("a number between 1 and 20"), described_range("the step count")
        ((1, 20), None)
    """
    for pattern in _RANGES:
        match = pattern.search(text)
        if match:
            low, high = int(match.group(1)), int(match.group(2))
            if low <= high and high - low < _MAX_DISCRETE:
                return low, high
    return None


def _described_bounds(prop: Any, name: str, model: Mapping[str, Any]) -> tuple[Any, str | None]:
    """``prop`` with the bounds its description (or the model docstring's line for ``name``)
    states, for an integer without both bounds; and the rule, when one applied."""
    if not isinstance(prop, Mapping) or prop.get("type") != "integer" or (
        "minimum" in prop and "maximum" in prop
    ):
        return prop, None
    description = prop.get("description")
    texts = [description] if isinstance(description, str) else []
    for line in str(model.get("description") or "").splitlines():
        if line.strip().startswith(f"{name}:"):
            texts.append(line.strip())
    for text in texts:
        found = described_range(text)
        if found is not None:
            return {**prop, "minimum": found[0], "maximum": found[1]}, (
                f"the range {found[0]}..{found[1]} its description states ({text.strip()[:80]!r})")
    return prop, None


# -- legal actions ---------------------------------------------------------------------------


def _paired_legal(props: Mapping[str, Any], defs: Mapping[str, Any], overrides: FieldOverrides | None) -> str | None:
    """The observation field that lists the legal actions, if the schema has one."""
    for name in LEGAL_FIELDS:
        if name in props and _is_array(props[name], defs) and not (overrides and name in overrides):
            return name
    return None


def _pair(rule: InferredSpace, field_name: str, first: Mapping[str, Any],
          metadata: Mapping[str, Any]) -> tuple[InferredSpace, LegalActions | None, str]:
    """The action field's rule once paired with the legal list ``field_name``: ``(rule, legal, why)``
    (``<bounds>`` in ``why`` stands for the rule that bounded a ``Discrete`` already)."""
    legal = first.get(field_name)
    space = rule.space
    is_int = isinstance(space, gs.Discrete) or (isinstance(space, gs.Box) and space.dtype.kind in "iu"
                                                and space.shape == ())
    flags = isinstance(legal, list) and all(v in (0, 1) and not isinstance(v, bool) or v is True or v is False
                                            for v in legal)
    if "mask" in field_name and is_int and (flags or not isinstance(legal, list)):
        if isinstance(legal, list) and legal:
            n = len(legal)
            return (_discrete(n, 0), LegalActions(field_name, "flags", n),
                    f"Discrete({n}): one flag per action in {field_name} of the first observation; "
                    f"info[{ACTION_MASK!r}]")
        return rule, None, f"{space}: {field_name} was not in a first observation, so no mask"
    if is_int:
        if isinstance(space, gs.Discrete):
            n, start = int(space.n), int(space.start)
            return (rule, LegalActions(field_name, "ids", n, start),
                    f"{space}: <bounds>; info[{ACTION_MASK!r}] from {field_name}")
        names = next((metadata[k] for k in _ACTION_NAMES if isinstance(metadata.get(k), list)), None)
        ids = [a for a in legal if isinstance(a, int) and not isinstance(a, bool)] if isinstance(legal, list) else []
        if names and (not ids or (min(ids) >= 0 and max(ids) < len(names))):
            n, why = len(names), f"one per name in the first observation's metadata ({len(names)} names)"
        elif ids and min(ids) >= 0 and max(ids) < _MAX_DISCRETE:
            n, why = max(ids) + 1, f"the largest legal action of the first observation ({max(ids)}) + 1"
        else:
            return rule, None, f"{space}: no first observation with legal actions to count them"
        return (_discrete(n, 0), LegalActions(field_name, "ids", n),
                f"Discrete({n}): {why}; info[{ACTION_MASK!r}] from {field_name}")
    return rule, LegalActions(field_name, "values"), f"{space}: a string; info[{LEGAL_ACTIONS!r}] from {field_name}"


def _discrete(n: int, start: int) -> InferredSpace:
    def to_json(value: Any) -> int:
        if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)) and not (
            isinstance(value, np.ndarray) and value.shape == () and value.dtype.kind in "iu"
        ):
            raise _err("action", f"expected an integer action, got {_what(value)}")
        return int(value)

    return InferredSpace(gs.Discrete(n, start=start), lambda value: int(value), to_json)


# -- lists of numbers with a shape -------------------------------------------------------------


def _is_array(schema: Any, defs: Mapping[str, Any]) -> bool:
    resolved = _resolve(schema, _Ctx(defs), frozenset())
    return resolved is not None and isinstance(resolved[0], Mapping) and resolved[0].get("type") == "array"


def _numeric_depth(schema: Any, defs: Mapping[str, Any]) -> tuple[int, Mapping[str, Any]] | None:
    """``(depth, item schema)`` of an array of (arrays of ...) numbers or integers, else ``None``."""
    depth = 0
    while True:
        resolved = _resolve(schema, _Ctx(defs), frozenset())
        if resolved is None or not isinstance(resolved[0], Mapping):
            return None
        schema = resolved[0]
        if schema.get("type") != "array":
            return (depth, schema) if depth and schema.get("type") in ("integer", "number") else None
        schema, depth = schema.get("items", {}), depth + 1


def _shaped_list(name: str, prop: Any, defs: Mapping[str, Any], first: Mapping[str, Any],
                 props: Mapping[str, Any]) -> tuple[InferredSpace, str] | None:
    """A fixed-shape ``Box`` for a list of numbers, from the first observation, or ``None``."""
    numeric = _numeric_depth(prop, defs)
    value = first.get(name)
    if numeric is None or _VARIABLE_LENGTH.search(name) or not isinstance(value, list) or not value:
        return None
    depth, item = numeric
    integer = item.get("type") == "integer"
    try:
        array = np.asarray(value, dtype=np.int64 if integer else np.float64)
    except (TypeError, ValueError, OverflowError):
        return None
    if array.ndim != depth or array.size > MAX_BOX_ELEMENTS:
        return None
    shape, wire_shape = tuple(array.shape), tuple(array.shape)
    why = f"{'x'.join(map(str, shape))} values in the first observation"
    sibling = first.get(f"{name}_shape")
    if depth == 1 and isinstance(sibling, list) and all(isinstance(d, int) and d > 0 for d in sibling) and (
        math.prod(sibling) == array.size
    ):
        shape = tuple(sibling)
        why += f", shaped by {name}_shape"
    low, high = _item_bounds(item)
    dtype: Any = np.int64 if integer else np.float64
    if integer and shape != wire_shape and len(shape) in (2, 3) and array.min() >= 0 and array.max() <= 255 and (
        low is None and high is None
    ):
        dtype, low, high = np.uint8, 0, 255
        why += ", every value within 0..255 (an image)"
    box = gs.Box(low=-math.inf if low is None else low, high=math.inf if high is None else high,
                 shape=shape, dtype=dtype)
    return _box_rule(box, wire_shape, name), why


def _item_bounds(item: Mapping[str, Any]) -> tuple[float | None, float | None]:
    low, high = item.get("minimum"), item.get("maximum")
    number = (int, float)
    return (low if isinstance(low, number) else None, high if isinstance(high, number) else None)


def _box_rule(box: gs.Box, wire_shape: tuple[int, ...], name: str) -> InferredSpace:
    """Converters between a (possibly flat) list on the wire and ``box``'s arrays, checked:
    a value outside the dtype's range, or a list of another shape, is an error that says how
    to override the field."""
    integer = box.dtype.kind in "iu"
    wide = np.int64 if integer else np.float64
    info = np.iinfo(np.dtype(box.dtype).name) if integer else None

    def to_space(value: Any) -> np.ndarray:
        try:
            array = np.asarray(value, dtype=wide)
        except (TypeError, ValueError, OverflowError):
            raise _err(f"value[{name!r}]", f"expected numbers, got {_what(value)}") from None
        if array.shape != wire_shape:
            raise _err(f"value[{name!r}]", (
                f"expected a list of shape {wire_shape} (its shape in the first observation), got shape "
                f"{array.shape}; pass observation_fields={{{name!r}: <space>}} to say its space"))
        if info is not None and array.size and (array.min() < info.min or array.max() > info.max):
            raise _err(f"value[{name!r}]", f"values outside {box.dtype}'s range {info.min}..{info.max}: pass "
                       f"observation_fields={{{name!r}: <space>}} to say its space")
        return array.reshape(box.shape).astype(box.dtype, copy=False)

    def to_json(value: Any) -> list:
        return np.asarray(value).reshape(wire_shape).tolist()

    return InferredSpace(box, to_space, to_json)
