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

The machinery is the adaptations' common one (:mod:`tests.conformance.sb3_adapt`
uses it for Stable-Baselines3's tests): a :class:`Substitution` per change,
line rules and a :class:`Rebind` applied by :func:`rewrite_module`, and
:func:`write_substitutions` writing ``substitutions.json``.
"""

from __future__ import annotations

import argparse
import ast
import json
import re
import shutil
from collections.abc import Collection, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

__all__ = [
    "RULES", "Rebind", "Substitution", "adapt", "main", "package_rule", "rewrite_module", "summary", "write_substitutions",
]

#: The test directories collected, as Gymnasium's checkout names them.
SUITES = ("tests/vector", "tests/wrappers/vector")
#: The renamed test package.
PACKAGE = "gymnasium_tests"
#: What the ``rebind`` rule imports from.
REMOTE = "tests.conformance.remote"


def package_rule(package: str) -> tuple[re.Pattern[str], str]:
    """The ``package`` line rule: ``tests`` becomes ``package`` in imports
    (``from tests.x import y``, ``import tests.x``)."""
    return re.compile(r"^(\s*(?:from|import)\s+)tests(?=[.\s])"), rf"\1{package}"


#: Line rules: name -> (pattern, replacement).
RULES: dict[str, tuple[re.Pattern[str], str]] = {
    "package": package_rule(PACKAGE),
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


@dataclass(frozen=True)
class Rebind:
    """The ``rebind`` rule of one adaptation: after a module's last top-level
    import, one line imports replacements over names the module uses.

    A name is rebound when the module imports it (without an alias) from one
    of the modules of ``imports``, or when a line rule of ``by_rule`` fired in
    it (that rule made the module use the name). Rebinding the name itself,
    rather than each use of it, keeps every use consistent: a class compared
    with ``==`` or tested with ``isinstance`` in the module is the one the
    module builds its objects from.
    """

    #: The module the rebinding line imports from.
    source: str
    #: ``module -> names``: the names rebound when imported from ``module``.
    imports: Mapping[str, Collection[str]]
    #: ``line rule -> name``: the name a line rule makes the module use.
    by_rule: Mapping[str, str] = field(default_factory=dict)
    #: The comment ending the rebinding line.
    comment: str = "openenv-gym conformance"


#: The ``rebind`` rule of the modules of :data:`SUITES`.
REBIND = Rebind(REMOTE, {"gymnasium.vector": VECTOR_ENVS}, {"make_vec": "make_vec"},
                "openenv-gym conformance: remote vector envs")


def rewrite_module(
    text: str,
    name: str,
    rules: Mapping[str, tuple[re.Pattern[str], str]],
    rebind: Rebind | None,
) -> tuple[str, list[Substitution]]:
    """``text`` of the module ``name`` with the line ``rules`` applied to each
    line and ``rebind``'s line added, and every change made (one
    :class:`Substitution` each)."""
    lines = text.splitlines(keepends=True)
    changes: list[Substitution] = []
    fired: list[str] = []
    for index, line in enumerate(lines):
        new = line
        for rule, (pattern, replacement) in rules.items():
            replaced = pattern.sub(replacement, new)
            if replaced != new:
                fired.append(rule)
                changes.append(Substitution(name, index + 1, rule, new.rstrip("\n"), replaced.rstrip("\n")))
                new = replaced
        lines[index] = new
    if rebind is None:
        return "".join(lines), changes
    rebound = sorted(_imported(text, rebind.imports))
    for rule in fired:
        added = rebind.by_rule.get(rule)
        if added is not None and added not in rebound:
            rebound.append(added)
    if rebound:
        after = _last_top_level_import(text)
        line = f"from {rebind.source} import {', '.join(rebound)}  # {rebind.comment}\n"
        lines.insert(after, line)
        changes.append(Substitution(name, after, "rebind", "", line.rstrip("\n")))
    return "".join(lines), changes


def adapt_module(text: str, name: str) -> tuple[str, list[Substitution]]:
    """``text`` of the Gymnasium test module ``name`` rewritten by the rules,
    and what changed. Modules outside :data:`SUITES` (the helpers they
    import) are only renamed."""
    if name.startswith(tuple(f"{suite}/" for suite in SUITES)):
        return rewrite_module(text, name, RULES, REBIND)
    return rewrite_module(text, name, {"package": RULES["package"]}, None)


def _imported(text: str, imports: Mapping[str, Collection[str]]) -> set[str]:
    """The names of ``imports`` a module imports (without an alias) from their modules."""
    names = set()
    for node in ast.parse(text).body:
        if isinstance(node, ast.ImportFrom) and node.module is not None and node.module in imports:
            wanted = imports[node.module]
            names |= {alias.name for alias in node.names if alias.name in wanted and alias.asname is None}
    return names


def _last_top_level_import(text: str) -> int:
    """The line after which a module's last top-level import ends (0: none)."""
    ends = [node.end_lineno or 0 for node in ast.parse(text).body if isinstance(node, (ast.Import, ast.ImportFrom))]
    return max(ends, default=0)


def write_substitutions(out: Path, changes: Sequence[Substitution]) -> None:
    """Write ``out/substitutions.json``: every change of an adaptation, in order."""
    (out / "substitutions.json").write_text(json.dumps([asdict(c) for c in changes], indent=1) + "\n")


def summary(changes: Sequence[Substitution]) -> str:
    """``"124 substitutions (3 make_vec, 100 package, 21 rebind)"``."""
    by_rule: dict[str, int] = {}
    for change in changes:
        by_rule[change.rule] = by_rule.get(change.rule, 0) + 1
    return f"{len(changes)} substitutions ({', '.join(f'{n} {r}' for r, n in sorted(by_rule.items()))})"


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
    write_substitutions(out, changes)
    return changes


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("checkout", type=Path, help="a Gymnasium checkout at the installed version's tag")
    parser.add_argument("out", type=Path, help="where to write the adapted suites")
    args = parser.parse_args(argv)
    print(f"{summary(adapt(args.checkout, args.out))} -> {args.out}")


if __name__ == "__main__":
    main()
