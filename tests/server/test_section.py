"""Shared sections on a live server (:mod:`openenv_gym._section`): openenv-gym clients on
this machine take the arrays of replies through memory on the native listener, with exactly
the values the socket would carry; other clients, other ports and hostile peers do without,
and the server keeps serving."""

from __future__ import annotations

import os
import struct
import time

import msgpack
import numpy as np
import pytest

import openenv_gym
from openenv_gym._section import ClientSection, supported
from openenv_gym.client import native as client_native
from openenv_gym.client.options import ConnectOptions
from openenv_gym.protocol import NATIVE_KEY, SECTION_HEADER
from openenv_gym.server.native import native_available
from tests.conftest import wait_until
from tests.server.test_native import MSGPACK_V2, native_ws

pytestmark = [
    pytest.mark.skipif(not native_available(), reason="picows is not installed"),
    pytest.mark.skipif(not supported(), reason="shared sections need Linux on x86-64"),
]

PIXELS = "tests.envs:PixelsEnv"
SCREEN = (210, 160, 3)


@pytest.fixture(scope="module")
def served():
    with openenv_gym.local_server(PIXELS, max_sessions=8) as url:
        yield url


def section_of(env) -> ClientSection | None:
    session = env._session if hasattr(env, "_session") else env._units[0].session.session
    return session.connection.section


def sections_open() -> int:
    """Section descriptors this process (the in-process server's) holds."""
    return sum(
        "openenv-gym-section" in os.readlink(f"/proc/self/fd/{fd}")
        for fd in os.listdir("/proc/self/fd") if os.path.exists(f"/proc/self/fd/{fd}")
    )


def rollout(env, steps: int) -> list:
    seen = [env.reset(seed=7)[0]]
    actions = np.arange(steps) % 4
    for action in actions:
        action = np.full(env.num_envs, action) if hasattr(env, "num_envs") else int(action)
        obs, reward, terminated, truncated, _ = env.step(action)
        seen.append((obs, reward, terminated, truncated))
    return seen


@pytest.mark.parametrize("vector", [False, True], ids=["RemoteEnv", "RemoteVectorEnv"])
def test_replies_come_through_the_section_with_the_values_of_the_socket(served, vector):
    make = (lambda **kw: openenv_gym.RemoteVectorEnv(served, num_envs=4, **kw)) if vector else (
        lambda **kw: openenv_gym.RemoteEnv(served, **kw))
    shared, plain = make(), make(shared_memory=False)
    try:
        section = section_of(shared)
        assert section is not None and section_of(plain) is None
        a, b = rollout(shared, 60), rollout(plain, 60)
        assert section._read >= 60  # each step's observation came through it
        for x, y in zip(a, b):
            for u, v in zip(*(np.atleast_1d(x), np.atleast_1d(y))) if not isinstance(x, tuple) else zip(x, y):
                np.testing.assert_array_equal(u, v)
        assert np.asarray(a[-1][0]).flags.writeable
    finally:
        shared.close()
        plain.close()


def test_no_section_on_the_main_port_nor_in_json():
    with openenv_gym.local_server(PIXELS) as url:
        for kwargs in ({"native": False}, {"encoding": "json"}):
            env = openenv_gym.RemoteEnv(url, **kwargs)
            try:
                assert section_of(env) is None
                assert env.reset(seed=0)[0].shape == SCREEN
            finally:
                env.close()


def test_a_client_that_cannot_attach_gets_every_reply_in_its_frames_and_offers_no_more(served, monkeypatch):
    """As a client in another container or of another user: the server made a section the
    client could not open, and never uses it; that server's next connections offer none."""
    monkeypatch.setattr(client_native, "_unattached", set())
    monkeypatch.setattr(ClientSection, "attach", classmethod(lambda cls, announced, limit: None))
    env = openenv_gym.RemoteVectorEnv(served, num_envs=2)
    try:
        assert section_of(env) is None
        for step in range(5):
            obs, *_ = env.step(np.zeros(2, np.int64)) if step else env.reset(seed=1)
            assert obs.shape == (2, *SCREEN)
        attempt = client_native.native_attempt(served, "/ws", ConnectOptions())
        assert attempt is not None and SECTION_HEADER not in attempt.options.headers
    finally:
        env.close()


def test_sections_are_closed_with_their_connections(served):
    before = sections_open()
    for _ in range(3):
        env = openenv_gym.RemoteEnv(served)
        env.reset(seed=0)
        env.close()
    with native_ws(served, subprotocols=[MSGPACK_V2], additional_headers={SECTION_HEADER: "offer"}) as never_attached:
        assert SECTION_HEADER in never_attached.response.headers
    # The server ends a connection's section when it sees the connection end, which may be
    # just after the client's close returns.
    assert wait_until(lambda: sections_open() == before, timeout=5.0), (sections_open(), before)


def test_a_peer_scribbling_on_its_section_harms_no_one_else(served):
    """A raw peer attaches its section, then overwrites all of it (counters included) before
    every request: its own replies come in their frames, whole, and another client, stepping
    between them, gets its replies through its own section."""
    other = openenv_gym.RemoteEnv(served)
    offer = {SECTION_HEADER: "offer"}
    try:
        with native_ws(served, subprotocols=[MSGPACK_V2], additional_headers=offer) as sock:
            section = ClientSection.attach(sock.response.headers[SECTION_HEADER], 1 << 26)
            assert section is not None
            scribble = np.frombuffer(section._memory, np.uint8)
            reset = msgpack.packb({"type": "reset", "data": {"seed": 0}})
            for step in range(5):
                scribble[:] = 0xFF
                sock.send(struct.pack("<I", len(reset)) + reset)
                reply = sock.recv(timeout=10)
                assert not struct.unpack_from("<I", reply)[0] & (1 << 31) and len(reply) > 210 * 160 * 3
                obs = other.reset(seed=0)[0] if step == 0 else other.step(1)[0]
                assert obs.shape == SCREEN
            del scribble
            section.close()
        assert section_of(other)._read == 5
    finally:
        other.close()


def test_a_section_is_made_only_when_offered_on_v2_frames(served):
    offer = {SECTION_HEADER: "offer"}
    with native_ws(served, subprotocols=["openenv-gym.msgpack.v1"], additional_headers=offer) as sock:
        assert SECTION_HEADER not in sock.response.headers
    with native_ws(served, subprotocols=[MSGPACK_V2]) as sock:
        assert SECTION_HEADER not in sock.response.headers
    with native_ws(served, subprotocols=[MSGPACK_V2], additional_headers={SECTION_HEADER: "yes please"}) as sock:
        assert SECTION_HEADER not in sock.response.headers


@pytest.mark.parametrize(
    ("base_url", "shared_memory", "offered"),
    [("http://127.0.0.1:8000", True, True), ("http://localhost:8000", True, True),
     ("http://127.0.0.1:8000", False, False), ("http://192.0.2.1:8000", True, False)],
)
def test_clients_offer_a_section_to_loopback_servers_unless_told_not_to(base_url, shared_memory, offered):
    client_native.learn(base_url, {NATIVE_KEY: {"port": 8001, "id": "x"}})
    try:
        attempt = client_native.native_attempt(base_url, "/ws", ConnectOptions(shared_memory=shared_memory))
        assert attempt is not None and (attempt.options.headers.get(SECTION_HEADER) == "offer") is offered
        assert SECTION_HEADER not in ConnectOptions(shared_memory=shared_memory).request_headers
    finally:
        client_native.learn(base_url, {})


def test_a_server_keeps_at_most_its_budget_of_sections_open(monkeypatch):
    """Each open section holds a descriptor or two: past the budget, connections do without."""
    monkeypatch.setattr("openenv_gym.server.native.budget", lambda: 1)
    offer = {SECTION_HEADER: "offer"}
    with openenv_gym.local_server(PIXELS) as url:
        first = openenv_gym.RemoteEnv(url)
        try:
            assert section_of(first) is not None
            with native_ws(url, subprotocols=[MSGPACK_V2], additional_headers=offer) as second:
                assert SECTION_HEADER not in second.response.headers
        finally:
            first.close()
        for _ in range(100):  # the server learns the first connection ended
            with native_ws(url, subprotocols=[MSGPACK_V2], additional_headers=offer) as third:
                if SECTION_HEADER in third.response.headers:
                    break
            time.sleep(0.02)
        else:
            pytest.fail("the section of a closed connection still counts against the budget")


def test_a_client_offers_a_section_only_where_replies_can_fill_one():
    """A section is offered when the replies' arrays can reach SHARED_SECTION_BYTES: not
    for CartPole's observations, even 64 at a time; for its rendered frames, yes."""
    before = sections_open()
    with openenv_gym.local_server("CartPole-v1", max_sessions=70) as url:
        small = [openenv_gym.RemoteEnv(url), openenv_gym.RemoteVectorEnv(url, 64, mode="batched")]
        try:
            assert [section_of(env) for env in small] == [None, None]
            assert sections_open() == before
        finally:
            for env in small:
                env.close()
    with openenv_gym.local_server("CartPole-v1", env_kwargs={"render_mode": "rgb_array"}) as url:
        env = openenv_gym.RemoteEnv(url)
        try:
            env.reset(seed=0)
            section = section_of(env)
            assert section is not None and section._read == 0
            assert env.render().shape == (400, 600, 3)
            assert section._read == 1  # the frame came through it
        finally:
            env.close()
