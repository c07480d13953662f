"""The package's layering, read from its source with :mod:`ast`.

- **No import cycles** inside ``openenv_gym/``: every import of every module
  counts (at module level, inside functions, inside ``try``), except those
  under ``if TYPE_CHECKING:``, which never run. An import names the module it
  loads: ``from .. import spaces`` is an edge to the submodule
  ``openenv_gym.spaces``, ``from .. import __version__`` an edge to the package
  ``openenv_gym`` itself. The parent packages Python runs first
  (``openenv_gym/__init__.py`` before any submodule) are not edges: every
  module would otherwise depend on the package that re-exports it.
- **Layers**: each top-level part of the package (a module or subpackage of
  ``openenv_gym/``) imports only parts of the layers below its own, as
  :data:`LAYERS` draws them, top-down; parts of one layer are independent.
- **Only the protocol builds message envelopes** (see
  :func:`message_envelopes` for exactly what counts as one).
- **One table of vector backends** (:data:`~openenv_gym.server.backends.BACKENDS`):
  the names listed elsewhere (a ``Literal``, the CLI's choices) are its own.
"""

from __future__ import annotations

import argparse
import ast
import importlib
import pathlib
import pkgutil
from collections.abc import Iterator, Mapping, Sequence
from typing import get_args

import openenv_gym
from openenv_gym import protocol

PACKAGE = pathlib.Path(openenv_gym.__file__).parent
#: module -> {imported module: line of the first import}
Graph = Mapping[str, Mapping[str, int]]


def module_name(path: pathlib.Path) -> str:
    """``openenv_gym/server/app.py`` -> ``openenv_gym.server.app``; a package's
    ``__init__.py`` is the package."""
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def runtime_imports(tree: ast.AST) -> Iterator[ast.Import | ast.ImportFrom]:
    """Every import statement at any depth, but those under ``if TYPE_CHECKING:``
    (its ``else`` branch runs, so it counts)."""
    stack = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            stack.extend(node.orelse)
            continue
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            yield node
        stack.extend(ast.iter_child_nodes(node))


def imported_modules(name: str, is_package: bool, source: str, modules: set[str]) -> dict[str, int]:
    """The modules among ``modules`` that the module ``name`` imports, with the
    line of the first import of each (relative imports resolved)."""
    package = name if is_package else name.rpartition(".")[0]
    found: dict[str, int] = {}
    for node in runtime_imports(ast.parse(source)):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        else:
            if node.level:
                parts = package.split(".")
                base = ".".join(parts[: len(parts) - node.level + 1] + ([node.module] if node.module else []))
            else:
                base = node.module or ""
            # `from X import y`: y is the submodule X.y when there is one, else a name of X.
            targets = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules else base for alias in node.names]
        for target in targets:
            if target in modules and target != name:
                found.setdefault(target, node.lineno)
    return found


def import_graph() -> dict[str, dict[str, int]]:
    """The graph of imports between the modules of ``openenv_gym/``."""
    paths = {module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}
    modules = set(paths)
    return {
        name: imported_modules(name, path.name == "__init__.py", path.read_text(), modules)
        for name, path in paths.items()
    }


def find_cycle(graph: Graph) -> list[str] | None:
    """One cycle of ``graph`` as ``[a, b, ..., a]``, or ``None`` when it has none."""
    done: set[str] = set()
    for root in sorted(graph):
        if root in done:
            continue
        path: list[str] = [root]
        on_path = {root}
        branches = [iter(sorted(graph.get(root, {})))]
        while branches:
            target = next(branches[-1], None)
            if target is None:
                branches.pop()
                done.add(left := path.pop())
                on_path.discard(left)
            elif target in on_path:
                return path[path.index(target):] + [target]
            elif target not in done:
                path.append(target)
                on_path.add(target)
                branches.append(iter(sorted(graph.get(target, {}))))
    return None


def show_cycle(graph: Graph, cycle: list[str]) -> str:
    """Each import of the cycle as ``module:line -> module``."""
    return "\n".join(f"  {a}:{graph[a][b]} -> {b}" for a, b in zip(cycle, cycle[1:]))


def test_the_package_has_no_import_cycle():
    graph = import_graph()
    cycle = find_cycle(graph)
    assert cycle is None, "import cycle in openenv_gym/:\n" + show_cycle(graph, cycle)


def test_imports_resolve_to_the_module_they_load():
    modules = {
        "openenv_gym", "openenv_gym.spaces", "openenv_gym.protocol", "openenv_gym.protocol.vector",
        "openenv_gym.server", "openenv_gym.server.app", "openenv_gym.server.legacy",
        "openenv_gym.server.session", "openenv_gym.server.vector", "openenv_gym.errors",
    }
    source = """
from typing import TYPE_CHECKING
from .. import spaces, __version__
from ..protocol import vector as wire, Codec
from . import legacy
from .session import EnvHost
import openenv_gym.errors
if TYPE_CHECKING:
    from .app import create_app
else:
    import gymnasium
def later():
    from ..server import app
"""
    assert imported_modules("openenv_gym.server.vector", False, source, modules) == {
        "openenv_gym.spaces": 3,  # a submodule, not the package
        "openenv_gym": 3,  # __version__ is a name of the package itself
        "openenv_gym.protocol.vector": 4,
        "openenv_gym.protocol": 4,
        "openenv_gym.server.legacy": 5,
        "openenv_gym.server.session": 6,
        "openenv_gym.errors": 7,
        "openenv_gym.server.app": 13,  # inside a function: runs on the first call
    }
    # In a package's __init__, one dot is the package itself.
    assert imported_modules("openenv_gym.server", True, "from .app import x\nfrom . import legacy\n", modules) == {
        "openenv_gym.server.app": 1, "openenv_gym.server.legacy": 2,
    }


def test_a_cycle_is_found_and_shown_by_its_lines():
    graph = {"a": {"b": 3}, "b": {"c": 5, "d": 1}, "c": {"a": 7}, "d": {}}
    assert find_cycle(graph) == ["a", "b", "c", "a"]
    assert show_cycle(graph, ["a", "b", "c", "a"]) == "  a:3 -> b\n  b:5 -> c\n  c:7 -> a"
    assert find_cycle({"a": {"b": 1, "c": 1}, "b": {"c": 2}, "c": {}}) is None


# -- layers ---------------------------------------------------------------------------

#: The package's parts, top-down: a part imports only parts of the layers below its own.
#: ``__init__`` is the package's own module (``openenv_gym/__init__.py``).
LAYERS: tuple[tuple[str, ...], ...] = (
    ("__init__",),                              # the public names; registers the openenv/... ids
    ("cli", "registration"),                    # the command line; registering the Gymnasium ids
    ("kit", "ray", "catalog"),                  # tools, pools and catalogs of servers
    ("trl", "sb3", "skyrl", "verifiers", "envpool"),  # trainers' adapters; envpool: server/envpool.py by its public name
    ("server", "client"),                       # the two ends of the socket (server/envpool.py: EnvPool's adapter)
    ("fields", "text"),                         # named-field envs; text views
    ("protocol",),                              # every message, sans I/O
    ("spaces",),                                # values of spaces
    ("errors", "_extras", "_version", "_options", "_local", "_section"),  # what any part may use
)


def part(module: str) -> str:
    """The top-level part a module belongs to: ``openenv_gym.server.app`` -> ``server``,
    ``openenv_gym`` -> ``__init__``."""
    return module.partition(".")[2].partition(".")[0] or "__init__"


def layer_violations(graph: Graph, layers: Sequence[Sequence[str]]) -> list[str]:
    """Each import of ``graph`` from one part to another that is not in a layer below its
    own, as ``module:line -> module``."""
    depth = {name: i for i, layer in enumerate(layers) for name in layer}
    return [
        f"  {a}:{line} -> {b}"
        for a, targets in sorted(graph.items())
        for b, line in sorted(targets.items(), key=lambda target: target[1])
        if part(a) != part(b) and depth[part(b)] <= depth[part(a)]
    ]


def test_each_part_imports_only_the_layers_below_its_own():
    graph = import_graph()
    placed = [name for layer in LAYERS for name in layer]
    parts = {part(module) for module in graph}
    assert len(placed) == len(set(placed)), "LAYERS places each part once"
    assert set(placed) == parts, f"parts LAYERS does not place: {sorted(parts - set(placed))}; " \
        f"names in LAYERS that are no part: {sorted(set(placed) - parts)}"
    violations = layer_violations(graph, LAYERS)
    assert not violations, "imports against the layers (LAYERS, top-down):\n" + "\n".join(violations)


def test_a_layer_violation_is_found_and_shown_by_its_line():
    layers = (("top",), ("left", "right"), ("bottom",))
    graph = {
        "p.top": {"p.left": 1, "p.bottom.x": 2},  # down: fine
        "p.left.a": {"p.left.b": 3, "p.right": 4, "p.bottom": 5},  # within a part: fine; across a layer: not
        "p.bottom.x": {"p.top": 6},  # up
    }
    assert layer_violations(graph, layers) == ["  p.bottom.x:6 -> p.top", "  p.left.a:4 -> p.right"]
    assert part("openenv_gym.server.app") == "server" and part("openenv_gym") == "__init__"


# -- message envelopes ------------------------------------------------------------


def message_types() -> set[str]:
    """The ``type`` of every message class of every route, both ways."""
    for module in pkgutil.iter_modules(protocol.__path__):
        importlib.import_module(f"{protocol.__name__}.{module.name}")
    found: set[str] = set()
    pending: list[type] = [protocol.ClientMessage, protocol.ServerMessage]
    while pending:
        cls = pending.pop()
        pending.extend(cls.__subclasses__())
        if isinstance(getattr(cls, "type", None), str):
            found.add(cls.type)
    return found


def message_envelopes(source: str, types: set[str]) -> list[tuple[int, str]]:
    """``(line, code)`` of each message envelope built in ``source``.

    An envelope is a dict display ``{...}`` or a ``dict(...)`` call with a
    ``"type"`` key and either a ``"data"`` key (the envelope's shape, whatever
    the type) or a ``"type"`` that is a literal message type of the protocol
    (``"reset"``, ``"observation"``, ``"error"``, ``"vector_open"``, ...: ``close``
    and ``state`` carry no data). Other dicts with a ``"type"`` are left alone:
    JSON Schemas (``{"type": "string"}``), ASGI events (``{"type":
    "websocket.send", ...}``), space descriptions (``{"type": "Box", ...}``) and
    MCP content (``{"type": "text", ...}``) carry no ``data`` and no message type.
    """
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Dict):
            entries = {k.value: v for k, v in zip(node.keys, node.values) if isinstance(k, ast.Constant)}
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "dict":
            entries = {k.arg: k.value for k in node.keywords if k.arg is not None}
        else:
            continue
        kind = entries.get("type")
        if kind is None:
            continue
        if "data" in entries or (isinstance(kind, ast.Constant) and kind.value in types):
            found.append((node.lineno, ast.unparse(node)))
    return found


def test_only_the_protocol_builds_message_envelopes():
    types = message_types()
    assert {"reset", "step", "state", "close", "observation", "error", "vector_open", "vector_observation"} <= types
    built = [
        f"{path.relative_to(PACKAGE.parent)}:{line}: {code}"
        for path in sorted(PACKAGE.rglob("*.py"))
        if PACKAGE / "protocol" not in path.parents
        for line, code in message_envelopes(path.read_text(), types)
    ]
    assert not built, "message envelopes built outside openenv_gym/protocol/:\n" + "\n".join(built)


def test_the_envelope_check_tells_envelopes_from_other_typed_dicts():
    types = {"reset", "step", "state", "observation"}
    source = """
a = {"type": "reset", "data": {"seed": 1}}
b = {"type": "state"}
c = {"type": kind, "data": data}
d = dict(type="observation", data={})
e = {"type": "string", "maxLength": 3}
f = {"type": "websocket.send", "text": frame}
g = {"type": "Box", "shape": [2]}
h = {"type": "text", "text": "hello"}
i = {"type": kind}
"""
    assert [line for line, _ in message_envelopes(source, types)] == [2, 3, 4, 5]


# -- vector backends ----------------------------------------------------------------


def test_the_vector_backend_names_are_the_tables():
    """A new backend is a class and its row of BACKENDS; the Literal type and the CLI's
    ``--vector-backend`` (which ``--help`` lists without loading the server) name it too."""
    from openenv_gym.cli import _parser
    from openenv_gym.server.backends import AUTO, BACKENDS, CHOICES, VectorBackend

    assert CHOICES == (AUTO, *BACKENDS)
    assert get_args(VectorBackend) == CHOICES
    commands = next(action for action in _parser()._actions if isinstance(action, argparse._SubParsersAction))
    option = next(a for a in commands.choices["serve"]._actions if "--vector-backend" in a.option_strings)
    assert tuple(option.choices or ()) == CHOICES
    assert all(name == backend.name for name, backend in BACKENDS.items())
