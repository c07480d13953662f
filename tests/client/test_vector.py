"""RemoteVectorEnv against Gymnasium's SyncVectorEnv, stock OpenEnv servers, and slow envs.

The server's vector backends are in ``tests/server/test_vector.py``."""

from __future__ import annotations

import time

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.vector import AutoresetMode

import openenv_gym
from openenv_gym.errors import CapacityReachedError, OpenEnvGymError, ProtocolMismatchError
from tests.conftest import asgi_server
from tests.envs import CompositeEnv, SlowEnv
from tests.parity import run_parity

ENVS = {
    "CartPole-v1": lambda: gym.make("CartPole-v1"),
    "Acrobot-v1": lambda: gym.make("Acrobot-v1"),
    "Pendulum-v1": lambda: gym.make("Pendulum-v1"),
    "Composite": CompositeEnv,  # Dict observation with Box, MultiBinary, Tuple(Discrete, Text), Sequence
}
SERVED = {"Composite": CompositeEnv}
NUM_ENVS = 3
STEPS = 1000


@pytest.fixture(scope="module")
def servers():
    """One openenv-gym server per env, for the whole module."""
    import contextlib

    with contextlib.ExitStack() as stack:
        yield {
            name: stack.enter_context(openenv_gym.local_server(SERVED.get(name, name), max_sessions=64))
            for name in ENVS
        }


@pytest.mark.parametrize("autoreset", list(AutoresetMode), ids=lambda m: m.value)
@pytest.mark.parametrize("mode", ["batched", "sessions"])
@pytest.mark.parametrize("name", list(ENVS))
def test_parity_with_sync_vector_env(servers, name, mode, autoreset):
    ref = gym.vector.SyncVectorEnv([ENVS[name]] * NUM_ENVS, autoreset_mode=autoreset)
    envs = openenv_gym.RemoteVectorEnv(servers[name], NUM_ENVS, mode=mode, autoreset_mode=autoreset.value)
    try:
        assert envs.mode == mode
        assert envs.metadata["autoreset_mode"] is autoreset
        assert envs.single_observation_space == ref.single_observation_space
        assert envs.observation_space == ref.observation_space
        assert envs.action_space == ref.action_space
        ends = run_parity(envs, ref, autoreset, STEPS)
        assert ends >= 2, "the run must cross episode boundaries"
    finally:
        envs.close()
        ref.close()


@pytest.mark.parametrize("mode", ["batched", "sessions"])
def test_parity_over_json(servers, mode):
    """Exact types survive the JSON encoding too (type hints), final_obs included."""
    autoreset = AutoresetMode.SAME_STEP
    ref = gym.vector.SyncVectorEnv([CompositeEnv] * NUM_ENVS, autoreset_mode=autoreset)
    envs = openenv_gym.RemoteVectorEnv(servers["Composite"], NUM_ENVS, mode=mode, encoding="json",
                                       autoreset_mode=autoreset)
    try:
        assert run_parity(envs, ref, autoreset, 100) >= 2
    finally:
        envs.close()
        ref.close()


def test_auto_mode_many_servers_and_make_vec(servers):
    url = servers["CartPole-v1"]
    ref = gym.vector.SyncVectorEnv([ENVS["CartPole-v1"]] * 5)
    # Two servers (here: the same one twice), envs 0-2 on the first, 3-4 on the second.
    envs = gym.make_vec("openenv/Remote-v0", num_envs=5, vectorization_mode="vector_entry_point",
                        base_url=[url, url])
    try:
        assert isinstance(envs, openenv_gym.RemoteVectorEnv) and envs.mode == "batched"
        assert run_parity(envs, ref, AutoresetMode.NEXT_STEP, 200) >= 2
    finally:
        envs.close()
        ref.close()


@pytest.mark.parametrize("mode", ["batched", "sessions"])
def test_call_get_attr_set_attr_render(mode):
    """Both modes reach the sub-envs' attributes on an openenv-gym server
    (sessions mode through the attribute messages of /ws)."""
    with openenv_gym.local_server(CompositeEnv, env_kwargs={"render_mode": "rgb_array"}) as url:
        envs = openenv_gym.RemoteVectorEnv(url, 2, mode=mode)
        try:
            envs.reset(seed=0)
            assert envs.get_attr("render_mode") == ("rgb_array", "rgb_array")
            envs.set_attr("marker", [1, 2])
            assert envs.get_attr("marker") == (1, 2)
            envs.set_attr("marker", 7)
            assert envs.call("get_wrapper_attr", "marker") == (7, 7)
            assert envs.call("render")[0].shape == (8, 8, 3)
            frames = envs.render()
            assert len(frames) == 2 and frames[0].dtype == np.uint8
            with pytest.raises(openenv_gym.errors.ValidationError):
                envs.get_attr("__class__")
            with pytest.raises(openenv_gym.errors.ValidationError):
                envs.call("get_wrapper_attr", "_np_random")
            with pytest.raises(ValueError, match="one entry per env"):
                envs.set_attr("marker", [1, 2, 3])
        finally:
            envs.close()


def test_server_advertises_vector_and_refuses_bad_opens(servers):
    from openenv_gym.client.http import get_json

    schema = get_json(f"{servers['CartPole-v1']}/schema")
    assert schema["x-openenv-gym"]["vector"] == {"path": "/vector", "version": 1}
    with pytest.raises(ValueError, match="autoreset_mode"):
        openenv_gym.RemoteVectorEnv(servers["CartPole-v1"], 2, autoreset_mode="sometimes")


def test_capacity_error_up_front_openenv_gym_server():
    with openenv_gym.local_server("CartPole-v1", max_sessions=4) as url:
        for mode in ("batched", "sessions"):
            with pytest.raises(CapacityReachedError, match="--max-sessions 6") as info:
                openenv_gym.RemoteVectorEnv(url, 6, mode=mode)
            assert info.value.details["max_sessions"] == 4
        envs = openenv_gym.RemoteVectorEnv(url, 4)  # the refused sessions were all released
        envs.close()


# -- stock OpenEnv servers (the official openenv package) -------------------------


def test_stock_server_sessions_mode_steps_like_sync_vector_env():
    from tests.stock_server import make_app

    with asgi_server(make_app(max_concurrent_envs=8)) as url, asgi_server(make_app(max_concurrent_envs=8)) as ref_url:
        envs = openenv_gym.RemoteVectorEnv(url, 8)
        assert envs.mode == "sessions"
        ref = gym.vector.SyncVectorEnv([lambda: openenv_gym.RemoteEnv(ref_url)] * 8)
        try:
            assert envs.single_action_space == ref.single_action_space
            assert run_parity(envs, ref, AutoresetMode.NEXT_STEP, 60) >= 8
            with pytest.raises(OpenEnvGymError, match="needs an openenv-gym server"):
                envs.get_attr("render_mode")  # a stock server has no attribute messages
        finally:
            envs.close()
            ref.close()


def test_stock_server_too_few_sessions_fails_before_any_step():
    from tests.stock_server import make_app

    with asgi_server(make_app(max_concurrent_envs=4)) as url:
        with pytest.raises(CapacityReachedError, match="max_concurrent_envs=8") as info:
            openenv_gym.RemoteVectorEnv(url, 8)
        assert "allows 4 sessions" in str(info.value)
        with pytest.raises(ProtocolMismatchError, match="mode='sessions'"):
            openenv_gym.RemoteVectorEnv(url, 2, mode="batched")
        envs = openenv_gym.RemoteVectorEnv(url, 4)  # nothing leaked
        envs.close()


# -- partial batches ------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["sessions", "batched"])
def test_partial_batches_skip_a_slow_env(mode):
    with openenv_gym.local_server(SlowEnv, env_kwargs={"delay": 0.0}) as fast, \
            openenv_gym.local_server(SlowEnv, env_kwargs={"delay": 0.4}) as slow:
        envs = openenv_gym.RemoteVectorEnv([fast, fast, fast, slow], 4, mode=mode, batch_size=3)
        try:
            envs.async_reset(seed=0)
            seen = []
            started = time.monotonic()
            for _ in range(60):
                obs, rewards, terminations, truncations, info = envs.recv()
                assert obs.shape == (3, 1) and info["env_id"].shape == (3,)
                seen.append(info["env_id"].tolist())
                envs.send(np.zeros(3, dtype=np.int64), info["env_id"])
            elapsed = time.monotonic() - started
            slow_hits = sum(3 in ids for ids in seen)
            assert slow_hits <= 2, seen  # the slow env answered at most twice in 60 batches
            assert elapsed < 2.0, elapsed  # the fast envs were never held back
            with pytest.raises(OpenEnvGymError, match="recv"):
                envs.step(np.zeros(4, dtype=np.int64))
        finally:
            envs.close()


def test_partial_batches_with_many_envs_per_session_server():
    """Sessions mode with one server: every env is its own session and send() steps each."""
    with openenv_gym.local_server("CartPole-v1") as url:
        envs = openenv_gym.RemoteVectorEnv(url, 4, mode="sessions", batch_size=2)
        reference = gym.vector.SyncVectorEnv([lambda: gym.make("CartPole-v1")] * 4)
        try:
            envs.async_reset(seed=0)
            expected, _ = reference.reset(seed=0)
            got = {}
            for _ in range(2):
                obs, _, _, _, info = envs.recv()
                got.update(zip(info["env_id"].tolist(), obs))
            assert sorted(got) == [0, 1, 2, 3]
            for env_id, obs in got.items():
                np.testing.assert_array_equal(obs, expected[env_id])
            envs.send(np.ones(4, dtype=np.int64))
            stepped = set()
            for _ in range(2):
                _, rewards, _, _, info = envs.recv()
                stepped.update(info["env_id"].tolist())
                assert (rewards == 1.0).all()
            assert stepped == {0, 1, 2, 3}
        finally:
            envs.close()
            reference.close()


def test_send_steps_whole_server_sessions_in_any_order_and_refuses_what_it_cannot():
    """Batched mode, two servers of two envs each: ``send`` takes one session's ids
    as ``recv`` gave them, or any order over whole sessions, and its errors say why."""
    with openenv_gym.local_server("CartPole-v1") as a, openenv_gym.local_server("CartPole-v1") as b:
        envs = openenv_gym.RemoteVectorEnv([a, b], 4, mode="batched", batch_size=2)
        reference = gym.vector.SyncVectorEnv([lambda: gym.make("CartPole-v1")] * 4)
        try:
            envs.reset(seed=0)
            reference.reset(seed=0)

            def collect() -> dict:
                got = {}
                for _ in range(2):
                    obs, rewards, _, _, info = envs.recv()
                    got.update((i, (o, r)) for i, o, r in zip(info["env_id"].tolist(), obs, rewards))
                return got

            for actions in (np.array([1, 0, 0, 1]), np.array([0, 0, 1, 1])):
                envs.send(actions[:2], [0, 1])  # one session's ids, as recv gives them
                envs.send(actions[2:], np.array([2, 3], dtype=np.int32))
                got = collect()
                expected = reference.step(actions)
                for i in range(4):
                    np.testing.assert_array_equal(got[i][0], expected[0][i])
                    assert got[i][1] == expected[1][i]
            actions = np.array([1, 1, 0, 1])
            envs.send(actions[::-1].copy(), [3, 2, 1, 0])  # both sessions, backwards
            got = collect()
            expected = reference.step(actions)
            for i in range(4):
                np.testing.assert_array_equal(got[i][0], expected[0][i])

            with pytest.raises(ValueError, match=r"distinct env ids in \[0, 4\)"):
                envs.send(np.zeros(2, dtype=np.int64), [0, 4])
            with pytest.raises(ValueError, match="distinct env ids"):
                envs.send(np.zeros(4, dtype=np.int64), [0, 1, 1, 0])
            with pytest.raises(ValueError, match="stepped together"):
                envs.send(np.zeros(1, dtype=np.int64), [2])
            with pytest.raises(ValueError, match="holds 3 entries, not one per env"):
                envs.send(np.zeros(3, dtype=np.int64), [0, 1])
            envs.send(np.zeros(2, dtype=np.int64), [0, 1])
            with pytest.raises(ValueError, match="still stepping"):
                envs.send(np.zeros(2, dtype=np.int64), [1, 0])
            _, _, _, _, info = envs.recv()
            assert info["env_id"].tolist() == [0, 1]  # the refused sends stepped nothing
        finally:
            envs.close()
            reference.close()


# -- many servers ---------------------------------------------------------------------


def _active(url: str) -> int:
    from openenv_gym.client.http import get_json

    return get_json(f"{url}/health")["active_sessions"]


@pytest.mark.parametrize("mode", ["sessions", "batched"])
def test_envs_go_to_the_least_loaded_servers_first(mode):
    with openenv_gym.local_server("CartPole-v1", max_sessions=8) as busy, \
            openenv_gym.local_server("CartPole-v1", max_sessions=8) as idle:
        others = [openenv_gym.RemoteEnv(busy) for _ in range(4)]
        try:
            envs = openenv_gym.RemoteVectorEnv([busy, idle], 8, mode=mode)
            try:
                # 4 + 2 on the busy server, 6 on the idle one
                assert (_active(busy), _active(idle)) == (6, 6)
                obs, _ = envs.reset(seed=0)
                reference = gym.vector.SyncVectorEnv([lambda: gym.make("CartPole-v1")] * 8)
                np.testing.assert_array_equal(obs, reference.reset(seed=0)[0])
                reference.close()
            finally:
                envs.close()
            others += [openenv_gym.RemoteEnv(busy) for _ in range(4)]  # the busy server is full
            envs = openenv_gym.RemoteVectorEnv([busy, idle], 8, mode=mode)
            try:
                assert envs.base_urls == [idle] and _active(idle) == 8
            finally:
                envs.close()
        finally:
            for env in others:
                env.close()
