"""OpenEnv packages, served from their own app without Docker.

    >>> with PackageServer("OpenEnv/envs/maze_env", python="/path/to/venv/bin/python") as server:  # doctest: +SKIP
    ...     env = openenv_gym.RemoteEnv(server.url)

An OpenEnv package is a directory with an ``openenv.yaml`` (whose ``app:`` names the app,
``server.app:app`` when it does not say), ``models.py`` and ``server/app.py``, which its
Dockerfile serves with uvicorn. A :class:`PackageServer` serves it as that Dockerfile does,
without the container: the package's app in a :class:`~openenv_gym.server.child.ChildServer`
(a child process on 127.0.0.1 that never outlives its owner), run in the package's
directory by the interpreter you name, this one by default. That interpreter must have the
package's dependencies (``openenv`` for upstream's envs, and the env's engine); uvicorn is
the only one it needs beyond those. :func:`~openenv_gym.server.child.import_app` says how
the app's module is imported (top-level ``server.app`` as most Dockerfiles run it, else
``<package>.server.app``).

:func:`~openenv_gym.local_server` and ``openenv-gym serve PACKAGE`` start one; so does the
validation kit's provider (:mod:`openenv_gym.kit.upstream`).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import TypeGuard

from .child import ChildServer

__all__ = ["PackageServer", "is_package", "package_app", "DEFAULT_APP"]

#: Where an OpenEnv package's app lives when ``openenv.yaml`` does not say.
DEFAULT_APP = "server.app:app"


def is_package(target: object) -> TypeGuard[str | os.PathLike[str]]:
    """``True`` when ``target`` is a path to a directory holding an ``openenv.yaml``."""
    return isinstance(target, (str, os.PathLike)) and (Path(target) / "openenv.yaml").is_file()


def package_app(root: str | os.PathLike[str]) -> str:
    """The ``module:attribute`` of the app a package serves (``app:`` of its ``openenv.yaml``)."""
    try:
        import yaml
    except ImportError as exc:
        raise ImportError(f"reading {root}/openenv.yaml needs PyYAML: pip install pyyaml") from exc

    manifest = yaml.safe_load((Path(root) / "openenv.yaml").read_text(encoding="utf-8")) or {}
    app = manifest.get("app", DEFAULT_APP) if isinstance(manifest, dict) else DEFAULT_APP
    if not isinstance(app, str) or ":" not in app:
        raise ValueError(f"{root}/openenv.yaml: 'app' must be 'module:attribute', not {app!r}")
    return app


class PackageServer(ChildServer):
    """The OpenEnv package ``root``'s own app, served in a child process (see the module docstring).

    ``env`` is added to the server's environment (the game an upstream env serves, say:
    ``{"OPENSPIEL_GAME": "catch"}``); ``python`` is the interpreter that runs it (default:
    this one). The other arguments are :class:`~openenv_gym.server.child.ChildServer`'s.
    When the server does not start, the :class:`~openenv_gym.errors.EmbeddedServerError`
    shows the end of its log (a ``ModuleNotFoundError``, say) and what to do.
    """

    def __init__(
        self,
        root: str | os.PathLike[str],
        *,
        env: Mapping[str, str] | None = None,
        python: str | None = None,
        host: str = "127.0.0.1",
        port: int = 0,
        startup_timeout: float = 30.0,
        capture_output: bool = True,
        log_level: str = "warning",
    ) -> None:
        if not is_package(root):
            raise FileNotFoundError(
                f"{root} is not an OpenEnv package: it has no openenv.yaml (the directory of an "
                f"env with openenv.yaml, models.py and server/app.py, such as OpenEnv's envs/maze_env)"
            )
        self.root = Path(root).resolve()
        self.label = f"the server of the package {root} ({package_app(root)})"
        super().__init__(
            package_app(root), package=self.root, python=python, env=env, host=host, port=port,
            startup_timeout=startup_timeout, capture_output=capture_output, log_level=log_level,
        )

    def advice(self, log: str | None) -> str:
        if log is not None and "ImportError" not in log and "ModuleNotFoundError" not in log:
            return ""
        python = self.python
        if (self.root / "pyproject.toml").is_file():
            install = f"{python} -m pip install -e {self.root}"
        elif (self.root / "server" / "requirements.txt").is_file():
            install = f"{python} -m pip install -r {self.root / 'server' / 'requirements.txt'}"
        else:
            install = f"{python} -m pip install <the packages it imports>"
        condition = "The" if log is not None else "If it could not import a module: the"
        return (
            f"{condition} package's dependencies (and uvicorn) must be importable by the "
            f"interpreter that runs it, {python}: install them there ({install}), or pass "
            f"python= (openenv-gym serve --python) an interpreter that has them."
        )
