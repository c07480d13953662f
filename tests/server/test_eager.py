"""Answers begun in the callback that received the message (:mod:`openenv_gym.server.eager`),
finished on the session's task only when they have to wait: the same replies, in the same
order, whatever waits; what an answer raises ends the session on its task."""

from __future__ import annotations

import asyncio
import time

import gymnasium as gym
import httpx
import msgpack
import numpy as np
import pytest

import openenv_gym
from openenv_gym.errors import EnvCallTimeout, ErrorCode, ProtocolError
from openenv_gym.protocol import MSGPACK_SUBPROTOCOL, codec_for
from openenv_gym.server.eager import Done, Suspended, begin
from openenv_gym.server.execution import EnvCaller
from openenv_gym.server.native import NativeChannel, native_available
from openenv_gym.server.transport import LATER
from tests.server.test_native import native_ws

# -- begin and Suspended, alone --------------------------------------------------------


def test_a_coroutine_that_never_waits_is_done_at_once():
    async def answer():
        return 42

    assert begin(answer()) == Done(42)


def test_what_a_coroutine_raises_before_it_waits_is_raised_by_begin():
    async def failing():
        raise ValueError("bad frame")

    with pytest.raises(ValueError, match="bad frame"):
        begin(failing())


def test_the_rest_of_a_suspended_coroutine_runs_on_the_task_that_awaits_it():
    steps = []

    async def answer():
        steps.append("begun")
        await asyncio.sleep(0.01)
        steps.append("finished")
        return "reply"

    async def main():
        rest = begin(answer())
        assert isinstance(rest, Suspended) and steps == ["begun"]
        return await asyncio.get_running_loop().create_task(_await(rest))

    assert asyncio.run(main()) == "reply" and steps == ["begun", "finished"]


async def _await(rest: Suspended):
    return await rest


def test_a_failed_future_and_a_cancellation_reach_the_coroutine_where_it_waits():
    seen = []

    async def answer(future):
        try:
            return await future
        except (ValueError, asyncio.CancelledError) as exc:
            seen.append(type(exc).__name__)
            raise

    async def main():
        loop = asyncio.get_running_loop()
        failing = loop.create_future()
        task = loop.create_task(_await(begin(answer(failing))))
        await asyncio.sleep(0)
        failing.set_exception(ValueError("env failed"))
        with pytest.raises(ValueError):
            await task
        task = loop.create_task(_await(begin(answer(loop.create_future()))))
        await asyncio.sleep(0)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(main())
    assert seen == ["ValueError", "CancelledError"]


def test_closing_what_was_left_suspended_runs_its_finally_blocks():
    released = []

    async def answer(future):
        try:
            await future
        finally:
            released.append(True)

    async def main():
        rest = begin(answer(asyncio.get_running_loop().create_future()))
        assert isinstance(rest, Suspended)
        rest.close()

    asyncio.run(main())
    assert released == [True]


def test_an_env_call_under_a_step_timeout_begins_outside_any_task():
    """A step answered at once starts in the transport's callback, before any task: its env
    call on a thread, under the step timeout, must wait there (Python 3.12's
    ``asyncio.wait_for`` would refuse: "Timeout should be used inside a task")."""
    caller = EnvCaller("thread", timeout=0.5)

    async def begun_in_a_callback(call):
        loop = asyncio.get_running_loop()
        begun = loop.create_future()

        def callback():
            try:
                begun.set_result(begin(call))
            except BaseException as exc:  # noqa: BLE001 - handed to the test
                begun.set_exception(exc)

        loop.call_soon(callback)
        rest = await begun
        assert isinstance(rest, Suspended)
        return await loop.create_task(_await(rest))

    async def main():
        assert await begun_in_a_callback(caller(sum, [1, 2, 3])) == 6
        with pytest.raises(EnvCallTimeout, match="took longer than 0.5 s"):
            await begun_in_a_callback(caller(time.sleep, 1.5))
        assert await begun_in_a_callback(caller(sum, [4])) == 4  # on a new thread

    try:
        asyncio.run(main())
    finally:
        caller.shutdown()


# -- the native channel ----------------------------------------------------------------


def channel() -> NativeChannel:
    return NativeChannel({"query_string": b"", "headers": [], "type": "websocket"}, MSGPACK_SUBPROTOCOL)


CODEC = codec_for(MSGPACK_SUBPROTOCOL)


def test_a_frame_is_answered_at_once_only_while_the_task_waits_with_nothing_queued():
    async def main():
        answered = []

        async def answer(frame):
            answered.append(frame)
            return True

        ch = channel()
        ch.answer_at_once = answer
        ch.receive(b"early")  # no task waits yet: queued
        assert answered == [] and await ch.next_frame(CODEC) == b"early"
        waiting = asyncio.ensure_future(ch.next_frame(CODEC))
        await asyncio.sleep(0)
        ch.receive(b"now")
        assert answered == [b"now"] and not waiting.done()
        ch.lost()
        assert await waiting is None

    asyncio.run(main())


def test_a_message_left_for_later_an_error_and_an_end_go_to_the_task():
    async def main():
        outcomes = iter([LATER, ProtocolError(ErrorCode.SESSION_ERROR, "the session broke"), False])

        async def answer(frame):
            outcome = next(outcomes)
            if isinstance(outcome, Exception):
                raise outcome
            return outcome

        ch = channel()
        ch.answer_at_once = answer
        results = []
        for frame in (b"mcp", b"step", b"close"):
            waiting = asyncio.ensure_future(ch.next_frame(CODEC))
            await asyncio.sleep(0)
            ch.receive(frame)
            try:
                results.append(await waiting)
            except ProtocolError as exc:
                results.append(exc.code)
        assert results == [b"mcp", ErrorCode.SESSION_ERROR, None]

    asyncio.run(main())


def test_a_frame_of_the_other_kind_ends_the_session_naming_the_subprotocols():
    async def main():
        ch = channel()
        ch.receive('{"type": "state"}')  # text on a msgpack session
        with pytest.raises(ProtocolError) as info:
            await ch.next_frame(CODEC)
        assert info.value.code is ErrorCode.SESSION_ERROR and "openenv-gym.json.v1" in info.value.message

    asyncio.run(main())


def test_a_suspended_answer_is_handed_to_the_task_and_closed_if_the_session_ends_first():
    async def main():
        released = []

        async def answer(frame):
            try:
                await asyncio.get_running_loop().create_future()
            finally:
                released.append(frame)

        ch = channel()
        ch.answer_at_once = answer
        waiting = asyncio.ensure_future(ch.next_frame(CODEC))
        await asyncio.sleep(0)
        ch.receive(b"slow")
        rest = await waiting
        assert isinstance(rest, Suspended) and released == []  # the task awaits it from here
        ch.receive(b"next")  # no task waits: queued
        ch._put(begin(answer(b"left")))  # another answer the task has not taken yet
        ch.discard()  # the session ends: the queued frame dropped, the answer left behind closed
        assert released == [b"left"] and ch.answer_at_once is None and not ch._queue
        rest.close()

    asyncio.run(main())


# -- on a real server --------------------------------------------------------------------

needs_native = pytest.mark.skipif(not native_available(), reason="picows is not installed")


def steps_of_the_local_env(actions):
    env = gym.make("CartPole-v1")
    obs, _ = env.reset(seed=5)
    observations = [obs]
    for action in actions:
        obs, _, terminated, truncated, _ = env.step(action)
        observations.append(obs)
        if terminated or truncated:
            break
    return observations


@needs_native
@pytest.mark.parametrize("execution", ["inline", "thread", "auto"])
def test_pipelined_steps_are_answered_in_order_whether_or_not_they_wait(execution):
    """Thirty steps sent before any reply is read: on the thread every answer waits and is
    finished on the task (the later frames queue behind it); inline none waits; under
    ``auto`` the session moves from the thread to inline midway. The replies are the local
    env's, in order."""
    actions = [i % 2 for i in range(30)]
    expected = steps_of_the_local_env(actions)
    with openenv_gym.local_server("CartPole-v1", execution=execution) as url:
        with native_ws(url, subprotocols=[MSGPACK_SUBPROTOCOL]) as sock:
            sock.send(msgpack.packb({"type": "reset", "data": {"seed": 5}}))
            for action in actions[: len(expected) - 1]:
                sock.send(msgpack.packb({"type": "step", "data": {"action": action}}))
            replies = [msgpack.unpackb(sock.recv(timeout=10), ext_hook=_ext) for _ in expected]
    got = [reply["data"]["observation"]["obs"] for reply in replies]
    assert [reply["type"] for reply in replies] == ["observation"] * len(expected)
    np.testing.assert_array_equal(np.stack(got), np.stack(expected))


def _ext(code, payload):
    from openenv_gym.protocol import MsgpackCodec

    return MsgpackCodec()._ext_hook(code, payload)


@needs_native
def test_a_refused_message_answered_at_once_leaves_the_session_stepping():
    with openenv_gym.local_server("CartPole-v1", execution="inline") as url:
        with native_ws(url, subprotocols=[MSGPACK_SUBPROTOCOL]) as sock:
            sock.send(msgpack.packb({"type": "reset", "data": {"seed": 0}}))
            assert msgpack.unpackb(sock.recv(timeout=10), ext_hook=_ext)["type"] == "observation"
            sock.send(msgpack.packb({"type": "step", "data": {"action": 7}}))
            error = msgpack.unpackb(sock.recv(timeout=10), ext_hook=_ext)
            assert error["type"] == "error" and error["data"]["code"] == "VALIDATION_ERROR"
            sock.send(b"\xc1 not msgpack")
            error = msgpack.unpackb(sock.recv(timeout=10), ext_hook=_ext)
            assert error["data"]["code"] == "INVALID_JSON"
            sock.send(msgpack.packb({"type": "step", "data": {"action": 1}}))
            assert msgpack.unpackb(sock.recv(timeout=10), ext_hook=_ext)["type"] == "observation"


@needs_native
def test_a_plain_step_answered_in_the_callback_reports_what_the_env_did_wrong_and_goes_on():
    """A plain step is answered in the native channel's callback, by the session's shortest
    path: an env that raises, or returns an observation outside its space, gets its
    EXECUTION_ERROR there, counted as a step, and the session steps on."""
    with openenv_gym.local_server("tests.envs:FaultyEnv", execution="inline") as url:
        with native_ws(url, subprotocols=[MSGPACK_SUBPROTOCOL]) as sock:

            def step(action: int) -> dict:
                sock.send(msgpack.packb({"type": "step", "data": {"action": action}}))
                return msgpack.unpackb(sock.recv(timeout=10), ext_hook=_ext)

            sock.send(msgpack.packb({"type": "reset", "data": {"seed": 0}}))
            assert msgpack.unpackb(sock.recv(timeout=10), ext_hook=_ext)["type"] == "observation"
            raised, outside, fine = step(1), step(2), step(0)
            assert raised["data"]["code"] == "EXECUTION_ERROR" and "the simulator exploded" in raised["data"]["message"]
            assert outside["data"]["code"] == "EXECUTION_ERROR" and "does not fit" in outside["data"]["message"]
            assert fine["type"] == "observation" and fine["data"]["reward"] == 1.0
        metrics = httpx.get(f"{url}/metrics").text
    assert 'openenv_gym_messages_total{type="step"} 3' in metrics
    assert 'openenv_gym_errors_total{code="EXECUTION_ERROR"} 2' in metrics
