"""Hostile input at a live server.

Random bytes, random JSON, wrong types, out-of-space actions and oversize
frames, in JSON and msgpack sessions. Every frame must get a structured error
frame (an OpenEnv code) or a clean close; the server must stay up; and a
healthy session running meanwhile must see exactly the trajectory of a local
env with the same seed.
"""

from __future__ import annotations

import json
import threading

import gymnasium as gym
import msgpack
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from websockets.exceptions import ConnectionClosed
from websockets.sync.client import connect

import openenv_gym
from openenv_gym.errors import ErrorCode
from openenv_gym.protocol import MSGPACK_SUBPROTOCOL, Limits, MsgpackCodec

CODES = {code.value for code in ErrorCode}
FRAME_LIMIT = 256 * 1024

json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**63), 2**64 - 1) | st.floats(allow_nan=False) | st.text(max_size=20)
    | st.sampled_from(["\ud800", "a\udfff\ud800", "\x00", "\u2028"]),  # lone surrogates, NUL
    lambda children: st.lists(children, max_size=5) | st.dictionaries(st.text(max_size=8), children, max_size=5),
    max_leaves=30,
)
messages = st.one_of(
    st.fixed_dictionaries({"type": st.sampled_from(["reset", "step", "state", "close", "mcp", "render", "x"])},
                          optional={"data": json_values, "extra": json_values}),
    st.fixed_dictionaries({"type": st.just("step"), "data": st.fixed_dictionaries({"action": json_values})}),
    st.fixed_dictionaries({"type": st.just("reset"), "data": st.dictionaries(st.sampled_from(["seed", "episode_id", "x"]), json_values)}),
    json_values,
)


class Fuzzer:
    """One fuzzing connection that reconnects whenever the server closes it."""

    def __init__(self, url: str, binary: bool) -> None:
        self.url = url.replace("http://", "ws://") + "/ws"
        self.binary = binary
        self.sock = None
        self.closes = 0

    def _open(self):
        if self.sock is None:
            self.sock = connect(self.url, compression=None, open_timeout=10,
                                subprotocols=[MSGPACK_SUBPROTOCOL] if self.binary else None,
                                max_size=None).__enter__()
            self.sock.send(self._encode({"type": "reset"}))
            self.sock.recv(timeout=10)
        return self.sock

    def _encode(self, message):
        return msgpack.packb(message) if self.binary else json.dumps(message)

    def send_frame(self, frame, message=None) -> None:
        """Send ``frame`` (whose decoded content is ``message``, when known) and
        check the outcome: a valid reply, a structured error, or a clean close."""
        sock = self._open()
        try:
            sock.send(frame)
            if isinstance(frame, (str, bytes)) and frame in ('{"type":"close"}', msgpack.packb({"type": "close"})):
                raise ConnectionClosed(None, None)
            reply = sock.recv(timeout=10)
        except ConnectionClosed:
            assert sock.close_code in (1000, 1009, None), sock.close_code
            self.sock = None
            self.closes += 1
            return
        decoded = READER.decode(reply) if isinstance(reply, bytes) else json.loads(reply)
        assert decoded["type"] in ("observation", "state", "error", "mcp", "render"), decoded
        if decoded["type"] == "observation":
            check_observation(decoded["data"], message)
        elif decoded["type"] == "state":
            check_state(decoded["data"])
        elif decoded["type"] == "error":
            assert decoded["data"]["code"] in CODES and decoded["data"]["message"]
            if decoded["data"]["code"] in ("SESSION_ERROR", "CAPACITY_REACHED", "FACTORY_ERROR"):
                with pytest.raises(ConnectionClosed):
                    sock.recv(timeout=10)
                self.sock = None

    def close(self) -> None:
        if self.sock is not None:
            self.sock.close()


CARTPOLE = gym.make("CartPole-v1")
#: Reads the server's msgpack replies (ndarrays are an extension type).
READER = MsgpackCodec()


def decoded(frame):
    """What a fuzz frame says, when it is JSON or msgpack at all."""
    try:
        return msgpack.unpackb(frame, raw=False) if isinstance(frame, bytes) else json.loads(frame)
    except Exception:  # noqa: BLE001 - junk is expected here
        return None


def check_observation(data, message) -> None:
    """An observation the server sent is CartPole's: in its space, with a float
    reward and boolean flags; and a step it accepted carried a legal action."""
    fields = data["observation"]
    obs = np.asarray(fields["obs"])
    assert obs.dtype.kind == "f" and CARTPOLE.observation_space.contains(obs.astype(np.float32)), fields
    assert type(fields["terminated"]) is bool and type(fields["truncated"]) is bool
    assert type(data["done"]) is bool and data["done"] == (fields["terminated"] or fields["truncated"])
    assert data["reward"] is None or type(data["reward"]) is float
    if isinstance(message, dict) and message.get("type") == "step":
        # JSON has one number type: an integral float is the integer (as in OpenEnv's pydantic models).
        action = message["data"]["action"]
        assert type(action) in (int, float) and action in (0, 1), (message, data)


def check_state(data) -> None:
    assert type(data["step_count"]) is int and data["step_count"] >= 0, data
    assert data["episode_id"] is None or isinstance(data["episode_id"], str), data


@pytest.fixture(scope="module")
def fuzz_url():
    with openenv_gym.local_server("CartPole-v1", limits=Limits(max_frame_bytes=FRAME_LIMIT)) as url:
        yield url


@pytest.fixture(scope="module")
def healthy_session(fuzz_url):
    """A session stepping through a seeded episode during all the fuzzing."""
    errors: list[BaseException] = []
    stop = threading.Event()

    def run() -> None:
        try:
            local = gym.make("CartPole-v1")
            with openenv_gym.RemoteEnv(fuzz_url) as remote:
                seed = 0
                while not stop.is_set() and seed < 10_000:
                    local_obs, _ = local.reset(seed=seed)
                    remote_obs, _ = remote.reset(seed=seed)
                    assert (local_obs == remote_obs).all()
                    for step in range(500):
                        action = (seed + step) % 2
                        a = local.step(action)
                        b = remote.step(action)
                        assert (a[0] == b[0]).all() and a[1:4] == b[1:4], (seed, step)
                        if a[2] or a[3]:
                            break
                    seed += 1
        except BaseException as exc:  # noqa: BLE001 - reported by the test
            errors.append(exc)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    yield errors
    stop.set()
    thread.join(30)
    assert not thread.is_alive()
    assert not errors, errors


FUZZ = settings(max_examples=250, deadline=None, suppress_health_check=list(HealthCheck))


@pytest.mark.parametrize("binary", [False, True], ids=["json", "msgpack"])
def test_random_bytes(fuzz_url, healthy_session, binary):
    fuzzer = Fuzzer(fuzz_url, binary)

    @FUZZ
    @given(st.binary(max_size=300))
    def run(data):
        frame = data if binary else data.decode("latin-1")
        fuzzer.send_frame(frame, decoded(frame))

    run()
    fuzzer.close()
    assert not healthy_session


@pytest.mark.parametrize("binary", [False, True], ids=["json", "msgpack"])
def test_random_messages(fuzz_url, healthy_session, binary):
    fuzzer = Fuzzer(fuzz_url, binary)

    @FUZZ
    @given(messages)
    def run(message):
        frame = msgpack.packb(message, unicode_errors="surrogatepass") if binary else json.dumps(message)
        fuzzer.send_frame(frame, message)

    run()
    fuzzer.close()
    assert not healthy_session


def test_out_of_space_and_wrong_type_actions(fuzz_url, healthy_session):
    fuzzer = Fuzzer(fuzz_url, binary=False)

    @FUZZ
    @given(st.one_of(st.integers(), st.floats(), st.text(), st.lists(st.integers()), st.booleans(), st.none()))
    def run(action):
        sock = fuzzer._open()
        sock.send(json.dumps({"type": "step", "data": {"action": action}}))
        reply = json.loads(sock.recv(timeout=10))
        if action in (0, 1) and not isinstance(action, bool):
            assert reply["type"] == "observation"
            check_observation(reply["data"], {"type": "step", "data": {"action": action}})
        else:
            assert reply["data"]["code"] == "VALIDATION_ERROR", (action, reply)

    run()
    fuzzer.close()
    assert not healthy_session


@pytest.mark.parametrize("binary", [False, True], ids=["json", "msgpack"])
def test_oversize_frames_are_refused_and_the_server_stays_up(fuzz_url, healthy_session, binary):
    fuzzer = Fuzzer(fuzz_url, binary)
    for size in (FRAME_LIMIT + 1, 4 * FRAME_LIMIT):
        sock = fuzzer._open()
        payload = {"type": "step", "data": {"action": "x" * size}}
        sock.send(msgpack.packb(payload) if binary else json.dumps(payload))
        with pytest.raises(ConnectionClosed):
            sock.recv(timeout=10)
        assert sock.close_code == 1009
        fuzzer.sock = None
    fuzzer.send_frame(msgpack.packb({"type": "state"}) if binary else '{"type":"state"}')
    fuzzer.close()
    assert not healthy_session
