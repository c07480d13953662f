"""Errors bounded by a fixed size, not by what the peer sent: a refusal lists the first few
problems and counts the rest, quotes a peer's strings clipped, and costs little to build,
however many bad arguments or keys a request holds (a real server on 127.0.0.1)."""

from __future__ import annotations

import http.client
import json
import time
from collections.abc import Iterator
from urllib.parse import urlsplit

import pytest

import openenv_gym
from openenv_gym.catalog.echo_env import EchoEnvironment
from openenv_gym.errors import ProtocolError
from openenv_gym.fields import validate_action
from openenv_gym.protocol.messages import MAX_ERROR_CHARS, MAX_LISTED_ERRORS
from openenv_gym.spaces._common import MAX_QUOTED_CHARS
from tests.envs import CompositeEnv
from tests.server.raw import ask, ws

#: The most an error may be larger than the request it answers (a one-argument request is
#: small, its error a sentence), and the most one may take to answer on a shared machine.
RATIO, ANSWER_SECONDS = 3.0, 2.0
#: Bad arguments in one request: 99,000 stays within the 100,000 items a JSON frame may hold.
COUNTS = (1, 10, 1_000, 99_000)


@pytest.fixture(scope="module")
def url() -> Iterator[str]:
    with openenv_gym.local_server("FrozenLake-v1", env_kwargs={"is_slippery": False}, max_sessions=8) as url:
        yield url


def post(url: str, body: bytes) -> tuple[bytes, float]:
    """The answer to a ``POST /mcp`` and the seconds it took."""
    parts = urlsplit(url)
    conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=30)
    try:
        started = time.monotonic()
        conn.request("POST", "/mcp", body, {"Content-Type": "application/json"})
        answer = conn.getresponse().read()
        return answer, time.monotonic() - started
    finally:
        conn.close()


def tool_call(n: int, *, session: bool = False) -> bytes:
    """A ``tools/call`` of ``act`` with ``n`` arguments it does not take (and no ``action``)."""
    params = {"name": "act", "arguments": {f"bad{i}": i for i in range(n)}}
    return json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params}).encode()


@pytest.mark.parametrize("n", COUNTS)
def test_a_tool_calls_error_is_bounded_whatever_the_number_of_bad_arguments(url, n):
    request = tool_call(n)
    answer, seconds = post(url, request)
    message = json.loads(answer)["error"]["message"]
    assert message.startswith("Invalid arguments for tool 'act': bad0: Extra inputs are not permitted")
    assert len(message) <= MAX_ERROR_CHARS and len(answer) <= RATIO * len(request)
    assert message.count("Extra inputs are not permitted") == min(n, MAX_LISTED_ERRORS)
    if n + 1 > MAX_LISTED_ERRORS:  # the missing action is a problem too
        assert message.endswith(f"and {n + 1 - MAX_LISTED_ERRORS} more")
    assert seconds < ANSWER_SECONDS


def test_an_mcp_clients_tool_failure_is_bounded_too(url):
    from tests.server.test_tools import post_mcp

    status, init, headers = post_mcp(url, {"jsonrpc": "2.0", "id": 1, "method": "initialize",
                                           "params": {"protocolVersion": "2025-06-18"}})
    session = {"Mcp-Session-Id": headers["mcp-session-id"], "MCP-Protocol-Version": "2025-06-18"}
    request = json.loads(tool_call(99_000))
    status, reply, _ = post_mcp(url, request, headers=session)
    text = reply["result"]["content"][0]["text"]
    assert reply["result"]["isError"] is True and len(text) <= MAX_ERROR_CHARS and text.endswith("more")


def test_a_long_key_is_quoted_clipped(url):
    request = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                          "params": {"name": "act", "arguments": {"k" * 1_000_000: 1}}}).encode()
    answer, _ = post(url, request)
    message = json.loads(answer)["error"]["message"]
    assert len(message) <= MAX_ERROR_CHARS and "(999900 more characters)" in message
    answer, _ = post(url, json.dumps({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
        "name": "observe", "arguments": {}, "session_id": "s" * 1_000_000}}).encode())
    assert len(answer) < 2 * MAX_QUOTED_CHARS + 200


def test_a_fields_envs_validation_error_lists_the_first_few_and_counts_the_rest():
    with openenv_gym.local_server(EchoEnvironment) as url, ws(url, max_size=None) as sock:
        ask(sock, {"type": "reset", "data": {}})
        request = json.dumps({"type": "step", "data": {"message": "hi", **{f"bad{i}": i for i in range(99_000)}}})
        started = time.monotonic()
        sock.send(request)
        frame = sock.recv(30)
        assert time.monotonic() - started < ANSWER_SECONDS
        error = json.loads(frame)["data"]
        assert error["code"] == "VALIDATION_ERROR" and len(error["errors"]) == MAX_LISTED_ERRORS
        total = MAX_LISTED_ERRORS + error["more_errors"]
        assert total > 99_000  # the bad keys, and what the step's action misses
        assert error["message"] == f"Invalid message: {total} problems, the first {MAX_LISTED_ERRORS} listed"
        assert len(frame) < 2 * MAX_ERROR_CHARS
        arguments = {f"bad{i}": i for i in range(99_000)}  # echo's own tools word errors as pydantic
        reply = ask(sock, {"type": "step", "data": {"type": "call_tool", "tool_name": "echo_message",
                                                    "arguments": arguments}})
        message = reply["data"]["observation"]["error"]["message"]
        assert message.startswith("99001 validation errors for call[echo_message]")
        assert message.endswith(f"... and {99_001 - MAX_LISTED_ERRORS} more") and len(message) <= MAX_ERROR_CHARS


def test_a_dict_actions_unexpected_long_key_is_clipped():
    with openenv_gym.local_server(CompositeEnv) as url, ws(url, max_size=None) as sock:
        ask(sock, {"type": "reset", "data": {"seed": 0}})
        request = json.dumps({"type": "step", "data": {"action": {"k" * 1_000_000: 1}}})
        sock.send(request)
        frame = sock.recv(30)
        assert "unexpected key(s)" in frame and len(frame) < 2 * MAX_ERROR_CHARS


def test_validating_a_hundred_thousand_bad_arguments_is_cheap():
    arguments = {f"bad{i}": i for i in range(100_000)}
    started = time.monotonic()
    with pytest.raises(ProtocolError) as caught:
        validate_action({"properties": {"action": {}}, "required": ["action"]}, arguments)
    assert time.monotonic() - started < 0.5
    assert len(caught.value.extra["errors"]) == MAX_LISTED_ERRORS
    assert caught.value.extra["more_errors"] == 100_001 - MAX_LISTED_ERRORS
