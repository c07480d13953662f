"""Shared fixtures: real uvicorn servers on 127.0.0.1, always stopped."""

from __future__ import annotations

import contextlib
import signal
import socket
import subprocess
import threading
import time
import urllib.request
from collections.abc import Iterator

import pytest
import uvicorn

import openenv_gym


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_healthy(url: str, timeout: float = 30.0, proc: subprocess.Popen | None = None) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            raise RuntimeError(f"server process exited with {proc.returncode}")
        try:
            with urllib.request.urlopen(f"{url}/health", timeout=1) as response:
                if response.status == 200:
                    return
        except OSError:
            pass
        time.sleep(0.05)
    raise TimeoutError(f"{url} not healthy after {timeout} s")


@contextlib.contextmanager
def asgi_server(app, **config) -> Iterator[str]:
    """Run any ASGI app under uvicorn in a background thread; yield its URL."""
    port = free_port()
    server = uvicorn.Server(
        uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", lifespan="off", **config)
    )
    server.install_signal_handlers = lambda: None  # type: ignore[method-assign]
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    url = f"http://127.0.0.1:{port}"
    try:
        wait_healthy(url)
        yield url
    finally:
        server.should_exit = True
        thread.join(10)
        if thread.is_alive():
            server.force_exit = True
            thread.join(5)


@contextlib.contextmanager
def server_process(args: list[str], url: str, timeout: float = 60.0) -> Iterator[subprocess.Popen]:
    """Start a server subprocess, wait for /health, and always stop it by PID."""
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        wait_healthy(url, timeout, proc)
        yield proc
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(5)


@pytest.fixture(scope="session")
def cartpole_url() -> Iterator[str]:
    with openenv_gym.local_server("CartPole-v1") as url:
        yield url


@pytest.fixture(scope="session")
def stock_url() -> Iterator[str]:
    """A server built on the official openenv package's create_app."""
    from tests.stock_server import make_app

    with asgi_server(make_app(max_concurrent_envs=8)) as url:
        yield url

