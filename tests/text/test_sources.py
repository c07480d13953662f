"""Where a view comes from, first match wins: a user's view, the env's own methods
(render_text, get_action_meanings), the built-in table (by spec id, a RemoteEnv's
contract, PettingZoo's name, the class), an ansi render, the spaces; and the same view on
a remote client."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
from gymnasium import spaces as gs

import openenv_gym
from openenv_gym.text import TextView, env_key, strip_ansi, view_for, view_for_spaces
from tests.text import TAXI


class Arcade(gym.Env):
    """An env the table does not know, with ALE's action meanings and an image observation."""

    observation_space = gs.Box(0, 255, shape=(21, 16, 3), dtype=np.uint8)
    action_space = gs.Discrete(4)

    def get_action_meanings(self):
        return ["NOOP", "FIRE", "LEFT", "RIGHT"]


class Terminal(gym.Env):
    """An env the table does not know that renders ansi text with colours."""

    metadata = {"render_modes": ["ansi"]}
    observation_space = gs.Discrete(3)
    action_space = gs.Discrete(2)

    def __init__(self, render_mode="ansi"):
        self.render_mode = render_mode
        self.state = 1

    def render(self):
        return f"[\x1b[41m{'x' * self.state}\x1b[0m]   \n"


def test_env_key():
    assert env_key("FrozenLake-v1") == "FrozenLake"
    assert env_key("ALE/Pong-v5") == "ALE/Pong"
    assert env_key("connect_four_v3") == "connect_four"
    assert env_key("not an id!") == "not an id!"


def test_a_user_view_comes_first():
    env = gym.make("FrozenLake-v1")
    mine = TextView(env.observation_space, env.action_space, task="Mine.")
    assert view_for(env, mine) is mine
    made = view_for(env, lambda e: TextView(e.observation_space, e.action_space, task=f"For {e.spec.id}."))
    assert made.describe().startswith("For FrozenLake-v1.")


def test_the_env_s_own_methods_come_before_the_table():
    env = gym.make("FrozenLake-v1")
    env.unwrapped.render_text = lambda: "You stand on the ice."
    env.unwrapped.get_action_meanings = lambda: ["West", "South", "East", "North"]
    view = view_for(env)
    obs, info = env.reset(seed=0)
    assert view.obs_to_text(obs, info) == "You stand on the ice."
    assert view.legal_actions() == ["West", "South", "East", "North"]
    assert view.parse_action("south") == 1
    assert "Actions: West, South, East, North (or their numbers 0 to 3)" in view.describe()
    assert view.describe().startswith("FrozenLake: walk")  # the table still gives the task


def test_ale_style_action_meanings_name_the_actions():
    view = view_for(Arcade())
    assert view.action_json_schema()["anyOf"][0] == {"type": "string", "enum": ["NOOP", "FIRE", "LEFT", "RIGHT"]}
    assert view.parse_action("fire") == 1
    assert view.obs_to_text(np.zeros((21, 16, 3), np.uint8)) == (
        "an array of shape (21, 16, 3) and dtype uint8: min 0, max 0, mean 0")
    assert view.describe().startswith("An environment.\nObservation: a nested list of shape (21, 16, 3) of integers")


def test_an_ansi_render_is_the_text_where_nothing_else_knows_the_observation():
    env = Terminal()
    view = view_for(env)
    assert view.obs_to_text(1) == "[x]"
    env.state = 2
    assert view.obs_to_text(2) == "[xx]"
    assert view_for(Terminal(render_mode=None)).obs_to_text(1) == "1"
    # A table entry's format wins over an ansi render, unless a wrapper changed the observation.
    lake = gym.make("FrozenLake-v1", render_mode="ansi")
    lake.reset(seed=0)
    assert view_for(lake).obs_to_text(0).startswith("position: row 0, column 0")
    onehot = gym.wrappers.TransformObservation(lake, lambda s: np.eye(16, dtype=np.float32)[s], gs.Box(0.0, 1.0, (16,)))
    assert view_for(onehot).obs_to_text(np.eye(16, dtype=np.float32)[0]) == "SFFF\nFHFH\nFFFH\nHFFG"


def test_strip_ansi():
    assert strip_ansi("\x1b[41mS\x1b[0mFF\x1b[1;32mG\x1b[0m\x1b[?25l") == "SFFG"


def test_unknown_envs_fall_back_on_their_spaces():
    view = view_for(Terminal(render_mode=None))
    assert type(view) is TextView and view.action_names is None and view.task is None
    assert view.describe().startswith("An environment.\nObservation: an integer from 0 to 2\nActions: an integer")
    assert view_for_spaces(gs.Discrete(3), gs.Discrete(2), env_id="Nowhere-v0").describe().startswith(
        "The environment Nowhere-v0.")


def test_a_pettingzoo_env_s_view_is_its_first_agent_s_or_the_one_named():
    from pettingzoo.classic import rps_v2

    game = rps_v2.parallel_env()
    assert view_for(game).action_space == game.action_space("player_0")
    assert view_for(game, agent="player_1").action_space == game.action_space("player_1")


def test_remote_clients_read_as_the_server_does():
    from pettingzoo.classic import connect_four_v3

    with openenv_gym.local_server("FrozenLake-v1", env_kwargs={"is_slippery": False}) as url:
        env = openenv_gym.RemoteEnv(url)
        try:
            obs, info = env.reset(seed=0)
            view = view_for(env)  # found by the server's env id, env.contract.env_id
            assert view.obs_to_text(obs, info) == "position: row 0, column 0 (cell 0)"
            obs, *_ = env.step(view.parse_action("<action>down</action>"))
            assert view.obs_to_text(obs) == "position: row 1, column 0 (cell 4)"
        finally:
            env.close()
    with openenv_gym.local_server(connect_four_v3.env) as url:  # a PettingZoo game's seat
        env = openenv_gym.RemoteEnv(url)
        try:
            obs, info = env.reset(seed=0)
            view = view_for(env)
            assert view.obs_to_text(obs, info).endswith("Legal actions: 0, 1, 2, 3, 4, 5, 6")
            obs, *_ = env.step(view.parse_action("3"))
            assert view.obs_to_text(obs).splitlines()[-2] == ". . . X . . ."
        finally:
            env.close()


@pytest.mark.parametrize("env_id", ["FrozenLake-v1", TAXI, "CartPole-v1"])
def test_server_and_client_views_agree(env_id):
    env = gym.make(env_id)
    obs, info = env.reset(seed=1)
    server = view_for(env)
    client = view_for_spaces(env.observation_space, env.action_space, env_id=env_id)
    assert client.legal_actions(info) == server.legal_actions(info)
    assert client.action_json_schema() == server.action_json_schema()
    assert client.describe() == server.describe().replace(", and the map, one line per row, * marking you", "")
