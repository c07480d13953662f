"""Every client against a hostile server (:mod:`tests.hostile_server`): whatever the server
does, the client raises a clear error (its class, the server's address and the limit or
option in its message) within its deadline, with bounded memory.

The clients: ``RemoteEnv``, ``RemoteVectorEnv`` (sessions mode: the asyncio client; with
two URLs it reads ``/health`` too), ``RemoteAECEnv`` / ``RemoteParallelEnv``, the tools
client (``env_tools``: what ``openenv_gym.trl.environment_factory`` calls; ``view_session``:
what ``openenv_gym.skyrl.TextEnv`` calls) and ``openenv-gym check URL`` as a subprocess.
In-process clients are measured with tracemalloc, the CLI by its peak RSS (``wait4``).
"""

from __future__ import annotations

import copy
import os
import subprocess
import sys
import time
import tracemalloc
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import openenv_gym
from openenv_gym.client.tools import env_tools, view_session
from openenv_gym.errors import (
    ConnectionClosedError,
    LimitExceededError,
    MessageTimeoutError,
    OpenEnvGymError,
)
from tests import hostile_server as hs
from tests.conftest import subprocess_env

#: The clients' options here: small deadlines and limits.
CONNECT = 1.0
REPLY = 1.0
CAP = 1 << 20
OPTIONS: dict[str, Any] = {"connect_timeout": CONNECT, "message_timeout": REPLY,
                           "max_document_bytes": CAP, "max_message_bytes": CAP}
#: Seconds past a deadline a client may take to give up (a loaded 2-core machine).
MARGIN = 2.0
#: The most memory a client may allocate while the server sends it more than its limits.
MEMORY = 32 << 20
#: The CLI's deadline: ``openenv-gym check`` uses the default ``connect_timeout``.
CLI_CONNECT = 10.0
CLI_MEMORY = 64 << 20

CLI = str(Path(sys.executable).with_name("openenv-gym"))


@pytest.fixture
def hostile():
    """``hostile(routes, **kwargs)`` starts a :class:`~tests.hostile_server.HostileServer`;
    every server started is closed at the end of the test, whatever happened."""
    servers: list[hs.HostileServer] = []

    def start(routes=None, **kwargs: Any) -> hs.HostileServer:
        server = hs.HostileServer(routes, **kwargs)
        servers.append(server)
        return server

    try:
        yield start
    finally:
        for server in servers:
            server.close()


@dataclass
class Outcome:
    value: Any
    error: BaseException | None
    seconds: float
    peak: int  # bytes allocated at most meanwhile (tracemalloc)


def measured(call: Callable[[], Any]) -> Outcome:
    """``call()``'s value or error, its wall time and its peak of allocated memory."""
    tracing = tracemalloc.is_tracing()
    if tracing:
        tracemalloc.reset_peak()
    else:
        tracemalloc.start()
    started = time.monotonic()
    try:
        value, error = call(), None
    except Exception as exc:  # noqa: BLE001 - what the client raised is the result
        value, error = None, exc
    seconds = time.monotonic() - started
    peak = tracemalloc.get_traced_memory()[1]
    if not tracing:
        tracemalloc.stop()
    return Outcome(value, error, seconds, peak)


def assert_clear(outcome: Outcome, server: hs.HostileServer, kind: type[BaseException], words: tuple[str, ...],
                 deadline: float = 0.0) -> None:
    """``outcome`` is an error of class ``kind`` naming the server and one of ``words``,
    raised by ``deadline`` (+ :data:`MARGIN`) with at most :data:`MEMORY` allocated."""
    error = outcome.error
    assert error is not None, f"no error: {outcome.value!r}"
    assert isinstance(error, kind), f"{type(error).__name__}: {error}"
    if kind is ConnectionClosedError:
        assert not isinstance(error, LimitExceededError), f"{type(error).__name__}: {error}"
    message = str(error)
    assert f"127.0.0.1:{server.port}" in message, message
    assert any(word in message for word in words), message
    assert outcome.seconds < deadline + MARGIN, (outcome.seconds, message)
    assert outcome.peak < MEMORY, (outcome.peak, message)


# -- the clients --------------------------------------------------------------------------------


def remote_env(url: str, options: dict[str, Any] = OPTIONS) -> Any:
    env = openenv_gym.RemoteEnv(url, **options)
    try:
        return [env.reset()[0]["count"], env.step(1)[0]["count"], env.step(1)[0]["count"]]
    finally:
        env.close()


def vector_env(url: str, options: dict[str, Any] = OPTIONS) -> Any:
    env = openenv_gym.RemoteVectorEnv(url, num_envs=1, mode="sessions", **options)
    try:
        counts = [int(env.reset()[0]["count"][0])]
        counts += [int(env.step(np.array([1]))[0]["count"][0]) for _ in range(2)]
        return counts
    finally:
        env.close()


def aec_env(url: str, options: dict[str, Any] = OPTIONS) -> Any:
    env = openenv_gym.RemoteAECEnv(url, **options)
    env.close()


def parallel_env(url: str, options: dict[str, Any] = OPTIONS) -> Any:
    env = openenv_gym.RemoteParallelEnv(url, **options)
    env.close()


def _counts(session: Any, act: Callable[[], Any]) -> list[int]:
    try:
        texts = [session.reset(), act().text, act().text]
    finally:
        session.close()
    return [int(text.split("\n")[0].removeprefix("count: ")) for text in texts]


def tools_client(url: str, options: dict[str, Any] = OPTIONS) -> Any:
    """``env_tools`` as ``trl.environment_factory`` calls it, then a session of its tools."""
    session = env_tools(url, tools="client", **options).open()
    return _counts(session, lambda: session.call("act", {"action": 1}))


def view_client(url: str, options: dict[str, Any] = OPTIONS) -> Any:
    """``view_session`` as ``skyrl.TextEnv`` calls it, then ``TextEnv.step``'s ``act``."""
    session = view_session(url, **options)
    return _counts(session, lambda: session.act("1"))


CLIENTS = {"RemoteEnv": remote_env, "RemoteVectorEnv": vector_env, "RemoteAECEnv": aec_env,
           "RemoteParallelEnv": parallel_env, "env_tools": tools_client, "view_session": view_client}
#: The clients that speak to a stock server's ``/ws`` (the PettingZoo ones need ``/agents``).
WS_CLIENTS = ["RemoteEnv", "RemoteVectorEnv", "env_tools", "view_session"]


# -- HTTP documents that lie, never end or never come -------------------------------------------

DOC = b'{"action": {}, "observation": {}, "state": {}}'


@dataclass(frozen=True)
class Http:
    """A behaviour of every HTTP route, and what a client must raise for it."""

    make: Callable[[], hs.Handler | None]  # None: the server accepts and never reads
    kind: type[BaseException]
    words: tuple[str, ...]
    timed: bool = False  # the deadline ends it


HTTP = {
    "endless body": Http(hs.endless, LimitExceededError, ("max_document_bytes",)),
    "endless chunked body": Http(hs.endless_chunked, LimitExceededError, ("max_document_bytes",)),
    "Content-Length of 10 GB": Http(lambda: hs.content_length(10 * 10**9, b"{"), LimitExceededError,
                                    ("max_document_bytes",)),
    "Content-Length under the body": Http(lambda: hs.content_length(10, DOC, then="stream"), ConnectionClosedError,
                                          ("did not return JSON",)),
    "Content-Length over the body, then close": Http(lambda: hs.content_length(5000, DOC[:20]),
                                                     ConnectionClosedError, ("Content-Length",)),
    "nested 100,000 deep": Http(hs.deep, LimitExceededError, ("nesting",)),
    "Content-Length over the body, then silence": Http(lambda: hs.content_length(5000, DOC[:20], then="hold"),
                                                       MessageTimeoutError, ("connect_timeout",), timed=True),
    "headers trickled": Http(hs.trickle_headers, MessageTimeoutError, ("connect_timeout",), timed=True),
    "headers cut at a line's end, then silence": Http(hs.headers_then_silence, MessageTimeoutError,
                                                      ("connect_timeout",), timed=True),
    "body trickled": Http(lambda: hs.trickle_body(DOC), MessageTimeoutError, ("connect_timeout",), timed=True),
    "request read, never answered": Http(lambda: hs.silent, MessageTimeoutError, ("connect_timeout",), timed=True),
    "TCP accepted, never read": Http(lambda: None, MessageTimeoutError, ("connect_timeout",), timed=True),
}


def start_http(hostile: Callable[..., hs.HostileServer], behaviour: Http) -> hs.HostileServer:
    handler = behaviour.make()
    return hostile(silent=True) if handler is None else hostile(default=handler)


def http_cases() -> list[Any]:
    """Every client with every behaviour; those the deadline ends only with ``RemoteEnv``
    and "body trickled" by default (each takes ``connect_timeout``), the rest marked slow."""
    cases = []
    for client in CLIENTS:
        for name, behaviour in HTTP.items():
            slow = behaviour.timed and client != "RemoteEnv" and name != "body trickled"
            cases.append(pytest.param(client, name, id=f"{client}-{name}",
                                      marks=[pytest.mark.slow] if slow else []))
    return cases


@pytest.mark.parametrize("client, behaviour", http_cases())
def test_a_hostile_document_raises_a_clear_error_in_time_and_bounded_memory(hostile, client, behaviour):
    """Every document a client reads first (``/schema``; the tools client's ``/metadata``)
    never ends, lies about its length, comes a byte at a time, nests 100,000 deep or never
    comes: the client gives up at its limit or its deadline, saying which."""
    spec = HTTP[behaviour]
    server = start_http(hostile, spec)
    outcome = measured(lambda: CLIENTS[client](server.url))
    assert_clear(outcome, server, spec.kind, spec.words, CONNECT if spec.timed else 0.0)


@pytest.mark.parametrize("behaviour", ["endless body", "nested 100,000 deep", "Content-Length of 10 GB",
                                       "headers trickled"])
def test_hostile_optional_documents_are_ignored_in_time(hostile, behaviour):
    """``/metadata`` (the tools client's env name) and ``/health`` (a vector env's placement)
    are optional: one past a limit or past its deadline is ignored (the name is ``OpenEnv``,
    the envs are split evenly), within the deadline of each of the three documents read and
    bounded memory."""
    spec = HTTP[behaviour]
    hostile_route = spec.make()
    env = hs.StockEnv()
    server = hostile({"/schema": hs.document(hs.STOCK_SCHEMA), "/ws": hs.websocket(env),
                      "/metadata": hostile_route, "/health": hostile_route})

    def both() -> Any:
        name = env_tools(server.url, **OPTIONS).name
        vector = openenv_gym.RemoteVectorEnv([server.url, server.url], num_envs=2, mode="sessions", **OPTIONS)
        try:
            return name, [int(c) for c in vector.reset()[0]["count"]]
        finally:
            vector.close()

    outcome = measured(both)
    assert outcome.error is None, f"{type(outcome.error).__name__}: {outcome.error}"
    assert outcome.value == ("OpenEnv", [1, 1])
    assert {"/metadata", "/health"} <= set(server.paths())
    documents = len([path for path in server.paths() if path in ("/metadata", "/health")])
    assert outcome.seconds < (documents * CONNECT if spec.timed else 0.0) + MARGIN, outcome
    assert outcome.peak < MEMORY, outcome


@pytest.mark.parametrize("tools", ["auto", "client"])
def test_env_tools_gives_up_on_a_silent_server_within_one_connect_timeout(hostile, tools):
    """``env_tools`` reads what a session needs (the ``list_tools`` step, ``/schema``)
    before the optional ``/metadata``: a server that accepts and never answers costs one
    ``connect_timeout``, not one per document. The deadline is longer than :data:`MARGIN`,
    so waiting twice shows."""
    server = hostile(silent=True)
    connect = MARGIN + 1.0
    outcome = measured(lambda: env_tools(server.url, tools=tools, **{**OPTIONS, "connect_timeout": connect}))
    assert_clear(outcome, server, MessageTimeoutError, ("connect_timeout",), connect)


# -- WebSocket replies: fragmented, oversized, floods, not UTF-8, none ---------------------------


@dataclass(frozen=True)
class Ws:
    """How the server's ``/ws`` answers, and what a client must raise (``None``: the
    right replies, each to its own request)."""

    route: Callable[[], hs.Handler]
    kind: type[BaseException] | None = None
    words: tuple[str, ...] = ()
    deadline: float = 0.0
    #: The clients' ``connect_timeout``: longer than the deadline but where the handshake
    #: is what is tested, so that a handshake slow on a busy machine is not taken for it.
    connect: float = 5.0


WS = {
    "fragmented": Ws(lambda: hs.websocket(hs.StockEnv(hs.fragmented))),
    "fragmented with pings": Ws(lambda: hs.websocket(hs.StockEnv(hs.fragmented_with_pings))),
    "fragments past max_message_bytes": Ws(lambda: hs.websocket(hs.StockEnv(hs.oversized_fragments(CAP * 3 // 2))),
                                           LimitExceededError, ("max_message_bytes",)),
    "flood": Ws(lambda: hs.websocket(hs.StockEnv(hs.flood(1000))), LimitExceededError,
                ("more than 64 messages",)),
    "a few unsolicited messages": Ws(lambda: hs.websocket(hs.StockEnv(hs.flood(5))), ConnectionClosedError,
                                     ("nobody asked for",)),
    "text not UTF-8": Ws(lambda: hs.websocket(hs.StockEnv(hs.not_utf8)), ConnectionClosedError,
                         ("UTF-8", "1007")),
    "handshake, then silence": Ws(lambda: hs.websocket(hs.StockEnv(hs.never)), MessageTimeoutError,
                                  ("message_timeout",), REPLY),
    "handshake answered by an endless body": Ws(hs.endless, LimitExceededError, ("larger than a handshake reply may be",)),
    "handshake never answered": Ws(lambda: hs.websocket(hs.StockEnv(), handshake=False), MessageTimeoutError,
                                   ("connect_timeout",), CONNECT, connect=CONNECT),
}

def ws_cases() -> list[Any]:
    cases = []
    for client in WS_CLIENTS:
        for name in WS:
            cases.append(pytest.param(client, name, id=f"{client}-{name}"))
    return cases


@pytest.mark.parametrize("client, behaviour", ws_cases())
def test_websocket_replies_are_read_whole_or_refused_clearly(hostile, client, behaviour):
    """A reply in three fragments (TEXT fin=0, CONT, CONT fin=1), pings between them or
    not, is the right observation, and the next request gets the next reply, not a
    leftover; fragments past max_message_bytes together, a flood of unsolicited messages
    (or a few, which answer no request), a text frame that is not UTF-8 and a server that
    never answers end the connection with a clear error, in time and bounded memory."""
    spec = WS[behaviour]
    server = hostile({"/schema": hs.document(hs.STOCK_SCHEMA), "/ws": spec.route()})
    outcome = measured(lambda: CLIENTS[client](server.url, {**OPTIONS, "connect_timeout": spec.connect}))
    if spec.kind is None:
        assert outcome.error is None, f"{type(outcome.error).__name__}: {outcome.error}"
        assert outcome.value == [1, 2, 3]  # reset's reply, then each step's own
        assert outcome.seconds < MARGIN and outcome.peak < MEMORY, outcome
    else:
        assert_clear(outcome, server, spec.kind, spec.words, spec.deadline)


def test_a_flood_is_never_taken_for_replies(hostile):
    """However the flood and the requests interleave, no request of a RemoteEnv is answered
    with one of the unsolicited messages (their count is 999): each raises instead."""
    server = hostile({"/schema": hs.document(hs.STOCK_SCHEMA), "/ws": hs.websocket(hs.StockEnv(hs.flood(200)))})
    env = openenv_gym.RemoteEnv(server.url, **OPTIONS)
    try:
        seen = []
        for request in range(5):
            try:
                seen.append((env.reset() if request == 0 else env.step(1))[0]["count"])
            except LimitExceededError as exc:
                seen.append(type(exc).__name__)
            except OpenEnvGymError as exc:  # a RemoteEnv that lost its connection says so
                seen.append(type(exc).__name__)
    finally:
        env.close()
    assert 999 not in seen, seen
    assert seen[0] in (1, "LimitExceededError"), seen
    assert "LimitExceededError" in seen, seen


# -- schemas that lie about their spaces --------------------------------------------------------

GYM = {"version": 1}
MULTIAGENT = {
    "version": 1, "path": "/agents", "api": "aec", "apis": ["aec", "parallel"], "possible_agents": ["a"],
    "observation_spaces": {"a": {"type": "Discrete", "n": 2, "start": 0, "dtype": "int64"}},
    "action_spaces": {"a": {"type": "Discrete", "n": 2, "start": 0, "dtype": "int64"}},
}


def gym_schema(space: Any) -> dict:
    """An openenv-gym ``/schema`` whose observation space is ``space``."""
    wrap = {"format": "openenv-gym.space/1", "space": space}
    discrete = {"format": "openenv-gym.space/1", "space": {"type": "Discrete", "n": 2, "start": 0, "dtype": "int64"}}
    return {"x-openenv-gym": GYM,
            "observation": {"type": "object", "properties": {"obs": {"x-openenv-gym-space": wrap}}},
            "action": {"type": "object", "properties": {"action": {"x-openenv-gym-space": discrete}}}}


def multiagent_schema(**changes: Any) -> dict:
    description = {**copy.deepcopy(MULTIAGENT), **changes}
    return {"x-openenv-gym": {**GYM, "multiagent": {k: v for k, v in description.items() if v is not None}}}


HUGE = {"type": "Box", "dtype": "float64", "shape": [10**6, 10**6], "low": 0, "high": 1}
#: Within restore()'s limit of 2**26 elements, and 256 MiB of bounds.
LARGE = {"type": "Box", "dtype": "float64", "shape": [4096, 4096], "low": 0, "high": 1}
#: 640,000 bytes of bounds: within the clients' max_message_bytes (CAP) once, not twice.
HALF = {"type": "Box", "dtype": "float64", "shape": [40_000], "low": 0, "high": 1}

LIES = {
    # name: (client, schema, words the error names)
    "a shape of 10**12 elements": ("RemoteEnv", gym_schema(HUGE), ("elements",)),
    "a shape within the limit, 256 MiB of bounds": ("RemoteEnv", gym_schema(LARGE), ("max_message_bytes",)),
    "no observation": ("RemoteEnv", {"x-openenv-gym": GYM, "action": {}}, ("observation",)),
    "an observation that is a number": ("RemoteEnv", {"observation": 5, "action": [1]}, ("observation",)),
    "multiagent: a shape of 10**12 elements": ("RemoteAECEnv", multiagent_schema(observation_spaces={"a": HUGE}),
                                               ("elements",)),
    "multiagent: spaces within the limit each, past it together": (
        "RemoteAECEnv", multiagent_schema(possible_agents=["a", "b"], observation_spaces={"a": HALF, "b": HALF}),
        ("max_message_bytes",)),
    "multiagent: no apis": ("RemoteParallelEnv", multiagent_schema(apis=None), ("apis",)),
    "multiagent: spaces that are a number": ("RemoteAECEnv", multiagent_schema(observation_spaces=5),
                                             ("observation_spaces",)),
    "multiagent: an agent without its space": ("RemoteAECEnv", multiagent_schema(possible_agents=["a", "b"]),
                                               ("'b'",)),
}


@pytest.mark.parametrize("lie", list(LIES))
def test_a_schema_that_lies_about_its_spaces_is_refused_clearly(hostile, lie):
    """Huge shapes and fields of the wrong type: a ValueError or OpenEnvGymError naming the
    server and what is wrong, in bounded memory (never a KeyError or TypeError)."""
    client, schema, words = LIES[lie]
    server = hostile({"/schema": hs.document(schema)})
    outcome = measured(lambda: CLIENTS[client](server.url))
    assert isinstance(outcome.error, (ValueError, OpenEnvGymError)), repr(outcome.error)
    message = str(outcome.error)
    assert any(word in message for word in words), message
    assert outcome.peak < MEMORY, outcome.peak
    assert f"127.0.0.1:{server.port}" in message, message


def test_a_schema_with_absurd_numbers_gives_bounded_spaces(hostile):
    """A stock schema claiming a list of 10**12 items and an integer up to 10**40: the
    client infers spaces without allocating what they claim."""
    schema = copy.deepcopy(hs.STOCK_SCHEMA)
    schema["observation"]["properties"]["history"] = {"type": "array", "items": {"type": "number"},
                                                      "minItems": 10**12, "maxItems": 10**12}
    schema["action"]["properties"]["increment"] = {"type": "integer", "minimum": 0, "maximum": 10**40}
    server = hostile({"/schema": hs.document(schema), "/ws": hs.websocket(hs.StockEnv())})

    def spaces() -> Any:
        env = openenv_gym.RemoteEnv(server.url, **OPTIONS)
        try:
            return env.observation_space, env.action_space
        finally:
            env.close()

    outcome = measured(spaces)
    assert outcome.error is None, repr(outcome.error)
    observation_space, action_space = outcome.value
    assert action_space.high <= np.iinfo(np.int64).max
    assert "history" in observation_space.spaces
    assert outcome.peak < MEMORY and outcome.seconds < MARGIN, outcome


# -- openenv-gym check URL ----------------------------------------------------------------------


def run_cli(url: str, timeout: float) -> tuple[int, str, str, float, int]:
    """``openenv-gym check URL --skip-upstream``: its exit status, stdout, stderr, wall time
    and peak RSS in bytes (``wait4``: this child's own), killed (by its PID) past ``timeout``."""
    out_path = Path(os.environ.get("TMPDIR", "/tmp")) / f"hostile-cli-{os.getpid()}-{time.monotonic_ns()}"
    with open(f"{out_path}.out", "w+") as out, open(f"{out_path}.err", "w+") as err:
        started = time.monotonic()
        proc = subprocess.Popen([CLI, "check", url, "--skip-upstream"], stdout=out, stderr=err, env=subprocess_env())
        try:
            for _ in range(int(timeout / 0.02) + 1):
                pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
                if pid:
                    proc.returncode = os.waitstatus_to_exitcode(status)
                    break
                time.sleep(0.02)
            else:
                proc.kill()
                proc.wait(10)
                pytest.fail(f"openenv-gym check {url} ran past {timeout} s")
        finally:
            if proc.returncode is None:
                proc.kill()
                proc.wait(10)
        seconds = time.monotonic() - started
        out.seek(0)
        err.seek(0)
        stdout, stderr = out.read(), err.read()
    for suffix in (".out", ".err"):
        Path(f"{out_path}{suffix}").unlink(missing_ok=True)
    return proc.returncode, stdout, stderr, seconds, usage.ru_maxrss * 1024


@dataclass(frozen=True)
class CliBaseline:
    """The CLI against a port nobody listens on: what its start and imports cost alone."""

    seconds: float
    rss: int

    @property
    def start_allowance(self) -> float:
        """Time for the interpreter's start and imports, with room for a machine that gets
        busier between this run and the measured one (CI runs five jobs on two cores)."""
        return max(5.0, 2 * self.seconds)


@pytest.fixture(scope="module")
def cli_baseline() -> CliBaseline:
    with hs.HostileServer() as server:
        url = server.url
    _, _, _, seconds, rss = run_cli(url, 60)
    return CliBaseline(seconds, rss)


CLI_HTTP = ["endless body", "endless chunked body", "Content-Length of 10 GB", "Content-Length under the body",
            "Content-Length over the body, then close", "nested 100,000 deep", "TCP accepted, never read"]
CLI_WS = ["flood", "text not UTF-8"]
CLI_LIES = ["a shape of 10**12 elements", "no observation", "an observation that is a number"]


def cli_cases() -> list[Any]:
    cases = [pytest.param("http", name, id=name) for name in CLI_HTTP]
    cases += [pytest.param("http", name, id=name, marks=pytest.mark.slow)
              for name, spec in HTTP.items() if spec.timed and name not in CLI_HTTP]
    cases += [pytest.param("ws", name, id=f"ws-{name}") for name in CLI_WS]
    cases += [pytest.param("ws", "handshake, then silence", id="ws-handshake, then silence", marks=pytest.mark.slow)]
    cases += [pytest.param("lie", name, id=f"schema-{name}") for name in CLI_LIES]
    return cases


@pytest.mark.parametrize("kind, behaviour", cli_cases())
def test_check_url_answers_one_line_in_time_and_bounded_memory(hostile, cli_baseline, kind, behaviour):
    """``openenv-gym check URL`` against each hostile server: exit status 1, its progress and
    then one line of error on stderr (naming the server and the limit), never a traceback,
    no report; within its deadline (the default connect_timeout, 10 s; message_timeout, 60 s,
    for a server that never answers a message) and bounded memory."""
    deadline = 0.0
    if kind == "http":
        spec = HTTP[behaviour]
        server = start_http(hostile, spec)
        words, deadline = spec.words, CLI_CONNECT if spec.timed else 0.0
    elif kind == "ws":
        ws = WS[behaviour]
        server = hostile({"/schema": hs.document(hs.STOCK_SCHEMA), "/ws": ws.route()})
        words, deadline = ws.words, 60.0 if ws.deadline else 0.0
    else:
        server = hostile({"/schema": hs.document(LIES[behaviour][1])})
        words = LIES[behaviour][2]
    status, stdout, stderr, seconds, rss = run_cli(server.url, deadline + 60)
    assert "Traceback" not in stderr and "Traceback" not in stdout, stderr
    assert status == 1, (status, stdout, stderr)
    lines = stderr.strip().splitlines()
    errors = [line for line in lines if line.startswith("openenv-gym:")]
    assert errors == [lines[-1]], stderr  # one line of error, the last
    assert lines[-1].startswith(f"openenv-gym: cannot check {server.url}"), stderr
    assert any(word in lines[-1] for word in words), stderr
    assert stdout.strip() == "", stdout  # no report
    assert seconds < deadline + MARGIN + cli_baseline.start_allowance, (seconds, cli_baseline, stderr)
    assert rss - cli_baseline.rss < CLI_MEMORY, (rss >> 20, cli_baseline.rss >> 20)


# -- the adapters, when their extras are installed ---------------------------------------------


def test_trl_environment_factory_against_an_endless_schema(hostile):
    """``openenv_gym.trl.environment_factory`` (needs the trl extra: ``datasets``) fails as
    ``env_tools``, which it calls, does above."""
    pytest.importorskip("datasets")
    from openenv_gym.trl import environment_factory

    server = hostile(default=hs.endless())
    outcome = measured(lambda: environment_factory(server.url, tools="client", **OPTIONS))
    assert_clear(outcome, server, LimitExceededError, ("max_document_bytes",))


def test_skyrl_text_env_against_an_endless_schema(hostile):
    """``openenv_gym.skyrl.TextEnv`` (needs the skyrl extra: ``skyrl_gym``) fails as
    ``view_session``, which it calls, does above."""
    pytest.importorskip("skyrl_gym")
    from openenv_gym.skyrl import TextEnv

    server = hostile(default=hs.endless())
    outcome = measured(lambda: TextEnv(url=server.url, **OPTIONS).init([]))
    assert_clear(outcome, server, LimitExceededError, ("max_document_bytes",))
