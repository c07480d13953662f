"""``ServeOptions``: one frozen object for every way to start a server, checked when
built, and the keyword arguments of the same names (``ServeKwargs``) agreeing with it."""

from __future__ import annotations

import dataclasses
import json
import typing
import urllib.request

import pytest

import openenv_gym
from openenv_gym.client.options import ConnectKwargs, ConnectOptions
from openenv_gym.client.retry import Reconnect
from openenv_gym.protocol import Limits
from openenv_gym.server.hosting import Server
from openenv_gym.server.options import ServeKwargs, ServeOptions
from openenv_gym.server.resolve import resolve

#: Keywords that take more than their field holds (``reconnect=True``: the default policy).
WIDER_KEYWORDS = {"reconnect": Reconnect | bool | None}


@pytest.mark.parametrize(("options", "kwargs"), [(ServeOptions, ServeKwargs), (ConnectOptions, ConnectKwargs)],
                         ids=["server", "client"])
def test_the_keyword_twin_names_every_field_with_its_type(options, kwargs):
    fields = typing.get_type_hints(options)
    hints = typing.get_type_hints(kwargs)
    assert list(hints) == [f.name for f in dataclasses.fields(options)]
    assert hints == {name: WIDER_KEYWORDS.get(name, fields[name]) for name in hints}


def test_options_are_frozen_and_merge_by_name():
    options = ServeOptions(max_sessions=8)
    with pytest.raises(dataclasses.FrozenInstanceError):
        options.max_sessions = 9  # type: ignore[misc]
    merged = ServeOptions.merge(options, step_timeout=2.0)
    assert (merged.max_sessions, merged.step_timeout, options.step_timeout) == (8, 2.0, None)
    with pytest.raises(TypeError, match=r"unknown server option 'max_sesions'; the options are: max_sessions, "):
        ServeOptions.merge(options, max_sesions=8)


@pytest.mark.parametrize(("given", "says"), [
    ({"max_sessions": 0}, "max_sessions must be at least 1, not 0"),
    ({"session_timeout": 0}, "session_timeout must be positive or None, not 0"),
    ({"held_session_timeout": -1}, "held_session_timeout must be positive or None"),
    ({"step_timeout": 0}, "step_timeout must be positive or None"),
    ({"inline_deadline": -1.0}, "inline_deadline must be positive or None"),
    ({"max_held_sessions": -1}, "max_held_sessions must be 0 or more"),
    ({"handshake_timeout": 0}, "handshake_timeout must be positive"),
    ({"busy_poll": -0.5}, "busy_poll must be a number of seconds >= 0"),
    ({"busy_poll": 1000}, "busy_poll is in seconds, at most 1.0, not 1000 (it would spin 1000 s after each message)"),
    ({"execution": "threads"}, "execution must be 'auto', 'thread', 'inline' or 'process', not 'threads'"),
    ({"vector_backend": "threads"}, "vector_backend must be 'auto', "),
    ({"mode": "staging"}, "the server mode is simulation or production, not 'staging'"),
    ({"execution": "inline", "step_timeout": 1.0}, "a step timeout needs env calls on a worker thread"),
    ({"execution": "inline", "single_thread": True}, "execution='auto' or 'thread', or single_thread=False"),
    ({"env_memory_mb": 256}, "add execution='process'"),
    ({"execution": "process", "env_memory_mb": 0}, "env_memory_mb is a positive number of MiB"),
    ({"execution": "process", "tools": [lambda env: 0]}, "tools= run on each session's env"),
    ({"execution": "process", "set_state": lambda env, state: (0, {})}, "set_state= runs on each session's env"),
])
def test_a_bad_option_fails_when_the_options_are_built_saying_what_to_do(given, says):
    with pytest.raises(ValueError, match=says.replace("(", r"\(").replace(")", r"\)")):
        ServeOptions(**given)


def test_what_an_env_of_another_kind_cannot_take_is_refused_where_its_kind_is_known():
    with pytest.raises(TypeError, match="opponent= applies to PettingZoo environments only"):
        resolve("CartPole-v1", options=ServeOptions(opponent=lambda turn: 0))
    with pytest.raises(ValueError, match="served on one thread"):
        resolve("CartPole-v1", {"render_mode": "rgb_array"}, ServeOptions(execution="inline"))


def test_the_source_is_built_whole_and_frozen():
    def peek(env) -> float:
        """The cart's position."""
        return float(env.unwrapped.state[0])

    source = resolve("CartPole-v1", options=ServeOptions(tools=[peek]))
    assert [tool.name for tool in source.tools] == ["peek"]
    assert source.schema["x-openenv-gym"]["mcp"]["tools"] == ["act", "observe", "legal_actions", "new_episode", "episode_state", "peek"]
    with pytest.raises(dataclasses.FrozenInstanceError):
        source.tools = ()  # type: ignore[misc]


def test_every_entry_point_takes_the_object_or_its_keywords():
    options = ServeOptions(max_sessions=3, limits=Limits(max_frame_bytes=1 << 20))
    app = openenv_gym.create_app("CartPole-v1", options, max_held_sessions=2)
    server = app.state.openenv_gym
    assert (server.options.max_sessions, server.max_held_sessions) == (3, 2)
    assert Server(resolve("CartPole-v1"), options).options is options
    with openenv_gym.local_server("CartPole-v1", options, env_kwargs={"max_episode_steps": 7}) as url:
        with urllib.request.urlopen(url + "/health", timeout=10) as response:
            assert json.loads(response.read())["max_sessions"] == 3
        env = openenv_gym.RemoteEnv(url)
        try:
            env.reset(seed=0)
            lengths = [step for step in range(1, 8) if any(env.step(0)[2:4])]
            assert lengths == [7]  # pushed left from seed 0, the pole stands 7 steps: truncated there
        finally:
            env.close()
