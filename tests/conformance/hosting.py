"""Many openenv-gym servers behind one real uvicorn listener on 127.0.0.1.

The conformance suites build a vector env for nearly every test case, each
served from the test's own env factories (closures, so the servers run in
this process). Starting and stopping a uvicorn server per factory costs
0.2 to 0.3 s; here one uvicorn server runs for the whole test session and
each :meth:`AppHost.serve` mounts a new app made by
:func:`openenv_gym.create_app` under a path of its own
(``http://127.0.0.1:PORT/apps/7``). Each app is a whole openenv-gym server:
its own sessions, capacity, ``/schema`` and ``/health``; clients reach it by
that base URL as they would reach a server of its own (a path prefix is part
of a base URL). Each app also gets a native listener of its own (a port each, as
:func:`openenv_gym.serve` starts one), unless ``OPENENV_GYM_NATIVE=off``: the suites then
run on the main port, the fallback path, as ``.ci/run``'s Gymnasium 1.2 job runs them.
:meth:`AppHost.release_all` drains the apps' sessions the way a server that shuts down
drains them, and unmounts them.

The adapted suites' replacements (:mod:`tests.conformance.remote`,
:mod:`tests.conformance.sb3_remote`) find the session's host with
:func:`current_host` and register what they open with :func:`track`; the
plugin (:mod:`tests.conformance.plugin`) sets the host with :func:`use_host`
and, after each test, closes what was opened (:func:`close_made`).
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import threading
import time
import urllib.request
from collections.abc import Iterator
from typing import Any, Protocol

import uvicorn
from starlette.types import Receive, Scope, Send

import openenv_gym
from openenv_gym.server.native import NativeListener, native_wanted
from openenv_gym.server.run import listening_socket, uvicorn_config

__all__ = ["AppHost", "app_host", "close_made", "current_host", "track", "use_host"]

#: Seconds a released app's sessions get to end before it is unmounted anyway.
DRAIN_TIMEOUT = 5.0


class Closeable(Protocol):
    """What :func:`track` takes: a client (vector env, env) to close after the test."""

    def close(self) -> Any: ...


_host: AppHost | None = None
#: What the replacements opened since the last :func:`close_made` (a failing test leaves its own open).
_made: list[Closeable] = []


def use_host(host: AppHost | None) -> None:
    """Serve the env factories of what the adapted suites make from now on on ``host``."""
    global _host
    _host = host


def current_host() -> AppHost:
    """The host :func:`use_host` set; ``RuntimeError`` outside a run with the plugin."""
    if _host is None:
        raise RuntimeError("no AppHost: run the adapted suites with the tests.conformance.plugin plugin")
    return _host


def track(opened: Closeable) -> None:
    """Close ``opened`` (a client of the host's apps) at the end of the test."""
    _made.append(opened)


def close_made() -> None:
    """Close everything :func:`track` was given since the last call, newest first."""
    while _made:
        _made.pop().close()


class AppHost:
    """An ASGI app routing ``/apps/<n>/...`` to the ``n``-th mounted openenv-gym app."""

    def __init__(self) -> None:
        self.url = ""
        self._apps: dict[str, Any] = {}
        self._native: list[tuple[NativeListener, Any]] = []
        self._numbers = itertools.count()
        self._loop: asyncio.AbstractEventLoop | None = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        self._loop = asyncio.get_running_loop()
        if scope["path"] == "/health" and scope["type"] == "http":  # the listener itself
            await send({"type": "http.response.start", "status": 200, "headers": []})
            await send({"type": "http.response.body", "body": b"{}"})
            return
        _, prefix, number, *rest = scope["path"].split("/", 3) + [""]
        app = self._apps.get(number) if prefix == "apps" else None
        if app is None:
            if scope["type"] == "websocket":
                await send({"type": "websocket.close", "code": 1008})
            else:
                await send({"type": "http.response.start", "status": 404, "headers": []})
                await send({"type": "http.response.body", "body": b"no such app"})
            return
        path = "/" + rest[0]
        await app({**scope, "path": path, "raw_path": path.encode()}, receive, send)

    def serve(self, env: Any, **app_kwargs: Any) -> str:
        """Mount a new app serving ``env`` (as :func:`~openenv_gym.create_app` takes
        it); its base URL."""
        app_kwargs.setdefault("busy_poll", 0.0)  # it shares the tests' process
        app = openenv_gym.create_app(env, **app_kwargs)
        number = str(next(self._numbers))
        self._apps[number] = app
        if native_wanted():
            assert self._loop is not None, "app_host() starts the loop before anything is served"
            server = app.state.openenv_gym
            listener, sock = NativeListener(server, server.routes), listening_socket("127.0.0.1", 0)
            asyncio.run_coroutine_threadsafe(listener.start(sock), self._loop).result(10)
            self._native.append((listener, sock))
        return f"{self.url}/apps/{number}"

    def release_all(self) -> None:
        """Drain and unmount every app (what a server's shutdown does to its sessions)."""
        apps, self._apps = list(self._apps.values()), {}
        native, self._native = self._native, []
        if self._loop is None or not apps:
            return

        async def drain() -> None:
            for listener, _ in native:
                listener.close()
            await asyncio.gather(*(app.state.openenv_gym.drain(DRAIN_TIMEOUT) for app in apps))
            for listener, sock in native:
                listener.abort()
                sock.close()

        future = asyncio.run_coroutine_threadsafe(drain(), self._loop)
        with contextlib.suppress(Exception):
            future.result(DRAIN_TIMEOUT + 5)


@contextlib.contextmanager
def app_host() -> Iterator[AppHost]:
    """One uvicorn server on 127.0.0.1 running an :class:`AppHost`; always stopped."""
    host = AppHost()
    sock = listening_socket("127.0.0.1", 0)
    host.url = f"http://127.0.0.1:{sock.getsockname()[1]}"
    server = uvicorn.Server(uvicorn_config(host, host="127.0.0.1", port=0))
    server.install_signal_handlers = lambda: None  # type: ignore[method-assign]
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    try:
        _wait_started(server, thread)
        with urllib.request.urlopen(f"{host.url}/health", timeout=10):  # the host learns its loop
            pass
        yield host
    finally:
        host.release_all()
        server.should_exit = True
        thread.join(10)
        if thread.is_alive():
            server.force_exit = True
            thread.join(5)
        sock.close()


def _wait_started(server: uvicorn.Server, thread: threading.Thread, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not server.started and thread.is_alive() and time.monotonic() < deadline:
        time.sleep(0.01)
    if not server.started:
        raise RuntimeError("the conformance suites' uvicorn server did not start")
