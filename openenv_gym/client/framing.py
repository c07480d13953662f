"""RFC 6455 framing for the client side of an open WebSocket, sans I/O, with no extension.

:class:`~openenv_gym.client.connection.Connection` does the opening handshake with
``websockets``' :class:`~websockets.client.ClientProtocol` (HTTP parsing and validation
are its strength), then frames messages with :class:`ClientFraming` unless an extension
was negotiated (``compression="deflate"`` keeps websockets' protocol throughout). It
speaks the same small interface as ``ClientProtocol`` (``send_*``, ``receive_data``,
``events_received``, ``data_to_send``, ``state``, ``close_code``, ``parser_exc``) and
yields the same :class:`~websockets.frames.Frame` events, so the connection drives
either one; what it leaves out is the cost of a general protocol object on every
message: a server frame is parsed in place in the buffer the connection reads into (its
payload copied out once, never through a temporary: two large buffers freed together
make glibc give their pages back, and the next message fault them in again, 160 page
faults per 225 KB message), a read that is one whole data frame (a reply, most reads) is
taken with no frame event at all (:meth:`ClientFraming.whole_message`), a client frame is
one header and a payload masked in C (``websockets.speedups``).
``benchmarks/bench_client_transport.py`` measures the difference.

    >>> framing = ClientFraming(max_size=1 << 20)
    >>> framing.receive_data(b"\\x82\\x03abc")                # a binary frame from the server
    >>> [(frame.opcode.name, frame.data) for frame in framing.events_received()]
    [('BINARY', b'abc')]
    >>> framing.send_text(b"hi"); frame = b"".join(framing.data_to_send())
    >>> frame[0], frame[1] & 0x80, len(frame)                # text, masked, 2 + 4 + 2 bytes
    (129, 128, 8)

Errors follow RFC 6455 §7.1.7 ("fail the WebSocket connection"): a frame past
``max_size`` (a fragmented message counts whole) sets ``parser_exc`` to
:class:`~websockets.exceptions.PayloadTooBig` and sends close code 1009; a frame that
breaks the protocol (a masked server frame, reserved bits or opcodes, a control frame
that is fragmented or over 125 bytes, a continuation with no message) sets it to
:class:`~websockets.exceptions.ProtocolError` and sends 1002. Either way nothing more
is read.
"""

from __future__ import annotations

import os
import struct

from websockets.exceptions import PayloadTooBig, ProtocolError
from websockets.frames import Close, Frame, Opcode
from websockets.protocol import State

try:
    from websockets.speedups import apply_mask
except ImportError:  # websockets built without its C extension
    from websockets.utils import apply_mask

__all__ = ["ClientFraming"]

_DATA = {Opcode.TEXT, Opcode.BINARY}
_OPCODES = {opcode.value: opcode for opcode in Opcode}
_SHORT, _LONG = struct.Struct("!H"), struct.Struct("!Q")

#: Random bytes drawn at once for the masks of many frames (RFC 6455 §5.3: a fresh,
#: unpredictable key per frame), rather than one system call per frame.
_MASK_POOL_BYTES = 4096


class ClientFraming:
    """The client side of RFC 6455's framing on an open connection (see the module)."""

    def __init__(self, max_size: int | None) -> None:
        self.max_size = max_size
        self.state = State.OPEN
        #: Why reading stopped: the server broke the protocol or a limit (``None``: it did not).
        self.parser_exc: Exception | None = None
        self.close_code: int | None = None
        self.close_reason = ""
        self._head = bytearray()  # a frame's header cut short by the end of a read
        self._payload: list[bytes] | None = None  # the pieces of a payload still arriving
        self._payload_first = 0  # the first header byte of its frame
        self._payload_missing = 0  # its bytes still to come
        self._out: list[bytes] = []
        self._events: list[Frame] = []
        self._message_bytes: int | None = None  # of the fragmented message being read, if any
        self._masks = b""
        self._mask_at = 0
        self._close_sent = False

    # -- sending ------------------------------------------------------------

    def send_text(self, data: bytes, fin: bool = True) -> None:
        self._send(0x1, data, fin)

    def send_binary(self, data: bytes, fin: bool = True) -> None:
        self._send(0x2, data, fin)

    def send_continuation(self, data: bytes, fin: bool) -> None:
        self._send(0x0, data, fin)

    def send_ping(self, data: bytes) -> None:
        self._send(0x9, data)

    def send_pong(self, data: bytes) -> None:
        self._send(0xA, data)

    def send_close(self, code: int | None = None, reason: str = "") -> None:
        """Start the closing handshake (RFC 6455 §5.5.1)."""
        if self._close_sent or self.state is State.CLOSED:
            return
        payload = b"" if code is None else Close(code, reason).serialize()
        self._send(0x8, payload)
        self._close_sent = True
        if self.state is State.OPEN:
            self.state = State.CLOSING

    def fail(self, code: int, reason: str = "") -> None:
        """Fail the connection (RFC 6455 §7.1.7): send a close frame with ``code``, read no more."""
        self.send_close(code, reason)
        if self.close_code is None:
            self.close_code, self.close_reason = code, reason

    def _send(self, opcode: int, data: bytes, fin: bool = True) -> None:
        if self._close_sent:
            raise ProtocolError("the connection is closing: nothing more can be sent")
        length = len(data)
        first = (0x80 if fin else 0) | opcode
        if length < 126:
            head = bytes((first, 0x80 | length))
        elif length < 65536:
            head = bytes((first, 0xFE)) + _SHORT.pack(length)
        else:
            head = bytes((first, 0xFF)) + _LONG.pack(length)
        mask = self._mask()
        self._out.append(head + mask + apply_mask(data, mask))

    def _mask(self) -> bytes:
        at = self._mask_at
        if at + 4 > len(self._masks):
            self._masks, at = os.urandom(_MASK_POOL_BYTES), 0
        self._mask_at = at + 4
        return self._masks[at : at + 4]

    def data_to_send(self) -> list[bytes]:
        """The bytes to write to the socket, in order (taken: the next call has only new ones)."""
        out, self._out = self._out, []
        return out

    # -- receiving ----------------------------------------------------------

    def receive_data(self, data: bytes | bytearray | memoryview) -> None:
        """Take bytes read from the socket; whole frames become :meth:`events_received`.

        ``data`` is not kept (the connection reads into one buffer it reuses): a frame's
        payload is copied out of it once, into the bytes the frame event holds. A payload
        that has not all arrived is gathered as the pieces each read brings, joined once
        whole (never in a buffer of the size its header announces, which may never come).
        """
        if self.parser_exc is not None or self.state is State.CLOSED:
            return
        with memoryview(data) as view:
            if self._payload is not None:
                taken = self._fill_payload(view)
                if self._payload is not None or taken == len(view):
                    return
                view = view[taken:]
            if self._head:  # a header cut short by the last read (rare, and a few bytes)
                joined = bytes(self._head) + bytes(view)
                self._head.clear()
                self._parse(memoryview(joined))
            else:
                self._parse(view)

    def whole_message(self, view: memoryview) -> tuple[Opcode, bytes] | None:
        """The message ``view`` holds when it is exactly one whole data frame (the commonest
        read: one reply), taken with no event object: its opcode and its payload, copied
        out once. ``None`` for anything else, which :meth:`receive_data` takes: a frame
        cut short or followed by another, a fragment, a control frame, one that breaks the
        protocol or the size limit (the general path says why), or any state left over
        from an earlier read."""
        if self._head or self._payload is not None or self._message_bytes is not None:
            return None
        if self.state is not State.OPEN or self.parser_exc is not None:
            return None
        header = _header(view, 0)
        if header is None:
            return None
        first, second, length, start = header
        if (first != 0x82 and first != 0x81) or len(view) != start + length:  # FIN, text or binary, whole
            return None
        if not self._acceptable(first, second, length):
            return None  # masked, or over the limit: failed here as the general path fails it
        return (Opcode.BINARY if first == 0x82 else Opcode.TEXT), bytes(view[start:])

    def _parse(self, view: memoryview) -> None:
        """Read the frames whole in ``view``; keep what starts one (a header cut short, or a
        payload still arriving) for the next read."""
        at, size = 0, len(view)
        while self.parser_exc is None and (header := _header(view, at)) is not None:
            first, second, length, start = header
            if not self._acceptable(first, second, length):
                return  # read no more
            end = start + length
            if end > size:  # the payload is still arriving: gather it
                self._payload, self._payload_first, self._payload_missing = [], first, length
                self._fill_payload(view[start:])
                return
            self._frame(first, bytes(view[start:end]))
            at = end
        if at < size and self.parser_exc is None:
            self._head += view[at:]

    def _fill_payload(self, view: memoryview) -> int:
        """Keep what ``view`` holds of the payload being gathered; when it is whole, it is a
        frame. The number of bytes of ``view`` taken."""
        pieces = self._payload
        assert pieces is not None
        taken = min(self._payload_missing, len(view))
        if taken:
            pieces.append(bytes(view[:taken]))
        self._payload_missing -= taken
        if not self._payload_missing:
            self._payload = None
            self._frame(self._payload_first, b"".join(pieces))
        return taken

    def _acceptable(self, first: int, second: int, length: int) -> bool:
        """Whether a frame with this header may be read; if not, fail the connection."""
        opcode = first & 0x0F
        if second & 0x80:
            return self._broken(ProtocolError("the server sent a masked frame"), 1002)
        if first & 0x70:
            return self._broken(ProtocolError("reserved bits set, and no extension was negotiated"), 1002)
        if opcode not in _OPCODES:
            return self._broken(ProtocolError(f"invalid opcode {opcode:#x}"), 1002)
        if opcode >= 0x8:
            if not first & 0x80 or length > 125:
                return self._broken(ProtocolError("a fragmented control frame, or one over 125 bytes"), 1002)
            return True
        if opcode == 0x0:
            if self._message_bytes is None:
                return self._broken(ProtocolError("a continuation frame with no message to continue"), 1002)
            total = self._message_bytes + length
        else:
            if self._message_bytes is not None:
                return self._broken(ProtocolError("a new message inside a fragmented one"), 1002)
            total = length
        if self.max_size is not None and total > self.max_size:
            return self._broken(PayloadTooBig(total, self.max_size), 1009)
        return True

    def _broken(self, exc: Exception, code: int) -> bool:
        self.parser_exc = exc
        if self.state is State.OPEN:
            self.fail(code, str(exc)[:120])
        return False

    def _frame(self, first: int, payload: bytes) -> None:
        opcode, fin = _OPCODES[first & 0x0F], bool(first & 0x80)
        if opcode in _DATA or opcode is Opcode.CONT:
            if self.state is not State.OPEN:
                return  # data after the closing handshake began: dropped (RFC 6455 §5.5.1)
            previous = 0 if opcode in _DATA else self._message_bytes or 0
            self._message_bytes = None if fin else previous + len(payload)
            self._events.append(Frame(opcode, payload, fin))
        elif opcode is Opcode.PING:
            if not self._close_sent:
                self.send_pong(payload)
        elif opcode is Opcode.PONG:
            self._events.append(Frame(opcode, payload))
        else:  # CLOSE
            try:
                close = Close.parse(payload)
            except (ProtocolError, UnicodeDecodeError) as exc:
                self._broken(ProtocolError(f"an invalid close frame: {exc}"), 1002)
                return
            if self.close_code is None:
                self.close_code, self.close_reason = close.code, close.reason
            if not self._close_sent:
                self._send(0x8, payload[:2])
                self._close_sent = True
            self.state = State.CLOSING

    def receive_eof(self) -> None:
        """The server closed TCP: the connection is closed (1006 unless a close frame came)."""
        if self.close_code is None:
            self.close_code = 1006
        self.state = State.CLOSED

    def events_received(self) -> list[Frame]:
        """The frames received since the last call: data frames and pongs."""
        events, self._events = self._events, []
        return events


def _header(view: memoryview, at: int) -> tuple[int, int, int, int] | None:
    """The frame header at ``at`` in ``view``: its first two bytes, its payload's length and
    where the payload starts (``None``: the header is cut short)."""
    size = len(view)
    if size - at < 2:
        return None
    first, second = view[at], view[at + 1]
    length, start = second & 0x7F, at + 2
    if length == 126:
        if size - at < 4:
            return None
        length, start = _SHORT.unpack_from(view, start)[0], start + 2
    elif length == 127:
        if size - at < 10:
            return None
        length, start = _LONG.unpack_from(view, start)[0], start + 8
    return first, second, length, start
