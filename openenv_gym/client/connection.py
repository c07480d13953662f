"""A blocking WebSocket connection that speaks one request at a time.

OpenEnv is strictly request → response on one socket, so the client needs no
background reader: this transport frames messages sans I/O (its own
:class:`~openenv_gym.client.framing.ClientFraming`, or ``websockets``'
:class:`~websockets.client.ClientProtocol` when an extension was negotiated) over a plain
socket in the caller's thread. That saves the thread hand-off of ``websockets.sync`` on
every message, which is most of the latency of a small step on loopback. The socket
never blocks: a message is one ``send(2)``, a reply one ``poll(2)`` (its deadline) and one
``recv(2)``.

On loopback, ``recv`` busy-polls the socket for a moment before it blocks
(``busy_poll``): a reader asleep in ``recv`` must be woken by the kernel when
the reply lands, and on a virtual machine that wake-up costs tens of
microseconds on both sides, more than a batch of CartPole steps' worth of
network. A polling reader sees the reply as it lands; the price is one core
busy for at most ``busy_poll`` seconds per message, while the caller waits
anyway. One connection per process polls at a time; the others block.

A small daemon thread keeps an idle connection alive: while nobody is using
the socket it answers the server's pings and sends its own, so a learner that
spends minutes on a gradient update does not lose its session.

    >>> conn = Connection.open("ws://127.0.0.1:8000/ws", ConnectOptions())   # doctest: +SKIP
    >>> conn.send('{"type":"state"}'); conn.recv()            # doctest: +SKIP
"""

from __future__ import annotations

import math
import os
import select
import socket
import ssl
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

from websockets.client import ClientProtocol
from websockets.exceptions import PayloadTooBig, SecurityError
from websockets.extensions.permessage_deflate import ClientPerMessageDeflateFactory
from websockets.frames import Opcode
from websockets.http11 import Response
from websockets.protocol import State
from websockets.typing import Subprotocol
from websockets.uri import parse_uri

from .._local import PROCESS_TOKEN, is_loopback, spin_turn
from .._section import ClientSection
from ..errors import ConnectionClosedError, LimitExceededError, MessageTimeoutError
from ..protocol import PROCESS_HEADER
from .framing import ClientFraming
from .options import ConnectOptions

__all__ = ["Connection", "wait_for_messages", "ws_url", "http_url"]

_RECV_BYTES = 1 << 18

#: The most bytes of a handshake response's head read before websockets' limits judge it.
_MAX_HEAD_BYTES = 1 << 16

#: Seconds ``Connection.recv`` busy-polls a loopback socket before it blocks.
LOOPBACK_BUSY_POLL = 0.001

#: Held by the one connection of this process that is busy-polling: others
#: waiting at the same time block, so threads never take turns spinning on
#: the GIL and one process never keeps more than one core busy waiting.
_POLLING = threading.Lock()

#: Messages a connection keeps unread (a reply, an error frame before a close) before it
#: takes the server for a flood and drops it: a strict request-reply peer sends one at a time.
MAX_UNREAD_MESSAGES = 64

#: Seconds without traffic after which a connection's keepalive thread watches its socket.
_QUIET = 0.05

#: What :func:`wait_for_messages` waits with: ``poll(2)`` where there is one
#: (no descriptor to create per wait, no limit on descriptor numbers).
_poll = getattr(select, "poll", None)


def ws_url(base_url: str, path: str = "/ws") -> str:
    """The WebSocket URL for an OpenEnv base URL, the way OpenEnv's client builds it.

    ``http://h:8000`` → ``ws://h:8000/ws``; ``https://`` → ``wss://``; a bare
    ``h:8000`` gets ``ws://``; a path prefix is kept.
    """
    url = base_url.strip().rstrip("/")
    if url.startswith("http://"):
        url = "ws://" + url[len("http://") :]
    elif url.startswith("https://"):
        url = "wss://" + url[len("https://") :]
    elif not url.startswith(("ws://", "wss://")):
        url = "ws://" + url
    if url.endswith(path):
        return url
    return url + path


def http_url(base_url: str) -> str:
    """The HTTP base URL for an OpenEnv base URL given as http(s), ws(s) or bare host."""
    url = base_url.strip().rstrip("/")
    if url.startswith("ws://"):
        url = "http://" + url[len("ws://") :]
    elif url.startswith("wss://"):
        url = "https://" + url[len("wss://") :]
    elif not url.startswith(("http://", "https://")):
        url = "http://" + url
    if url.endswith("/ws"):
        url = url[: -len("/ws")]
    return url


class Connection:
    """One open WebSocket, used by one caller at a time.

    Create it with :meth:`open`. ``send`` and ``recv`` move one message each;
    ``recv`` raises :class:`~openenv_gym.errors.MessageTimeoutError` when no
    message arrives in time and :class:`~openenv_gym.errors.ConnectionClosedError`
    when the connection is gone.
    """

    def __init__(
        self,
        sock: socket.socket,
        protocol: ClientProtocol | ClientFraming,
        url: str,
        *,
        subprotocol: str | None = None,
        ping_interval: float | None,
        ping_timeout: float | None,
        busy_poll: float = 0.0,
        send_timeout: float | None = None,
        max_message_bytes: int = 100 * 1024 * 1024,
    ) -> None:
        self._sock = sock
        self._readiness = _Readiness(sock)
        #: What each read of the socket fills: one buffer for the connection's life, from
        #: which the framing copies each payload once (a fresh buffer per read costs page
        #: faults for every large message).
        self._inbox = memoryview(bytearray(_RECV_BYTES))
        self._max_message_bytes = max_message_bytes
        #: Bytes of messages kept unread before the server counts as flooding: one
        #: message of the largest size, and room for its error frame.
        self._unread_bytes = max_message_bytes + (1 << 20)
        self._busy_poll = busy_poll
        self._send_timeout = send_timeout
        self._protocol = protocol
        #: Our own framing, when it frames the connection (not websockets' protocol, which
        #: frames one with an extension): a read of one whole message skips its events.
        self._framing = protocol if isinstance(protocol, ClientFraming) else None
        self.url = url
        self.subprotocol = subprotocol
        #: The shared section the server's replies may put their arrays in (a native
        #: listener on this machine: :func:`~openenv_gym.client.native.open_connection`).
        self.section: ClientSection | None = None
        #: The headers of the server's handshake reply.
        self.response_headers: Any = {}
        self._lock = threading.Lock()
        self._pending: list = []
        self._pending_bytes = 0
        #: The frames of a fragmented message so far (RFC 6455 §5.4), and its opcode.
        self._fragments: list[bytes] = []
        self._fragmented: Opcode | None = None
        #: Whether this client failed the connection for what the server sent.
        self._failed = False
        self._last_io = time.monotonic()
        self._ping_interval = ping_interval
        self._ping_timeout = ping_timeout
        self._ping_sent_at: float | None = None
        self._closed = threading.Event()
        self._error: BaseException | None = None
        threading.Thread(target=self._keepalive, name=f"openenv-gym keepalive {url}", daemon=True).start()

    # -- opening ------------------------------------------------------------

    @classmethod
    def open(cls, url: str, options: ConnectOptions) -> Connection:
        """Connect and complete the WebSocket handshake, offering ``options.subprotocols``.

        ``options.compression="deflate"`` offers permessage-deflate; the
        default offers none, which is what binary msgpack frames want.
        ``options.busy_poll`` ``None`` is :data:`LOOPBACK_BUSY_POLL` for a
        loopback server in another process and 0 (never poll) otherwise:
        across a network the latency dwarfs a wake-up, and a server in this
        process (:data:`~openenv_gym._local.PROCESS_TOKEN`) needs the GIL the
        poller holds.
        """
        uri = parse_uri(url)
        extensions = [ClientPerMessageDeflateFactory()] if options.compression == "deflate" else None
        protocol = ClientProtocol(
            uri,
            subprotocols=[Subprotocol(s) for s in options.subprotocols] or None,
            extensions=extensions,
            max_size=options.max_message_bytes,
        )
        deadline = None if options.connect_timeout is None else time.monotonic() + options.connect_timeout
        try:
            sock = socket.create_connection((uri.host, uri.port), timeout=options.connect_timeout)
        except OSError as exc:
            raise ConnectionClosedError(f"Failed to connect to {url}: {exc}") from exc
        try:
            sock, response, rest = _handshake(sock, protocol, uri, url, options, deadline)
        except BaseException as exc:
            sock.close()
            if isinstance(exc, (socket.timeout, TimeoutError)) and not isinstance(exc, MessageTimeoutError):
                raise MessageTimeoutError(
                    f"WebSocket handshake with {url} took longer than {options.connect_timeout} s (connect_timeout)"
                ) from exc
            if isinstance(exc, OSError) and not isinstance(exc, (ConnectionClosedError, MessageTimeoutError)):
                raise ConnectionClosedError(f"Failed to connect to {url}: {exc}") from exc
            raise
        busy_poll = options.busy_poll
        if busy_poll is None:
            same_process = response.headers.get(PROCESS_HEADER) == PROCESS_TOKEN
            busy_poll = LOOPBACK_BUSY_POLL if is_loopback(uri.host) and not same_process else 0.0
        framing: ClientProtocol | ClientFraming = protocol
        if "Sec-WebSocket-Extensions" not in response.headers:  # no extension: our own framing
            framing = ClientFraming(options.max_message_bytes)
        framing.receive_data(rest)
        conn = cls(
            sock, framing, url, subprotocol=protocol.subprotocol, ping_interval=options.ping_interval,
            ping_timeout=options.ping_timeout, busy_poll=busy_poll, send_timeout=options.message_timeout,
            max_message_bytes=options.max_message_bytes,
        )
        conn.response_headers = response.headers
        conn._collect()
        return conn

    # -- messages -----------------------------------------------------------

    @property
    def pending(self) -> int:
        """Messages received and not read yet (they stay readable after a close)."""
        return len(self._pending)

    @property
    def closed(self) -> bool:
        return self._protocol.state is State.CLOSED or self._closed.is_set()

    def send(self, frame: str | bytes) -> None:
        """Send one message: ``str`` as a text frame, ``bytes`` as a binary frame."""
        with self._lock:
            self._check_open()
            if isinstance(frame, str):
                self._protocol.send_text(frame.encode("utf-8"))
            else:
                self._protocol.send_binary(frame)
            self._flush()

    def recv(self, timeout: float | None = None) -> str | bytes:
        """Wait for the next message and return it (``str`` for text frames)."""
        with self._lock:
            if not self._await_message(timeout):
                raise MessageTimeoutError(f"No message from {self.url} within {timeout} s (message_timeout)")
            if not self._pending:
                self._check_open()  # closed or lost: raises why
            message = self._pending.pop(0)
            self._pending_bytes -= len(message)
            return message

    def wait(self, timeout: float | None = None) -> bool:
        """Wait until a message is here to read, or none ever will be (the
        connection closed or was lost, and reading raises why): ``True``;
        ``False`` after ``timeout`` seconds (``None``: no limit) without either."""
        with self._lock:
            try:
                return self._await_message(timeout)
            except (ConnectionClosedError, MessageTimeoutError):
                return True  # lost while answering a ping: the connection keeps why

    def close(self, timeout: float = 2.0, *, server_first: bool = False) -> None:
        """Close the WebSocket (code 1000) and the socket, within ``timeout`` seconds.
        Safe to call twice.

        ``server_first``: let the server begin the closing handshake. A server closes
        once it has ended the session that OpenEnv's ``close`` message ended, so a
        client that sent one and waits here knows the session's slot is free when
        this returns (and may open the next session at once). A server that has not
        closed by ``timeout`` is closed by this client.
        """
        if self._closed.is_set():
            return
        with self._lock:
            try:
                deadline = time.monotonic() + timeout
                if self._protocol.state is State.OPEN:
                    if server_first:
                        self._read_while(State.OPEN, deadline)
                    if self._protocol.state is State.OPEN:
                        self._protocol.send_close(1000)
                        self._flush()
                    self._read_while(State.CLOSING, deadline)  # until the server's EOF
            except (OSError, ConnectionClosedError, MessageTimeoutError):
                pass
            finally:
                self._closed.set()
                if self.section is not None:
                    self.section.close()
                try:
                    self._sock.close()
                except OSError:
                    pass

    # -- internals ----------------------------------------------------------

    def _read_while(self, state: State, deadline: float) -> None:
        """While closing: read (and drop) what the server sends, answering its close
        frame, while the connection is in ``state``, until ``deadline`` or its EOF."""
        while self._protocol.state is state:
            data = self._read_by(deadline)
            if data is None:
                return
            self._take(data) if data else self._protocol.receive_eof()
            self._protocol.events_received()
            self._flush()
            if not data:
                return

    def _check_open(self) -> None:
        broken = self._protocol.parser_exc
        if broken is not None and self._error is None:
            if isinstance(broken, PayloadTooBig):
                raise LimitExceededError(
                    f"{self.url} sent a message over this client's limit of {self._max_message_bytes:,} "
                    f"bytes (max_message_bytes): the connection was dropped"
                ) from broken
            raise ConnectionClosedError(f"{self.url} broke the WebSocket protocol: {broken}") from broken
        if self._error is not None and self._protocol.state is not State.OPEN:
            kind = LimitExceededError if isinstance(self._error, LimitExceededError) else ConnectionClosedError
            raise kind(
                f"Connection to {self.url} was lost: {self._error}"
            ) from self._error
        if self._protocol.state is not State.OPEN or self._closed.is_set():
            code = self._protocol.close_code
            reason = self._protocol.close_reason
            detail = f" (close code {code}{', ' + reason if reason else ''})" if code else ""
            raise ConnectionClosedError(f"Connection to {self.url} is closed{detail}")

    def _poll(self, window: float) -> None:
        """Read without blocking until a message is complete or ``window`` seconds
        pass; at once if another connection of this process is polling."""
        if not _POLLING.acquire(blocking=False):
            return
        try:
            end = time.perf_counter() + window
            while not self._ready() and time.perf_counter() < end:
                try:
                    data = self._read()
                except (BlockingIOError, ssl.SSLWantReadError, ssl.SSLWantWriteError):
                    spin_turn()  # the server may be waiting for this core to answer
                    continue
                except OSError as exc:
                    self._lost(exc)
                    return
                self._feed(data)
                if not data:
                    return
        finally:
            _POLLING.release()

    def _flush(self) -> None:
        """Send what the protocol has to send, within the send timeout: a peer that
        stops reading cannot block the caller for longer (the connection is then
        lost, since a frame went out in part)."""
        data = self._protocol.data_to_send()
        if data:
            try:
                self._send_all(data[0] if len(data) == 1 else b"".join(data))
            except TimeoutError:
                error = MessageTimeoutError(f"Sending to {self.url} took longer than {self._send_timeout} s")
                self._lost(error)
                raise error from None
            except OSError as exc:
                self._read_what_arrived()  # the server's last words, if it sent any
                self._lost(exc)
                self._check_open()
            self._last_io = time.monotonic()

    def _read_available(self) -> None:
        """Read what the socket holds without waiting for more (select found it readable)."""
        try:
            data = self._read()
        except (BlockingIOError, ssl.SSLWantReadError, ssl.SSLWantWriteError):
            return  # a TLS record still incomplete: the next wait reads it
        except OSError as exc:
            self._lost(exc)
            return
        self._feed(data)

    def _ready(self) -> bool:
        """A message to read, or none ever again (closing, closed or lost: reading raises why)."""
        return bool(self._pending) or self._protocol.state is not State.OPEN or self._closed.is_set()

    def _await_message(self, timeout: float | None) -> bool:
        """With the lock held: wait until :meth:`_ready`, busy-polling first (see
        ``busy_poll``), then sleeping in ``recv(2)``; ``False`` after ``timeout`` seconds."""
        if self._ready():
            return True
        if self._busy_poll:
            self._poll(self._busy_poll if timeout is None else min(self._busy_poll, timeout))
        deadline = None if timeout is None else time.monotonic() + timeout
        while not self._ready():
            try:
                data = self._read_by(deadline)
            except OSError as exc:
                self._lost(exc)
                continue
            if data is None:
                return False
            self._feed(data)
        return True

    def _read(self) -> memoryview:
        """Read what the socket has (at most :data:`_RECV_BYTES`) into :attr:`_inbox`, without
        waiting (``BlockingIOError`` when it has nothing): valid until the next read (empty:
        the server closed TCP)."""
        return self._inbox[: self._sock.recv_into(self._inbox)]

    def _read_by(self, deadline: float | None) -> memoryview | None:
        """Wait until the socket has something to read, by ``deadline``
        (``time.monotonic()``; ``None``: no limit), then read it; ``None`` after the deadline.

        The socket never blocks: a reply is waited for with one ``poll(2)`` and read with one
        ``recv(2)`` (a socket with a timeout costs two more calls a message, to set its mode
        and to poll before each read and each write). A TLS socket may hold decrypted bytes
        that ``poll`` does not see, so it is read first."""
        sock = self._sock
        writable = False
        if isinstance(sock, ssl.SSLSocket) and sock.pending():
            return self._read()
        while True:
            remaining = None if deadline is None else deadline - time.monotonic()
            if remaining is not None and remaining <= 0:
                return None
            if not self._readiness.wait(writable, remaining):
                continue
            try:
                return self._read()
            except (BlockingIOError, ssl.SSLWantReadError):
                writable = False
            except ssl.SSLWantWriteError:  # TLS must send before it reads on
                writable = True

    def _send_all(self, data: bytes) -> None:
        """Send ``data`` whole, waiting for room in the socket's buffer for at most the send
        timeout in all (``TimeoutError`` past it): a small frame is one ``send(2)``."""
        sock, view = self._sock, memoryview(data)
        deadline = None if self._send_timeout is None else time.monotonic() + self._send_timeout
        readable = False
        while view:
            try:
                view = view[sock.send(view):]
                continue
            except (BlockingIOError, ssl.SSLWantWriteError):
                readable = False
            except ssl.SSLWantReadError:  # TLS must read before it sends on
                readable = True
            remaining = None if deadline is None else deadline - time.monotonic()
            if remaining is not None and remaining <= 0:
                raise TimeoutError("the send timed out")
            self._readiness.wait(not readable, remaining)

    def _take(self, data: memoryview) -> None:
        """Give the framing what a read brought (websockets' protocol, which frames a
        connection with an extension, takes bytes)."""
        if self._framing is not None:
            self._framing.receive_data(data)
        else:
            self._protocol.receive_data(bytes(data))

    def _feed(self, data: memoryview) -> None:
        framing = self._framing
        if framing is not None and (whole := framing.whole_message(data)) is not None:
            self._deliver(*whole)
            self._last_io = time.monotonic()
            return
        if data:
            self._take(data)
        else:
            self._protocol.receive_eof()
        self._collect()

    def _collect(self) -> None:
        self._absorb(self._protocol.events_received())

    def _read_what_arrived(self) -> None:
        """Keep the messages already received on a socket that failed to send,
        so an error frame the server sent before closing can still be read."""
        try:
            self._sock.setblocking(False)
            while data := self._read():
                self._take(data)
        except OSError:
            pass
        self._absorb(self._protocol.events_received(), reply=False)

    def _absorb(self, events: list, *, reply: bool = True) -> None:
        """Take the frames received: messages (fragmented ones reassembled, RFC 6455
        §5.4: the protocol bounds their whole size by ``max_message_bytes``) into
        :attr:`pending`; a pong ends the wait for one."""
        for event in events:
            opcode = getattr(event, "opcode", None)
            if opcode is Opcode.TEXT or opcode is Opcode.BINARY:
                if event.fin:
                    self._deliver(opcode, event.data)
                else:
                    self._fragmented, self._fragments = opcode, [bytes(event.data)]
            elif opcode is Opcode.CONT and self._fragmented is not None:
                self._fragments.append(bytes(event.data))
                if event.fin:
                    opcode, data = self._fragmented, b"".join(self._fragments)
                    self._fragmented, self._fragments = None, []
                    self._deliver(opcode, data)
            elif opcode is Opcode.PONG:
                self._ping_sent_at = None
        if reply:  # pongs, close replies
            self._flush()
        self._last_io = time.monotonic()
        if self._protocol.state is State.CLOSED:
            try:
                self._sock.close()
            except OSError:
                pass

    def _deliver(self, opcode: Opcode, data: bytes | bytearray | memoryview) -> None:
        """Queue one whole message, unless the server broke the protocol with it (a text
        message that is not UTF-8) or floods the client with messages nobody reads."""
        if self._failed or self._protocol.parser_exc is not None:
            return  # this client failed the connection earlier in this batch of frames
        if len(self._pending) >= MAX_UNREAD_MESSAGES or self._pending_bytes + len(data) > self._unread_bytes:
            self._pending.clear()  # which of them answers a request is anyone's guess: none does
            self._pending_bytes = 0
            self._fail(
                1008, LimitExceededError(
                    f"{self.url} sent more than {MAX_UNREAD_MESSAGES} messages (or "
                    f"{self._unread_bytes:,} bytes) nobody asked for: the connection was dropped"
                ),
            )
            return
        if opcode is Opcode.TEXT:
            try:
                message: str | bytes = bytes(data).decode("utf-8")
            except UnicodeDecodeError as exc:
                self._fail(1007, ConnectionClosedError(f"{self.url} sent a text message that is not UTF-8: {exc}"))
                return
        else:
            message = bytes(data)
        self._pending.append(message)
        self._pending_bytes += len(message)

    def _fail(self, code: int, error: ConnectionClosedError) -> None:
        """Close the connection on the server's fault, with ``code``; reading raises ``error``."""
        self._failed = True
        self._protocol.fail(code, str(error)[:120])
        self._flush_quietly()
        self._lost(error)

    def _flush_quietly(self) -> None:
        try:
            self._flush()
        except (OSError, ConnectionClosedError, MessageTimeoutError):
            pass

    def _lost(self, exc: BaseException) -> None:
        self._error = exc
        self._protocol.receive_eof()
        self._protocol.events_received()
        self._closed.set()

    def _keepalive(self) -> None:
        """While nobody uses the connection: answer the server's pings as they
        arrive (a server may drop a peer that takes longer than its ping timeout),
        and ping the server every ``ping_interval`` seconds of silence.

        It watches the socket only after :data:`_QUIET` seconds without traffic:
        until then the caller reads what comes, and a reply it awaits should
        not wake this thread too (a wake-up and a turn of the GIL per message).
        """
        tick = min(self._ping_interval / 2, 1.0) if self._ping_interval else 1.0
        while not self._closed.is_set():
            quiet = time.monotonic() - self._last_io
            if quiet < _QUIET:
                self._closed.wait(_QUIET - quiet)
                continue
            try:
                select.select([self._sock], [], [], tick)
            except (OSError, ValueError):
                return  # closed under us
            if not self._lock.acquire(blocking=False):
                self._closed.wait(0.05)  # the caller is using the socket and reads what comes
                continue
            try:
                if self.closed:
                    return
                self._service_idle()
            except ValueError:
                return  # the socket was closed (its descriptor is -1)
            except (OSError, ConnectionClosedError):
                pass
            finally:
                self._lock.release()

    def _service_idle(self) -> None:
        readable, _, _ = select.select([self._sock], [], [], 0)
        if readable:
            self._read_available()
        now, interval = time.monotonic(), self._ping_interval
        if self._ping_sent_at is not None:
            if self._ping_timeout and now - self._ping_sent_at > self._ping_timeout:
                self._protocol.fail(1011, "keepalive ping timeout")
                self._flush()
                self._lost(ConnectionClosedError("keepalive ping timeout"))
        elif interval and now - self._last_io >= interval:
            self._protocol.send_ping(os.urandom(4))
            self._ping_sent_at = now
            self._flush()


def wait_for_messages(connections: Sequence[Connection], timeout: float | None) -> list[Connection]:
    """Wait until some of ``connections`` have a message to read, or will never
    have one (closed or lost: reading raises why), for at most ``timeout``
    seconds (``None``: no limit); those connections (none after the timeout).

    One thread waits for replies from many servers at once this way, with one
    ``poll(2)`` per wait. A single connection waits as :meth:`Connection.wait`
    does (busy-polling first, if it polls); several are never polled (a caller
    waiting for several servers leaves the cores to them). Each connection's
    lock is held meanwhile, so that its keepalive thread cannot take a reply unseen.
    """
    if len(connections) == 1:
        return [connections[0]] if connections[0].wait(timeout) else []
    for connection in connections:
        connection._lock.acquire()
    try:
        ready = [c for c in connections if c._ready()]
        if ready:
            return ready
        for connection in _readable(connections, timeout):
            _recorded(connection._read_available)
        return [c for c in connections if c._ready()]
    finally:
        for connection in connections:
            connection._lock.release()


def _readable(connections: Sequence[Connection], timeout: float | None) -> list[Connection]:
    """The connections whose sockets have something to read within ``timeout`` seconds."""
    if _poll is None:  # no poll(2) (Windows): select(2)
        sockets = {c._sock: c for c in connections}
        return [sockets[s] for s in select.select(list(sockets), [], [], timeout)[0]]
    poller = _poll()
    by_fd = {}
    for connection in connections:
        fd = connection._sock.fileno()
        by_fd[fd] = connection
        poller.register(fd, select.POLLIN)
    events = poller.poll(None if timeout is None else math.ceil(timeout * 1000))
    return [by_fd[fd] for fd, _ in events]


def _recorded(read: Callable[[], None]) -> None:
    """Run ``read``, which may answer the peer (a pong, a close) and find the
    connection lost: the connection keeps the error, and reading raises it."""
    try:
        read()
    except (ConnectionClosedError, MessageTimeoutError):
        pass


def _handshake(
    sock: socket.socket, protocol: ClientProtocol, uri: Any, url: str, options: ConnectOptions,
    deadline: float | None,
) -> tuple[socket.socket, Response, bytes]:
    """The WebSocket handshake on a connected socket (TLS first for ``wss``), by
    ``deadline`` (``time.monotonic()``; ``None``: none): the socket to use, the
    server's response, and the bytes that came after it in the same packets (frames, which
    the connection's framing reads: websockets' protocol is given the response's head only)."""
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    if uri.secure:
        sock.settimeout(None if deadline is None else max(deadline - time.monotonic(), 0.001))
        sock = ssl.create_default_context().wrap_socket(sock, server_hostname=uri.host)
    request = protocol.connect()
    request.headers[PROCESS_HEADER] = PROCESS_TOKEN
    for name, value in options.request_headers.items():
        request.headers[name] = value
    protocol.send_request(request)
    sock.sendall(b"".join(protocol.data_to_send()))
    response = None
    head: bytearray | None = bytearray()  # the response's head, until it is whole
    rest = b""
    while response is None:
        remaining = None if deadline is None else deadline - time.monotonic()
        if remaining is not None and remaining <= 0:
            raise MessageTimeoutError(
                f"WebSocket handshake with {url} took longer than {options.connect_timeout} s (connect_timeout)"
            )
        sock.settimeout(remaining)
        data = sock.recv(_RECV_BYTES)
        if not data:
            protocol.receive_eof()
        elif head is None:  # the head was whole: the body of a refusal
            protocol.receive_data(data)
        else:
            head += data
            end = head.find(b"\r\n\r\n")
            if end >= 0 or len(head) > _MAX_HEAD_BYTES:  # past it, websockets' limits refuse
                cut = end + 4 if end >= 0 else len(head)
                protocol.receive_data(bytes(head[:cut]))
                rest, head = bytes(head[cut:]), None
        for event in protocol.events_received():
            if isinstance(event, Response):
                response = event
        if response is None and head is None and rest:  # a refusal: its body follows its head
            protocol.receive_data(rest)
            rest = b""
            response = next((e for e in protocol.events_received() if isinstance(e, Response)), None)
        if not data and response is None:
            raise ConnectionClosedError(f"{url} closed the connection during the handshake")
        if response is None and protocol.handshake_exc is not None:
            break  # an answer that is no HTTP response, or past websockets' limits: nothing more to read
    failure = protocol.handshake_exc
    if failure is not None:
        raise handshake_failed(url, failure) from failure
    assert response is not None  # the loop ends with a response or a handshake failure
    sock.setblocking(False)  # from now on the connection waits with poll(2) (Connection._read_by)
    return sock, response, rest


def handshake_failed(url: str, failure: Exception) -> LimitExceededError | ConnectionClosedError:
    """The error of a WebSocket handshake with ``url`` that ``failure`` (websockets'
    exception) ended: a reply past websockets' size limits (which websockets words
    differently from version to version), or one that is no handshake's."""
    cause = failure.__cause__
    if isinstance(failure, SecurityError) or isinstance(cause, SecurityError):
        return LimitExceededError(
            f"WebSocket handshake with {url} failed: its HTTP response is larger than a handshake "
            f"reply may be ({cause or failure}); is it a WebSocket server?"
        )
    return ConnectionClosedError(f"WebSocket handshake with {url} failed: {failure}{f' ({cause})' if cause else ''}")


class _Readiness:
    """Waits until one socket can be read (or written): one ``poll(2)`` a wait, with a poll
    object made once per direction (``select(2)`` where there is no ``poll``)."""

    __slots__ = ("_sock", "_reading", "_writing")

    def __init__(self, sock: socket.socket) -> None:
        self._sock = sock
        self._reading: Any = None
        self._writing: Any = None

    def wait(self, writable: bool, timeout: float | None) -> bool:
        """Whether the socket can be read (written, if ``writable``) within ``timeout``
        seconds (``None``: no limit)."""
        if _poll is None:
            sock = self._sock
            ready = select.select([], [sock], [], timeout)[1] if writable else select.select([sock], [], [], timeout)[0]
            return bool(ready)
        poller = self._writing if writable else self._reading
        if poller is None:
            poller = _poll()
            poller.register(self._sock, select.POLLOUT if writable else select.POLLIN)
            if writable:
                self._writing = poller
            else:
                self._reading = poller
        return bool(poller.poll(None if timeout is None else math.ceil(timeout * 1000)))
