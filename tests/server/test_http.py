"""The HTTP routes: health, metadata, schema, reset/step/state, OpenAPI, and MCP over HTTP."""

from __future__ import annotations

import json
import urllib.request

import pytest

from tests.server.raw import http


def test_http_routes(cartpole_url):
    status, health = http(cartpole_url, "/health")
    assert status == 200 and health["status"] == "healthy"
    assert health["max_sessions"] == 256 and health["available_sessions"] <= 256
    status, meta = http(cartpole_url, "/metadata")
    assert status == 200 and meta["name"] == "CartPole-v1" and isinstance(meta["description"], str)
    status, schema = http(cartpole_url, "/schema")
    assert set(schema) >= {"action", "observation", "reset_observation", "state"}
    status, reset = http(cartpole_url, "/reset", {"seed": 5})
    assert status == 200 and reset["reward"] is None and reset["done"] is False
    assert len(reset["observation"]["obs"]) == 4
    status, step = http(cartpole_url, "/step", {"action": {"action": 1}, "seed": 5})
    assert status == 200 and step["reward"] == 1.0
    status, bad = http(cartpole_url, "/step", {"action": {"action": 3}})
    assert status == 422 and bad["detail"][0]["loc"] == ["action"]
    assert http(cartpole_url, "/step", {"nothing": 1})[0] == 422
    assert http(cartpole_url, "/reset", {"seed": -1})[0] == 422
    assert http(cartpole_url, "/state")[1]["step_count"] == 0
    status, openapi = http(cartpole_url, "/openapi.json")
    assert openapi["info"]["version"].startswith("1.")
    assert {"/reset", "/step", "/state"} <= set(openapi["paths"])


@pytest.mark.parametrize(
    "body, code",
    [
        ({}, -32600),
        ({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}, -32603),
        ({"jsonrpc": "2.0", "id": 2, "method": "nope"}, -32601),
    ],
)
def test_mcp_http(cartpole_url, body, code):
    status, reply = http(cartpole_url, "/mcp", body)
    assert status == 200 and reply["jsonrpc"] == "2.0" and reply["error"]["code"] == code


def test_mcp_http_parse_error(cartpole_url):
    request = urllib.request.Request(cartpole_url + "/mcp", data=b"{not json", method="POST")
    with urllib.request.urlopen(request, timeout=10) as response:
        assert json.loads(response.read())["error"]["code"] == -32700
