"""Server behaviour on the raw protocol: sessions, capacity, errors, routes, CLI."""

from __future__ import annotations

import json
import signal
import sys
import threading
import time
import urllib.error
import urllib.request

import msgpack
import pytest
from websockets.exceptions import ConnectionClosed
from websockets.sync.client import connect

import openenv_gym
from openenv_gym.errors import CapacityReachedError, ConnectionClosedError, ExecutionError, FactoryError
from openenv_gym.protocol import MSGPACK_SUBPROTOCOL
from tests.conftest import free_port, server_process
from tests.envs import FaultyEnv, SlowEnv


def ws(url: str, **kwargs):
    return connect(url.replace("http://", "ws://") + "/ws", compression=None, open_timeout=10, **kwargs)


def ask(sock, message: dict) -> dict:
    sock.send(json.dumps(message))
    return json.loads(sock.recv(timeout=30))


def http(url: str, path: str, body: dict | None = None, method: str | None = None):
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(url + path, data=data, method=method or ("POST" if body is not None else "GET"),
                                     headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read() or b"null")


# -- WebSocket sessions ------------------------------------------------------


def test_every_error_code_and_whether_the_session_survives(cartpole_url):
    with ws(cartpole_url) as sock:
        assert ask(sock, {"type": "reset", "data": {"seed": 1}})["type"] == "observation"
        cases = [
            ("{not json", "INVALID_JSON"),
            (json.dumps({"type": "render_all"}), "UNKNOWN_TYPE"),
            (json.dumps({"data": {}}), "UNKNOWN_TYPE"),
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


def test_close_message_ends_the_session_with_1000(cartpole_url):
    with ws(cartpole_url) as sock:
        sock.send(json.dumps({"type": "close"}))
        with pytest.raises(ConnectionClosed):
            sock.recv(timeout=10)
        assert sock.close_code == 1000


def test_env_errors_are_execution_errors_and_the_session_goes_on():
    with openenv_gym.local_server(FaultyEnv) as url, openenv_gym.RemoteEnv(url) as env:
        env.reset()
        with pytest.raises(ExecutionError, match="simulator exploded"):
            env.step(1)
        with pytest.raises(ExecutionError, match="does not fit its observation space"):
            env.step(2)
        assert env.step(0)[1] == 1.0


def test_factory_failure_is_a_factory_error():
    calls = {"n": 0}

    def flaky():
        calls["n"] += 1
        if calls["n"] > 1:
            raise OSError("no licence for the simulator")
        return FaultyEnv()

    with openenv_gym.local_server(flaky) as url:
        with pytest.raises(FactoryError, match="no licence") as info:
            openenv_gym.RemoteEnv(url).reset()
        assert info.value.details["factory_name"].endswith("flaky")


def test_capacity_reached_exactly_like_openenv():
    with openenv_gym.local_server("CartPole-v1", max_sessions=2) as url:
        first, second = openenv_gym.RemoteEnv(url), openenv_gym.RemoteEnv(url)
        first.reset(), second.reset()
        with ws(url) as sock:
            reply = json.loads(sock.recv(timeout=10))
            assert reply == {
                "type": "error",
                "data": {
                    "message": "Server at capacity: 2/2 sessions active. Cannot accept new connections.",
                    "code": "CAPACITY_REACHED",
                    "active_sessions": 2,
                    "max_sessions": 2,
                },
            }
            with pytest.raises(ConnectionClosed):
                sock.recv(timeout=10)
            assert sock.close_code == 1000
        third = openenv_gym.RemoteEnv(url)
        with pytest.raises(CapacityReachedError):
            third.reset()
        first.close()
        time.sleep(0.2)
        fourth = openenv_gym.RemoteEnv(url)
        fourth.reset()  # the slot was freed
        for env in (second, third, fourth):
            env.close()


def test_a_slow_env_does_not_stall_other_sessions():
    """Session A's step sleeps 1.5 s; session B keeps stepping meanwhile."""
    calls = {"n": 0}

    def factory():
        calls["n"] += 1
        return SlowEnv(delay=1.5 if calls["n"] == 2 else 0.0)

    with openenv_gym.local_server(factory) as url:
        slow, fast = openenv_gym.RemoteEnv(url), openenv_gym.RemoteEnv(url)
        slow.reset(), fast.reset()
        for _ in range(40):  # the fast session goes inline
            fast.step(0)
        started = threading.Event()

        def slow_step():
            started.set()
            slow.step(0)

        thread = threading.Thread(target=slow_step)
        thread.start()
        started.wait(5)
        time.sleep(0.05)
        begin = time.monotonic()
        for _ in range(50):
            fast.step(0)
        elapsed = time.monotonic() - begin
        thread.join(10)
        assert elapsed < 1.0, f"50 fast steps took {elapsed:.2f} s while another session was slow"
        slow.close(), fast.close()


def test_idle_sessions_are_closed():
    with openenv_gym.local_server("CartPole-v1", session_timeout=0.3) as url:
        with ws(url) as sock:
            ask(sock, {"type": "reset"})
            reply = json.loads(sock.recv(timeout=10))
            assert reply["data"]["code"] == "SESSION_ERROR" and "without a message" in reply["data"]["message"]
            with pytest.raises(ConnectionClosed):
                sock.recv(timeout=10)


def test_mcp_over_websocket_session(cartpole_url):
    with ws(cartpole_url) as sock:
        reply = ask(sock, {"type": "mcp", "data": {"jsonrpc": "2.0", "method": "tools/list", "id": 7}})
        assert reply == {"type": "mcp", "data": {"jsonrpc": "2.0", "id": 7, "error": {
            "code": -32603, "message": "Environment does not support MCP", "data": None}}}


# -- HTTP ------------------------------------------------------------------


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


# -- running -----------------------------------------------------------------


def test_local_server_always_stops():
    with pytest.raises(KeyError):
        with openenv_gym.local_server("CartPole-v1") as url:
            raise KeyError("boom")
    with pytest.raises(OSError):
        urllib.request.urlopen(url + "/health", timeout=2)


def test_create_app_refuses_an_instance():
    import gymnasium as gym

    with pytest.raises(TypeError, match="factory"):
        openenv_gym.create_app(gym.make("CartPole-v1"))


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_cli_serves_and_shuts_down_cleanly(sig):
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    args = [sys.executable, "-m", "openenv_gym.cli", "serve", "tests.envs:CompositeEnv",
            "--port", str(port), "--max-sessions", "3"]
    with server_process(args, url) as proc:
        with openenv_gym.RemoteEnv(url) as done:
            done.reset(seed=0)
            done.step(done.action_space.sample())
        open_session = openenv_gym.RemoteEnv(url)
        open_session.reset(seed=1)
        proc.send_signal(sig)
        assert proc.wait(20) == 0
        output = proc.stdout.read()
        assert "Traceback" not in output, output
        with pytest.raises(ConnectionClosedError):
            open_session.step(open_session.action_space.sample())
        open_session.close()


def test_env_caller_promotes_fast_calls_and_demotes_slow_ones():
    import asyncio

    from openenv_gym.server.session import EnvCaller

    async def scenario():
        caller = EnvCaller("auto", inline_threshold=0.01, promote_after=4)
        for _ in range(4):
            await caller(lambda: None)
        assert caller.inline
        await caller(time.sleep, 0.02)  # one slow call inline: back to the thread
        assert not caller.inline and caller.promote_after == 8
        for _ in range(7):
            await caller(lambda: None)
        assert not caller.inline
        await caller(lambda: None)
        assert caller.inline  # fast again: inline again, after twice as many calls

        def compute(seconds: float) -> None:
            end = time.perf_counter() + seconds
            while time.perf_counter() < end:
                pass

        await caller(compute, 0.03)  # slow by computing, not by blocking: demoted too
        assert not caller.inline and caller.promote_after == 16
        caller.shutdown()
        strict = EnvCaller("thread")
        for _ in range(50):
            await strict(lambda: None)
        assert not strict.inline
        strict.shutdown()

    asyncio.run(scenario())


def test_env_caller_counts_the_time_its_calls_run():
    import asyncio

    from openenv_gym.server.session import EnvCaller

    async def scenario() -> tuple[float, float]:
        measured = []
        for execution in ("thread", "inline"):
            caller = EnvCaller(execution)
            await caller(time.sleep, 0.02)
            await caller(time.sleep, 0.01)
            measured.append(caller.seconds)
            caller.shutdown()
        return tuple(measured)

    for seconds in asyncio.run(scenario()):
        assert 0.03 <= seconds < 0.1
