"""PettingZoo envs served by openenv-gym: PettingZoo's own checkers on the remote
clients, trajectories against the local env, and the single-agent seat view
for the official OpenEnv client."""

from __future__ import annotations

import functools
import json
import urllib.request
import warnings

import gymnasium as gym
import jsonschema
import numpy as np
import pytest

pettingzoo = pytest.importorskip("pettingzoo")
pytest.importorskip("rlcard")  # texas_holdem_v4

from openenv import GenericEnvClient  # noqa: E402
from pettingzoo import ParallelEnv  # noqa: E402
from pettingzoo.classic import connect_four_v3, rps_v2, texas_holdem_v4, tictactoe_v3  # noqa: E402
from pettingzoo.test import api_test, parallel_api_test, parallel_seed_test, seed_test  # noqa: E402

import openenv_gym  # noqa: E402
from openenv_gym.errors import FactoryError, ProtocolMismatchError  # noqa: E402


class DroneSwarm(ParallelEnv):
    """A ParallelEnv with Box observations and actions whose agents finish at different times."""

    metadata = {"name": "drone_swarm_v0", "render_modes": []}

    def __init__(self, num_drones: int = 3, max_steps: int = 25) -> None:
        self.possible_agents = [f"drone_{i}" for i in range(num_drones)]
        self.max_steps = max_steps
        self.agents: list[str] = []

    @functools.cache  # noqa: B019 - PettingZoo's documented pattern; the env lives for one test
    def observation_space(self, agent: str) -> gym.Space:
        return gym.spaces.Box(-50.0, 50.0, shape=(4,), dtype=np.float32)

    @functools.cache  # noqa: B019 - as above
    def action_space(self, agent: str) -> gym.Space:
        return gym.spaces.Box(-1.0, 1.0, shape=(2,), dtype=np.float32)

    def reset(self, seed=None, options=None):
        self.rng = np.random.default_rng(seed)
        self.agents = list(self.possible_agents)
        self.positions = {a: self.rng.uniform(-5, 5, 2).astype(np.float32) for a in self.agents}
        self.steps = 0
        return {a: self._observe(a) for a in self.agents}, {a: {} for a in self.agents}

    def _observe(self, agent: str) -> np.ndarray:
        position = self.positions[agent]
        return np.concatenate([position, -position]).astype(np.float32)

    def step(self, actions):
        self.steps += 1
        observations, rewards, terminations, truncations, infos = {}, {}, {}, {}, {}
        for agent in self.agents:
            self.positions[agent] = np.clip(
                self.positions[agent] + np.asarray(actions[agent], dtype=np.float32), -40, 40
            )
            distance = float(np.linalg.norm(self.positions[agent]))
            observations[agent] = self._observe(agent)
            rewards[agent] = -distance
            terminations[agent] = distance < 0.5
            truncations[agent] = self.steps >= self.max_steps
            infos[agent] = {"distance": distance, "steps": self.steps}
        self.agents = [a for a in self.agents if not (terminations[a] or truncations[a])]
        return observations, rewards, terminations, truncations, infos

    def render(self):
        return None

    def close(self):
        pass


GAMES = {
    "connect_four_v3": connect_four_v3.env,
    "tictactoe_v3": tictactoe_v3.env,
    "texas_holdem_v4": texas_holdem_v4.env,
    "rps_v2": rps_v2.env,
    "drone_swarm": DroneSwarm,
}


@pytest.fixture(scope="module", params=sorted(GAMES))
def game(request):
    with openenv_gym.local_server(GAMES[request.param]) as url:
        yield request.param, url


@pytest.fixture(scope="module")
def connect_four_url():
    with openenv_gym.local_server("pettingzoo.classic.connect_four_v3") as url:
        yield url


def _apis(url: str) -> list[str]:
    with urllib.request.urlopen(f"{url}/schema", timeout=5) as response:
        return json.loads(response.read())["x-openenv-gym"]["multiagent"]["apis"]


@pytest.mark.parametrize("encoding", ["msgpack", "json"])
def test_api_test_passes_on_remote_aec_env(game, encoding):
    name, url = game
    env = openenv_gym.RemoteAECEnv(url, encoding=encoding)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # api_test's style advice (e.g. all-zero observations)
            api_test(env, num_cycles=200)
    finally:
        env.close()
    seed_test(lambda: openenv_gym.RemoteAECEnv(url, encoding=encoding), num_cycles=50)


@pytest.mark.parametrize("encoding", ["msgpack", "json"])
def test_parallel_api_test_passes_on_remote_parallel_env(game, encoding):
    name, url = game
    assert _apis(url) == ["aec", "parallel"]
    env = openenv_gym.RemoteParallelEnv(url, encoding=encoding)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            parallel_api_test(env, num_cycles=200)
    finally:
        env.close()
    parallel_seed_test(lambda: openenv_gym.RemoteParallelEnv(url, encoding=encoding), num_cycles=50)


def test_turn_based_games_are_served_through_the_parallel_api_too():
    """PettingZoo's turn_based_aec_to_parallel: only the agent to move acts."""
    with openenv_gym.local_server(tictactoe_v3.env) as url:
        env = openenv_gym.RemoteParallelEnv(url)
        try:
            observations, infos = env.reset(seed=0)
            assert set(observations) == {"player_1", "player_2"}
            moves = 0
            while env.agents and moves < 9:
                legal = {a: np.flatnonzero(observations[a]["action_mask"]) for a in env.agents}
                actions = {a: int(legal[a][0]) if legal[a].size else 0 for a in env.agents}
                observations, rewards, terminations, truncations, infos = env.step(actions)
                moves += 1
            assert not env.agents and any(terminations.values())
        finally:
            env.close()


def _same(local, remote) -> bool:
    """Equal values; arrays equal in dtype too (0-d arrays of Discrete spaces travel as scalars)."""
    if isinstance(local, dict):
        return isinstance(remote, dict) and local.keys() == remote.keys() and all(
            _same(local[k], remote[k]) for k in local
        )
    if isinstance(local, np.ndarray) and local.ndim > 0:
        return isinstance(remote, np.ndarray) and local.dtype == remote.dtype and np.array_equal(local, remote)
    return bool(np.all(np.asarray(local) == np.asarray(remote)))


def _aec_trajectory(env, seed: int, max_moves: int = 400) -> list:
    env.reset(seed=seed)
    rng = np.random.default_rng(seed)
    trajectory = []
    for _, agent in zip(range(max_moves), env.agent_iter()):
        obs, reward, terminated, truncated, info = env.last()
        trajectory.append((agent, obs, reward, terminated, truncated, info, dict(env.rewards)))
        if terminated or truncated:
            action = None
        else:
            mask = obs["action_mask"] if isinstance(obs, dict) else info.get("action_mask")
            space = env.action_space(agent)
            if isinstance(space, gym.spaces.Discrete):
                legal = np.flatnonzero(mask) if mask is not None else np.arange(space.n)
                action = int(rng.choice(legal))
            else:
                action = rng.uniform(-1, 1, space.shape).astype(space.dtype)
        env.step(action)
    env.close()
    return trajectory


@pytest.mark.parametrize("seed", [0, 7])
def test_remote_aec_trajectories_match_the_local_env(game, seed):
    name, url = game
    local = _aec_trajectory(GAMES[name]() if name != "drone_swarm" else _as_aec(DroneSwarm()), seed)
    remote = _aec_trajectory(openenv_gym.RemoteAECEnv(url), seed)
    assert len(local) == len(remote) > 1
    for step, (a, b) in enumerate(zip(local, remote)):
        assert a[0] == b[0], step
        for x, y in zip(a[1:], b[1:]):
            assert _same(x, y), (step, x, y)


def _as_aec(env):
    from pettingzoo.utils.conversions import parallel_to_aec

    return parallel_to_aec(env)


def test_remote_parallel_trajectories_match_the_local_env():
    with openenv_gym.local_server(DroneSwarm) as url:
        for seed in (1, 2):
            local, remote = DroneSwarm(), openenv_gym.RemoteParallelEnv(url)
            try:
                rng = np.random.default_rng(seed)
                a, b = local.reset(seed=seed), remote.reset(seed=seed)
                assert _same(a[0], b[0]) and _same(a[1], b[1])
                for _ in range(30):
                    if not local.agents:
                        break
                    actions = {x: rng.uniform(-1, 1, 2).astype(np.float32) for x in local.agents}
                    for x, y in zip(local.step(actions), remote.step(actions)):
                        assert _same(x, y), (x, y)
                    assert local.agents == remote.agents
                assert not remote.agents
            finally:
                remote.close()


# -- the seat view: stock OpenEnv clients play one seat --------------------------


def _schema(url: str) -> dict:
    with urllib.request.urlopen(f"{url}/schema", timeout=5) as response:
        return json.loads(response.read())


@pytest.mark.parametrize("seat", ["player_0", "player_1"])
def test_generic_env_client_plays_connect_four_to_the_end(connect_four_url, seat):
    schema = jsonschema.Draft202012Validator(_schema(connect_four_url)["observation"])
    with GenericEnvClient(base_url=connect_four_url).sync() as client:
        for episode in range(3):
            result = client.reset(seed=episode, agent=seat, episode_id=f"game-{episode}")
            schema.validate({**result.observation, "reward": result.reward, "done": result.done})
            assert result.observation["agent"] == seat
            assert result.observation["current_player"] == seat
            moves = 0
            while not result.done:
                assert moves < 22, "a Connect Four seat moves at most 21 times"
                legal = result.observation["legal_actions"]
                assert legal == [i for i, m in enumerate(result.observation["action_mask"]) if m]
                result = client.step({"action": legal[moves % len(legal)]})
                moves += 1
                schema.validate({**result.observation, "reward": result.reward, "done": result.done})
            assert result.observation["terminated"] and result.reward in (-1.0, 0.0, 1.0)
            assert result.observation["current_player"] is None
            assert result.observation["legal_actions"] == []
            state = client.state()
            assert state["step_count"] == moves and state["episode_id"] == f"game-{episode}"


def test_seat_view_with_a_custom_opponent():
    """An opponent that always plays column 0 loses to one that always plays column 6."""
    app = openenv_gym.create_app(connect_four_v3.env, opponent=lambda turn: turn.legal_actions[0])
    from tests.conftest import asgi_server

    with asgi_server(app) as url, GenericEnvClient(base_url=url).sync() as client:
        result = client.reset(seed=0)
        while not result.done:
            result = client.step({"action": 6})
        assert result.reward == 1.0


def test_seat_view_refuses_unknown_seats_and_illegal_requests(connect_four_url):
    with GenericEnvClient(base_url=connect_four_url).sync() as client:
        with pytest.raises(RuntimeError, match="cannot play seat 'player_9'.*EXECUTION_ERROR"):
            client.reset(agent="player_9")
        with pytest.raises(RuntimeError, match="VALIDATION_ERROR"):
            client.step({"action": 7})


def test_seat_view_is_a_gymnasium_env_through_remote_env(connect_four_url):
    env = openenv_gym.RemoteEnv(connect_four_url)
    try:
        obs, info = env.reset(seed=3)
        assert env.observation_space.contains(obs)
        terminated = truncated = False
        for _ in range(25):
            legal = np.flatnonzero(obs["action_mask"])
            obs, reward, terminated, truncated, info = env.step(int(legal[0]))
            if terminated or truncated:
                break
        assert terminated
    finally:
        env.close()


def test_agents_route_errors(connect_four_url):
    from openenv_gym.client import ConnectOptions
    from openenv_gym.client.session import RemoteSession
    from openenv_gym.protocol import Reset

    session = RemoteSession(connect_four_url, ConnectOptions(), path="/agents?api=bogus")
    with pytest.raises(FactoryError, match="not 'bogus'"):
        session.request(Reset())
    env = openenv_gym.RemoteAECEnv(connect_four_url)
    try:
        env.reset(seed=0)
        with pytest.raises(openenv_gym.errors.ValidationError, match="not in the action space"):
            env.step(9)
        env.step(3)  # the session goes on
        assert env.server_state()["step_count"] == 1
    finally:
        env.close()
    with pytest.raises(ProtocolMismatchError, match="does not serve a PettingZoo env"):
        with openenv_gym.local_server("CartPole-v1") as url:
            openenv_gym.RemoteAECEnv(url)


def test_live_instances_and_wrong_options_are_refused():
    with pytest.raises(TypeError, match="not the instance"):
        openenv_gym.create_app(connect_four_v3.env())
    with pytest.raises(TypeError, match="PettingZoo environments only"):
        openenv_gym.create_app("CartPole-v1", opponent=lambda turn: 0)


def test_state_and_state_space_are_forwarded(connect_four_url):
    """A game's global state reaches the clients (PettingZoo's state_test runs in
    tests/conformance); a game without one raises NotImplementedError, as PettingZoo does."""
    from pettingzoo.butterfly import cooperative_pong_v6

    with openenv_gym.local_server(cooperative_pong_v6.env) as url:
        env = openenv_gym.RemoteAECEnv(url, encoding="msgpack")
        try:
            env.reset(seed=0)
            assert env.state() in env.state_space
        finally:
            env.close()
    env = openenv_gym.RemoteAECEnv(connect_four_url)
    try:
        env.reset(seed=0)
        assert not hasattr(env, "state_space")
        with pytest.raises(NotImplementedError):
            env.state()
    finally:
        env.close()
