"""How a client connects: one options object for every client.

:class:`ConnectOptions` holds the encoding, authentication, timeouts, message
size, keepalive pings, compression, busy polling and reconnect policy of a
connection. Every client (:class:`~openenv_gym.RemoteEnv`,
:class:`~openenv_gym.RemoteVectorEnv`, :class:`~openenv_gym.RemoteAECEnv`,
:class:`~openenv_gym.RemoteParallelEnv`, and the sessions under them) takes it
the same way: as ``options=``, or as keyword arguments of the same names,
which override those of ``options``::

    >>> options = ConnectOptions(token="s3cret", message_timeout=5)
    >>> env = openenv_gym.RemoteEnv(url, options=options)             # doctest: +SKIP
    >>> env = openenv_gym.RemoteEnv(url, token="s3cret", busy_poll=0)  # doctest: +SKIP
    >>> ConnectOptions.merge(options, busy_poll=0).busy_poll
    0
    >>> ConnectOptions.merge(None, tokn="x")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    TypeError: unknown connection option 'tokn'; the options are: encoding, token, headers, ...
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, TypedDict

from .._local import busy_poll_problem
from .._options import MergedByName
from ..protocol import CODECS, SUBPROTOCOLS, Limits
from .retry import Reconnect

__all__ = ["ConnectOptions", "ConnectKwargs", "Encoding"]

#: ``"auto"``, or the name of one of :data:`~openenv_gym.protocol.CODECS` (a test holds
#: the two to each other: a type cannot be computed from the table).
Encoding = Literal["auto", "msgpack", "json"]

#: The subprotocols each encoding offers, in order of preference: ``"auto"`` offers every
#: codec's, an encoding's name every version of it (``"msgpack"``: version 2, then 1, so
#: that an older server still answers), and the server picks the first it speaks.
OFFERS: Mapping[str, tuple[str, ...]] = {
    "auto": SUBPROTOCOLS,
    **{
        name: tuple(codec.subprotocol for codec in CODECS if codec.name == name)
        for name in dict.fromkeys(codec.name for codec in CODECS)
    },
}


@dataclass(frozen=True)
class ConnectOptions(MergedByName):
    """How a client connects to an OpenEnv server.

    Args:
        encoding: ``"auto"`` (the first of :data:`~openenv_gym.protocol.CODECS`
            the server offers: msgpack, else JSON), or the name of one
            (``"msgpack"``, ``"json"``; a codec other than JSON fails against
            servers without it).
        token: sent as ``Authorization: Bearer <token>`` (servers started
            with ``--token``).
        headers: extra HTTP headers for ``/schema``, ``/health`` and the
            WebSocket handshake.
        connect_timeout: seconds for the TCP connect and WebSocket handshake together,
            and for each whole HTTP exchange (``/schema``, ``/metadata``, ``/health``, a
            stateless ``POST /reset``: connect, headers and body, however slowly they come).
        message_timeout: seconds to wait for each reply.
        max_message_bytes: the largest WebSocket message accepted from the server
            (fragmented messages count whole).
        max_document_bytes: the largest HTTP body accepted from the server; JSON
            documents also keep to the protocol's nesting limit, as frames do.
        ping_interval, ping_timeout: keepalive pings while the connection sits
            idle (``None`` turns them off, for tunnels that drop pings).
        compression: ``"deflate"`` to offer permessage-deflate (JSON over slow
            links); off by default, which is what msgpack frames want.
        busy_poll: seconds to poll the socket for each reply before sleeping
            until it comes (at most 1 second). ``None``: 1 ms for a loopback server in another
            process, where waking a sleeping reader costs more than a fast
            step; never for other hosts or a server in this process. 0 never
            polls (the waiting thread uses no CPU). Blocking connections only.
        native: reach an openenv-gym server's WebSockets on its native listener
            when it advertises one and it can be reached (:mod:`~openenv_gym.client.native`),
            its main port otherwise; ``False`` always uses the main port.
        shared_memory: on the native listener of a loopback server, offer to take the
            arrays of replies (observations) through a section of memory both processes
            map instead of the socket (:mod:`openenv_gym._section`; Linux on x86-64, a
            server of the same user that this process can see), when the replies can
            carry 64 KiB of arrays (:meth:`.Contract.session_options`); ``False`` never offers.
        reconnect: recover lost connections (``True`` for the default
            :class:`~openenv_gym.client.retry.Reconnect` policy); each client
            says what that means for its episodes. Off by default: errors are
            raised.
    """

    kind = "connection"

    encoding: Encoding = "auto"
    token: str | None = None
    headers: Mapping[str, str] = field(default_factory=dict)
    connect_timeout: float | None = 10.0
    message_timeout: float | None = 60.0
    max_message_bytes: int = 100 * 1024 * 1024
    max_document_bytes: int = 8 * 1024 * 1024
    ping_interval: float | None = 20.0
    ping_timeout: float | None = 20.0
    compression: Literal["deflate"] | None = None
    busy_poll: float | None = None
    native: bool = True
    shared_memory: bool = True
    reconnect: Reconnect | None = None

    def __post_init__(self) -> None:
        if self.encoding not in OFFERS:
            choices = ", ".join(map(repr, OFFERS))
            raise ValueError(f"encoding must be one of {choices}, not {self.encoding!r}")
        if self.compression not in (None, "deflate"):
            raise ValueError(f"compression must be None or 'deflate', not {self.compression!r}")
        for name in ("max_message_bytes", "max_document_bytes"):
            if not isinstance(getattr(self, name), int) or getattr(self, name) < 1:
                raise ValueError(f"{name} must be a positive number of bytes, not {getattr(self, name)!r}")
        if (problem := busy_poll_problem(self.busy_poll)) is not None:
            raise ValueError(problem)
        reconnect: Any = self.reconnect
        if reconnect is True:
            object.__setattr__(self, "reconnect", Reconnect())
        elif reconnect is False:
            object.__setattr__(self, "reconnect", None)


    @property
    def request_headers(self) -> dict[str, str]:
        """The HTTP headers of every request: ``headers``, and the token's ``Authorization``."""
        headers = dict(self.headers or {})
        if self.token is not None:
            headers["Authorization"] = f"Bearer {self.token}"
        return headers

    @property
    def limits(self) -> Limits:
        """The limits on what the server sends (only its size: a client trusts its server's
        shapes, and a stock server's large observations are long JSON lists)."""
        size = self.max_message_bytes
        return Limits(
            max_frame_bytes=size, max_array_bytes=size, max_container_len=size, max_items=size, max_arrays=size
        )

    @property
    def document_limits(self) -> Limits:
        """The limits on an HTTP document the server sends: ``max_document_bytes``, and
        the protocol's nesting limit."""
        size = self.max_document_bytes
        return Limits(
            max_frame_bytes=size, max_array_bytes=size, max_container_len=size, max_items=size, max_arrays=size
        )

    @property
    def subprotocols(self) -> tuple[str, ...]:
        """The subprotocols the handshake offers."""
        return OFFERS[self.encoding]


class ConnectKwargs(TypedDict, total=False):
    """:class:`ConnectOptions` as keyword arguments (for ``**kwargs: Unpack[ConnectKwargs]``)."""

    encoding: Encoding
    token: str | None
    headers: Mapping[str, str]
    connect_timeout: float | None
    message_timeout: float | None
    max_message_bytes: int
    max_document_bytes: int
    ping_interval: float | None
    ping_timeout: float | None
    compression: Literal["deflate"] | None
    busy_poll: float | None
    native: bool
    shared_memory: bool
    reconnect: Reconnect | bool | None
