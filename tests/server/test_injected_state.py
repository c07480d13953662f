"""``reset`` with ``injected_state`` (RFC 008's ``set_state`` capability): applied by a
``create_app(set_state=...)`` hook on every route where a session resets, refused with an
error naming the hook when there is none, and never passed on as a Gymnasium option."""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
import pytest

import openenv_gym
from openenv_gym import cli
from tests.envs import Counter
from tests.server.raw import ask, http, ws

STATE = [0.1, 0.0, 0.05, 0.0]


def cartpole_state(env: gym.Env, state: Any) -> tuple[np.ndarray, dict]:
    """A set_state hook for CartPole: its state is the observation."""
    env.unwrapped.state = np.asarray(state, dtype=np.float64)
    return np.asarray(env.unwrapped.state, dtype=np.float32), {"injected": True}


class OptionsEnv(gym.Env):
    """Remembers the options of its last reset."""

    observation_space = gym.spaces.Discrete(4)
    action_space = gym.spaces.Discrete(2)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.options = options
        return 0, {"options": sorted(options or {})}

    def step(self, action):
        return 0, 0.0, False, False, {}


def test_a_hook_starts_the_episode_from_the_injected_state_on_ws_and_http():
    with openenv_gym.local_server("CartPole-v1", set_state=cartpole_state) as url:
        with ws(url) as sock:
            reset = ask(sock, {"type": "reset", "data": {"seed": 0, "injected_state": STATE}})
            assert reset["data"]["observation"]["obs"] == pytest.approx(STATE)
            assert reset["data"]["observation"]["info"] == {"injected": True}
            step = ask(sock, {"type": "step", "data": {"action": 1}})
        local = gym.make("CartPole-v1")
        local.reset(seed=0)
        cartpole_state(local, STATE)
        assert step["data"]["observation"]["obs"] == pytest.approx(local.step(1)[0].tolist())
        status, answer = http(url, "/reset", {"injected_state": STATE})
        assert status == 200 and answer["observation"]["obs"] == pytest.approx(STATE)


def test_a_remote_env_injects_a_state_through_resets_options():
    with openenv_gym.local_server("CartPole-v1", set_state=cartpole_state) as url:
        with openenv_gym.RemoteEnv(url) as env:
            obs, info = env.reset(seed=0, options={"injected_state": STATE})
    assert obs.tolist() == pytest.approx(STATE) and info == {"injected": True}


def test_without_a_hook_the_key_is_refused_naming_the_hook_and_the_session_goes_on():
    with openenv_gym.local_server(OptionsEnv) as url:
        with ws(url) as sock:
            refused = ask(sock, {"type": "reset", "data": {"seed": 0, "injected_state": [1, 2]}})
            assert refused["data"]["code"] == "VALIDATION_ERROR"
            (entry,) = refused["data"]["errors"]
            assert entry["loc"] == ["injected_state"] and "set_state" in entry["msg"]
            assert "--set-state" in entry["msg"]
            reset = ask(sock, {"type": "reset", "data": {"seed": 0, "level": 2}})
            assert reset["data"]["observation"]["info"] == {"options": ["level"]}
        status, answer = http(url, "/reset", {"injected_state": [1, 2]})
        assert status == 422 and answer["detail"][0]["loc"] == ["injected_state"]


def test_the_key_never_reaches_gymnasiums_options():
    seen = []

    def hook(env, state):
        seen.append((env.unwrapped.options, state))
        return 3, {}

    with openenv_gym.local_server(OptionsEnv, set_state=hook) as url, ws(url) as sock:
        reset = ask(sock, {"type": "reset", "data": {"injected_state": {"cell": 3}, "level": 1}})
    assert reset["data"]["observation"]["obs"] == 3
    assert seen == [({"level": 1}, {"cell": 3})]


def test_a_hook_that_does_not_return_what_reset_returns_is_an_execution_error():
    with openenv_gym.local_server(OptionsEnv, set_state=lambda env, state: 3) as url, ws(url) as sock:
        error = ask(sock, {"type": "reset", "data": {"injected_state": 1}})
        assert error["data"]["code"] == "EXECUTION_ERROR" and "(observation, info)" in error["data"]["message"]
        assert ask(sock, {"type": "reset", "data": {}})["type"] == "observation"


def test_a_pettingzoo_seat_gets_the_hook_and_the_whole_game_route_refuses():
    pytest.importorskip("pettingzoo")
    calls = []

    def hook(env, state):
        calls.append(type(env).__name__)
        return env.game.observe(env.seat), {"injected": state}

    with openenv_gym.local_server("pettingzoo.classic.tictactoe_v3", set_state=hook) as url:
        with ws(url) as sock:
            reset = ask(sock, {"type": "reset", "data": {"seed": 0, "injected_state": "opening"}})
            assert reset["data"]["observation"]["info"] == {"injected": "opening"}
        from websockets.sync.client import connect

        with connect(url.replace("http", "ws", 1) + "/agents") as sock:
            refused = ask(sock, {"type": "reset", "data": {"injected_state": "opening"}})
            assert refused["data"]["code"] == "VALIDATION_ERROR"
            assert "/agents" in refused["data"]["errors"][0]["msg"]
            assert ask(sock, {"type": "reset", "data": {"seed": 0}})["type"] == "observation"
    assert calls == ["SeatEnv"]


def test_a_fields_env_takes_the_injected_state_in_its_own_reset():
    with openenv_gym.local_server(Counter) as url, ws(url) as sock:
        reset = ask(sock, {"type": "reset", "data": {"injected_state": 7}})
        assert reset["data"]["observation"]["count"] == 7
    with pytest.raises(TypeError, match="injected_state"):
        openenv_gym.create_app(Counter, set_state=cartpole_state)


def test_a_hook_cannot_reach_an_env_in_another_process():
    with pytest.raises(ValueError, match="set_state"):
        openenv_gym.create_app("CartPole-v1", set_state=cartpole_state, execution="process")


def test_the_cli_imports_the_hook_and_says_what_it_takes(capsys):
    args = cli._parser().parse_args(["serve", "CartPole-v1", "--set-state", f"{__name__}:cartpole_state"])
    assert cli._serve_options(args)["set_state"] is cartpole_state
    assert cli.main(["serve", "CartPole-v1", "--set-state", "cartpole_state"]) == 1
    assert "--set-state takes module:function" in capsys.readouterr().err
