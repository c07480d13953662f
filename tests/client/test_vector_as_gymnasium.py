"""RemoteVectorEnv does what Gymnasium's own vector envs do, where running
Gymnasium's test suites against it found that it did not: the errors raised
for wrong batches and after close, same-step autoreset of structured
observations, masked and autoreset resets, sub-env seeds, the attributes of
the sub-envs in sessions mode, and ``AsyncVectorEnv``'s API.

Every case runs against real servers on 127.0.0.1, in both modes; the
``several`` variants split the envs over two servers."""

from __future__ import annotations

import multiprocessing

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.vector import AutoresetMode

import openenv_gym
from openenv_gym.errors import ExecutionError, OpenEnvGymError
from tests.envs import FaultyEnv, GraphEnv, NumpyServedJaxEnv

MODES = ["batched", "sessions"]


@pytest.fixture(scope="module")
def cartpole():
    with openenv_gym.local_server("CartPole-v1", max_sessions=32) as url:
        yield url


def vector(url: str, mode: str, servers: int = 1, num_envs: int = 3, **kwargs) -> openenv_gym.RemoteVectorEnv:
    return openenv_gym.RemoteVectorEnv([url] * servers, num_envs, mode=mode, **kwargs)


@pytest.mark.parametrize("servers", [1, 2], ids=["one-server", "several"])
@pytest.mark.parametrize("mode", MODES)
def test_wrong_batches_raise_value_error_before_any_env_steps(cartpole, mode, servers):
    ref = gym.vector.SyncVectorEnv([lambda: gym.make("CartPole-v1")] * 3)
    envs = vector(cartpole, mode, servers)
    try:
        ref.reset(seed=5)
        envs.reset(seed=5)
        for wrong in (np.zeros(4, np.int64), np.zeros(2, np.int64), [0, 1]):
            with pytest.raises(ValueError, match="one per env"):
                envs.step(wrong)
        with pytest.raises(TypeError, match="batch of 3"):  # a scalar is no batch (Gymnasium: TypeError)
            envs.step(1)
        # No env stepped: the next step is the first, as for the reference.
        expected = ref.step(np.array([0, 1, 0]))[0]
        np.testing.assert_allclose(envs.step(np.array([0, 1, 0]))[0], expected)
    finally:
        envs.close()
        ref.close()


@pytest.mark.parametrize("mode", MODES)
def test_same_step_final_obs_of_a_graph_env_is_a_graph_instance(mode):
    with openenv_gym.local_server(GraphEnv, max_sessions=8) as url:
        envs = vector(url, mode, num_envs=2, autoreset_mode=AutoresetMode.SAME_STEP)
        try:
            envs.reset(seed=0)
            envs.step(np.array([0, 1]))
            _, _, terminations, _, infos = envs.step(np.array([1, 0]))
            assert terminations.all() and infos["_final_obs"].all()
            for final in infos["final_obs"]:
                assert isinstance(final, gym.spaces.GraphInstance)
                assert final in envs.single_observation_space
        finally:
            envs.close()


@pytest.mark.parametrize("mode", MODES)
def test_first_reset_with_an_all_true_mask_and_placeholder_actions_of_autoreset_envs(mode):
    with openenv_gym.local_server(GraphEnv, env_kwargs={"length": 1}, max_sessions=8) as url:
        envs = vector(url, mode, num_envs=2)
        try:
            envs.reset(seed=1, options={"reset_mask": np.array([True, True])})
            _, _, terminations, _, _ = envs.step(np.array([0, 1]))
            assert terminations.all()
            # Both envs are reset by this step: Gymnasium ignores their actions.
            _, rewards, _, _, _ = envs.step(np.array([7, -3]))
            assert (rewards == 0).all()
            with pytest.raises(openenv_gym.errors.ValidationError):  # not ignored any more
                envs.step(np.array([7, -3]))
        finally:
            envs.close()


@pytest.mark.parametrize("mode", MODES)
def test_np_random_seed_and_reset_mask_type(cartpole, mode):
    envs = vector(cartpole, mode)
    try:
        envs.reset(seed=42)
        assert envs.np_random_seed == (42, 43, 44)
        envs.reset(seed=[7, None, 9])
        assert envs.np_random_seed[0] == 7 and envs.np_random_seed[2] == 9
        with pytest.raises(TypeError, match="dtype"):
            envs.reset(options={"reset_mask": np.array([1, 0, 1])})
        with pytest.raises(TypeError, match="numpy array"):
            envs.reset(options={"reset_mask": [True, False, True]})
        with pytest.raises(ValueError, match="shape"):
            envs.reset(options={"reset_mask": np.array([True, False])})
    finally:
        envs.close()


@pytest.mark.parametrize("mode", MODES)
def test_errors_are_gymnasiums_too(cartpole, mode):
    envs = vector(cartpole, mode)
    envs.close()
    with pytest.raises(gym.error.ClosedEnvironmentError):
        envs.reset()
    with openenv_gym.local_server("Acrobot-v1") as other:
        with pytest.raises(RuntimeError, match="different spaces"):
            openenv_gym.RemoteVectorEnv([cartpole, other], 2, mode=mode)
    with openenv_gym.local_server(FaultyEnv) as faulty:
        envs = vector(faulty, mode, num_envs=1)
        try:
            envs.reset()
            with pytest.raises(RuntimeError, match="exploded") as info:  # the env's own type
                envs.step(np.array([1]))
            assert isinstance(info.value, ExecutionError)
        finally:
            envs.close()


@pytest.mark.parametrize("mode", MODES)
def test_async_vector_env_api(cartpole, mode):
    ref = gym.vector.SyncVectorEnv([lambda: gym.make("CartPole-v1")] * 3)
    envs = vector(cartpole, mode)
    try:
        with pytest.raises(gym.error.NoAsyncCallError):
            envs.step_wait()
        envs.reset_async(seed=3)
        with pytest.raises(gym.error.AlreadyPendingCallError):
            envs.step_async(np.zeros(3, np.int64))
        obs, _ = envs.reset_wait(timeout=10)
        np.testing.assert_allclose(obs, ref.reset(seed=3)[0])
        for _ in range(5):
            actions = ref.action_space.sample()
            envs.step_async(actions)
            with pytest.raises(gym.error.AlreadyPendingCallError):
                envs.reset()
            got = envs.step_wait(timeout=10)
            want = ref.step(actions)
            np.testing.assert_allclose(got[0], want[0])
            np.testing.assert_array_equal(got[2], want[2])
        with pytest.raises(ValueError):
            envs.step_async(np.zeros(2, np.int64))
        envs.step(np.zeros(3, np.int64))  # nothing left pending
        envs.step_async(np.zeros(3, np.int64))
        with pytest.warns(UserWarning, match="pending call to `step`"):
            envs.close()
    finally:
        envs.close()
        ref.close()


def test_wait_timeout_is_multiprocessing_timeout_error():
    from tests.envs import SlowEnv

    with openenv_gym.local_server(SlowEnv, env_kwargs={"delay": 0.5}, max_sessions=4) as url:
        envs = vector(url, "sessions", num_envs=1)
        try:
            envs.reset()
            envs.step_async(np.array([0]))
            with pytest.raises(multiprocessing.TimeoutError):
                envs.step_wait(timeout=0.05)
            envs.step_wait(timeout=10)  # still collected after the timeout
        finally:
            envs.close()


def test_jax_metadata_is_not_served_and_check_env_passes():
    from gymnasium.utils.env_checker import check_env

    with openenv_gym.local_server(NumpyServedJaxEnv) as url:
        env = openenv_gym.RemoteEnv(url)
        try:
            assert "jax" not in env.metadata
            check_env(env, skip_render_check=True)
        finally:
            env.close()


def test_stock_server_has_no_attribute_messages():
    from tests.conftest import asgi_server
    from tests.stock_server import make_app

    with asgi_server(make_app(max_concurrent_envs=4)) as url:
        envs = openenv_gym.RemoteVectorEnv(url, 2, mode="sessions")
        try:
            with pytest.raises(OpenEnvGymError, match="needs an openenv-gym server"):
                envs.call("get_wrapper_attr", "spec")
        finally:
            envs.close()


@pytest.mark.parametrize("servers", [1, 2], ids=["one-server", "several"])
@pytest.mark.parametrize("mode", MODES)
def test_copy_false_observations_are_writable(cartpole, mode, servers):
    """copy=False hands out the batch itself, never a read-only view of a msgpack frame."""
    envs = vector(cartpole, mode, servers, copy=False, encoding="msgpack")
    try:
        obs, _ = envs.reset(seed=0)
        obs[0] = 0
        obs = envs.step(np.zeros(3, np.int64))[0]
        obs[0] = 0
    finally:
        envs.close()
