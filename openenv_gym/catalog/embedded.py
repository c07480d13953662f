"""Embedded servers: a catalog env's built-in server, in a child process it owns.

    >>> server = EmbeddedServer.start("chess")          # doctest: +SKIP
    >>> server.url                                      # doctest: +SKIP
    'http://127.0.0.1:40123'
    >>> server.stop()                                   # doctest: +SKIP

The child (``python -m openenv_gym.catalog._serve NAME``) binds a free port on
127.0.0.1, prints it once it listens, and serves until told to stop. It never
outlives its owner:

- :meth:`EmbeddedServer.stop` (called by the env's ``close()``) sends SIGTERM,
  waits, and kills if it must; a ``weakref.finalize`` does the same when the
  owner is garbage-collected and at interpreter exit.
- If the owning process dies without any of that (SIGKILL, a crash), the child
  notices within a fraction of a second: it watches its parent pid (a
  reparented child sees ``getppid()`` change) and the read end of a pipe whose
  only writer is the owner (the kernel closes it when the owner dies), and
  exits. ``PR_SET_PDEATHSIG`` is not used: it fires when the *thread* that
  started the child ends, which would kill a server created from a worker
  thread while its owner still uses it.
"""

from __future__ import annotations

import json
import os
import selectors
import signal
import subprocess
import sys
import time
import weakref
from typing import Any

from ..errors import EmbeddedServerError

__all__ = ["EmbeddedServer", "EmbeddedServerError"]


class EmbeddedServer:
    """A built-in server running in a child process (see the module docstring).

    Build it with :meth:`start`; ``url`` is its base URL, ``pid`` the child's
    pid. :meth:`stop` is idempotent.
    """

    def __init__(self, process: subprocess.Popen, port: int, lifeline: int) -> None:
        self.process = process
        self.pid = process.pid
        self.port = port
        self.url = f"http://127.0.0.1:{port}"
        self._finalizer = weakref.finalize(self, _shutdown, process, lifeline)

    @classmethod
    def start(
        cls,
        name: str,
        *,
        env_kwargs: dict[str, Any] | None = None,
        max_sessions: int = 64,
        startup_timeout: float = 60.0,
    ) -> EmbeddedServer:
        """Start the built-in server of catalog env ``name`` and wait until it listens."""
        lifeline_read, lifeline_write = os.pipe()
        command = [
            sys.executable, "-m", "openenv_gym.catalog._serve", name,
            "--parent-pid", str(os.getpid()),
            "--lifeline-fd", str(lifeline_read),
            "--max-sessions", str(max_sessions),
            "--env-kwargs", json.dumps(env_kwargs or {}),
        ]
        try:
            process = subprocess.Popen(
                command, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                pass_fds=(lifeline_read,), text=True,
            )
        finally:
            os.close(lifeline_read)
        # Only this process holds the write end; it must not leak into other children.
        os.set_inheritable(lifeline_write, False)
        try:
            port = _read_port(process, startup_timeout, name)
        except BaseException:
            _shutdown(process, lifeline_write)
            raise
        return cls(process, port, lifeline_write)

    @property
    def running(self) -> bool:
        return self.process.poll() is None

    def stop(self) -> None:
        """Stop the server and wait for its process to end (idempotent)."""
        self._finalizer()

    def __enter__(self) -> EmbeddedServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def __repr__(self) -> str:
        state = "running" if self.running else f"exited {self.process.returncode}"
        return f"<EmbeddedServer {self.url} pid={self.pid} {state}>"


def _read_port(process: subprocess.Popen, timeout: float, name: str) -> int:
    """The port the child prints once it listens (``PORT <n>``)."""
    assert process.stdout is not None
    deadline = time.monotonic() + timeout
    with selectors.DefaultSelector() as selector:
        selector.register(process.stdout, selectors.EVENT_READ)
        while (left := deadline - time.monotonic()) > 0:
            if not selector.select(min(left, 0.5)):
                if process.poll() is not None:
                    break
                continue
            line = process.stdout.readline()
            if not line:
                break
            if line.startswith("PORT "):
                process.stdout.close()
                return int(line.split()[1])
    if process.poll() is not None:
        raise EmbeddedServerError(
            f"the embedded {name!r} server exited with status {process.returncode} during startup "
            f"(its error is printed above); pass base_url= to use a server you run yourself"
        )
    raise EmbeddedServerError(
        f"the embedded {name!r} server did not start within {timeout} s; pass base_url= to use "
        f"a server you run yourself"
    )


def _shutdown(process: subprocess.Popen, lifeline: int, grace: float = 5.0) -> None:
    """Cut the lifeline, SIGTERM, wait ``grace`` seconds, then SIGKILL; reap the child."""
    os.close(lifeline)
    if process.poll() is not None:
        return
    try:
        process.send_signal(signal.SIGTERM)
        process.wait(grace)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(grace)
    except ProcessLookupError:
        pass
