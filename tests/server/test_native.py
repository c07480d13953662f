"""The native listener (:mod:`openenv_gym.server.native`) and how clients reach it
(:mod:`openenv_gym.client.native`): advertised in ``/schema``, used by every openenv-gym
client, checked as the main port checks (token, path, limits, UTF-8), drained on
shutdown, and given up for the main port whenever it cannot be reached."""

from __future__ import annotations

import asyncio
import json
import logging
import socket
import struct
import threading
import time
import urllib.request

import gymnasium as gym
import msgpack
import numpy as np
import pytest
from websockets.exceptions import ConnectionClosed, InvalidStatus
from websockets.sync.client import connect

import openenv_gym
from openenv_gym.client import native as client_native
from openenv_gym.client.async_session import AsyncSession
from openenv_gym.client.options import ConnectOptions
from openenv_gym.errors import RemoteError
from openenv_gym.protocol import NATIVE_HEADER, NATIVE_KEY, Reset
from openenv_gym.server.native import native_available
from tests.conftest import free_port, serve_args, server_process, wait_until

MSGPACK_V2 = "openenv-gym.msgpack.v2"

pytestmark = pytest.mark.skipif(not native_available(), reason="picows is not installed")


def advertised(url: str) -> dict | None:
    with urllib.request.urlopen(f"{url}/schema", timeout=10) as response:
        return json.load(response).get(NATIVE_KEY)


def native_ws(url: str, path: str = "/ws", **kwargs):
    native = advertised(url)
    assert native is not None
    return connect(f"ws://127.0.0.1:{native['port']}{path}", compression=None, open_timeout=10, **kwargs)


def raw_ws(port: int) -> socket.socket:
    """A socket to ``/ws`` on ``port`` of 127.0.0.1, past the WebSocket handshake (JSON):
    for frames no WebSocket library would send."""
    raw = socket.create_connection(("127.0.0.1", port), timeout=10)
    raw.sendall(
        b"GET /ws HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
        b"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n"
    )
    head = b""
    while b"\r\n\r\n" not in head:
        head += raw.recv(4096)
    return raw


def port_of(ws_url: str) -> int:
    return int(ws_url.split(":")[2].split("/")[0])


@pytest.fixture(scope="module")
def served():
    with openenv_gym.local_server("CartPole-v1", max_sessions=4) as url:
        yield url


def test_schema_advertises_the_listener_and_its_handshake_names_it(served):
    native = advertised(served)
    assert sorted(native) == ["id", "port", "version"] and native["version"] == 1
    assert native["port"] != port_of(served.replace("http", "ws") + "/ws")
    with native_ws(served, subprotocols=["openenv-gym.msgpack.v1"]) as sock:
        assert sock.response.headers[NATIVE_HEADER] == native["id"]
        assert sock.subprotocol == "openenv-gym.msgpack.v1"


def test_remote_env_steps_on_the_native_port_as_on_the_main_port(served):
    """The same seeded episode over both ports: the same observations, bit for bit."""
    native = openenv_gym.RemoteEnv(served)
    main = openenv_gym.RemoteEnv(served, native=False)
    try:
        assert port_of(native._session.url) == advertised(served)["port"]
        assert port_of(main._session.url) == port_of(served.replace("http", "ws") + "/ws")
        assert native._session.codec.subprotocol == main._session.codec.subprotocol == "openenv-gym.msgpack.v2"
        a, _ = native.reset(seed=3)
        b, _ = main.reset(seed=3)
        np.testing.assert_array_equal(a, b)
        for _ in range(50):
            a, ra, ta, ua, _ = native.step(1)
            b, rb, tb, ub, _ = main.step(1)
            np.testing.assert_array_equal(a, b)
            assert (ra, ta, ua) == (rb, tb, ub)
            if ta or ua:
                break
    finally:
        native.close()
        main.close()


def test_json_sessions_and_stock_frames_work_on_the_native_port(served):
    with native_ws(served) as sock:  # no subprotocol: OpenEnv's JSON
        sock.send(json.dumps({"type": "reset", "data": {"seed": 1}}))
        reply = json.loads(sock.recv(timeout=10))
        assert reply["type"] == "observation" and len(reply["data"]["observation"]["obs"]) == 4


@pytest.fixture
def opened(monkeypatch) -> list[str]:
    """The URLs of the WebSockets the clients open (real connections, recorded)."""
    urls: list[str] = []
    real = client_native.open_connection

    def recording(base_url, path, options):
        connection = real(base_url, path, options)
        urls.append(connection.url)
        return connection

    monkeypatch.setattr(client_native, "open_connection", recording)
    monkeypatch.setattr("openenv_gym.client.session.open_connection", recording)
    return urls


def test_agents_route_is_native_too(opened):
    with openenv_gym.local_server("pettingzoo.classic.tictactoe_v3") as url:
        env = openenv_gym.RemoteAECEnv(url)
        try:
            env.reset(seed=0)
            assert env.agent_selection in env.agents
            env.step(env.action_space(env.agent_selection).sample(env.observe(env.agent_selection)["action_mask"]))
        finally:
            env.close()
        assert opened and all(port_of(u) == advertised(url)["port"] and "/agents?" in u for u in opened)


@pytest.mark.parametrize("backend", ["sync", "envpool"])
def test_vector_route_is_native_too(opened, backend):
    if backend == "envpool":
        pytest.importorskip("envpool")
    env = "envpool:CartPole-v1" if backend == "envpool" else "CartPole-v1"
    with openenv_gym.local_server(env, vector_backend=backend) as url:
        envs = openenv_gym.RemoteVectorEnv(url, num_envs=3)
        try:
            obs, _ = envs.reset(seed=0)
            assert obs.shape == (3, 4)
            obs, *_ = envs.step(np.ones(3, dtype=np.int64))
            assert obs.shape == (3, 4)
        finally:
            envs.close()
        assert opened and all(port_of(u) == advertised(url)["port"] and u.endswith("/vector") for u in opened)


def test_async_sessions_use_the_native_port(served):
    async def main() -> str:
        options = ConnectOptions()
        client_native.read_schema(served, options)
        session = await AsyncSession.open(served, options)
        try:
            reply = await session.request(Reset(seed=0))
            assert reply.type == "observation"
            return session.url
        finally:
            await session.close()

    assert port_of(asyncio.run(main())) == advertised(served)["port"]


def test_the_token_is_asked_for_on_the_native_port():
    with openenv_gym.local_server("CartPole-v1", token="s3cret") as url:
        request = urllib.request.Request(f"{url}/schema", headers={"Authorization": "Bearer s3cret"})
        with urllib.request.urlopen(request, timeout=10) as response:
            port = json.load(response)[NATIVE_KEY]["port"]
        for headers in ({}, {"Authorization": "Bearer wrong"}):
            with pytest.raises(InvalidStatus) as refused:
                connect(f"ws://127.0.0.1:{port}/ws", additional_headers=headers, open_timeout=10)
            assert refused.value.response.status_code == 403
            assert b"token" in refused.value.response.body
        env = openenv_gym.RemoteEnv(url, token="s3cret")
        try:
            assert port_of(env._session.url) == port
            env.reset(seed=0)
        finally:
            env.close()


def test_an_unknown_path_is_404_naming_the_routes(served):
    with pytest.raises(InvalidStatus) as refused:
        native_ws(served, "/nowhere")
    assert refused.value.response.status_code == 404
    assert b"/ws" in refused.value.response.body and b"/vector" in refused.value.response.body


def test_bad_frames_are_refused_with_their_close_codes_and_others_keep_working(served):
    """An oversize message (whole or in fragments) closes with 1009, text that is not
    UTF-8 with 1007; the next connection steps as before.

    One frame over the limit is picows's to refuse: it sends 1009 and cuts the connection
    10 ms later, so a peer still sending the rest of that frame may see the reset before
    the close frame. A message over the limit in fragments is refused by the listener,
    which reads until the peer's close: the peer always sees 1009."""
    native = advertised(served)
    big = 16 * 1024 * 1024 + 1
    with native_ws(served, max_size=None) as sock:
        with pytest.raises(ConnectionClosed):
            sock.send(b"x" * big)
            sock.recv(timeout=10)
        assert sock.protocol.close_rcvd is None or sock.protocol.close_rcvd.code == 1009
    with native_ws(served, max_size=None) as sock:
        with pytest.raises(ConnectionClosed):
            sock.send([b"a" * (9 << 20), b"b" * (9 << 20)])
            sock.recv(timeout=10)
        assert sock.protocol.close_rcvd.code == 1009
    raw = raw_ws(native["port"])
    try:
        payload = b"\xff\xfe"
        raw.sendall(bytes([0x81, 0x80 | len(payload)]) + b"\0\0\0\0" + payload)  # masked with zeros
        frame = raw.recv(4096)
        assert frame[0] == 0x88 and struct.unpack("!H", frame[2:4])[0] == 1007
    finally:
        raw.close()
    with native_ws(served) as sock:
        sock.send(json.dumps({"type": "reset", "data": {}}))
        assert json.loads(sock.recv(timeout=10))["type"] == "observation"


def test_fragmented_messages_are_reassembled(served):
    with native_ws(served) as sock:
        text = json.dumps({"type": "reset", "data": {"seed": 5}})
        sock.send([text[:5], text[5:12], text[12:]])
        assert json.loads(sock.recv(timeout=10))["type"] == "observation"


def test_capacity_is_shared_by_both_ports():
    with openenv_gym.local_server("CartPole-v1", max_sessions=1) as url:
        first = openenv_gym.RemoteEnv(url)
        try:
            with pytest.raises(RemoteError, match="capacity"):
                openenv_gym.RemoteEnv(url, native=False).reset()
            with pytest.raises(RemoteError, match="capacity"):
                openenv_gym.RemoteEnv(url).reset()
        finally:
            first.close()


def test_an_unreachable_native_port_falls_back_to_the_main_port_once(served, caplog):
    """A port nobody listens on (a proxy in between, say): the main port serves, and the
    native port is not tried again until ``/schema`` is read anew."""
    ghost = free_port()
    real = advertised(served)
    client_native.learn(served, {NATIVE_KEY: {**real, "port": ghost}})
    options = ConnectOptions()
    with caplog.at_level("INFO", "openenv_gym.client"):
        connection = client_native.open_connection(served, "/ws", options)
    try:
        assert port_of(connection.url) == port_of(served.replace("http", "ws") + "/ws")
        assert any("native_unreachable" in r.getMessage() for r in caplog.records)
        assert client_native.native_attempt(served, "/ws", options) is None
    finally:
        connection.close()
    env = openenv_gym.RemoteEnv(served)  # reads /schema: the real port again
    try:
        assert port_of(env._session.url) == real["port"]
    finally:
        env.close()


def test_another_server_on_the_advertised_port_is_not_used(served):
    """The advertised port answers, but with another listener's id (a restarted server's
    port taken by another): the main port serves."""
    with openenv_gym.local_server("CartPole-v1") as other:
        impostor = advertised(other)
        client_native.learn(served, {NATIVE_KEY: {**advertised(served), "port": impostor["port"]}})
        connection = client_native.open_connection(served, "/ws", ConnectOptions())
        try:
            assert port_of(connection.url) == port_of(served.replace("http", "ws") + "/ws")
        finally:
            connection.close()
    client_native.read_schema(served, ConnectOptions())


def test_https_servers_are_never_reached_natively():
    client_native.learn("https://example.test", {NATIVE_KEY: {"port": 4000, "id": "x", "version": 1}})
    assert client_native.native_attempt("https://example.test", "/ws", ConnectOptions()) is None


def test_no_listener_when_turned_off(monkeypatch):
    with openenv_gym.local_server("CartPole-v1", native_port=None) as url:
        assert advertised(url) is None
        env = openenv_gym.RemoteEnv(url)
        try:
            assert port_of(env._session.url) == port_of(url.replace("http", "ws") + "/ws")
        finally:
            env.close()
    monkeypatch.setenv("OPENENV_GYM_NATIVE", "off")
    with openenv_gym.local_server("CartPole-v1") as url:
        assert advertised(url) is None


def test_the_cli_serves_a_chosen_native_port_and_turns_it_off():
    port, native = free_port(), free_port()
    url = f"http://127.0.0.1:{port}"
    with server_process(serve_args(port, "--native-port", str(native)), url):
        assert advertised(url)["port"] == native
    with server_process(serve_args(port, "--native-port", "off"), url):
        assert advertised(url) is None


def test_shutdown_drains_native_sessions():
    """A native session at shutdown gets the server's SESSION_ERROR and close code 1001."""
    with openenv_gym.local_server("CartPole-v1") as url:
        sock = native_ws(url).__enter__()
        sock.send(json.dumps({"type": "reset", "data": {}}))
        sock.recv(timeout=10)
    try:
        told = json.loads(sock.recv(timeout=10))
        assert told["type"] == "error" and "shutting down" in told["data"]["message"]
        with pytest.raises(ConnectionClosed):
            sock.recv(timeout=10)
        assert sock.protocol.close_rcvd.code == 1001
    finally:
        sock.close()


def test_a_client_gone_in_the_middle_of_a_call_ends_its_session():
    """The session learns of a dropped native connection during an env call, and its slot
    is free for the next client."""
    started = threading.Event()

    class Slow(gym.Env):
        def __init__(self):
            self.env = gym.make("CartPole-v1")
            self.observation_space, self.action_space = self.env.observation_space, self.env.action_space

        def reset(self, *, seed=None, options=None):
            return self.env.reset(seed=seed, options=options)

        def step(self, action):
            started.set()
            time.sleep(2.0)
            return self.env.step(action)

        def close(self):
            self.env.close()

    with openenv_gym.local_server(Slow, max_sessions=1) as url:
        env = openenv_gym.RemoteEnv(url)
        env.reset(seed=0)
        env._session.connection.send(env._session.codec.encode({"type": "step", "data": {"action": 0}}))
        assert started.wait(10)
        env._session.connection.close(timeout=0.1)
        health = f"{url}/health"

        def freed() -> bool:
            with urllib.request.urlopen(health, timeout=5) as response:
                return json.load(response).get("active_sessions", 1) == 0

        assert wait_until(freed, 10)
        again = openenv_gym.RemoteEnv(url)
        try:
            again.reset(seed=0)
        finally:
            again.close()


@pytest.mark.parametrize("port", ["native", "main"])
def test_a_frame_of_the_other_kind_ends_the_session_on_both_ports(served, port):
    """Text on a msgpack session (binary on a JSON one) ends it with SESSION_ERROR on the
    native listener as on the main port, also when it comes while the session waits for
    a message (the native listener answers those at once, in its callback)."""
    url = served.replace("http", "ws") + "/ws"
    opened = native_ws(served, subprotocols=[MSGPACK_V2]) if port == "native" else connect(
        url, subprotocols=[MSGPACK_V2], compression=None, open_timeout=10
    )
    with opened as sock:
        sock.send(struct.pack("<I", 0))  # an empty v2 message: an error frame, the session goes on
        assert msgpack.unpackb(sock.recv(timeout=10)[4:])["data"]["code"] == "INVALID_JSON"
        time.sleep(0.2)  # the session's task waits for the next message
        sock.send(json.dumps({"type": "state"}))
        error = msgpack.unpackb(sock.recv(timeout=10)[4:])["data"]
        assert error["code"] == "SESSION_ERROR" and "send binary frames" in error["message"]
        with pytest.raises(ConnectionClosed):
            sock.recv(timeout=10)


#: Frames that break RFC 6455's framing, each with a reset in its payload.
_RESET = json.dumps({"type": "reset", "data": {}}).encode()
BROKEN_FRAMING = {
    "a reserved bit set": bytes([0xC1, 0x80 | len(_RESET)]) + bytes(4) + _RESET,
    "a continuation with no message": bytes([0x80, 0x80 | len(_RESET)]) + bytes(4) + _RESET,
    "a new message inside a fragmented one": (
        bytes([0x01, 0x81]) + bytes(4) + b"{" + bytes([0x81, 0x80 | len(_RESET)]) + bytes(4) + _RESET
    ),
}


@pytest.mark.parametrize("port", ["native", "main"])
@pytest.mark.parametrize("broken", list(BROKEN_FRAMING))
def test_broken_framing_closes_with_1002_on_both_ports(served, port, broken):
    """What the main port refuses (websockets' framing) the native listener refuses the
    same way: a close frame with 1002, and no answer to the message inside."""
    raw = raw_ws(advertised(served)["port"] if port == "native" else int(served.rsplit(":", 1)[1]))
    try:
        raw.sendall(BROKEN_FRAMING[broken])  # masked with zeros
        frame = raw.recv(4096)
        assert frame[0] == 0x88 and struct.unpack("!H", frame[2:4])[0] == 1002, frame
    finally:
        raw.close()


def test_peers_breaking_the_protocol_make_one_warning_line_not_errors(served, caplog):
    """picows logs a peer that broke the protocol as an ERROR; the server makes that one
    throttled WARNING line (``invalid_frame``), so that no client can fill its log."""
    caplog.set_level(logging.WARNING)
    for _ in range(5):
        raw = raw_ws(advertised(served)["port"])
        try:
            raw.sendall(bytes([0x81, 0x02]) + b"{}")  # unmasked: picows refuses it
            assert raw.recv(4096)[0] == 0x88
        finally:
            raw.close()
    native = [r for r in caplog.records if r.name.startswith("openenv_gym.server")]
    assert not [r for r in native if r.levelno >= logging.ERROR], caplog.text
    assert len([r for r in native if "invalid_frame" in r.getMessage()]) <= 1, caplog.text


def test_a_frame_for_a_connection_lost_but_not_yet_reported_is_refused_not_written(caplog):
    """Between a connection's loss and its report (the TCP transport closing, the callback
    that tells picows still queued on the loop), a reply the session sends raises
    ``ConnectionResetError``, which ends the session, rather than going to a dead transport,
    which would drop it silently and warn of every write after the fifth."""
    from tests.conformance.hosting import app_host

    with app_host() as host, caplog.at_level(logging.WARNING, logger="asyncio"):
        url = host.serve("CartPole-v1")
        env = openenv_gym.RemoteEnv(url)
        try:
            env.reset(seed=0)
            listener, _ = host._native[0]
            (channel,) = listener._channels

            async def lose_then_send() -> int:
                channel._tcp.abort()  # what a reset read does: closing now, the loss reported at the next turn
                refused = 0
                for _ in range(8):
                    try:
                        await channel.send_frame(b"a reply to a connection already gone")
                    except ConnectionResetError:
                        refused += 1
                return refused

            assert asyncio.run_coroutine_threadsafe(lose_then_send(), host._loop).result(10) == 8
        finally:
            env.close()
    assert not [r for r in caplog.records if r.name == "asyncio"], [r.getMessage() for r in caplog.records]
