"""Adapt Stable-Baselines3's VecEnv tests to :class:`~openenv_gym.sb3.RemoteVecEnv`,
mechanically, recording every substitution.

    python -m tests.conformance.sb3_adapt OUT [--source SB3_SDIST_DIR] [--run]

SB3's tests come from its sdist on PyPI at the installed version (the sdist
ships ``tests/``; SB3's git repository is out of CI's reach): without
``--source`` it is downloaded with ``pip download`` (see :func:`download_sdist`).
``OUT`` receives:

- ``sb3_tests/``: the modules of :data:`MODULES` and the helper modules they
  import, rewritten by the rules below and nothing else;
- ``pyproject.toml``: SB3's own, its pytest settings untouched but for two
  lines collecting ``sb3_tests`` with the :mod:`tests.conformance.plugin`
  plugin (rule ``pytest``);
- ``substitutions.json``: every substitution made, as ``{"file", "line",
  "rule", "before", "after"}`` (:mod:`tests.conformance.adapt`'s records).

The rules change names, never what a test does:

- ``package``: ``tests`` becomes ``sb3_tests`` in imports (this project's own
  test package is called ``tests`` too);
- ``rebind``: after a module's last top-level import, one line imports
  :mod:`tests.conformance.sb3_remote`'s ``DummyVecEnv`` / ``SubprocVecEnv`` /
  ``make_vec_env`` / ``check_env`` over those the module imports from SB3, so
  that every VecEnv the module makes is a ``RemoteVecEnv`` serving the
  module's own env factories, and every env ``check_env`` checks is a
  ``RemoteEnv`` serving the module's env.

``--run`` runs the adapted suite (in the variant of
:data:`~tests.conformance.sb3_remote.VARIANT_ENV`) and prints its outcomes.
"""

from __future__ import annotations

import argparse
import ast
import importlib.metadata
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from .adapt import Rebind, Substitution, package_rule, rewrite_module, summary, write_substitutions

__all__ = [
    "MODULES", "REBIND", "adapt", "download_sdist", "extract_sdist", "installed_version", "main", "run_suite",
    "sb3_source",
]

#: The distribution whose tests are adapted.
DISTRIBUTION = "stable_baselines3"
#: The test modules adapted, as the sdist names them.
MODULES = (
    "tests/test_vec_envs.py",
    "tests/test_vec_normalize.py",
    "tests/test_vec_monitor.py",
    "tests/test_vec_check_nan.py",
    "tests/test_env_checker.py",
)
#: The renamed test package (a directory: SB3's tests have no ``__init__.py``).
PACKAGE = "sb3_tests"
#: Line rules: name -> (pattern, replacement).
RULES = {"package": package_rule(PACKAGE)}
#: The ``rebind`` rule: SB3 names replaced, by the module a test imports them from.
REBIND = Rebind(
    "tests.conformance.sb3_remote",
    {
        "stable_baselines3.common.vec_env": ("DummyVecEnv", "SubprocVecEnv"),
        "stable_baselines3.common.vec_env.dummy_vec_env": ("DummyVecEnv",),
        "stable_baselines3.common.vec_env.subproc_vec_env": ("SubprocVecEnv",),
        "stable_baselines3.common.env_util": ("make_vec_env",),
        "stable_baselines3.common.env_checker": ("check_env",),
    },
    comment="openenv-gym conformance: remote VecEnvs and envs",
)
#: The lines the ``pytest`` rule adds to SB3's ``[tool.pytest.ini_options]``.
PYTEST_SECTION = "[tool.pytest.ini_options]"
PYTEST_LINES = (
    f'testpaths = ["{PACKAGE}"]',
    'addopts = "-p tests.conformance.plugin -p no:cacheprovider"',
)
#: The repository holding this project's ``tests`` package (the plugin and the replacements).
REPOSITORY = Path(__file__).resolve().parents[2]


def installed_version() -> str:
    """The installed Stable-Baselines3's version (whose tests are adapted)."""
    return importlib.metadata.version(DISTRIBUTION)


def download_sdist(version: str, directory: Path, timeout: float = 300.0) -> Path:
    """SB3's sdist of ``version`` in ``directory``: the one already there, else
    downloaded from PyPI with ``pip download`` (no dependencies, the sdist
    itself). ``RuntimeError`` when pip cannot get it.

    pip prepares the sdist's metadata after the download; with setuptools
    installed it does so without build isolation (which would first install
    setuptools from PyPI, some seconds more).
    """
    directory.mkdir(parents=True, exist_ok=True)
    found = _sdists(directory, version)
    if found:
        return found[0]
    command = [sys.executable, "-m", "pip", "download", f"{DISTRIBUTION}=={version}", "--no-deps",
               "--no-binary", ":all:", "--disable-pip-version-check", "-d", str(directory)]
    if importlib.util.find_spec("setuptools") is not None:
        command.append("--no-build-isolation")
    done = subprocess.run(command, capture_output=True, text=True, timeout=timeout, check=False)
    found = _sdists(directory, version)
    if done.returncode != 0 or not found:
        raise RuntimeError(
            f"pip download of {DISTRIBUTION}=={version}'s sdist failed (exit status {done.returncode}):\n"
            f"{done.stdout[-2000:]}{done.stderr[-2000:]}"
        )
    return found[0]


def _sdists(directory: Path, version: str) -> list[Path]:
    names = {f"{name}-{version}.tar.gz" for name in (DISTRIBUTION, DISTRIBUTION.replace("_", "-"))}
    return sorted(p for p in directory.iterdir() if p.name.lower() in names)


def extract_sdist(sdist: Path, directory: Path) -> Path:
    """Unpack ``sdist`` into ``directory``; the sdist's top directory (holding ``tests/``)."""
    with tarfile.open(sdist) as archive:
        if hasattr(tarfile, "data_filter"):  # Python >= 3.10.12: refuse links and paths out of directory
            archive.extractall(directory, filter="data")
        else:  # pragma: no cover - older Pythons
            archive.extractall(directory)  # noqa: S202 - PyPI's sdist of a pinned version
    roots = [p for p in directory.iterdir() if p.is_dir() and (p / "tests").is_dir()]
    if len(roots) != 1:
        raise RuntimeError(f"{sdist.name} has no single top directory holding tests/")
    return roots[0]


def sb3_source(cache: Path, version: str | None = None) -> Path:
    """The unpacked sdist of SB3 at ``version`` (the installed one by default),
    downloaded into ``cache`` (or found there) and unpacked beside it."""
    version = version or installed_version()
    sdist = download_sdist(version, cache)
    unpacked = cache / f"unpacked-{version}"
    if unpacked.is_dir():
        roots = [p for p in unpacked.iterdir() if (p / "tests").is_dir()]
        if len(roots) == 1:
            return roots[0]
        shutil.rmtree(unpacked)
    unpacked.mkdir()
    return extract_sdist(sdist, unpacked)


def _helpers(tests: Path, modules: Iterable[str]) -> list[str]:
    """The modules of ``tests`` (the sdist's ``tests/``) that ``modules`` import,
    directly or through each other, and its ``conftest.py`` / ``__init__.py``
    files, which pytest loads: their paths, ``tests/...``."""
    wanted = [f"tests/{p.relative_to(tests).as_posix()}" for p in tests.rglob("*.py")
              if p.name in ("conftest.py", "__init__.py")]
    seen = set(modules) | set(wanted)
    todo = list(seen)
    while todo:
        name = todo.pop()
        for found in _local_imports(tests, name):
            if found not in seen:
                seen.add(found)
                todo.append(found)
    return sorted(seen - set(modules))


def _local_imports(tests: Path, name: str) -> set[str]:
    """The files of ``tests`` that the module ``name`` (``tests/x.py``) imports:
    as ``tests.*``, relatively, or by a top-level name (pytest puts the
    directory of a test module without ``__init__.py`` on ``sys.path``)."""
    path = tests.parent / name
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            dotted = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:  # relative: from the module's package, up level - 1 packages
                package = path.parent.relative_to(tests).parts
                package = package[: max(len(package) - node.level + 1, 0)]
                base = ".".join(("tests", *package, *([base] if base else [])))
            dotted = [base] + [f"{base}.{alias.name}" for alias in node.names]
        else:
            continue
        for module in dotted:
            parts = module.split(".")
            parts = parts[1:] if parts[0] == "tests" else parts
            for candidate in (tests.joinpath(*parts).with_suffix(".py"), tests.joinpath(*parts, "__init__.py")):
                if parts and candidate.is_file():
                    found.add(f"tests/{candidate.relative_to(tests).as_posix()}")
    return found


def _pytest_config(text: str) -> tuple[str, list[Substitution]]:
    """SB3's ``pyproject.toml`` with :data:`PYTEST_LINES` after its pytest section's header."""
    lines = text.splitlines(keepends=True)
    headers = [i for i, line in enumerate(lines) if line.strip() == PYTEST_SECTION]
    if len(headers) != 1:
        raise RuntimeError(f"SB3's pyproject.toml has no single {PYTEST_SECTION} section")
    keys = {line.split("=", 1)[0].strip() for line in lines if "=" in line}
    if keys & {"testpaths", "addopts"}:
        raise RuntimeError("SB3's pytest settings set testpaths or addopts now: the pytest rule must change")
    at = headers[0] + 1
    lines[at:at] = [f"{line}\n" for line in PYTEST_LINES]
    changes = [Substitution("pyproject.toml", at, "pytest", "", line) for line in PYTEST_LINES]
    return "".join(lines), changes


def adapt(source: Path, out: Path) -> list[Substitution]:
    """Write the adapted suite of the unpacked SB3 sdist ``source`` into ``out``."""
    tests = source / "tests"
    missing = [m for m in MODULES if not (source / m).is_file()]
    if missing:
        raise SystemExit(f"{source} is not an SB3 source tree with its tests: {', '.join(missing)} missing")
    target = out / PACKAGE
    if target.exists():
        shutil.rmtree(target)
    changes: list[Substitution] = []
    for name in (*MODULES, *_helpers(tests, MODULES)):
        destination = target / Path(name).relative_to("tests")
        destination.parent.mkdir(parents=True, exist_ok=True)
        rebind = REBIND if name in MODULES else None
        text, module_changes = rewrite_module((source / name).read_text(), name, RULES, rebind)
        if rebind is not None and not any(c.rule == "rebind" for c in module_changes):
            raise RuntimeError(f"{name} imports none of the names rebound: adapted, it would test SB3's own VecEnvs")
        destination.write_text(text)
        changes.extend(module_changes)
    text, config_changes = _pytest_config((source / "pyproject.toml").read_text())
    (out / "pyproject.toml").write_text(text)
    changes.extend(config_changes)
    write_substitutions(out, changes)
    return changes


def run_suite(
    out: Path,
    *,
    variant: str | None = None,
    timeout: float = 900.0,
    case_timeout: float = 120.0,
    args: Iterable[str] = (),
) -> tuple[dict[str, dict[str, str]], subprocess.CompletedProcess[str]]:
    """Run the adapted suite in ``out`` in a pytest subprocess (at most
    ``timeout`` seconds, each case at most ``case_timeout``): every case's
    outcome (see :mod:`tests.conformance.plugin`), and the finished process."""
    from .sb3_remote import VARIANT_ENV

    outcomes = out / "outcomes.json"
    outcomes.unlink(missing_ok=True)
    path = [str(REPOSITORY), str(out), *filter(None, [os.environ.get("PYTHONPATH")])]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(path)}
    if variant is not None:
        env[VARIANT_ENV] = variant
    command = [sys.executable, "-m", "pytest", "-q", "-c", "pyproject.toml", "--rootdir", ".",
               f"--timeout={case_timeout:g}", f"--conformance-outcomes={outcomes}", *args]
    done = subprocess.run(command, cwd=out, env=env, capture_output=True, text=True, timeout=timeout, check=False)
    if not outcomes.is_file():
        raise RuntimeError(f"the adapted suite wrote no outcomes (exit status {done.returncode}):\n"
                           f"{done.stdout[-3000:]}{done.stderr[-3000:]}")
    return json.loads(outcomes.read_text()), done


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("out", type=Path, help="where to write the adapted suite")
    parser.add_argument("--source", type=Path, help="an unpacked SB3 sdist (default: download the installed version's)")
    parser.add_argument("--run", action="store_true", help="run the adapted suite and print its outcomes")
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    if args.source is None:
        args.source = sb3_source(Path(tempfile.gettempdir()) / "openenv-gym-sb3-sdist")
    print(f"{summary(adapt(args.source, args.out))} -> {args.out}")
    if args.run:
        outcomes, _ = run_suite(args.out)
        counts: dict[str, Any] = {}
        for nodeid, case in sorted(outcomes.items()):
            counts[case["outcome"]] = counts.get(case["outcome"], 0) + 1
            if case["outcome"] in ("failed", "error"):
                print(f"{case['outcome'].upper()} {nodeid}: {case['message']}")
        print(", ".join(f"{n} {outcome}" for outcome, n in sorted(counts.items())))


if __name__ == "__main__":
    main()
