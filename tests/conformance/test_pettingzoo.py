"""PettingZoo's own test utilities (``pettingzoo.test``) over the wire: each
gets :class:`~openenv_gym.RemoteAECEnv` / :class:`~openenv_gym.RemoteParallelEnv`
clients of real servers on 127.0.0.1 where it expects the game itself.

The games: ``cooperative_pong_v6`` (a global state, ``max_cycles``, an
``rgb_array`` render mode) and ``connect_four_v3`` (turn-based, action masks);
``render_test`` runs on every game here whose frames pygame draws.
Sessions use msgpack: ``state()`` of cooperative pong is a 280x480x3 image,
which JSON carries in seconds, not milliseconds.
"""

from __future__ import annotations

import contextlib
import functools
import warnings
from collections.abc import Iterator
from types import ModuleType
from typing import Any

import pytest

pettingzoo = pytest.importorskip("pettingzoo")
pytest.importorskip("pygame")  # cooperative pong draws its state and frames with pygame

from pettingzoo.butterfly import cooperative_pong_v6  # noqa: E402
from pettingzoo.classic import connect_four_v3  # noqa: E402
from pettingzoo.test import (  # noqa: E402
    api_test,
    max_cycles_test,
    parallel_api_test,
    parallel_seed_test,
    render_test,
    seed_test,
    state_test,
)

import openenv_gym  # noqa: E402

GAMES = {"cooperative_pong_v6": cooperative_pong_v6, "connect_four_v3": connect_four_v3}
#: Games whose frames pygame draws, for ``render_test``: their servers run every env call
#: on one thread (pygame is not thread-safe), shared by the servers of this process.
RENDER_GAMES = [
    "pettingzoo.butterfly.cooperative_pong_v6",
    "pettingzoo.classic.chess_v6",
    "pettingzoo.classic.connect_four_v3",
    "pettingzoo.classic.go_v5",
    "pettingzoo.classic.leduc_holdem_v4",
    "pettingzoo.classic.rps_v2",
    "pettingzoo.classic.texas_holdem_no_limit_v6",
    "pettingzoo.classic.texas_holdem_v4",
    "pettingzoo.classic.tictactoe_v3",
]


class OverTheWire:
    """A PettingZoo env module (``env(**kwargs)``, ``parallel_env(**kwargs)``)
    whose games run on servers of their own: each call serves the module's
    factory with the call's arguments and returns a client of that server."""

    def __init__(self, module: ModuleType, stack: contextlib.ExitStack) -> None:
        self.module = module
        self._stack = stack

    def _serve(self, **kwargs: Any) -> str:
        if kwargs.get("render_mode") == "human":
            # Servers refuse human rendering (a window no client sees): served
            # without a render mode, the client's render() is None, which is
            # what PettingZoo's checks expect of "human".
            kwargs = {**kwargs, "render_mode": None}
        factory = functools.partial(self.module.env, **kwargs)
        return self._stack.enter_context(openenv_gym.local_server(factory, max_sessions=8))

    def env(self, **kwargs: Any) -> openenv_gym.RemoteAECEnv:
        client = openenv_gym.RemoteAECEnv(self._serve(**kwargs), encoding="msgpack")
        self._stack.callback(client.close)
        return client

    def parallel_env(self, **kwargs: Any) -> openenv_gym.RemoteParallelEnv:
        client = openenv_gym.RemoteParallelEnv(self._serve(**kwargs), encoding="msgpack")
        self._stack.callback(client.close)
        return client


@contextlib.contextmanager
def over_the_wire(module: ModuleType) -> Iterator[OverTheWire]:
    with contextlib.ExitStack() as stack, warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the checkers' style advice (all-zero observations, ...)
        yield OverTheWire(module, stack)


@pytest.fixture(params=sorted(GAMES))
def remote(request) -> Iterator[OverTheWire]:
    with over_the_wire(GAMES[request.param]) as remote:
        yield remote


@pytest.fixture
def pong() -> Iterator[OverTheWire]:
    """Cooperative pong alone: connect four has neither ``max_cycles`` nor a global state."""
    with over_the_wire(cooperative_pong_v6) as remote:
        yield remote


def test_api_test(remote):
    api_test(remote.env(), num_cycles=100)


def test_parallel_api_test(remote):
    parallel_api_test(remote.parallel_env(), num_cycles=100)


def test_seed_test(remote):
    seed_test(remote.env, num_cycles=50)


def test_parallel_seed_test(remote):
    parallel_seed_test(remote.parallel_env, num_cycles=50)


def test_max_cycles_test(pong):
    max_cycles_test(pong)


def test_state_test(pong):
    state_test(pong.env(), pong.parallel_env(), num_cycles=5)


@pytest.mark.parametrize("game", RENDER_GAMES)
def test_render_test(game):
    module = pytest.importorskip(game)  # chess needs python-chess, the card games rlcard
    with over_the_wire(module) as remote:
        render_test(remote.env)
