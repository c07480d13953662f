"""Attributes of a session's envs: ``call``, ``get_attr`` and ``set_attr``
(openenv-gym extension, version 1), on ``/vector``, ``/ws`` and ``/agents``
(where ``call("state")`` reads a PettingZoo game's global state).

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
    "Values",
    "CallReply",
    "GetAttrReply",
    "SetAttrDone",
    "ATTRIBUTE_MESSAGES",
    "ATTRIBUTE_REPLIES",
    "values_reply",
    "read_values",
]

#: Version of these messages, advertised under ``x-openenv-gym.attributes``.
ATTRIBUTES_VERSION = 1

#: Methods of Gymnasium envs that reach an attribute named by their first argument.
_ATTRIBUTE_METHODS = frozenset({"get_wrapper_attr", "set_wrapper_attr", "has_wrapper_attr"})


def _public_name(data: Mapping[str, Any], loc: list | None = None) -> str:
    name = data.get("name")
    if not isinstance(name, str) or not name.isidentifier() or name.startswith("_"):
        raise validation_error(
            loc or ["name"], "Input should be the name of a public attribute (no leading underscore)", name
        )
    return name


@dataclass(slots=True)
class Call(ClientMessage):
    """Call a public method (or read a public attribute) of every env of the session."""

    type: ClassVar[str] = "call"

    name: str
    args: list = field(default_factory=list)
    kwargs: dict = field(default_factory=dict)

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
        return cls(name, args, kwargs)

    def to_wire(self) -> dict:
        return {"type": "call", "data": {"name": self.name, "args": list(self.args), "kwargs": dict(self.kwargs)}}


@dataclass(slots=True)
class GetAttr(ClientMessage):
    """Read a public attribute of every env of the session."""

    type: ClassVar[str] = "get_attr"

    name: str

    @classmethod
    def from_data(cls, data: dict | None) -> GetAttr:
        return cls(_public_name(data or {}))

    def to_wire(self) -> dict:
        return {"type": "get_attr", "data": {"name": self.name}}


@dataclass(slots=True)
class SetAttr(ClientMessage):
    """Set a public attribute of every env of the session: ``values`` has one
    entry per env (on ``/vector``, one value stands for all)."""

    type: ClassVar[str] = "set_attr"

    name: str
    values: Any
    types: Any = None

    @classmethod
    def from_data(cls, data: dict | None) -> SetAttr:
        data = data or {}
        return cls(_public_name(data), data.get("values"), data.get("types"))

    def to_wire(self) -> dict:
        data: dict = {"name": self.name, "values": self.values}
        if self.types is not None:
            data["types"] = self.types
        return {"type": "set_attr", "data": data}


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
ATTRIBUTE_MESSAGES: Mapping[str, type[ClientMessage]] = {cls.type: cls for cls in (Call, GetAttr, SetAttr)}
#: Their replies.
ATTRIBUTE_REPLIES: Mapping[str, type[ServerMessage]] = {
    cls.type: cls for cls in (CallReply, GetAttrReply, SetAttrDone)
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
