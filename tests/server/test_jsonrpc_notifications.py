"""JSON-RPC notifications and batches on a real server: a request without an ``id`` member
gets no response on ``POST /mcp`` (HTTP 202, no body) and ``WS /mcp`` (no frame), and no
entry in a batch; OpenEnv's ``/ws`` ``mcp`` envelope, which answers every frame, acknowledges
it. Its method runs on a session it names or arrived on, and nowhere else."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import gymnasium as gym
import pytest
from websockets.sync.client import ClientConnection, connect

import openenv_gym
from openenv_gym.protocol.mcp import MAX_BATCH_REQUESTS
from openenv_gym.server.jsonrpc import ACKNOWLEDGED
from tests.server.raw import ask, http, ws
from tests.server.test_tools import post_mcp

#: Envs the server built (each session's, each throwaway's; the app's own first one too).
BUILT: list[int] = []


def counted_lake() -> gym.Env:
    """FrozenLake without slips, counting the envs built."""
    BUILT.append(1)
    return gym.make("FrozenLake-v1", is_slippery=False)


@pytest.fixture(scope="module")
def url() -> Iterator[str]:
    with openenv_gym.local_server(counted_lake, max_sessions=8) as url:
        yield url


def tool(name: str, arguments: dict[str, Any] | None = None, session_id: str | None = None,
         **request: Any) -> dict[str, Any]:
    """A ``tools/call`` (with an id only if ``request`` gives one)."""
    params: dict[str, Any] = {"name": name, "arguments": arguments or {}}
    if session_id is not None:
        params["session_id"] = session_id
    return {"jsonrpc": "2.0", "method": "tools/call", "params": params, **request}


def act(action: str, session_id: str | None = None, **request: Any) -> dict[str, Any]:
    return tool("act", {"action": action}, session_id, **request)


def observe(session_id: str | None = None, **request: Any) -> dict[str, Any]:
    return tool("observe", {}, session_id, **request)


def position(reply: dict[str, Any]) -> str:
    return reply["result"]["data"]["text"].split("\n")[0]


def created(url: str) -> str:
    status, reply, _ = post_mcp(url, {"jsonrpc": "2.0", "id": 0, "method": "openenv/session/create"})
    assert status == 200
    return reply["result"]["session_id"]


def active(url: str) -> int:
    return http(url, "/health")[1]["active_sessions"]


def mcp_socket(url: str) -> ClientConnection:
    return connect(url.replace("http://", "ws://") + "/mcp", compression=None, open_timeout=10)


def next_frame_answers_ping(sock: ClientConnection, request_id: int) -> None:
    """What the socket sends next is the answer to a ping sent now: nothing came before it."""
    sock.send(json.dumps({"jsonrpc": "2.0", "id": request_id, "method": "ping"}))
    assert json.loads(sock.recv(10)) == {"jsonrpc": "2.0", "id": request_id, "result": {}}


# -- POST /mcp --------------------------------------------------------------------------------


def test_an_id_less_tool_call_on_a_named_session_runs_and_gets_202_without_a_body(url):
    session = created(url)
    status, body, _ = post_mcp(url, act("down", session))
    assert (status, body) == (202, None)
    status, reply, _ = post_mcp(url, observe(session, id=1))
    assert status == 200 and position(reply).startswith("position: row 1")  # it ran
    post_mcp(url, {"jsonrpc": "2.0", "method": "openenv/session/close", "params": {"session_id": session}})
    status, reply, _ = post_mcp(url, observe(session, id=2))  # the id-less close ran too
    assert reply["error"]["message"] == f"Unknown session_id: {session}"


def test_an_id_less_request_naming_no_session_builds_nothing_and_opens_nothing(url):
    before, sessions = len(BUILT), active(url)
    for request in (act("down"), observe(), {"jsonrpc": "2.0", "method": "openenv/session/create"},
                    {"jsonrpc": "2.0", "method": "initialize", "params": {"protocolVersion": "2025-06-18"}}):
        status, body, headers = post_mcp(url, request)
        assert (status, body) == (202, None), request
        assert "mcp-session-id" not in {key.lower() for key in headers}
    assert (len(BUILT), active(url)) == (before, sessions)
    status, reply, _ = post_mcp(url, observe(id=3))  # with an id: a throwaway env, as OpenEnv's
    assert status == 200 and reply["id"] == 3 and len(BUILT) == before + 1


def test_a_null_id_is_a_request_and_invalid_requests_are_answered_without_an_id(url):
    status, reply, _ = post_mcp(url, observe(id=None))
    assert status == 200 and reply["id"] is None and position(reply).startswith("position: row 0")
    status, reply, _ = post_mcp(url, {"jsonrpc": "2.0"})  # no method: not a notification, an invalid request
    assert status == 200 and reply["error"]["code"] == -32600 and reply["id"] is None
    status, reply, _ = post_mcp(url, {})  # what OpenEnv's validator posts
    assert status == 200 and reply["jsonrpc"] == "2.0" and reply["error"]["code"] == -32600


def test_a_notifications_faults_are_not_answered_either(url):
    for request in ({"jsonrpc": "2.0", "method": "tools/call", "params": [1, 2]},
                    {"jsonrpc": "2.0", "method": "no/such/method"},
                    {"jsonrpc": "2.0", "method": "notifications/initialized"}):
        assert post_mcp(url, request)[:2] == (202, None), request
    status, reply, _ = post_mcp(url, {"jsonrpc": "2.0", "id": 4, "method": "notifications/initialized"})
    assert (status, reply) == (200, {"jsonrpc": "2.0", "id": 4, "result": {}})  # with an id, a request


# -- WS /mcp and /ws ------------------------------------------------------------------------------


def test_an_id_less_tool_call_on_ws_mcp_runs_and_sends_no_frame(url):
    with mcp_socket(url) as sock:
        sock.send(json.dumps(act("down")))
        sock.send(json.dumps({"jsonrpc": "2.0", "method": "tools/call", "params": "not an object"}))
        next_frame_answers_ping(sock, 1)
        sock.send(json.dumps(observe(id=2)))
        assert position(json.loads(sock.recv(10))).startswith("position: row 1")


def test_an_mcp_envelope_on_ws_acknowledges_a_notification_after_running_it(url):
    with ws(url) as sock:
        ask(sock, {"type": "reset", "data": {"seed": 0}})
        assert ask(sock, {"type": "mcp", "data": act("down")}) == {"type": "mcp", "data": ACKNOWLEDGED}
        assert ask(sock, {"type": "state"})["data"]["step_count"] == 1
        answered = ask(sock, {"type": "mcp", "data": observe(id=None)})["data"]
        assert answered["id"] is None and position(answered).startswith("position: row 1")


# -- batches -------------------------------------------------------------------------------------


def test_a_batch_answers_its_requests_in_order_and_not_its_notifications(url):
    session = created(url)
    batch = [
        {"jsonrpc": "2.0", "id": 1, "method": "ping"},
        act("down", session),
        "not a request",
        observe(session, id="last"),
    ]
    status, replies, _ = post_mcp(url, batch)
    assert status == 200 and [reply["id"] for reply in replies] == [1, None, "last"]
    assert replies[1]["error"]["code"] == -32600
    assert position(replies[2]).startswith("position: row 1")  # the notification before it ran
    post_mcp(url, {"jsonrpc": "2.0", "id": 9, "method": "openenv/session/close", "params": {"session_id": session}})


def test_a_batch_of_notifications_only_gets_no_answer(url):
    before = len(BUILT)
    notifications = [act("down"), {"jsonrpc": "2.0", "method": "notifications/initialized"}]
    assert post_mcp(url, notifications)[:2] == (202, None)
    assert len(BUILT) == before
    with mcp_socket(url) as sock:
        sock.send(json.dumps(notifications))
        next_frame_answers_ping(sock, 7)
        sock.send(json.dumps([observe(id=8), act("left")]))
        replies = json.loads(sock.recv(10))
        assert [reply["id"] for reply in replies] == [8]


@pytest.mark.parametrize(
    ("batch", "reason"),
    [([], "an empty batch"), ([{"jsonrpc": "2.0", "id": 1, "method": "ping"}] * (MAX_BATCH_REQUESTS + 1),
                              f"send at most {MAX_BATCH_REQUESTS}")],
    ids=["empty", "too-long"],
)
def test_an_empty_or_overlong_batch_is_one_invalid_request(url, batch, reason):
    status, reply, _ = post_mcp(url, batch)
    assert status == 200 and reply["error"]["code"] == -32600 and reason in reply["error"]["message"]


def test_initialize_is_refused_inside_a_batch(url):
    sessions = active(url)
    batch = [{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-06-18"}},
             {"jsonrpc": "2.0", "id": 2, "method": "ping"}]
    status, replies, headers = post_mcp(url, batch)
    assert status == 200 and "alone" in replies[0]["error"]["message"] and replies[1]["result"] == {}
    assert "mcp-session-id" not in {key.lower() for key in headers} and active(url) == sessions
