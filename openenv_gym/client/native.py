"""Reaching a server's native listener, and falling back to its main port.

An openenv-gym server serves its WebSocket routes twice: on the main port, through
uvicorn (what every OpenEnv client speaks), and on a second port framed in C
(:mod:`openenv_gym.server.native`), which ``/schema`` advertises under
:data:`~openenv_gym.protocol.NATIVE_KEY`. This client learns the advertisement when it
reads ``/schema`` (:func:`read_schema`) and opens each session's WebSocket there
(:func:`open_connection`), with the same messages, token and limits; where it cannot
(a proxy or a Hugging Face Space in between, a firewall, a TLS URL, another server on
that port), it connects to the main port as before, and remembers, so only the first
connection of a server pays for the attempt:

    >>> import openenv_gym
    >>> with openenv_gym.local_server("CartPole-v1") as url:
    ...     env = openenv_gym.RemoteEnv(url)
    ...     via = env._session.url
    ...     env.close()
    >>> via.startswith("ws://127.0.0.1:") and not via.startswith(url.replace("http", "ws"))
    True

``ConnectOptions(native=False)`` (``RemoteEnv(url, native=False)``) always uses the main port.
"""

from __future__ import annotations

import dataclasses
import logging
import threading
import urllib.parse
from collections.abc import Mapping
from typing import Any

from .._local import is_loopback
from .._section import ClientSection, supported
from ..errors import OpenEnvGymError
from ..protocol import NATIVE_HEADER, NATIVE_KEY, SECTION_HEADER
from .connection import Connection, http_url, ws_url
from .http import get_json
from .options import ConnectOptions

__all__ = ["read_schema", "open_connection", "native_attempt", "NativeAttempt", "NATIVE_CONNECT_TIMEOUT"]

logger = logging.getLogger("openenv_gym.client")

#: Seconds the first connection to a native port may take before the main port is used
#: (a firewall that drops packets answers nothing; a loopback or LAN peer answers in
#: microseconds). At most ``connect_timeout``.
NATIVE_CONNECT_TIMEOUT = 2.0


@dataclasses.dataclass(frozen=True)
class _Advertised:
    port: int
    id: str


_lock = threading.Lock()
#: The native listener each server (by base URL) advertised, while it is reachable.
_advertised: dict[str, _Advertised] = {}
#: The native listeners whose shared section this process could not attach (another user,
#: another container): their connections no longer offer one.
_unattached: set[_Advertised] = set()
#: Whether this process can attach shared sections (:func:`openenv_gym._section.supported`).
_SECTIONS = supported()


def read_schema(base_url: str, options: ConnectOptions) -> Any:
    """``GET {base_url}/schema``, learning the native listener it advertises (if any)."""
    schema = get_json(f"{base_url}/schema", options)
    learn(base_url, schema)
    return schema


def learn(base_url: str, schema: Any) -> None:
    """Remember the native listener ``schema`` (``base_url``'s ``/schema``) advertises, or
    forget the one it advertised before: a restarted server listens elsewhere."""
    base_url = http_url(base_url)
    native = schema.get(NATIVE_KEY) if isinstance(schema, Mapping) else None
    port, ident = (native.get("port"), native.get("id")) if isinstance(native, Mapping) else (None, None)
    with _lock:
        if isinstance(port, int) and 0 < port < 65536 and isinstance(ident, str):
            _advertised[base_url] = _Advertised(port, ident)
        else:
            _advertised.pop(base_url, None)


@dataclasses.dataclass(frozen=True)
class NativeAttempt:
    """One try of a server's native listener: where (``url``), with what options (the
    caller's, with a connect timeout of at most :data:`NATIVE_CONNECT_TIMEOUT`), and
    whether the server that answered is the one advertised (:meth:`answered`)."""

    base_url: str
    url: str
    options: ConnectOptions
    advertised: _Advertised

    def answered(self, headers: Mapping[str, str]) -> bool:
        """Whether a handshake reply with ``headers`` came from the advertised listener;
        if not, the native port is not tried again for this server."""
        if headers.get(NATIVE_HEADER) == self.advertised.id:
            return True
        self.failed(f"{self.url} is another server (its {NATIVE_HEADER} header differs)")
        return False

    def failed(self, why: object) -> None:
        """The attempt failed (``why``): the main port serves this server from now on."""
        logger.info("native_unreachable server=%s why=%s; using the main port", self.base_url, why)
        with _lock:
            if _advertised.get(self.base_url) == self.advertised:
                del _advertised[self.base_url]


def native_attempt(base_url: str, path: str, options: ConnectOptions) -> NativeAttempt | None:
    """How to try ``path`` on ``base_url``'s native listener, or ``None``: none advertised
    (or it failed before), ``options.native`` off, or an ``https`` server (the native
    listener speaks plain TCP; its port is for peers that reach the server directly)."""
    if not options.native:
        return None
    base_url = http_url(base_url)
    with _lock:
        advertised = _advertised.get(base_url)
    parts = urllib.parse.urlsplit(base_url)
    if advertised is None or parts.scheme != "http" or parts.hostname is None:
        return None
    host = f"[{parts.hostname}]" if ":" in parts.hostname else parts.hostname
    timeout = options.connect_timeout
    timeout = NATIVE_CONNECT_TIMEOUT if timeout is None else min(NATIVE_CONNECT_TIMEOUT, timeout)
    headers = dict(options.headers)
    if options.shared_memory and _SECTIONS and is_loopback(parts.hostname) and advertised not in _unattached:
        headers[SECTION_HEADER] = "offer"
    return NativeAttempt(
        base_url, f"ws://{host}:{advertised.port}{path}",
        dataclasses.replace(options, connect_timeout=timeout, headers=headers), advertised,
    )


def open_connection(base_url: str, path: str, options: ConnectOptions) -> Connection:
    """A WebSocket to ``path`` of the server at ``base_url``: on its native listener when
    it advertised one this client can reach (:func:`native_attempt`), else on the main
    port, as stock servers are reached. A native port that fails once is not tried again
    for that server, until its ``/schema`` is read anew."""
    attempt = native_attempt(base_url, path, options)
    if attempt is not None:
        try:
            connection = Connection.open(attempt.url, attempt.options)
        except OpenEnvGymError as exc:
            attempt.failed(exc)
        else:
            if attempt.answered(connection.response_headers):
                announced = connection.response_headers.get(SECTION_HEADER)
                if announced is not None and SECTION_HEADER in attempt.options.headers:
                    connection.section = ClientSection.attach(announced, options.max_message_bytes)
                    if connection.section is None:
                        with _lock:
                            _unattached.add(attempt.advertised)
                return connection
            connection.close(timeout=0.1)
    return Connection.open(ws_url(base_url, path), options)
