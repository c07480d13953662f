"""Every entry of the built-in table, with the real env: Gymnasium's toy-text and classic
control envs by gym.make, PettingZoo's board games, the catalog's chess. For each: what the
observation text says, the round trip of its actions, the same reading on the client side
(spaces and id only), and the refusal of illegal actions naming the legal ones."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
from gymnasium import spaces as gs

from openenv_gym.text import BUILTIN_VIEWS, ActionParseError, TextView, view_for, view_for_spaces
from tests.text import TAXI

# id, make kwargs, what the first observation's text says (its lines, in order)
GYMNASIUM = {
    "FrozenLake": ("FrozenLake-v1", {"is_slippery": False},
                   ["position: row 0, column 0 (cell 0)", "map (* = you):", "*FFF", "FHFH", "FFFH", "HFFG"]),
    "CliffWalking": ("CliffWalking-v1", {},
                     ["position: row 3, column 0 (cell 36)", "map (* = you):", "............", "............",
                      "............", "*CCCCCCCCCCG"]),
    "Taxi": (TAXI, {}, ["taxi row: 3", "taxi column: 0", "passenger: at B", "destination: Y",
                             "Legal actions: south, north"]),
    "Blackjack": ("Blackjack-v1", {}, ["your sum: 11", "dealer's showing card: 10", "usable ace: no"]),
    "CartPole": ("CartPole-v1", {}, ["cart position: 0.0137", "cart velocity: -0.02302", "pole angle: -0.0459 rad",
                                     "pole angular velocity: -0.04835 rad/s"]),
    "MountainCar": ("MountainCar-v0", {}, ["position: -0.4726", "velocity: 0"]),
    "MountainCarContinuous": ("MountainCarContinuous-v0", {}, ["position: -0.4726", "velocity: 0"]),
    "Acrobot": ("Acrobot-v1", {}, ["cos of the first link's angle: 0.9996", "sin of the first link's angle: 0.02739",
                                   "cos of the second link's angle (relative): 0.9989",
                                   "sin of the second link's angle (relative): -0.04603",
                                   "first link's angular velocity: -0.09181 rad/s",
                                   "second link's angular velocity: -0.09669 rad/s"]),
    "Pendulum": ("Pendulum-v1", {}, ["x = cos of the angle: 0.652", "y = sin of the angle: 0.7582",
                                     "angular velocity: -0.4604 rad/s"]),
}
PETTINGZOO = {"connect_four", "tictactoe"}  # and chess, in test_chess.py


def test_every_entry_is_tested_here_or_in_test_chess():
    """The catalog's entries (``openenv/<Name>``) are tested on captures of upstream's servers, in
    tests/catalog/test_upstream_catalog.py."""
    from openenv_gym.catalog import CATALOG

    catalog = {f"openenv/{entry.name}" for entry in CATALOG}
    keys = {entry.keys[0] for entry in BUILTIN_VIEWS}
    assert keys - catalog == set(GYMNASIUM) | PETTINGZOO | {"chess"}


def entry_of(key):
    return next(entry for entry in BUILTIN_VIEWS if entry.keys[0] == key)


@pytest.mark.parametrize("key", sorted(GYMNASIUM))
def test_gymnasium_entry(key):
    env_id, kwargs, lines = GYMNASIUM[key]
    env = gym.make(env_id, **kwargs)
    obs, info = env.reset(seed=0)
    view = view_for(env)
    entry = entry_of(key)
    assert view.describe().startswith(entry.task)
    assert view.obs_to_text(obs, info).splitlines() == lines

    # The client knows the spaces and the id: the same actions, the same reading.
    client = view_for_spaces(env.observation_space, env.action_space, env_id=env_id)
    assert client.action_json_schema() == view.action_json_schema()
    assert client.obs_to_text(obs, info).splitlines()[0] == lines[0]  # the map is the server's only

    env.action_space.seed(0)
    for _ in range(5):
        if isinstance(env.action_space, gs.Discrete):
            legal = view.legal_actions(info)
            assert legal and all(name in view.describe() for name in legal)
            actions = [(text, view.parse_action(text, info=info)) for text in legal]
            assert [client.parse_action(text, info=info) for text, _ in actions] == [a for _, a in actions]
            assert [view.action_to_text(a) for _, a in actions] == legal
            action = actions[0][1]
        else:
            action = env.action_space.sample()
            text = view.action_to_text(action)
            assert np.array_equal(view.parse_action(text), action)
            assert np.array_equal(client.parse_action(f"<action>{text}</action>"), action)
        obs, reward, terminated, truncated, info = env.step(action)
        assert view.obs_to_text(obs, info)
        if terminated or truncated:
            break


@pytest.mark.parametrize("key", sorted(k for k in GYMNASIUM if entry_of(k).actions and k not in
                                       ("MountainCarContinuous", "Pendulum")))
def test_gymnasium_entry_refuses_unknown_and_out_of_range_actions(key):
    env_id, kwargs, _ = GYMNASIUM[key]
    env = gym.make(env_id, **kwargs)
    view = view_for(env)
    names = ", ".join(entry_of(key).actions)
    n = len(entry_of(key).actions)
    for reply, why in (("jump", "'jump', not an action name"), (str(n), f"{n}, out of range"), ("0.5", "0.5, not an")):
        with pytest.raises(ActionParseError) as caught:
            view.parse_action(reply, info={})
        assert f"got {why}" in str(caught.value)
        assert f"legal: one of {names} (or their numbers 0 to {n - 1})" in str(caught.value)


@pytest.mark.parametrize("env_id, name, bound", [("MountainCarContinuous-v0", "force", "1.0"),
                                                 ("Pendulum-v1", "torque", "2.0")])
def test_continuous_entries_refuse_values_outside_their_bounds(env_id, name, bound):
    view = view_for(gym.make(env_id))
    assert f"Actions: {name}: a number from -{bound} to {bound}" in view.describe()
    assert np.array_equal(view.parse_action(f"-{bound}"), np.array([-float(bound)], np.float32))
    for reply, why in ((f"{bound}1", f"above the upper bound {bound}"), (f"[-{bound}1]", f"below the lower bound -{bound}"),
                       ("[0, 0]", "expected 1 items"), ('"max"', "expected a number")):
        with pytest.raises(ActionParseError, match=f"legal: {name}: a number from -{bound} to {bound}") as caught:
            view.parse_action(reply)
        assert why in str(caught.value)


def test_taxi_refuses_the_actions_its_mask_forbids():
    env = gym.make(TAXI)
    obs, info = env.reset(seed=0)
    view = view_for(env)
    view.obs_to_text(obs, info)
    with pytest.raises(ActionParseError) as caught:
        view.parse_action("pickup")
    assert str(caught.value) == "cannot play 'pickup': pickup is not legal now; legal actions: south, north"


def test_frozen_lake_walks_to_the_goal_through_replies():
    env = gym.make("FrozenLake-v1", is_slippery=False)
    obs, info = env.reset(seed=0)
    view = view_for(env)
    for reply in ("down", "<action>down</action>", '{"action": "right"}', "```json\n\"right\"\n```", "1", "RIGHT"):
        view.obs_to_text(obs, info)
        obs, reward, terminated, truncated, info = env.step(view.parse_action(reply))
    assert (obs, reward, terminated) == (15, 1.0, True)
    assert view.obs_to_text(obs, info).splitlines()[0] == "position: row 3, column 3 (cell 15)"


def test_frozen_lake_8x8_and_custom_maps_read_their_own_size():
    env = gym.make("FrozenLake8x8-v1")
    view = view_for(env)
    assert view.obs_to_text(63).splitlines()[:2] == ["position: row 7, column 7 (cell 63)", "map (* = you):"]
    wide = gym.make("FrozenLake-v1", desc=["SFFH", "FFFG"])
    assert view_for(wide).obs_to_text(6).splitlines() == [
        "position: row 1, column 2 (cell 6)", "map (* = you):", "SFFH", "FF*G"]
    # A client without the env: a square grid from the space alone.
    assert view_for_spaces(gs.Discrete(64), gs.Discrete(4), env_id="FrozenLake8x8-v1").obs_to_text(9) == (
        "position: row 1, column 1 (cell 9)")


def test_an_entry_applies_only_where_the_spaces_fit():
    # A wrapper changed the observation (one-hot) and the actions: the parts that no longer fit give way.
    env = gym.wrappers.TransformObservation(
        gym.make("FrozenLake-v1"), lambda s: np.eye(16, dtype=np.float32)[s], gs.Box(0.0, 1.0, (16,)))
    view = view_for(env)
    assert view.obs_to_text(np.eye(16, dtype=np.float32)[1]).startswith("[0, 1, 0, 0,")
    assert view.parse_action("down") == 1  # the actions still fit
    assert view.describe().startswith("FrozenLake: walk")
    other = view_for_spaces(gs.Discrete(16), gs.Discrete(5), env_id="FrozenLake-v1")
    assert other.action_names is None and other.parse_action("4") == 4


# ---------------------------------------------------------------------------------------------
# PettingZoo's board games
# ---------------------------------------------------------------------------------------------


def test_connect_four():
    from pettingzoo.classic import connect_four_v3

    game = connect_four_v3.env()
    game.reset(seed=0)
    view = view_for(game)
    assert type(view) is TextView and view.describe().startswith("Connect Four")
    for column in (3, 3, 3, 4, 0, 0, 0, 0, 0, 0):  # the last six fill column 0
        agent = game.agent_selection
        view.obs_to_text(game.observe(agent))
        game.step(view.parse_action(f"<action>{column}</action>"))
    text = view.obs_to_text(game.observe(game.agent_selection))
    assert text == "\n".join([
        "0 1 2 3 4 5 6",
        "O . . . . . .",
        "X . . . . . .",
        "O . . . . . .",
        "X . . X . . .",
        "O . . O . . .",
        "X . . X O . .",
        "Legal actions: 1, 2, 3, 4, 5, 6",
    ])
    with pytest.raises(ActionParseError) as caught:
        view.parse_action("0")
    assert str(caught.value) == "cannot play '0': 0 is not legal now; legal actions: 1, 2, 3, 4, 5, 6"
    with pytest.raises(ActionParseError, match="got 7, out of range; legal: an integer from 0 to 6"):
        view.parse_action("7")
    # The client knows the spaces and PettingZoo's name (the served seat's env id).
    client = view_for_spaces(game.observation_space("player_0"), game.action_space("player_0"), env_id="connect_four_v3")
    assert client.obs_to_text(game.observe(game.agent_selection)) == text


def test_tictactoe():
    from pettingzoo.classic import tictactoe_v3

    game = tictactoe_v3.env()
    game.reset(seed=0)
    view = view_for(game)
    assert view.obs_to_text(game.observe("player_1")) == "0 3 6\n1 4 7\n2 5 8\nLegal actions: 0, 1, 2, 3, 4, 5, 6, 7, 8"
    for cell in ("4", "0", "<action>6</action>"):
        view.obs_to_text(game.observe(game.agent_selection))
        game.step(view.parse_action(cell))
    text = view.obs_to_text(game.observe(game.agent_selection))
    assert text == "X 3 O\n1 O 7\n2 5 8\nLegal actions: 1, 2, 3, 5, 7, 8"  # player_2's view: O are player_1's
    with pytest.raises(ActionParseError, match="cannot play '6': 6 is not legal now; legal actions: 1, 2, 3, 5, 7, 8"):
        view.parse_action("6")


def test_a_served_seat_is_known_by_its_pettingzoo_name():
    from pettingzoo.classic import connect_four_v3

    from openenv_gym.server.multiagent import MultiAgentSource, SeatEnv

    seat = SeatEnv(MultiAgentSource.from_probe(connect_four_v3.env, connect_four_v3.env(), "connect_four_v3"))
    obs, info = seat.reset(seed=0)
    view = view_for(seat)
    assert view.obs_to_text(obs, info).splitlines()[0] == "0 1 2 3 4 5 6"
    obs, *_ = seat.step(view.parse_action("3"))
    assert view.obs_to_text(obs).count("X") == 1
