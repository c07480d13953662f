"""An OpenEnv package served from its own directory, without Docker: ``local_server(PATH)``
and ``openenv-gym serve PATH``.

Each test writes a small OpenEnv package (``openenv.yaml``, ``models.py``, ``server/app.py``
on the real ``openenv`` package's ``create_app``) into a temporary directory, in the import
styles upstream's packages use, serves it, and plays it through openenv-gym's ``RemoteEnv``
and openenv's own ``GenericEnvClient``. The server runs in a child process: it must be gone
once the ``with`` block ends (also when the block raises), and within seconds of its owner
being killed by SIGKILL. Every process a test starts is stopped by PID at teardown, whatever
the test did.
"""

from __future__ import annotations

import json
import os
import selectors
import signal
import subprocess
import sys
import textwrap
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path

import gymnasium as gym
import pytest

import openenv_gym
from openenv_gym.errors import EmbeddedServerError
from tests.conftest import child_processes, free_port, process_gone, subprocess_env, wait_healthy, wait_until

pytest.importorskip("openenv")

#: The package's directory name (a package that imports itself by name needs it).
NAME = "counter_env"

MODELS = '''\
from pydantic import Field
from openenv.core.env_server.types import Action, Observation


class CountAction(Action):
    """Add ``increment`` to the count."""

    increment: int = Field(ge=0, le=3)


class CountObservation(Observation):
    """The count so far, and the server's greeting (the environment variable COUNTER_GREETING)."""

    count: int = 0
    greeting: str = ""
'''

ENVIRONMENT = '''\
import os
from uuid import uuid4

from openenv.core.env_server.interfaces import Environment
from openenv.core.env_server.types import State
{models}


class CounterEnvironment(Environment):
    """Counts up to 3: the episode ends there, each step rewarded by its increment."""

    SUPPORTS_CONCURRENT_SESSIONS = True

    def __init__(self):
        super().__init__()
        self.count = 0
        self._state = State(episode_id=str(uuid4()), step_count=0)

    def reset(self, seed=None, episode_id=None, **kwargs):
        self.count = 0
        self._state = State(episode_id=episode_id or str(uuid4()), step_count=0)
        return self._observation(reward=0.0)

    def step(self, action, timeout_s=None, **kwargs):
        self.count += action.increment
        self._state.step_count += 1
        return self._observation(reward=float(action.increment))

    def _observation(self, reward):
        return CountObservation(count=self.count, greeting=os.environ.get("COUNTER_GREETING", ""),
                                reward=reward, done=self.count >= 3)

    @property
    def state(self):
        return self._state
'''

APP = '''\
import os

from openenv.core.env_server import create_app
{models}
from .counter_environment import CounterEnvironment

app = create_app(CounterEnvironment, CountAction, CountObservation, env_name="counter_env",
                 max_concurrent_envs=4)


@app.get("/pid")
def pid():
    """The server's process id, for the tests to watch it."""
    return {{"pid": os.getpid()}}
'''

#: How a package's modules import its models, as upstream's packages do.
IMPORT_STYLES = {
    "relative": "from ..models import CountAction, CountObservation",  # grid_world_env, chess_env
    "top-level": "from models import CountAction, CountObservation",  # the fallback of most
    "by-name": f"from {NAME}.models import CountAction, CountObservation",  # coding_env
}


def write_package(parent: Path, style: str = "relative", *, app: str | None = None) -> Path:
    """An OpenEnv package ``parent / NAME`` whose modules import its models in ``style``
    (``app`` replaces its ``server/app.py``)."""
    root = parent / NAME
    (root / "server").mkdir(parents=True)
    (root / "openenv.yaml").write_text(
        f"spec_version: 1\nname: {NAME}\ntype: space\nruntime: fastapi\napp: server.app:app\nport: 8000\n"
    )
    (root / "__init__.py").write_text('"""The counter env."""\n')
    (root / "models.py").write_text(MODELS)
    (root / "server" / "__init__.py").write_text("")
    models = IMPORT_STYLES[style]
    (root / "server" / "counter_environment.py").write_text(ENVIRONMENT.format(models=models))
    (root / "server" / "app.py").write_text(APP.format(models=models) if app is None else app)
    return root


def get_json(url: str) -> dict:
    with urllib.request.urlopen(url, timeout=10) as response:
        return json.load(response)


def server_pid(url: str) -> int:
    return get_json(f"{url}/pid")["pid"]








def refused(url: str) -> bool:
    """``True`` when nothing answers at ``url`` any more."""
    try:
        urllib.request.urlopen(f"{url}/health", timeout=2).close()
    except urllib.error.URLError:
        return True
    return False


@pytest.fixture
def reap() -> Iterator[Callable[[int], None]]:
    """``reap(pid)``: that process is killed at teardown if it is still alive (a server
    whose owner a test killed, or any process a test started), whatever the test did."""
    pids: list[int] = []
    yield pids.append
    for pid in pids:
        if not process_gone(pid):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass


@pytest.fixture
def started(reap) -> Iterator[Callable[..., subprocess.Popen]]:
    """``started(argv, **popen)``: a process, stopped by PID at teardown (SIGTERM, then SIGKILL)."""
    processes: list[subprocess.Popen] = []

    def start(argv: list[str], **popen) -> subprocess.Popen:
        process = subprocess.Popen(argv, env=subprocess_env(), **popen)
        processes.append(process)
        return process

    yield start
    for process in processes:
        if process.poll() is None:
            process.terminate()
            try:
                process.wait(10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(10)


@pytest.mark.parametrize("style", list(IMPORT_STYLES))
def test_the_package_serves_its_own_app_to_both_clients(tmp_path, style):
    from openenv import GenericEnvClient

    package = write_package(tmp_path, style)
    with openenv_gym.local_server(package, env={"COUNTER_GREETING": f"hello {style}"}) as url:
        assert url.startswith("http://127.0.0.1:")
        assert get_json(f"{url}/health")["status"] == "healthy"
        schema = get_json(f"{url}/schema")
        assert set(schema["action"]["properties"]) == {"increment", "metadata"}
        assert {"count", "greeting"} <= set(schema["observation"]["properties"])

        env = openenv_gym.RemoteEnv(url)
        try:
            assert env.action_space == gym.spaces.Discrete(4)  # inferred: one field, 0 to 3
            obs, info = env.reset(seed=0)
            assert obs["count"] == 0 and obs["greeting"] == f"hello {style}"  # the env var reached it
            obs, reward, terminated, truncated, info = env.step(2)
            assert (obs["count"], reward, terminated, truncated) == (2, 2.0, False, False)
            obs, reward, terminated, truncated, info = env.step(1)
            assert (obs["count"], terminated) == (3, True)
        finally:
            env.close()

        with GenericEnvClient(base_url=url).sync() as client:
            result = client.reset(seed=0)
            assert result.observation["count"] == 0
            result = client.step({"increment": 3})
            assert (result.observation["count"], result.reward, result.done) == (3, 3.0, True)


def test_an_app_that_cannot_import_says_which_module_and_what_to_do(tmp_path):
    package = write_package(tmp_path, app="import counter_engine_not_installed\n")
    before = child_processes()
    with pytest.raises(EmbeddedServerError) as failure:
        with openenv_gym.local_server(package):
            pytest.fail("the server started")
    message = str(failure.value)
    assert "exited with status 1 during startup" in message
    assert "ModuleNotFoundError: No module named 'counter_engine_not_installed'" in message
    assert f"must be importable by the interpreter that runs it, {sys.executable}" in message
    assert "pass python=" in message
    assert child_processes() <= before  # no server left behind


def test_the_server_stops_when_the_block_ends_and_when_it_raises(tmp_path):
    package = write_package(tmp_path)
    with openenv_gym.local_server(package) as url:
        pid = server_pid(url)
        assert not process_gone(pid)
    assert process_gone(pid) and refused(url)

    with pytest.raises(RuntimeError, match="the body failed"):
        with openenv_gym.local_server(package) as url:
            pid = server_pid(url)
            raise RuntimeError("the body failed")
    assert process_gone(pid) and refused(url)


def test_the_server_dies_within_seconds_of_its_owner_killed_by_sigkill(tmp_path, started, reap):
    package = write_package(tmp_path)
    owner_script = textwrap.dedent("""
        import json, sys, time, urllib.request
        import openenv_gym

        with openenv_gym.local_server(sys.argv[1]) as url:
            with urllib.request.urlopen(url + "/pid", timeout=10) as response:
                print(json.load(response)["pid"], url, flush=True)
            time.sleep(120)
    """)
    owner = started([sys.executable, "-c", owner_script, str(package)], stdout=subprocess.PIPE, text=True)
    with selectors.DefaultSelector() as selector:
        selector.register(owner.stdout, selectors.EVENT_READ)
        assert selector.select(60), "the owner did not start its server within 60 s"
    pid_text, url = owner.stdout.readline().split()
    pid = int(pid_text)
    reap(pid)
    assert not process_gone(pid)

    owner.send_signal(signal.SIGKILL)
    owner.wait(10)
    assert wait_until(lambda: process_gone(pid), timeout=8), "the server outlived its owner"
    assert refused(url)


def test_openenv_gym_serve_serves_a_package_until_stopped(tmp_path, started, reap):
    package = write_package(tmp_path)
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    log = tmp_path / "serve.log"
    with log.open("w") as output:
        cli = started(
            [sys.executable, "-m", "openenv_gym.cli", "serve", str(package), "--port", str(port),
             "--server-env", "COUNTER_GREETING=from the command line"],
            stdout=output, stderr=subprocess.STDOUT,
        )
    wait_healthy(url, timeout=60, proc=cli)
    pid = server_pid(url)
    reap(pid)
    env = openenv_gym.RemoteEnv(url)
    try:
        obs, info = env.reset(seed=0)
        assert obs["greeting"] == "from the command line"
    finally:
        env.close()
    assert wait_until(lambda: f"serving package={package} url={url}" in log.read_text(), timeout=5), log.read_text()

    os.kill(cli.pid, signal.SIGTERM)
    assert cli.wait(20) == 0, log.read_text()
    assert process_gone(pid) and refused(url)


def test_serve_refuses_options_a_package_does_not_take(tmp_path):
    package = write_package(tmp_path)

    def serve(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "openenv_gym.cli", "serve", *args], capture_output=True,
                              text=True, timeout=60, env=subprocess_env())

    done = serve(str(package), "--max-sessions", "3", "--port", str(free_port()))
    assert done.returncode == 2 and "--max-sessions" in done.stderr and "own app configures" in done.stderr
    done = serve("CartPole-v1", "--python", sys.executable, "--port", str(free_port()))
    assert done.returncode == 2 and "for an OpenEnv package directory" in done.stderr
    done = serve(str(tmp_path), "--port", str(free_port()))  # a directory, but no package
    assert done.returncode == 1 and "without openenv.yaml" in done.stderr


def test_local_server_refuses_what_does_not_apply(tmp_path):
    package = write_package(tmp_path)
    with pytest.raises(TypeError, match="max_sessions do not apply"):
        with openenv_gym.local_server(package, max_sessions=3):
            pass
    with pytest.raises(TypeError, match="env= and python= are for an OpenEnv package"):
        with openenv_gym.local_server("CartPole-v1", env={"A": "1"}):
            pass
    with pytest.raises(FileNotFoundError, match="no Python interpreter at '/no/such/python'"):
        with openenv_gym.local_server(package, python="/no/such/python"):
            pass
    with pytest.raises(FileNotFoundError, match="no openenv.yaml"):
        with openenv_gym.local_server(tmp_path / "elsewhere"):
            pass
