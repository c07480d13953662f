"""Real MCP clients against openenv-gym servers: the official ``openenv`` 0.10
``MCPToolClient`` (production mode) and ``GenericEnvClient``, and the ``mcp`` SDK's
client, driving the generated tools of CartPole, FrozenLake and a PettingZoo game,
and the built-in Echo server's tools."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator

import gymnasium as gym
import pytest
from openenv import GenericEnvClient
from openenv.core.env_server.mcp_types import CallToolAction
from openenv.core.mcp_client import MCPToolClient

import openenv_gym


def _health(url: str) -> dict:
    with urllib.request.urlopen(f"{url}/health", timeout=10) as response:
        return json.loads(response.read())


def _wait_no_sessions(url: str, timeout: float = 10.0) -> int:
    deadline = time.monotonic() + timeout
    while (active := _health(url)["active_sessions"]) and time.monotonic() < deadline:
        time.sleep(0.05)
    return active


@pytest.fixture(scope="module", params=["simulation", "production"])
def frozen_lake(request) -> Iterator[str]:
    """A served FrozenLake in each mode: MCPToolClient and the MCP SDK need no production mode."""
    with openenv_gym.local_server("FrozenLake-v1", env_kwargs={"is_slippery": False}, mode=request.param) as url:
        yield url


@pytest.fixture(scope="module")
def tictactoe() -> Iterator[str]:
    with openenv_gym.local_server("pettingzoo.classic.tictactoe_v3", mode="production") as url:
        yield url


def test_mcp_tool_client_plays_frozen_lake_on_one_env(frozen_lake):
    with MCPToolClient(base_url=frozen_lake).sync() as client:
        assert [tool.name for tool in client.list_tools()] == [
            "act", "observe", "legal_actions", "new_episode", "episode_state",
        ]
        reset = client.reset(seed=0)
        assert reset.observation.text.startswith("position: row 0, column 0")
        assert client.call_tool("act", action="down")["text"].startswith("position: row 1, column 0")
        # a step over /ws lands on the env the HTTP tool call moved, and carries the reward
        step = client.step(CallToolAction(tool_name="act", arguments={"action": "down"}))
        assert (step.reward, step.done) == (0.0, False) and step.observation.error is None
        assert step.observation.result["data"]["text"].startswith("position: row 2, column 0")
        for action in ["right", "right", "down"]:
            client.call_tool("act", action=action)
        last = client.step(CallToolAction(tool_name="act", arguments={"action": "right"}))
        assert (last.reward, last.done) == (1.0, True)
        with pytest.raises(RuntimeError, match="the episode is over"):
            client.call_tool("act", action="left")
        assert client.call_tool("legal_actions")["legal_actions"] == []
        assert client.state().step_count == 6
        again = client.reset(seed=0)  # a new episode on the same session
        assert again.observation.text.startswith("position: row 0, column 0")
        assert client.call_tool("observe")["done"] is False
    assert _wait_no_sessions(frozen_lake) == 0


def test_mcp_tool_client_bad_calls_raise_and_the_session_goes_on(frozen_lake):
    with MCPToolClient(base_url=frozen_lake).sync() as client:
        client.reset(seed=0)
        with pytest.raises(RuntimeError, match=r"Tool 'nope' failed: Unknown tool: 'nope'"):
            client.call_tool("nope")
        with pytest.raises(RuntimeError, match=r"legal: one of left, down, right, up"):
            client.call_tool("act", action="jump")
        with pytest.raises(RuntimeError, match=r"Invalid arguments for tool 'act': action: Field required"):
            client.call_tool("act")
        failed = client.step(CallToolAction(tool_name="act", arguments={"action": 9}))
        assert failed.observation.result is None and failed.observation.error.error_type.value == "invalid_args"
        assert client.call_tool("act", action="right")["text"].startswith("position: row 0, column 1")


def test_mcp_tool_client_plays_cartpole():
    with openenv_gym.local_server("CartPole-v1", mode="production") as url:
        with MCPToolClient(base_url=url).sync() as client:
            client.reset(seed=1)
            total = 0.0
            for step in range(600):
                result = client.step(CallToolAction(tool_name="act", arguments={"action": step % 2}))
                total += result.reward
                if result.done:
                    break
            assert result.done and total == step + 1
            assert client.call_tool("observe")["terminated"] is True


def test_mcp_tool_client_plays_a_pettingzoo_seat_with_legal_actions(tictactoe):
    with MCPToolClient(base_url=tictactoe).sync() as client:
        client.reset(seed=0)
        legal = client.call_tool("legal_actions")["legal_actions"]
        assert legal == [str(cell) for cell in range(9)]
        moved = client.call_tool("act", action=4)
        taken = set(legal) - set(moved["legal_actions"])
        assert "4" in taken and len(taken) == 2  # ours, then the server's opponent
        with pytest.raises(RuntimeError, match="not legal now"):
            client.call_tool("act", action=int(sorted(taken - {"4"})[0]))
        for _ in range(5):
            if (legal_now := client.call_tool("legal_actions")["legal_actions"]) == []:
                break
            result = client.step(CallToolAction(tool_name="act", arguments={"action": legal_now[0]}))
            assert result.observation.error is None
        assert result.done and result.reward in (-1.0, 0.0, 1.0)


def test_generic_env_client_sees_the_text_field(frozen_lake):
    with openenv_gym.local_server("FrozenLake-v1") as url, GenericEnvClient(base_url=url).sync() as client:
        result = client.reset(seed=0)
        assert result.observation["text"].startswith("position: row 0, column 0")
        assert "text" in client.step({"action": 1}).observation


def test_echo_server_serves_upstreams_echo_tools_to_mcp_tool_client():
    env = gym.make("openenv/Echo-v0")
    try:
        url = env.unwrapped.server.url
        with MCPToolClient(base_url=url).sync() as client:
            assert [tool.name for tool in client.list_tools()] == ["echo_message", "echo_with_length"]
            assert client.call_tool("echo_message", message="hi") == "hi"
            assert client.call_tool("echo_with_length", message="hi") == {"message": "hi", "length": 2}
            with pytest.raises(RuntimeError, match="Unknown tool: 'nope'"):
                client.call_tool("nope")
            assert client.call_tool("echo_message", message="still here") == "still here"
    finally:
        env.close()


def test_echo_post_mcp_answers_as_upstreams_echo_server():
    from tests.catalog.test_echo_env import normalise, upstream_echo_app
    from tests.conftest import asgi_server

    def transcript(url: str) -> list:
        requests = [
            {"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
            {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
             "params": {"name": "echo_message", "arguments": {"message": "hi"}}},
            {"jsonrpc": "2.0", "id": 3, "method": "tools/call",
             "params": {"name": "echo_with_length", "arguments": {"message": "héllo"}}},
            {"jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": {"name": "nope", "arguments": {}}},
            {"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": {"name": "echo_message", "arguments": {}}},
        ]
        out = []
        for body in requests:
            request = urllib.request.Request(f"{url}/mcp", data=json.dumps(body).encode(), method="POST",
                                             headers={"Content-Type": "application/json"})
            with urllib.request.urlopen(request, timeout=30) as response:
                reply = json.loads(response.read())
            if "error" in reply:
                reply["error"]["message"] = normalise(reply["error"]["message"])
            out.append(reply)
        return out

    with asgi_server(upstream_echo_app()) as url:
        expected = transcript(url)
    env = gym.make("openenv/Echo-v0")
    try:
        ours = transcript(env.unwrapped.server.url)
    finally:
        env.close()
    for theirs, mine in zip(expected, ours, strict=True):
        if mine["id"] == 1:  # FastMCP's meta names the tools' tags
            for tool in theirs["result"]["tools"]:
                tool["meta"] = None
        assert mine == theirs


def test_an_mcp_only_agent_plays_many_seeded_episodes_in_one_session():
    """With the MCP SDK's client alone (no reset message): slippery FrozenLake, episode
    after episode in one MCP session, the same seed giving the same episode."""
    from mcp import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    async def play(client, seed: int) -> tuple[list[str], float, dict]:
        begun = await client.call_tool("new_episode", {"seed": seed})
        assert begun.isError is False
        texts, total = [begun.structuredContent["text"]], 0.0
        for _ in range(40):
            result = (await client.call_tool("act", {"action": "right"})).structuredContent
            texts.append(result["text"])
            total += result["reward"]
            if result["done"]:
                break
        return texts, total, (await client.call_tool("episode_state", {})).structuredContent

    async def session() -> list[tuple[list[str], float, dict]]:
        async with streamable_http_client(lake + "/mcp") as (read, write, _):
            async with ClientSession(read, write) as client:
                await client.initialize()
                return [await play(client, seed) for seed in (3, 4, 5, 6, 3)]

    with openenv_gym.local_server("FrozenLake-v1", mode="production") as lake:  # slippery
        episodes = asyncio.run(session())
    first, *others, again = episodes
    assert again[:2] == first[:2]  # the same seed: the same walk, the same return
    assert any(texts != first[0] for texts, _, _ in others)  # the ice is slippery
    for (texts, total, state), seed in zip(episodes, (3, 4, 5, 6, 3)):
        assert (state["seed"], state["step_count"], state["return"]) == (seed, len(texts) - 1, total)
    assert len({state["episode_id"] for *_, state in episodes}) == 5


def test_mcp_sdk_client_initializes_lists_and_calls_tools(frozen_lake):
    from mcp import ClientSession
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared.exceptions import McpError

    async def session() -> None:
        async with streamable_http_client(frozen_lake + "/mcp") as (read, write, _):
            async with ClientSession(read, write) as client:
                init = await client.initialize()
                assert init.serverInfo.name == "FrozenLake-v1" and init.capabilities.tools is not None
                assert init.instructions.startswith("FrozenLake: walk from the start S to the goal G")
                await client.send_ping()
                tools = await client.list_tools()
                assert [tool.name for tool in tools.tools] == [
                    "act", "observe", "legal_actions", "new_episode", "episode_state",
                ]
                first = await client.call_tool("act", {"action": "down"})
                assert first.isError is False and first.structuredContent["text"].startswith("position: row 1")
                second = await client.call_tool("observe", {})  # the same session's env
                assert second.structuredContent["text"] == first.structuredContent["text"]
                bad = await client.call_tool("act", {"action": "diagonal"})
                assert bad.isError is True and "legal: one of left, down, right, up" in bad.content[0].text
                with pytest.raises(McpError, match="Unknown tool: 'nope'"):
                    await client.call_tool("nope", {})
                assert _health(frozen_lake)["active_sessions"] == 1

    asyncio.run(asyncio.wait_for(session(), 60))
    assert _wait_no_sessions(frozen_lake) == 0  # the client's DELETE closed its session


def test_openenv_validate_url_passes_in_production_mode():
    """(Simulation mode: tests/test_official_client.py.)"""
    mode = "production"
    cli = os.path.join(os.path.dirname(sys.executable), "openenv")
    with openenv_gym.local_server("CartPole-v1", mode=mode) as url:
        proc = subprocess.run([cli, "validate", "--url", url, "--json"], capture_output=True, text=True, timeout=300)
    report = json.loads(proc.stdout[proc.stdout.index("{"):])
    assert report["mode"] == mode and report["passed"] is True, report["criteria"]
    assert proc.returncode == 0


def test_tool_results_carry_the_env_frame_when_asked():
    """``tool_images=True`` on an env rendering ``rgb_array``: each result of the built-in
    tools has the frame as a PNG image after its text, the env's own ``render()``, in the
    MCP SDK's ``ImageContent`` and through our own tool session; off by default."""
    import base64
    import io

    import gymnasium as gym
    import numpy as np
    from mcp import ClientSession
    from mcp.client.streamable_http import streamable_http_client
    from PIL import Image

    from openenv_gym.client.tools import env_tools

    local = gym.make("CartPole-v1", render_mode="rgb_array")
    local.reset(seed=0)
    local.step(0)
    expected = local.render()
    local.close()

    async def session(url: str):
        async with streamable_http_client(url + "/mcp") as (read, write, _):
            async with ClientSession(read, write) as client:
                await client.initialize()
                await client.call_tool("new_episode", {"seed": 0})
                return (await client.call_tool("act", {"action": "left"})).content

    kwargs = {"env_kwargs": {"render_mode": "rgb_array"}}
    with openenv_gym.local_server("CartPole-v1", tool_images=True, **kwargs) as url:
        text, image = asyncio.run(session(url))
        tools = env_tools(url).open()
        try:
            tools.reset(seed=0)
            ours = tools.call("act", {"action": "left"})
        finally:
            tools.close()
    with openenv_gym.local_server("CartPole-v1", **kwargs) as url:
        plain = asyncio.run(session(url))
    assert text.type == "text" and (image.type, image.mimeType) == ("image", "image/png")
    frame = np.asarray(Image.open(io.BytesIO(base64.b64decode(image.data))))
    np.testing.assert_array_equal(frame, expected)
    assert [mime for mime, _ in ours.images] == ["image/png"]
    np.testing.assert_array_equal(np.asarray(Image.open(io.BytesIO(ours.images[0][1]))), expected)
    assert [block.type for block in plain] == ["text"]
    with pytest.raises(ValueError, match="renders None: make it with render_mode='rgb_array'"):
        openenv_gym.create_app("CartPole-v1", tool_images=True)
