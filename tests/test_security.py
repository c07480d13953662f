"""Security: no unsafe deserialisation, bounded allocation, tokens, loopback by default."""

from __future__ import annotations

import ast
import inspect
import json
import pathlib
import resource
import struct
import urllib.error
import urllib.request

import msgpack
import pytest
from openenv import GenericEnvClient
from websockets.exceptions import InvalidStatus
from websockets.sync.client import connect

import openenv_gym
from openenv_gym import cli
from openenv_gym.errors import ConnectionClosedError
from openenv_gym.protocol import MSGPACK_SUBPROTOCOL
from openenv_gym.protocol.codecs import EXT_NDARRAY
from openenv_gym.server import run

PACKAGE = pathlib.Path(openenv_gym.__file__).parent
TOKEN = "correct horse battery staple"


def test_no_pickle_eval_or_exec_on_any_path():
    banned_modules = {"pickle", "cPickle", "cloudpickle", "dill", "marshal", "shelve", "joblib"}
    banned_calls = {"eval", "exec", "compile", "__import__"}
    findings = []
    for path in sorted(PACKAGE.rglob("*.py")):
        tree = ast.parse(path.read_text(), filename=str(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                names = {alias.name.split(".")[0] for alias in node.names}
            elif isinstance(node, ast.ImportFrom):
                names = {(node.module or "").split(".")[0]}
            elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
                names = {node.func.id} & banned_calls
            elif isinstance(node, ast.keyword) and node.arg == "allow_pickle":
                names = {"allow_pickle"}
            else:
                continue
            bad = names & (banned_modules | banned_calls | {"allow_pickle"})
            if bad:
                findings.append(f"{path.relative_to(PACKAGE)}:{node.lineno} {sorted(bad)}")
    assert not findings, findings


def test_a_frame_declaring_10_gb_is_refused_without_allocating(cartpole_url):
    code = b"|u1"
    shape = (10 * 1024**3,)
    header = struct.pack("<BB", len(code), len(shape)) + code + struct.pack("<Q", shape[0])
    frame = msgpack.packb(
        {"type": "step", "data": {"action": msgpack.ExtType(EXT_NDARRAY, header + b"\0" * 8)}}
    )
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # the server runs in this process
    url = cartpole_url.replace("http://", "ws://") + "/ws"
    with connect(url, subprotocols=[MSGPACK_SUBPROTOCOL], compression=None) as sock:
        sock.send(frame)
        reply = msgpack.unpackb(sock.recv(timeout=10), raw=False)
    after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    assert reply["data"]["code"] == "INVALID_JSON"
    assert "declares shape" in reply["data"]["message"]
    assert after - before < 50 * 1024  # KiB: nothing near 10 GB was touched


# -- tokens ------------------------------------------------------------------

ROUTES = [
    ("GET", "/schema", None), ("GET", "/metadata", None), ("GET", "/state", None),
    ("GET", "/openapi.json", None), ("GET", "/metrics", None),
    ("POST", "/reset", {}), ("POST", "/step", {"action": {"action": 0}}),
    ("POST", "/mcp", {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}),
]


@pytest.fixture(scope="module")
def guarded_url():
    with openenv_gym.local_server("CartPole-v1", token=TOKEN) as url:
        yield url


def status(url: str, method: str, path: str, body, token: str | None) -> int:
    headers = {"Content-Type": "application/json"}
    if token is not None:
        headers["Authorization"] = f"Bearer {token}"
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(url + path, data=data, method=method, headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status
    except urllib.error.HTTPError as exc:
        return exc.code


@pytest.mark.parametrize("method, path, body", ROUTES)
def test_every_http_route_needs_the_token(guarded_url, method, path, body):
    assert status(guarded_url, method, path, body, None) == 401
    assert status(guarded_url, method, path, body, "wrong") == 401
    assert status(guarded_url, method, path, body, TOKEN + "x") == 401
    assert status(guarded_url, method, path, body, TOKEN) == 200


def test_health_stays_open(guarded_url):
    assert status(guarded_url, "GET", "/health", None, None) == 200


@pytest.mark.parametrize("path", ["/ws", "/mcp"])
@pytest.mark.parametrize("token", [None, "wrong"])
def test_websocket_handshake_needs_the_token(guarded_url, path, token):
    headers = {"Authorization": f"Bearer {token}"} if token else None
    with pytest.raises(InvalidStatus) as info:
        connect(guarded_url.replace("http://", "ws://") + path, additional_headers=headers,
                open_timeout=10)
    assert info.value.response.status_code == 403


def test_clients_send_the_token(guarded_url):
    with openenv_gym.RemoteEnv(guarded_url, token=TOKEN) as env:
        env.reset(seed=0)
        env.step(0)
    with pytest.raises(ConnectionClosedError, match="401"):
        openenv_gym.RemoteEnv(guarded_url)
    official = GenericEnvClient(base_url=guarded_url, headers={"Authorization": f"Bearer {TOKEN}"})
    with official.sync() as client:
        assert client.reset(seed=0).done is False


def test_token_from_the_environment(monkeypatch):
    monkeypatch.setenv("OPENENV_GYM_TOKEN", "from-env")
    with openenv_gym.local_server("CartPole-v1") as url:
        assert status(url, "GET", "/schema", None, None) == 401
        assert status(url, "GET", "/schema", None, "from-env") == 200


# -- binding -----------------------------------------------------------------


def test_servers_bind_loopback_unless_told_otherwise():
    assert inspect.signature(run.serve).parameters["host"].default == "127.0.0.1"
    assert inspect.signature(run.local_server).parameters["host"].default == "127.0.0.1"
    args = cli._parser().parse_args(["serve", "CartPole-v1"])
    assert args.host == "127.0.0.1"
