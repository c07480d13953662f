"""Every extra works installed alone, as a user installs it.

The ``test`` extra installs everything, which hides what one extra lacks (a
``pygame`` that only ``test`` installed once broke ``gym.make("openenv/Chess-v0")``
on every fresh install). Here each extra goes into its own fresh virtualenv,
from a copy of the sources, and runs the README's snippets for it: the code
blocks marked ``<!-- extra: NAME -->`` (``core`` is the package without extras).
Each wrapper package in ``wrappers/`` is installed the same way, as its
Dockerfile installs it, and must serve.

These tests build virtualenvs and take minutes: they run only when asked for,
``pytest -m extras`` (``.ci/run`` does).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import openenv_gym
from tests.conftest import ROOT, free_port, package_source, project_of, server_process

pytestmark = [pytest.mark.extras, pytest.mark.timeout(900)]

#: Extras that exist for developers, not users.
DEVELOPER_EXTRAS = {"test", "bench"}
#: A server URL the README's client snippets use; replaced by a live server's.
README_URL = "http://127.0.0.1:8000"
WRAPPERS = sorted(p.name for p in (ROOT / "wrappers").iterdir() if (p / "pyproject.toml").exists())


def readme_snippets() -> dict[str, list[str]]:
    """The README's python blocks marked ``<!-- extra: NAME -->``, by NAME."""
    text = (ROOT / "README.md").read_text()
    snippets: dict[str, list[str]] = {}
    for name, code in re.findall(r"<!-- extra: (\w+) -->\n```python\n(.*?)```", text, re.S):
        snippets.setdefault(name, []).append(code)
    return snippets


def user_extras() -> list[str]:
    extras = project_of(ROOT / "pyproject.toml")["optional-dependencies"]
    return sorted(set(extras) - DEVELOPER_EXTRAS)


def fresh_venv(where: Path, *requirements: str) -> Path:
    """A new virtualenv holding ``requirements`` (and what they need), nothing else.

    This interpreter's pip installs into it (``pip --python``), without compiling
    bytecode: the environment is the same, built in a fraction of the time.
    """
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(where)], check=True, timeout=120)
    python = where / "bin" / "python"
    install = subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(python), "install", "-q", "--no-compile",
         "--disable-pip-version-check", *requirements],
        capture_output=True, text=True, timeout=900,
    )
    assert install.returncode == 0, f"pip install {' '.join(requirements)} failed:\n{install.stderr[-3000:]}"
    return python


@pytest.fixture(scope="module")
def source(tmp_path_factory) -> Path:
    return package_source(tmp_path_factory.mktemp("source") / "openenv-gym")


@pytest.fixture(scope="module")
def extra_venv(source, tmp_path_factory):
    """``extra_venv(name)``: the python of a fresh virtualenv with that extra alone
    (``"core"``: the package without extras), built once per module."""
    built: dict[str, Path] = {}

    def python(extra: str) -> Path:
        if extra not in built:
            requirement = str(source) if extra == "core" else f"{source}[{extra}]"
            built[extra] = fresh_venv(tmp_path_factory.mktemp(f"venv-{extra}"), requirement)
        return built[extra]

    return python


@pytest.fixture(scope="module")
def cartpole_server() -> str:
    with openenv_gym.local_server("CartPole-v1") as url:
        yield url


def test_every_user_extra_has_a_readme_snippet():
    assert set(readme_snippets()) == {"core", *user_extras()}


@pytest.mark.parametrize("extra", ["core", *user_extras()])
def test_the_extra_alone_runs_its_readme_snippets(extra, extra_venv, tmp_path, cartpole_server):
    python = extra_venv(extra)
    for number, code in enumerate(readme_snippets()[extra], 1):
        run = subprocess.run(
            [str(python), "-c", code.replace(README_URL, cartpole_server)],
            capture_output=True, text=True, timeout=600, cwd=tmp_path,
        )
        assert run.returncode == 0, f"snippet {number} of extra {extra!r} failed:\n{code}\n{run.stderr[-3000:]}"


def test_the_core_package_imports_no_server_code(extra_venv):
    python = extra_venv("core")
    code = (
        "import sys, openenv_gym\n"
        "loaded = sorted(m for m in ('starlette', 'uvicorn', 'pettingzoo', 'torch') if m in sys.modules)\n"
        "assert not loaded, loaded\n"
        "try:\n"
        "    openenv_gym.create_app\n"
        "except ImportError as exc:\n"
        "    print(exc)\n"
    )
    run = subprocess.run([str(python), "-c", code], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    assert "pip install 'openenv-gym[server]'" in run.stdout and "'starlette'" in run.stdout


@pytest.mark.parametrize("name", WRAPPERS)
def test_the_wrapper_installs_alone_and_serves(name, source, tmp_path):
    """As its Dockerfile does: ``pip install .`` in the package, then uvicorn
    ``server.app:app``. openenv-gym comes from these sources, not an index."""
    package = tmp_path / name
    shutil.copytree(ROOT / "wrappers" / name, package)
    python = fresh_venv(tmp_path / "venv", str(source), str(package))
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    # From outside the package and without the tests' PYTHONPATH: what serves is what was installed.
    command = [str(python), "-m", "uvicorn", "server.app:app", "--host", "127.0.0.1", "--port", str(port)]
    clean = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}
    with server_process(command, url, timeout=120, env=clean):
        env = openenv_gym.RemoteEnv(url)
        try:
            obs, info = env.reset(seed=0)
            assert env.observation_space.contains(obs)
            assert env.state()["step_count"] == 0
        finally:
            env.close()
