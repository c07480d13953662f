"""The built-in Echo server: upstream echo_env's schema and MCP-tool steps."""

from __future__ import annotations

import json
import re

import gymnasium as gym
import pytest

import openenv_gym
from openenv_gym import catalog
from openenv_gym.catalog.echo_env import EchoEnvironment

pytest.importorskip("openenv")


def upstream_schema() -> dict:
    """echo_env's /schema as openenv 0.10's create_app publishes it (from the official models)."""
    from openenv.core.env_server.mcp_types import CallToolAction, CallToolObservation
    from openenv.core.env_server.types import Observation, State

    return {
        "action": CallToolAction.model_json_schema(),
        "observation": CallToolObservation.model_json_schema(),
        "reset_observation": Observation.model_json_schema(),
        "state": State.model_json_schema(),
    }


def test_schema_is_upstream_pydantic_schema():
    assert catalog.get("Echo").schema() == upstream_schema()
    assert catalog.get("Echo").server_source().startswith("embedded")


def normalise(message: str) -> str:
    return re.sub(r"errors\.pydantic\.dev/[\d.]+/", "errors.pydantic.dev/X/", message)


def upstream_echo_app():
    """An MCPEnvironment with echo_env's two FastMCP tools, on openenv's create_app,
    served as upstream's app.py serves it (test-only reference)."""
    pytest.importorskip("fastmcp")
    import uuid

    from fastmcp import FastMCP
    from openenv.core.env_server import create_app
    from openenv.core.env_server.mcp_environment import MCPEnvironment
    from openenv.core.env_server.mcp_types import CallToolAction, CallToolObservation
    from openenv.core.env_server.types import Observation, State

    class ReferenceEcho(MCPEnvironment):
        SUPPORTS_CONCURRENT_SESSIONS = True

        def __init__(self):
            server = FastMCP("echo_env")

            @server.tool
            def echo_message(message: str) -> str:
                """Echo back the provided message.

                Args:
                    message: The message to echo back
                """
                return message

            @server.tool
            def echo_with_length(message: str) -> dict:
                """Echo back the message with its length.

                Args:
                    message: The message to echo back
                """
                return {"message": message, "length": len(message)}

            super().__init__(server)
            self._state = State(episode_id=str(uuid.uuid4()), step_count=0)

        def reset(self, seed=None, episode_id=None, **kwargs):
            self._state = State(episode_id=episode_id or str(uuid.uuid4()), step_count=0)
            return Observation(
                reward=0.0, metadata={"status": "ready", "message": "Echo environment ready!"}
            )

        def _step_impl(self, action, timeout_s=None, **kwargs):
            return Observation(reward=0.0)

        def step(self, action, timeout_s=None, **kwargs):
            self._state.step_count += 1
            return super().step(action, timeout_s=timeout_s, **kwargs)

        async def step_async(self, action, timeout_s=None, **kwargs):  # what /ws calls; upstream counts here too
            self._state.step_count += 1
            return await super().step_async(action, timeout_s=timeout_s, **kwargs)

        @property
        def state(self):
            return self._state

    return create_app(
        ReferenceEcho, CallToolAction, CallToolObservation, reset_observation_cls=Observation,
        env_name="echo_env", max_concurrent_envs=4,
    )


#: Step payloads sent to both servers: tools, results, tool errors, action validation errors.
STEPS = [
    {"type": "list_tools"},
    {"type": "call_tool", "tool_name": "echo_message", "arguments": {"message": "hello"}},
    {"type": "call_tool", "tool_name": "echo_with_length", "arguments": {"message": "héllo ✓"}},
    {"tool_name": "echo_message", "arguments": {"message": ""}},
    {"type": "call_tool", "tool_name": "nope", "arguments": {}},
    {"type": "call_tool", "tool_name": "it's", "arguments": {}},
    {"type": "call_tool", "tool_name": "echo_message"},
    {"type": "call_tool", "tool_name": "echo_message", "arguments": {"message": 5}},
    {"type": "call_tool", "tool_name": "echo_with_length", "arguments": {"message": None, "x": "y" * 70}},
    {"type": "call_tool", "tool_name": "echo_message", "arguments": {"x": {"a": [1, 2]}, "z": True}},
    {"type": "call_tool", "tool_name": "echo_message", "arguments": {"message": ["not found"]}},
    {"type": "list_tools", "metadata": {"a": 1}},
    {"type": "list_tools", "tool_name": "echo_message"},
    {"type": "bogus"},
    {"type": "call_tool"},
    {"type": "call_tool", "tool_name": "echo_message", "arguments": "{}"},
]


def frames(url: str) -> list:
    """What a raw /ws session answers: a step before reset, resets, every STEPS payload, state."""
    import json

    from websockets.sync.client import connect

    out = []
    with connect(url.replace("http", "ws", 1) + "/ws") as ws:
        messages = [{"type": "step", "data": {"type": "list_tools"}}, {"type": "reset", "data": {}},
                    {"type": "reset", "data": {"seed": 1, "episode_id": "ep"}}]
        messages += [{"type": "step", "data": data} for data in STEPS] + [{"type": "state"}]
        for message in messages:
            ws.send(json.dumps(message))
            frame = json.loads(ws.recv())
            if frame["type"] == "error":  # pydantic's own fields besides type/loc/msg/input
                frame["data"]["errors"] = [
                    {k: e[k] for k in ("type", "loc", "msg", "input")} for e in frame["data"]["errors"]
                ]
            error = frame["data"].get("observation", {}).get("error")
            if error:
                error["message"] = normalise(error["message"])
            out.append((message, frame))
    return out


def test_same_frames_as_an_openenv_mcp_environment_server():
    pytest.importorskip("websockets")
    from tests.conftest import asgi_server

    with asgi_server(upstream_echo_app()) as url:
        expected = frames(url)
    env = gym.make("openenv/Echo-v0")
    try:
        ours = frames(env.unwrapped.server.url)
    finally:
        env.close()
    for (message, theirs), (_, mine) in zip(expected, ours):
        assert mine == theirs, message


def test_official_generic_client_lists_and_calls_tools():
    from openenv import GenericEnvClient

    env = gym.make("openenv/Echo-v0")
    try:
        with GenericEnvClient(base_url=env.unwrapped.server.url).sync() as client:
            result = client.reset()
            assert result.reward == 0.0 and result.done is False
            tools = client.step({"type": "list_tools"}).observation["tools"]
            assert [tool["name"] for tool in tools] == ["echo_message", "echo_with_length"]
            assert all(tool["input_schema"]["required"] == ["message"] for tool in tools)
            step = client.step(
                {"type": "call_tool", "tool_name": "echo_message", "arguments": {"message": "hi"}}
            )
            assert step.observation["result"]["data"] == "hi" and step.observation["error"] is None
            assert (step.reward, step.done) == (None, False)
            step = client.step(
                {"type": "call_tool", "tool_name": "echo_with_length", "arguments": {"message": "hi"}}
            )
            assert step.observation["result"]["data"] == {"message": "hi", "length": 2}
            assert step.observation["result"]["structured_content"] == {"message": "hi", "length": 2}
            step = client.step({"type": "call_tool", "tool_name": "nope", "arguments": {}})
            assert step.observation["error"] == {
                "error_type": "tool_not_found", "message": "Unknown tool: 'nope'",
            }
            step = client.step({"type": "call_tool", "tool_name": "echo_message", "arguments": {}})
            assert step.observation["error"]["error_type"] == "invalid_args"
    finally:
        env.close()


def test_gym_make_raw_codec():
    """The catalog's view of echo_env: the tool by name (Discrete over the two tools) and its
    arguments as a Dict, sent without the optional `type` (the server's default, call_tool);
    tool-call frames from the embedded server decode into the inferred observation space
    (RemoteEnv's own decoder, on real frames)."""
    from openenv import GenericEnvClient

    from openenv_gym.protocol import Observation, codec_for

    STOCK_JSON = codec_for(None)
    env = gym.make("openenv/Echo-v0")
    try:
        assert env.action_space == gym.spaces.Dict(
            {"tool_name": gym.spaces.Discrete(2), "arguments": gym.spaces.Dict({"message": env.action_space["arguments"]["message"]})})
        assert set(env.observation_space.spaces) == {"tool_name", "result", "error"}
        contract = env.unwrapped.contract
        with GenericEnvClient(base_url=env.unwrapped.server.url).sync() as client:
            client.reset()
            for index, tool in enumerate(("echo_message", "echo_with_length")):
                gym_action = {"tool_name": index, "arguments": {"message": "hey"}}
                assert gym_action in env.action_space
                action = contract.step_message(STOCK_JSON, gym_action).fields
                assert action == {"tool_name": tool, "arguments": {"message": "hey"}}
                result = client.step(action)
                step = contract.read(STOCK_JSON, Observation(result.observation, result.reward, result.done))
                assert step.obs in env.observation_space, step.obs
                assert step.obs["tool_name"] == tool and (step.reward, step.terminated) == (0.0, False)
                assert '"hey"' in step.obs["result"]
            missing = client.step({"tool_name": "nope", "arguments": {}})
            step = contract.read(STOCK_JSON, Observation(missing.observation, missing.reward, missing.done))
        assert "tool_not_found" in str(step.obs["error"])
    finally:
        env.close()


def test_gym_make_reset_and_tool_calls_through_remote_env():
    """Echo's reset answers a plain Observation (no tool fields), as upstream: the
    client fills the missing fields with neutral values and names them in info; every
    sampled action is a call the server runs."""
    env = gym.make("openenv/Echo-v0")
    try:
        obs, info = env.reset(seed=0)
        assert obs in env.observation_space
        assert "tool_name" in info["openenv_gym.missing_fields"]
        env.action_space.seed(0)
        for _ in range(5):
            action = env.action_space.sample()
            obs, reward, terminated, truncated, info = env.step(action)
            assert obs in env.observation_space and obs["tool_name"] in ("echo_message", "echo_with_length")
            assert obs["error"] == "null"
            assert json.dumps(action["arguments"]["message"])[1:-1] in obs["result"]
    finally:
        env.close()


def test_env_directly():
    env = EchoEnvironment()
    env.reset()
    out = env.step({"type": "call_tool", "tool_name": "echo_with_length", "arguments": {"message": "abc"}})
    assert out.fields["result"]["data"] == {"message": "abc", "length": 3}
    assert out.fields["result"]["content"][0]["text"] == '{"message":"abc","length":3}'
    assert (out.reward, out.done) == (None, False)
    assert openenv_gym.catalog.get("openenv/Echo-v0").builtin_server() is EchoEnvironment
