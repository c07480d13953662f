"""Running a server: :func:`serve` (blocking) and :func:`local_server` (background).

    >>> with local_server("CartPole-v1") as url:           # doctest: +SKIP
    ...     env = openenv_gym.RemoteEnv(url)
"""

from __future__ import annotations

import contextlib
import errno
import functools
import logging
import math
import socket
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from typing import Any

import uvicorn

from ..errors import ListenError
from ..protocol import Limits
from .app import create_app
from .hosting import DEFAULT_HANDSHAKE_TIMEOUT
from .logs import quiet_uvicorn
from .source import EnvLike
from .transport import BackpressuredWebSocket, GuardedHttp

__all__ = ["serve", "local_server", "uvicorn_config", "GracefulServer", "listening_socket"]

logger = logging.getLogger("openenv_gym.server")


def listening_socket(host: str, port: int) -> socket.socket:
    """A TCP socket bound to ``host``:``port`` and listening (port 0: any free port).

    Binding before the server starts means a port in use fails here, with a
    :class:`ListenError` that says so, and that the server is reachable as
    soon as this returns (connections queue until its loop accepts them).
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


def uvicorn_config(
    app: Any,
    *,
    host: str,
    port: int,
    limits: Limits | None,
    ping_interval: float | None = 20.0,
    ping_timeout: float | None = 20.0,
    **uvicorn_kwargs: Any,
) -> uvicorn.Config:
    """The uvicorn configuration openenv-gym servers run with.

    The frame limit follows ``limits.max_frame_bytes``; keepalive pings every
    ``ping_interval`` seconds, dropping a peer that does not answer within
    ``ping_timeout`` (``None`` turns them off, for tunnels that drop pings);
    a connection that sends no complete request within the app's
    ``handshake_timeout`` is closed; a WebSocket peer that reads nothing is
    read no more; access logs are off (one line per HTTP request drowns real
    problems).
    """
    limits = limits or Limits()
    quiet_uvicorn()
    state = getattr(getattr(app, "state", None), "openenv_gym", None)
    handshake_timeout = state.handshake_timeout if state is not None else DEFAULT_HANDSHAKE_TIMEOUT
    options: dict[str, Any] = {
        "http": functools.partial(GuardedHttp, handshake_timeout=handshake_timeout),
        "ws": BackpressuredWebSocket,
        "ws_max_size": limits.max_frame_bytes,
        "ws_ping_interval": ping_interval,
        "ws_ping_timeout": ping_timeout,
        "access_log": False,
        "log_level": "warning",
        "lifespan": "off",
    }
    options.update(uvicorn_kwargs)
    return uvicorn.Config(app, host=host, port=port, **options)


class GracefulServer(uvicorn.Server):
    """uvicorn, draining openenv-gym sessions before it closes connections, within
    ``drain_timeout`` seconds in all.

    On SIGINT or SIGTERM (or ``should_exit``), the server stops listening;
    sessions in the middle of an env call finish it and send the reply, every
    session gets a SESSION_ERROR frame saying the server is shutting down and
    close code 1001; uvicorn then waits for the HTTP requests in flight until
    the deadline, and whatever is left (a peer that sends a body it never
    finishes, or reads nothing) is cut off, so the process always exits.
    """

    def __init__(self, config: uvicorn.Config, *, drain_timeout: float = 30.0) -> None:
        super().__init__(config)
        self.drain_timeout = drain_timeout

    async def shutdown(self, sockets: Any = None) -> None:
        deadline = time.monotonic() + self.drain_timeout
        state = getattr(getattr(self.config.app, "state", None), "openenv_gym", None)
        if state is not None:
            for server in self.servers:  # refuse new connections while draining
                server.close()
            await state.drain(self.drain_timeout)
        self.config.timeout_graceful_shutdown = max(math.ceil(deadline - time.monotonic()), 1)  # whole seconds
        await super().shutdown(sockets)
        for connection in list(self.server_state.connections):
            transport = getattr(connection, "transport", None)
            if transport is not None:
                transport.abort()


def serve(
    env: EnvLike,
    *,
    host: str = "127.0.0.1",
    port: int = 8000,
    limits: Limits | None = None,
    ping_interval: float | None = 20.0,
    ping_timeout: float | None = 20.0,
    drain_timeout: float = 30.0,
    uvicorn_kwargs: dict[str, Any] | None = None,
    **app_kwargs: Any,
) -> None:
    """Serve ``env`` until interrupted; SIGINT and SIGTERM drain it gracefully.

    Binds 127.0.0.1 unless ``host`` says otherwise. ``app_kwargs`` go to
    :func:`~openenv_gym.create_app` (``env_kwargs``, ``max_sessions``,
    ``session_timeout``, ``step_timeout``, ``execution``, ``token``, ...).
    On shutdown, sessions get up to ``drain_timeout`` seconds to finish the
    env call they are in (see :class:`GracefulServer`).

    Raises :class:`ListenError` when the address cannot be bound; an env that
    cannot be served fails in :func:`~openenv_gym.create_app`, before that.
    Once listening, logs ``serving env=... url=...`` on ``openenv_gym.server``.
    """
    app = create_app(env, limits=limits, **app_kwargs)
    config = uvicorn_config(
        app, host=host, port=port, limits=limits, ping_interval=ping_interval,
        ping_timeout=ping_timeout, **(uvicorn_kwargs or {}),
    )
    with listening_socket(host, port) as sock:
        source = app.state.openenv_gym.source
        logger.info("serving env=%s url=%s", source.name, _url(host, sock.getsockname()[1]))
        GracefulServer(config, drain_timeout=drain_timeout).run(sockets=[sock])


def _url(host: str, port: int) -> str:
    return f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"


class _BackgroundServer(GracefulServer):
    def install_signal_handlers(self) -> None:  # the main thread keeps its handlers
        pass


@contextlib.contextmanager
def local_server(
    env: EnvLike,
    *,
    host: str = "127.0.0.1",
    port: int | None = None,
    startup_timeout: float = 30.0,
    limits: Limits | None = None,
    uvicorn_kwargs: dict[str, Any] | None = None,
    **app_kwargs: Any,
) -> Iterator[str]:
    """Run a server in a background thread for the duration of a ``with`` block.

    Picks a free port unless ``port`` is given, waits until ``/health``
    answers, yields the base URL (``http://127.0.0.1:PORT``) and always stops
    the server on exit, whatever happened inside the block. The server does
    not busy-poll unless ``busy_poll`` says so: it shares the caller's
    process, and its spinning loop would compete with the caller for the GIL.
    """
    app_kwargs.setdefault("busy_poll", 0.0)
    app = create_app(env, limits=limits, **app_kwargs)
    sock = listening_socket(host, port or 0)
    url = _url(host, sock.getsockname()[1])
    server = _BackgroundServer(
        uvicorn_config(app, host=host, port=port or 0, limits=limits, **(uvicorn_kwargs or {})),
        drain_timeout=5.0,
    )
    thread = threading.Thread(
        target=server.run, kwargs={"sockets": [sock]}, name=f"openenv-gym server {url}", daemon=True
    )
    thread.start()
    try:
        _wait_healthy(url, thread, startup_timeout)
        yield url
    finally:
        server.should_exit = True
        thread.join(timeout=10)
        if thread.is_alive():
            server.force_exit = True
            thread.join(timeout=5)
        sock.close()


def _wait_healthy(url: str, thread: threading.Thread, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not thread.is_alive():
            raise RuntimeError(f"the server for {url} stopped during startup; see its log above")
        try:
            with urllib.request.urlopen(f"{url}/health", timeout=1.0) as response:
                if response.status == 200:
                    return
        except (urllib.error.URLError, OSError):
            pass
        time.sleep(0.02)
    raise TimeoutError(f"the server for {url} did not answer /health within {timeout} s")
