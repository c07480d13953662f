"""The OpenEnv wire protocol, sans I/O: frames in, messages out, and back.

Both the server and the clients use this module; nothing else parses frames.
It knows the stock OpenEnv ``/ws`` messages (JSON text frames) and openenv-gym's
msgpack extension (binary frames, negotiated with the WebSocket subprotocol
:data:`MSGPACK_SUBPROTOCOL`). It performs every size, depth and type check on
incoming frames, so a hostile peer gets a :class:`WireError` with an OpenEnv
error code instead of a crash or a huge allocation.

A message is a plain ``dict`` with a ``"type"`` and, usually, ``"data"``::

    >>> codec = codec_for(None)                    # no subprotocol: stock JSON
    >>> frame = codec.encode(observation_message({"obs": 1}, reward=0.5, done=False))
    >>> frame
    '{"type":"observation","data":{"observation":{"obs":1},"reward":0.5,"done":false}}'
    >>> codec.decode(frame)["data"]["reward"]
    0.5

In msgpack frames, numpy arrays travel as an extension type holding the dtype,
the shape and the raw bytes; they decode with :func:`numpy.frombuffer`, without
a per-element copy, after the declared size was checked against the bytes that
actually arrived. Only the dtypes in :data:`ARRAY_DTYPES` are accepted (never
``object``). Decoding a frame never runs pickle, eval or exec: a frame is JSON
or msgpack, and its extension types carry raw numbers only. (A server with the
``async`` vector backend hands decoded, validated values to Gymnasium's
``AsyncVectorEnv``, which pickles them to its own worker processes; no byte a
peer sent is ever unpickled.)
"""

from __future__ import annotations

import enum
import json
import math
import secrets
import struct
from dataclasses import dataclass
from typing import Any, Union

import msgpack
import numpy as np

__all__ = [
    "is_loopback",
    "PROCESS_HEADER",
    "PROCESS_TOKEN",
    "MSGPACK_SUBPROTOCOL",
    "JSON_SUBPROTOCOL",
    "SUBPROTOCOLS",
    "ErrorCode",
    "CLOSING_ERRORS",
    "Limits",
    "WireError",
    "Codec",
    "JsonCodec",
    "MsgpackCodec",
    "codec_for",
    "ClientMessage",
    "CLIENT_MESSAGE_TYPES",
    "parse_client_message",
    "validation_error",
    "reset_message",
    "parse_server_message",
    "error_message",
    "observation_message",
    "state_message",
    "jsonable",
    "type_hints",
    "apply_type_hints",
    "number_hint",
    "Frame",
]

#: Subprotocol that selects msgpack binary frames (openenv-gym extension, version 1).
MSGPACK_SUBPROTOCOL = "openenv-gym.msgpack.v1"
#: Subprotocol an openenv-gym client offers for JSON: the frames are stock OpenEnv
#: JSON; selecting it only tells the server that the peer understands the
#: openenv-gym extension fields (exact info types, rendering).
JSON_SUBPROTOCOL = "openenv-gym.json.v1"
#: Every subprotocol the server understands, in order of preference.
SUBPROTOCOLS = (MSGPACK_SUBPROTOCOL, JSON_SUBPROTOCOL)

Frame = Union[str, bytes]


class ErrorCode(str, enum.Enum):
    """The seven OpenEnv WebSocket error codes, with OpenEnv's semantics."""

    INVALID_JSON = "INVALID_JSON"
    UNKNOWN_TYPE = "UNKNOWN_TYPE"
    VALIDATION_ERROR = "VALIDATION_ERROR"
    EXECUTION_ERROR = "EXECUTION_ERROR"
    CAPACITY_REACHED = "CAPACITY_REACHED"
    FACTORY_ERROR = "FACTORY_ERROR"
    SESSION_ERROR = "SESSION_ERROR"


#: After an error with one of these codes the server closes the connection
#: (code 1000), exactly like the OpenEnv reference server; after any other error
#: the session goes on.
CLOSING_ERRORS = frozenset(
    {ErrorCode.CAPACITY_REACHED, ErrorCode.FACTORY_ERROR, ErrorCode.SESSION_ERROR}
)


@dataclass(frozen=True)
class Limits:
    """Bounds applied to every incoming frame before it is trusted.

    ``max_frame_bytes`` matches the OpenEnv reference server (uvicorn's 16 MiB).
    ``max_array_bytes`` bounds one decoded array; ``max_depth`` the nesting of
    lists and maps; ``max_container_len`` the length of any one list or map.
    """

    max_frame_bytes: int = 16 * 1024 * 1024
    max_array_bytes: int = 16 * 1024 * 1024
    max_depth: int = 64
    max_container_len: int = 1_000_000


class WireError(Exception):
    """A frame or message that breaks the protocol, with its OpenEnv error code.

    The server turns it into an error frame with :meth:`to_message`; a client
    raises it when the server sends something it cannot read.
    """

    def __init__(self, code: ErrorCode, message: str, **extra: Any) -> None:
        super().__init__(message)
        self.code = ErrorCode(code)
        self.message = message
        self.extra = extra

    def to_message(self) -> dict:
        return error_message(self.code, self.message, **self.extra)

    def __repr__(self) -> str:
        return f"WireError({self.code.value}, {self.message!r})"


# ---------------------------------------------------------------------------
# Messages


#: Message types a client may send, as in OpenEnv (``render`` is an
#: openenv-gym extension: stock clients never send it, and a stock server
#: answers it with UNKNOWN_TYPE).
CLIENT_MESSAGE_TYPES = frozenset({"reset", "step", "state", "close", "mcp", "render"})
_NO_DATA_TYPES = frozenset({"state", "close", "render"})


@dataclass(frozen=True)
class ClientMessage:
    """One validated client request: ``type`` and its ``data`` (``None`` for
    ``state``, ``close`` and ``render``, a dict otherwise)."""

    type: str
    data: Any = None


def validation_error(loc: list, msg: str, value: Any, kind: str = "value_error") -> WireError:
    """A VALIDATION_ERROR naming the field ``loc``, with a pydantic-style ``errors`` entry."""
    return WireError(
        ErrorCode.VALIDATION_ERROR,
        "Invalid message",
        errors=[{"type": kind, "loc": loc, "msg": msg, "input": jsonable(value)}],
    )


def parse_client_message(message: Any) -> ClientMessage:
    """Validate a decoded client message the way the OpenEnv server does.

    Missing or unknown ``type`` gives UNKNOWN_TYPE; an envelope with extra keys,
    ``data`` on ``state``/``close``, or non-object ``data`` gives
    VALIDATION_ERROR with a pydantic-style ``errors`` list.
    """
    if not isinstance(message, dict):
        raise validation_error([], "Input should be a valid dictionary", message, "dict_type")
    kind = message.get("type")
    if not isinstance(kind, str) or kind not in CLIENT_MESSAGE_TYPES:
        shown = kind if isinstance(kind, str) else ("" if kind is None else repr(kind))
        raise WireError(ErrorCode.UNKNOWN_TYPE, f"Unknown message type: {shown}")
    allowed = {"type"} if kind in _NO_DATA_TYPES else {"type", "data"}
    for key in message:
        if key not in allowed:
            raise validation_error(
                [key], "Extra inputs are not permitted", message[key], "extra_forbidden"
            )
    if kind in _NO_DATA_TYPES:
        return ClientMessage(kind)
    data = message.get("data")
    if data is None and kind == "reset":
        data = {}
    if not isinstance(data, dict):
        if data is None:
            raise validation_error(["data"], "Field required", message, "missing")
        raise validation_error(["data"], "Input should be a valid dictionary", data, "dict_type")
    return ClientMessage(kind, data)


def parse_server_message(message: Any) -> dict:
    """Check the envelope of a server message and return it.

    Raises :class:`WireError` (SESSION_ERROR) when the server sent something
    that is not an OpenEnv message, so a client never trips over a KeyError.
    """
    if not isinstance(message, dict) or not isinstance(message.get("type"), str):
        raise WireError(ErrorCode.SESSION_ERROR, f"Malformed server message: {_preview(message)}")
    if message["type"] in ("observation", "state", "error", "mcp", "render"):
        if not isinstance(message.get("data"), dict):
            raise WireError(
                ErrorCode.SESSION_ERROR,
                f"Server message {message['type']!r} has no 'data' object: {_preview(message)}",
            )
    return message


def error_message(code: ErrorCode | str, message: str, **extra: Any) -> dict:
    """An OpenEnv error frame: ``{"type": "error", "data": {"message", "code", ...}}``."""
    return {"type": "error", "data": {"message": message, "code": ErrorCode(code).value, **extra}}


def observation_message(
    observation: dict, *, reward: float | None, done: bool, metadata: dict | None = None
) -> dict:
    """An OpenEnv observation frame in the 0.10 shape.

    ``metadata`` stays inside ``observation`` and is copied to the top level
    when non-empty, which is what both 0.3 and 0.10 clients read.
    """
    data: dict = {"observation": observation, "reward": reward, "done": bool(done)}
    if metadata:
        data["metadata"] = metadata
    return {"type": "observation", "data": data}


def reset_message(seed: int | None, options: dict | None) -> dict:
    """A client's ``reset``: the ``options`` keys, plus ``seed`` when one is given."""
    data: dict = dict(options or {})
    if seed is not None:
        data["seed"] = int(seed)
    return {"type": "reset", "data": data}


def state_message(state: dict) -> dict:
    """An OpenEnv state frame."""
    return {"type": "state", "data": state}


def _preview(value: Any, limit: int = 200) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[:limit] + "..."


def jsonable(value: Any) -> Any:
    """Convert numpy scalars and arrays (and tuples) inside ``value`` to JSON types.

    Used for ``info`` dicts and error payloads, which have no space to guide
    them. Values JSON cannot carry (objects, bytes) become their ``repr``, so
    nothing raises halfway through a reply; non-finite floats are kept (Python's
    json writes them as ``NaN``/``Infinity``, which every OpenEnv client reads).
    """
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    if isinstance(value, np.ndarray):
        if value.dtype.kind in "biufc" or value.dtype.kind == "U":
            return jsonable(value.tolist())
        return [jsonable(v) for v in value.tolist()]
    if isinstance(value, np.generic):
        return jsonable(value.item())
    if isinstance(value, (bytes, bytearray)):
        return value.decode("latin-1")
    return repr(value)


# ---------------------------------------------------------------------------
# Codecs


class Codec:
    """Turns messages into frames and frames into messages.

    ``binary`` tells the transport whether to send binary or text frames.
    ``decode`` raises :class:`WireError` (INVALID_JSON) on anything that is not
    a well-formed message within :class:`Limits`.
    """

    name: str
    binary: bool
    subprotocol: str | None

    def __init__(self, limits: Limits | None = None) -> None:
        self.limits = limits or Limits()

    def encode(self, message: Any) -> Frame:
        raise NotImplementedError

    def decode(self, frame: Frame) -> Any:
        raise NotImplementedError

    def _check_size(self, frame: Frame) -> None:
        if len(frame) > self.limits.max_frame_bytes:
            raise WireError(
                ErrorCode.INVALID_JSON,
                f"Frame of {len(frame)} bytes exceeds the limit of "
                f"{self.limits.max_frame_bytes} bytes",
            )


def _check_shape(value: Any, limits: Limits, frame_size: int) -> None:
    """Reject nesting deeper than ``limits.max_depth`` and containers longer than
    ``limits.max_container_len`` (iteratively, no recursion).

    Every nesting level and every item costs at least one byte of frame, so
    frames no longer than both limits are skipped without a walk.
    """
    if frame_size <= min(limits.max_depth, limits.max_container_len):
        return
    stack = [(value, 1)]
    max_depth = limits.max_depth
    while stack:
        node, depth = stack.pop()
        if isinstance(node, dict):
            children = node.values()
        elif isinstance(node, (list, tuple)):
            children = node
        else:
            continue
        if depth > max_depth:
            raise WireError(
                ErrorCode.INVALID_JSON, f"Message nesting exceeds the limit of {max_depth} levels"
            )
        if len(children) > limits.max_container_len:
            raise WireError(
                ErrorCode.INVALID_JSON,
                f"A container of {len(children)} items exceeds the limit of "
                f"{limits.max_container_len}",
            )
        for child in children:
            if isinstance(child, (dict, list, tuple)):
                stack.append((child, depth + 1))


class JsonCodec(Codec):
    """Stock OpenEnv framing: one compact JSON object per text frame."""

    name = "json"
    binary = False
    subprotocol = None

    _encoder = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False)
    _ascii_encoder = json.JSONEncoder(separators=(",", ":"), ensure_ascii=True)

    def encode(self, message: Any) -> str:
        try:
            text = self._encoder.encode(message)
        except TypeError:
            message = jsonable(message)
            text = self._encoder.encode(message)
        if not text.isascii():
            try:
                text.encode("utf-8")
            except UnicodeEncodeError:
                # Lone surrogates (echoed from a hostile frame's "\ud800", say)
                # cannot travel as UTF-8 text: escape them as JSON allows.
                text = self._ascii_encoder.encode(message)
        return text

    def decode(self, frame: Frame) -> Any:
        self._check_size(frame)
        if isinstance(frame, (bytes, bytearray, memoryview)):
            try:
                frame = bytes(frame).decode("utf-8")
            except UnicodeDecodeError as exc:
                raise WireError(ErrorCode.INVALID_JSON, f"Invalid JSON: {exc}") from None
        try:
            message = json.loads(frame)
        except RecursionError:
            raise WireError(
                ErrorCode.INVALID_JSON,
                f"Message nesting exceeds the limit of {self.limits.max_depth} levels",
            ) from None
        except ValueError as exc:
            raise WireError(ErrorCode.INVALID_JSON, f"Invalid JSON: {exc}") from None
        _check_shape(message, self.limits, len(frame))
        return message


class JsonExtCodec(JsonCodec):
    """JSON frames for an openenv-gym peer (subprotocol :data:`JSON_SUBPROTOCOL`)."""

    subprotocol = JSON_SUBPROTOCOL


#: msgpack extension type codes used by openenv-gym.
EXT_NDARRAY = 1
EXT_NUMPY_SCALAR = 2
EXT_TUPLE = 3

#: Array dtypes a msgpack frame may carry (fixed-size numeric and bool; never object).
ARRAY_DTYPES = frozenset(
    np.dtype(name).str.lstrip("<>|=")
    for name in (
        "bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
        "float16", "float32", "float64", "complex64", "complex128",
    )
)
_HEADER = struct.Struct("<BB")  # dtype string length, ndim
_DIM = struct.Struct("<Q")


#: Packed ndarray headers by (dtype, shape): steps repeat the same few arrays.
_HEADERS: dict[tuple, tuple[bytes, np.dtype]] = {}
#: Headers kept at most, in :data:`_HEADERS` and in each codec's read cache.
_HEADER_CACHE_SIZE = 256


def _array_header(array: np.ndarray) -> tuple[bytes, np.dtype]:
    """The ext payload's header for ``array`` and the dtype its data must have."""
    key = (array.dtype, array.shape)
    cached = _HEADERS.get(key)
    if cached is not None:
        return cached
    dtype = array.dtype.newbyteorder("<") if array.dtype.byteorder == ">" else array.dtype
    if dtype.str.lstrip("<>|=") not in ARRAY_DTYPES:
        raise TypeError(f"arrays of dtype {array.dtype} cannot be sent; use a numeric or bool dtype")
    code = dtype.str.encode("ascii")
    header = b"".join([_HEADER.pack(len(code), array.ndim), code, *[_DIM.pack(d) for d in array.shape]])
    if len(_HEADERS) >= _HEADER_CACHE_SIZE:
        _HEADERS.clear()
    _HEADERS[key] = header, dtype
    return header, dtype


def _pack_array(array: np.ndarray) -> bytes:
    header, dtype = _array_header(array)
    if array.dtype != dtype or not array.flags.c_contiguous:
        array = np.array(array, dtype=dtype, order="C")
    return b"".join((header, array.data if array.ndim else array.tobytes()))


def _unpack_array(payload: bytes, limits: Limits, known: dict | None = None) -> np.ndarray:
    """The ndarray of an ext payload (a read-only view of it).

    ``known`` caches validated headers (header bytes → dtype, shape, data
    size) so the arrays of every step skip re-parsing the same header.
    """
    if len(payload) < _HEADER.size:
        raise WireError(ErrorCode.INVALID_JSON, "Truncated ndarray header")
    code_len, ndim = payload[0], payload[1]
    end = _HEADER.size + code_len + ndim * _DIM.size
    if known is not None and (layout := known.get(payload[:end])) is not None:
        dtype, shape, declared = layout
        if len(payload) - end == declared:
            return np.frombuffer(payload, dtype=dtype, offset=end).reshape(shape)
    if ndim > 32:
        raise WireError(ErrorCode.INVALID_JSON, f"ndarray with {ndim} dimensions (at most 32)")
    if len(payload) < end:
        raise WireError(ErrorCode.INVALID_JSON, "Truncated ndarray header")
    offset = _HEADER.size
    code = payload[offset : offset + code_len].decode("ascii", "replace")
    if code.lstrip("<>|=") not in ARRAY_DTYPES or code[:1] == ">":
        raise WireError(
            ErrorCode.INVALID_JSON,
            f"ndarray dtype {code!r} is not allowed (allowed: little-endian "
            f"{', '.join(sorted(ARRAY_DTYPES))})",
        )
    dtype = np.dtype(code)
    shape = tuple(
        _DIM.unpack_from(payload, offset + code_len + i * _DIM.size)[0] for i in range(ndim)
    )
    declared = math.prod(shape) * dtype.itemsize
    if declared != len(payload) - end:
        raise WireError(
            ErrorCode.INVALID_JSON,
            f"ndarray declares shape {shape} of {dtype} ({declared} bytes) "
            f"but carries {len(payload) - end} bytes",
        )
    if declared > limits.max_array_bytes:
        raise WireError(
            ErrorCode.INVALID_JSON,
            f"ndarray of {declared} bytes exceeds the limit of {limits.max_array_bytes} bytes",
        )
    if known is not None:
        if len(known) >= _HEADER_CACHE_SIZE:
            known.clear()
        known[payload[:end]] = dtype, shape, declared
    return np.frombuffer(payload, dtype=dtype, offset=end).reshape(shape)


class MsgpackCodec(Codec):
    """openenv-gym's binary framing: one msgpack map per binary frame.

    Same messages as JSON; numpy arrays, numpy scalars and tuples are
    extension types, so values keep their exact Python and numpy types.
    """

    name = "msgpack"
    binary = True
    subprotocol = MSGPACK_SUBPROTOCOL

    def __init__(self, limits: Limits | None = None) -> None:
        super().__init__(limits)
        self._packer = msgpack.Packer(
            default=_pack_default, use_bin_type=True, strict_types=True, autoreset=True
        )
        self._tuple_depth = 0
        self._known_headers: dict[bytes, tuple] = {}

    def encode(self, message: Any) -> bytes:
        return self._packer.pack(message)

    def _ext_hook(self, code: int, payload: bytes) -> Any:
        if code == EXT_NDARRAY:
            return _unpack_array(payload, self.limits, self._known_headers)
        if code == EXT_NUMPY_SCALAR:
            array = _unpack_array(payload, self.limits, self._known_headers)
            if array.shape != ():
                raise WireError(ErrorCode.INVALID_JSON, "numpy scalar with a non-empty shape")
            return array[()]
        if code == EXT_TUPLE:
            # Each level unpacks its payload from inside msgpack's C unpacker:
            # bound the recursion here, before it can exhaust the C stack.
            if self._tuple_depth >= self.limits.max_depth:
                raise WireError(
                    ErrorCode.INVALID_JSON,
                    f"Message nesting exceeds the limit of {self.limits.max_depth} levels",
                )
            self._tuple_depth += 1
            try:
                return tuple(self._unpack(payload))
            finally:
                self._tuple_depth -= 1
        raise WireError(ErrorCode.INVALID_JSON, f"Unknown msgpack extension type {code}")

    def _unpack(self, data: bytes) -> Any:
        limits = self.limits
        try:
            return msgpack.unpackb(
                data,
                raw=False,
                strict_map_key=True,
                ext_hook=self._ext_hook,
                max_array_len=limits.max_container_len,
                max_map_len=limits.max_container_len,
                max_str_len=limits.max_frame_bytes,
                max_bin_len=limits.max_frame_bytes,
                max_ext_len=limits.max_frame_bytes,
            )
        except WireError:
            raise
        except RecursionError:
            raise WireError(
                ErrorCode.INVALID_JSON,
                f"Message nesting exceeds the limit of {limits.max_depth} levels",
            ) from None
        except (ValueError, TypeError, msgpack.UnpackException) as exc:
            reason = str(exc) or type(exc).__name__
            raise WireError(ErrorCode.INVALID_JSON, f"Invalid msgpack: {reason}") from None

    def decode(self, frame: Frame) -> Any:
        self._check_size(frame)
        if isinstance(frame, str):
            raise WireError(
                ErrorCode.INVALID_JSON,
                "Text frame on a msgpack session: send binary msgpack frames",
            )
        message = self._unpack(frame)
        _check_shape(message, self.limits, len(frame))
        return message


def _pack_default(value: Any) -> Any:
    """Pack what msgpack does not know natively (the packer runs with ``strict_types``)."""
    if isinstance(value, np.ndarray):
        return msgpack.ExtType(EXT_NDARRAY, _pack_array(value))
    if isinstance(value, np.generic) and (isinstance(value, np.bool_) or value.dtype.kind in "iufc"):
        return msgpack.ExtType(EXT_NUMPY_SCALAR, _pack_array(np.asarray(value)))
    if isinstance(value, tuple):
        packed = msgpack.packb(
            list(value), default=_pack_default, use_bin_type=True, strict_types=True
        )
        return msgpack.ExtType(EXT_TUPLE, packed)
    # Subclasses of native types (IntEnum, OrderedDict, str enums, ...) and the rest.
    for native in (bool, int, float, str, bytes, dict, list):
        if isinstance(value, native):
            return native(value)
    return jsonable(value)


def codec_for(subprotocol: str | None, limits: Limits | None = None) -> Codec:
    """The codec for a negotiated subprotocol (``None`` means stock JSON)."""
    if subprotocol == MSGPACK_SUBPROTOCOL:
        return MsgpackCodec(limits)
    if subprotocol == JSON_SUBPROTOCOL:
        return JsonExtCodec(limits)
    if subprotocol is None:
        return JsonCodec(limits)
    raise ValueError(f"unknown subprotocol {subprotocol!r}; expected one of {SUBPROTOCOLS}")


# ---------------------------------------------------------------------------
# Exact types over JSON

#: JSON carries no numpy types and no tuples. For values without a space to
#: guide them (``info`` dicts), an openenv-gym server on a JSON session adds
#: *type hints* beside the plain JSON value; an openenv-gym client uses them to
#: rebuild the exact types, and a stock client simply ignores them.
#:
#: A hint mirrors the value: ``{"nd": dtype}`` for an ndarray sent as nested
#: lists, ``{"np": dtype}`` for a numpy scalar, ``{"py": "int"}`` for an int
#: sent as a JSON float (a reward), ``{"tuple": {index: hint}}``
#: for a tuple, ``{"dict": {key: hint}}`` / ``{"list": {index: hint}}`` for
#: containers holding hinted values. Values that JSON keeps exactly get none.


def type_hints(value: Any) -> Any:
    """The type hints for ``value``, or ``None`` when JSON keeps it exactly."""
    if isinstance(value, np.ndarray):
        return {"nd": value.dtype.str} if value.dtype.str.lstrip("<>|=") in ARRAY_DTYPES else None
    if isinstance(value, np.generic):
        return {"np": value.dtype.str} if value.dtype.str.lstrip("<>|=") in ARRAY_DTYPES else None
    if isinstance(value, dict):
        inner = {str(k): h for k, v in value.items() if (h := type_hints(v)) is not None}
        return {"dict": inner} if inner else None
    if isinstance(value, (list, tuple)):
        inner = {str(i): h for i, v in enumerate(value) if (h := type_hints(v)) is not None}
        if isinstance(value, tuple):
            return {"tuple": inner}
        return {"list": inner} if inner else None
    return None


def number_hint(value: Any) -> Any:
    """The type hint for a number sent as a JSON float (rewards): ``None`` for a
    Python ``float``, ``{"py": "int"}`` for an int, ``{"np": dtype}`` for numpy."""
    if type(value) is float:
        return None
    if isinstance(value, np.generic):
        return type_hints(value)
    if isinstance(value, int) and not isinstance(value, bool):
        return {"py": "int"}
    return None


def apply_type_hints(value: Any, hints: Any) -> Any:
    """Rebuild exact types from a JSON value and its :func:`type_hints`.

    Hints that do not fit the value are ignored (they come from the peer and
    must never make decoding fail).
    """
    if not isinstance(hints, dict) or len(hints) != 1:
        return value
    (kind, inner), = hints.items()
    try:
        if kind == "py" and inner == "int" and isinstance(value, (int, float)):
            return int(value)
        if kind in ("nd", "np") and isinstance(inner, str):
            if inner.lstrip("<>|=") not in ARRAY_DTYPES:
                return value
            array = np.asarray(value, dtype=np.dtype(inner))
            return array if kind == "nd" else array[()]
        if kind == "dict" and isinstance(value, dict) and isinstance(inner, dict):
            return {k: apply_type_hints(v, inner.get(k)) for k, v in value.items()}
        if kind in ("list", "tuple") and isinstance(value, list) and isinstance(inner, dict):
            items = [apply_type_hints(v, inner.get(str(i))) for i, v in enumerate(value)]
            return tuple(items) if kind == "tuple" else items
    except (TypeError, ValueError, OverflowError):
        return value
    return value


# -- where the peer is ------------------------------------------------------------------

#: Handshake header (request and response) carrying :data:`PROCESS_TOKEN`.
PROCESS_HEADER = "x-openenv-gym-process"
#: A random token of this Python process. A client and a server that see the
#: same one run in one process, under one GIL: neither busy-polls for the
#: other there, since a spinning thread would only slow the one it waits for.
PROCESS_TOKEN = secrets.token_hex(8)


def is_loopback(host: str) -> bool:
    """Whether ``host`` (a name or address, IPv4-mapped IPv6 included) is this machine."""
    host = host.strip("[]").lower()
    if host.startswith("::ffff:"):
        host = host[len("::ffff:"):]
    return host in ("localhost", "::1") or host.startswith("127.")
