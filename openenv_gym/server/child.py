"""Servers in child processes that never outlive their owner.

    >>> with ChildServer("server.app:app", package="wrappers/cartpole") as server:   # doctest: +SKIP
    ...     env = openenv_gym.RemoteEnv(server.url)

A :class:`ChildServer` binds its port in this process (a port in use is a
:class:`~openenv_gym.errors.ListenError` here, before any process starts), starts a child
process that imports the app and serves it with uvicorn on that very socket, and returns
once ``/health`` answers 200. The app is ``module:attribute``: an ASGI app or, with
``factory_kwargs``, a callable that returns an ASGI app or a ``uvicorn.Server`` to run (the
catalog's built-in servers bring openenv-gym's uvicorn settings so). With ``package``, the
module is imported from an OpenEnv package directory, as its Dockerfile would
(:func:`import_app` says how).

The child runs this very file, by its path, with nothing of openenv-gym on ``sys.path``: any
interpreter that has uvicorn and the app's dependencies can run it, whether openenv-gym is
installed there or not. That is why the module imports only the standard library at the
top: the owner's imports of openenv-gym are inside :class:`ChildServer`.

The child never outlives its owner:

- :meth:`ChildServer.stop` (and the end of a ``with`` block) sends SIGTERM, waits, and kills
  if it must; a ``weakref.finalize`` does the same when the owner is garbage-collected and
  at interpreter exit.
- If the owning process dies without any of that (SIGKILL, a crash), the child notices
  within a tenth of a second: it watches its parent pid (a reparented child sees
  ``getppid()`` change) and the read end of a pipe whose only writer is the owner (the
  kernel closes it when the owner dies), and exits: gracefully if it can, within
  :data:`SHUTDOWN_GRACE` seconds regardless. ``PR_SET_PDEATHSIG`` is not used: it fires
  when the *thread* that started the child ends, which would kill a server created from a
  worker thread while its owner still uses it.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.machinery
import importlib.util
import json
import os
import selectors
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import traceback
import urllib.error
import urllib.request
import weakref
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

__all__ = ["ChildServer", "import_app", "SHUTDOWN_GRACE"]

#: Seconds between two looks of the child at its owner.
WATCH_INTERVAL = 0.1
#: Seconds the child's graceful shutdown may take once its owner is gone, before it exits anyway.
SHUTDOWN_GRACE = 5.0
#: Seconds :meth:`ChildServer.stop` waits after SIGTERM before it kills.
STOP_GRACE = 10.0
#: How the child runs this file: ``python -c BOOTSTRAP FILE ARGS...``. ``python FILE`` would put
#: this file's directory first on ``sys.path``, where ``http.py`` shadows the standard library's.
_BOOTSTRAP = (
    "import runpy, sys; del sys.path[0]; sys.argv[:] = sys.argv[1:]; "
    "runpy.run_path(sys.argv[0], run_name='__main__')"
)
#: The health checks go straight to the child, whatever proxy the environment names.
_DIRECT = urllib.request.build_opener(urllib.request.ProxyHandler({}))


# -- the owner's end ---------------------------------------------------------------------


class ChildServer:
    """An app served by uvicorn in a child process that never outlives this one.

    Starting it (the constructor) binds ``host``:``port`` (0: a free port), starts the child
    with ``python`` (default: this interpreter, which then also gets this process's
    ``sys.path``), ``env`` added to this process's environment, and waits up to
    ``startup_timeout`` seconds for ``/health``. The child's output goes to a temporary file
    (:meth:`logs`) unless ``capture_output`` is false, when it goes where this process's goes.
    Raises :class:`~openenv_gym.errors.EmbeddedServerError`, with the end of the child's log,
    when the child exits or does not answer in time.

    ``app``, ``factory_kwargs`` and ``package`` say what the child serves (see the module
    docstring); with ``package``, the child runs in that directory. ``log_level`` is
    uvicorn's, for an ASGI app (a factory's ``uvicorn.Server`` brings its own).

    ``url`` is the base URL, ``pid`` the child's pid, ``process`` its ``Popen``.
    :meth:`stop` is idempotent; ``with`` stops the server at the end of the block.
    """

    #: What errors call the server.
    label = "the server"

    def __init__(
        self,
        app: str,
        *,
        package: str | os.PathLike[str] | None = None,
        factory_kwargs: Mapping[str, Any] | None = None,
        python: str | None = None,
        env: Mapping[str, str] | None = None,
        host: str = "127.0.0.1",
        port: int = 0,
        startup_timeout: float = 60.0,
        capture_output: bool = True,
        log_level: str = "warning",
    ) -> None:
        from .listen import base_url, listening_socket

        self.app = app
        self.python = _interpreter(python)
        sock = listening_socket(host, port)
        self.port: int = sock.getsockname()[1]
        self.url = base_url(host, self.port)
        self._log = _Log() if capture_output else None
        lifeline_read, lifeline_write = os.pipe()
        command = [
            self.python, "-c", _BOOTSTRAP, os.path.abspath(__file__),
            "--owner-pid", str(os.getpid()),
            "--lifeline-fd", str(lifeline_read),
            "--socket-fd", str(sock.fileno()),
            "--app", app,
            "--log-level", log_level,
        ]
        root = None if package is None else Path(package).resolve()
        if root is not None:
            command += ["--package", str(root)]
        if factory_kwargs is not None:
            command += ["--factory-kwargs", json.dumps(dict(factory_kwargs))]
        for entry in _inherited_path(self.python):
            command += ["--path", entry]
        output = None if self._log is None else self._log.file
        try:
            self.process = subprocess.Popen(
                command, cwd=root, env={**os.environ, **(env or {})}, stdin=subprocess.DEVNULL,
                stdout=output, stderr=None if output is None else subprocess.STDOUT,
                pass_fds=(lifeline_read, sock.fileno()),
            )
        except BaseException:
            os.close(lifeline_write)
            if self._log is not None:
                self._log.close()
            raise
        finally:
            os.close(lifeline_read)
            sock.close()  # the child holds the listening socket now
        self.pid = self.process.pid
        self._finalizer = weakref.finalize(self, _shutdown, self.process, lifeline_write, self._log)
        try:
            self._wait_healthy(startup_timeout)
        except BaseException:
            self.stop()
            raise

    @property
    def running(self) -> bool:
        return self.process.poll() is None

    def logs(self, max_bytes: int = 65536) -> str:
        """The last ``max_bytes`` of the child's output (also once stopped; empty when the
        output is not captured)."""
        return "" if self._log is None else self._log.tail(max_bytes)

    def wait(self, timeout: float | None = None) -> int:
        """Wait for the child to exit (see ``Popen.wait``) and return its exit status."""
        return self.process.wait(timeout)

    def stop(self) -> None:
        """Stop the server and wait for its process to end (idempotent)."""
        self._finalizer()

    def __enter__(self) -> ChildServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def __repr__(self) -> str:
        state = "running" if self.running else f"exited {self.process.returncode}"
        return f"<{type(self).__name__} {self.app} {self.url} pid={self.pid} {state}>"

    def advice(self, log: str | None) -> str:
        """What to do when the server does not start, given the end of its log (``None``
        when its output is not captured); subclasses say more."""
        return ""

    def _wait_healthy(self, timeout: float) -> None:
        from ..errors import EmbeddedServerError

        deadline = time.monotonic() + timeout
        while True:
            if self.process.poll() is not None:
                raise EmbeddedServerError(self._failure(f"exited with status {self.process.returncode} during startup"))
            try:
                with _DIRECT.open(f"{self.url}/health", timeout=1.0) as response:
                    if response.status == 200:
                        return
            except (urllib.error.URLError, OSError):
                pass
            if time.monotonic() > deadline:
                raise EmbeddedServerError(self._failure(
                    f"did not answer /health within {timeout:g} s (pass a longer startup_timeout if it "
                    f"is slow to start)"
                ))
            time.sleep(0.05)

    def _failure(self, what: str) -> str:
        """Why the server did not start: ``what``, the end of its log, and :meth:`advice`."""
        if self._log is None:
            message, log = f"{self.label} {what} (its output is above)", None
        else:
            log = self._log.tail(4096)
            lines = log.strip().splitlines()[-20:]
            message = f"{self.label} {what}; its log ends with:\n" + "\n".join(f"    {line}" for line in lines)
            if not lines:
                message = f"{self.label} {what}, and logged nothing"
        advice = self.advice(log)
        return f"{message}\n{advice}" if advice else message


class _Log:
    """The child's output, in a temporary file; its end is kept once the file is closed."""

    def __init__(self) -> None:
        self.file = tempfile.TemporaryFile()
        self._kept = ""

    def tail(self, max_bytes: int) -> str:
        if self.file.closed:
            return self._kept[-max_bytes:]
        fd = self.file.fileno()
        size = os.fstat(fd).st_size
        start = max(0, size - max_bytes)
        # pread leaves the offset alone: the child writes through the same open file.
        return os.pread(fd, size - start, start).decode("utf-8", "replace")

    def close(self) -> None:
        if not self.file.closed:
            self._kept = self.tail(65536)
            self.file.close()


def _shutdown(process: subprocess.Popen, lifeline: int, log: _Log | None) -> None:
    """Cut the lifeline, SIGTERM, wait :data:`STOP_GRACE` seconds, then SIGKILL; reap the child."""
    os.close(lifeline)
    if process.poll() is None:
        try:
            process.send_signal(signal.SIGTERM)
            process.wait(STOP_GRACE)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(STOP_GRACE)
    if log is not None:
        log.close()


def _interpreter(python: str | None) -> str:
    """The absolute path of the interpreter ``python`` names (a path, or a name on ``PATH``)."""
    if python is None:
        return os.path.abspath(sys.executable)
    found = shutil.which(python)
    if found is None:
        raise FileNotFoundError(
            f"no Python interpreter at {python!r}: pass the path of one, such as /path/to/venv/bin/python"
        )
    return os.path.abspath(found)  # not realpath: a virtualenv's python is a symlink to its base


def _inherited_path(python: str) -> list[str]:
    """This process's ``sys.path`` when the child runs this interpreter: it then imports
    whatever this process imports (a test's directory, a path added at run time)."""
    if python != os.path.abspath(sys.executable):
        return []
    return [os.path.abspath(entry or os.curdir) for entry in sys.path]


# -- the app, imported as a server process imports it -------------------------------------


def import_app(app: str, package: str | os.PathLike[str] | None = None) -> Any:
    """The object ``app`` (``module:attribute``) names, imported as a server process does.

    Without ``package``, the module is imported from ``sys.path``. With ``package`` (an OpenEnv
    package directory), that directory goes first on ``sys.path`` and the module is imported

    1. top-level (``server.app``), which is what most OpenEnv Dockerfiles run
       (``cd /app/env && uvicorn server.app:app``; the package's ``__init__.py`` is not run);
    2. else as a submodule of the package (``grid_world_env.server.app``), the package loaded
       from the directory itself (never an installed distribution of the same name), which is
       what the Dockerfiles of packages that need it run. Only when step 1 fails because the
       module needs its package: an import beyond ``server/`` (``from ..models import``,
       "attempted relative import beyond top-level package") or of the package by its name
       (``from grid_world_env.models import``).

    Any other import error (a missing dependency) is raised as it is.

        >>> import_app("server.app:app", "/path/to/OpenEnv/envs/maze_env")   # doctest: +SKIP
        <fastapi.applications.FastAPI object at 0x...>
    """
    module_name, _, attribute = app.partition(":")
    if not module_name or not attribute:
        raise ValueError(f"an app is named 'module:attribute', not {app!r}")
    module = importlib.import_module(module_name) if package is None else _import_from_package(
        Path(package).resolve(), module_name
    )
    found: Any = module
    for part in attribute.split("."):
        try:
            found = getattr(found, part)
        except AttributeError:
            raise AttributeError(f"the module {module.__name__!r} has no attribute {attribute!r}") from None
    return found


def _import_from_package(root: Path, module_name: str) -> ModuleType:
    """``module_name`` of the package ``root`` (see :func:`import_app` for the order)."""
    if str(root) in sys.path:
        sys.path.remove(str(root))
    sys.path.insert(0, str(root))
    try:
        return importlib.import_module(module_name)
    except ImportError as exc:
        if not _needs_its_package(exc, root.name):
            raise
    _load_package(root)
    return importlib.import_module(f"{root.name}.{module_name}")


def _needs_its_package(error: ImportError, name: str) -> bool:
    """Whether ``error``, raised importing a module top-level, says it must be imported as
    part of the package ``name``."""
    if isinstance(error, ModuleNotFoundError):
        return error.name is not None and (error.name == name or error.name.startswith(f"{name}."))
    return "beyond top-level package" in str(error) or "with no known parent package" in str(error)


def _load_package(root: Path) -> None:
    """Import the directory ``root`` as the package named after it (a regular package, or a
    namespace package when it has no ``__init__.py``), whatever else ``sys.path`` holds."""
    name = root.name
    loaded = sys.modules.get(name)
    if loaded is not None:
        if str(root) in list(getattr(loaded, "__path__", [])):
            return
        raise ImportError(
            f"the package directory {root} has the name of the module {name!r}, which this "
            f"interpreter imported from {getattr(loaded, '__file__', None) or 'elsewhere'}: rename the directory"
        )
    spec = importlib.machinery.PathFinder.find_spec(name, [str(root.parent)])
    if spec is None:
        raise ImportError(f"{root} cannot be imported as the package {name!r}", name=name)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        if spec.loader is not None:
            spec.loader.exec_module(module)
    except BaseException:
        sys.modules.pop(name, None)
        raise


# -- the child's end: ``python -c BOOTSTRAP child.py ...`` --------------------------------


def _watch_owner(owner_pid: int, lifeline: int, servers: list) -> None:
    """Stop the server (and, failing that, the process) once the owner is gone."""
    with selectors.DefaultSelector() as selector:
        selector.register(lifeline, selectors.EVENT_READ)
        while os.getppid() == owner_pid and not selector.select(WATCH_INTERVAL):
            pass
    if not servers:  # still importing the app: nothing to shut down gracefully
        os._exit(0)
    servers[0].should_exit = True
    deadline = threading.Timer(SHUTDOWN_GRACE, os._exit, args=(0,))
    deadline.daemon = True  # fires even while the interpreter waits for the app's own threads
    deadline.start()


def _print_import_error(error: BaseException) -> None:
    """``error``'s traceback on stderr, without the frames of this file and of importlib."""
    report = traceback.TracebackException.from_exception(error)
    report.stack = traceback.StackSummary.from_list([
        frame for frame in report.stack
        if frame.filename not in (__file__, importlib.__file__) and not frame.filename.startswith("<frozen importlib")
    ])
    print("".join(report.format()), end="", file=sys.stderr)


def main(argv: Sequence[str] | None = None) -> int:
    """The child: watch the owner, import the app, serve it on the inherited socket."""
    parser = argparse.ArgumentParser(prog="openenv-gym child server")
    parser.add_argument("--owner-pid", type=int, required=True)
    parser.add_argument("--lifeline-fd", type=int, required=True)
    parser.add_argument("--socket-fd", type=int, required=True)
    parser.add_argument("--app", required=True)
    parser.add_argument("--package", default=None)
    parser.add_argument("--factory-kwargs", type=json.loads, default=None)
    parser.add_argument("--path", action="append", default=[])
    parser.add_argument("--log-level", default="warning")
    args = parser.parse_args(argv)
    if os.getppid() != args.owner_pid:  # the owner died before we got here
        return 0
    servers: list = []
    threading.Thread(
        target=_watch_owner, args=(args.owner_pid, args.lifeline_fd, servers),
        name="openenv-gym owner watch", daemon=True,
    ).start()
    sys.path.extend([entry for entry in args.path if entry not in sys.path])
    where = f" of the package {args.package}" if args.package else ""
    try:
        import uvicorn

        app = import_app(args.app, args.package)
        if args.factory_kwargs is not None:
            app = app(**args.factory_kwargs)
    except Exception as exc:  # noqa: BLE001 - every failure to import is reported, then the exit status
        _print_import_error(exc)
        print(f"openenv-gym: cannot import the app {args.app}{where} with {sys.executable}: "
              f"{type(exc).__name__}: {exc}", file=sys.stderr, flush=True)
        return 1
    sock = socket.socket(fileno=args.socket_fd)
    if isinstance(app, uvicorn.Server):
        server = app
    else:
        host, port = sock.getsockname()[:2]
        server = uvicorn.Server(uvicorn.Config(
            app, host=host, port=port, log_level=args.log_level, timeout_graceful_shutdown=int(SHUTDOWN_GRACE),
        ))
    servers.append(server)
    server.run(sockets=[sock])
    return 0 if server.started else 3  # 3: uvicorn's own status for an app that failed to start


if __name__ == "__main__":
    sys.exit(main())
