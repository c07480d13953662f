"""The HTTP documents a client reads from a server it may not trust.

A client reads a few JSON documents over plain HTTP: ``/schema`` and ``/metadata``
when it connects, ``/health`` when it places envs on servers, a stateless ``POST
/reset`` for a stock server's first observation. A server it was pointed at may be
anyone's, so each exchange is bounded three ways, whatever the server does:

- **one deadline** for the whole exchange (``connect_timeout``): connect, request,
  headers and body together, however slowly the server trickles them; a per-read
  timeout would let one byte every few seconds hold the caller for ever;
- **a size cap** on the body (``max_document_bytes``), checked against
  ``Content-Length`` before reading and counted while reading (chunked or
  unbounded bodies included);
- **the protocol's limits** on the JSON inside (nesting, item counts), as for
  WebSocket frames.

Each breach raises at once, naming the server and the limit:
:class:`~openenv_gym.errors.MessageTimeoutError` for the deadline,
:class:`~openenv_gym.errors.LimitExceededError` for the size and nesting,
:class:`~openenv_gym.errors.ConnectionClosedError` for the rest (refused, an HTTP
error status, a body that is not JSON).

    >>> get_json("http://127.0.0.1:8000/schema", ConnectOptions(connect_timeout=5))  # doctest: +SKIP
    {'action': {...}, 'observation': {...}, 'state': {...}}

Loopback URLs bypass any proxy set in the environment, like OpenEnv's client.
"""

from __future__ import annotations

import http.client
import json
import socket
import threading
import urllib.error
import urllib.parse
import urllib.request
from typing import Any

from .._local import is_loopback
from ..errors import ConnectionClosedError, LimitExceededError, MessageTimeoutError, OpenEnvGymError, ProtocolError
from ..protocol import loads_json
from .options import ConnectOptions

__all__ = ["get_json", "post_json"]

#: Bytes read from a body at a time.
_CHUNK = 1 << 16


def get_json(url: str, options: ConnectOptions | None = None) -> Any:
    """GET ``url`` and decode its JSON body, within ``options``' deadline and limits
    (sending its headers: the token's ``Authorization`` among them)."""
    return _json_exchange("GET", url, None, options or ConnectOptions())


def post_json(url: str, body: Any, options: ConnectOptions | None = None) -> Any:
    """POST ``body`` as JSON to ``url`` and decode the JSON answer (a stock server's
    ``/reset``), within ``options``' deadline and limits."""
    return _json_exchange("POST", url, body, options or ConnectOptions())


def _json_exchange(method: str, url: str, body: Any, options: ConnectOptions) -> Any:
    what = f"{method} {url}"
    answer = _exchange(method, url, body, options, what)
    try:
        return loads_json(answer, options.document_limits)
    except ProtocolError as exc:
        if len(answer) <= options.max_document_bytes and exc.message.startswith("Invalid JSON"):
            raise ConnectionClosedError(f"{what} did not return JSON: {exc.message}") from None
        raise LimitExceededError(f"{what} answered a document past this client's limits: {exc.message}") from None


def _exchange(method: str, url: str, body: Any, options: ConnectOptions, what: str) -> bytes:
    """The body of the answer to one request, read within one deadline and the size cap."""
    data = None if body is None else json.dumps(body).encode()
    headers = dict(options.request_headers, **({"Content-Type": "application/json"} if data is not None else {}))
    request = urllib.request.Request(url, data=data, headers=headers, method=method)
    deadline = _Deadline(options.connect_timeout)
    host = urllib.parse.urlsplit(url).hostname or ""
    handlers: list[Any] = [_WatchedHttp(deadline), _WatchedHttps(deadline)]
    if is_loopback(host):
        handlers.append(urllib.request.ProxyHandler({}))
    opener = urllib.request.build_opener(*handlers)
    try:
        with deadline, opener.open(request, timeout=options.connect_timeout) as response:
            answer = _read_body(response, options.max_document_bytes, what)
        if not deadline.expired:
            return answer
        # The watchdog cut the answer short, where it may even look whole (headers cut
        # at a line's end, and no Content-Length yet): the deadline is what ended it.
        raise ConnectionClosedError(f"{what} was cut short at its deadline")
    except ConnectionClosedError as exc:
        if deadline.expired and not isinstance(exc, LimitExceededError):  # the watchdog cut the body short
            raise MessageTimeoutError(
                f"{what} did not answer in full within {options.connect_timeout} s (connect_timeout)"
            ) from None
        raise  # already says what went wrong
    except OpenEnvGymError:
        raise  # already says what went wrong
    except urllib.error.HTTPError as exc:
        exc.close()
        raise ConnectionClosedError(f"{what} answered HTTP {exc.code}: {exc.reason}") from None
    except (urllib.error.URLError, OSError, http.client.HTTPException) as exc:
        if deadline.expired or isinstance(getattr(exc, "reason", exc), TimeoutError):
            raise MessageTimeoutError(
                f"{what} did not answer in full within {options.connect_timeout} s (connect_timeout)"
            ) from None
        reason = getattr(exc, "reason", exc)
        raise ConnectionClosedError(f"{what} failed: {reason or type(exc).__name__}") from None


def _read_body(response: http.client.HTTPResponse, cap: int, what: str) -> bytes:
    header = (response.headers.get("Content-Length") or "").strip()
    declared = int(header) if header.isdigit() else None
    if declared is not None and declared > cap:
        raise LimitExceededError(
            f"{what} declared a body of {declared:,} bytes, over this client's limit of "
            f"{cap:,} (max_document_bytes)"
        )
    chunks: list[bytes] = []
    size = 0
    while chunk := response.read(min(_CHUNK, cap + 1 - size)):
        chunks.append(chunk)
        size += len(chunk)
        if size > cap:
            raise LimitExceededError(
                f"{what} sent a body over this client's limit of {cap:,} bytes (max_document_bytes)"
            )
    if declared is not None and size < declared:
        raise ConnectionClosedError(f"{what} sent {size:,} of the {declared:,} bytes its Content-Length declared")
    return b"".join(chunks)


class _Deadline:
    """Ends an exchange at its deadline: shuts down the sockets it opened, which
    wakes a read blocked on them (``with``: armed for the block; ``None``: never)."""

    def __init__(self, seconds: float | None) -> None:
        self.seconds = seconds
        self.expired = False
        self._sockets: list[socket.socket] = []
        self._lock = threading.Lock()
        self._timer: threading.Timer | None = None

    def __enter__(self) -> _Deadline:
        if self.seconds is not None:
            self._timer = threading.Timer(self.seconds, self._expire)
            self._timer.daemon = True
            self._timer.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._timer is not None:
            self._timer.cancel()

    def watch(self, sock: socket.socket) -> None:
        with self._lock:
            self._sockets.append(sock)
            if self.expired:
                _shut(sock)

    def _expire(self) -> None:
        with self._lock:
            self.expired = True
            for sock in self._sockets:
                _shut(sock)


def _shut(sock: socket.socket) -> None:
    try:
        sock.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass  # already closed


def _watched(base: type[http.client.HTTPConnection], deadline: _Deadline) -> type[http.client.HTTPConnection]:
    """``base`` with every socket it opens watched by ``deadline`` from the moment it
    connects (before any TLS handshake, which the deadline covers too)."""

    class Watched(base):  # type: ignore[valid-type, misc]
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            create = self._create_connection  # type: ignore[has-type]

            def create_watched(*args: Any, **kwargs: Any) -> socket.socket:
                sock = create(*args, **kwargs)
                deadline.watch(sock)
                return sock

            self._create_connection = create_watched

    return Watched


class _WatchedHttp(urllib.request.HTTPHandler):
    def __init__(self, deadline: _Deadline) -> None:
        super().__init__()
        self._connection = _watched(http.client.HTTPConnection, deadline)

    def http_open(self, req: urllib.request.Request) -> http.client.HTTPResponse:
        return self.do_open(self._connection, req)


class _WatchedHttps(urllib.request.HTTPSHandler):
    def __init__(self, deadline: _Deadline) -> None:
        super().__init__()
        self._connection = _watched(http.client.HTTPSConnection, deadline)

    def https_open(self, req: urllib.request.Request) -> http.client.HTTPResponse:
        return self.do_open(self._connection, req, context=getattr(self, "_context", None))
