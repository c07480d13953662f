"""Upstream's validator (``openenv.validation``, openenv 0.10) without Docker.

``openenv validate`` starts a package through a *provider*; its only provider
builds and runs the package's Docker image. :class:`LocalProvider` serves the
package as its Dockerfile's ``CMD`` does, without the container: its own app, with
uvicorn, in the package directory, on 127.0.0.1, with this interpreter (a
:class:`~openenv_gym.server.package.PackageServer`), so upstream's real runtime
graders check the real server:

    >>> from openenv.validation import Level                     # doctest: +SKIP
    >>> report = validate("wrappers/cartpole", Level.RUNTIME)     # doctest: +SKIP
    >>> report.verdict                                             # doctest: +SKIP
    <Verdict.WARN: 'warn'>

It enforces no network policy and no resource limits: ``runtime.network_policy``
SKIPs naming the missing ``network_policy`` capability, as it does on any
provider without it. Needs ``openenv`` (``pip install 'openenv-gym[validate]'``).
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import time
from pathlib import Path
from typing import Any

from ..errors import EmbeddedServerError
from ..server.package import PackageServer

try:
    from openenv.validation import ExecResult, Level, ProviderCapability, ValidationReport, run_validation
    from openenv.validation.providers import StartupError
except ImportError as exc:  # pragma: no cover - the extra is missing
    raise ImportError(
        "upstream validation needs the openenv package: pip install 'openenv-gym[validate]'"
    ) from exc

__all__ = ["LocalProvider", "LocalSubject", "start_package", "validate"]


class LocalSubject:
    """A package's server running in a child process on 127.0.0.1 (upstream's ``RunningSubject``).

    ``server`` is the :class:`~openenv_gym.server.package.PackageServer`, ``process`` its ``Popen``.
    """

    def __init__(self, server: PackageServer) -> None:
        self.server = server
        self.process = server.process
        self.base_url = server.url

    def inspect(self) -> dict:
        return {"pid": self.process.pid, "base_url": self.base_url, "returncode": self.process.poll()}

    def logs(self, max_bytes: int = 65536) -> str:
        return self.server.logs(max_bytes)

    def exec(self, argv: list[str], timeout_s: float) -> ExecResult:
        """Run ``argv`` in the package directory (the sandbox here is the host: use with care)."""
        started = time.monotonic()
        done = subprocess.run(argv, cwd=self.server.root, capture_output=True, text=True, timeout=timeout_s)
        return ExecResult(done.returncode, done.stdout, done.stderr, time.monotonic() - started)

    def stop(self) -> None:
        """Stop the server (SIGTERM, then SIGKILL if it must) and wait for its process to end."""
        self.server.stop()


class LocalProvider:
    """An upstream ``ValidationProvider`` serving a package from its own directory.

    ``build`` installs nothing (the package's dependencies must already be in
    this interpreter's environment) and names the "image" by a digest of the
    package's ``openenv.yaml`` and app; ``start`` runs the app with uvicorn on a
    free loopback port and waits for ``/health``.
    """

    name = "openenv-gym-local"
    capabilities = frozenset({ProviderCapability.IMAGE_BUILD})
    #: Modes a run may declare. Loopback only, none of them enforced (no ``network_policy``).
    supported_network_modes = frozenset({"public", "no-network"})

    def __init__(self) -> None:
        self._roots: dict[str, Path] = {}

    def build(self, root: Path, execution: Any) -> str:
        digest = hashlib.sha256()
        for part in (root / "openenv.yaml", root / execution.dockerfile):
            if part.is_file():
                digest.update(part.read_bytes())
        digest.update(str(root.resolve()).encode())
        reference = "sha256:" + digest.hexdigest()
        self._roots[reference] = root
        return reference

    def start(self, spec: Any) -> LocalSubject:
        return start_package(self._roots[spec.image_ref], spec.startup_timeout_s, spec.env_vars)


def start_package(root: Path, startup_timeout_s: float = 30.0, env_vars: dict[str, str] | None = None) -> LocalSubject:
    """Start the package ``root``'s app as its Dockerfile does, on a free port of 127.0.0.1;
    return once ``/health`` answers 200. Raises upstream's ``StartupError`` otherwise, with
    the end of the server's log."""
    env = {"PYGAME_HIDE_SUPPORT_PROMPT": "1", **(env_vars or {})}
    try:
        return LocalSubject(PackageServer(root, env=env, startup_timeout=startup_timeout_s))
    except EmbeddedServerError as exc:
        raise StartupError(str(exc)) from exc


def validate(package: str | os.PathLike[str], level: Level = Level.RUNTIME) -> ValidationReport:
    """Upstream's ``run_validation`` on ``package`` up to ``level``, through :class:`LocalProvider`."""
    return run_validation(Path(package), max_level=level, provider=LocalProvider())
