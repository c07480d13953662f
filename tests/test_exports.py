"""The public names: what ``openenv_gym`` exports is what the docs promise, each
``__all__`` names what its module has, and importing the package stays light."""

from __future__ import annotations

import builtins
import importlib
import importlib.util
import pkgutil
import re
import subprocess
import sys
import types

import pytest

import openenv_gym
from openenv_gym import errors
from tests.conftest import ROOT, project_of, subprocess_env

#: Every name of ``openenv_gym.__all__`` and where it is defined (``module:attribute``,
#: or a module). A new export belongs here, and in the docs.
EXPORTS = {
    "RemoteEnv": "openenv_gym.client.remote_env:RemoteEnv",
    "RemoteVectorEnv": "openenv_gym.client.vector:RemoteVectorEnv",
    "RemoteAECEnv": "openenv_gym.client.multiagent:RemoteAECEnv",
    "RemoteParallelEnv": "openenv_gym.client.multiagent:RemoteParallelEnv",
    "ConnectOptions": "openenv_gym.client.options:ConnectOptions",
    "Reconnect": "openenv_gym.client.retry:Reconnect",
    "create_app": "openenv_gym.server.app:create_app",
    "serve": "openenv_gym.server.run:serve",
    "local_server": "openenv_gym.server.run:local_server",
    "ServeOptions": "openenv_gym.server.options:ServeOptions",
    "Limits": "openenv_gym.protocol.frames:Limits",
    "FieldsEnv": "openenv_gym.fields:FieldsEnv",
    "FieldsObservation": "openenv_gym.fields:FieldsObservation",
    "list_envs": "openenv_gym.catalog:list_envs",
    "errors": "openenv_gym.errors",
    "protocol": "openenv_gym.protocol",
    "spaces": "openenv_gym.spaces",
}

#: Names the README and the guides use, by the module they are imported from.
DOCUMENTED = {
    "openenv_gym": [
        "RemoteEnv", "RemoteVectorEnv", "RemoteAECEnv", "RemoteParallelEnv", "create_app", "serve",
        "local_server", "ServeOptions", "list_envs", "ConnectOptions", "Reconnect", "Limits", "FieldsEnv", "errors",
        "protocol", "spaces",
    ],
    "openenv_gym.protocol": ["codec_for", "Limits", "PROCESS_HEADER"],
    "openenv_gym.sb3": ["RemoteVecEnv"],
}

#: Modules ``import openenv_gym`` must not load: the server's and the optional frameworks'.
HEAVY = ("starlette", "uvicorn", "pettingzoo", "torch", "openenv_gym.server", "openenv_gym.client.multiagent")


def definition(path: str) -> object:
    module, _, attribute = path.partition(":")
    loaded = importlib.import_module(module)
    return getattr(loaded, attribute) if attribute else loaded


#: Modules of extras the ``test`` extra leaves out (too heavy for the suite), and the
#: module each needs.
OUTSIDE_TEST = {
    "openenv_gym.trl": "trl", "openenv_gym.skyrl": "skyrl_gym", "openenv_gym.ray": "ray",
    "openenv_gym.verifiers": "verifiers",
}


def all_modules() -> list[types.ModuleType]:
    """Every module of the package (each extra is installed where the suite runs, but
    those of :data:`OUTSIDE_TEST` only where they are: the core keeps no Ray or TRL dependency)."""
    names = [openenv_gym.__name__]
    names += [m.name for m in pkgutil.walk_packages(openenv_gym.__path__, f"{openenv_gym.__name__}.")]
    missing = [module for module, needs in OUTSIDE_TEST.items() if importlib.util.find_spec(needs) is None]
    names = [n for n in names if not any(n == m or n.startswith(f"{m}.") for m in missing)]
    return [importlib.import_module(name) for name in names]


@pytest.mark.parametrize("name", sorted(EXPORTS))
def test_each_export_is_the_documented_object(name):
    assert getattr(openenv_gym, name) is definition(EXPORTS[name])


def test_all_is_exactly_the_documented_exports_and_the_version():
    assert sorted(openenv_gym.__all__) == sorted([*EXPORTS, "__version__"])


def test_the_version_is_the_one_the_package_is_built_with():
    project = project_of(ROOT / "pyproject.toml")
    assert openenv_gym.__version__ == project["version"]


def test_limits_is_the_protocols():
    assert openenv_gym.Limits is openenv_gym.protocol.Limits


@pytest.mark.parametrize("module", sorted(DOCUMENTED))
def test_the_documented_names_stay_importable(module):
    loaded = importlib.import_module(module)
    missing = [name for name in DOCUMENTED[module] if not hasattr(loaded, name)]
    assert not missing, f"{module} no longer has {missing}"


def test_every_modules_all_lists_existing_names_once():
    wrong = []
    for module in all_modules():
        names = getattr(module, "__all__", None)
        if names is None:
            continue
        wrong += [f"{module.__name__}.{name}: missing" for name in names if not hasattr(module, name)]
        wrong += [f"{module.__name__}.{name}: listed twice" for name in set(names) if names.count(name) > 1]
    assert not wrong, "\n".join(wrong)


# -- the errors tree ---------------------------------------------------------------------

#: The exceptions raised from a module other than errors.py, by the public module they
#: stay importable from (the same class as ``openenv_gym.errors``').
RAISED_FROM = {
    "openenv_gym.text": ["ActionParseError"],
    "openenv_gym.spaces": ["SpaceValueError"],
    "openenv_gym.protocol.http": ["HttpError"],
    "openenv_gym.protocol.mcp": ["JsonRpcError"],
    "openenv_gym.server.execution": ["EnvCallInterrupted"],
    "openenv_gym.server.isolation": ["EnvCrashed"],
    "openenv_gym.kit": ["ProbeError"],
    "openenv_gym.ray": ["PoolCapacityError"],
}


def error_classes() -> dict[str, type[BaseException]]:
    """Every exception class ``openenv_gym.errors.__all__`` names."""
    return {
        name: value for name in errors.__all__
        if isinstance(value := getattr(errors, name), type) and issubclass(value, BaseException)
    }


def test_every_public_exception_of_the_package_is_in_the_errors_tree():
    """A public exception class anywhere in the package is ``openenv_gym.errors``' (defined
    there, named in its ``__all__``) and an :class:`~openenv_gym.errors.OpenEnvGymError`."""
    known = error_classes()
    stray = []
    for module in all_modules():
        for name, value in vars(module).items():
            if name.startswith("_") or not isinstance(value, type) or not issubclass(value, BaseException):
                continue
            if not value.__module__.startswith("openenv_gym"):
                continue  # a builtin or a framework's exception, imported
            if known.get(name) is not value or value.__module__ != errors.__name__:
                stray.append(f"{module.__name__}.{name} (defined in {value.__module__})")
    assert not stray, "exceptions outside openenv_gym.errors:\n" + "\n".join(stray)
    outside = [name for name, cls in known.items() if not issubclass(cls, errors.OpenEnvGymError)]
    assert not outside, f"exceptions of openenv_gym.errors outside OpenEnvGymError: {outside}"


@pytest.mark.parametrize("module", sorted(RAISED_FROM))
def test_each_error_stays_importable_where_it_is_raised(module):
    if module == "openenv_gym.ray" and importlib.util.find_spec("ray") is None:
        pytest.skip("ray is not installed")
    loaded = importlib.import_module(module)
    for name in RAISED_FROM[module]:
        assert getattr(loaded, name) is getattr(errors, name)


def drawn_tree() -> dict[str, tuple[str | None, set[str]]]:
    """The tree errors.py's docstring draws: each class's parent (``None`` for the root)
    and the other bases it names as ``(also X, Y)``."""
    lines = errors.__doc__.split("::", 1)[1].strip("\n").split("\n\n", 1)[0].splitlines()
    root = len(lines[0]) - len(lines[0].lstrip())
    tree: dict[str, tuple[str | None, set[str]]] = {lines[0].strip(): (None, set())}
    parents = [lines[0].strip()]
    for line in lines[1:]:
        branch = re.search(r"[├└]── (\w+)(.*)", line)
        if branch is None:
            continue  # a description going on from the line above
        name, rest = branch.groups()
        depth = (branch.start() - root) // 4 + 1
        del parents[depth:]
        also = re.match(r"\s*\(also ([\w., ]+)\)", rest)
        tree[name] = (parents[-1], set(also.group(1).split(", ")) if also else set())
        parents.append(name)
    return tree


def named_type(dotted: str) -> type:
    """The type ``ValueError`` or ``gymnasium.error.ClosedEnvironmentError`` names."""
    module, _, name = dotted.rpartition(".")
    return getattr(importlib.import_module(module) if module else builtins, name)


def test_the_drawn_tree_is_the_class_tree():
    """The docstring of errors.py draws every class of its ``__all__`` under its base, with
    the builtin and Gymnasium co-bases users catch it by."""
    tree, classes = drawn_tree(), error_classes()
    assert sorted(tree) == sorted(classes), "the drawing and errors.__all__ name different classes"
    for name, (parent, also) in tree.items():
        cls = classes[name]
        ours = [base for base in cls.__bases__ if base.__module__ == errors.__name__]
        assert [base.__name__ for base in ours] == ([parent] if parent else []), f"{name}'s base"
        others = {base for base in cls.__bases__ if base not in ours} - {Exception}
        assert others == {named_type(dotted) for dotted in also}, f"{name}'s other bases"


def test_an_unknown_name_is_an_attribute_error():
    with pytest.raises(AttributeError, match="no attribute 'RemoteEnvs'"):
        openenv_gym.RemoteEnvs  # noqa: B018


_LOADED = """
import sys
import openenv_gym
print(" ".join(m for m in sys.argv[1:] if m in sys.modules))
openenv_gym.create_app, openenv_gym.RemoteAECEnv
print(" ".join(m for m in sys.argv[1:] if m in sys.modules))
"""


def test_importing_the_package_loads_no_server_and_no_optional_framework():
    """In a fresh interpreter: ``import openenv_gym`` loads none of :data:`HEAVY`;
    the lazy names load the server and PettingZoo on first use."""
    proc = subprocess.run(
        [sys.executable, "-c", _LOADED, *HEAVY], capture_output=True, text=True, timeout=120, env=subprocess_env()
    )
    assert proc.returncode == 0, proc.stderr
    after_import, after_use = proc.stdout.splitlines()
    assert after_import == ""
    assert {"starlette", "uvicorn", "pettingzoo", "openenv_gym.server", "openenv_gym.client.multiagent"} <= set(
        after_use.split()
    )
