"""Stable-Baselines3's ``VecEnv`` contract on remote envs, one test per way it once broke:
per-env action lists of every space, ``indices`` reaching only the envs named,
``env_is_wrapped`` answered by the server, step before reset, remote envs that pickle."""

from __future__ import annotations

import pickle
import time
from collections.abc import Iterator

import gymnasium as gym
import numpy as np
import pytest

pytest.importorskip("stable_baselines3")

import cloudpickle  # noqa: E402
from stable_baselines3.common.monitor import Monitor  # noqa: E402
from stable_baselines3.common.vec_env import DummyVecEnv  # noqa: E402

import openenv_gym  # noqa: E402
from openenv_gym.client.http import get_json  # noqa: E402
from openenv_gym.errors import OpenEnvGymError  # noqa: E402
from openenv_gym.sb3 import RemoteVecEnv  # noqa: E402
from tests.conftest import asgi_server  # noqa: E402

MODES = ["batched", "sessions"]
ACTION_SPACES = {
    "box": gym.spaces.Box(-1.0, 1.0, (1,), dtype=np.float32),
    "dict": gym.spaces.Dict({"move": gym.spaces.Discrete(3), "force": gym.spaces.Box(-1.0, 1.0, (2,), np.float32)}),
    "tuple": gym.spaces.Tuple((gym.spaces.Discrete(3), gym.spaces.MultiBinary(2))),
}


class Recorder(gym.Env):
    """Remembers the last action it was given (``last_action``) and counts its steps."""

    observation_space = gym.spaces.Box(0.0, 1.0, (1,), dtype=np.float32)

    def __init__(self, action_space: gym.Space) -> None:
        self.action_space = action_space
        self.last_action = None
        self.current_step = 0

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.current_step = 0
        return np.zeros(1, np.float32), {}

    def step(self, action):
        self.last_action = action
        self.current_step += 1
        return np.zeros(1, np.float32), 0.0, False, self.current_step >= 50, {}


@pytest.fixture(scope="module", params=list(ACTION_SPACES))
def recorder_url(request) -> Iterator[tuple[str, gym.Space]]:
    space = ACTION_SPACES[request.param]
    with asgi_server(openenv_gym.create_app(lambda: Recorder(space), max_sessions=16)) as url:
        yield url, space


@pytest.mark.parametrize("mode", MODES)
def test_per_env_action_lists_of_every_space_step_each_env_with_its_own(recorder_url, mode):
    url, space = recorder_url
    space.seed(0)
    actions = [space.sample() for _ in range(3)]
    venv = RemoteVecEnv(url, num_envs=3, mode=mode)
    try:
        venv.reset()
        venv.step(actions)
        for sent, got in zip(actions, venv.get_attr("last_action")):
            assert gym.spaces.utils.flatten(space, got).tolist() == gym.spaces.utils.flatten(space, sent).tolist()
    finally:
        venv.close()


def test_a_list_of_box_actions_in_batched_mode_matches_the_local_vector_env():
    """The reported case: Pendulum, 2 envs, ``[np.array([0.5]), np.array([-0.5])]``."""
    with openenv_gym.local_server("Pendulum-v1") as url:
        remote = openenv_gym.RemoteVectorEnv(url, 2, mode="batched")
        local = gym.vector.SyncVectorEnv([lambda: gym.make("Pendulum-v1")] * 2)
        try:
            assert np.array_equal(remote.reset(seed=3)[0], local.reset(seed=3)[0])
            actions = [np.array([0.5], np.float32), np.array([-0.5], np.float32)]
            assert np.allclose(remote.step(actions)[0], local.step(actions)[0])
        finally:
            remote.close()
            local.close()


@pytest.mark.parametrize("mode", MODES)
def test_an_action_that_does_not_fit_names_its_env_and_key_before_anything_is_sent(mode):
    space = ACTION_SPACES["dict"]
    with asgi_server(openenv_gym.create_app(lambda: Recorder(space), max_sessions=8)) as url:
        venv = openenv_gym.RemoteVectorEnv(url, 2, mode=mode)
        try:
            venv.reset(seed=0)
            good = {"move": 1, "force": np.zeros(2, np.float32)}
            with pytest.raises(ValueError, match=r"actions\[1\]\['force'\]: expected a value of shape \(2,\)"):
                venv.step([good, {"move": 1, "force": np.zeros(3, np.float32)}])
            with pytest.raises(ValueError, match=r"actions\[0\]: expected a dict with the keys \['force', 'move'\]"):
                venv.step([{"move": 1}, good])
            assert venv.get_attr("current_step") == (0, 0)  # no env stepped
            venv.step([good, good])
            assert venv.get_attr("current_step") == (1, 1)
        finally:
            venv.close()


def _monitored() -> gym.Env:
    return Monitor(Recorder(ACTION_SPACES["box"]))


def _bare() -> gym.Env:
    return Recorder(ACTION_SPACES["box"])


@pytest.fixture(scope="module", params=["sync", "async"])
def monitored_urls(request) -> Iterator[list[str]]:
    """A server of Monitor-wrapped envs and one of bare envs, on the vector backend given."""
    backend = request.param
    with asgi_server(openenv_gym.create_app(_monitored, vector_backend=backend)) as monitored, \
            asgi_server(openenv_gym.create_app(_bare, vector_backend=backend)) as bare:
        yield [monitored, bare]


@pytest.mark.parametrize("mode", MODES)
def test_indices_reach_only_the_envs_named(monitored_urls, mode):
    venv = RemoteVecEnv(monitored_urls[0], num_envs=3, mode=mode)
    local = DummyVecEnv([_monitored] * 3)
    try:
        for env in (venv, local):
            env.reset()
            assert env.env_method("set_wrapper_attr", "current_step", 12, indices=[0]) == [True]
            assert env.get_attr("current_step") == [12, 0, 0]
            env.set_attr("label", 7, indices=[1, 2])
            assert env.get_attr("label", indices=[2, 1]) == [7, 7]
            assert env.get_attr("current_step", indices=-1) == [0]
            with pytest.raises(AttributeError):
                env.get_attr("label", indices=[0])  # env 0 was not touched
    finally:
        venv.close()
        local.close()


def wait_until_idle(urls: list[str], timeout: float = 15.0) -> None:
    """Until no server of ``urls`` counts a session: the sessions of the test before may
    still be closing (a server counts a session until its envs are closed), and envs are
    placed on the least-loaded server first."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if all(get_json(f"{url}/health")["active_sessions"] == 0 for url in urls):
            return
        time.sleep(0.05)
    raise AssertionError(f"sessions still open on {urls} after {timeout} s")


@pytest.mark.parametrize("mode", MODES)
def test_env_is_wrapped_is_answered_by_each_env_s_server(monitored_urls, mode):
    wait_until_idle(monitored_urls)  # two envs on each: the placement of idle servers
    venv = RemoteVecEnv(monitored_urls, num_envs=4, mode=mode)
    local = DummyVecEnv([_monitored, _monitored, _bare, _bare])
    try:
        assert venv.env_is_wrapped(Monitor) == local.env_is_wrapped(Monitor) == [True, True, False, False]
        assert venv.env_is_wrapped(gym.Wrapper, indices=[3, 0]) == [False, True]  # a base class counts
        assert venv.env_is_wrapped(gym.wrappers.TimeLimit) == [False] * 4
    finally:
        venv.close()
        local.close()


@pytest.mark.parametrize("mode", MODES)
def test_env_is_wrapped_reaches_an_env_in_a_process_of_its_own(mode):
    app = openenv_gym.create_app("tests.test_sb3_contract:_monitored", execution="process")
    with asgi_server(app) as url:
        venv = RemoteVecEnv(url, num_envs=2, mode=mode)
        try:
            assert venv.env_is_wrapped(Monitor) == [True, True]
            assert venv.env_method("set_wrapper_attr", "current_step", 5, indices=[1]) == [True]
            assert venv.get_attr("current_step") == [0, 5]
        finally:
            venv.close()


@pytest.mark.parametrize("mode", MODES)
def test_a_step_before_any_reset_is_refused_with_what_to_do(cartpole_url, mode):
    """Decided (docs/vector.md): an episode starts with a reset, on every route."""
    venv = openenv_gym.RemoteVectorEnv(cartpole_url, 2, mode=mode)
    try:
        with pytest.raises(OpenEnvGymError, match="Call reset before step"):
            venv.step(np.zeros(2, dtype=np.int64))
        venv.reset(seed=0)
        venv.step(np.zeros(2, dtype=np.int64))  # the session is fine afterwards
    finally:
        venv.close()


@pytest.mark.parametrize("dumps", [pickle.dumps, cloudpickle.dumps], ids=["pickle", "cloudpickle"])
def test_remote_envs_pickle_into_a_new_session_on_the_same_server(cartpole_url, dumps):
    env = openenv_gym.RemoteEnv(cartpole_url)
    venv = openenv_gym.RemoteVectorEnv(cartpole_url, 2, mode="batched")
    copies = []
    try:
        env.reset(seed=0)
        for _ in range(5):
            env.step(0)
        copy = pickle.loads(dumps(env))
        copies.append(copy)
        assert copy is not env and copy.base_url == env.base_url
        assert copy.state()["step_count"] == 0  # a new session, not the same episode
        assert np.array_equal(copy.reset(seed=0)[0], gym.make("CartPole-v1").reset(seed=0)[0])
        vcopy = pickle.loads(dumps(venv))
        copies.append(vcopy)
        assert (vcopy.num_envs, vcopy.metadata["autoreset_mode"]) == (2, venv.metadata["autoreset_mode"])
        assert vcopy.reset(seed=[1, 2])[0].shape == (2, 4)
    finally:
        for e in (env, venv, *copies):
            e.close()


def test_pettingzoo_clients_pickle_and_have_np_random():
    connect_four = pytest.importorskip("pettingzoo.classic.connect_four_v3")
    with openenv_gym.local_server(connect_four.env) as url:
        games = [openenv_gym.RemoteAECEnv(url), openenv_gym.RemoteParallelEnv(url)]
        try:
            for game in list(games):
                game.reset(seed=4)
                drawn = game.np_random.integers(1 << 30)
                copy = cloudpickle.loads(cloudpickle.dumps(game))
                games.append(copy)
                assert type(copy) is type(game) and copy.possible_agents == game.possible_agents
                copy.reset(seed=4)
                assert copy.np_random.integers(1 << 30) == drawn  # seeded by reset, as PettingZoo's envs are
        finally:
            for game in games:
                game.close()


@pytest.mark.parametrize("mode", MODES)
def test_indices_out_of_range_are_refused_by_client_and_server_and_the_session_goes_on(cartpole_url, mode):
    from openenv_gym.protocol import vector as wire

    venv = openenv_gym.RemoteVectorEnv(cartpole_url, 2, mode=mode)
    try:
        venv.reset(seed=0)
        with pytest.raises(ValueError, match=r"indices must be distinct env indices in \[-2, 2\)"):
            venv.get_attr("np_random_seed", indices=[2])
        with pytest.raises(ValueError, match="distinct"):
            venv.call_at([0, 0], "get_wrapper_attr", "spec")
        unit = venv._units[-1]  # what a client that skips the check would send
        with pytest.raises(OpenEnvGymError, match="VALIDATION_ERROR"):
            venv._live().run(unit.call(wire.GetAttr("np_random_seed", [7])))
        assert venv.get_attr("np_random_seed", indices=[1, 0]) == (1, 0)
        venv.step(np.zeros(2, dtype=np.int64))
    finally:
        venv.close()


class OptionsRecorder(Recorder):
    """Remembers the options of its last reset (``current_options``), as SB3's test env does."""

    def __init__(self) -> None:
        super().__init__(ACTION_SPACES["box"])
        self.current_options = None

    def reset(self, *, seed=None, options=None):
        self.current_options = options
        obs, info = super().reset(seed=seed, options=options)
        return obs + float(self.np_random.random()), {"options": options}


@pytest.mark.parametrize("mode", MODES)
def test_per_env_options_reach_their_env_at_the_next_reset(mode):
    with asgi_server(openenv_gym.create_app(OptionsRecorder, max_sessions=8)) as url:
        venv = RemoteVecEnv(url, num_envs=3, mode=mode)
        local = DummyVecEnv([OptionsRecorder] * 3)
        try:
            options = [{"other_option": 2}, {"hello": 1}, {"hello": 1}]
            for env in (venv, local):
                env.seed(7)
                env.set_options(options)
            np.testing.assert_allclose(venv.reset(), local.reset())  # seeded: as one reset with its options
            assert venv.get_attr("current_options") == options
            assert [info["options"] for info in venv.reset_infos] == options
            venv.reset()
            assert venv.get_attr("current_options") == [None] * 3  # options last one reset, as SB3's do
        finally:
            venv.close()
            local.close()
