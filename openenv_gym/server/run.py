"""Running a server: :func:`serve` (blocking) and :func:`local_server` (for a ``with`` block).

    >>> with local_server("CartPole-v1") as url:           # doctest: +SKIP
    ...     env = openenv_gym.RemoteEnv(url)
    >>> with local_server("OpenEnv/envs/maze_env") as url:  # doctest: +SKIP
    ...     env = openenv_gym.RemoteEnv(url)                # an OpenEnv package's own app, in a child process
"""

from __future__ import annotations

import contextlib
import functools
import logging
import math
import os
import socket
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any

import uvicorn

from .app import create_app
from .listen import base_url, listening_socket
from .logs import quiet_uvicorn
from .native import NativeListener, native_available, native_wanted
from .options import ServeOptions
from .package import PackageServer, is_package
from .source import EnvLike
from .transport import BackpressuredWebSocket, GuardedHttp, PendingConnections

if TYPE_CHECKING:
    from typing_extensions import Unpack

    from .options import ServeKwargs

__all__ = ["serve", "local_server", "uvicorn_config", "GracefulServer", "listening_socket"]

logger = logging.getLogger("openenv_gym.server")

try:
    import resource
except ImportError:  # Windows
    resource = None  # type: ignore[assignment]

#: The least and the most connections waiting for a complete request one server keeps by
#: default (a quarter of the files the process may open, between the two).
MIN_PENDING_CONNECTIONS, MAX_PENDING_CONNECTIONS = 64, 1024


def uvicorn_config(
    app: Any,
    *,
    host: str,
    port: int,
    ping_interval: float | None = 20.0,
    ping_timeout: float | None = 20.0,
    max_pending_connections: int | None = None,
    **uvicorn_kwargs: Any,
) -> uvicorn.Config:
    """The uvicorn configuration openenv-gym servers run with.

    The frame limit follows the ``limits.max_frame_bytes`` of the app's
    :class:`~.options.ServeOptions`; keepalive pings every ``ping_interval`` seconds,
    dropping a peer that does not answer within
    ``ping_timeout`` (``None`` turns them off, for tunnels that drop pings);
    a connection that sends no complete request within the app's
    ``handshake_timeout`` is closed, and so is the oldest such connection when
    ``max_pending_connections`` of them wait and one more comes
    (:class:`~.transport.PendingConnections`; ``None``: :func:`default_pending_connections`);
    a WebSocket peer that reads nothing is read no more; access logs are off (one
    line per HTTP request drowns real problems).
    """
    quiet_uvicorn()
    server = getattr(getattr(app, "state", None), "openenv_gym", None)
    served = server.options if server is not None else ServeOptions()
    limits, handshake_timeout = served.limits, served.handshake_timeout
    if max_pending_connections is None:
        max_pending_connections = default_pending_connections()
    pending = PendingConnections(max_pending_connections)
    options: dict[str, Any] = {
        "http": functools.partial(GuardedHttp, handshake_timeout=handshake_timeout, pending=pending),
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


def default_pending_connections() -> int:
    """How many connections waiting for a complete request a server keeps: a quarter of
    the files this process may open (the rest are for sessions, their envs, the
    listener), between :data:`MIN_PENDING_CONNECTIONS` and :data:`MAX_PENDING_CONNECTIONS`."""
    if resource is None:
        return MAX_PENDING_CONNECTIONS
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY:
        return MAX_PENDING_CONNECTIONS
    return max(MIN_PENDING_CONNECTIONS, min(MAX_PENDING_CONNECTIONS, soft // 4))


def raise_open_files_limit() -> None:
    """Let this process open as many files as its hard limit allows: a server holds a
    descriptor per connection, and the soft limit is often 1,024 of a hard limit many
    times that. Where the hard limit cannot be taken (unlimited on macOS), nothing changes."""
    if resource is None:
        return
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != hard:
        with contextlib.suppress(ValueError, OSError):
            resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))


class GracefulServer(uvicorn.Server):
    """uvicorn, with openenv-gym's native listener beside it, draining openenv-gym
    sessions before it closes connections, within ``drain_timeout`` seconds in all.

    ``native_port`` is where the native listener (:mod:`.native`) listens, on the
    host uvicorn binds: ``0`` (the default) a free port, when picows is installed and
    ``$OPENENV_GYM_NATIVE`` is not ``off``; another number that port (picows needed);
    ``None`` none. Its socket is bound here, so a port in use fails before the server
    starts (:class:`~openenv_gym.errors.ListenError`).

    On SIGINT or SIGTERM (or ``should_exit``), the server stops listening (both
    ports); sessions in the middle of an env call finish it and send the reply,
    every session gets a SESSION_ERROR frame saying the server is shutting down and
    close code 1001; uvicorn then waits for the HTTP requests in flight until
    the deadline, and whatever is left (a peer that sends a body it never
    finishes, or reads nothing) is cut off, so the process always exits.
    """

    def __init__(
        self, config: uvicorn.Config, *, drain_timeout: float = 30.0, native_port: int | None = 0
    ) -> None:
        super().__init__(config)
        self.drain_timeout = drain_timeout
        self._state = getattr(getattr(config.app, "state", None), "openenv_gym", None)
        #: The native listener, once started (``None``: none).
        self.native: NativeListener | None = None
        self._native_socket: socket.socket | None = None
        if self._state is not None and native_port is not None and (native_port or native_wanted()):
            if not native_available():
                raise ImportError(
                    f"native_port={native_port} needs picows, which is not installed: "
                    f"pip install picows, or leave native_port at 0 (native when available)"
                )
            self._native_socket = listening_socket(config.host, native_port)

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        """Start the native listener, then uvicorn: once ``/health`` answers, ``/schema``
        advertises the native port."""
        if self._native_socket is not None and self._state is not None:
            config = self.config
            self.native = NativeListener(
                self._state, self._state.routes,
                ping_interval=config.ws_ping_interval, ping_timeout=config.ws_ping_timeout,
            )
            await self.native.start(self._native_socket)
        await super().startup(sockets)
        if self.should_exit and self.native is not None:  # uvicorn did not start
            self.native.close()
            self._native_socket.close()  # type: ignore[union-attr]

    async def shutdown(self, sockets: Any = None) -> None:
        deadline = time.monotonic() + self.drain_timeout
        state, native = self._state, self.native
        if native is not None:
            native.close()
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
        if native is not None:
            native.abort()
        if self._native_socket is not None:
            self._native_socket.close()


def serve(
    env: EnvLike,
    options: ServeOptions | None = None,
    *,
    env_kwargs: Mapping[str, Any] | None = None,
    host: str = "127.0.0.1",
    port: int = 8000,
    native_port: int | None = 0,
    ping_interval: float | None = 20.0,
    ping_timeout: float | None = 20.0,
    drain_timeout: float = 30.0,
    max_pending_connections: int | None = None,
    uvicorn_kwargs: dict[str, Any] | None = None,
    **kwargs: Unpack[ServeKwargs],
) -> None:
    """Serve ``env`` until interrupted; SIGINT and SIGTERM drain it gracefully.

    Binds 127.0.0.1 unless ``host`` says otherwise. ``options`` (or its fields as
    keyword arguments: ``max_sessions``, ``session_timeout``, ``step_timeout``,
    ``execution``, ``token``, ...; see :class:`~openenv_gym.server.options.ServeOptions`)
    and ``env_kwargs`` go to :func:`~openenv_gym.create_app`.
    On shutdown, sessions get up to ``drain_timeout`` seconds to finish the
    env call they are in (see :class:`GracefulServer`). The process may open
    as many files as its hard limit allows (:func:`raise_open_files_limit`), and
    keeps at most ``max_pending_connections`` connections that have sent no
    complete request (see :func:`uvicorn_config`). openenv-gym's clients reach its
    WebSocket routes on a second port, ``native_port`` (a free one by default), served
    in C when it is reachable (see :mod:`.native` and :class:`GracefulServer`).

    Raises :class:`ListenError` when an address cannot be bound; an env that
    cannot be served fails in :func:`~openenv_gym.create_app`, before that.
    Once listening, logs ``serving env=... url=...`` on ``openenv_gym.server``.
    An OpenEnv package directory is served by ``openenv-gym serve PATH`` or
    :func:`local_server`, which run its own app.
    """
    if is_package(env):
        raise TypeError(
            f"{env} is an OpenEnv package, whose own app serves it: run `openenv-gym serve {env}` "
            f"or use local_server({str(env)!r})"
        )
    raise_open_files_limit()
    app = create_app(env, options, env_kwargs=env_kwargs, **kwargs)
    config = uvicorn_config(
        app, host=host, port=port, ping_interval=ping_interval,
        ping_timeout=ping_timeout, max_pending_connections=max_pending_connections, **(uvicorn_kwargs or {}),
    )
    with listening_socket(host, port) as sock:
        server = GracefulServer(config, drain_timeout=drain_timeout, native_port=native_port)
        source = app.state.openenv_gym.source
        logger.info("serving env=%s url=%s", source.name, base_url(host, sock.getsockname()[1]))
        server.run(sockets=[sock])


class _BackgroundServer(GracefulServer):
    def install_signal_handlers(self) -> None:  # the main thread keeps its handlers
        pass


@contextlib.contextmanager
def local_server(
    target: EnvLike | os.PathLike[str],
    options: ServeOptions | None = None,
    /,
    *,
    env_kwargs: Mapping[str, Any] | None = None,
    env: Mapping[str, str] | None = None,
    python: str | None = None,
    host: str = "127.0.0.1",
    port: int | None = None,
    native_port: int | None = 0,
    startup_timeout: float = 30.0,
    uvicorn_kwargs: dict[str, Any] | None = None,
    **kwargs: Unpack[ServeKwargs],
) -> Iterator[str]:
    """Run a server for the duration of a ``with`` block and yield its base URL.

    ``target`` is either what :func:`serve` takes (a Gymnasium id, ``module:factory``, a
    PettingZoo module, an env class or factory), served by a background thread of this
    process, or the directory of an OpenEnv package (one with ``openenv.yaml``), whose own
    app is served by a child process (a :class:`~openenv_gym.server.package.PackageServer`).
    Either way the server listens on ``host`` (127.0.0.1), on a free port unless ``port``
    is given; the block starts once ``/health`` answers, and the server always stops at its
    end, whatever happened inside it.

        >>> import openenv_gym
        >>> with local_server("CartPole-v1") as url:
        ...     env = openenv_gym.RemoteEnv(url)
        ...     obs, info = env.reset(seed=0)
        ...     env.close()

        >>> with local_server("OpenEnv/envs/openspiel_env", env={"OPENSPIEL_GAME": "catch"},
        ...                   python="/path/to/venv/bin/python") as url:  # doctest: +SKIP
        ...     env = openenv_gym.RemoteEnv(url)

    In this process, ``options`` (or its fields as keyword arguments) and ``env_kwargs`` go
    to :func:`~openenv_gym.create_app`, ``uvicorn_kwargs`` to uvicorn, ``native_port`` to
    :class:`GracefulServer` (the native listener: a free port by default); the server does not
    busy-poll unless ``busy_poll`` says so: it shares the caller's process, and its spinning
    loop would compete with the caller for the GIL.

    For a package, ``env`` is added to the server's environment variables (the game it
    serves, say), and ``python`` is the interpreter that runs it (default: this one), which
    must have the package's dependencies: when the server does not start, the
    :class:`~openenv_gym.errors.EmbeddedServerError` shows the end of its log (a
    ``ModuleNotFoundError``, say) and what to do. The child stops SIGTERM first, SIGKILL if
    it must, and never outlives this process, even one killed by SIGKILL. The package's app
    configures its server: ``options``, ``env_kwargs`` and ``uvicorn_kwargs`` do not apply.
    """
    if is_package(target):
        given = [name for name, value in (("options", options), ("env_kwargs", env_kwargs),
                                          ("uvicorn_kwargs", uvicorn_kwargs)) if value is not None]
        if given or kwargs:
            raise TypeError(
                f"{target} is an OpenEnv package: its own app configures its server, so "
                f"{', '.join(given + sorted(kwargs))} do not apply (pass env= and python= at most)"
            )
        with PackageServer(
            target, env=env, python=python, host=host, port=port or 0, startup_timeout=startup_timeout
        ) as server:
            yield server.url
        return
    if isinstance(target, os.PathLike):
        raise FileNotFoundError(f"{target} is not an OpenEnv package: it has no openenv.yaml")
    if env is not None or python is not None:
        raise TypeError(
            f"env= and python= are for an OpenEnv package directory (one with openenv.yaml), "
            f"which runs in a process of its own; {target!r} is served in this process"
        )
    if options is None:
        kwargs.setdefault("busy_poll", 0.0)
    app = create_app(target, options, env_kwargs=env_kwargs, **kwargs)
    sock = listening_socket(host, port or 0)
    url = base_url(host, sock.getsockname()[1])
    try:
        background = _BackgroundServer(
            uvicorn_config(app, host=host, port=port or 0, **(uvicorn_kwargs or {})),
            drain_timeout=5.0, native_port=native_port,
        )
    except BaseException:
        sock.close()
        raise
    thread = threading.Thread(
        target=background.run, kwargs={"sockets": [sock]}, name=f"openenv-gym server {url}", daemon=True
    )
    thread.start()
    try:
        _wait_healthy(url, thread, startup_timeout)
        yield url
    finally:
        background.should_exit = True
        thread.join(timeout=10)
        if thread.is_alive():
            background.force_exit = True
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
