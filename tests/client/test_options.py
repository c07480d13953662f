"""ConnectOptions: every client takes it the same way, as ``options=`` or as
keyword arguments of the same names (which override it)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pytest

import openenv_gym
from openenv_gym import ConnectOptions, Reconnect
from openenv_gym.errors import ConnectionClosedError

pytest.importorskip("pettingzoo")

TOKEN = "s3cret"


@pytest.fixture(scope="module")
def guarded() -> Iterator[dict[str, str]]:
    """Servers that need the token: a Gymnasium env and a PettingZoo game."""
    with openenv_gym.local_server("CartPole-v1", token=TOKEN) as env_url, \
            openenv_gym.local_server("pettingzoo.classic.rps_v2", token=TOKEN) as game_url:
        yield {"env": env_url, "game": game_url}


def remote_env(urls: dict[str, str], **kwargs: Any) -> None:
    with openenv_gym.RemoteEnv(urls["env"], **kwargs) as env:
        env.reset(seed=0)
        env.step(0)


def vector_env(mode: str) -> Callable[..., None]:
    def play(urls: dict[str, str], **kwargs: Any) -> None:
        envs = openenv_gym.RemoteVectorEnv(urls["env"], 2, mode=mode, **kwargs)
        try:
            assert envs.mode == mode
            envs.reset(seed=0)
            envs.step(np.zeros(2, np.int64))
        finally:
            envs.close()

    return play


def aec_env(urls: dict[str, str], **kwargs: Any) -> None:
    env = openenv_gym.RemoteAECEnv(urls["game"], **kwargs)
    try:
        env.reset(seed=0)
        env.step(0)
    finally:
        env.close()


def parallel_env(urls: dict[str, str], **kwargs: Any) -> None:
    env = openenv_gym.RemoteParallelEnv(urls["game"], **kwargs)
    try:
        env.reset(seed=0)
        env.step({agent: 0 for agent in env.agents})
    finally:
        env.close()


#: Each client, opened and played a little against the guarded servers.
CLIENTS = {
    "RemoteEnv": remote_env,
    "RemoteVectorEnv-batched": vector_env("batched"),
    "RemoteVectorEnv-sessions": vector_env("sessions"),
    "RemoteAECEnv": aec_env,
    "RemoteParallelEnv": parallel_env,
}


@pytest.mark.parametrize("client", list(CLIENTS))
def test_every_client_takes_options(guarded, client):
    CLIENTS[client](guarded, options=ConnectOptions(token=TOKEN, message_timeout=30))


@pytest.mark.parametrize("client", list(CLIENTS))
def test_every_client_takes_the_options_as_keywords_which_override_the_object(guarded, client):
    CLIENTS[client](guarded, token=TOKEN)
    CLIENTS[client](guarded, options=ConnectOptions(token="wrong"), token=TOKEN)
    with pytest.raises(ConnectionClosedError, match="401"):
        CLIENTS[client](guarded, options=ConnectOptions(token=TOKEN), token="wrong")


@pytest.mark.parametrize("client", list(CLIENTS))
def test_an_unknown_keyword_is_a_type_error_naming_the_options(guarded, client):
    with pytest.raises(TypeError, match="unknown connection option 'tokn'; the options are: encoding, token, "):
        CLIENTS[client](guarded, tokn=TOKEN)


@pytest.mark.parametrize(
    "field, value",
    [("encoding", "bogus"), ("compression", "gzip"), ("busy_poll", -1.0)],
)
def test_a_value_an_option_cannot_take_is_a_value_error_naming_it(guarded, field, value):
    with pytest.raises(ValueError, match=field):
        ConnectOptions(**{field: value})
    with pytest.raises(ValueError, match=field):
        remote_env(guarded, token=TOKEN, **{field: value})


def test_reconnect_true_is_the_default_policy_and_false_none():
    assert ConnectOptions(reconnect=True).reconnect == Reconnect()
    assert ConnectOptions(reconnect=False).reconnect is None
    assert ConnectOptions.merge(ConnectOptions(reconnect=True), reconnect=False).reconnect is None
