"""Process isolation that contains (``--execution process``): a session's env process
ends with its session, whatever ends it, even in the middle of a call, and with its
server, even one killed by SIGKILL; ``--env-memory-mb`` caps what it may allocate
(docs/reliability.md, "Process isolation that contains").

Every server here is a real ``openenv-gym serve`` on 127.0.0.1 whose env spins in its
steps (``tests.envs:SpinningEnv``) unless said otherwise; every process it started that
a test saw is killed by PID at the end, whatever the test did.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import threading
import time
from collections.abc import Iterator

import pytest

import openenv_gym
from openenv_gym.errors import ExecutionError, ProtocolError
from openenv_gym.protocol import Reset, Step, codec_for
from openenv_gym.server.execution import EnvCaller, HungCalls
from openenv_gym.server.resolve import resolve
from openenv_gym.server.session import Session
from tests.conftest import (
    ServerProcesses,
    free_port,
    grandchildren,
    process_gone,
    serve_args,
    server_process,
    wait_until,
)
from tests.envs import CrashingEnv
from tests.server.raw import ask, http, ws

SPINNING = "tests.envs:SpinningEnv"
#: Seconds an env process may take to be gone once its session has ended.
GONE_WITHIN = 5.0


@contextlib.contextmanager
def serving(*flags: str, env: str = SPINNING, execution: str = "process") -> Iterator[ServerProcesses]:
    """``openenv-gym serve ENV --execution EXECUTION FLAGS`` on 127.0.0.1; afterwards every
    process below it the test saw and that still lives is killed by its PID."""
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    served: ServerProcesses | None = None
    try:
        with server_process(serve_args(port, "--execution", execution, *flags, env=env), url) as proc:
            served = ServerProcesses(proc, url)
            yield served
    finally:
        if served is not None:
            served.kill_seen()


def _spinning(served: ServerProcesses, sock) -> int:
    """Reset on ``sock``, start a step that never returns, and the pid of the env
    process that spins for it (the one whose CPU time grows)."""
    assert ask(sock, {"type": "reset", "data": {"seed": 0}})["type"] == "observation"
    return served.spinning_env(lambda: sock.send(json.dumps({"type": "step", "data": {"action": 0}})))


def _free(served: ServerProcesses) -> bool:
    health = served.health()
    return health["active_sessions"] == 0 and health["hung_env_calls"] == 0


@pytest.mark.parametrize("leaving", ["abruptly", "with a close frame"])
def test_a_client_that_leaves_mid_call_takes_its_env_process_with_it(leaving):
    with serving("--max-sessions", "1") as served, ws(served.url) as sock:
        pid = _spinning(served, sock)
        if leaving == "abruptly":
            sock.close_socket()
        else:
            sock.close()
        assert wait_until(lambda: process_gone(pid), GONE_WITHIN), "the env process outlived its client"
        assert wait_until(lambda: _free(served), GONE_WITHIN), served.health()
        with openenv_gym.RemoteEnv(served.url) as env:  # the one slot is free again
            env.reset(seed=0)


def test_a_call_on_a_thread_whose_client_left_is_abandoned_and_holds_its_slot_until_it_returns():
    """Without a process of its own a call cannot be killed: its session ends at once all
    the same, and the call is abandoned as after a step timeout, counted until it returns."""
    with serving("--env-kwargs", '{"delay": 3}', env="tests.envs:SlowEnv", execution="thread") as served:
        with ws(served.url) as sock:
            assert ask(sock, {"type": "reset", "data": {"seed": 0}})["type"] == "observation"
            sock.send(json.dumps({"type": "step", "data": {"action": 0}}))
            time.sleep(0.5)
            sock.close_socket()
        abandoned = {"active_sessions": 1, "hung_env_calls": 1}
        assert wait_until(lambda: {key: served.health()[key] for key in abandoned} == abandoned, 2), served.health()
        assert wait_until(lambda: _free(served), 3 + GONE_WITHIN), served.health()


def test_the_idle_reaper_kills_an_env_process_in_the_middle_of_a_call():
    # The idle clock runs from the reset too, through the env process's start, which
    # takes seconds on a loaded machine: the timeout leaves room for it.
    with serving("--session-timeout", "5") as served, ws(served.url) as sock:
        pid = _spinning(served, sock)
        reply = json.loads(sock.recv(timeout=10))
        assert reply["type"] == "error" and "without a message" in reply["data"]["message"]
        assert wait_until(lambda: process_gone(pid), GONE_WITHIN), "the reaped session's process lives on"
        assert wait_until(lambda: _free(served), GONE_WITHIN), served.health()


def test_a_drain_that_runs_out_kills_the_env_process_it_waited_for():
    """An env that ignores SIGTERM (which multiprocessing sends its daemons at exit, then
    waits for them) kept the server from exiting for as long as it spun."""
    stubborn = ("--env-kwargs", '{"stubborn": true}')
    with serving("--drain-timeout", "1", *stubborn) as served, ws(served.url) as sock:
        pid = _spinning(served, sock)
        below = served.descendants()
        started = time.monotonic()
        served.proc.send_signal(signal.SIGTERM)
        assert wait_until(lambda: process_gone(pid), 1 + GONE_WITHIN), "the drain left the env process spinning"
        served.proc.wait(10)
        assert time.monotonic() - started < 1 + GONE_WITHIN
        assert wait_until(lambda: all(process_gone(p) for p in below), GONE_WITHIN), [
            p for p in below if not process_gone(p)
        ]


def test_a_held_session_closed_mid_call_kills_its_env_process():
    with serving() as served:
        _, created = http(served.url, "/mcp", {"jsonrpc": "2.0", "id": 1, "method": "openenv/session/create"})
        session = created["result"]["session_id"]
        act = {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
               "params": {"name": "act", "arguments": {"action": 0}, "session_id": session}}
        answers: list = []
        acting = threading.Thread(target=lambda: answers.append(http(served.url, "/mcp", act)), daemon=True)
        pid = served.spinning_env(acting.start)
        close = {"jsonrpc": "2.0", "id": 3, "method": "openenv/session/close", "params": {"session_id": session}}
        _, closed = http(served.url, "/mcp", close)
        assert closed["result"]["closed"] is True
        assert wait_until(lambda: process_gone(pid), GONE_WITHIN), "the closed session's process lives on"
        acting.join(10)
        [(_, answer)] = answers
        assert answer["error"]["message"].endswith("The session was closed"), answer  # and got no fresh env
        assert wait_until(lambda: _free(served), GONE_WITHIN), served.health()


def test_no_process_outlives_a_server_killed_by_sigkill():
    """The fork server, the resource tracker and every env process go with the server,
    a spinning one too (before: all three lived on, the env spinning for ever)."""
    with serving() as served, ws(served.url) as spinning, ws(served.url) as idle:
        _spinning(served, spinning)
        assert ask(idle, {"type": "reset", "data": {"seed": 0}})["type"] == "observation"
        assert wait_until(lambda: len(served.env_processes()) == 2, 10)
        below = served.descendants()
        assert len(below) >= 4, below  # the fork server, the resource tracker, two envs
        served.proc.kill()
        served.proc.wait(10)
        assert wait_until(lambda: all(process_gone(p) for p in below), GONE_WITHIN), [
            p for p in below if not process_gone(p)
        ]


def test_a_stateless_request_runs_its_env_in_a_process_of_its_own():
    """POST /step builds a throwaway env: isolated too (it ran in the server's process,
    where an env that aborts took the server down)."""
    with serving("--env-kwargs", '{"crash_at": 1}', env="tests.envs:CrashingEnv") as served:
        status, answer = http(served.url, "/step", {"action": {"action": 0}})
        assert status >= 400 and "SIGABRT" in json.dumps(answer), (status, answer)
        assert served.proc.poll() is None and served.health()["status"] == "healthy"


def test_an_env_past_its_memory_cap_fails_its_session_alone():
    with serving("--env-memory-mb", "512", "--env-kwargs", '{"megabytes": 1024}', env="tests.envs:GrowingEnv") as served:
        with openenv_gym.RemoteEnv(served.url) as growing, openenv_gym.RemoteEnv(served.url) as other:
            growing.reset(seed=0), other.reset(seed=0)
            assert growing.step(0)[1] == 1.0  # a normal env starts and steps under the cap
            with pytest.raises(ExecutionError, match=r"cap of 512 MiB.*--env-memory-mb") as raised:
                growing.step(1)
            assert "fresh environment" in str(raised.value)
            assert other.step(0)[1] == 1.0  # every other session goes on
            growing.reset(seed=1)  # in a fresh process
            assert growing.step(0)[4]["kept_mb"] == 0


def test_a_memory_cap_needs_process_isolation():
    from openenv_gym.server.app import create_app

    with pytest.raises(ValueError, match="execution='process'"):
        create_app("CartPole-v1", env_memory_mb=512)
    with pytest.raises(ValueError, match="positive"):
        create_app("CartPole-v1", execution="process", env_memory_mb=0)


# -- a session that is ending, without sockets ------------------------------------------


def _crashing_session(hung: HungCalls) -> Session:
    """A ``/ws`` session whose env, in a process of its own, aborts in its first step."""
    return Session(resolve(CrashingEnv, {"crash_at": 1}), codec=codec_for(None), caller=EnvCaller("process", hung=hung))


def test_a_session_that_is_ending_gets_no_fresh_env_when_its_env_crashes():
    async def scenario() -> None:
        session = _crashing_session(HungCalls())
        await session.start()
        await session.respond(Reset(seed=0))
        session.stop_reason = "The server is shutting down"
        with pytest.raises(ProtocolError, match=r"SIGABRT\)\. The server is shutting down$"):
            await session.respond(Step({"action": 0}))
        assert session.env is None  # nothing was built for it
        await session.close()

    asyncio.run(asyncio.wait_for(scenario(), 30))


def test_a_session_cancelled_while_its_crashed_env_is_rebuilt_has_the_new_process_killed():
    hung = HungCalls()

    async def scenario() -> None:
        session = _crashing_session(hung)
        await session.start()
        await session.respond(Reset(seed=0))
        before, running = grandchildren(os.getpid()), asyncio.all_tasks()
        stepping = asyncio.ensure_future(session.respond(Step({"action": 0})))
        for _ in range(5000):  # until the crash handler has begun the rebuild (10 s at most)
            if session.env is None:
                break
            await asyncio.sleep(0.002)
        stepping.cancel()
        with pytest.raises(asyncio.CancelledError):
            await stepping
        await session.close()  # as the hosting core does; the build goes on, abandoned
        started = asyncio.all_tasks() - running - {asyncio.current_task()}
        if started:  # until the abandoned build returns (15 s at most: a process starts slowly when loaded)
            await asyncio.wait(started, timeout=15)
        for _ in range(500):  # and any call it left behind (10 s at most)
            if not len(hung):
                break
            await asyncio.sleep(0.02)
        for _ in range(250):  # the process it built is killed then (5 s at most)
            if not grandchildren(os.getpid()) - before:
                break
            await asyncio.sleep(0.02)
        assert not grandchildren(os.getpid()) - before, "the env built for an ended session lives on"

    asyncio.run(asyncio.wait_for(scenario(), 30))
