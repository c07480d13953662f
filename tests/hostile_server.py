"""A scripted hostile OpenEnv server: raw HTTP and WebSocket on 127.0.0.1, in threads
of the test process, doing on purpose what no honest server does.

Each test picks what the server does per route (``/schema``, ``/metadata``, ``/health``,
``/reset``, ``/ws``...): a *handler* is a function of the accepted connection and the
request it sent. The handlers here are the hostile behaviours a client must survive
(bodies without end, lying ``Content-Length``, a byte every half second, JSON nested
100,000 deep, a server that never answers) and a small stock OpenEnv env over a
WebSocket framed by hand (RFC 6455: the accept key, unmasked server frames, masked
client frames), whose replies can be fragmented, interleaved with pings, oversized,
drowned in a flood of unsolicited messages, or not UTF-8.

    server = HostileServer({"/schema": endless()})
    openenv_gym.RemoteEnv(server.url)   # LimitExceededError: ... sent a body over ... (max_document_bytes)
    server.close()

Every loop is bounded in count and in time (:data:`MAX_SECONDS`), and :meth:`HostileServer.close`
ends them all (it shuts every socket down and joins every thread).
"""

from __future__ import annotations

import base64
import hashlib
import json
import socket
import struct
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "HostileServer", "Peer", "Request", "WebSocket", "Handler",
    "document", "endless", "endless_chunked", "content_length", "trickle_headers", "headers_then_silence",
    "trickle_body", "deep",
    "silent", "not_found", "websocket", "StockEnv", "STOCK_SCHEMA", "observation",
    "whole", "fragmented", "fragmented_with_pings", "oversized_fragments", "flood", "not_utf8", "never",
]

#: The longest any handler runs, whatever its client does: past the longest client deadline
#: under test (``message_timeout``, 60 s, which starts after the connection's accept), so a
#: silent server is still silent when the client gives up, on a loaded machine too.
MAX_SECONDS = 120.0
#: The most bytes a streaming handler sends (a bound, never reached in a test).
MAX_STREAM_BYTES = 1 << 36
#: The most messages a WebSocket script reads.
MAX_MESSAGES = 10_000

_GUID = b"258EAFA5-E914-47DA-95CA-C5AB0DC85B11"
_TEXT, _BINARY, _CONT, _CLOSE, _PING, _PONG = 0x1, 0x2, 0x0, 0x8, 0x9, 0xA


@dataclass
class Request:
    """What a client asked: ``method``, ``path`` (no query), ``query``, lower-cased
    ``headers`` and ``body``."""

    method: str
    path: str
    query: str
    headers: dict[str, str]
    body: bytes = b""


class Peer:
    """One accepted connection, seen from the server's side."""

    def __init__(self, sock: socket.socket, stop: threading.Event) -> None:
        self.sock = sock
        self.stop = stop
        self.started = time.monotonic()
        self.sent = 0

    @property
    def expired(self) -> bool:
        return self.stop.is_set() or time.monotonic() - self.started > MAX_SECONDS

    def send(self, data: bytes) -> bool:
        """Send ``data``; ``False`` once the client is gone or the server stops."""
        if self.expired:
            return False
        try:
            self.sock.sendall(data)
        except OSError:
            return False
        self.sent += len(data)
        return True

    def trickle(self, data: bytes, interval: float) -> bool:
        """Send ``data`` one byte every ``interval`` seconds."""
        for i in range(len(data)):
            if not self.send(data[i:i + 1]) or self.stop.wait(interval):
                return False
        return True

    def hold(self) -> None:
        """Keep the connection open, answering nothing, until the client leaves or the
        server stops (reading and dropping what the client sends)."""
        self.sock.settimeout(0.2)
        while not self.expired:
            try:
                if not self.sock.recv(1 << 16):
                    return
            except TimeoutError:
                continue
            except OSError:
                return

    def read_request(self, timeout: float = 10.0) -> Request | None:
        """The request line, headers and (``Content-Length``) body, or ``None`` when the
        client sends none in ``timeout`` seconds (or anything past 1 MiB of headers)."""
        self.sock.settimeout(timeout)
        data = b""
        try:
            while b"\r\n\r\n" not in data and len(data) < (1 << 20):
                chunk = self.sock.recv(1 << 16)
                if not chunk:
                    return None
                data += chunk
            head, _, body = data.partition(b"\r\n\r\n")
            lines = head.decode("latin-1").split("\r\n")
            method, target, _ = lines[0].split(" ", 2)
            headers = {}
            for line in lines[1:]:
                name, _, value = line.partition(":")
                headers[name.strip().lower()] = value.strip()
            size = min(int(headers.get("content-length", "0") or 0), 1 << 20)
            while len(body) < size:
                chunk = self.sock.recv(size - len(body))
                if not chunk:
                    break
                body += chunk
        except (OSError, ValueError):
            return None
        path, _, query = target.partition("?")
        return Request(method, path, query, headers, body)


#: What a route does with a connection and its request.
Handler = Callable[[Peer, Request], None]


def _head(status: str = "200 OK", **headers: Any) -> bytes:
    lines = [f"HTTP/1.1 {status}", "Connection: close"]
    lines += [f"{name.replace('_', '-')}: {value}" for name, value in headers.items()]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")


# -- HTTP behaviours -------------------------------------------------------------------------


def document(value: Any, status: str = "200 OK") -> Handler:
    """An honest JSON document (``bytes`` are sent as they are)."""
    body = value if isinstance(value, bytes) else json.dumps(value).encode()

    def handle(peer: Peer, request: Request) -> None:
        peer.send(_head(status, Content_Type="application/json", Content_Length=len(body)) + body)

    return handle


def not_found(peer: Peer, request: Request) -> None:
    body = b'{"detail":"Not Found"}'
    peer.send(_head("404 Not Found", Content_Type="application/json", Content_Length=len(body)) + body)


#: The start of a JSON document that never ends: a list of numbers without end.
_ENDLESS_CHUNK = b"1," * (1 << 15)


def endless() -> Handler:
    """A body without ``Content-Length`` that streams for ever (until the client leaves)."""

    def handle(peer: Peer, request: Request) -> None:
        if not peer.send(_head(Content_Type="application/json") + b"["):
            return
        while peer.sent < MAX_STREAM_BYTES and peer.send(_ENDLESS_CHUNK):
            pass

    return handle


def endless_chunked() -> Handler:
    """A chunked body (``Transfer-Encoding: chunked``) whose chunks never end."""
    chunk = b"%x\r\n%s\r\n" % (len(_ENDLESS_CHUNK), _ENDLESS_CHUNK)

    def handle(peer: Peer, request: Request) -> None:
        if not peer.send(_head(Content_Type="application/json", Transfer_Encoding="chunked") + b"1\r\n[\r\n"):
            return
        while peer.sent < MAX_STREAM_BYTES and peer.send(chunk):
            pass

    return handle


def content_length(declared: int, body: bytes, *, then: str = "close") -> Handler:
    """A ``Content-Length`` of ``declared`` bytes over ``body``; after the body the
    server closes (``then="close"``) or keeps the connection open, sending nothing
    (``"hold"``), or streams on past what it declared (``"stream"``)."""

    def handle(peer: Peer, request: Request) -> None:
        if not peer.send(_head(Content_Type="application/json", Content_Length=declared) + body):
            return
        if then == "hold":
            peer.hold()
        elif then == "stream":
            while peer.sent < MAX_STREAM_BYTES and peer.send(_ENDLESS_CHUNK):
                pass

    return handle


def trickle_headers(interval: float = 0.5) -> Handler:
    """The status line and headers, one byte every ``interval`` seconds."""
    head = _head(Content_Type="application/json", Content_Length=2, X_Padding="x" * 200) + b"{}"

    def handle(peer: Peer, request: Request) -> None:
        peer.trickle(head, interval)

    return handle


def headers_then_silence() -> Handler:
    """The status line and a first header, each line whole, then nothing: the answer looks
    complete to a reader that takes the end of its connection for the end of the headers."""

    def handle(peer: Peer, request: Request) -> None:
        if peer.send(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"):
            peer.hold()

    return handle


def trickle_body(body: bytes, interval: float = 0.5) -> Handler:
    """Honest headers at once, then ``body`` one byte every ``interval`` seconds."""

    def handle(peer: Peer, request: Request) -> None:
        if peer.send(_head(Content_Type="application/json", Content_Length=len(body))):
            peer.trickle(body, interval)

    return handle


def deep(levels: int = 100_000) -> Handler:
    """JSON nested ``levels`` deep (``[[[...]]]``), with an honest ``Content-Length``."""
    return document(b"[" * levels + b"]" * levels)


def silent(peer: Peer, request: Request) -> None:
    """Reads the request and never answers."""
    peer.hold()


# -- WebSocket ---------------------------------------------------------------------------------


class WebSocket:
    """The server's end of a WebSocket (RFC 6455), framed here: frames sent unmasked,
    the client's frames unmasked on reading."""

    def __init__(self, peer: Peer) -> None:
        self.peer = peer
        self._buffer = b""

    def frame(self, opcode: int, payload: bytes = b"", *, fin: bool = True) -> bool:
        """Send one frame (``fin=False``: a fragment that more frames continue)."""
        head = bytes([(0x80 if fin else 0) | opcode])
        size = len(payload)
        if size < 126:
            head += bytes([size])
        elif size < 1 << 16:
            head += bytes([126]) + struct.pack("!H", size)
        else:
            head += bytes([127]) + struct.pack("!Q", size)
        return self.peer.send(head + payload)

    def text(self, message: str | bytes) -> bool:
        return self.frame(_TEXT, message.encode() if isinstance(message, str) else message)

    def _read(self, size: int) -> bytes | None:
        while len(self._buffer) < size:
            if self.peer.expired:
                return None
            try:
                chunk = self.peer.sock.recv(1 << 16)
            except TimeoutError:
                continue
            except OSError:
                return None
            if not chunk:
                return None
            self._buffer += chunk
        data, self._buffer = self._buffer[:size], self._buffer[size:]
        return data

    def _read_frame(self) -> tuple[bool, int, bytes] | None:
        head = self._read(2)
        if head is None:
            return None
        fin, opcode, masked, size = head[0] & 0x80, head[0] & 0x0F, head[1] & 0x80, head[1] & 0x7F
        if size == 126:
            extended = self._read(2)
            size = struct.unpack("!H", extended)[0] if extended else -1
        elif size == 127:
            extended = self._read(8)
            size = struct.unpack("!Q", extended)[0] if extended else -1
        if size < 0 or not masked or size > (64 << 20):
            return None  # a client's frames are masked (RFC 6455 §5.1), and ours are small
        mask = self._read(4)
        payload = self._read(size) if size else b""
        if mask is None or payload is None:
            return None
        key = (mask * (size // 4 + 1))[:size]
        unmasked = (int.from_bytes(payload, "big") ^ int.from_bytes(key, "big")).to_bytes(size, "big")
        return bool(fin), opcode, unmasked

    def receive(self) -> str | bytes | None:
        """The client's next message (pings answered, fragments joined), or ``None``
        once it closed (its close answered), left, or the server stops."""
        self.peer.sock.settimeout(0.2)
        parts: list[bytes] = []
        kind = None
        for _ in range(MAX_MESSAGES):
            frame = self._read_frame()
            if frame is None:
                return None
            fin, opcode, payload = frame
            if opcode == _PING:
                self.frame(_PONG, payload)
            elif opcode == _CLOSE:
                self.frame(_CLOSE, payload[:2])
                return None
            elif opcode in (_TEXT, _BINARY, _CONT):
                kind = opcode if opcode != _CONT else kind
                parts.append(payload)
                if fin:
                    data = b"".join(parts)
                    return data.decode() if kind == _TEXT else data
        return None

    def receive_json(self) -> Any:
        message = self.receive()
        return None if message is None else json.loads(message)


def _accept_key(key: str) -> str:
    return base64.b64encode(hashlib.sha1(key.encode() + _GUID).digest()).decode()


def websocket(script: Callable[[WebSocket], None], *, handshake: bool = True) -> Handler:
    """Upgrade the connection (``handshake=False``: read the upgrade and never answer
    it) and run ``script`` on the WebSocket; no subprotocol is chosen, which means the
    plain JSON of a stock OpenEnv server."""

    def handle(peer: Peer, request: Request) -> None:
        key = request.headers.get("sec-websocket-key")
        if key is None:
            not_found(peer, request)
            return
        if not handshake:
            peer.hold()
            return
        if peer.send(_head("101 Switching Protocols", Upgrade="websocket", Sec_WebSocket_Accept=_accept_key(key))
                     .replace(b"Connection: close", b"Connection: Upgrade")):
            script(WebSocket(peer))

    return handle


# -- a stock OpenEnv env over the WebSocket, and how its replies go out -------------------------


#: The ``/schema`` of a small stock OpenEnv env: a counter that the action adds 1..5 to.
STOCK_SCHEMA: dict[str, Any] = {
    "action": {
        "type": "object", "title": "CounterAction", "additionalProperties": False, "required": ["increment"],
        "properties": {"increment": {"type": "integer", "minimum": 1, "maximum": 5},
                       "metadata": {"type": "object", "additionalProperties": True}},
    },
    "observation": {
        "type": "object", "title": "CounterObservation", "additionalProperties": False,
        "properties": {"count": {"type": "integer", "minimum": 0, "maximum": 1000, "default": 0},
                       "done": {"type": "boolean", "default": False},
                       "reward": {"anyOf": [{"type": "number"}, {"type": "null"}], "default": None},
                       "metadata": {"type": "object", "additionalProperties": True}},
    },
    "state": {"type": "object", "additionalProperties": True,
              "properties": {"step_count": {"type": "integer", "default": 0}}},
}


def observation(count: int) -> str:
    """The stock OpenEnv reply whose observation's ``count`` is ``count``."""
    return json.dumps({"type": "observation",
                       "data": {"observation": {"count": count, "metadata": {}}, "reward": float(count), "done": False}})


#: How one reply goes on the wire: ``send(ws, text)``, ``False`` when the server should stop.
Sender = Callable[[WebSocket, str], bool]


def whole(ws: WebSocket, text: str) -> bool:
    """One text frame."""
    return ws.text(text)


def _thirds(data: bytes) -> list[bytes]:
    third = max(len(data) // 3, 1)
    return [data[:third], data[third:2 * third], data[2 * third:]]


def fragmented(ws: WebSocket, text: str) -> bool:
    """Three frames (RFC 6455 §5.4): TEXT fin=0, CONT fin=0, CONT fin=1."""
    first, middle, last = _thirds(text.encode())
    return ws.frame(_TEXT, first, fin=False) and ws.frame(_CONT, middle, fin=False) and ws.frame(_CONT, last)


def fragmented_with_pings(ws: WebSocket, text: str) -> bool:
    """The same three fragments, with a ping before each continuation (control frames
    may come between the fragments of a message, RFC 6455 §5.4)."""
    first, middle, last = _thirds(text.encode())
    return (ws.frame(_TEXT, first, fin=False) and ws.frame(_PING, b"one") and ws.frame(_CONT, middle, fin=False)
            and ws.frame(_PING, b"two") and ws.frame(_CONT, last))


def oversized_fragments(total: int, pieces: int = 4) -> Sender:
    """A message of ``total`` bytes in ``pieces`` fragments, each under the client's limit
    if ``total`` is under ``pieces`` times it; then silence."""

    def send(ws: WebSocket, text: str) -> bool:
        piece = b" " * (total // pieces)
        if not ws.frame(_TEXT, b"[" + piece, fin=False):
            return False
        for i in range(1, pieces):
            if not ws.frame(_CONT, piece + (b"]" if i == pieces - 1 else b""), fin=i == pieces - 1):
                return False
        ws.peer.hold()
        return False

    return send


def flood(count: int) -> Sender:
    """The reply, then ``count`` unsolicited replies at once (each a valid observation
    with ``count`` 999, which the client must never take for an answer)."""
    unsolicited = observation(999).encode()
    frame = bytes([0x80 | _TEXT, len(unsolicited)]) + unsolicited  # under 126 bytes: a one-byte length

    def send(ws: WebSocket, text: str) -> bool:
        reply = text.encode()
        head = bytes([0x80 | _TEXT]) + (bytes([len(reply)]) if len(reply) < 126 else b"\x7e" + struct.pack("!H", len(reply)))
        return ws.peer.send(head + reply + frame * count)  # all in one write: they arrive together

    return send


def not_utf8(ws: WebSocket, text: str) -> bool:
    """A text frame whose payload is not UTF-8 (RFC 6455 §8.1: the client fails the
    connection, code 1007)."""
    return ws.text(b'{"type": "observation", "data": "\xff\xfe\xfd"}')


def never(ws: WebSocket, text: str) -> bool:
    """No reply, ever (the connection stays open)."""
    ws.peer.hold()
    return False


@dataclass
class StockEnv:
    """A stock OpenEnv env on the WebSocket: ``reset`` makes the count 1, each ``step``
    adds 1 (whatever the action), ``close`` closes the WebSocket; each reply goes out
    through ``sender``, or through ``later`` from the ``after``-th reply on (``whole``
    before it)."""

    sender: Sender = whole
    after: int = 0
    requests: list[Any] = field(default_factory=list)

    def __call__(self, ws: WebSocket) -> None:
        count = 0
        for _ in range(MAX_MESSAGES):
            message = ws.receive_json()
            if message is None:
                return
            self.requests.append(message)
            kind = message.get("type") if isinstance(message, dict) else None
            if kind == "close":  # as a stock server does: end the session, then close
                ws.frame(0x8, struct.pack("!H", 1000))
                return
            if kind == "state":  # what a vector env's sessions ask first
                if not ws.text(json.dumps({"type": "state", "data": {"episode_id": None, "step_count": count}})):
                    return
                continue
            if kind == "reset":
                count = 1
            elif kind == "step":
                count += 1
            else:
                reply = json.dumps({"type": "error", "data": {"code": "UNKNOWN_TYPE", "message": f"no {kind!r}"}})
                if not ws.text(reply):
                    return
                continue
            send = self.sender if len(self.requests) > self.after else whole
            if not send(ws, observation(count)):
                return


# -- the server ------------------------------------------------------------------------------------


class HostileServer:
    """A server on 127.0.0.1 that answers each route with its handler (``routes``:
    path → handler; others get ``default``, a 404 unless given). ``silent=True``
    accepts connections and never reads or answers a byte.

    Each connection runs in a daemon thread; :meth:`close` stops them all."""

    def __init__(
        self,
        routes: Mapping[str, Handler] | None = None,
        *,
        default: Handler = not_found,
        silent: bool = False,
    ) -> None:
        self.routes = dict(routes or {})
        self.default = default
        self.silent = silent
        self.requests: list[Request] = []
        self._stop = threading.Event()
        self._sockets: list[socket.socket] = []
        self._threads: list[threading.Thread] = []
        self._lock = threading.Lock()
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.listener.settimeout(0.2)  # the accepting thread looks at _stop this often
        self.port = self.listener.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self._accepting = threading.Thread(target=self._accept, name="hostile accept", daemon=True)
        self._accepting.start()

    def _accept(self) -> None:
        while not self._stop.is_set():
            try:
                sock, _ = self.listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            thread = threading.Thread(target=self._serve, args=(sock,), name="hostile peer", daemon=True)
            with self._lock:
                if len(self._threads) > 1000:  # a bound: no test opens this many
                    sock.close()
                    continue
                self._sockets.append(sock)
                self._threads.append(thread)
            thread.start()

    def _serve(self, sock: socket.socket) -> None:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)  # fragments go out as they are sent
        peer = Peer(sock, self._stop)
        try:
            if self.silent:
                self._stop.wait(MAX_SECONDS)
                return
            request = peer.read_request()
            if request is None:
                return
            self.requests.append(request)
            self.routes.get(request.path, self.default)(peer, request)
        except OSError:
            pass  # the client left
        finally:
            _shut(sock)

    def paths(self) -> list[str]:
        """The paths requested so far, in order."""
        return [request.path for request in self.requests]

    def close(self) -> None:
        """Stop every handler and close every socket; joins the threads (each for at
        most a few seconds)."""
        self._stop.set()
        _shut(self.listener)  # wakes the accepting thread at once
        with self._lock:
            sockets, threads = list(self._sockets), list(self._threads)
        for sock in sockets:
            _shut(sock)
        for thread in [self._accepting, *threads]:
            thread.join(5)

    def __enter__(self) -> HostileServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _shut(sock: socket.socket) -> None:
    try:
        sock.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass
    try:
        sock.close()
    except OSError:
        pass

