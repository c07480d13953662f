"""The ``/ws`` route on the raw protocol: every error code, frames of the wrong
kind, msgpack sessions, ``close``, MCP over the session."""

from __future__ import annotations

import json

import msgpack
import pytest
from websockets.exceptions import ConnectionClosed
from websockets.sync.client import connect

import openenv_gym
from openenv_gym.protocol import MSGPACK_SUBPROTOCOL, MsgpackBuffersCodec
from tests.server.raw import ask, ws


def test_every_error_code_and_whether_the_session_survives(cartpole_url):
    with ws(cartpole_url) as sock:
        assert ask(sock, {"type": "reset", "data": {"seed": 1}})["type"] == "observation"
        cases = [
            ("{not json", "INVALID_JSON"),
            (json.dumps({"type": "render_all"}), "UNKNOWN_TYPE"),
            (json.dumps({"data": {}}), "UNKNOWN_TYPE"),
            # A type that is not a string (the fuzzer's finding: these once ended the session).
            (json.dumps({"type": [None, True]}), "UNKNOWN_TYPE"),
            (json.dumps({"type": {}, "data": {}}), "UNKNOWN_TYPE"),
            (json.dumps({"type": "state", "data": {}}), "VALIDATION_ERROR"),
            (json.dumps({"type": "step", "data": {"action": 5}}), "VALIDATION_ERROR"),
            (json.dumps({"type": "step", "data": {"action": [1]}}), "VALIDATION_ERROR"),
            (json.dumps({"type": "step", "data": {"action": -3.6e217}}), "VALIDATION_ERROR"),
            (json.dumps({"type": "step", "data": {"act": 1}}), "VALIDATION_ERROR"),
            (json.dumps({"type": "reset", "data": {"seed": -3}}), "VALIDATION_ERROR"),
            (json.dumps({"type": "reset", "data": {"seed": "x"}}), "VALIDATION_ERROR"),
        ]
        for frame, code in cases:
            sock.send(frame)
            reply = json.loads(sock.recv(timeout=10))
            assert reply["type"] == "error" and reply["data"]["code"] == code, (frame, reply)
            assert reply["data"]["message"]
        step = ask(sock, {"type": "step", "data": {"action": 1, "metadata": {}}})
        assert step["type"] == "observation" and step["data"]["reward"] == 1.0
        assert ask(sock, {"type": "state"})["data"]["step_count"] == 1


def test_validation_errors_name_the_field(cartpole_url):
    with ws(cartpole_url) as sock:
        ask(sock, {"type": "reset"})
        reply = ask(sock, {"type": "step", "data": {"action": 1, "bogus": True}})
        assert reply["data"]["errors"][0]["loc"] == ["bogus"]
        assert reply["data"]["errors"][0]["type"] == "extra_forbidden"
        reply = ask(sock, {"type": "step", "data": {"action": 9}})
        assert reply["data"]["errors"][0]["loc"] == ["action"]
        assert "Discrete(2)" in reply["data"]["errors"][0]["msg"]


def test_step_before_reset_is_an_execution_error(cartpole_url):
    with ws(cartpole_url) as sock:
        reply = ask(sock, {"type": "step", "data": {"action": 1}})
        assert reply["data"]["code"] == "EXECUTION_ERROR" and "reset" in reply["data"]["message"]


def test_binary_frame_on_a_json_session_ends_it_cleanly(cartpole_url):
    with ws(cartpole_url) as sock:
        sock.send(b"\x81\xa4type\xa5state")
        reply = json.loads(sock.recv(timeout=10))
        assert reply["data"]["code"] == "SESSION_ERROR" and "msgpack" in reply["data"]["message"]
        with pytest.raises(ConnectionClosed):
            sock.recv(timeout=10)
        assert sock.close_code == 1000


def test_msgpack_session_on_the_raw_protocol(cartpole_url):
    with ws(cartpole_url, subprotocols=[MSGPACK_SUBPROTOCOL]) as sock:
        assert sock.subprotocol == MSGPACK_SUBPROTOCOL
        sock.send(msgpack.packb({"type": "reset", "data": {"seed": 0}}))
        reply = msgpack.unpackb(sock.recv(timeout=10), raw=False)
        assert reply["type"] == "observation"
        assert isinstance(reply["data"]["observation"]["obs"], msgpack.ExtType)
        sock.send(b"\xc1")  # never valid msgpack
        reply = msgpack.unpackb(sock.recv(timeout=10), raw=False)
        assert reply["data"]["code"] == "INVALID_JSON"
        sock.send(msgpack.packb({"type": "state"}))
        assert msgpack.unpackb(sock.recv(timeout=10), raw=False)["type"] == "state"


def test_msgpack_version_2_is_chosen_when_offered_and_version_1_clients_keep_theirs(cartpole_url):
    """A client of this version offers both versions and gets the second; a client of an
    earlier version offers only the first, and the server still speaks it."""
    v2 = MsgpackBuffersCodec()
    with ws(cartpole_url, subprotocols=[v2.subprotocol, MSGPACK_SUBPROTOCOL]) as sock:
        assert sock.subprotocol == v2.subprotocol
        sock.send(v2.encode({"type": "reset", "data": {"seed": 0}}))
        reply = v2.decode(sock.recv(timeout=10))
        assert reply["type"] == "observation" and reply["data"]["observation"]["obs"].shape == (4,)
        sock.send(msgpack.packb({"type": "state"}))  # a version 1 frame: no length prefix
        assert v2.decode(sock.recv(timeout=10))["data"]["code"] == "INVALID_JSON"
    with ws(cartpole_url, subprotocols=[MSGPACK_SUBPROTOCOL]) as sock:
        assert sock.subprotocol == MSGPACK_SUBPROTOCOL


def test_close_message_ends_the_session_with_1000(cartpole_url):
    with ws(cartpole_url) as sock:
        sock.send(json.dumps({"type": "close"}))
        with pytest.raises(ConnectionClosed):
            sock.recv(timeout=10)
        assert sock.close_code == 1000


def test_mcp_over_websocket_session(cartpole_url):
    with ws(cartpole_url) as sock:
        reply = ask(sock, {"type": "mcp", "data": {"jsonrpc": "2.0", "method": "tools/list", "id": 7}})
        assert reply["type"] == "mcp" and reply["data"]["id"] == 7
        assert [tool["name"] for tool in reply["data"]["result"]["tools"]] == ["act", "observe", "legal_actions", "new_episode", "episode_state"]


def test_a_whole_game_has_no_tools():
    with openenv_gym.local_server("pettingzoo.classic.tictactoe_v3") as url:
        with connect(url.replace("http", "ws", 1) + "/agents") as sock:
            reply = ask(sock, {"type": "mcp", "data": {"jsonrpc": "2.0", "method": "tools/list", "id": 8}})
            assert reply == {"type": "mcp", "data": {"jsonrpc": "2.0", "id": 8, "result": {"tools": []}}}
