"""Listening sockets, bound before a server starts.

    >>> sock = listening_socket("127.0.0.1", 0)          # any free port
    >>> base_url("127.0.0.1", sock.getsockname()[1])     # doctest: +ELLIPSIS
    'http://127.0.0.1:...'
    >>> sock.close()

Every server openenv-gym runs (:func:`~openenv_gym.serve`, :func:`~openenv_gym.local_server`,
a server in a child process) binds its address here first: a port in use fails at once,
with a :class:`~openenv_gym.errors.ListenError` that says what to do, and the server is
reachable as soon as the socket exists (connections queue until its loop accepts them).
"""

from __future__ import annotations

import errno
import socket

from ..errors import ListenError

__all__ = ["listening_socket", "base_url"]


def listening_socket(host: str, port: int) -> socket.socket:
    """A TCP socket bound to ``host``:``port`` and listening (port 0: any free port).

    Raises :class:`ListenError` when the address cannot be bound (a port in use, an
    address this machine does not have).
    """
    try:
        family, kind, proto, _, address = socket.getaddrinfo(
            host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
        )[0]
    except socket.gaierror as exc:
        raise ListenError(f"cannot listen on {host}:{port}: unknown host ({exc.strerror})") from exc
    sock = socket.socket(family, kind, proto)
    try:
        if hasattr(socket, "SO_REUSEADDR"):  # restarts reuse a port in TIME_WAIT, as uvicorn's do
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
        sock.listen(2048)
    except OSError as exc:
        sock.close()
        hint = (
            "stop what holds it or choose another port"
            if exc.errno == errno.EADDRINUSE
            else "choose another host or port"
        )
        raise ListenError(f"cannot listen on {host}:{port}: {exc.strerror}; {hint}") from exc
    return sock


def base_url(host: str, port: int) -> str:
    """``http://host:port``, with an IPv6 host in brackets."""
    return f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"
