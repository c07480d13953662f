"""Upstream OpenEnv's own servers, replayed from their captures: RemoteEnv infers usable
spaces from what each real server published and sent, plays the recorded episode with
Gymnasium actions that write exactly the recorded JSON, gets the recorded rewards, and
turns each recorded error frame into the typed error it stands for."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

import openenv_gym
from openenv_gym.errors import ExecutionError, RemoteError, ValidationError
from openenv_gym.protocol import Step
from openenv_gym.spaces.stock import NULL_FIELDS, needs_first_observation
from tests.conftest import asgi_server
from tests.upstream.replay import CAPTURED, UNSENDABLE, exchanges, load, replay_app

#: The upstream envs with a Discrete action, and its size.
DISCRETE = {"connect4": 7, "grid_world": 4, "maze": 4, "openspiel": 3, "atari": 6}
#: Those whose observations list the legal actions.
MASKED = ("connect4", "maze", "openspiel", "atari")


def fits(env, obs, info) -> bool:
    """``obs`` is in the env's observation space, a null number's ``nan`` aside (``Box.contains``
    refuses it; the view lists the field in ``info[NULL_FIELDS]``)."""
    nulls = set(info.get(NULL_FIELDS, ()))
    def null_number(key, space):
        return key in nulls and isinstance(space, gym.spaces.Box) and space.dtype.kind == "f" and np.isnan(obs[key]).all()

    return all(null_number(key, space) or space.contains(obs[key]) for key, space in env.observation_space.spaces.items())


def sendable(view, action):
    """The space's value that sends exactly the recorded ``action``, else ``None``."""
    try:
        value = view.action.to_space(action)
    except (KeyError, TypeError, ValueError):
        return None
    return value if view.act(value) == action else None


@pytest.fixture(params=CAPTURED)
def replayed(request):
    with asgi_server(replay_app(request.param)) as url:
        yield request.param, url


def test_the_inferred_spaces_fit_what_each_server_sent(replayed):
    name, url = replayed
    capture = load(name)
    with openenv_gym.RemoteEnv(url) as env:
        first = env.contract.view.rules["first observation"]
        # No list in their schemas: nothing to learn from a first observation.
        assert first.startswith("POST /reset" if needs_first_observation(capture["schema"]) else "not needed")
        if name in DISCRETE:
            assert env.action_space == gym.spaces.Discrete(DISCRETE[name])
        obs, info = env.reset(seed=0)
        assert fits(env, obs, info)
        if name in MASKED:
            assert info["action_mask"].shape == (DISCRETE[name],) and info["action_mask"].any()
        steps = 0
        for session, sent, reply in exchanges(capture):
            if session != "scripted episode" or not isinstance(sent, dict):
                continue
            if sent.get("type") == "reset" and steps:
                obs, info = env.reset(seed=sent["data"]["seed"])
            elif sent.get("type") == "step" and reply.get("type") == "observation":
                action = sendable(env.contract.view, sent["data"])
                if action is None:
                    continue  # the replay answers from the next recorded frame that matches
                obs, reward, terminated, truncated, info = env.step(action)
                assert fits(env, obs, info)
                assert reward == (reply["data"]["reward"] or 0.0) and terminated == reply["data"]["done"]
                assert truncated is False
                steps += 1
        assert steps or name in UNSENDABLE


@pytest.mark.parametrize("name", [n for n in CAPTURED if n in MASKED])
def test_sampled_actions_with_the_mask_are_legal(name):
    """The mask marks exactly the actions upstream lists as legal: a sample drawn with it is
    one of them, on every observation of the capture."""
    capture = load(name)
    with asgi_server(replay_app(name)) as url, openenv_gym.RemoteEnv(url) as env:
        view = env.contract.view
        legal_field = view.legal.field
        env.action_space.seed(0)
        for _, _, reply in exchanges(capture):
            if isinstance(reply, dict) and reply.get("type") == "observation":
                fields = reply["data"]["observation"]
                if not fields.get(legal_field):
                    continue
                _, info = view.observe({k: v for k, v in fields.items() if k not in ("done", "reward", "metadata")})
                for _ in range(5):
                    assert env.action_space.sample(mask=info["action_mask"]) in fields[legal_field]


def test_recorded_errors_are_typed(replayed):
    """Each error frame a real server answered (a wrong type, a missing field, an unknown key,
    an out-of-range action) raises the error its code stands for, with the server's message."""
    name, url = replayed
    capture = load(name)
    checked = 0
    for session_name, sent, reply in exchanges(capture):
        if session_name == "step before any reset":  # a client that resets first cannot send it so
            continue
        if not (isinstance(sent, dict) and sent.get("type") == "step" and reply.get("type") == "error"):
            continue
        with openenv_gym.RemoteEnv(url) as env:  # a session of its own, as the probe had
            env.reset(seed=0)
            expected = ValidationError if reply["data"]["code"] == "VALIDATION_ERROR" else ExecutionError
            with pytest.raises(expected) as raised:
                env.unwrapped._live().request(Step(sent["data"]))
        assert isinstance(raised.value, RemoteError)
        assert reply["data"]["message"][:40] in str(raised.value)
        checked += 1
    # Every server refuses at least an unknown key, and a wrong type where a field is required.
    assert checked >= (2 if capture["schema"]["action"].get("required") else 1)


def test_atari_screen_is_an_image_and_its_actions_are_named(tmp_path):
    with asgi_server(replay_app("atari")) as url, openenv_gym.RemoteEnv(url) as env:
        assert env.observation_space["screen"] == gym.spaces.Box(0, 255, (210, 160, 3), np.uint8)
        obs, info = env.reset(seed=0)
        assert obs["screen"].dtype == np.uint8 and obs["screen"].shape == (210, 160, 3)
        assert info["metadata"]["action_meanings"][1] == "Action.FIRE"
