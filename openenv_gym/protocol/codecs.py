"""Codecs: messages to frames and back, and how values travel on each.

A session negotiates one codec in its WebSocket handshake (:func:`codec_for`
the subprotocol chosen), and the codec then decides everything about values:

=====================  ===========  ===================================================
codec                  frames       values
=====================  ===========  ===================================================
stock JSON             text JSON    JSON types only; no type hints (a stock peer)
openenv-gym JSON       text JSON    JSON types, plus type hints to rebuild numpy types
msgpack (version 1)    binary       ndarrays as raw bytes, numpy scalars, tuples kept
msgpack (version 2)    binary       as version 1, but arrays of 512 bytes or more travel
                                    after the message, 16-byte aligned, or in a shared
                                    section (:class:`SectionWriter`, :class:`SectionReader`)
=====================  ===========  ===================================================

Servers and clients never test which codec they hold: they ask it to
:meth:`~Codec.pack_space` a value of a space, :meth:`~Codec.pack_data` a value
without one (an ``info`` dict) and :meth:`~Codec.unpack_data` what the peer
sent. What the handshake offers and selects, what a client's ``encoding=`` may
name and what a peer is told when it sends the wrong kind of frame all come from
:data:`CODECS`, the codecs in their order of preference: a new codec is a class
here and its entry there (and its name in
:data:`~openenv_gym.client.options.Encoding`).

    >>> import numpy as np
    >>> from gymnasium.spaces import Box
    >>> codec = codec_for(None)                      # no subprotocol: stock JSON
    >>> frame = codec.encode({"type": "step", "data": {"action": 1}})
    >>> frame
    '{"type":"step","data":{"action":1}}'
    >>> codec.decode(frame)["data"]
    {'action': 1}
    >>> codec.pack_space(Box(0, 1, (2,)), np.zeros(2, np.float32))
    [0.0, 0.0]
    >>> codec_for(MSGPACK_SUBPROTOCOL).pack_space(Box(0, 1, (2,)), np.zeros(2, np.float32))
    array([0., 0.], dtype=float32)

In msgpack frames, numpy arrays travel as an extension type holding the dtype,
the shape and the raw bytes (version 2: the offset of the bytes after the message,
:class:`MsgpackBuffersCodec`); they decode as read-only views of the frame, without
a copy, after the declared size was checked against the bytes that actually
arrived. Only the dtypes in :data:`~openenv_gym.protocol.hints.ARRAY_DTYPES`
are accepted (never ``object``). Decoding a frame never runs pickle, eval or
exec: a frame is JSON or msgpack, and its extension types carry raw numbers
only. (A server with the ``async`` vector backend hands decoded, validated
values to Gymnasium's ``AsyncVectorEnv``, which pickles them to its own worker
processes; no byte a peer sent is ever unpickled.)
"""

from __future__ import annotations

import functools
import json
import math
import struct
from collections.abc import Callable
from typing import Any, ClassVar, Protocol

import gymnasium as gym
import msgpack
import numpy as np

from .. import spaces
from ..errors import ErrorCode, ProtocolError
from .frames import (
    Frame,
    Limits,
    check_shape,
    check_size,
    too_deep,
    too_many_arrays,
    too_many_items,
)
from .hints import ARRAY_DTYPES, apply_type_hints, jsonable, number_hint, type_hints

__all__ = [
    "Codec",
    "SectionWriter",
    "SectionReader",
    "JsonCodec",
    "MsgpackCodec",
    "MsgpackBuffersCodec",
    "CODECS",
    "SUBPROTOCOLS",
    "MSGPACK_SUBPROTOCOL",
    "JSON_SUBPROTOCOL",
    "codec_for",
    "codec_class",
    "loads_json",
]


class SectionWriter(Protocol):
    """Where a version 2 msgpack frame may put its arrays instead of after its message: memory
    the peer maps too (:class:`openenv_gym._section.ServerSection`). ``reserve(nbytes)`` says
    whether a frame's ``nbytes`` of arrays may be written to ``data`` now, counting it written."""

    data: memoryview

    def reserve(self, nbytes: int) -> bool: ...


class SectionReader(Protocol):
    """The reading end of a :class:`SectionWriter` (:class:`openenv_gym._section.ClientSection`):
    ``data`` holds the arrays of a frame that says they are there; ``consumed()`` counts the
    frame read once they are copied out, and the writer may use ``data`` again."""

    data: memoryview

    def consumed(self) -> None: ...


class Codec:
    """Turns messages into frames and frames into messages, and values into wire data.

    A codec class says what the handshake needs of it: its ``name`` (what
    ``ConnectOptions(encoding=...)`` calls it), whether its frames are ``binary``
    (else text), and the WebSocket ``subprotocol`` that selects it.
    ``decode`` raises :class:`~openenv_gym.errors.ProtocolError` (INVALID_JSON)
    on anything that is not a well-formed message within :class:`Limits`.
    ``extended`` is ``True`` when the peer is an openenv-gym peer (it chose one
    of :data:`SUBPROTOCOLS`), which reads the extension fields; ``hints`` when
    values travel as JSON plus type hints.
    """

    name: ClassVar[str]
    binary: ClassVar[bool]
    subprotocol: ClassVar[str]
    extended: bool
    hints: bool

    def __init__(self, limits: Limits | None = None) -> None:
        self.limits = limits or Limits()

    @classmethod
    def negotiated(cls, limits: Limits | None = None) -> Codec:
        """The codec of a session whose handshake selected :attr:`subprotocol` (an
        openenv-gym peer at the other end)."""
        return cls(limits)

    def encode(self, message: Any, section: SectionWriter | None = None) -> Frame:
        """``message`` as a frame; its arrays in ``section`` when the codec has one and
        ``section.reserve`` allows it (version 2 msgpack; the others ignore it)."""
        raise NotImplementedError

    def decode(self, frame: Frame, section: SectionReader | None = None) -> Any:
        """The message in ``frame``, its arrays copied out of ``section`` when the frame
        says they are there (version 2 msgpack; the others ignore it)."""
        raise NotImplementedError

    # -- values -------------------------------------------------------------

    def pack_space(self, space: gym.Space, value: Any, path: str = "value") -> Any:
        """A value of ``space`` as wire data (raw arrays on binary codecs, JSON otherwise)."""
        return spaces.encode(space, value, arrays=self.binary, path=path)

    def unpack_space(self, space: gym.Space, data: Any, hints: Any = None, path: str = "value") -> Any:
        """A value of ``space`` from wire data (and its type hints, if the peer sent any)."""
        if hints is not None:
            data = apply_type_hints(data, hints)
        return spaces.decode(space, data, path=path)

    def pack_data(self, value: Any) -> tuple[Any, Any]:
        """A value without a space (an ``info`` dict) as ``(wire data, type hints)``;
        the hints are ``None`` unless this codec sends them and the value needs them."""
        return jsonable(value), None

    def hint(self, value: Any) -> Any:
        """Type hints for a value this codec sent as plain JSON (``None``: none needed or sent)."""
        return None

    def number_hint(self, number: Any) -> Any:
        """The type hint of a number that travels as a JSON float (a reward) for an
        openenv-gym peer, which gets the exact type back (``None`` for a stock one)."""
        return number_hint(number) if self.extended else None

    def pack_array(self, array: np.ndarray) -> Any:
        """A numeric array whose dtype the peer knows (rewards, flags)."""
        return array.tolist()

    @staticmethod
    def unpack_data(data: Any, hints: Any) -> Any:
        """A value from wire data and its type hints (hints that do not fit are ignored)."""
        return apply_type_hints(data, hints) if hints is not None else data


def loads_json(text: str | bytes | memoryview, limits: Limits) -> Any:
    """Parse one JSON document within ``limits`` (size first, then nesting and lengths).

    Used for WebSocket frames and HTTP bodies alike, so every route refuses
    the same inputs the same way: an ``INVALID_JSON``
    :class:`~openenv_gym.errors.ProtocolError`.
    """
    if isinstance(text, memoryview):
        text = bytes(text)
    check_size(len(text), limits)
    # Every item of a JSON container but the first follows a comma: a frame with
    # more commas than max_items (strings' own included) is refused before parsing.
    if len(text) > limits.max_items:
        commas = text.count(",") if isinstance(text, str) else text.count(b",")
        if commas >= limits.max_items:
            raise too_many_items(limits)
    if isinstance(text, (bytes, bytearray)):
        try:
            text = bytes(text).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise ProtocolError(ErrorCode.INVALID_JSON, f"Invalid JSON: {exc}") from None
    try:
        value = json.loads(text)
    except RecursionError:
        raise too_deep(limits) from None
    except ValueError as exc:
        raise ProtocolError(ErrorCode.INVALID_JSON, f"Invalid JSON: {exc}") from None
    check_shape(value, limits, len(text))
    return value


class JsonCodec(Codec):
    """OpenEnv's framing: one compact JSON object per text frame.

    By default the peer is a stock OpenEnv peer (no subprotocol): plain JSON
    values, no hints. ``extended=True`` (the handshake selected
    :data:`JSON_SUBPROTOCOL`) is an openenv-gym peer: the same frames, plus type
    hints.
    """

    name = "json"
    binary = False
    #: The subprotocol an openenv-gym client offers for JSON: the frames are stock
    #: OpenEnv JSON; selecting it only tells the server that the peer understands the
    #: openenv-gym extension fields (exact info types, rendering).
    subprotocol = "openenv-gym.json.v1"

    _encoder = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False)
    _ascii_encoder = json.JSONEncoder(separators=(",", ":"), ensure_ascii=True)

    def __init__(self, limits: Limits | None = None, *, extended: bool = False) -> None:
        super().__init__(limits)
        self.extended = self.hints = extended

    @classmethod
    def negotiated(cls, limits: Limits | None = None) -> JsonCodec:
        return cls(limits, extended=True)

    def encode(self, message: Any, section: SectionWriter | None = None) -> str:
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

    def decode(self, frame: Frame, section: SectionReader | None = None) -> Any:
        return loads_json(frame, self.limits)

    def pack_data(self, value: Any) -> tuple[Any, Any]:
        return jsonable(value), (type_hints(value) if self.hints else None)

    def hint(self, value: Any) -> Any:
        return type_hints(value) if self.hints else None


#: msgpack extension type codes used by openenv-gym.
EXT_NDARRAY = 1
EXT_NUMPY_SCALAR = 2
EXT_TUPLE = 3
#: An ndarray whose bytes follow the message in the frame (version 2 frames only).
EXT_NDARRAY_OUT_OF_BAND = 4

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


def _sendable(array: np.ndarray) -> tuple[bytes, np.ndarray]:
    """The ext header for ``array``, and its data as it travels: little-endian, C order
    (``array`` itself when it already is)."""
    header, dtype = _array_header(array)
    if array.dtype != dtype or not array.flags.c_contiguous:
        array = np.array(array, dtype=dtype, order="C")
    return header, array


def _pack_array(array: np.ndarray) -> bytes:
    header, array = _sendable(array)
    return b"".join((header, array.data if array.ndim else array.tobytes()))


def _array_layout(
    payload: bytes, limits: Limits, known: dict | None, *, inline: bool,
) -> tuple[np.dtype, tuple, int, int]:
    """The dtype, shape and size in bytes an ndarray header at the start of ``payload``
    declares, and where the header ends, checked against ``limits`` before anything
    is allocated (and first, for an ``inline`` array, against the bytes after the
    header, which are its data).

    ``known`` caches validated headers (header bytes → dtype, shape, data size) so
    the arrays of every step skip re-parsing the same header.
    """
    if len(payload) < _HEADER.size:
        raise ProtocolError(ErrorCode.INVALID_JSON, "Truncated ndarray header")
    code_len, ndim = payload[0], payload[1]
    end = _HEADER.size + code_len + ndim * _DIM.size
    if known is not None and (layout := known.get(payload[:end])) is not None:
        if not inline or layout[2] == len(payload) - end:
            return (*layout, end)
    if ndim > 32:
        raise ProtocolError(ErrorCode.INVALID_JSON, f"ndarray with {ndim} dimensions (at most 32)")
    if len(payload) < end:
        raise ProtocolError(ErrorCode.INVALID_JSON, "Truncated ndarray header")
    offset = _HEADER.size
    code = payload[offset : offset + code_len].decode("ascii", "replace")
    if code.lstrip("<>|=") not in ARRAY_DTYPES or code[:1] == ">":
        raise ProtocolError(
            ErrorCode.INVALID_JSON,
            f"ndarray dtype {code!r} is not allowed (allowed: little-endian "
            f"{', '.join(sorted(ARRAY_DTYPES))})",
        )
    dtype = np.dtype(code)
    shape = tuple(
        _DIM.unpack_from(payload, offset + code_len + i * _DIM.size)[0] for i in range(ndim)
    )
    declared = math.prod(shape) * dtype.itemsize
    if inline and declared != len(payload) - end:
        raise ProtocolError(
            ErrorCode.INVALID_JSON,
            f"ndarray declares shape {shape} of {dtype} ({declared} bytes) "
            f"but carries {len(payload) - end} bytes",
        )
    if declared > limits.max_array_bytes:
        raise ProtocolError(
            ErrorCode.INVALID_JSON,
            f"ndarray of {declared} bytes exceeds the limit of {limits.max_array_bytes} bytes",
        )
    if known is not None:
        if len(known) >= _HEADER_CACHE_SIZE:
            known.clear()
        known[payload[:end]] = dtype, shape, declared
    return dtype, shape, declared, end


def _unpack_array(payload: bytes, limits: Limits, known: dict | None = None) -> np.ndarray:
    """The ndarray of an ext payload that carries its bytes (a read-only view of
    them, made in one call)."""
    dtype, shape, _, end = _array_layout(payload, limits, known, inline=True)
    return np.ndarray(shape, dtype, payload, end)


def _inline_array(array: np.ndarray) -> msgpack.ExtType:
    """An ndarray as an ext carrying its bytes (ext 1)."""
    return msgpack.ExtType(EXT_NDARRAY, _pack_array(array))


def _pack_default(value: Any, arrays: Callable[[np.ndarray], msgpack.ExtType] = _inline_array) -> Any:
    """Pack what msgpack does not know natively (the packer runs with ``strict_types``);
    ``arrays`` packs ndarrays."""
    if isinstance(value, np.ndarray):
        return arrays(value)
    if isinstance(value, np.generic) and (isinstance(value, np.bool_) or value.dtype.kind in "iufc"):
        return msgpack.ExtType(EXT_NUMPY_SCALAR, _pack_array(np.asarray(value)))
    if isinstance(value, tuple):
        default = _pack_default if arrays is _inline_array else functools.partial(_pack_default, arrays=arrays)
        packed = msgpack.packb(list(value), default=default, use_bin_type=True, strict_types=True)
        return msgpack.ExtType(EXT_TUPLE, packed)
    # Subclasses of native types (IntEnum, OrderedDict, str enums, ...) and the rest.
    for native in _NATIVE_TYPES:
        if isinstance(value, native):
            return native(value)
    return jsonable(value)


#: What msgpack packs natively (subclasses are packed as these).
_NATIVE_TYPES: tuple[Any, ...] = (bool, int, float, str, bytes, dict, list)


class MsgpackCodec(Codec):
    """openenv-gym's binary framing: one msgpack map per binary frame.

    Same messages as JSON; numpy arrays, numpy scalars and tuples are
    extension types, so values keep their exact Python and numpy types and
    need no hints.
    """

    name = "msgpack"
    binary = True
    #: The subprotocol that selects msgpack binary frames (openenv-gym extension, version 1).
    subprotocol = "openenv-gym.msgpack.v1"
    extended = True
    hints = False

    def __init__(self, limits: Limits | None = None) -> None:
        super().__init__(limits)
        self._packer = msgpack.Packer(
            default=_pack_default, use_bin_type=True, strict_types=True, autoreset=True
        )
        self._tuple_depth = 0
        self._ext_objects = 0
        self._known_headers: dict[bytes, tuple] = {}
        #: While a version 2 frame decodes: the frame (or the shared section holding its
        #: arrays), where its array section starts, how far into the section its arrays
        #: (padded to 16 bytes) reach, and whether they are copied out (a shared section's).
        self._frame: bytes | memoryview | None = None
        self._section = 0
        self._section_end = 0
        self._copy_arrays = False

    def encode(self, message: Any, section: SectionWriter | None = None) -> bytes:
        return self._packer.pack(message)

    def decode(self, frame: Frame, section: SectionReader | None = None) -> Any:
        frame = self._binary(frame)
        self._ext_objects = 0
        message = self._unpack(frame)
        check_shape(message, self.limits, len(frame))
        return message

    def _binary(self, frame: Frame) -> bytes:
        """``frame``, refused unless it is binary and within the size limit."""
        check_size(len(frame), self.limits)
        if isinstance(frame, str):
            raise ProtocolError(
                ErrorCode.INVALID_JSON,
                "Text frame on a msgpack session: send binary msgpack frames",
            )
        return frame

    def pack_data(self, value: Any) -> tuple[Any, Any]:
        return value, None

    def pack_array(self, array: np.ndarray) -> Any:
        return array

    def _ext_hook(self, code: int, payload: bytes) -> Any:
        self._ext_objects += 1
        if self._ext_objects > self.limits.max_arrays:
            raise too_many_arrays(self.limits)
        if code == EXT_NDARRAY:
            return _unpack_array(payload, self.limits, self._known_headers)
        if code == EXT_NUMPY_SCALAR:
            array = _unpack_array(payload, self.limits, self._known_headers)
            if array.shape != ():
                raise ProtocolError(ErrorCode.INVALID_JSON, "numpy scalar with a non-empty shape")
            return array[()]
        if code == EXT_TUPLE:
            # Each level unpacks its payload from inside msgpack's C unpacker:
            # bound the recursion here, before it can exhaust the C stack.
            if self._tuple_depth >= self.limits.max_depth:
                raise too_deep(self.limits)
            self._tuple_depth += 1
            try:
                return tuple(self._unpack(payload))
            finally:
                self._tuple_depth -= 1
        if code == EXT_NDARRAY_OUT_OF_BAND:
            return self._array_after_message(payload)
        raise ProtocolError(ErrorCode.INVALID_JSON, f"Unknown msgpack extension type {code}")

    def _array_after_message(self, payload: bytes) -> np.ndarray:
        """The ndarray of an ext 4 payload (its header, then the u64 offset of its bytes
        in the frame's array section): a read-only view of the frame."""
        frame = self._frame
        if frame is None:
            raise ProtocolError(
                ErrorCode.INVALID_JSON,
                f"msgpack extension type {EXT_NDARRAY_OUT_OF_BAND} (an array after the message) "
                f"is only valid on {MsgpackBuffersCodec.subprotocol} sessions",
            )
        dtype, shape, declared, end = _array_layout(payload, self.limits, self._known_headers, inline=False)
        if len(payload) != end + _OFFSET.size:
            raise ProtocolError(
                ErrorCode.INVALID_JSON,
                f"An out-of-band ndarray ext holds {len(payload) - end} bytes after its header; "
                f"expected the {_OFFSET.size}-byte offset of its data",
            )
        offset = _OFFSET.unpack_from(payload, end)[0]
        available = len(frame) - self._section
        if offset > available or declared > available - offset:
            raise ProtocolError(
                ErrorCode.INVALID_JSON,
                f"ndarray of shape {shape} of {dtype} ({declared} bytes) at offset {offset} runs past "
                f"the end of the frame's array section ({max(available, 0)} bytes)",
            )
        self._section_end = max(self._section_end, offset + declared + (-declared % _ALIGN))
        array = np.ndarray(shape, dtype, frame, self._section + offset)
        return array.copy() if self._copy_arrays else array

    def _unpack(self, data: bytes | memoryview) -> Any:
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
        except ProtocolError:
            raise
        except RecursionError:
            raise too_deep(limits) from None
        except (ValueError, TypeError, msgpack.UnpackException) as exc:
            reason = str(exc) or type(exc).__name__
            raise ProtocolError(ErrorCode.INVALID_JSON, f"Invalid msgpack: {reason}") from None


#: The smallest array (in bytes) that version 2 msgpack frames carry after the message:
#: smaller ones cost less inline than the bookkeeping of a reference.
OUT_OF_BAND_BYTES = 512
#: The smallest array section a version 2 frame puts in a shared section rather than after its
#: message: below it, the section's copy in and copy out gain nothing over the socket
#: (``benchmarks/bench_section_sizes.py``: 28 and 56 KB of arrays a step 1.01x and 0.969x as
#: fast through a section, 85 KB 1.06x, 226 KB 1.25x).
SHARED_SECTION_BYTES = 64 * 1024
#: Where array data starts in a version 2 frame: on a multiple of this many bytes.
_ALIGN = 16
_PADDING = bytes(_ALIGN)
_BODY = struct.Struct("<I")  # the length of a version 2 frame's msgpack message
#: Set in a version 2 frame's length: its arrays are in the connection's shared section, not after it.
_IN_SECTION = 1 << 31
_OFFSET = struct.Struct("<Q")  # where an out-of-band array's bytes start in the array section


class MsgpackBuffersCodec(MsgpackCodec):
    """Version 2 of the msgpack framing: large arrays travel after the message, so the
    peer decodes them as views of the frame it received, with no copy.

    A frame is the ``u32`` little-endian length of the msgpack message, the message,
    then (from the first multiple of 16 bytes of the frame at or after the message's end)
    the array section. An ndarray of at least :data:`OUT_OF_BAND_BYTES` bytes is an
    ext 4 in the message: its ext 1 header (dtype, shape) and the ``u64`` offset of its
    C-order bytes in the section, each on a multiple of 16; smaller arrays stay inline
    (ext 1). Every other value is encoded as in version 1.

    A decoded array is a read-only view of the frame's bytes, and keeps the whole frame
    alive while it lives. Its declared size is checked against the limits, and its bytes
    against the section, before the view is made.

    Between two processes of one machine the array section may instead be a section of
    memory both map (:mod:`openenv_gym._section`): ``encode(message, section)`` writes it
    there when it holds at least :data:`SHARED_SECTION_BYTES` and ``section.reserve``
    allows, sets the top bit of the frame's length, and ends the frame with the message;
    ``decode(frame, section)`` then copies each array out (the next frame reuses the
    section: these arrays are the caller's, writable) and calls ``section.consumed()``. A
    frame with that bit on a connection without a section is refused.

        >>> import numpy as np
        >>> codec = MsgpackBuffersCodec()
        >>> frame = codec.encode({"obs": np.arange(256, dtype=np.float32), "reward": 1.0})
        >>> obs = codec.decode(frame)["obs"]
        >>> obs[-1], obs.base is frame, obs.flags.writeable
        (np.float32(255.0), True, False)
    """

    #: The subprotocol that selects version 2 msgpack frames.
    subprotocol = "openenv-gym.msgpack.v2"

    def __init__(self, limits: Limits | None = None) -> None:
        super().__init__(limits)
        self._buffers: list[Any] = []
        self._section_bytes = 0
        self._packer = msgpack.Packer(
            default=functools.partial(_pack_default, arrays=self._array_ext),
            use_bin_type=True, strict_types=True, autoreset=True,
        )

    def _array_ext(self, array: np.ndarray) -> msgpack.ExtType:
        if array.nbytes < OUT_OF_BAND_BYTES:
            return _inline_array(array)
        header, array = _sendable(array)
        offset = self._section_bytes
        self._buffers.append(array.data)
        gap = -array.nbytes % _ALIGN
        if gap:
            self._buffers.append(_PADDING[:gap])
        self._section_bytes += array.nbytes + gap
        return msgpack.ExtType(EXT_NDARRAY_OUT_OF_BAND, header + _OFFSET.pack(offset))

    def encode(self, message: Any, section: SectionWriter | None = None) -> bytes:
        self._section_bytes = 0
        try:
            body = self._packer.pack(message)
            buffers = self._buffers
        finally:
            self._buffers = []
        if not buffers:
            return _BODY.pack(len(body)) + body
        if section is not None and self._section_bytes >= SHARED_SECTION_BYTES and section.reserve(self._section_bytes):
            _write_section(section.data, buffers)
            return _BODY.pack(len(body) | _IN_SECTION) + body
        gap = -(_BODY.size + len(body)) % _ALIGN
        return b"".join([_BODY.pack(len(body)), body, _PADDING[:gap], *buffers])

    def decode(self, frame: Frame, section: SectionReader | None = None) -> Any:
        frame = self._binary(frame)
        if len(frame) < _BODY.size:
            raise ProtocolError(
                ErrorCode.INVALID_JSON,
                f"Truncated frame of {len(frame)} bytes: a {self.subprotocol} frame starts with the "
                f"{_BODY.size}-byte length of its msgpack message",
            )
        length = _BODY.unpack_from(frame)[0]
        shared = bool(length & _IN_SECTION)
        end = _BODY.size + (length & ~_IN_SECTION)
        if end > len(frame):
            raise ProtocolError(
                ErrorCode.INVALID_JSON,
                f"The frame says its msgpack message has {end - _BODY.size} bytes, "
                f"but it holds {len(frame) - _BODY.size}",
            )
        frame = bytes(frame)
        if shared:
            if section is None:
                raise ProtocolError(
                    ErrorCode.INVALID_JSON,
                    "The frame says its arrays are in a shared section, and this connection has none",
                )
            self._frame, self._section, self._copy_arrays = section.data, 0, True
        else:
            self._frame, self._section = frame, end + (-end % _ALIGN)
        self._ext_objects = self._section_end = 0
        try:
            message = self._unpack(memoryview(frame)[_BODY.size : end])
        finally:
            self._frame, self._copy_arrays = None, False
            if shared and section is not None:
                section.consumed()
        used = end if shared or not self._section_end else self._section + self._section_end
        if len(frame) > used:
            raise ProtocolError(
                ErrorCode.INVALID_JSON,
                f"{len(frame) - used} bytes at the end of the frame belong to no array of its message",
            )
        check_shape(message, self.limits, end)
        return message


def _write_section(data: memoryview, buffers: list[Any]) -> None:
    """Write a frame's array section (its arrays and their padding, in order) to ``data``."""
    target = np.frombuffer(data, np.uint8)
    at = 0
    for buffer in buffers:
        source = np.frombuffer(buffer, np.uint8)
        target[at : at + source.size] = source
        at += source.size


#: Every codec openenv-gym speaks, in its order of preference: a server selects the first
#: one whose subprotocol the client offers, and ``encoding="auto"`` offers them all.
CODECS: tuple[type[Codec], ...] = (MsgpackBuffersCodec, MsgpackCodec, JsonCodec)
#: Every subprotocol the server understands, in order of preference.
SUBPROTOCOLS = tuple(codec.subprotocol for codec in CODECS)
#: The subprotocols of the codecs openenv-gym has always had, by name.
MSGPACK_SUBPROTOCOL = MsgpackCodec.subprotocol
JSON_SUBPROTOCOL = JsonCodec.subprotocol


def codec_for(subprotocol: str | None, limits: Limits | None = None) -> Codec:
    """The codec for a negotiated subprotocol (``None``, none negotiated, means a stock
    OpenEnv peer: plain JSON)."""
    if subprotocol is None:
        return JsonCodec(limits)
    return codec_class(subprotocol).negotiated(limits)


def codec_class(subprotocol: str | None) -> type[Codec]:
    """The class of :func:`codec_for`'s codec: what a transport that only frames the
    messages needs to know (:attr:`Codec.binary`)."""
    if subprotocol is None:
        return JsonCodec
    for codec in CODECS:
        if codec.subprotocol == subprotocol:
            return codec
    raise ValueError(f"unknown subprotocol {subprotocol!r}; expected one of {SUBPROTOCOLS}")
