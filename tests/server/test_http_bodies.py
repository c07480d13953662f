"""HTTP bodies pass the same limits as WebSocket frames, on every route that reads one.

A body nested 100,000 levels deep, one over the size limit (declared, or sent
chunked without a length), or one that is not JSON gets the protocol's error,
never a 500 with a traceback; the server goes on serving.
"""

from __future__ import annotations

import http.client
import json

import pytest
from websockets.sync.client import connect

import openenv_gym
from openenv_gym.protocol import Limits

DEEP = b"[" * 100_000 + b"]" * 100_000
FRAME_LIMIT = 256 * 1024  # above the 200 KB of the deep body


@pytest.fixture(scope="module")
def url():
    with openenv_gym.local_server("CartPole-v1", limits=Limits(max_frame_bytes=FRAME_LIMIT)) as url:
        yield url


def post(url: str, path: str, body: bytes, *, chunked: bool = False) -> tuple[int, dict]:
    host, port = url.removeprefix("http://").split(":")
    conn = http.client.HTTPConnection(host, int(port), timeout=30)
    try:
        if chunked:
            conn.putrequest("POST", path)
            conn.putheader("Content-Type", "application/json")
            conn.putheader("Transfer-Encoding", "chunked")
            conn.endheaders()
            for start in range(0, len(body), 8192):
                chunk = body[start:start + 8192]
                conn.send(f"{len(chunk):x}\r\n".encode() + chunk + b"\r\n")
            conn.send(b"0\r\n\r\n")
        else:
            conn.request("POST", path, body=body, headers={"Content-Type": "application/json"})
        response = conn.getresponse()
        return response.status, json.loads(response.read())
    finally:
        conn.close()


def assert_healthy(url: str) -> None:
    with openenv_gym.RemoteEnv(url) as env:
        env.reset(seed=0)
        env.step(0)


@pytest.mark.parametrize("path", ["/reset", "/step"])
def test_a_deep_body_is_invalid_json_not_a_500(url, path):
    status, answer = post(url, path, DEEP)
    assert status == 422 and answer["code"] == "INVALID_JSON", answer
    assert "nesting" in answer["detail"][0]["msg"]
    assert_healthy(url)


def test_a_deep_mcp_body_is_a_json_rpc_parse_error(url):
    status, answer = post(url, "/mcp", DEEP)
    assert status == 200 and answer["error"]["code"] == -32700, answer
    assert "nesting" in answer["error"]["message"]


def test_a_deep_mcp_websocket_frame_is_a_json_rpc_parse_error(url):
    with connect(url.replace("http://", "ws://") + "/mcp", max_size=None) as ws:
        ws.send("[" * 20_000 + "]" * 20_000)
        answer = json.loads(ws.recv(10))
        assert answer["error"]["code"] == -32700 and "nesting" in answer["error"]["message"]
        ws.send(json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}))
        assert json.loads(ws.recv(10))["id"] == 1  # the connection goes on


@pytest.mark.parametrize("path", ["/reset", "/step", "/mcp"])
@pytest.mark.parametrize("chunked", [False, True], ids=["content-length", "chunked"])
def test_a_body_over_the_frame_limit_is_refused_with_413(url, path, chunked):
    body = b'{"pad": "' + b"x" * (2 * FRAME_LIMIT) + b'"}'
    status, answer = post(url, path, body, chunked=chunked)
    assert status == 413 and answer["code"] == "INVALID_JSON", answer
    assert f"limit of {FRAME_LIMIT} bytes" in answer["detail"][0]["msg"]
    assert_healthy(url)


@pytest.mark.parametrize("path", ["/reset", "/step"])
def test_a_body_that_is_not_json_is_422(url, path):
    status, answer = post(url, path, b"{not json")
    assert status == 422 and answer["code"] == "INVALID_JSON" and "Invalid JSON" in answer["detail"][0]["msg"]


def test_valid_bodies_still_work(url):
    status, answer = post(url, "/reset", b'{"seed": 3}')
    assert status == 200 and answer["reward"] is None and len(answer["observation"]["obs"]) == 4
    status, answer = post(url, "/step", b'{"action": {"action": 1}, "seed": 3}')
    assert status == 200 and answer["reward"] == 1.0
    status, answer = post(url, "/reset", b"")
    assert status == 200
