"""RemoteEnv against a stock server built on the official ``openenv`` package."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

import openenv_gym
from openenv_gym.errors import ProtocolMismatchError, ValidationError


def test_inferred_spaces_follow_the_pydantic_schema(stock_url):
    with openenv_gym.RemoteEnv(stock_url) as env:
        assert env.encoding == "json"
        obs_space, act_space = env.observation_space, env.action_space
        assert isinstance(obs_space, gym.spaces.Dict)
        assert list(obs_space.spaces) == ["count", "progress", "label", "history", "winner"]
        assert obs_space["count"] == gym.spaces.Discrete(101)
        assert isinstance(obs_space["progress"], gym.spaces.Box)
        assert isinstance(obs_space["label"], gym.spaces.Text)
        assert isinstance(obs_space["history"], gym.spaces.Sequence)
        # `mode` has a default: left out, so the action is the one required field's space.
        assert act_space == gym.spaces.Discrete(5, start=1)
        rules = env.contract.view.rules
        assert rules["action.mode"].startswith("left out: not required, the server's default 'add' applies")


def test_an_optional_action_field_can_be_brought_in(stock_url):
    mode = gym.spaces.Discrete(2)
    with openenv_gym.RemoteEnv(stock_url, action_fields={"mode": None}) as env:
        assert env.action_space == gym.spaces.Discrete(5, start=1)
    with pytest.raises(ValueError, match="leaves out 'increment', which the server requires"):
        openenv_gym.RemoteEnv(stock_url, action_fields={"increment": None})
    with openenv_gym.RemoteEnv(stock_url, action_fields={"mode": mode}) as env:
        assert env.action_space == gym.spaces.Dict({"increment": gym.spaces.Discrete(5, start=1), "mode": mode})
        env.reset(seed=0)
        # The field's values travel as the given space encodes them: the server refuses 1 for a string.
        with pytest.raises(ValidationError, match="mode"):
            env.step({"increment": 3, "mode": 1})


def test_episodes_through_remote_env_stay_in_the_inferred_space(stock_url):
    with openenv_gym.RemoteEnv(stock_url) as env:
        env.action_space.seed(0)
        for episode in range(3):
            obs, info = env.reset(seed=episode)
            assert obs in env.observation_space
            assert obs["label"] == f"count={episode % 5}"
            terminated = truncated = False
            steps = 0
            while not (terminated or truncated):
                action = env.action_space.sample()
                obs, reward, terminated, truncated, info = env.step(action)
                steps += 1
                assert obs in env.observation_space, obs
                assert isinstance(reward, float) and reward >= 1.0
                assert truncated is False
                assert steps < 100
            assert terminated and obs["winner"] != "" and obs["count"] >= 20
            state = env.state()
            assert state["step_count"] == steps and state["count"] == obs["count"]


def test_float_string_and_list_fields_decode_faithfully(stock_url):
    with openenv_gym.RemoteEnv(stock_url) as env:
        env.reset(seed=0)
        obs, reward, *_ = env.step(np.int64(3))
        assert reward == 3.0
        obs, reward, *_ = env.step(3)
        assert reward == 3.0
        assert obs["count"] == 6 and obs["label"] == "count=6"
        np.testing.assert_allclose(obs["progress"], 6 / 20)
        np.testing.assert_array_equal(np.asarray(obs["history"]), [0, 3])


def test_user_given_spaces_override_inference(stock_url):
    obs_space = gym.spaces.Dict(
        {"count": gym.spaces.Box(0, 100, shape=(), dtype=np.int64), "label": gym.spaces.Text(32, charset="count=0123456789")}
    )
    act_space = gym.spaces.Dict({"increment": gym.spaces.Discrete(5, start=1)})
    with openenv_gym.RemoteEnv(stock_url, observation_space=obs_space, action_space=act_space) as env:
        assert env.observation_space is obs_space
        obs, _ = env.reset(seed=1)
        assert obs in obs_space and set(obs) == {"count", "label"}
        obs, *_ = env.step({"increment": 2})
        assert int(obs["count"]) == 3


def test_server_validation_errors_are_typed(stock_url):
    # A user-given action space wider than the server's: the server refuses 9.
    wide = gym.spaces.Dict({"increment": gym.spaces.Discrete(20)})
    with openenv_gym.RemoteEnv(stock_url, action_space=wide) as env:
        env.reset()
        with pytest.raises(ValidationError) as info:
            env.step({"increment": 9})
        assert info.value.code.value == "VALIDATION_ERROR"
        assert "increment" in str(info.value)
        obs, reward, *_ = env.step({"increment": 2})  # the session goes on
        assert reward == 2.0


def test_msgpack_is_refused_by_a_stock_server(stock_url):
    with pytest.raises(ProtocolMismatchError, match="does not offer msgpack"):
        openenv_gym.RemoteEnv(stock_url, encoding="msgpack")
