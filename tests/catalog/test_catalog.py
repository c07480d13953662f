"""The OpenEnv catalog: ids, embedded servers and their lifetime, upstream schemas."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest

import openenv_gym
from openenv_gym import catalog
from openenv_gym.errors import OpenEnvGymError, ValidationError
from openenv_gym.protocol import Reset, Step
from tests.conftest import child_processes, process_gone, wait_until

pytest.importorskip("chess")

#: The pydantic schemas of upstream OpenEnv envs, captured from their servers.
UPSTREAM_SCHEMAS = Path(__file__).parent.parent / "data" / "real-env-json-schemas.json"


def listening_ports() -> set[int]:
    """TCP ports in LISTEN state on this machine, read from /proc (no psutil)."""
    ports = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        if not os.path.exists(table):
            continue
        with open(table) as lines:
            next(lines)
            for line in lines:
                fields = line.split()
                if fields[3] == "0A":  # TCP_LISTEN
                    ports.add(int(fields[1].rsplit(":", 1)[1], 16))
    return ports








def play_random_game(env: gym.Env, seed: int, max_steps: int = 600) -> list[tuple]:
    """Random legal moves to the end of the game; the (fen-or-obs, reward, terminated) trail."""
    rng = np.random.default_rng(seed)
    obs, info = env.reset(seed=seed)
    trail = []
    for _ in range(max_steps):
        if isinstance(obs, dict):  # raw view: the UCI string, the legal ones in info
            action = str(rng.choice(list(info["legal_actions"])))
        else:
            action = int(rng.choice(np.flatnonzero(info["action_mask"])))
        obs, reward, terminated, truncated, info = env.step(action)
        trail.append((obs["fen"] if isinstance(obs, dict) else obs.tobytes(), reward, terminated))
        if terminated or truncated:
            return trail
    raise AssertionError(f"no end of game within {max_steps} moves")


# -- registration and listing ----------------------------------------------------


def test_catalog_ids_are_registered_and_listed(monkeypatch):
    monkeypatch.delenv("OPENENV_MAZE_URL", raising=False)
    ids = [entry.id for entry in openenv_gym.list_envs()]
    for name in ("Chess", "Echo", "Connect4", "GridWorld", "Maze", "Snake"):
        assert f"openenv/{name}-v0" in ids
        assert f"openenv/{name}-v0" in gym.registry
    chess_entry = catalog.get("openenv/Chess-v0")
    assert chess_entry.upstream == "chess_env" and chess_entry.env_var == "OPENENV_CHESS_URL"
    assert chess_entry.server_source().startswith("embedded")
    assert "base_url" in catalog.get("Maze").server_source()
    monkeypatch.setenv("OPENENV_MAZE_URL", "http://127.0.0.1:9")
    assert catalog.get("Maze").server_source() == "$OPENENV_MAZE_URL = http://127.0.0.1:9"


def test_cli_list_shows_ids_upstream_envs_and_server_sources():
    out = subprocess.run(
        [sys.executable, "-m", "openenv_gym.cli", "list"], capture_output=True, text=True, timeout=60
    )
    assert out.returncode == 0, out.stderr
    for entry in openenv_gym.list_envs():
        line = next(line for line in out.stdout.splitlines() if line.startswith(entry.id))
        assert entry.upstream in line


@pytest.mark.parametrize(
    "name, upstream, models",
    [
        ("Chess", "chess_env", ("ChessAction", "ChessObservation", "ChessState")),
        ("Connect4", "connect4_env", ("Connect4Action", "Connect4Observation", "Connect4State")),
        ("GridWorld", "grid_world_env", ("GridWorldAction", "GridWorldObservation", None)),
    ],
)
def test_builtin_schemas_are_the_upstream_pydantic_schemas(name, upstream, models):
    captured = json.loads(UPSTREAM_SCHEMAS.read_text())[upstream]
    schema = catalog.get(name).schema()
    for part, model in zip(("action", "observation", "state"), models):
        if model is not None:
            assert schema[part] == captured[model], (name, part)
    assert schema["reset_observation"] == schema["observation"]


def test_env_without_builtin_server_says_what_to_do(monkeypatch):
    monkeypatch.delenv("OPENENV_MAZE_URL", raising=False)
    with pytest.raises(OpenEnvGymError, match="OPENENV_MAZE_URL"):
        gym.make("openenv/Maze-v0")
    with pytest.raises(OpenEnvGymError, match="no view"):
        gym.make("openenv/Chess-v0", view="nope")


# -- the embedded chess server ----------------------------------------------------


@pytest.mark.parametrize("view", ["alphazero", "raw"])
def test_chess_random_game_to_the_end_then_no_process_or_port_left(view):
    children = child_processes()
    env = gym.make("openenv/Chess-v0", view=view)
    server = env.unwrapped.server
    assert server.running and server.port in listening_ports()
    if view == "alphazero":
        assert env.action_space == gym.spaces.Discrete(4672)
        assert env.observation_space.shape == (8, 8, 111)
    trail = play_random_game(env, seed=3)
    assert trail[-1][2] is True and trail[-1][1] in (-1.0, 0.0, 1.0)
    env.close()
    assert process_gone(server.pid)
    assert server.port not in listening_ports()
    assert child_processes() <= children  # no process of ours left behind either
    env.close()  # idempotent


def test_chess_rules_rewards_and_state():
    env = gym.make("openenv/Chess-v0", view="raw", server_kwargs={"opponent": None})
    try:
        obs, _ = env.reset(options={"fen": "6k1/5ppp/8/8/8/8/5PPP/R5K1 w - - 0 1"})
        obs, reward, terminated, _, _ = env.step("a1a2")  # not mate
        assert (reward, terminated) == (0.0, False)
        obs, reward, terminated, _, _ = env.step("e2e4")  # illegal: game goes on
        assert (reward, terminated) == (-0.1, False)
        obs, reward, terminated, _, _ = env.step("g8h8")
        obs, reward, terminated, _, _ = env.step("a2a8")  # back-rank mate
        assert (reward, terminated, obs["result"]) == (1.0, True, "1-0")
        state = env.unwrapped.state()
        assert state["move_history"] == ["a1a2", "g8h8", "a2a8"] and state["step_count"] == 3
        assert state["current_player"] == "black" and state["fen"] == obs["fen"]
        with pytest.raises(ValidationError, match="extra_forbidden|Extra"):
            env.unwrapped._live().request(Step({"move": "e2e4", "piece": "P"}))
        with pytest.raises(ValidationError):
            env.unwrapped._live().request(Reset.from_data({"colour": "black"}))
    finally:
        env.close()


def test_sigkill_of_the_owner_leaves_no_server_behind(tmp_path):
    script = tmp_path / "owner.py"
    script.write_text(textwrap.dedent("""
        import sys, time, gymnasium as gym, openenv_gym
        env = gym.make("openenv/Chess-v0")
        env.reset(seed=0)
        server = env.unwrapped.server
        print(server.pid, server.port, flush=True)
        time.sleep(120)
    """))
    owner = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, text=True)
    try:
        pid, port = map(int, owner.stdout.readline().split())
        assert not process_gone(pid) and port in listening_ports()
        owner.send_signal(signal.SIGKILL)
        owner.wait(10)
        assert wait_until(lambda: process_gone(pid), timeout=8), "the server outlived its owner"
        assert wait_until(lambda: port not in listening_ports(), timeout=2)
    finally:
        if owner.poll() is None:
            owner.kill()
            owner.wait(5)


def test_env_var_points_the_id_at_a_running_server(monkeypatch):
    with catalog.embedded.EmbeddedServer.start("chess") as server:
        monkeypatch.setenv("OPENENV_CHESS_URL", server.url)
        env = gym.make("openenv/Chess-v0")
        try:
            assert type(env.unwrapped) is openenv_gym.RemoteEnv and env.unwrapped.base_url == server.url
            env.reset(seed=0)
            with pytest.raises(OpenEnvGymError, match="server_kwargs"):
                gym.make("openenv/Chess-v0", server_kwargs={"opponent": None})
        finally:
            env.close()
        assert server.running  # not ours to stop
    assert process_gone(server.pid)


# -- the same env against a server built on the official openenv package ------------


def upstream_chess_app():
    """chess_env's models and app as upstream builds them, on ``openenv``'s create_app,
    with the game rules of the built-in env (the test is about the wire, not the rules)."""
    from openenv.core.env_server import create_app
    from openenv.core.env_server.interfaces import Environment
    from openenv.core.env_server.types import Action, Observation, State
    from pydantic import Field

    from openenv_gym.catalog.chess_env import ChessEnvironment

    class ChessAction(Action):
        move: str

    class ChessObservation(Observation):
        fen: str = ""
        legal_moves: list[str] = Field(default_factory=list)
        is_check: bool = False
        result: str | None = None

    class ChessState(State):
        step_count: int = 0
        fen: str = "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1"
        current_player: str = "white"
        move_history: list[str] = Field(default_factory=list)

    for model, schema in (
        (ChessAction, ChessEnvironment.action_schema),
        (ChessObservation, ChessEnvironment.observation_schema),
        (ChessState, ChessEnvironment.state_schema),
    ):
        model.__doc__ = schema["description"]

    class UpstreamChess(Environment):
        SUPPORTS_CONCURRENT_SESSIONS = True

        def __init__(self):
            super().__init__()
            self.game = ChessEnvironment()

        def reset(self, seed=None, episode_id=None, fen=None, **kwargs):
            return self._observation(self.game.reset(seed=seed, episode_id=episode_id, fen=fen))

        def step(self, action, timeout_s=None, **kwargs):
            return self._observation(self.game.step({"move": action.move}))

        def _observation(self, result):
            return ChessObservation(
                **result.fields, reward=result.reward, done=result.done, metadata=result.metadata
            )

        @property
        def state(self):
            return ChessState(**self.game.state())

    return create_app(
        UpstreamChess, ChessAction, ChessObservation, env_name="chess_env",
        state_cls=ChessState, max_concurrent_envs=4,
    )


@pytest.mark.parametrize("view", ["alphazero", "raw"])
def test_same_game_against_an_openenv_create_app_server(view):
    from tests.conftest import asgi_server

    with asgi_server(upstream_chess_app()) as url:
        import urllib.request

        with urllib.request.urlopen(f"{url}/schema") as response:
            upstream_schema = json.load(response)
        ours = catalog.get("Chess").schema()
        for part in ("action", "observation", "state"):
            assert upstream_schema[part] == ours[part], part

        remote = gym.make("openenv/Chess-v0", base_url=url, view=view)
        embedded = gym.make("openenv/Chess-v0", view=view)
        try:
            assert remote.observation_space == embedded.observation_space
            assert remote.action_space == embedded.action_space
            assert play_random_game(remote, seed=11) == play_random_game(embedded, seed=11)
        finally:
            remote.close()
            embedded.close()


# -- the other built-in servers ----------------------------------------------------


def test_connect4_and_gridworld_builtins():
    env = gym.make("openenv/Connect4-v0")
    try:
        obs, info = env.reset(seed=0)
        assert env.action_space == gym.spaces.Discrete(7)
        assert info["action_mask"].tolist() == [1] * 7 and info["metadata"]["next_player"] == 1
        for column in (0, 1, 0, 1, 0, 1):
            obs, reward, terminated, _, _ = env.step(column)
            assert not terminated
        obs, reward, terminated, _, _ = env.step(0)  # four in column 0
        assert (reward, terminated) == (1.0, True)
        assert np.asarray(obs["board"])[2:, 0].tolist() == [1, 1, 1, 1]
    finally:
        env.close()

    env = gym.make("openenv/GridWorld-v0")
    try:
        assert env.action_space == gym.spaces.Discrete(4)
        env.reset()
        down, right = 1, 3  # indices into the enum UP, DOWN, LEFT, RIGHT
        steps = [down] * 4 + [right] * 4
        for move in steps:
            obs, reward, terminated, _, info = env.step(move)
        assert (int(obs["x"]), int(obs["y"]), reward, terminated) == (4, 4, 1.0, True)
        assert info["openenv_gym.extra_fields"]["message"] == "You found the goal!"
    finally:
        env.close()


@pytest.mark.parametrize("view", ["raw", "alphazero"])
def test_make_vec_shares_one_embedded_server_and_stops_it(view):
    vec = gym.make_vec("openenv/Chess-v0", num_envs=3, vectorization_mode="vector_entry_point", view=view)
    server = vec.server
    try:
        obs, infos = vec.reset(seed=0)
        assert vec.num_envs == 3
        for _ in range(3):
            if view == "raw":
                actions = tuple(moves[0] for moves in infos["legal_actions"])
            else:
                actions = np.array([np.flatnonzero(mask)[0] for mask in infos["action_mask"]])
            obs, rewards, terminations, truncations, infos = vec.step(actions)
            assert rewards.shape == (3,)
    finally:
        vec.close()
    assert server.process.poll() is not None, "the embedded server outlived its vector env"


@pytest.mark.parametrize("env_module, kwargs, action", [
    ("chess_env", {"agent_color": None}, lambda obs: {"move": obs.fields["legal_moves"][0]}),
    ("connect4_env", {"opponent": "random"}, lambda obs: {"column": obs.fields["legal_actions"][0]}),
])
def test_unseeded_reset_carries_on_the_seeded_stream(env_module, kwargs, action):
    """As Gymnasium: only ``reset(seed=...)`` reseeds the opponent; a later
    ``reset()`` goes on from it, so a run seeded once replays exactly."""
    from openenv_gym.catalog.chess_env import ChessEnvironment
    from openenv_gym.catalog.connect4_env import Connect4Environment

    cls = {"chess_env": ChessEnvironment, "connect4_env": Connect4Environment}[env_module]

    def games() -> list[list]:
        env = cls(**kwargs)
        played = []
        for episode in range(4):
            obs = env.reset(seed=5) if episode == 0 else env.reset()
            trail = [repr(obs.fields)]
            for _ in range(30):
                obs = env.step(action(obs))
                trail.append(repr(obs.fields))
                if obs.done:
                    break
            played.append(trail)
        return played

    first, second = games(), games()
    assert first == second
    assert len({repr(game) for game in first}) > 1  # the opponent did not restart its stream


@pytest.mark.parametrize("name, kwargs", [
    ("Atari", {}), ("OpenSpiel", {}), ("OpenSpiel", {"game": "tic_tac_toe"}), ("TextArena", {}),
    ("Connect4", {}), ("GridWorld", {}), ("Echo", {}),
])
def test_check_env_passes_on_every_builtin_server(name, kwargs):
    """Upstream's OpenSpiel and Atari servers ignore reset's seed, so Gymnasium's check_env fails
    on them (docs/upstream.md); the built-in servers speaking their schemas seed every draw."""
    pytest.importorskip({"Atari": "ale_py", "OpenSpiel": "pyspiel", "TextArena": "textarena"}.get(name, "gymnasium"))
    from gymnasium.utils.env_checker import check_env

    env = gym.make(f"openenv/{name}-v0", **kwargs)
    try:
        check_env(env.unwrapped, skip_render_check=True)
    finally:
        env.close()
