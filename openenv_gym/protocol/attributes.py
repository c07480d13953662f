"""Attributes of a session's envs: ``call``, ``get_attr``, ``set_attr`` and
``is_wrapped`` (openenv-gym extension, version 2), on ``/vector``, ``/ws`` and
``/agents`` (where ``call("state")`` reads a PettingZoo game's global state).

Gymnasium's vector envs reach their sub-envs' methods and attributes
(``VectorEnv.call``, ``get_attr``, ``set_attr``); these messages carry them to
the envs of a session, by public name only (no leading underscore), the
arguments and values being data, never code. Every reply holds one value per
env of the session: ``N`` on a ``/vector`` session of ``N`` envs, one on
``/ws`` and ``/agents``::

    C->S {"type": "get_attr", "data": {"name": "np_random_seed"}}
    S->C {"type": "get_attr", "data": {"values": [42]}}
    C->S {"type": "call", "data": {"name": "get_wrapper_attr", "args": ["gravity"], "kwargs": {}}}
    S->C {"type": "call", "data": {"values": [9.8]}}
    C->S {"type": "set_attr", "data": {"name": "gravity", "values": [3.7]}}
    S->C {"type": "set_attr", "data": {}}
    C->S {"type": "get_attr", "data": {"name": "current_step", "indices": [0, 2]}}
    S->C {"type": "get_attr", "data": {"values": [12, 0]}}
    C->S {"type": "is_wrapped", "data": {"wrapper": "stable_baselines3.common.monitor.Monitor"}}
    S->C {"type": "is_wrapped", "data": {"values": [true]}}

A server advertises them on ``/ws`` in ``/schema`` (``x-openenv-gym.attributes``);
stock OpenEnv servers answer ``UNKNOWN_TYPE``, and clients do not send them there.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar, TypeVar

from ..errors import ErrorCode, ProtocolError
from .codecs import Codec
from .messages import ClientMessage, ServerMessage, validation_error

__all__ = [
    "ATTRIBUTES_VERSION",
    "Call",
    "GetAttr",
    "SetAttr",
    "IsWrapped",
    "Values",
    "CallReply",
    "GetAttrReply",
    "SetAttrDone",
    "IsWrappedReply",
    "class_path",
    "ATTRIBUTE_MESSAGES",
    "ATTRIBUTE_REPLIES",
    "values_reply",
    "read_values",
]

#: Version of these messages, advertised under ``x-openenv-gym.attributes``.
ATTRIBUTES_VERSION = 2

#: Methods of Gymnasium envs that reach an attribute named by their first argument.
_ATTRIBUTE_METHODS = frozenset({"get_wrapper_attr", "set_wrapper_attr", "has_wrapper_attr"})


def _public_name(data: Mapping[str, Any], loc: list | None = None) -> str:
    name = data.get("name")
    if not isinstance(name, str) or not name.isidentifier() or name.startswith("_"):
        raise validation_error(
            loc or ["name"], "Input should be the name of a public attribute (no leading underscore)", name
        )
    return name


#: The most env indices one message may name (a vector session has at most as many envs).
MAX_INDICES = 65_536


def _indices(data: Mapping[str, Any]) -> list[int] | None:
    """The ``indices`` of a message: ``None`` (every env) or distinct env indices."""
    indices = data.get("indices")
    if indices is None:
        return None
    if (
        not isinstance(indices, list)
        or len(indices) > MAX_INDICES
        or not all(type(i) is int and i >= 0 for i in indices)
        or len(set(indices)) != len(indices)
    ):
        raise validation_error(["indices"], "indices must be a list of distinct env indices (integers >= 0)", indices)
    return indices


def _with_indices(data: dict, indices: list[int] | None) -> dict:
    if indices is not None:
        data["indices"] = list(indices)
    return data


@dataclass(slots=True)
class Call(ClientMessage):
    """Call a public method (or read a public attribute) of the session's envs
    (``indices``: of those envs only)."""

    type: ClassVar[str] = "call"

    name: str
    args: list = field(default_factory=list)
    kwargs: dict = field(default_factory=dict)
    indices: list[int] | None = None

    @classmethod
    def from_data(cls, data: dict | None) -> Call:
        data = data or {}
        args, kwargs = data.get("args") or [], data.get("kwargs") or {}
        if not isinstance(args, list) or not isinstance(kwargs, dict):
            raise validation_error(["args"], "args must be a list and kwargs an object", data)
        name = _public_name(data)
        if name in _ATTRIBUTE_METHODS:  # they reach an attribute by name: public ones only
            attribute = args[0] if args else kwargs.get("name")
            _public_name({"name": attribute}, ["args", 0] if args else ["kwargs", "name"])
        return cls(name, args, kwargs, _indices(data))

    def to_wire(self) -> dict:
        data = {"name": self.name, "args": list(self.args), "kwargs": dict(self.kwargs)}
        return {"type": "call", "data": _with_indices(data, self.indices)}


@dataclass(slots=True)
class GetAttr(ClientMessage):
    """Read a public attribute of the session's envs (``indices``: of those envs only)."""

    type: ClassVar[str] = "get_attr"

    name: str
    indices: list[int] | None = None

    @classmethod
    def from_data(cls, data: dict | None) -> GetAttr:
        data = data or {}
        return cls(_public_name(data), _indices(data))

    def to_wire(self) -> dict:
        return {"type": "get_attr", "data": _with_indices({"name": self.name}, self.indices)}


@dataclass(slots=True)
class SetAttr(ClientMessage):
    """Set a public attribute of the session's envs: ``values`` has one entry
    per env, or per index of ``indices`` (on ``/vector`` without ``indices``,
    one value that is no list of one per env stands for all)."""

    type: ClassVar[str] = "set_attr"

    name: str
    values: Any
    types: Any = None
    indices: list[int] | None = None

    @classmethod
    def from_data(cls, data: dict | None) -> SetAttr:
        data = data or {}
        return cls(_public_name(data), data.get("values"), data.get("types"), _indices(data))

    def to_wire(self) -> dict:
        data: dict = {"name": self.name, "values": self.values}
        if self.types is not None:
            data["types"] = self.types
        return {"type": "set_attr", "data": _with_indices(data, self.indices)}


@dataclass(slots=True)
class IsWrapped(ClientMessage):
    """Whether each env (``indices``: each of those) is wrapped by a wrapper of
    the class ``wrapper`` names (``"package.module.Class"``) or of a subclass."""

    type: ClassVar[str] = "is_wrapped"

    wrapper: str
    indices: list[int] | None = None

    @classmethod
    def from_data(cls, data: dict | None) -> IsWrapped:
        data = data or {}
        wrapper = data.get("wrapper")
        if not isinstance(wrapper, str) or not all(part.isidentifier() for part in wrapper.split(".")):
            raise validation_error(
                ["wrapper"], "wrapper must be a class's import path, such as 'package.module.Class'", wrapper
            )
        return cls(wrapper, _indices(data))

    def to_wire(self) -> dict:
        return {"type": "is_wrapped", "data": _with_indices({"wrapper": self.wrapper}, self.indices)}


def class_path(cls: type) -> str:
    """The import path :class:`IsWrapped` names a class by.

        >>> import gymnasium
        >>> class_path(gymnasium.wrappers.TimeLimit)
        'gymnasium.wrappers.common.TimeLimit'
    """
    return f"{cls.__module__}.{cls.__qualname__}"


@dataclass(slots=True)
class Values(ServerMessage):
    """One value per env (``types``: their type hints, on JSON)."""

    values: list
    types: Any = None

    @classmethod
    def from_data(cls, data: dict) -> Values:
        values = data.get("values")
        return cls(values if isinstance(values, list) else [], data.get("types"))

    def to_wire(self) -> dict:
        data: dict = {"values": self.values}
        if self.types is not None:
            data["types"] = self.types
        return {"type": self.type, "data": data}


class CallReply(Values):
    """What a ``call`` returned, per env."""

    type: ClassVar[str] = "call"
    __slots__ = ()


class GetAttrReply(Values):
    """The attribute ``get_attr`` asked for, per env."""

    type: ClassVar[str] = "get_attr"
    __slots__ = ()


class IsWrappedReply(Values):
    """Whether each env is wrapped (:class:`IsWrapped`)."""

    type: ClassVar[str] = "is_wrapped"
    __slots__ = ()


class SetAttrDone(ServerMessage):
    """``set_attr`` is done."""

    type: ClassVar[str] = "set_attr"
    __slots__ = ()

    @classmethod
    def from_data(cls, data: dict) -> SetAttrDone:
        return cls()

    def to_wire(self) -> dict:
        return {"type": "set_attr", "data": {}}

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self)

    def __hash__(self) -> int:
        return hash(type(self))


#: The attribute messages (a route adds them to its own table).
ATTRIBUTE_MESSAGES: Mapping[str, type[ClientMessage]] = {
    cls.type: cls for cls in (Call, GetAttr, SetAttr, IsWrapped)
}
#: Their replies.
ATTRIBUTE_REPLIES: Mapping[str, type[ServerMessage]] = {
    cls.type: cls for cls in (CallReply, GetAttrReply, SetAttrDone, IsWrappedReply)
}
V = TypeVar("V", bound=Values)


def values_reply(codec: Codec, kind: type[V], values: list) -> V:
    """The reply of type ``kind`` (:class:`CallReply`, :class:`GetAttrReply`, ...): one value per env."""
    data, hints = codec.pack_data(values)
    return kind(data, hints)


def read_values(codec: Codec, reply: ServerMessage) -> list:
    """The per-env values of a :func:`values_reply`."""
    if not isinstance(reply, Values):
        raise ProtocolError(ErrorCode.SESSION_ERROR, f"Expected values, got {reply.type!r}")
    return list(codec.unpack_data(reply.values, reply.types) or [])
