"""A PettingZoo seat is never handed to its client dead.

In poker the server's opponent may fold before the client's seat has moved
(texas_holdem_v4 does on 8 of 40 seeded resets of player_0): that game is over
at reset. The seat view must say so (``done=True`` and the seat's reward, as
PettingZoo's rewards say), never send a live-looking observation whose action
mask is empty, after which every step failed with PettingZoo's "when an agent
is dead, the only valid action is None". The same holds for every step: the
opponent's reply may end the game.

Every outcome is checked against the game replayed locally with PettingZoo's
own AEC API, the same seat policy and the server's opponent (random over the
mask, its action spaces seeded from the reset seed, as ``random_opponent`` says).
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
import pytest

pytest.importorskip("pettingzoo")
pytest.importorskip("rlcard")  # the poker games

from openenv import GenericEnvClient  # noqa: E402

import openenv_gym  # noqa: E402
from openenv_gym.server.multiagent import GAME_OVER  # noqa: E402

#: Classic games whose hands can end during the opponent's moves (gin rummy and
#: backgammon are no longer in PettingZoo's classic family).
GAMES = ["texas_holdem_v4", "leduc_holdem_v4", "texas_holdem_no_limit_v6"]
SEEDS = range(40)
#: Moves of one seat in one hand: a hold'em seat acts a few times per betting round.
MAX_MOVES = 60


def _game(name: str):
    return importlib.import_module(f"pettingzoo.classic.{name}").env


def _seat_move(legal: list[int], seed: int, move: int) -> int:
    """The seat's policy in the test: the same on the server and in the replay."""
    return legal[(seed + move) % len(legal)]


@dataclass
class Outcome:
    """How a hand went for one seat: ended before its first move, and its total reward."""

    dead_at_reset: bool
    reward: float


def _replay(name: str, seed: int, seat: str) -> Outcome:
    """The hand played locally through PettingZoo's AEC API, bounded."""
    env = _game(name)()
    env.reset(seed=seed)
    for i, agent in enumerate(env.possible_agents):
        env.action_space(agent).seed(seed + i)
    total, moves = 0.0, 0
    for _ in range(4 * MAX_MOVES):
        if seat not in env.agents:
            break
        agent = env.agent_selection
        obs, reward, terminated, truncated, _ = env.last()
        if agent == seat:
            total += float(reward)
            if terminated or truncated:
                break
            env.step(_seat_move(np.flatnonzero(obs["action_mask"]).tolist(), seed, moves))
            moves += 1
        elif terminated or truncated:
            env.step(None)
        else:
            env.step(env.action_space(agent).sample(obs["action_mask"].astype(np.int8)))
    else:
        raise AssertionError(f"{name} seed {seed}: the local hand did not end")
    env.close()
    return Outcome(dead_at_reset=moves == 0, reward=total)


@pytest.fixture(scope="module", params=GAMES)
def served(request) -> Iterator[tuple[str, str]]:
    with openenv_gym.local_server(f"pettingzoo.classic.{request.param}") as url:
        yield request.param, url


def _legal(observation: dict) -> list[int]:
    return [i for i, m in enumerate(observation["action_mask"]) if m]


@pytest.mark.parametrize("seat", [None, "player_0", "player_1"])
def test_a_stock_client_is_never_handed_a_dead_seat(served, seat):
    name, url = served
    dead = 0
    with GenericEnvClient(base_url=url).sync() as client:
        for seed in SEEDS:
            expected = _replay(name, seed, seat or "player_0")
            result = client.reset(seed=seed, **({"agent": seat} if seat else {}))
            assert result.done == expected.dead_at_reset, seed
            total, moves = float(result.reward or 0.0), 0
            while not result.done:
                legal = result.observation["legal_actions"]
                assert legal and legal == _legal(result.observation), (seed, moves, result.observation)
                assert result.observation["current_player"] == (seat or "player_0")
                assert moves < MAX_MOVES, f"seed {seed}: the hand did not end"
                result = client.step({"action": _seat_move(legal, seed, moves)})
                total += float(result.reward or 0.0)
                moves += 1
            dead += moves == 0
            assert result.observation["terminated"] or result.observation["truncated"], seed
            assert result.observation["current_player"] is None
            assert result.observation["legal_actions"] == []
            assert np.isclose(total, expected.reward), (seed, total, expected)
        if moves == 0:  # the last hand ended at reset: a step is still the seat's (dead) last turn
            result = client.step({"action": 0})
            assert result.done and np.isclose(result.reward, expected.reward)
        with pytest.raises(RuntimeError, match="is over: call reset"):
            client.step({"action": 0})  # after the end of the last hand
    if name == "texas_holdem_v4" and seat in (None, "player_0"):
        assert dead == 8  # the hands in which the opponent folds first


@pytest.mark.parametrize("seat", ["player_0", "player_1"])
def test_remote_env_is_never_handed_a_dead_seat(served, seat):
    """Gymnasium's reset has no ``done``: a hand over before the seat's first move
    says so in ``info[GAME_OVER]``, and the next step (any action: the seat has
    none left) ends the episode with the seat's reward."""
    name, url = served
    env = openenv_gym.RemoteEnv(url)
    try:
        for seed in SEEDS:
            expected = _replay(name, seed, seat)
            obs, info = env.reset(seed=seed, options={"agent": seat})
            assert (GAME_OVER in info) == expected.dead_at_reset, (seed, info)
            if GAME_OVER in info:
                assert not obs["action_mask"].any()
                assert np.isclose(info[GAME_OVER]["reward"], expected.reward)
                assert info[GAME_OVER]["terminated"] or info[GAME_OVER]["truncated"]
            total, moves = 0.0, 0
            terminated = truncated = False
            while not (terminated or truncated):
                assert moves < MAX_MOVES, f"seed {seed}: the hand did not end"
                legal = np.flatnonzero(obs["action_mask"]).tolist()
                assert legal or GAME_OVER in info, (seed, moves)
                action = _seat_move(legal, seed, moves) if legal else 0
                obs, reward, terminated, truncated, info = env.step(action)
                total += reward
                moves += 1
            assert np.isclose(total, expected.reward), (seed, total, expected)
    finally:
        env.close()
