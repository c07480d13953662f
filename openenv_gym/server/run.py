"""Running a server: :func:`serve` (blocking) and :func:`local_server` (background).

    >>> with local_server("CartPole-v1") as url:           # doctest: +SKIP
    ...     env = openenv_gym.RemoteEnv(url)
"""

from __future__ import annotations

import contextlib
import socket
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from typing import Any

import uvicorn

from ..wire import Limits
from .app import create_app
from .source import EnvLike

__all__ = ["serve", "local_server", "uvicorn_config"]


def uvicorn_config(app: Any, *, host: str, port: int, limits: Limits | None, **uvicorn_kwargs: Any) -> uvicorn.Config:
    """The uvicorn configuration openenv-gym servers run with.

    The frame limit follows ``limits.max_frame_bytes``; access logs are off
    (one line per HTTP request drowns real problems); keepalive pings stay at
    uvicorn's defaults (20 s interval, 20 s timeout).
    """
    limits = limits or Limits()
    options: dict[str, Any] = {
        "ws_max_size": limits.max_frame_bytes,
        "access_log": False,
        "log_level": "warning",
        "lifespan": "off",
    }
    options.update(uvicorn_kwargs)
    return uvicorn.Config(app, host=host, port=port, **options)


def serve(
    env: EnvLike,
    *,
    host: str = "127.0.0.1",
    port: int = 8000,
    limits: Limits | None = None,
    uvicorn_kwargs: dict[str, Any] | None = None,
    **app_kwargs: Any,
) -> None:
    """Serve ``env`` until interrupted (SIGINT or SIGTERM shut it down cleanly).

    Binds 127.0.0.1 unless ``host`` says otherwise. ``app_kwargs`` go to
    :func:`~openenv_gym.create_app` (``env_kwargs``, ``max_sessions``,
    ``session_timeout``, ``execution``).
    """
    app = create_app(env, limits=limits, **app_kwargs)
    uvicorn.Server(
        uvicorn_config(app, host=host, port=port, limits=limits, **(uvicorn_kwargs or {}))
    ).run()


def _free_port(host: str) -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return sock.getsockname()[1]


class _BackgroundServer(uvicorn.Server):
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
    the server on exit, whatever happened inside the block.
    """
    app = create_app(env, limits=limits, **app_kwargs)
    port = port or _free_port(host)
    server = _BackgroundServer(
        uvicorn_config(app, host=host, port=port, limits=limits, **(uvicorn_kwargs or {}))
    )
    thread = threading.Thread(target=server.run, name=f"openenv-gym server :{port}", daemon=True)
    thread.start()
    url = f"http://{host}:{port}"
    try:
        _wait_healthy(url, thread, startup_timeout)
        yield url
    finally:
        server.should_exit = True
        thread.join(timeout=10)
        if thread.is_alive():
            server.force_exit = True
            thread.join(timeout=5)


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
