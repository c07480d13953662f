"""Adapt Gymnasium's vector tests to ``RemoteVectorEnv``, mechanically, recording
every substitution.

    python -m tests.conformance.adapt GYMNASIUM_CHECKOUT OUT

``GYMNASIUM_CHECKOUT`` is a checkout of Gymnasium at the tag of the installed
version (``git clone --depth 1 --branch v1.2.3
https://github.com/Farama-Foundation/Gymnasium``). ``OUT`` receives:

- ``gymnasium_tests/``: Gymnasium's ``tests`` package, every module rewritten
  by :data:`RULES` and nothing else;
- ``pytest.ini``: Gymnasium's pytest settings, collecting ``tests/vector`` and
  ``tests/wrappers/vector`` only, with the :mod:`tests.conformance.plugin`
  plugin;
- ``substitutions.json``: every substitution made, as ``{"file", "line",
  "rule", "before", "after"}``.

The rules change names, never what a test does:

- ``package``: ``tests`` becomes ``gymnasium_tests`` in imports (this
  project's own test package is called ``tests`` too), in every module;
- in the modules of :data:`SUITES` only, ``make_vec``: ``gym.make_vec(`` becomes ``make_vec(`` (:func:`tests.conformance.remote.make_vec`);
- ``rebind``: after a module's last top-level import, one line imports
  :mod:`tests.conformance.remote`'s ``SyncVectorEnv`` / ``AsyncVectorEnv`` /
  ``make_vec`` over the names the module uses, so that every vector env the
  module makes is a ``RemoteVectorEnv`` serving the module's own env factories.
"""

from __future__ import annotations

import argparse
import ast
import json
import re
import shutil
from dataclasses import asdict, dataclass
from pathlib import Path

__all__ = ["RULES", "Substitution", "adapt", "main"]

#: The test directories collected, as Gymnasium's checkout names them.
SUITES = ("tests/vector", "tests/wrappers/vector")
#: The renamed test package.
PACKAGE = "gymnasium_tests"
#: What the ``rebind`` rule imports from.
REMOTE = "tests.conformance.remote"
#: Line rules: name -> (pattern, replacement).
RULES: dict[str, tuple[re.Pattern[str], str]] = {
    "package": (re.compile(r"^(\s*(?:from|import)\s+)tests(?=[.\s])"), rf"\1{PACKAGE}"),
    "make_vec": (re.compile(r"\b(?:gym|gymnasium)\.make_vec\("), "make_vec("),
}
#: Names of ``gymnasium.vector`` the ``rebind`` rule replaces.
VECTOR_ENVS = ("AsyncVectorEnv", "SyncVectorEnv")

_PYTEST_INI = """\
[pytest]
testpaths = {testpaths}
addopts = -p tests.conformance.plugin -p no:cacheprovider
filterwarnings =
    ignore::DeprecationWarning:gymnasium.*:
"""


@dataclass(frozen=True)
class Substitution:
    """One change to one line of one file (``line`` counts from 1 in the original)."""

    file: str
    line: int
    rule: str
    before: str
    after: str


def adapt_module(text: str, name: str) -> tuple[str, list[Substitution]]:
    """``text`` of the module ``name`` rewritten by the rules, and what changed.
    Modules outside :data:`SUITES` (the helpers they import) are only renamed."""
    lines = text.splitlines(keepends=True)
    changes: list[Substitution] = []
    uses_make_vec = False
    in_suites = name.startswith(tuple(f"{suite}/" for suite in SUITES))
    rules = RULES if in_suites else {"package": RULES["package"]}
    for index, line in enumerate(lines):
        new = line
        for rule, (pattern, replacement) in rules.items():
            replaced = pattern.sub(replacement, new)
            if replaced != new:
                uses_make_vec |= rule == "make_vec"
                changes.append(Substitution(name, index + 1, rule, new.rstrip("\n"), replaced.rstrip("\n")))
                new = replaced
        lines[index] = new
    rebound = (sorted(_vector_env_imports(text)) if in_suites else []) + (["make_vec"] if uses_make_vec else [])
    if rebound:
        after = _last_top_level_import(text)
        line = f"from {REMOTE} import {', '.join(rebound)}  # openenv-gym conformance: remote vector envs\n"
        lines.insert(after, line)
        changes.append(Substitution(name, after, "rebind", "", line.rstrip("\n")))
    return "".join(lines), changes


def _vector_env_imports(text: str) -> set[str]:
    """The names of :data:`VECTOR_ENVS` a module imports from ``gymnasium.vector``."""
    names = set()
    for node in ast.parse(text).body:
        if isinstance(node, ast.ImportFrom) and node.module == "gymnasium.vector":
            names |= {alias.name for alias in node.names if alias.name in VECTOR_ENVS and alias.asname is None}
    return names


def _last_top_level_import(text: str) -> int:
    """The line after which a module's last top-level import ends (0: none)."""
    ends = [node.end_lineno or 0 for node in ast.parse(text).body if isinstance(node, (ast.Import, ast.ImportFrom))]
    return max(ends, default=0)


def adapt(checkout: Path, out: Path) -> list[Substitution]:
    """Write the adapted suites of the Gymnasium ``checkout`` into ``out``."""
    source = checkout / "tests"
    if not (source / "vector").is_dir():
        raise SystemExit(f"{checkout} is not a Gymnasium checkout: it has no tests/vector")
    target = out / PACKAGE
    if target.exists():
        shutil.rmtree(target)
    changes: list[Substitution] = []
    for path in sorted(source.rglob("*")):
        relative = path.relative_to(source)
        if "__pycache__" in relative.parts or path.is_dir():
            continue
        destination = target / relative
        destination.parent.mkdir(parents=True, exist_ok=True)
        if path.suffix != ".py":
            shutil.copy2(path, destination)
            continue
        text, module_changes = adapt_module(path.read_text(), f"tests/{relative.as_posix()}")
        destination.write_text(text)
        changes.extend(module_changes)
    testpaths = " ".join(f"{PACKAGE}/{suite.removeprefix('tests/')}" for suite in SUITES)
    (out / "pytest.ini").write_text(_PYTEST_INI.format(testpaths=testpaths))
    (out / "substitutions.json").write_text(json.dumps([asdict(c) for c in changes], indent=1) + "\n")
    return changes


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("checkout", type=Path, help="a Gymnasium checkout at the installed version's tag")
    parser.add_argument("out", type=Path, help="where to write the adapted suites")
    args = parser.parse_args(argv)
    changes = adapt(args.checkout, args.out)
    by_rule: dict[str, int] = {}
    for change in changes:
        by_rule[change.rule] = by_rule.get(change.rule, 0) + 1
    print(f"{len(changes)} substitutions ({', '.join(f'{n} {r}' for r, n in sorted(by_rule.items()))}) -> {args.out}")


if __name__ == "__main__":
    main()
