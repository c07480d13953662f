"""Gymnasium env → openenv-gym server → RemoteEnv is the same env.

Gymnasium's own checkers are the judges: ``check_env`` on the remote env, and
``check_environments_match(local, remote)`` with identical seeds over
episodes with boundaries inside, in JSON and in msgpack.
"""

from __future__ import annotations

import subprocess
import sys

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env
from gymnasium.utils.env_match import check_environments_match

import openenv_gym
from tests.conftest import subprocess_env
from tests.envs import CompositeEnv

TAXI = "Taxi-v4" if "Taxi-v4" in gym.registry else "Taxi-v3"  # v4 from gymnasium 1.3

#: name -> (what the server serves, how to build the same env locally)
ENVS = {
    "CartPole-v1": ("CartPole-v1", lambda: gym.make("CartPole-v1")),
    "Pendulum-v1": ("Pendulum-v1", lambda: gym.make("Pendulum-v1")),
    "FrozenLake-v1": ("FrozenLake-v1", lambda: gym.make("FrozenLake-v1")),
    "Blackjack-v1": ("Blackjack-v1", lambda: gym.make("Blackjack-v1")),
    "Taxi": (TAXI, lambda: gym.make(TAXI)),
    "composite": (CompositeEnv, CompositeEnv),
}
ENCODINGS = ["json", "msgpack"]


@pytest.fixture(scope="module", params=sorted(ENVS))
def served(request):
    target, make_local = ENVS[request.param]
    with openenv_gym.local_server(target) as url:
        yield request.param, url, make_local


@pytest.mark.parametrize("encoding", ENCODINGS)
def test_check_env_passes_on_the_remote_env(served, encoding):
    name, url, _ = served
    with openenv_gym.RemoteEnv(url, encoding=encoding) as env:
        assert env.encoding == encoding
        check_env(env, skip_render_check=True)


@pytest.mark.parametrize("encoding", ENCODINGS)
def test_remote_trajectories_match_local_ones(served, encoding):
    name, url, make_local = served
    local = make_local()
    with openenv_gym.RemoteEnv(url, encoding=encoding) as remote:
        assert remote.observation_space == local.observation_space
        assert remote.action_space == local.action_space
        for seed in (0, 7):
            check_environments_match(local, remote, num_steps=400, seed=seed)
    local.close()


def test_registered_id_with_time_limit(cartpole_url):
    env = gym.make("openenv/Remote-v0", base_url=cartpole_url, max_episode_steps=25)
    try:
        check_env(env.unwrapped, skip_render_check=True)
        env.reset(seed=1)
        for step in range(25):
            _, _, terminated, truncated, _ = env.step(0 if step % 3 else 1)
            if terminated:
                break
        assert terminated or truncated
    finally:
        env.close()


_PREFIXED_MAKE = """
import sys
import gymnasium as gym
assert "openenv_gym" not in sys.modules
env = gym.make("openenv_gym:openenv/Remote-v0", base_url=sys.argv[1])
obs, info = env.reset(seed=0)
assert env.observation_space.contains(obs)
print(type(env.unwrapped).__name__, env.unwrapped.encoding)
env.close()
"""


def test_module_prefixed_id_needs_no_import(cartpole_url):
    """In a fresh interpreter that never imported openenv_gym, Gymnasium imports it
    for the ``openenv_gym:`` prefix and makes a working RemoteEnv."""
    proc = subprocess.run(
        [sys.executable, "-c", _PREFIXED_MAKE, cartpole_url],
        capture_output=True, text=True, timeout=120, env=subprocess_env(),
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["RemoteEnv", "msgpack"]


@pytest.mark.parametrize("encoding", ENCODINGS)
def test_render_over_the_wire(encoding):
    with openenv_gym.local_server(CompositeEnv, env_kwargs={"render_mode": "rgb_array"}) as url:
        with openenv_gym.RemoteEnv(url, encoding=encoding) as env:
            assert env.render_mode == "rgb_array"
            assert env.metadata["render_fps"] == 4
            env.reset(seed=0)
            env.step(env.action_space.sample())
            frame = env.render()
            assert isinstance(frame, np.ndarray) and frame.dtype == np.uint8
            assert frame.shape == (8, 8, 3) and frame[0, 0, 0] == 1
    with openenv_gym.local_server(CompositeEnv, env_kwargs={"render_mode": "ansi"}) as url:
        with openenv_gym.RemoteEnv(url, encoding=encoding) as env:
            env.reset(seed=0)
            assert env.render().startswith("position=")


def test_repr_names_the_server(cartpole_url):
    with openenv_gym.RemoteEnv(cartpole_url) as env:
        assert repr(env) == f"<RemoteEnv {env.base_url}>"


def test_reset_options_and_episode_id(cartpole_url):
    with openenv_gym.local_server(CompositeEnv) as url, openenv_gym.RemoteEnv(url) as env:
        obs, info = env.reset(seed=3, options={"length": 2, "episode_id": "mine"})
        assert info["options"] == {"length": 2}
        assert env.state() == {"episode_id": "mine", "step_count": 0, "env_id": None, "seed": 3}
        env.step(env.action_space.sample())
        _, _, _, truncated, _ = env.step(env.action_space.sample())
        assert truncated and env.state()["step_count"] == 2
        env.reset()
        state = env.state()
        assert state["episode_id"] != "mine" and state["seed"] is None


@pytest.mark.parametrize("encoding", ENCODINGS)
def test_returned_arrays_are_the_callers_to_write(encoding):
    """As from a local env: observations, info arrays and render frames are writable,
    though msgpack decodes them as read-only views of the received bytes."""

    def arrays(value):
        if isinstance(value, np.ndarray):
            yield value
        elif isinstance(value, dict):
            for item in value.values():
                yield from arrays(item)
        elif isinstance(value, tuple):
            for item in value:
                yield from arrays(item)

    with openenv_gym.local_server(CompositeEnv, env_kwargs={"render_mode": "rgb_array"}) as url:
        with openenv_gym.RemoteEnv(url, encoding=encoding) as env:
            obs, info = env.reset(seed=0)
            found = list(arrays((obs, info)))
            obs, *_, info = env.step(env.action_space.sample())
            found += list(arrays((obs, info))) + [env.render()]
            assert env.observation_space.contains(obs)
    assert len(found) >= 3
    for array in found:
        array[...] = array  # would raise "assignment destination is read-only"
        assert array.flags.writeable


def test_a_small_discrete_space_encodes_each_actions_step_once_per_codec(cartpole_url):
    """The frames of int actions are made once and reused; any other action (a numpy
    integer, which travels with its type; an int outside the space) is encoded each time,
    exactly as the general path encodes it."""
    env = openenv_gym.RemoteEnv(cartpole_url, encoding="msgpack")
    try:
        contract, codec = env.contract, env._session.codec
        general = codec.encode(contract.step_message(codec, 1).to_wire())
        first = contract.step_frame(codec, 1)
        assert first == general and contract.step_frame(codec, 1) is first
        typed = contract.step_frame(codec, np.int64(1))
        assert type(codec.decode(typed)["data"]["action"]) is np.int64
        assert contract.step_frame(codec, 7) is not contract.step_frame(codec, 7)  # outside Discrete(2)
        env.reset(seed=0)
        assert env.step(1)[0].shape == (4,) and env.step(np.int64(0))[0].shape == (4,)
        with pytest.raises(openenv_gym.errors.ValidationError):
            env.step(7)  # refused by the server, whichever way it was encoded
        assert env.step(0)[0].shape == (4,)  # and the session goes on
    finally:
        env.close()


def test_an_error_reply_is_typed_and_raised_not_read_as_an_observation(cartpole_url):
    env = openenv_gym.RemoteEnv(cartpole_url, encoding="msgpack")
    try:
        codec = env._session.codec
        error = {"type": "error", "data": {"message": "no", "code": "EXECUTION_ERROR"}}
        assert env.contract.read_decoded(codec, error) is None
        with pytest.raises(openenv_gym.errors.ExecutionError):
            env._session.typed(error)
    finally:
        env.close()
