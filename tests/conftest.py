"""Shared fixtures: real uvicorn servers on 127.0.0.1, always stopped."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import uvicorn
from hypothesis.configuration import set_hypothesis_home_dir

import openenv_gym

#: The repository root: subprocesses that import ``tests.envs`` get it on PYTHONPATH,
#: so the suite runs from any directory.
ROOT = Path(__file__).resolve().parent.parent


# Hypothesis keeps its example database in the working directory by default: keep it in
# the temp directory instead, so the suite writes nothing into the checkout.
if not os.environ.get("HYPOTHESIS_STORAGE_DIRECTORY"):
    set_hypothesis_home_dir(Path(tempfile.gettempdir()) / "openenv-gym-hypothesis")


def project_of(pyproject: Path) -> dict:
    """The ``[project]`` table of a ``pyproject.toml`` (tomllib's reading, or tomli's on
    Python 3.10, which has no tomllib)."""
    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10
        import tomli as tomllib
    return tomllib.loads(pyproject.read_text())["project"]


def subprocess_env(**extra: str) -> dict[str, str]:
    """The environment for a child Python that imports the tests' modules."""
    path = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p)
    return {**os.environ, "PYTHONPATH": path, **extra}


def package_source(dest: Path) -> Path:
    """A copy of what builds the package (pyproject, README, ``openenv_gym/``, and
    ``openenv_gym_verifiers/``, the id verifiers loads :mod:`openenv_gym.verifiers` by) in ``dest``.

    pip builds a local project in place, writing ``build/`` and ``*.egg-info``
    beside its sources: tests that install the package install this copy, so
    the checkout stays as it was.
    """
    dest.mkdir(parents=True, exist_ok=True)
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(ROOT / name, dest / name)
    for package in ("openenv_gym", "openenv_gym_verifiers"):
        shutil.copytree(ROOT / package, dest / package, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    return dest


def process_tree() -> dict[int, list[int]]:
    """The live (not zombie) processes of the machine by parent pid, read from /proc."""
    children: dict[int, list[int]] = {}
    for entry in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{entry}/stat") as stat:
                state, ppid = stat.read().rsplit(")", 1)[1].split()[:2]
        except OSError:
            continue
        if state != "Z":
            children.setdefault(int(ppid), []).append(int(entry))
    return children


def child_processes() -> set[int]:
    """Live (not zombie) child processes of this test process, read from /proc."""
    return set(process_tree().get(os.getpid(), ()))


def descendants(pid: int) -> set[int]:
    """The live processes below ``pid``: its children, theirs, and so on."""
    tree, found, todo = process_tree(), set(), [pid]
    while todo:
        for child in tree.get(todo.pop(), ()):
            found.add(child)
            todo.append(child)
    return found


def grandchildren(pid: int) -> set[int]:
    """The live children of the children of ``pid`` (a server's env processes, whose
    parent is its multiprocessing fork server)."""
    tree = process_tree()
    return {grandchild for child in tree.get(pid, ()) for grandchild in tree.get(child, ())}


def cpu_seconds(pid: int) -> float:
    """The CPU seconds ``pid`` has used (0 once it is gone), from /proc."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            utime, stime = stat.read().rsplit(")", 1)[1].split()[11:13]
    except OSError:
        return 0.0
    return (int(utime) + int(stime)) / os.sysconf("SC_CLK_TCK")


def process_gone(pid: int) -> bool:
    """``True`` once ``pid`` has exited (a zombie waiting for its reaper counts as gone)."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] == "Z"
    except (FileNotFoundError, ProcessLookupError):
        return True


@dataclass
class ServerProcesses:
    """A server process, and every process below it that has been seen (its fork server,
    resource tracker and env processes): what a test of process isolation watches, and
    kills by PID at its end (:meth:`kill_seen`)."""

    proc: subprocess.Popen
    url: str
    seen: set[int] = field(default_factory=set)

    def descendants(self) -> set[int]:
        """The live processes below the server."""
        found = descendants(self.proc.pid)
        self.seen |= found
        return found

    def env_processes(self) -> set[int]:
        """The env processes: the children of the server's children (of its fork server)."""
        found = grandchildren(self.proc.pid)
        self.seen |= found
        return found

    def spinning_env(self, start: Callable[[], object], timeout: float = 10.0) -> int:
        """Call ``start()``, and the pid of the env process that then spins (whose CPU
        time grows by half a second within ``timeout``)."""
        before = {pid: cpu_seconds(pid) for pid in self.env_processes()}
        start()
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for pid in self.env_processes():
                if cpu_seconds(pid) - before.get(pid, 0.0) > 0.5:
                    return pid
            time.sleep(0.05)
        raise AssertionError(f"no env process spins within {timeout} s")

    def health(self) -> dict:
        with urllib.request.urlopen(self.url + "/health", timeout=10) as response:
            return json.loads(response.read())

    def kill_seen(self) -> None:
        """SIGKILL every process seen below the server that still lives."""
        for pid in self.seen:
            if not process_gone(pid):
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)


def wait_until(condition, timeout: float = 10.0) -> bool:
    """Whether ``condition()`` holds within ``timeout`` seconds (polled every 50 ms)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.05)
    return condition()


def serve_args(port: int, *extra: str, env: str = "CartPole-v1") -> list[str]:
    """The command line serving ``env`` with ``openenv-gym serve`` on ``port``."""
    return [sys.executable, "-m", "openenv_gym.cli", "serve", env, "--port", str(port), *extra]


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
def server_process(
    args: list[str], url: str, timeout: float = 60.0, *, env: dict[str, str] | None = None
) -> Iterator[subprocess.Popen]:
    """Start a server subprocess, wait for /health, and always stop it by PID.

    ``env`` defaults to :func:`subprocess_env` (the tests' modules importable).
    """
    proc = subprocess.Popen(
        args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env or subprocess_env()
    )
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

