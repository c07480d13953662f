#!/usr/bin/env python
"""Lines of latency machinery: the code whose only job is to make a fast env's remote step
cheaper, counted at two revisions (code lines only: no blank line, comment or docstring).

    python benchmarks/latency_lines.py 4609b25 HEAD

What counts, by file and top-level name (a class or function; ``*`` is the whole file):
every mechanism ``benchmarks/latency_mechanisms.py`` switches on and off (inline execution
and its promotion, the inline deadline, busy polling on both sides; the core a polling turn
offers is one line of ``_local.py``, not counted) and the short cuts of the native path
(answers begun in the callback that received their message, the plain step's shortest path
on both ends). A name missing at a revision counts 0. Prints a Markdown table: one row per piece, then the totals.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

#: (file, top-level name or "Class.method", what it is). ``*``: the whole module.
PIECES = [
    ("openenv_gym/server/latency.py", "*", "the server's mechanisms: policy, promotion, deadline, busy polling"),
    ("openenv_gym/server/polling.py", "*", "busy polling, before it joined latency.py"),
    ("openenv_gym/server/deadline.py", "*", "the inline deadline, before it joined execution.py"),
    ("openenv_gym/server/execution.py", "EnvCaller.call_inline", "an inline env call (its deadline, its promotion)"),
    ("openenv_gym/server/execution.py", "EnvCaller.__call__", "inline or on the thread"),
    ("openenv_gym/server/eager.py", "*", "answers begun in the callback that received their message"),
    ("openenv_gym/server/native.py", "NativeChannel.receive", "the native listener's answer at once"),
    ("openenv_gym/server/session.py", "Session.step_now", "the server's plain step"),
    ("openenv_gym/client/connection.py", "Connection._poll", "the client's busy polling"),
    ("openenv_gym/client/contract.py", "GymContract.step_frame", "the client's step frames, encoded once"),
    ("openenv_gym/client/contract.py", "GymContract.read_decoded", "the client's plain reply"),
    ("openenv_gym/client/framing.py", "ClientFraming.whole_message", "the client's read of one whole frame"),
]


def source_at(revision: str, path: str) -> str | None:
    """The file at ``revision`` (``None`` where it does not exist)."""
    shown = subprocess.run(["git", "show", f"{revision}:{path}"], cwd=ROOT, capture_output=True, text=True)
    return shown.stdout if shown.returncode == 0 else None


def code_lines(source: str, node: ast.AST | None = None) -> int:
    """Lines of ``node`` (the whole module: ``None``) that hold code: not blank, not a
    comment, not part of a docstring."""
    tree = ast.parse(source)
    node = node or tree
    docstrings: set[int] = set()
    for item in ast.walk(node):
        body = getattr(item, "body", None)
        if isinstance(body, list) and body and isinstance(body[0], ast.Expr):
            value = body[0].value
            if isinstance(value, ast.Constant) and isinstance(value.value, str):
                docstrings.update(range(body[0].lineno, body[0].end_lineno + 1))
    lines = source.splitlines()
    first = getattr(node, "lineno", 1)
    last = getattr(node, "end_lineno", len(lines))
    return sum(
        1 for number in range(first, last + 1)
        if number not in docstrings and lines[number - 1].strip() and not lines[number - 1].strip().startswith("#")
    )


def find(tree: ast.Module, name: str) -> ast.AST | None:
    """The top-level definition ``name`` (``Class.method`` for a method)."""
    parts = name.split(".")
    nodes: list[ast.stmt] = tree.body
    found: ast.AST | None = None
    for part in parts:
        found = next((n for n in nodes if isinstance(n, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
                      and n.name == part), None)
        if found is None:
            return None
        nodes = getattr(found, "body", [])
    return found


def count(revision: str, path: str, name: str) -> int:
    source = source_at(revision, path)
    if source is None:
        return 0
    if name == "*":
        return code_lines(source)
    node = find(ast.parse(source), name)
    return 0 if node is None else code_lines(source, node)


def main() -> int:
    before, after = (sys.argv[1:3] + ["HEAD"])[:2] if len(sys.argv) > 1 else ("4609b25", "HEAD")
    rows, totals = [], [0, 0]
    for path, name, what in PIECES:
        counts = [count(revision, path, name) for revision in (before, after)]
        if counts == [0, 0]:
            continue
        totals = [t + c for t, c in zip(totals, counts)]
        where = path if name == "*" else f"{path}: `{name}`"
        rows.append(f"| {what} | {where} | {counts[0]} | {counts[1]} |")
    print(f"| piece | where | lines at `{before}` | lines at `{after}` |")
    print("|---|---|---|---|")
    print("\n".join(rows))
    print(f"| **all** | | **{totals[0]}** | **{totals[1]}** |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
