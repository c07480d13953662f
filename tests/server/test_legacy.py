"""Legacy Gym envs served with one call: a Gym 0.21-style class (no old gym
needed) here, and gym==0.26.2 from its own virtualenv (dependency isolation)."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
from gymnasium import spaces
from gymnasium.utils.env_checker import check_env

pytest.importorskip("shimmy")

import openenv_gym  # noqa: E402
from openenv_gym.server import legacy  # noqa: E402
from tests.conftest import free_port, package_source, server_process  # noqa: E402


class OldWalker:
    """A Gym 0.21-style env: ``seed()``, ``reset() -> obs``, ``step -> (obs, reward, done, info)``."""

    metadata = {"render.modes": ["ansi"]}

    def __init__(self, length: int = 8) -> None:
        self.length = length
        self.observation_space = spaces.Box(0.0, float(length), shape=(2,), dtype=np.float32)
        self.action_space = spaces.Discrete(3)
        self.seed()

    def seed(self, seed=None):
        self.rng = np.random.default_rng(seed)
        return [seed]

    def reset(self):
        self.position = float(self.rng.integers(0, self.length // 2))
        self.steps = 0
        return self._obs()

    def _obs(self):
        return np.array([self.position, self.length - self.position], dtype=np.float32)

    def step(self, action):
        self.position = float(np.clip(self.position + (int(action) - 1), 0, self.length))
        self.steps += 1
        at_goal = self.position >= self.length
        out_of_time = self.steps >= 50
        info = {"TimeLimit.truncated": True} if out_of_time and not at_goal else {}
        return self._obs(), (1.0 if at_goal else -0.1), at_goal or out_of_time, info

    def render(self, mode="ansi"):
        return "." * int(self.position) + "@"

    def close(self):
        pass


def test_gym21_env_is_detected():
    assert legacy.legacy_api(OldWalker()) == "v21"
    assert legacy.legacy_api(OldWalker) is None  # a class is a factory, not an env
    assert legacy.legacy_api(object()) is None


@pytest.mark.parametrize("encoding", ["msgpack", "json"])
def test_gym21_env_served_with_one_call_passes_check_env(encoding):
    with openenv_gym.local_server(OldWalker) as url:
        env = openenv_gym.RemoteEnv(url, encoding=encoding)
        try:
            check_env(env, skip_render_check=True)
            obs, info = env.reset(seed=3)
            assert env.observation_space.contains(obs)
            terminated = truncated = False
            for _ in range(60):
                obs, reward, terminated, truncated, info = env.step(2)
                if terminated or truncated:
                    break
            assert terminated and reward == 1.0
        finally:
            env.close()


def test_gym21_env_truncation_goes_through_shimmy():
    with openenv_gym.local_server(OldWalker) as url:
        env = openenv_gym.RemoteEnv(url)
        try:
            env.reset(seed=0)
            for _ in range(50):
                _, _, terminated, truncated, _ = env.step(0)
            assert truncated and not terminated
        finally:
            env.close()


def test_live_legacy_instances_are_refused_with_a_hint():
    with pytest.raises(TypeError, match="pass its class"):
        openenv_gym.create_app(OldWalker())


def test_missing_shimmy_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "shimmy.openai_gym_compatibility", None)
    with pytest.raises(ImportError, match=r"pip install 'openenv-gym\[legacy\]'"):
        openenv_gym.create_app(OldWalker)


def test_old_gym_ids_need_the_old_gym_package(monkeypatch):
    monkeypatch.setitem(sys.modules, "gym", None)
    with pytest.raises(ImportError, match="old 'gym' package"):
        openenv_gym.create_app("gym:CartPole-v1")


# -- dependency isolation: gym==0.26.2 (numpy<2) in its own virtualenv ----------

ISOLATION_TIMEOUT = 600


@pytest.fixture(scope="module")
def legacy_venv(tmp_path_factory) -> Path:
    """A virtualenv with gym==0.26.2, numpy<2, shimmy and openenv-gym[server].

    A failed install fails the tests that need it: the isolation they show
    must never go untested silently.
    """
    root = tmp_path_factory.mktemp("legacy")
    source = package_source(root / "source")
    venv = root / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    python = venv / "bin" / "python"
    install = subprocess.run(
        [str(python), "-m", "pip", "install", "-q", "--disable-pip-version-check",
         "gym==0.26.2", "numpy<2", "shimmy>=2.0", f"{source}[server]"],
        capture_output=True, text=True, timeout=ISOLATION_TIMEOUT,
    )
    assert install.returncode == 0, f"gym==0.26.2 could not be installed:\n{install.stderr[-2000:]}"
    return python


@pytest.mark.slow
@pytest.mark.timeout(ISOLATION_TIMEOUT + 300)
@pytest.mark.parametrize(
    "env", ["gym:CartPole-v1", "gym:FrozenLake-v1", "gym.envs.classic_control.cartpole:CartPoleEnv"]
)
def test_gym026_env_from_its_own_venv_passes_check_env_here(legacy_venv, env):
    script = textwrap.dedent("""
        import sys, gym, numpy
        assert gym.__version__ == "0.26.2" and numpy.__version__ < "2", (gym.__version__, numpy.__version__)
        import openenv_gym
        openenv_gym.serve(sys.argv[1], port=int(sys.argv[2]))
    """)
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    with server_process([str(legacy_venv), "-c", script, env, str(port)], url, timeout=120):
        remote = openenv_gym.RemoteEnv(url)
        try:
            check_env(remote, skip_render_check=True)
            obs, info = remote.reset(seed=0)
            assert remote.observation_space.contains(obs)
        finally:
            remote.close()
