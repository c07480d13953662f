"""Hostile input at a live server, on every route.

Random bytes, random JSON, wrong types, out-of-space actions and oversize
frames, in JSON and msgpack sessions of ``/ws``, ``/vector`` and ``/agents``,
on ``WS /mcp``, and as the bodies of ``POST /reset``, ``/step`` and ``/mcp``.
Every input must get a structured answer: the protocol's error frame (an
OpenEnv code, never "The server failed"), a JSON-RPC error, an HTTP 4xx with a
JSON ``detail`` (a 500 only for the env's own failure, with its code), a valid
reply, or a clean close; never a hang. The server must stay up, and a healthy
session running meanwhile must see exactly the trajectory of a local env with
the same seed.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import random
import threading
import urllib.parse
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

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
from openenv_gym.protocol.mcp import MAX_BATCH_REQUESTS

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


def check_error(data) -> bool:
    """An error frame's data: a known code and a message, never an internal failure.
    True when the error ends the session (the server closes next)."""
    assert data["code"] in CODES and data["message"], data
    assert not data["message"].startswith("The server failed"), data
    return data["code"] in ("SESSION_ERROR", "CAPACITY_REACHED", "FACTORY_ERROR")


def check_ws_reply(reply, message) -> bool:
    """A ``/ws`` reply to ``message``: CartPole's, or an error (True if it ends the session)."""
    assert reply["type"] in ("observation", "state", "error", "mcp", "render"), reply
    if reply["type"] == "observation":
        check_observation(reply["data"], message)
    elif reply["type"] == "state":
        check_state(reply["data"])
    elif reply["type"] == "error":
        return check_error(reply["data"])
    return False


def replies(*types: str) -> Callable[[Any, Any], bool]:
    """The check of a route whose replies are envelopes of ``types``, or errors."""

    def check(reply, message) -> bool:
        assert isinstance(reply, dict) and reply.get("type") in (*types, "error"), reply
        return reply["type"] == "error" and check_error(reply["data"])

    return check


def check_jsonrpc(reply, message=None) -> bool:
    """A JSON-RPC 2.0 response (True for -32000, a refused session the server closes next)."""
    assert isinstance(reply, dict) and reply.get("jsonrpc") == "2.0" and "id" in reply, reply
    if "error" not in reply:
        assert "result" in reply, reply
        return False
    error = reply["error"]
    assert type(error["code"]) is int and isinstance(error["message"], str), reply
    assert "The server failed" not in error["message"], reply
    return error["code"] == -32000


def check_jsonrpc_request(reply, message) -> bool:
    """:func:`check_jsonrpc`, and the error code is the one JSON-RPC gives ``message``
    (a decoded request; :data:`NOT_JSON` when the frame is not JSON, ``None`` when
    unknown): -32700 for a frame that
    does not parse (or breaks the size and nesting limits), -32600 for an invalid
    request, -32602 for params that are not an object, -32601 for an unknown method; an
    MCP method is answered (a result) or refused for its params (-32602: no tool name, an
    unknown session) or its tool (-32603: an unknown tool, arguments the tool refuses; see
    tests/server/test_tools.py). The id is echoed."""
    closes = check_jsonrpc(reply)
    code = reply["error"]["code"] if "error" in reply else None
    if message is None or closes:  # unknown, or a refused session
        return closes
    if message is NOT_JSON or code == -32700:  # (JSON beyond the nesting or items limit, too)
        assert code == -32700, (message, reply)
        return closes
    if not isinstance(message, dict):
        assert code == -32600, (message, reply)
        return closes
    request_id = message.get("id")
    echoed = request_id if isinstance(request_id, (str, int)) and not isinstance(request_id, bool) else None
    assert reply["id"] == echoed, (message, reply)
    if message.get("jsonrpc") != "2.0" or not isinstance(message.get("method"), str):
        expected = {-32600}
    elif message.get("params") is not None and not isinstance(message["params"], dict):
        expected = {-32602}
    elif message["method"] == "ping":
        expected = {None}
    elif message["method"] in MCP_METHODS:
        expected = {None, -32602, -32603}
    else:
        expected = {-32601}
    assert code in expected, (message, reply)
    return closes


def is_notification(message) -> bool:
    """Whether ``message`` is a JSON-RPC notification (a valid request without an ``id``
    member), which gets no response at all, not even an error."""
    return (isinstance(message, dict) and "id" not in message and message.get("jsonrpc") == "2.0"
            and isinstance(message.get("method"), str))


def answered(message) -> list | None:
    """The requests of a JSON-RPC batch that get a response, in order (``None`` when
    ``message`` is not a batch the server answers request by request: one request, or
    an empty or overlong batch, which one error answers)."""
    if not isinstance(message, list) or not 0 < len(message) <= MAX_BATCH_REQUESTS:
        return None
    return [request for request in message if not is_notification(request)]


def check_jsonrpc_answer(reply, message) -> bool:
    """The answer to a JSON-RPC frame or body: a response, or for a batch the list of its
    requests' responses in turn (see :func:`check_jsonrpc_request`). True when the
    server closes next."""
    requests = answered(message)
    if requests is None or (isinstance(reply, dict) and reply.get("error", {}).get("code") == -32700):
        return check_jsonrpc_request(reply, message)  # (a batch past the frame limits is one parse error)
    assert isinstance(reply, list) and len(reply) == len(requests), (message, reply)
    return any([check_jsonrpc_request(response, request) for response, request in zip(reply, requests)])


def gets_no_answer(message) -> bool:
    """Whether the server answers ``message`` (a decoded JSON-RPC frame or body) with
    nothing: a notification, or a batch of notifications only."""
    return is_notification(message) or answered(message) == []


#: What :func:`as_json_value` makes of a body or frame that is not JSON.
NOT_JSON = object()
MCP_METHODS = {"tools/list", "tools/call", "openenv/session/create", "openenv/session/close"}
#: A request the fuzzer sends after a message that gets no answer: the next frame must be its response.
PING = {"jsonrpc": "2.0", "id": "after-a-notification", "method": "ping"}


@dataclass(frozen=True)
class Route:
    """A WebSocket route as a fuzzer drives it."""

    path: str
    #: Messages that start a session, sent on every connect; each must be answered without error.
    opening: tuple = ({"type": "reset"},)
    #: Checks a reply to a fuzz frame; True when the reply ends the session.
    check: Callable[[Any, Any], bool] = check_ws_reply
    #: The message types of the route's envelopes (``None``: the route has none).
    types: frozenset | None = frozenset({"reset", "step", "state", "close", "mcp", "render"})
    #: Whether a message gets no reply (the route then answers the next one first).
    silent: Callable[[Any], bool] = lambda message: False
    #: A message whose reply is ``silent``'s proof: nothing was sent in between.
    probe: Any = None

    def check_envelope(self, reply, message) -> None:
        """A message that is not an object, or whose type the route does not know,
        gets VALIDATION_ERROR or UNKNOWN_TYPE (INVALID_JSON if it did not decode)."""
        if self.types is None or message is None:
            return
        if not isinstance(message, dict):
            expected = "VALIDATION_ERROR"
        elif not isinstance(message.get("type"), str) or message["type"] not in self.types:
            expected = "UNKNOWN_TYPE"
        else:
            return
        assert reply.get("type") == "error" and reply["data"]["code"] in (expected, "INVALID_JSON"), (message, reply)


WS = Route("/ws")
VECTOR_TYPES = frozenset({"vector_open", "reset", "step", "call", "get_attr", "set_attr", "render", "close"})
VECTOR = Route("/vector", ({"type": "vector_open", "data": {"num_envs": 2}}, {"type": "reset", "data": {"seed": 0}}),
               replies("vector_observation", "call", "get_attr", "set_attr", "render"), VECTOR_TYPES)
VECTOR_OPEN = Route("/vector", (), replies("vector_opened"), VECTOR_TYPES)
AGENTS = Route("/agents?api=aec", ({"type": "reset", "data": {"seed": 0}},),
               replies("observation", "state", "render", "mcp"))
MCP = Route("/mcp", (), check_jsonrpc_answer, None, gets_no_answer, PING)


class Fuzzer:
    """One fuzzing connection to a route, reconnecting whenever the server closes it."""

    def __init__(self, url: str, binary: bool, route: Route = WS) -> None:
        self.url = url.replace("http://", "ws://") + route.path
        self.binary = binary
        self.route = route
        self.sock = None
        self.closes = 0

    def _open(self):
        if self.sock is None:
            self.sock = connect(self.url, compression=None, open_timeout=10,
                                subprotocols=[MSGPACK_SUBPROTOCOL] if self.binary else None,
                                max_size=None).__enter__()
            for message in self.route.opening:
                self.sock.send(self._encode(message))
                reply = self._decode(self.sock.recv(timeout=10))
                assert reply.get("type") != "error", reply
        return self.sock

    def _encode(self, message):
        return msgpack.packb(message) if self.binary else json.dumps(message)

    @staticmethod
    def _decode(reply):
        return READER.decode(reply) if isinstance(reply, bytes) else json.loads(reply)

    def send_frame(self, frame, message=None) -> None:
        """Send ``frame`` (whose decoded content is ``message``, when known) and
        check the outcome: a valid reply, a structured error, or a clean close."""
        sock = self._open()
        silent = self.route.silent(message)
        try:
            sock.send(frame)
            if silent:  # nothing comes back: the probe's reply is the next frame
                sock.send(self._encode(self.route.probe))
                message = self.route.probe
            reply = sock.recv(timeout=10)
        except ConnectionClosed:
            assert sock.close_code in (1000, 1009, None), sock.close_code
            self.sock = None
            self.closes += 1
            return
        reply = self._decode(reply)
        self.route.check_envelope(reply, message)
        if self.route.check(reply, message):  # the server closes next
            with pytest.raises(ConnectionClosed):
                sock.recv(timeout=10)
            self.sock = None

    def close(self) -> None:
        if self.sock is not None:
            self.sock.close()
            self.sock = None


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
    reward and boolean flags; and a step it accepted carried a legal action. A reset
    with CartPole's own ``low`` / ``high`` options starts where they say, which may be
    outside the space (Gymnasium's env checker only warns): 4 finite floats then."""
    fields = data["observation"]
    obs = np.asarray(fields["obs"])
    options = message.get("data") if isinstance(message, dict) and message.get("type") == "reset" else None
    if isinstance(options, dict) and {"low", "high"} & options.keys():
        assert obs.dtype.kind == "f" and obs.shape == (4,) and np.isfinite(obs).all(), fields
    else:
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


@contextlib.contextmanager
def playing_beside(play: Callable[[str, threading.Event], None], url: str) -> Iterator[list[BaseException]]:
    """Run ``play(url, stop)`` in a thread for the ``with`` block; it must not fail."""
    errors: list[BaseException] = []
    stop = threading.Event()

    def run() -> None:
        try:
            play(url, stop)
        except BaseException as exc:  # noqa: BLE001 - reported by the test
            errors.append(exc)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    yield errors
    stop.set()
    thread.join(30)
    assert not thread.is_alive()
    assert not errors, errors


def play_cartpole(url: str, stop: threading.Event) -> None:
    """Seeded CartPole episodes, each step the same as a local env's."""
    local = gym.make("CartPole-v1")
    with openenv_gym.RemoteEnv(url) as remote:
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


def play_tictactoe(url: str, stop: threading.Event) -> None:
    """Seeded games of random legal moves, each turn the same as a local game's."""
    from pettingzoo.classic import tictactoe_v3

    local, remote = tictactoe_v3.env(), openenv_gym.RemoteAECEnv(url)
    try:
        seed = 0
        while not stop.is_set() and seed < 10_000:
            local.reset(seed=seed)
            remote.reset(seed=seed)
            moves = random.Random(seed)
            for agent in local.agent_iter():
                obs, reward, terminated, truncated, _ = local.last()
                remote_obs, *remote_rest = remote.last()
                assert remote.agent_selection == agent, (seed, agent)
                assert (remote_obs["observation"] == obs["observation"]).all(), (seed, agent)
                assert remote_rest[:3] == [reward, terminated, truncated], (seed, agent)
                legal = np.flatnonzero(obs["action_mask"]).tolist()
                action = None if terminated or truncated else moves.choice(legal)
                local.step(action)
                remote.step(action)
            seed += 1
    finally:
        remote.close()


@pytest.fixture(scope="module")
def fuzz_url():
    with openenv_gym.local_server("CartPole-v1", limits=Limits(max_frame_bytes=FRAME_LIMIT)) as url:
        yield url


@pytest.fixture(scope="module")
def healthy_session(fuzz_url):
    """A session stepping through seeded episodes during all the fuzzing."""
    with playing_beside(play_cartpole, fuzz_url) as errors:
        yield errors


@pytest.fixture(scope="module")
def game_url():
    pytest.importorskip("pettingzoo")
    with openenv_gym.local_server("pettingzoo.classic.tictactoe_v3", limits=Limits(max_frame_bytes=FRAME_LIMIT)) as url:
        yield url


@pytest.fixture(scope="module")
def healthy_game(game_url):
    """Games of tic-tac-toe played during the fuzzing of ``/agents``."""
    with playing_beside(play_tictactoe, game_url) as errors:
        yield errors


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
        # The server may close with 1009 as soon as it reads the frame's header, while this
        # end is still sending, so the send itself can be the call that sees the close.
        with pytest.raises(ConnectionClosed):
            sock.send(msgpack.packb(payload) if binary else json.dumps(payload))
            sock.recv(timeout=10)
        assert sock.close_code == 1009
        fuzzer.sock = None
    fuzzer.send_frame(msgpack.packb({"type": "state"}) if binary else '{"type":"state"}')
    fuzzer.close()
    assert not healthy_session


# -- every other route -------------------------------------------------------------------

ROUTE_FUZZ = settings(FUZZ, max_examples=60)

#: Bodies and frames at the limits: empty, a BOM, huge numbers, deep nesting, more items
#: than ``Limits.max_items``, over the size limit.
SPECIAL = [
    b"", b"null", b"[]", b"\xef\xbb\xbf{}", b"{", b'{"seed": 1e400}', b'{"seed": ' + b"9" * 5_000 + b"}",
    b"[" * 100 + b"]" * 100, b'{"action": {"action": ' + b"[" * 100 + b"]" * 100 + b"}}",
    b"[" + b"0," * 100_000 + b"0]",
    b'{"pad": "' + b"x" * FRAME_LIMIT + b'"}',
]


def as_json(value) -> bytes:
    return json.dumps(value).encode()


bodies = st.one_of(
    st.binary(max_size=300),
    json_values.map(as_json),
    st.dictionaries(st.sampled_from(["seed", "episode_id", "low", "high", "options", "x"]), json_values).map(as_json),
    st.fixed_dictionaries({"action": json_values | st.dictionaries(st.sampled_from(["action", "x"]), json_values)},
                          optional={"seed": json_values}).map(as_json),
    st.sampled_from(SPECIAL),
)
jsonrpc_requests = st.fixed_dictionaries(
    {"jsonrpc": st.sampled_from(["2.0", "1.0", 2]),
     "method": st.sampled_from(["tools/list", "tools/call", "openenv/session/create", "x"]) | json_values},
    optional={"id": json_values, "params": json_values},
)
#: Names for ``/vector``'s call, get_attr and set_attr: public and private attributes, methods.
VECTOR_NAMES = ["spec", "render_mode", "metadata", "action_space", "close", "reset", "step", "get_wrapper_attr",
                "set_wrapper_attr", "has_wrapper_attr", "_np_random", "__class__", "x"]
vector_names = st.sampled_from(VECTOR_NAMES) | json_values
vector_messages = st.one_of(
    st.fixed_dictionaries({"type": st.sampled_from(["reset", "step", "call", "get_attr", "set_attr", "render",
                                                    "close", "vector_open", "x"])}, optional={"data": json_values}),
    st.fixed_dictionaries({"type": st.just("step"),
                           "data": st.fixed_dictionaries({"actions": json_values | st.lists(st.integers(-1, 2))})}),
    st.fixed_dictionaries({"type": st.just("reset"), "data": st.fixed_dictionaries({}, optional={
        "seed": json_values | st.lists(st.integers(-1, 5) | st.none(), max_size=3),
        "options": json_values | st.fixed_dictionaries({"reset_mask": json_values | st.lists(st.booleans())}),
    })}),
    st.fixed_dictionaries({"type": st.sampled_from(["call", "get_attr", "set_attr"]),
                           "data": st.fixed_dictionaries({"name": vector_names}, optional={
                               "args": json_values | st.lists(vector_names, max_size=2), "kwargs": json_values,
                               "values": json_values})}),
    json_values,
)
vector_openings = st.fixed_dictionaries(
    {"type": st.sampled_from(["vector_open", "reset", "x"])},
    optional={"data": json_values | st.fixed_dictionaries({}, optional={
        "num_envs": st.integers(-2, 6) | st.integers(2**8, 2**70) | json_values,
        "autoreset_mode": st.sampled_from(["NextStep", "SameStep", "Disabled", "same_step", "x"]) | json_values,
    })},
) | json_values
agents_messages = st.one_of(
    st.fixed_dictionaries({"type": st.sampled_from(["reset", "step", "state", "render", "mcp", "close", "x"])},
                          optional={"data": json_values}),
    st.fixed_dictionaries({"type": st.just("step"),
                           "data": st.fixed_dictionaries({"action": st.none() | st.integers(-2, 10) | json_values})}),
    st.fixed_dictionaries({"type": st.just("step"), "data": st.fixed_dictionaries({"actions": json_values})}),
    st.fixed_dictionaries({"type": st.just("reset"),
                           "data": st.dictionaries(st.sampled_from(["seed", "episode_id", "x"]), json_values)}),
    json_values,
)


def pack(message, binary: bool):
    return msgpack.packb(message, unicode_errors="surrogatepass") if binary else json.dumps(message)


def post(url: str, path: str, body: bytes) -> tuple[int, Any]:
    """``POST path`` with ``body``: the status and the answer, which must be JSON."""
    address = urllib.parse.urlsplit(url)
    connection = http.client.HTTPConnection(address.hostname, address.port, timeout=10)
    try:
        connection.request("POST", path, body=body, headers={"Content-Type": "application/json"})
        response = connection.getresponse()
        body = response.read()
        return response.status, json.loads(body) if body else None
    finally:
        connection.close()


def as_json_value(body: bytes):
    """What a body says as JSON (UTF-8, as the protocol has it), or :data:`NOT_JSON`
    (also for JSON nested deeper than the server's limit, which it refuses to parse)."""
    try:
        value = json.loads(body.decode("utf-8"))
    except (ValueError, RecursionError):  # UnicodeDecodeError and JSONDecodeError alike
        return NOT_JSON
    return value if nesting(value) <= Limits().max_depth else NOT_JSON


def nesting(value) -> int:
    """How deeply lists and objects nest in ``value`` (0 for a scalar)."""
    if isinstance(value, dict):
        value = list(value.values())
    if not isinstance(value, list):
        return 0
    return 1 + max(map(nesting, value), default=0)


def check_http(path: str, body: bytes, status: int, answer) -> None:
    """A reply (a JSON-RPC response on ``/mcp``, or HTTP 202 and no body for what gets
    no response; else CartPole's observation), or an HTTP
    4xx with a JSON detail; a 500 only for the env's own failure, with its code. A body
    over the size limit is a 413, one that is not JSON a 422 INVALID_JSON (on ``/mcp``,
    a JSON-RPC parse error)."""
    value = as_json_value(body) if body.strip() else {}
    if len(body) > FRAME_LIMIT:
        assert status == 413 and answer["code"] == "INVALID_JSON", (status, answer)
        return
    if path == "/mcp":
        if gets_no_answer(value):
            assert status == 202 and answer is None, (value, status, answer)
            return
        assert status == 200, (status, answer)
        check_jsonrpc_answer(answer, value)
        return
    if status == 200:  # a body the server took is JSON; on /step its action was legal
        check_observation(answer, {"type": "step", "data": value["action"]} if path == "/step"
                          else {"type": "reset", "data": value})
        return
    assert isinstance(answer, dict) and answer.get("detail"), (status, answer)
    assert "The server failed" not in json.dumps(answer["detail"]), (status, answer)
    if "code" in answer:
        assert answer["code"] in CODES, (status, answer)
    if value is NOT_JSON:
        assert status == 422 and answer["code"] == "INVALID_JSON", (status, answer)
    assert 400 <= status < 500 or (status == 500 and answer.get("code") == "EXECUTION_ERROR"), (status, answer)


@pytest.mark.parametrize("path", ["/reset", "/step", "/mcp"])
def test_http_bodies(fuzz_url, healthy_session, path):
    @ROUTE_FUZZ
    @given(bodies | jsonrpc_requests.map(as_json) if path == "/mcp" else bodies)
    def run(body):
        status, answer = post(fuzz_url, path, body)
        check_http(path, body, status, answer)

    run()
    assert not healthy_session


def test_websocket_mcp(fuzz_url, healthy_session):
    fuzzer = Fuzzer(fuzz_url, binary=False, route=MCP)

    @ROUTE_FUZZ
    @given(jsonrpc_requests.map(json.dumps) | json_values.map(json.dumps) | st.text(max_size=100)
           | st.sampled_from(SPECIAL).map(bytes.decode) | st.binary(max_size=50))
    def run(frame):
        fuzzer.send_frame(frame, as_json_value(frame.encode("utf-8")) if isinstance(frame, str) else None)

    run()
    fuzzer.close()
    assert not healthy_session


def test_vector_openings(fuzz_url, healthy_session):
    fuzzer = Fuzzer(fuzz_url, binary=False, route=VECTOR_OPEN)

    @ROUTE_FUZZ
    @given(vector_openings)
    def run(message):
        fuzzer.send_frame(json.dumps(message), message)
        fuzzer.close()  # the next example opens a session of its own

    run()
    assert not healthy_session


@pytest.mark.parametrize("binary", [False, True], ids=["json", "msgpack"])
def test_vector_messages(fuzz_url, healthy_session, binary):
    fuzzer = Fuzzer(fuzz_url, binary, route=VECTOR)

    @ROUTE_FUZZ
    @given(vector_messages)
    def run(message):
        fuzzer.send_frame(pack(message, binary), message)

    run()
    fuzzer.close()
    assert not healthy_session


@pytest.mark.parametrize("binary", [False, True], ids=["json", "msgpack"])
def test_agents_messages(game_url, healthy_game, binary):
    fuzzer = Fuzzer(game_url, binary, route=AGENTS)

    @ROUTE_FUZZ
    @given(agents_messages.map(lambda message: (pack(message, binary), message))
           | st.binary(max_size=100).map(lambda data: (data if binary else data.decode("latin-1"), None)))
    def run(frame_and_message):
        fuzzer.send_frame(*frame_and_message)

    run()
    fuzzer.close()
    assert not healthy_game
