"""``gym.make("openenv/<Name>-v0", package=...)``: upstream's own package directory, started here
by its app (no Docker), configured by the entry's settings, stopped with the env; and
``RemoteEnv.action_masks()`` for sb3-contrib's MaskablePPO."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

from openenv_gym import catalog
from openenv_gym.catalog import CatalogEntry, Setting
from openenv_gym.errors import OpenEnvGymError
from tests.conftest import process_gone
from tests.server.test_package_server import write_package

pytest.importorskip("openenv")


@pytest.fixture
def counter_entry(monkeypatch):
    """A catalog entry for the test package, its greeting a setting read from COUNTER_GREETING."""
    entry = CatalogEntry("Counter", "counter_env", "counts to 3",
                         settings={"greeting": Setting("greeting", "COUNTER_GREETING")})
    monkeypatch.setitem(catalog._BY_NAME, "counter", entry)
    return entry


def test_make_starts_the_package_configures_it_and_stops_it(tmp_path, counter_entry):
    package = write_package(tmp_path)
    env = catalog.make("Counter", package=package, greeting="hello")
    pid = env.server.pid
    try:
        assert env.action_space == gym.spaces.Discrete(4)  # pydantic's ge=0, le=3
        obs, info = env.reset(seed=0)
        obs, reward, terminated, truncated, info = env.step(3)
        assert (reward, terminated) == (3.0, True) and obs["greeting"] == "hello"
    finally:
        env.close()
    assert process_gone(pid)


def test_make_vec_shares_the_package_server(tmp_path, counter_entry):
    package = write_package(tmp_path)
    vec = catalog.make_vec("Counter", num_envs=3, package=package)
    pid = vec.server.pid
    try:
        vec.reset(seed=0)
        _, rewards, terminations, _, _ = vec.step(np.array([1, 2, 3]))
        assert rewards.tolist() == [1.0, 2.0, 3.0] and terminations.tolist() == [False, False, True]
    finally:
        vec.close()
    assert process_gone(pid)


def test_package_refuses_what_configures_another_server(tmp_path, counter_entry):
    package = write_package(tmp_path)
    with pytest.raises(OpenEnvGymError, match="drop base_url="):
        catalog.make("Counter", package=package, base_url="http://127.0.0.1:9")
    with pytest.raises(OpenEnvGymError, match="pass package= too"):
        catalog.make("Counter", python="/usr/bin/python3")


def test_action_masks_follow_the_legal_actions():
    env = gym.make("openenv/Connect4-v0", view="raw")
    try:
        env.reset(seed=0)
        for column in (0, 0, 0, 0, 0, 0):  # fill column 0: it is no longer legal
            env.step(column)
        masks = env.unwrapped.action_masks()
        assert masks.dtype == bool and masks.tolist() == [False] + [True] * 6
    finally:
        env.close()
