"""Environments that speak OpenEnv's named fields, served without pydantic.

A stock OpenEnv environment takes an action object of named fields (chess:
``{"move": "e2e4"}``) and answers an observation object of named fields plus
``reward`` and ``done``; its ``/schema`` is the pydantic JSON Schema of its
models. :class:`FieldsEnv` is that contract in plain Python: subclass it,
declare the schemas with :func:`model_schema`, and ``create_app`` serves it
exactly as ``openenv``'s own ``create_app`` would serve the pydantic original
(same frames, same ``/schema``), on openenv-gym's server machinery::

    >>> class Counter(FieldsEnv):
    ...     name = "counter_env"
    ...     action_schema = model_schema(
    ...         "CounterAction", {"step": {"type": "integer"}}, kind="action", required=["step"])
    ...     observation_schema = model_schema(
    ...         "CounterObservation", {"count": {"type": "integer", "default": 0}}, kind="observation")
    ...     state_schema = model_schema("State", {}, kind="state")
    ...     def reset(self, *, seed=None, episode_id=None):
    ...         self.count, self.id = 0, episode_id
    ...         return FieldsObservation({"count": 0})
    ...     def step(self, action):
    ...         self.count += action["step"]
    ...         return FieldsObservation({"count": self.count}, reward=1.0, done=self.count >= 10)
    ...     def state(self):
    ...         return {"episode_id": self.id, "step_count": self.count}
    >>> app = create_app(Counter)          # doctest: +SKIP

Actions are validated against ``action_schema`` the way pydantic validates an
OpenEnv ``Action`` (``extra="forbid"``, an optional ``metadata`` object, lax
coercion of numeric strings), and a bad one gets a ``VALIDATION_ERROR`` whose
``errors`` name the field.
"""

from __future__ import annotations

import abc
import inspect
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal

from . import spaces
from .protocol.mcp import McpToolResult, ToolSpec, tool_not_found
from .protocol.messages import Problems, error_entry, invalid

__all__ = ["FieldsEnv", "FieldsObservation", "model_schema", "validate_action", "BASE_STATE_DESCRIPTION"]

_BASE_FIELDS: dict[str, dict[str, dict]] = {
    "action": {
        "metadata": {
            "additionalProperties": True,
            "description": "Additional metadata for the action",
            "type": "object",
        },
    },
    "observation": {
        "done": {"default": False, "description": "Whether the episode has terminated", "type": "boolean"},
        "reward": {
            "anyOf": [{"type": "boolean"}, {"type": "integer"}, {"type": "number"}, {"type": "null"}],
            "default": None,
            "description": "Reward signal from the last action",
        },
        "metadata": {
            "additionalProperties": True,
            "description": "Additional metadata for the observation",
            "type": "object",
        },
    },
    "state": {
        "episode_id": {
            "anyOf": [{"type": "string"}, {"type": "null"}],
            "default": None,
            "description": "Unique identifier for the current episode",
        },
        "step_count": {
            "default": 0,
            "description": "Number of steps taken in the current episode",
            "minimum": 0,
            "type": "integer",
        },
    },
}


#: The ``/schema`` ``state`` of an env without a state class of its own (OpenEnv's ``State``).
BASE_STATE_DESCRIPTION = (
    "Base class for environment state.\n\nRepresents internal environment state, separate from "
    "observations."
)


def model_schema(
    title: str,
    fields: Mapping[str, dict],
    *,
    kind: Literal["action", "observation", "state"],
    required: Iterable[str] = (),
    description: str | None = None,
    defs: Mapping[str, dict] | None = None,
) -> dict:
    """The JSON Schema pydantic writes for an OpenEnv model, without pydantic.

    ``kind`` adds the fields OpenEnv's base class declares (``metadata`` for an
    action; ``done``, ``reward``, ``metadata`` for an observation;
    ``episode_id``, ``step_count`` for a state), ahead of ``fields`` as
    pydantic orders them; a field of ``fields`` with the same name replaces the
    base one. Each property gets pydantic's title (``legal_moves`` ->
    ``"Legal Moves"``) unless it has one. Actions and observations forbid
    extra keys, states allow them, as OpenEnv's models do.

        >>> model_schema("ChessAction", {"move": {"type": "string"}}, kind="action",
        ...              required=["move"])["properties"]["move"]
        {'title': 'Move', 'type': 'string'}
    """
    properties = {**_BASE_FIELDS[kind], **fields}
    schema: dict[str, Any] = {}
    if defs:
        schema["$defs"] = dict(defs)
    schema["additionalProperties"] = kind == "state"
    if description is not None:
        schema["description"] = description
    schema["properties"] = {
        name: dict(prop) if _has_ref(prop) else {"title": name.replace("_", " ").title(), **prop}
        for name, prop in properties.items()
    }
    if required := list(required):
        schema["required"] = required
    schema["title"] = title
    schema["type"] = "object"
    return schema


def _has_ref(prop: Mapping[str, Any]) -> bool:
    """Pydantic leaves the title off a field that is a ``$ref`` or an ``anyOf`` holding one."""
    return "$ref" in prop or any("$ref" in option for option in prop.get("anyOf", ()))


@dataclass
class FieldsObservation:
    """What a :class:`FieldsEnv` answers to ``reset`` and ``step``.

    ``fields`` are the observation's own fields (without ``done``, ``reward``
    and ``metadata``); ``reward`` goes out as a JSON float (``None`` stays
    ``null``), never a boolean.
    """

    fields: dict[str, Any]
    reward: float | None = 0.0
    done: bool = False
    metadata: dict[str, Any] = field(default_factory=dict)


class FieldsEnv(abc.ABC):
    """An environment speaking OpenEnv's named fields (subclass it; see the module).

    Class attributes: ``name`` (the OpenEnv env name, e.g. ``"chess_env"``)
    and the JSON Schemas ``action_schema``, ``observation_schema`` and
    ``state_schema`` (build them with :func:`model_schema`);
    ``reset_observation_schema`` defaults to ``observation_schema``.
    ``reset`` takes ``seed`` and ``episode_id`` and any keyword options it
    declares (a reset carrying an undeclared key is a ``VALIDATION_ERROR``).

    An env with MCP tools (as OpenEnv's ``MCPEnvironment`` has) lists them in
    ``tools`` and runs them in :meth:`call_tool`; the server serves them on ``/mcp``
    (``step`` still gets ``{"type": "call_tool", ...}`` actions as they come).
    """

    name: ClassVar[str]
    description: ClassVar[str] = ""
    action_schema: ClassVar[dict]
    observation_schema: ClassVar[dict]
    state_schema: ClassVar[dict]
    reset_observation_schema: ClassVar[dict | None] = None
    #: ``False`` for envs that answer ``step`` before any ``reset`` (OpenEnv's MCP envs).
    reset_before_step: ClassVar[bool] = True
    #: The MCP tools the env serves on ``/mcp``; none by default.
    tools: ClassVar[tuple[ToolSpec, ...]] = ()

    @abc.abstractmethod
    def reset(self, *, seed: int | None = None, episode_id: str | None = None) -> FieldsObservation:
        """Start an episode."""

    @abc.abstractmethod
    def step(self, action: dict[str, Any]) -> FieldsObservation:
        """Apply an action (already validated against ``action_schema``)."""

    @abc.abstractmethod
    def state(self) -> dict[str, Any]:
        """The episode state (``episode_id``, ``step_count``, env fields)."""

    def close(self) -> None:  # noqa: B027 - optional: most envs hold nothing to release
        """Release what the env holds."""

    def call_tool(self, name: str, arguments: dict[str, Any]) -> McpToolResult:
        """Run one of :attr:`tools` with the arguments a client sent (unchecked); raise
        :class:`~openenv_gym.errors.ToolCallError` for a call that fails, with OpenEnv's error type."""
        raise tool_not_found(name)

    @classmethod
    def schema_document(cls) -> dict:
        """The ``/schema`` response, as ``openenv`` 0.10's ``create_app`` publishes it."""
        return {
            "action": cls.action_schema,
            "observation": cls.observation_schema,
            "reset_observation": cls.reset_observation_schema or cls.observation_schema,
            "state": cls.state_schema,
        }

    @classmethod
    def parse_action(cls, data: Any) -> dict[str, Any]:
        """The validated action ``step`` gets; by default ``data`` checked against ``action_schema``."""
        return validate_action(cls.action_schema, data)

    def inferred_spaces(self) -> tuple[Any, Any]:
        """The ``(observation_space, action_space)`` a client infers from the schemas and, as a
        client reads it from ``POST /reset``, this env's first observation (an unseeded reset)."""
        schema = self.schema_document()
        first = None
        if spaces.needs_first_observation(schema):
            observation = self.reset()
            first = {**observation.fields, "metadata": observation.metadata}
        view = spaces.infer_view(schema, first_observation=first)
        return view.observation_space, view.action_space

    @classmethod
    def reset_options(cls) -> frozenset[str]:
        """Keyword options ``reset`` accepts besides ``seed`` and ``episode_id``."""
        parameters = inspect.signature(cls.reset).parameters
        return frozenset(parameters) - {"self", "seed", "episode_id"}


# -- action validation, as pydantic validates an OpenEnv Action ---------------


def validate_action(schema: Mapping[str, Any], data: Any) -> dict[str, Any]:
    """``data`` checked against an action object schema and coerced like pydantic's lax mode.

    Raises :class:`~openenv_gym.errors.ProtocolError` (``VALIDATION_ERROR``) naming
    the bad fields (the first few, see :class:`~openenv_gym.protocol.messages.Problems`):
    unknown keys (``extra_forbidden``), missing required ones,
    values of the wrong type. Integers accept integral floats and integer
    strings, numbers accept numeric strings; string enums accept their values.

        >>> validate_action({"properties": {"column": {"type": "integer"}}, "required": ["column"]},
        ...                 {"column": "3"})
        {'column': 3}
    """
    if not isinstance(data, dict):
        raise invalid(error_entry([], "Input should be a valid dictionary", data, "dict_type"))
    properties = schema.get("properties", {})
    defs = schema.get("$defs", {})
    problems = Problems()
    out: dict[str, Any] = {}
    for key, value in data.items():
        if key not in properties:
            problems.add([key], "Extra inputs are not permitted", value, "extra_forbidden")
            continue
        try:
            out[key] = _coerce(properties[key], value, defs)
        except _Invalid as exc:
            problems.add([key], exc.msg, value, exc.kind)
    for key in schema.get("required", ()):
        if key not in data:
            problems.add([key], "Field required", data, "missing")
    if problems:
        raise problems.error()
    return out


class _Invalid(Exception):
    def __init__(self, msg: str, kind: str) -> None:
        self.msg, self.kind = msg, kind


def _coerce(schema: Mapping[str, Any], value: Any, defs: Mapping[str, Any]) -> Any:
    ref = schema.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/$defs/"):
        schema = defs.get(ref[len("#/$defs/"):], {})
    if "const" in schema:
        if value != schema["const"] or type(value) is not type(schema["const"]):
            raise _Invalid(f"Input should be {schema['const']!r}", "literal_error")
        return value
    if "enum" in schema:
        if value not in schema["enum"]:
            options = " or ".join(repr(v) for v in schema["enum"])
            raise _Invalid(f"Input should be {options}", "enum")
        return value
    if "anyOf" in schema:
        for option in schema["anyOf"]:
            try:
                return _coerce(option, value, defs)
            except _Invalid:
                continue
        raise _Invalid("Input matches none of the allowed types", "union_tag_invalid")
    kind = schema.get("type")
    if kind == "string":
        if not isinstance(value, str):
            raise _Invalid("Input should be a valid string", "string_type")
        return value
    if kind == "boolean":
        if not isinstance(value, bool):
            raise _Invalid("Input should be a valid boolean", "bool_type")
        return value
    if kind == "integer":
        return _integer(value)
    if kind == "number":
        return _number(value)
    if kind == "null":
        if value is not None:
            raise _Invalid("Input should be None", "none_required")
        return None
    if kind == "array":
        if not isinstance(value, list):
            raise _Invalid("Input should be a valid list", "list_type")
        items = schema.get("items", {})
        return [_coerce(items, item, defs) for item in value]
    if kind == "object":
        if not isinstance(value, dict):
            raise _Invalid("Input should be a valid dictionary", "dict_type")
        return value
    return value


def _integer(value: Any) -> int:
    if isinstance(value, bool):
        raise _Invalid("Input should be a valid integer", "int_type")
    if isinstance(value, int):
        return value
    if isinstance(value, float) and math.isfinite(value) and value.is_integer():
        return int(value)
    if isinstance(value, str):
        try:
            return int(value.strip())
        except ValueError:
            pass
    raise _Invalid("Input should be a valid integer", "int_parsing")


def _number(value: Any) -> float:
    if isinstance(value, bool):
        raise _Invalid("Input should be a valid number", "float_type")
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, str):
        try:
            return float(value.strip())
        except ValueError:
            pass
    raise _Invalid("Input should be a valid number", "float_parsing")
