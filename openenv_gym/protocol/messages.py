"""Typed messages of OpenEnv's ``/ws`` route, both ways, and the one envelope validator.

Every message on every route is a JSON object (or msgpack map) with a
``type`` and, for most types, a ``data`` object. Here each message type is a
small class, the way h11 has events: a client builds :class:`Step` and sends
``step.to_wire()``; a server gets one back from :func:`parse_message` and answers
with :class:`Observation`, :class:`StateReply`, :class:`ErrorReply`, ... Nothing
outside this package builds or reads an envelope.

Messages are slotted dataclasses, read-only by convention: nothing changes one once
it is built. They are not frozen because a frozen dataclass's ``__init__`` sets each
field through ``object.__setattr__``: 0.15 to 0.6 µs more per message, and a step's
round trip builds four (two on each side), 1.3 µs for one env and 1.8 µs for a
vector env, over 1% of a 50 to 100 µs round trip.

    >>> message = parse_message({"type": "reset", "data": {"seed": 7, "level": 2}}, WS_MESSAGES)
    >>> message
    Reset(seed=7, episode_id=None, options={'level': 2}, injected_state=None)
    >>> message.to_wire()
    {'type': 'reset', 'data': {'level': 2, 'seed': 7}}
    >>> parse_message({"type": "jump"}, WS_MESSAGES)
    Traceback (most recent call last):
    ...
    openenv_gym.errors.ProtocolError: Unknown message type: jump

:func:`parse_message` checks an envelope against a route's table of message
types (:data:`WS_MESSAGES` for ``/ws``; the extension routes have theirs in
:mod:`.vector`), exactly as OpenEnv's server checks its own: a missing or
unknown ``type`` is ``UNKNOWN_TYPE``, a bad envelope ``VALIDATION_ERROR`` with a
pydantic-style ``errors`` list naming the field.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np

from ..errors import CLOSING_ERRORS, ErrorCode, ProtocolError, remote_error
from ..spaces._common import MAX_QUOTED_CHARS, clipped, short_repr
from .hints import jsonable

__all__ = [
    "Data",
    "ClientMessage",
    "ServerMessage",
    "Reset",
    "Step",
    "State",
    "Close",
    "Render",
    "McpRequest",
    "Observation",
    "StateReply",
    "RenderReply",
    "McpReply",
    "ErrorReply",
    "WS_MESSAGES",
    "WS_REPLIES",
    "parse_message",
    "parse_reply",
    "validation_error",
    "error_entry",
    "invalid",
    "Problems",
    "MAX_LISTED_ERRORS",
    "check_fields",
    "EXTENSION_KEY",
    "RESERVED_RESET_KEYS",
]

#: Top-level ``/schema`` key describing the openenv-gym extensions a server offers.
EXTENSION_KEY = "x-openenv-gym"

#: An error echoes a wrong value as its ``input`` (as pydantic does) up to this many
#: items (of lists and maps, elements of arrays, characters of strings and bytes, at
#: any depth); a larger one is described instead, so a refused frame is not written
#: back whole.
MAX_ECHOED_ITEMS = 1_000

#: Characters of an env's error message (which may quote what a peer sent) an error
#: frame carries before it is cut short.
MAX_ERROR_CHARS = 2_000

#: Problems one error lists (a VALIDATION_ERROR's ``errors``, a tool's refused arguments);
#: the rest are counted, not described: 100,000 bad keys make an error no longer, and no
#: dearer to build, than five do.
MAX_LISTED_ERRORS = 5

#: Keys of ``reset`` data that are never Gymnasium ``options``.
RESERVED_RESET_KEYS = frozenset({"seed", "episode_id", "injected_state"})


class Data(enum.Enum):
    """What a message type says about its ``data`` key."""

    #: No ``data`` key allowed (OpenEnv's ``state`` and ``close``).
    NONE = "none"
    #: ``data`` may be left out or null, which means ``{}``.
    OPTIONAL = "optional"
    #: ``data`` must be an object.
    REQUIRED = "required"


def error_entry(loc: list, msg: str, value: Any, kind: str = "value_error") -> dict[str, Any]:
    """One pydantic-style entry of a VALIDATION_ERROR's ``errors``: what is wrong at ``loc``
    (a key longer than :data:`MAX_QUOTED_CHARS` is cut short there)."""
    loc = [clipped(k, MAX_QUOTED_CHARS) if isinstance(k, str) else k for k in loc]
    return {"type": kind, "loc": loc, "msg": msg, "input": _echoed(value)}


def _echoed(value: Any) -> Any:
    """``value`` as JSON, or a short description of it when it holds more than
    :data:`MAX_ECHOED_ITEMS` items (a string's or a key's characters count as items).

        >>> _echoed([1, 2])
        [1, 2]
        >>> _echoed({"action": [0] * 5000})
        "dict too large to echo (over 1000 items or characters): {'action': [0, 0, 0, 0, 0, 0, ...]}"
        >>> _echoed("x" * 5000)
        "str too large to echo (over 1000 items or characters): 'xxxxxxxxxxxxxxxxx...xxxxxxxxxxxxxxxxxx'"
    """
    count, pending = 0, [value]
    while pending:
        item = pending.pop()
        if isinstance(item, np.ndarray):
            count += item.size
        elif isinstance(item, (str, bytes)):
            count += len(item)
        elif isinstance(item, Mapping):
            count += len(item)
            if count <= MAX_ECHOED_ITEMS:
                pending.extend(item.keys())
                pending.extend(item.values())
        elif isinstance(item, (list, tuple)):
            count += len(item)
            if count <= MAX_ECHOED_ITEMS:
                pending.extend(item)
        if count > MAX_ECHOED_ITEMS:
            return (
                f"{type(value).__name__} too large to echo (over {MAX_ECHOED_ITEMS} items or characters): "
                f"{short_repr(value, 80)}"
            )
    return jsonable(value)


def validation_error(loc: list, msg: str, value: Any, kind: str = "value_error") -> ProtocolError:
    """A VALIDATION_ERROR naming the field ``loc``, with a pydantic-style ``errors`` entry."""
    return invalid(error_entry(loc, msg, value, kind))


def invalid(*errors: dict[str, Any], count: int | None = None) -> ProtocolError:
    """A VALIDATION_ERROR listing the :func:`error_entry` ``errors``, of ``count`` problems
    found in all (when more were found than listed, ``more_errors`` says how many more)."""
    more = 0 if count is None else count - len(errors)
    if more <= 0:
        return ProtocolError(ErrorCode.VALIDATION_ERROR, "Invalid message", errors=list(errors))
    return ProtocolError(
        ErrorCode.VALIDATION_ERROR, f"Invalid message: {count} problems, the first {len(errors)} listed",
        errors=list(errors), more_errors=more,
    )


class Problems:
    """The problems found in what a peer sent, as :func:`error_entry` items: the first
    :data:`MAX_LISTED_ERRORS` are listed, the others only counted, so a message with a
    hundred thousand bad keys costs no more to refuse than one with five.

        >>> problems = Problems()
        >>> for key in range(7):
        ...     problems.add([f"k{key}"], "Extra inputs are not permitted", key, "extra_forbidden")
        >>> error = problems.error()
        >>> error.message, len(error.extra["errors"]), error.extra["more_errors"]
        ('Invalid message: 7 problems, the first 5 listed', 5, 2)
    """

    __slots__ = ("listed", "count")

    def __init__(self) -> None:
        self.listed: list[dict[str, Any]] = []
        self.count = 0

    def __bool__(self) -> bool:
        return self.count > 0

    def add(self, loc: list, msg: str, value: Any, kind: str = "value_error", **more: Any) -> None:
        """Count one problem; list it (with ``more`` keys after the entry's own) while fewer
        than :data:`MAX_LISTED_ERRORS` are."""
        self.count += 1
        if len(self.listed) < MAX_LISTED_ERRORS:
            self.listed.append({**error_entry(loc, msg, value, kind), **more})

    def error(self) -> ProtocolError:
        """The VALIDATION_ERROR saying them."""
        return invalid(*self.listed, count=self.count)


def check_fields(data: Mapping[str, Any], required: frozenset[str], allowed: frozenset[str]) -> None:
    """``data`` holds every ``required`` key and none beyond ``allowed``
    (``extra_forbidden`` and ``missing``, as pydantic names them)."""
    for key in data:
        if key not in allowed:
            raise validation_error([key], "Extra inputs are not permitted", data[key], "extra_forbidden")
    for key in required:
        if key not in data:
            first = min(k for k in required if k not in data)  # the same key whatever the set's order
            raise validation_error([first], "Field required", data, "missing")


# -- client -> server ----------------------------------------------------------------


class ClientMessage:
    """A message a client sends. ``type`` is its wire type, ``data`` its rule."""

    type: ClassVar[str]
    data: ClassVar[Data] = Data.REQUIRED
    __slots__ = ()

    @classmethod
    def from_data(cls, data: dict | None) -> ClientMessage:
        """The message for a validated envelope's ``data`` (``None`` for :attr:`Data.NONE`)."""
        raise NotImplementedError

    def to_wire(self) -> dict:
        raise NotImplementedError


@dataclass(slots=True)
class Reset(ClientMessage):
    """Start an episode: ``seed`` goes to ``env.reset(seed=...)``, ``episode_id``
    names it, ``injected_state`` is the state to start from (OpenEnv's RFC 008
    ``set_state`` capability: a server applies it through its ``set_state`` hook, or
    refuses it), every other key of the data is one of Gymnasium's ``options``."""

    type: ClassVar[str] = "reset"
    data: ClassVar[Data] = Data.OPTIONAL

    seed: int | None = None
    episode_id: str | None = None
    options: dict[str, Any] | None = None
    #: ``None``: none asked for (a ``null`` value too).
    injected_state: Any = None

    @classmethod
    def from_data(cls, data: dict | None) -> Reset:
        data = data or {}
        seed = data.get("seed")
        if seed is not None and (isinstance(seed, bool) or not isinstance(seed, (int, np.integer))):
            raise validation_error(["seed"], "Input should be a valid integer or null", seed, "int_type")
        if seed is not None and seed < 0:
            raise validation_error(
                ["seed"], "Input should be greater than or equal to 0", seed, "greater_than_equal"
            )
        episode_id = data.get("episode_id")
        if episode_id is not None and (not isinstance(episode_id, str) or len(episode_id) > 255):
            raise validation_error(
                ["episode_id"], "Input should be a string of at most 255 characters", episode_id
            )
        options = {k: v for k, v in data.items() if k not in RESERVED_RESET_KEYS} or None
        return cls(None if seed is None else int(seed), episode_id, options, data.get("injected_state"))

    def to_wire(self) -> dict:
        data: dict = dict(self.options or {})
        if self.seed is not None:
            data["seed"] = int(self.seed)
        if self.episode_id is not None:
            data["episode_id"] = self.episode_id
        if self.injected_state is not None:
            data["injected_state"] = self.injected_state
        return {"type": "reset", "data": data}


@dataclass(slots=True)
class Step(ClientMessage):
    """Apply an action: ``fields`` is the action object as it travels (OpenEnv's
    named fields; for openenv-gym's Gymnasium servers, :mod:`.gym`'s shape)."""

    type: ClassVar[str] = "step"

    fields: dict[str, Any]

    @classmethod
    def from_data(cls, data: dict | None) -> Step:
        return cls(data or {})

    def to_wire(self) -> dict:
        return {"type": "step", "data": self.fields}


class _Bare(ClientMessage):
    """A message without data."""

    data: ClassVar[Data] = Data.NONE
    __slots__ = ()

    @classmethod
    def from_data(cls, data: dict | None) -> ClientMessage:
        return cls()

    def to_wire(self) -> dict:
        return {"type": self.type}

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self)

    def __hash__(self) -> int:
        return hash(type(self))

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


class State(_Bare):
    """Ask for the session's episode state."""

    type: ClassVar[str] = "state"
    __slots__ = ()


class Close(_Bare):
    """End the session (no reply)."""

    type: ClassVar[str] = "close"
    __slots__ = ()


class Render(_Bare):
    """openenv-gym extension: ask for the env's ``render()`` (stock servers answer UNKNOWN_TYPE)."""

    type: ClassVar[str] = "render"
    __slots__ = ()


@dataclass(slots=True)
class McpRequest(ClientMessage):
    """A JSON-RPC request for the env's MCP tools, over ``/ws``."""

    type: ClassVar[str] = "mcp"

    request: dict[str, Any]

    @classmethod
    def from_data(cls, data: dict | None) -> McpRequest:
        return cls(data or {})

    def to_wire(self) -> dict:
        return {"type": "mcp", "data": self.request}


#: The messages of ``WS /ws`` (and of ``/agents``, which speaks the same envelopes).
WS_MESSAGES: Mapping[str, type[ClientMessage]] = {
    cls.type: cls for cls in (Reset, Step, State, Close, McpRequest, Render)
}


def parse_message(
    message: Any, table: Mapping[str, type[ClientMessage]], *, expected: bool = False
) -> ClientMessage:
    """Validate a decoded client message against a route's ``table`` of types, the
    way OpenEnv's server does, and return it typed.

    Missing or unknown ``type`` gives UNKNOWN_TYPE (naming the types the route
    expects when ``expected``: the extension routes do, ``/ws`` answers as the
    reference server); an envelope with extra keys, ``data`` on a type without
    any, or non-object ``data`` gives VALIDATION_ERROR.
    """
    if not isinstance(message, dict):
        raise validation_error([], "Input should be a valid dictionary", message, "dict_type")
    kind = message.get("type")
    cls = table.get(kind) if isinstance(kind, str) else None
    if cls is None:
        if isinstance(kind, str):
            shown = clipped(kind, MAX_QUOTED_CHARS)
        else:
            shown = "" if kind is None else short_repr(kind, 120)
        hint = f" (expected {', '.join(sorted(table))})" if expected else ""
        raise ProtocolError(ErrorCode.UNKNOWN_TYPE, f"Unknown message type: {shown}{hint}")
    rule = cls.data
    for key in message:
        if key != "type" and (key != "data" or rule is Data.NONE):
            raise validation_error([key], "Extra inputs are not permitted", message[key], "extra_forbidden")
    if rule is Data.NONE:
        return cls.from_data(None)
    data = message.get("data")
    if data is None:
        if rule is Data.REQUIRED:
            raise validation_error(["data"], "Field required", message, "missing")
        data = {}
    if not isinstance(data, dict):
        raise validation_error(["data"], "Input should be a valid dictionary", data, "dict_type")
    return cls.from_data(data)


# -- server -> client ----------------------------------------------------------------


class ServerMessage:
    """A message a server sends; ``from_data`` reads one on the client side."""

    type: ClassVar[str]
    __slots__ = ()

    @classmethod
    def from_data(cls, data: dict) -> ServerMessage:
        raise NotImplementedError

    def to_wire(self) -> dict:
        raise NotImplementedError


@dataclass(slots=True)
class Observation(ServerMessage):
    """OpenEnv's observation frame, in the 0.10 shape.

    ``metadata`` stays inside ``observation`` and is copied to the top level
    when non-empty, which is what both 0.3 and 0.10 clients read.
    """

    type: ClassVar[str] = "observation"

    observation: dict[str, Any]
    reward: float | None
    done: bool
    metadata: dict[str, Any] | None = None

    @classmethod
    def from_data(cls, data: dict) -> Observation:
        observation = data.get("observation")
        if not isinstance(observation, dict):
            raise ProtocolError(
                ErrorCode.SESSION_ERROR, f"Observation without an 'observation' object: {_preview(data)}"
            )
        metadata = data.get("metadata")
        metadata = metadata if isinstance(metadata, dict) else None
        return cls(observation, data.get("reward"), bool(data.get("done", False)), metadata)

    def to_wire(self) -> dict:
        data: dict = {"observation": self.observation, "reward": self.reward, "done": self.done}
        if self.metadata:
            data["metadata"] = self.metadata
        return {"type": "observation", "data": data}


@dataclass(slots=True)
class StateReply(ServerMessage):
    """The session's episode state."""

    type: ClassVar[str] = "state"

    state: dict[str, Any]

    @classmethod
    def from_data(cls, data: dict) -> StateReply:
        return cls(data)

    def to_wire(self) -> dict:
        return {"type": "state", "data": self.state}


@dataclass(slots=True)
class RenderReply(ServerMessage):
    """A rendered frame: an ndarray (or nested lists with its ``dtype``), a
    string for ``ansi``, a list of frames for ``rgb_array_list``, or ``None``."""

    type: ClassVar[str] = "render"

    render_mode: str | None
    frame: Any
    dtype: str | None = None

    @classmethod
    def from_data(cls, data: dict) -> RenderReply:
        dtype = data.get("dtype")
        return cls(data.get("render_mode"), data.get("frame"), dtype if isinstance(dtype, str) else None)

    def to_wire(self) -> dict:
        data: dict = {"render_mode": self.render_mode, "frame": self.frame}
        if self.dtype is not None:
            data["dtype"] = self.dtype
        return {"type": "render", "data": data}

    def decoded_frame(self) -> Any:
        """The frame as the env rendered it: an ndarray for ``rgb_array`` (from
        nested lists and ``dtype`` on JSON), a string for ``ansi``."""
        frame = self.frame
        if self.dtype is None or frame is None or isinstance(frame, np.ndarray):
            return frame
        if isinstance(frame, list) and frame and isinstance(frame[0], np.ndarray):
            return frame
        return np.asarray(frame, dtype=np.dtype(self.dtype))


@dataclass(slots=True)
class McpReply(ServerMessage):
    """The JSON-RPC response to an :class:`McpRequest`."""

    type: ClassVar[str] = "mcp"

    response: dict[str, Any]

    @classmethod
    def from_data(cls, data: dict) -> McpReply:
        return cls(data)

    def to_wire(self) -> dict:
        return {"type": "mcp", "data": self.response}


@dataclass(slots=True)
class ErrorReply(ServerMessage):
    """OpenEnv's error frame: ``{"type": "error", "data": {"message", "code", ...}}``."""

    type: ClassVar[str] = "error"

    code: ErrorCode
    message: str
    extra: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def of(cls, error: ProtocolError) -> ErrorReply:
        """The frame answering ``error``."""
        return cls(error.code, error.message, error.extra)

    @property
    def closes(self) -> bool:
        """Whether the server closes the connection after sending it."""
        return self.code in CLOSING_ERRORS

    def to_wire(self) -> dict:
        return {"type": "error", "data": {"message": self.message, "code": ErrorCode(self.code).value, **self.extra}}


#: The replies of ``WS /ws`` (and ``/agents``).
WS_REPLIES: Mapping[str, type[ServerMessage]] = {
    cls.type: cls for cls in (Observation, StateReply, RenderReply, McpReply)
}


def parse_reply(message: Any, table: Mapping[str, type[ServerMessage]]) -> ServerMessage:
    """A decoded server message, typed by a route's ``table`` of replies.

    An error frame raises the :class:`~openenv_gym.errors.RemoteError`
    subclass for its code; a message that is not one of the route's replies
    raises :class:`~openenv_gym.errors.ProtocolError` (a reply this client
    cannot read), never a ``KeyError`` later.
    """
    if not isinstance(message, dict) or not isinstance(message.get("type"), str):
        raise ProtocolError(ErrorCode.SESSION_ERROR, f"Malformed server message: {_preview(message)}")
    kind, data = message["type"], message.get("data")
    if not isinstance(data, dict):
        raise ProtocolError(
            ErrorCode.SESSION_ERROR, f"Server message {kind!r} has no 'data' object: {_preview(message)}"
        )
    if kind == "error":
        raise remote_error(data)
    cls = table.get(kind)
    if cls is None:
        raise ProtocolError(
            ErrorCode.SESSION_ERROR,
            f"Unexpected server message {kind!r} (expected {', '.join(sorted(table))}): {_preview(message)}",
        )
    return cls.from_data(data)


def _preview(value: Any, limit: int = 200) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[:limit] + "..."
