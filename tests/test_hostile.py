"""Hostile and faulty peers: each way a server or client could be exhausted, frozen or
kept alive, as a real server on 127.0.0.1 (or a raw socket peer) shows it, bounded in time.

One test (or a few) per finding of the adversarial review; the finding's number is in
each test's docstring.
"""

from __future__ import annotations

import json
import signal
import socket
import subprocess
import sys
import threading
import time

import pytest

import openenv_gym
from openenv_gym.client import ConnectOptions
from openenv_gym.client.connection import Connection
from openenv_gym.errors import ExecutionError, MessageTimeoutError
from tests.conftest import free_port, server_process, subprocess_env


class SilentServer:
    """A WebSocket server that completes handshakes and then never reads a byte
    (a server stopped with SIGSTOP looks the same from the client)."""

    def __init__(self) -> None:
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.connections: list[socket.socket] = []
        self._thread = threading.Thread(target=self._accept, daemon=True)
        self._thread.start()

    def _accept(self) -> None:
        import base64
        import hashlib

        while True:
            try:
                conn, _ = self.listener.accept()
            except OSError:
                return
            self.connections.append(conn)
            request = conn.recv(65536).decode("latin-1")
            key = next(line.split(":", 1)[1].strip() for line in request.split("\r\n")
                       if line.lower().startswith("sec-websocket-key"))
            accept = base64.b64encode(hashlib.sha1((key + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11").encode()).digest())
            conn.sendall(b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                         b"Sec-WebSocket-Accept: " + accept + b"\r\n\r\n")

    def close(self) -> None:
        self.listener.close()
        for conn in self.connections:
            conn.close()


@pytest.fixture
def silent_server():
    server = SilentServer()
    try:
        yield server
    finally:
        server.close()


def test_a_send_to_a_server_that_stopped_reading_is_bounded_by_the_message_timeout(silent_server):
    """Finding 7: after the busy poll the socket was left blocking with no timeout, so a
    large action to a stopped server blocked for as long as the server was stopped."""
    conn = Connection.open(f"ws://127.0.0.1:{silent_server.port}/ws", ConnectOptions(message_timeout=1.0))
    started = time.monotonic()
    with pytest.raises(MessageTimeoutError, match="Sending to"):
        conn.send(b"\0" * (64 << 20))  # more than the kernel's buffers on both ends hold
    assert time.monotonic() - started < 5
    assert conn.closed


@pytest.mark.parametrize("client", ["env", "vector"])
def test_idle_blocking_clients_answer_pings_within_a_short_ping_timeout(client):
    """Finding 9: idle blocking clients answered server pings only every 5 s, so a server
    with a ping timeout under 5 s dropped an idle RemoteEnv or batched RemoteVectorEnv."""
    uvicorn_kwargs = {"ws_ping_interval": 0.3, "ws_ping_timeout": 0.5}
    with openenv_gym.local_server("CartPole-v1", uvicorn_kwargs=uvicorn_kwargs) as url:
        if client == "env":
            env = openenv_gym.RemoteEnv(url, ping_interval=None)
        else:
            env = openenv_gym.RemoteVectorEnv(url, num_envs=2, mode="batched", ping_interval=None)
        try:
            env.reset(seed=0)
            time.sleep(3.0)  # idle through several of the server's ping deadlines
            env.step(env.action_space.sample())
        finally:
            env.close()


# -- finding 3: SIGTERM always stops the server within the drain timeout --------------


DRAIN = 2.0


def serve_process(*extra: str, env: str = "CartPole-v1"):
    port = free_port()
    args = [sys.executable, "-m", "openenv_gym.cli", "serve", env, "--port", str(port),
            "--drain-timeout", str(DRAIN), *extra]
    return server_process(args, f"http://127.0.0.1:{port}"), port


def stop_and_time(proc: subprocess.Popen) -> float:
    started = time.monotonic()
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(DRAIN + 15)
    except subprocess.TimeoutExpired:
        pytest.fail("the server did not exit after SIGTERM")
    return time.monotonic() - started


def test_sigterm_stops_a_server_whose_env_call_hung():
    """Finding 3a: after an env call hung (even abandoned by --step-timeout) the process
    never exited, because the executor's worker was joined at interpreter exit."""
    context, port = serve_process("--step-timeout", "0.5", "--env-kwargs", '{"delay": 3600}',
                                  env="tests.envs:SlowEnv")
    with context as proc:
        env = openenv_gym.RemoteEnv(f"http://127.0.0.1:{port}")
        env.reset(seed=0)
        with pytest.raises(ExecutionError, match="hung"):
            env.step(0)
        assert stop_and_time(proc) < DRAIN + 10
        env.close()


def test_sigterm_stops_a_server_with_an_env_call_hung_right_now():
    """Finding 3a, without a step timeout: the call is still running at SIGTERM."""
    context, port = serve_process("--env-kwargs", '{"delay": 3600}', env="tests.envs:SlowEnv")
    with context as proc:
        env = openenv_gym.RemoteEnv(f"http://127.0.0.1:{port}", message_timeout=30)
        env.reset(seed=0)
        threading.Thread(target=lambda: _quietly(env.step, 0), daemon=True).start()
        time.sleep(0.5)
        assert stop_and_time(proc) < DRAIN + 10


def test_sigterm_stops_a_server_holding_a_body_that_never_comes():
    """Finding 3b: a connection that declared a Content-Length and stopped sending kept
    the process alive indefinitely."""
    context, port = serve_process()
    with context as proc:
        with socket.create_connection(("127.0.0.1", port)) as sock:
            sock.sendall(b"POST /reset HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                         b"Content-Length: 1000\r\n\r\n{")
            time.sleep(0.3)
            assert stop_and_time(proc) < DRAIN + 10


def test_sigterm_stops_a_server_whose_client_reads_nothing():
    """Finding 3c: a WebSocket client that never reads kept the process alive, and
    keepalive could not drop it. Its replies (rendered frames, 2 MB each as JSON)
    fill every buffer between the two, so the server's sends wait for room forever."""
    context, port = serve_process("--env-kwargs", '{"render_mode": "rgb_array"}', env="Pendulum-v1")
    with context as proc:
        sock = _handshake_then_silence(port)
        try:
            sock.settimeout(5)
            sock.sendall(_masked_text_frame(json.dumps({"type": "reset", "data": {}}).encode()))
            render = _masked_text_frame(json.dumps({"type": "render"}).encode())
            for _ in range(200):  # the replies pile up: this client reads none of them
                sock.sendall(render)
            time.sleep(3)  # the server renders until its sends block
            assert stop_and_time(proc) < DRAIN + 10
        finally:
            sock.close()


def test_a_program_that_used_local_server_exits_with_a_hung_env_call():
    """Finding 3a: the same kept a program that used ``local_server()`` from ever exiting."""
    script = (
        "import threading, openenv_gym\n"
        "from tests.envs import SlowEnv\n"
        "with openenv_gym.local_server(SlowEnv, env_kwargs={'delay': 3600}, execution='thread') as url:\n"
        "    env = openenv_gym.RemoteEnv(url)\n"
        "    env.reset(seed=0)\n"
        "    threading.Thread(target=env.step, args=(0,), daemon=True).start()\n"
        "    import time; time.sleep(0.5)\n"
        "print('done', flush=True)\n"
    )
    started = time.monotonic()
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60,
                          env=subprocess_env())
    assert proc.stdout.strip() == "done", proc.stderr
    assert time.monotonic() - started < 30


def _quietly(fn, *args) -> None:
    try:
        fn(*args)
    except Exception:  # noqa: BLE001 - the server goes away under it
        pass


def _handshake_then_silence(port: int) -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", port), timeout=5)
    sock.sendall(
        b"GET /ws HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
        b"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n"
    )
    assert b" 101 " in sock.recv(4096).split(b"\r\n", 1)[0]
    return sock


def _masked_text_frame(payload: bytes) -> bytes:
    return _masked_frame(0x1, payload)


# -- finding 8: stateless HTTP routes honour --step-timeout and --max-sessions ----------


def test_http_steps_count_against_capacity_and_time_out():
    """Finding 8: twenty concurrent ``POST /step`` on a hanging env, with ``--step-timeout 1
    --max-sessions 2``, all hung, leaked 20 threads and showed ``active_sessions 0``."""
    from concurrent.futures import ThreadPoolExecutor

    context, port = serve_process("--step-timeout", "1", "--max-sessions", "2",
                                  "--env-kwargs", '{"delay": 3600}', env="tests.envs:SlowEnv")
    url = f"http://127.0.0.1:{port}"
    with context as proc:
        started = time.monotonic()
        with ThreadPoolExecutor(20) as pool:
            answers = list(pool.map(lambda _: _post(url, "/step", {"action": {"action": 0}}), range(20)))
        statuses = sorted(status for status, _ in answers)
        assert time.monotonic() - started < 15
        assert set(statuses) <= {500, 503} and statuses.count(500) <= 2 * 2, statuses
        assert all("hung" in body["detail"] for status, body in answers if status == 500)
        assert all(body["code"] == "CAPACITY_REACHED" for status, body in answers if status == 503)
        health = _get(url, "/health")
        assert health["hung_env_calls"] <= 2 and health["active_sessions"] == health["hung_env_calls"]
        assert stop_and_time(proc) < DRAIN + 10


def _post(url: str, path: str, body: dict | bytes) -> tuple[int, dict]:
    import urllib.error
    import urllib.request

    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    request = urllib.request.Request(url + path, data=data, headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


def _get(url: str, path: str) -> dict:
    import urllib.request

    with urllib.request.urlopen(url + path, timeout=10) as response:
        return json.loads(response.read())


# -- finding 12: /vector reaches public attributes only ----------------------------------


@pytest.mark.parametrize(
    "name, args",
    [("get_wrapper_attr", ["_max_episode_steps"]), ("set_wrapper_attr", ["_max_episode_steps", 3]),
     ("has_wrapper_attr", ["__class__"])],
)
def test_vector_call_cannot_reach_private_attributes(cartpole_url, name, args):
    """Finding 12: ``call("get_wrapper_attr", ["_max_episode_steps"])`` and
    ``call("set_wrapper_attr", ...)`` reached private attributes, although ``get_attr``
    refuses them."""
    from openenv_gym.errors import ValidationError

    vec = openenv_gym.RemoteVectorEnv(cartpole_url, num_envs=2, mode="batched")
    try:
        with pytest.raises(ValidationError, match="public attribute"):
            vec.call(name, *args)
        assert vec.call("get_wrapper_attr", "spec")[0] is not None  # public names still work
    finally:
        vec.close()


# -- finding 15: logs do not amplify what a peer does ------------------------------------


def test_refused_tokens_clients_that_vanish_and_deep_bodies_log_a_few_lines():
    """Finding 15: one WARNING line per refused token request, an ERROR traceback for
    every client that vanished mid-step, ~30 KB of log per deep-JSON request."""
    import urllib.error
    import urllib.request

    context, port = serve_process("--token", "s3cret", "--env-kwargs", '{"delay": 0.3}', env="tests.envs:SlowEnv")
    url = f"http://127.0.0.1:{port}"
    with context as proc:
        for _ in range(100):
            with pytest.raises(urllib.error.HTTPError):
                urllib.request.urlopen(url + "/schema", timeout=10)
        for _ in range(3):  # each client leaves in the middle of a step
            env = openenv_gym.RemoteEnv(url, token="s3cret")
            env.reset(seed=0)
            env._live().send(openenv_gym.protocol.Step({"action": 0}))
            env._live().connection._sock.close()
        deep = urllib.request.Request(url + "/step", data=b"[" * 100_000 + b"]" * 100_000,
                                      headers={"Authorization": "Bearer s3cret"})
        with pytest.raises(urllib.error.HTTPError) as answer:
            urllib.request.urlopen(deep, timeout=10)
        assert answer.value.code == 422
        time.sleep(1.0)  # the vanished clients' steps end
        proc.send_signal(signal.SIGTERM)
        output = proc.communicate(timeout=DRAIN + 15)[0]
    refused = [line for line in output.splitlines() if "auth_refused" in line]
    assert 1 <= len(refused) <= 2, output
    assert "Traceback" not in output and " ERROR " not in output, output
    assert len(output) < 5_000, len(output)


# -- finding 2: pings without reading the pongs ------------------------------------------


def rss_mb(pid: int) -> float:
    with open(f"/proc/{pid}/status") as status:
        line = next(line for line in status if line.startswith("VmRSS:"))
    return int(line.split()[1]) / 1024


def test_a_ping_flood_that_reads_no_pong_does_not_grow_the_server():
    """Finding 2: a client that sent small pings and never read the pongs grew the
    server about 1 MB per MB sent (400 MB in 10 s), until it disconnected."""
    context, port = serve_process()
    url = f"http://127.0.0.1:{port}"
    with context as proc:
        healthy = openenv_gym.RemoteEnv(url)
        healthy.reset(seed=0)
        before = rss_mb(proc.pid)
        sock = _handshake_then_silence(port)
        ping = _masked_frame(0x9, b"p" * 125)
        burst = ping * 512
        sent, deadline = 0, time.monotonic() + 6
        sock.settimeout(0.2)
        try:
            while time.monotonic() < deadline:
                try:
                    sock.sendall(burst)
                    sent += len(burst)
                except TimeoutError:
                    healthy.step(0)  # the flood is held back; the server serves others meanwhile
            grown = rss_mb(proc.pid) - before
            assert grown < 10, f"the server grew {grown:.0f} MB while a peer sent {sent >> 20} MB of pings"
            healthy.step(0)
        finally:
            sock.close()
            healthy.close()


def _masked_frame(opcode: int, payload: bytes) -> bytes:
    """A client's frame (clients must mask), payloads under 126 bytes."""
    mask = b"\x01\x02\x03\x04"
    masked = bytes(b ^ mask[i % 4] for i, b in enumerate(payload))
    return bytes([0x80 | opcode, 0x80 | len(payload)]) + mask + masked


# -- finding 5: connections that never become sessions ------------------------------------


@pytest.mark.parametrize(
    "prefix",
    [b"", b"GET /health HT", b"GET /ws HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgr"],
    ids=["silent", "half-request-line", "half-upgrade"],
)
def test_connections_that_send_no_complete_request_are_closed(prefix):
    """Finding 5: 1,100 silent TCP connections, half request lines or half WebSocket
    upgrades stayed open for ever and needed no token, locking a token holder out."""
    context, port = serve_process("--handshake-timeout", "1", "--token", "s3cret")
    with context:
        socks = [socket.create_connection(("127.0.0.1", port)) for _ in range(50)]
        try:
            for sock in socks:
                if prefix:
                    sock.sendall(prefix)
                sock.settimeout(5)
            started = time.monotonic()
            for sock in socks:
                assert sock.recv(4096) == b""  # closed by the server, nothing said
            assert time.monotonic() - started < 5
            with openenv_gym.RemoteEnv(f"http://127.0.0.1:{port}", token="s3cret") as env:
                env.reset(seed=0)
        finally:
            for sock in socks:
                sock.close()


def test_a_vector_connection_without_vector_open_is_closed():
    """Finding 5: ``/vector`` connections that never sent ``vector_open`` bypassed both
    ``--max-sessions`` and the session timeout."""
    from websockets.sync.client import connect

    context, port = serve_process("--handshake-timeout", "1", "--max-sessions", "2")
    with context:
        with connect(f"ws://127.0.0.1:{port}/vector") as ws:
            reply = json.loads(ws.recv(5))
            assert reply["data"]["code"] == "SESSION_ERROR" and "vector_open" in reply["data"]["message"]


def test_websocket_mcp_connections_count_as_sessions_and_time_out():
    """Finding 5: ``WS /mcp`` connections bypassed ``--max-sessions`` and the session
    timeout (600 held for 45 s against ``--max-sessions 4 --session-timeout 3``)."""
    from websockets.exceptions import ConnectionClosed
    from websockets.sync.client import connect

    context, port = serve_process("--max-sessions", "4", "--session-timeout", "1")
    url = f"ws://127.0.0.1:{port}/mcp"
    with context:
        held = [connect(url) for _ in range(4)]
        try:
            for ws in held:
                ws.send(json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}))
                assert json.loads(ws.recv(5))["id"] == 1
            with connect(url) as extra:  # over capacity: told so in JSON-RPC, then closed
                refused = json.loads(extra.recv(5))
                assert refused["error"]["code"] == -32000 and "capacity" in refused["error"]["message"]
            for ws in held:  # idle past the session timeout: closed
                with pytest.raises(ConnectionClosed):
                    while True:
                        ws.recv(10)
            with connect(url) as again:  # the slots are free again
                again.send(json.dumps({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}))
                assert json.loads(again.recv(5))["id"] == 2
        finally:
            for ws in held:
                ws.close()


# -- finding 6: small frames that decode into very many objects ----------------------------


def test_frames_of_a_million_objects_are_refused_before_they_stall_the_loop():
    """Finding 6: one 8.8 MiB msgpack frame of a million 0-d arrays held the event loop
    for 1.3 s, and a JSON reset with a million option keys for 0.8 s."""
    import msgpack
    import numpy as np
    from websockets.sync.client import connect

    from openenv_gym.protocol import MSGPACK_SUBPROTOCOL
    from openenv_gym.protocol.codecs import EXT_NUMPY_SCALAR, _pack_array

    scalar = msgpack.ExtType(EXT_NUMPY_SCALAR, _pack_array(np.asarray(np.float32(0.5))))
    arrays = msgpack.packb({"type": "step", "data": {"action": [scalar] * 1_000_000}})
    keys = json.dumps({"type": "reset", "data": {f"k{i}": 0 for i in range(1_000_000)}})
    with openenv_gym.local_server("CartPole-v1") as url:
        ws_url = url.replace("http://", "ws://") + "/ws"
        with connect(ws_url, subprotocols=[MSGPACK_SUBPROTOCOL], max_size=None) as ws:
            ws.send(arrays)
            reply = msgpack.unpackb(ws.recv(10))
            assert reply["data"]["code"] == "INVALID_JSON" and "items" in reply["data"]["message"], reply
        with connect(ws_url, max_size=None) as ws:
            ws.send(keys)
            reply = json.loads(ws.recv(10))
            assert reply["data"]["code"] == "INVALID_JSON" and "items" in reply["data"]["message"], reply
        status, answer = _post(url, "/reset", {f"k{i}": 0 for i in range(1_000_000)})
        assert status == 422 and "items" in answer["detail"][0]["msg"]
        with openenv_gym.RemoteEnv(url) as env:  # the server is fine
            env.reset(seed=0)


def test_frames_of_many_small_arrays_are_refused_early_and_never_echoed_whole():
    """Finding 6, measured by benchmarks/reliability_probes.py: frames of 99,999 0-d arrays
    (then within the items limit) held the event loop for seconds each, decoding the arrays
    and writing every one back as the error's ``input``. Arrays have their own, lower
    limit, and a refused value is described, not echoed."""
    import msgpack
    import numpy as np
    from websockets.sync.client import connect

    from openenv_gym.protocol import MSGPACK_SUBPROTOCOL, Limits
    from openenv_gym.protocol.codecs import EXT_NUMPY_SCALAR, _pack_array

    scalar = msgpack.ExtType(EXT_NUMPY_SCALAR, _pack_array(np.asarray(np.float32(0.5))))
    limit = Limits().max_arrays
    with openenv_gym.local_server("CartPole-v1") as url:
        ws_url = url.replace("http://", "ws://") + "/ws"
        with connect(ws_url, subprotocols=[MSGPACK_SUBPROTOCOL], max_size=None) as ws:
            ws.send(msgpack.packb({"type": "step", "data": {"action": [scalar] * (limit + 1)}}))
            reply = msgpack.unpackb(ws.recv(10))
            assert reply["data"]["code"] == "INVALID_JSON", reply
            assert f"limit of {limit} items that are arrays" in reply["data"]["message"]
            ws.send(msgpack.packb({"type": "reset", "data": {}}))
            ws.recv(10)
            ws.send(msgpack.packb({"type": "step", "data": {"action": [scalar] * limit}}))
            reply = msgpack.unpackb(ws.recv(10))
            assert reply["data"]["code"] == "VALIDATION_ERROR", reply
            echoed = reply["data"]["errors"][0]["input"]
            assert isinstance(echoed, str) and echoed.startswith("list too large to echo (over 1000 items"), echoed
            assert len(msgpack.packb(reply)) < 2000
        with openenv_gym.RemoteEnv(url) as env:  # the server is fine
            env.reset(seed=0)


def test_a_long_string_is_refused_without_being_written_back(cartpole_url):
    """A frame whose action, a key of its data, its type or the attribute it calls, or an
    MCP request whose method or tool, is a string of 500,000 characters gets an error of
    a few hundred bytes, not its string back; the session goes on."""
    from websockets.sync.client import connect

    long = "x" * 500_000
    ws_url = cartpole_url.replace("http://", "ws://") + "/ws"
    with connect(ws_url, max_size=None) as ws:
        ws.send(json.dumps({"type": "reset", "data": {}}))
        ws.recv(10)
        errors = []
        for data in ({"action": long}, {"action": 0, long: 1}):
            ws.send(json.dumps({"type": "step", "data": data}))
            frame = ws.recv(10)
            reply = json.loads(frame)
            assert reply["data"]["code"] == "VALIDATION_ERROR" and len(frame) < 2000, reply
            errors.append(reply["data"]["errors"][0])
        assert errors[0]["loc"] == ["action"]
        assert errors[0]["input"].startswith("str too large to echo (over 1000 items or characters): 'xxx")
        assert errors[1]["loc"] == ["x" * 100 + "... (499900 more characters)"]
        assert errors[1]["type"] == "extra_forbidden"
        for message, code in (({"type": long}, "UNKNOWN_TYPE"), ({"type": "call", "data": {"name": long}}, "EXECUTION_ERROR")):
            ws.send(json.dumps(message))
            frame = ws.recv(10)
            reply = json.loads(frame)
            assert reply["data"]["code"] == code and len(frame) < 3000, reply
            assert "more characters)" in reply["data"]["message"], reply
        ws.send(json.dumps({"type": "step", "data": {"action": 0}}))
        assert json.loads(ws.recv(10))["type"] == "observation"
    for request in ({"method": long}, {"method": "tools/call", "params": {"name": long, "arguments": {}}}):
        status, reply = _post(cartpole_url, "/mcp", {"jsonrpc": "2.0", "id": 1, **request})
        assert status == 200 and len(json.dumps(reply)) < 3000, reply
        assert "more characters)" in json.dumps(reply), reply


def test_an_error_about_a_long_value_describes_only_its_start():
    """Finding 6, measured by benchmarks/reliability_probes.py: a 0.9 MiB frame of 99,999
    0-d arrays (within ``max_items``) as CartPole's action took seconds to refuse, as
    the error message wrote the repr of every array before cutting it short."""
    from gymnasium import spaces as gs

    from openenv_gym import spaces

    described = []

    class Item:
        def __repr__(self) -> str:
            described.append(self)
            return "Item()"

    with pytest.raises(spaces.SpaceValueError, match=r"got list \[Item\(\), Item\(\)"):
        spaces.decode(gs.Discrete(2), [Item()] * 99_999)
    assert len(described) < 10


# -- finding 4: an env that hangs after it proved fast ------------------------------------


def test_an_env_that_hangs_after_proving_fast_does_not_freeze_the_server():
    """Finding 4: with default flags, after 16 fast calls a session's env ran inline on
    the event loop; when it then blocked, /health stopped answering, every other
    session timed out, and SIGTERM was ignored."""
    context, port = serve_process(env="tests.envs:HangingEnv")  # default flags: a 5 s inline deadline
    url = f"http://127.0.0.1:{port}"
    with context as proc:
        hanging = openenv_gym.RemoteEnv(url, message_timeout=60)
        other = openenv_gym.RemoteEnv(url, message_timeout=60)
        hanging.reset(seed=0), other.reset(seed=0)
        for _ in range(40):  # fast: the session now runs inline
            hanging.step(0)
        failure: list[BaseException] = []
        thread = threading.Thread(target=lambda: _record(failure, hanging.step, 0))
        thread.start()
        time.sleep(0.5)
        started = time.monotonic()
        assert _get(url, "/health")["status"] == "healthy"  # answered once the call is interrupted
        assert time.monotonic() - started < 15
        thread.join(15)
        assert failure and isinstance(failure[0], ExecutionError) and "hung" in str(failure[0])
        other.step(0)  # every other session goes on
        hanging.reset(seed=1)  # the session has a fresh env, on its thread from now on
        hanging.step(0)
        assert stop_and_time(proc) < DRAIN + 10
        hanging.close(), other.close()


def _record(failures: list, fn, *args) -> None:
    try:
        fn(*args)
    except Exception as exc:  # noqa: BLE001 - the test looks at it
        failures.append(exc)


# -- findings 1, 10 and 11 ------------------------------------------------------------------


def test_an_http_body_over_the_limit_is_refused_before_it_is_read():
    """Finding 1: ``POST /reset`` with a 100 MB body was read whole and parsed; eight at
    once took the server from 55 MB to about 1.5 GB."""
    context, port = serve_process()
    with context as proc:
        before = rss_mb(proc.pid)
        for _ in range(8):
            with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
                sock.sendall(b"POST /reset HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                             b"Content-Length: 104857600\r\n\r\n" + b"[0," * 1000)
                head = sock.recv(4096)  # answered at once: the 100 MB are never read
                assert head.startswith(b"HTTP/1.1 413"), head[:200]
        assert rss_mb(proc.pid) - before < 10


def test_an_aec_step_before_reset_is_an_execution_error_and_the_session_goes_on():
    """Finding 10: ``/agents?api=aec`` step before reset answered SESSION_ERROR ("The
    server failed ... AttributeError") and closed; the protocol promises EXECUTION_ERROR."""
    from openenv_gym.client.session import RemoteSession
    from openenv_gym.protocol import Reset, Step

    with openenv_gym.local_server("pettingzoo.classic.tictactoe_v3") as url:
        session = RemoteSession(url, ConnectOptions(), path="/agents?api=aec")
        try:
            with pytest.raises(ExecutionError, match="reset before step"):
                session.request(Step({"action": 0}))
            assert session.request(Reset(seed=0)).observation["agents"]  # the session went on
        finally:
            session.close()


@pytest.mark.parametrize("depth", [490, 995, 5_000])
@pytest.mark.parametrize("path", ["/reset", "/step", "/mcp"])
def test_deep_http_bodies_get_the_protocols_error(cartpole_url, path, depth):
    """Finding 11: ``/step`` answered 500 from about 490 levels (building the validation
    error recursed), ``/reset`` and ``/mcp`` from about 995."""
    nested = b"[" * depth + b"]" * depth
    body = b'{"action": {"action": ' + nested + b"}}" if path == "/step" else nested
    status, answer = _post(cartpole_url, path, body)
    if path == "/mcp":
        assert status == 200 and answer["error"]["code"] == -32700, answer
    else:
        assert status == 422 and answer["code"] == "INVALID_JSON", answer


def test_a_deep_websocket_mcp_request_gets_a_json_rpc_error(cartpole_url):
    """Finding 11: WebSocket ``/mcp`` closed without a JSON-RPC error."""
    from websockets.sync.client import connect

    with connect(cartpole_url.replace("http://", "ws://") + "/mcp", max_size=None) as ws:
        ws.send("[" * 2_000 + "]" * 2_000)
        assert json.loads(ws.recv(10))["error"]["code"] == -32700


# -- finding 13: process isolation for native or untrusted envs --------------------------


def test_an_env_that_aborts_kills_only_its_own_process():
    """Finding 13: an env that segfaults or calls ``os.abort()`` killed the server and every
    session on it. With ``--execution process`` each session's env has a process of its own."""
    context, port = serve_process("--execution", "process", env="tests.envs:CrashingEnv")
    url = f"http://127.0.0.1:{port}"
    with context as proc:
        crashing, other = openenv_gym.RemoteEnv(url), openenv_gym.RemoteEnv(url)
        crashing.reset(seed=0), other.reset(seed=0)
        other.step(0)
        crashing.step(0), crashing.step(0)
        with pytest.raises(ExecutionError, match="crashed.*SIGABRT"):
            crashing.step(0)
        assert proc.poll() is None  # the server lives
        obs, reward, *_ = other.step(0)  # so does every other session
        assert reward == 1.0
        crashing.reset(seed=1)  # a fresh env, in a fresh process
        assert crashing.step(0)[4]["steps"] == 1
        crashing.close(), other.close()


def test_a_hung_env_in_its_own_process_is_killed_not_abandoned():
    """With process isolation a step timeout kills the env's process: no thread is left
    hanging, and the session's slot is free again."""
    context, port = serve_process("--execution", "process", "--step-timeout", "1",
                                  "--env-kwargs", '{"delay": 3600}', env="tests.envs:SlowEnv")
    url = f"http://127.0.0.1:{port}"
    with context:
        with openenv_gym.RemoteEnv(url) as env:
            env.reset(seed=0)
            with pytest.raises(ExecutionError, match="hung"):
                env.step(0)
            deadline = time.monotonic() + 10
            while _get(url, "/health")["hung_env_calls"] and time.monotonic() < deadline:
                time.sleep(0.1)
            assert _get(url, "/health")["hung_env_calls"] == 0
            env.reset(seed=0)  # the session goes on, with a fresh env


def test_whole_games_are_refused_under_process_isolation():
    """``/agents`` runs a whole PettingZoo game in the server's process: refused, with the
    seat route named, when envs are isolated."""
    from openenv_gym.errors import FactoryError

    with openenv_gym.local_server("pettingzoo.classic.tictactoe_v3", execution="process") as url:
        with pytest.raises(FactoryError, match="play a seat on /ws"):
            openenv_gym.RemoteAECEnv(url).reset(seed=0)
        with openenv_gym.RemoteEnv(url) as seat:  # the seat view is isolated
            seat.reset(seed=0)
