"""MCP tools of served envs on the raw protocol, as OpenEnv 0.10 serves them: ``POST /mcp``,
``WS /mcp``, ``/ws`` ``mcp`` frames and tool steps, sessions that outlive a socket,
production mode, an env author's own tools, and the protocol's limits on tool calls."""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest
from websockets.sync.client import connect

import openenv_gym
from openenv_gym.protocol import Limits
from tests.server.raw import ask, http, ws

#: FrozenLake's shortest walk from S to G (is_slippery=False).
TO_THE_GOAL = ["down", "down", "right", "right", "down", "right"]


def peek(env, row: int) -> str:
    """The tiles of one row of the map.

    Args:
        row: The row, 0 at the top.
    """
    return "".join(c.decode() for c in env.unwrapped.desc[row])


@pytest.fixture(scope="module")
def frozen_url() -> Iterator[str]:
    with openenv_gym.local_server(
        "FrozenLake-v1", env_kwargs={"is_slippery": False}, max_sessions=8, tools=[peek]
    ) as url:
        yield url


def rpc(url: str, method: str, params: dict | None = None, *, headers: dict | None = None) -> dict:
    """The JSON-RPC response to one ``POST /mcp`` request (which is always HTTP 200)."""
    body: dict[str, Any] = {"jsonrpc": "2.0", "id": 1, "method": method}
    if params is not None:
        body["params"] = params
    status, reply, _ = post_mcp(url, body, headers=headers)
    assert status == 200
    return reply


def post_mcp(url: str, body: Any, *, headers: dict | None = None) -> tuple[int, Any, dict]:
    """``(status, JSON answer or None, headers)`` of a ``POST /mcp``."""
    request = urllib.request.Request(
        url + "/mcp", data=json.dumps(body).encode(), method="POST",
        headers={"Content-Type": "application/json", **(headers or {})},
    )
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            raw = response.read()
            return response.status, json.loads(raw) if raw else None, dict(response.headers)
    except urllib.error.HTTPError as exc:
        raw = exc.read()
        return exc.code, json.loads(raw) if raw else None, dict(exc.headers)


def call(url: str, name: str, arguments: dict | None = None, session_id: str | None = None) -> dict:
    params: dict[str, Any] = {"name": name, "arguments": arguments or {}}
    if session_id is not None:
        params["session_id"] = session_id
    return rpc(url, "tools/call", params)


def active_sessions(url: str) -> int:
    return http(url, "/health")[1]["active_sessions"]


# -- tools/list and tools/call ------------------------------------------------------------


def test_every_env_gets_act_observe_legal_actions_and_its_authors_tools(frozen_url):
    tools = rpc(frozen_url, "tools/list")["result"]["tools"]
    assert [tool["name"] for tool in tools] == ["act", "observe", "legal_actions", "new_episode", "episode_state", "peek"]
    for tool in tools:  # every field of FastMCP's dump, as OpenEnv's servers send
        assert set(tool) == {
            "name", "title", "description", "inputSchema", "outputSchema", "icons", "annotations", "meta",
            "execution",
        }
    act = tools[0]["inputSchema"]
    assert act["required"] == ["action"] and act["additionalProperties"] is False
    assert act["properties"]["action"]["anyOf"] == [
        {"type": "string", "enum": ["left", "down", "right", "up"]}, {"type": "integer", "minimum": 0, "maximum": 3},
    ]
    assert tools[5]["inputSchema"] == {
        "type": "object", "properties": {"row": {"type": "integer"}}, "required": ["row"],
        "additionalProperties": False,
    }
    assert "row" in tools[5]["description"]
    assert set(http(frozen_url, "/schema")[1]["x-openenv-gym"]["mcp"]["tools"]) == {
        "act", "observe", "legal_actions", "new_episode", "episode_state", "peek",
    }


def test_a_tool_call_answers_as_fastmcp_does_with_the_reward_and_done(cartpole_url):
    result = call(cartpole_url, "act", {"action": "left"})["result"]
    assert set(result) == {"content", "structured_content", "meta", "data", "is_error"}
    assert result["is_error"] is False and result["data"] == result["structured_content"]
    data = result["data"]
    assert data["reward"] == 1.0 and data["done"] is False and data["terminated"] is False
    assert data["legal_actions"] == ["left", "right"] and data["text"].startswith("cart position:")
    [content] = result["content"]
    assert content["type"] == "text" and content["text"].endswith("Reward: 1. The episode goes on.")
    assert call(cartpole_url, "act", {"action": 0})["result"]["data"]["reward"] == 1.0  # by number too


def test_an_authors_tool_runs_on_the_sessions_env(frozen_url):
    result = call(frozen_url, "peek", {"row": 3})["result"]
    assert result["data"] == "HFFG" and result["structured_content"] == {"result": "HFFG"}
    error = call(frozen_url, "peek", {"row": "top"})["error"]
    assert error["code"] == -32603 and error["message"].startswith("Invalid arguments for tool 'peek': row:")


def test_a_session_plays_to_the_goal_and_then_refuses_to_act(frozen_url):
    before = active_sessions(frozen_url)
    session = rpc(frozen_url, "openenv/session/create")["result"]["session_id"]
    assert active_sessions(frozen_url) == before + 1
    for action in TO_THE_GOAL:
        data = call(frozen_url, "act", {"action": action}, session)["result"]["data"]
    assert data["reward"] == 1.0 and data["done"] is True and data["terminated"] is True
    assert data["legal_actions"] == []
    error = call(frozen_url, "act", {"action": "left"}, session)["error"]
    assert error == {
        "code": -32603, "data": None,
        "message": "Error calling tool 'act': the episode is over (terminated): "
        "no action can be taken until the next reset (new_episode starts one)",
    }
    observed = call(frozen_url, "observe", {}, session)["result"]["data"]  # the session goes on
    assert observed["done"] is True and observed["reward"] == 0.0 and "HFF*" in observed["text"]
    assert call(frozen_url, "legal_actions", {}, session)["result"]["content"][0]["text"] == (
        "No action is legal: the episode is over."
    )
    assert rpc(frozen_url, "openenv/session/close", {"session_id": session})["result"] == {
        "session_id": session, "closed": True,
    }
    assert active_sessions(frozen_url) == before
    gone = call(frozen_url, "observe", {}, session)["error"]
    assert gone["code"] == -32602 and gone["message"] == f"Unknown session_id: {session}"


def test_new_episode_starts_the_next_episode_of_a_session_and_episode_state_counts_it(frozen_url):
    session = rpc(frozen_url, "openenv/session/create")["result"]["session_id"]
    try:
        empty = call(frozen_url, "episode_state", {}, session)["result"]
        assert empty["data"] == {"episode_id": None, "seed": None, "step_count": 0, "return": 0.0,
                                 "terminated": False, "truncated": False, "done": False}
        assert empty["content"][0]["text"].startswith("No episode has begun")
        ids = set()
        for episode in range(3):  # to the goal and back to the start, three times in one session
            begun = call(frozen_url, "new_episode", {"seed": episode}, session)["result"]
            assert begun["data"]["done"] is False and "*FFF" in begun["data"]["text"]
            assert f"A new episode began (seed {episode})" in begun["content"][0]["text"]
            for action in TO_THE_GOAL:
                call(frozen_url, "act", {"action": action}, session)
            state = call(frozen_url, "episode_state", {}, session)["result"]["data"]
            assert (state["seed"], state["step_count"], state["return"], state["done"]) == (episode, 6, 1.0, True)
            assert state["terminated"] is True and state["truncated"] is False
            ids.add(state["episode_id"])
        assert len(ids) == 3
        midway = call(frozen_url, "act", {"action": "down"}, session)["error"]  # over: refused
        assert "new_episode starts one" in midway["message"]
        call(frozen_url, "new_episode", {}, session)
        call(frozen_url, "act", {"action": "down"}, session)
        state = call(frozen_url, "episode_state", {}, session)["result"]["data"]
        assert (state["seed"], state["step_count"], state["done"]) == (None, 1, False)
    finally:
        rpc(frozen_url, "openenv/session/close", {"session_id": session})


def test_new_episode_passes_seed_and_options_to_the_env_reset():
    """CartPole's reset takes bounds for its start state: the episode ``new_episode``
    begins reads as the local env's ``reset(seed=..., options=...)`` does."""
    import gymnasium as gym

    from openenv_gym.text import view_for

    bounds = {"low": -0.001, "high": 0.001}
    local = gym.make("CartPole-v1")
    try:
        view = view_for(local)
        expected = {key: view.obs_to_text(*local.reset(seed=4, options=options))
                    for key, options in (("bounds", bounds), ("default", None))}
    finally:
        local.close()
    with openenv_gym.local_server("CartPole-v1") as url:
        session = rpc(url, "openenv/session/create")["result"]["session_id"]
        narrow = call(url, "new_episode", {"seed": 4, "options": bounds}, session)["result"]["data"]["text"]
        wide = call(url, "new_episode", {"seed": 4, "options": None}, session)["result"]["data"]["text"]
        again = call(url, "new_episode", {"seed": 4, "options": bounds}, session)["result"]["data"]["text"]
    assert (narrow, wide, again) == (expected["bounds"], expected["default"], expected["bounds"])
    assert narrow != wide


@pytest.mark.parametrize("arguments, message", [
    ({"seed": "four"}, "Error calling tool 'new_episode': seed: Input should be a valid integer or null"),
    ({"seed": -1}, "Error calling tool 'new_episode': seed: Input should be greater than or equal to 0"),
    ({"seed": True}, "Error calling tool 'new_episode': seed: Input should be a valid integer or null"),
    ({"options": [1]}, "Error calling tool 'new_episode': options: Input should be an object or null"),
    ({"sed": 1}, "Invalid arguments for tool 'new_episode': sed: Extra inputs are not permitted"),
])
def test_new_episode_refuses_a_bad_seed_or_options_and_the_episode_goes_on(frozen_url, arguments, message):
    session = rpc(frozen_url, "openenv/session/create")["result"]["session_id"]
    try:
        call(frozen_url, "new_episode", {"seed": 0}, session)
        call(frozen_url, "act", {"action": "down"}, session)
        assert call(frozen_url, "new_episode", arguments, session)["error"]["message"] == message
        state = call(frozen_url, "episode_state", {}, session)["result"]["data"]
        assert (state["seed"], state["step_count"]) == (0, 1)
    finally:
        rpc(frozen_url, "openenv/session/close", {"session_id": session})


@pytest.mark.parametrize(
    "params, code, message",
    [
        ({"name": "nope", "arguments": {}}, -32603, "Unknown tool: 'nope'"),
        ({"name": "act", "arguments": {"action": "diagonal"}}, -32603,
         "Error calling tool 'act': cannot read an action from 'diagonal': action: got 'diagonal', not an "
         "action name; legal: one of left, down, right, up (or their numbers 0 to 3)"),
        ({"name": "act", "arguments": {"action": 4}}, -32603,
         "Error calling tool 'act': cannot read an action from 4: action: got 4, out of range; legal: one of "
         "left, down, right, up (or their numbers 0 to 3)"),
        ({"name": "act", "arguments": {}}, -32603, "Invalid arguments for tool 'act': action: Field required"),
        ({"name": "act", "arguments": {"action": 1, "speed": 2}}, -32603,
         "Invalid arguments for tool 'act': speed: Extra inputs are not permitted"),
        ({"name": "act", "arguments": [1]}, -32602, "Invalid params: 'arguments' must be an object, not list"),
        ({"arguments": {}}, -32602, "Missing 'name' in params"),
    ],
)
def test_bad_tool_calls_get_openenv_errors_and_the_session_goes_on(frozen_url, params, code, message):
    session = rpc(frozen_url, "openenv/session/create")["result"]["session_id"]
    try:
        assert call(frozen_url, "act", {"action": "right"}, session)["result"]["data"]["done"] is False
        reply = rpc(frozen_url, "tools/call", {**params, "session_id": session})
        assert reply["error"] == {"code": code, "message": message, "data": None}
        data = call(frozen_url, "act", {"action": "right"}, session)["result"]["data"]  # nothing was played
        assert data["text"].startswith("position: row 0, column 2")
    finally:
        rpc(frozen_url, "openenv/session/close", {"session_id": session})


def test_session_errors_as_openenv_words_them(frozen_url):
    assert rpc(frozen_url, "openenv/session/close", {})["error"]["code"] == -32602
    unknown = rpc(frozen_url, "openenv/session/close", {"session_id": "nope"})["error"]
    assert unknown == {"code": -32602, "message": "Unknown session_id: nope", "data": None}
    with connect(frozen_url.replace("http", "ws", 1) + "/ws?session_id=nope") as sock:
        assert json.loads(sock.recv(10))["data"] == {"message": "Unknown session_id: nope", "code": "SESSION_ERROR"}


# -- /ws: tool steps and mcp frames ------------------------------------------------------------


def test_ws_tool_steps_carry_the_gym_reward_and_done(cartpole_url):
    with ws(cartpole_url) as sock:
        listed = ask(sock, {"type": "step", "data": {"type": "list_tools"}})["data"]
        assert listed["reward"] is None and listed["done"] is False
        tools = listed["observation"]["tools"]
        assert [t["name"] for t in tools] == ["act", "observe", "legal_actions", "new_episode", "episode_state"]
        assert set(tools[0]) == {"name", "description", "input_schema"}
        ask(sock, {"type": "reset", "data": {"seed": 3}})
        reply = ask(sock, {"type": "step", "data": {
            "type": "call_tool", "tool_name": "act", "arguments": {"action": "right"}}})["data"]
        assert (reply["reward"], reply["done"]) == (1.0, False)
        assert reply["observation"]["tool_name"] == "act" and reply["observation"]["error"] is None
        assert reply["observation"]["result"]["data"]["reward"] == 1.0
        failed = ask(sock, {"type": "step", "data": {
            "type": "call_tool", "tool_name": "act", "arguments": {"action": 7}}})["data"]
        assert failed["observation"]["result"] is None and failed["observation"]["error"]["error_type"] == "invalid_args"
        assert failed["reward"] == 0.0 and failed["done"] is False
        unknown = ask(sock, {"type": "step", "data": {"type": "call_tool", "tool_name": "nope", "arguments": {}}})
        assert unknown["data"]["observation"]["error"] == {"error_type": "tool_not_found", "message": "Unknown tool: 'nope'"}
        bad = ask(sock, {"type": "step", "data": {"type": "dance"}})
        assert bad["data"]["code"] == "VALIDATION_ERROR"
        frame = ask(sock, {"type": "mcp", "data": {
            "jsonrpc": "2.0", "id": 9, "method": "tools/call", "params": {"name": "observe", "arguments": {}}}})
        assert frame["type"] == "mcp" and frame["data"]["id"] == 9
        assert frame["data"]["result"]["data"]["text"] == reply["observation"]["result"]["data"]["text"]
        step = ask(sock, {"type": "step", "data": {"action": 0}})["data"]  # a gym step on the same episode
        assert step["reward"] == 1.0 and "text" in step["observation"]
        assert ask(sock, {"type": "state"})["data"]["step_count"] == 2
        own = ask(sock, {"type": "mcp", "data": {"jsonrpc": "2.0", "id": 10, "method": "openenv/session/create"}})
        assert isinstance(own["data"]["result"]["session_id"], str)


def test_ws_mcp_frames_on_the_connections_env(cartpole_url):
    with connect(cartpole_url.replace("http", "ws", 1) + "/mcp") as sock:
        sock.send(json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                              "params": {"name": "act", "arguments": {"action": "left"}}}))
        first = json.loads(sock.recv(10))["result"]["data"]
        sock.send(json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}))  # answered by nothing
        sock.send(json.dumps({"jsonrpc": "2.0", "id": 2, "method": "ping"}))
        assert json.loads(sock.recv(10)) == {"jsonrpc": "2.0", "id": 2, "result": {}}
        sock.send(json.dumps({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
                              "params": {"name": "observe", "arguments": {}}}))
        assert json.loads(sock.recv(10))["result"]["data"]["text"] == first["text"]


def test_a_ws_attached_to_a_session_shares_its_env_with_post_mcp(frozen_url):
    session = rpc(frozen_url, "openenv/session/create")["result"]["session_id"]
    attach = frozen_url.replace("http", "ws", 1) + f"/ws?session_id={session}"
    with connect(attach) as sock:
        reset = ask(sock, {"type": "reset", "data": {"seed": 0}})["data"]
        assert reset["observation"]["obs"] == 0 and "text" in reset["observation"]
        assert call(frozen_url, "act", {"action": "down"}, session)["result"]["data"]["done"] is False
        step = ask(sock, {"type": "step", "data": {"type": "call_tool", "tool_name": "act",
                                                   "arguments": {"action": "down"}}})["data"]
        assert step["observation"]["result"]["data"]["text"].startswith("position: row 2, column 0")
        assert ask(sock, {"type": "state"})["data"]["step_count"] == 2
        with connect(attach) as second:  # one socket at a time
            refused = json.loads(second.recv(10))["data"]
            assert refused == {"message": f"Session {session} already has an attached WebSocket",
                               "code": "SESSION_ERROR"}
    # the session outlived its socket
    assert call(frozen_url, "observe", {}, session)["result"]["data"]["text"].startswith("position: row 2")
    with connect(attach) as sock:
        assert rpc(frozen_url, "openenv/session/close", {"session_id": session})["result"] == {
            "session_id": session, "closed": False, "closing": True,
        }
        assert ask(sock, {"type": "state"})["data"]["step_count"] == 2  # it ends with its socket
    deadline = time.monotonic() + 10
    while rpc(frozen_url, "tools/list", {"session_id": session}).get("result") and time.monotonic() < deadline:
        time.sleep(0.05)
    assert rpc(frozen_url, "tools/list", {"session_id": session})["error"]["code"] == -32602


def test_sessions_count_against_capacity_and_are_reaped_when_idle():
    with openenv_gym.local_server("CartPole-v1", max_sessions=1, session_timeout=1.0) as url:
        first = rpc(url, "openenv/session/create")["result"]["session_id"]
        full = rpc(url, "openenv/session/create")["error"]
        assert full["code"] == -32000 and "capacity" in full["message"].lower()
        assert call(url, "observe")["error"]["code"] == -32000  # a throwaway session needs a slot too
        deadline = time.monotonic() + 15
        while active_sessions(url) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert call(url, "observe", {}, first)["error"]["message"] == f"Unknown session_id: {first}"
        second = rpc(url, "openenv/session/create")["result"]["session_id"]
        assert call(url, "observe", {}, second)["result"]["data"]["done"] is False


# -- MCP clients: initialize, ping, notifications, the session header -------------------------


def test_mcp_clients_initialize_a_session_and_get_spec_results(frozen_url):
    version = {"MCP-Protocol-Version": "2025-06-18"}
    status, init, headers = post_mcp(frozen_url, {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}},
        headers=version)
    assert status == 200 and init["result"]["protocolVersion"] == "2025-06-18"
    assert init["result"]["capabilities"] == {"tools": {}}
    session = {**version, "Mcp-Session-Id": headers["mcp-session-id"]}
    status, body, _ = post_mcp(frozen_url, {"jsonrpc": "2.0", "method": "notifications/initialized"}, headers=session)
    assert (status, body) == (202, None)
    assert rpc(frozen_url, "ping", headers=session)["result"] == {}
    tools = rpc(frozen_url, "tools/list", headers=session)["result"]["tools"]
    assert set(tools[0]) == {"name", "description", "inputSchema", "outputSchema"}
    result = rpc(frozen_url, "tools/call", {"name": "act", "arguments": {"action": "down"}}, headers=session)["result"]
    assert result["isError"] is False and result["structuredContent"]["text"].startswith("position: row 1")
    failed = rpc(frozen_url, "tools/call", {"name": "act", "arguments": {"action": "x"}}, headers=session)["result"]
    assert failed["isError"] is True and "legal: one of left" in failed["content"][0]["text"]
    request = urllib.request.Request(frozen_url + "/mcp", method="DELETE", headers=session)
    with urllib.request.urlopen(request, timeout=10) as response:
        assert response.status == 204
    status, gone, _ = post_mcp(frozen_url, {"jsonrpc": "2.0", "id": 5, "method": "ping"}, headers=session)
    assert status == 404 and gone["error"]["code"] == -32600


def test_get_mcp_is_not_a_stream(frozen_url):
    request = urllib.request.Request(frozen_url + "/mcp", method="GET")
    with pytest.raises(urllib.error.HTTPError) as caught:
        urllib.request.urlopen(request, timeout=10)
    assert caught.value.code == 405


# -- production mode -----------------------------------------------------------------------


def test_production_mode_drops_the_stateless_routes(monkeypatch):
    monkeypatch.setenv("OPENENV_MODE", "production")
    with openenv_gym.local_server("CartPole-v1") as url:
        for path, method in (("/reset", "POST"), ("/step", "POST"), ("/state", "GET")):
            request = urllib.request.Request(url + path, data=b"{}" if method == "POST" else None, method=method)
            with pytest.raises(urllib.error.HTTPError) as caught:
                urllib.request.urlopen(request, timeout=10)
            assert caught.value.code == 404, path
        assert not {"/reset", "/step", "/state"} & set(http(url, "/openapi.json")[1]["paths"])
        assert call(url, "act", {"action": "left"})["result"]["data"]["reward"] == 1.0
        with ws(url) as sock:
            assert ask(sock, {"type": "reset", "data": {}})["type"] == "observation"
    with pytest.raises(ValueError, match="simulation or production"):
        openenv_gym.create_app("CartPole-v1", mode="staging")  # type: ignore[arg-type]


# -- an env author's tools -------------------------------------------------------------------


def test_authors_tools_are_checked_when_the_app_is_built():
    def reset(env) -> None:
        """Named as OpenEnv's own API."""

    def act(env) -> None:
        """Named as a built-in tool."""

    def untyped(env, where: object) -> None:
        """A parameter JSON Schema cannot describe."""

    with pytest.raises(ValueError, match="cannot be named 'reset'"):
        openenv_gym.create_app("CartPole-v1", tools=[reset])
    with pytest.raises(ValueError, match="two tools are named 'act'"):
        openenv_gym.create_app("CartPole-v1", tools=[act])
    with pytest.raises(TypeError, match="parameter 'where'"):
        openenv_gym.create_app("CartPole-v1", tools=[untyped])
    with pytest.raises(ValueError, match="execution='process'"):
        openenv_gym.create_app("CartPole-v1", tools=[peek], execution="process")


# -- the protocol's limits -----------------------------------------------------------------


def test_tool_calls_go_through_the_protocols_limits():
    limits = Limits(max_frame_bytes=4096, max_depth=16)
    with openenv_gym.local_server("CartPole-v1", limits=limits) as url:
        big = {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
               "params": {"name": "act", "arguments": {"action": "x" * 8192}}}
        assert post_mcp(url, big)[0] == 413
        deep: Any = "left"
        for _ in range(20):
            deep = [deep]
        nested = {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                  "params": {"name": "act", "arguments": {"action": deep}}}
        status, reply, _ = post_mcp(url, nested)
        assert status == 200 and reply["error"]["code"] == -32700
        with ws(url) as sock:
            error = ask(sock, {"type": "step", "data": {"type": "call_tool", "tool_name": "act",
                                                        "arguments": {"action": deep}}})
            assert error["type"] == "error" and error["data"]["code"] == "INVALID_JSON"
            after = ask(sock, {"type": "step", "data": {"type": "call_tool", "tool_name": "act",
                                                        "arguments": {"action": "left"}}})
            assert after["data"]["reward"] == 1.0
