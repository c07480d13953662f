"""The public names: what ``openenv_gym`` exports is what the docs promise, each
``__all__`` names what its module has, and importing the package stays light."""

from __future__ import annotations

import importlib
import importlib.util
import pkgutil
import subprocess
import sys
import types

import pytest
import tomllib

import openenv_gym
from tests.conftest import ROOT, subprocess_env

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
    "openenv_gym.protocol": ["codec_for", "Limits", "PROCESS_TOKEN"],
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
OUTSIDE_TEST = {"openenv_gym.trl": "trl", "openenv_gym.skyrl": "skyrl_gym", "openenv_gym.ray": "ray"}


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
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
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
