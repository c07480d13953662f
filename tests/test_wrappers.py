"""Every package in wrappers/ starts and passes ``openenv validate --url``."""

from __future__ import annotations

import contextlib
import importlib
import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import httpx
import pytest
import yaml
from openenv import GenericEnvClient

from tests.conftest import asgi_server, project_of

WRAPPERS = Path(__file__).resolve().parent.parent / "wrappers"
NAMES = sorted(p.name for p in WRAPPERS.iterdir() if (p / "openenv.yaml").exists())


def load_app(name: str):
    """Import wrappers/NAME/server/app.py as a package module (each wrapper's package is ``server``)."""
    package = f"openenv_wrapper_{name}"
    spec = importlib.util.spec_from_file_location(
        package, WRAPPERS / name / "server" / "__init__.py",
        submodule_search_locations=[str(WRAPPERS / name / "server")],
    )
    module = importlib.util.module_from_spec(spec)
    sys.modules[package] = module
    spec.loader.exec_module(module)
    return importlib.import_module(f"{package}.app")


def test_every_expected_wrapper_exists():
    assert {"cartpole", "frozenlake", "pendulum", "connect_four", "tictactoe",
            "legacy_gym21", "chess"} <= set(NAMES)


@pytest.mark.parametrize("name", NAMES)
def test_wrapper_layout(name):
    folder = WRAPPERS / name
    manifest = yaml.safe_load((folder / "openenv.yaml").read_text())
    validation = manifest.pop("validation")  # the RFC 008 kit: tests/kit/test_upstream.py
    assert manifest == {"spec_version": 1, "name": name, "type": "space", "runtime": "fastapi",
                        "app": "server.app:app", "port": 8000}
    assert validation["execution"]["probe_path"] == "validation/runtime.json"
    project = project_of(folder / "pyproject.toml")
    assert any(d.startswith("openenv-gym") for d in project["dependencies"])
    assert project["scripts"]["server"] == "server.app:main"
    readme = (folder / "README.md").read_text()
    front = yaml.safe_load(readme.split("---")[1])
    assert front["sdk"] == "docker" and front["app_port"] == 8000 and "openenv" in front["tags"]
    dockerfile = (folder / "Dockerfile").read_text()
    assert "EXPOSE 8000" in dockerfile and "/health" in dockerfile
    source = (folder / "server" / "app.py").read_text()
    assert source.count("openenv_gym.create_app(") == 1 and 'if __name__ == "__main__":' in source


@pytest.fixture(scope="module")
def served_wrappers():
    """Every wrapper app under uvicorn on 127.0.0.1, all stopped at the end."""
    with contextlib.ExitStack() as stack:
        apps = {name: load_app(name).app for name in NAMES}
        yield {name: (app, stack.enter_context(asgi_server(app))) for name, app in apps.items()}


@pytest.fixture(scope="module")
def validate_reports(served_wrappers):
    """What ``openenv validate --url URL`` reports for every wrapper: the validator the
    command runs (``openenv.cli._validation.validate_running_environment``), called here
    one wrapper after the other, so its imports are paid once."""
    from openenv.cli._validation import validate_running_environment

    return {name: validate_running_environment(url, timeout_s=30) for name, (_, url) in served_wrappers.items()}


def test_the_openenv_validate_command_passes_a_wrapper(served_wrappers):
    """The command itself, once: its exit status and its JSON report."""
    cli = os.path.join(os.path.dirname(sys.executable), "openenv")
    url = served_wrappers["cartpole"][1]
    proc = subprocess.run([cli, "validate", "--url", url, "--json"], capture_output=True, text=True, timeout=300)
    report = json.loads(proc.stdout[proc.stdout.index("{"):])
    assert proc.returncode == 0 and report["passed"] is True, proc.stdout + proc.stderr


@pytest.mark.parametrize("name", NAMES)
def test_wrapper_passes_openenv_validate(name, validate_reports):
    report = validate_reports[name]
    assert [c for c in report["criteria"] if not c["passed"]] == []
    assert report["passed"] is True


@pytest.mark.parametrize("name", NAMES)
def test_official_client_plays_each_wrapper(name, served_wrappers):
    app, url = served_wrappers[name]
    with GenericEnvClient(base_url=url).sync() as client:
        result = client.reset(seed=0)
        for _ in range(5):
            if result.done:
                break
            legal = result.observation.get("legal_actions")
            action = legal[0] if legal else app.state.openenv_gym.source.action_space.sample()
            result = client.step({"action": action.tolist() if hasattr(action, "tolist") else action})
        assert isinstance(result.observation["terminated"], bool)


@pytest.mark.parametrize("name", NAMES)
def test_each_wrapper_deploys_with_its_web_page(name, served_wrappers):
    """The page and upstream's /web routes answer, and the env's frames reach the page
    where the env renders (every wrapper but the legacy corridor, which draws nothing)."""
    _, url = served_wrappers[name]
    assert httpx.get(f"{url}/web/").status_code == 200
    about = httpx.get(f"{url}/web/about").json()
    assert about["renders"] is (name != "legacy_gym21"), about
    reply = httpx.post(f"{url}/web/reset", json={"seed": 0}).json()
    assert set(reply) == {"observation", "reward", "done"} and reply["observation"]["text"]
