"""Sessions without sockets: typed messages in, typed replies out.

A server-side session is driven directly, the way the hosting core drives it
(``await session.start()``, then ``await session.respond(message)``), with
its env calls inline and no uvicorn: a ``/ws`` session of a Gymnasium env, of
a :class:`~openenv_gym.fields.FieldsEnv`, and a PettingZoo game on
``/agents``; and how an :class:`~openenv_gym.server.execution.EnvCaller` runs
env calls. ``/vector`` sessions are in ``tests/server/test_vector.py``.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
from gymnasium import spaces

from openenv_gym.catalog.grid_world_env import GridWorldEnvironment
from openenv_gym.errors import ErrorCode, ProtocolError
from openenv_gym.protocol import (
    JSON_SUBPROTOCOL,
    MSGPACK_SUBPROTOCOL,
    WS_MESSAGES,
    McpReply,
    McpRequest,
    MsgpackBuffersCodec,
    Observation,
    Render,
    RenderReply,
    Reset,
    State,
    StateReply,
    Step,
    codec_for,
    parse_message,
)
from openenv_gym.protocol import agents as agents_data
from openenv_gym.protocol import gym as gym_data
from openenv_gym.server.execution import EnvCaller
from openenv_gym.server.fields import FieldsSession
from openenv_gym.server.latency import LatencyPolicy
from openenv_gym.server.multiagent import AgentsSession
from openenv_gym.server.resolve import resolve
from openenv_gym.server.session import EnvHost, Session
from tests.envs import CompositeEnv
from tests.parity import assert_same

#: The ways values travel: stock JSON (no subprotocol), openenv-gym JSON, msgpack (both versions).
CODECS = {
    "stock-json": None,
    "json": JSON_SUBPROTOCOL,
    "msgpack": MSGPACK_SUBPROTOCOL,
    "msgpack-v2": MsgpackBuffersCodec.subprotocol,
}
EXTENDED = ["json", "msgpack", "msgpack-v2"]


class ActionRecorder(gym.Env):
    """Keeps the last action it was given, as the session decoded it."""

    observation_space = spaces.Discrete(2)
    action_space = spaces.Tuple((spaces.Discrete(3), spaces.Box(-1, 1, (2,), np.float32)))

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        return 0, {}

    def step(self, action):
        self.last_action = action
        return 0, 0.0, False, False, {}


async def started(session: EnvHost) -> Any:
    """``session`` with its env built, as the hosting core starts it."""
    await session.start()
    return session


def gym_session(env: Any, codec: str = "msgpack", **make_kwargs: Any) -> Session:
    """A ``/ws`` session of ``env`` (resolved as ``create_app`` resolves it), env calls inline."""
    source = resolve(env, make_kwargs)
    return source.session_type(source, codec=codec_for(CODECS[codec]), caller=EnvCaller("inline"))


async def answer(session: EnvHost, message: Any) -> Any:
    """The reply to ``message`` (the env seconds it reports are never negative)."""
    reply, seconds = await session.respond(message)
    assert seconds >= 0.0
    return reply


async def refusal(session: EnvHost, message: Any) -> ProtocolError:
    """The :class:`ProtocolError` ``message`` gets."""
    with pytest.raises(ProtocolError) as info:
        await session.respond(message)
    return info.value


def first_error(error: ProtocolError) -> dict:
    """The first pydantic-style entry of a VALIDATION_ERROR."""
    assert error.code is ErrorCode.VALIDATION_ERROR, error
    return error.extra["errors"][0]


# -- a Gymnasium env on /ws ----------------------------------------------------------


@pytest.mark.parametrize("codec", list(CODECS))
def test_a_session_answers_reset_step_state_and_mcp(codec):
    async def scenario() -> None:
        session = await started(gym_session("CartPole-v1", codec))
        reset = await answer(session, Reset(seed=0, episode_id="mine"))
        assert isinstance(reset, Observation) and reset.reward is None and reset.done is False
        assert (reset.observation["terminated"], reset.observation["truncated"]) == (False, False)
        step = await answer(session, Step({"action": 1}))
        assert isinstance(step, Observation) and step.reward == 1.0 and step.done is False
        state, seconds = await session.respond(State())
        assert state == StateReply({"episode_id": "mine", "step_count": 1, "env_id": "CartPole-v1", "seed": 0})
        assert seconds == 0.0  # no env call
        mcp = await answer(session, McpRequest({"jsonrpc": "2.0", "method": "tools/list", "id": 7}))
        assert isinstance(mcp, McpReply) and mcp.response["id"] == 7
        assert [tool["name"] for tool in mcp.response["result"]["tools"]] == ["act", "observe", "legal_actions", "new_episode", "episode_state"]
        await session.close()
        assert session.env is None

    asyncio.run(scenario())


@pytest.mark.parametrize("codec", list(CODECS))
def test_observations_are_arrays_on_msgpack_and_lists_on_json(codec):
    async def scenario() -> None:
        session = await started(gym_session("CartPole-v1", codec))
        fields = (await answer(session, Reset(seed=0))).observation
        obs = fields["obs"]
        if codec.startswith("msgpack"):
            assert isinstance(obs, np.ndarray) and obs.dtype == np.float32 and "types" not in fields
        else:
            assert isinstance(obs, list) and all(type(x) is float for x in obs)
            # openenv-gym JSON says how to rebuild the array; stock JSON says nothing more.
            assert fields.get("types") == ({"obs": {"nd": "<f4"}} if codec == "json" else None)
        await session.close()

    asyncio.run(scenario())


@pytest.mark.parametrize("codec", list(CODECS))
def test_render_frames_are_arrays_on_msgpack_and_lists_with_their_dtype_on_json(codec):
    async def scenario() -> None:
        session = await started(gym_session(CompositeEnv, codec, render_mode="rgb_array"))
        await answer(session, Reset(seed=0))
        reply = await answer(session, Render())
        assert isinstance(reply, RenderReply) and reply.render_mode == "rgb_array"
        if codec.startswith("msgpack"):
            assert isinstance(reply.frame, np.ndarray)
        else:
            assert isinstance(reply.frame, list) and reply.dtype == "|u1"
        assert_same(reply.decoded_frame(), session.env.render())
        await session.close()
        text = await started(gym_session(CompositeEnv, codec, render_mode="ansi"))
        await answer(text, Reset(seed=0))
        assert (await answer(text, Render())).frame.startswith("position=")
        await text.close()

    asyncio.run(scenario())


def test_step_before_reset_is_an_execution_error():
    async def scenario() -> None:
        session = await started(gym_session("CartPole-v1"))
        error = await refusal(session, Step({"action": 1}))
        assert error.code is ErrorCode.EXECUTION_ERROR and "reset" in error.message
        await session.close()

    asyncio.run(scenario())


@pytest.mark.parametrize("codec", list(CODECS))
def test_an_action_outside_the_space_is_a_validation_error_naming_action(codec):
    async def scenario() -> None:
        session = await started(gym_session("CartPole-v1", codec))
        await answer(session, Reset(seed=0))
        for action in (5, -1, [1], "left", 1.5):
            entry = first_error(await refusal(session, Step({"action": action})))
            assert entry["loc"] == ["action"], (action, entry)
        assert "Discrete(2)" in first_error(await refusal(session, Step({"action": 5})))["msg"]
        assert (await answer(session, Step({"action": 1}))).reward == 1.0  # the session goes on
        await session.close()

    asyncio.run(scenario())


@pytest.mark.parametrize("codec", list(CODECS))
def test_extra_action_keys_are_refused_by_name_and_metadata_is_allowed(codec):
    async def scenario() -> None:
        session = await started(gym_session("CartPole-v1", codec))
        await answer(session, Reset(seed=0))
        entry = first_error(await refusal(session, Step({"action": 1, "bogus": True})))
        assert (entry["loc"], entry["type"]) == (["bogus"], "extra_forbidden")
        entry = first_error(await refusal(session, Step({})))
        assert (entry["loc"], entry["type"]) == (["action"], "missing")
        assert isinstance(await answer(session, Step({"action": 1, "metadata": {"note": "x"}})), Observation)
        await session.close()

    asyncio.run(scenario())


def test_hinted_actions_decode_exactly_on_openenv_gym_json_and_are_refused_on_stock_json():
    """openenv-gym JSON carries an action's type hints (``types``): the env gets
    the numpy types the client sent. A stock JSON peer knows no ``types`` field."""
    space = ActionRecorder.action_space
    space.seed(0)
    action = space.sample()

    async def scenario() -> None:
        extended = await started(gym_session(ActionRecorder, "json"))
        step = gym_data.action_step(extended.codec, space, action)
        assert "types" in step.fields
        await answer(extended, Reset())
        await answer(extended, Step(extended.codec.decode(extended.codec.encode(step.to_wire()))["data"]))
        assert_same(extended.env.last_action, action)  # np.int64 and float32, not int and float
        stock = await started(gym_session(ActionRecorder, "stock-json"))
        await answer(stock, Reset())
        entry = first_error(await refusal(stock, step))
        assert (entry["loc"], entry["type"]) == (["types"], "extra_forbidden")
        await extended.close()
        await stock.close()

    asyncio.run(scenario())


@pytest.mark.parametrize("codec", list(CODECS))
def test_a_seeded_episode_is_the_local_envs(codec):
    """Every reply, read the way a client reads it, equals the local env's
    return (the infos exactly on openenv-gym codecs, which keep numpy types)."""
    space = CompositeEnv().action_space
    space.seed(5)

    async def scenario() -> int:
        session = await started(gym_session(CompositeEnv, codec))
        local = CompositeEnv()
        source = session.source
        obs, info = local.reset(seed=3)
        got = gym_data.read_observation(session.codec, source.observation_space, await answer(session, Reset(seed=3)))
        assert_same(got.obs, obs, "reset obs")
        steps = 0
        for steps in range(1, 41):
            action = space.sample()
            want = local.step(action)
            reply = await answer(session, gym_data.action_step(session.codec, source.action_space, action))
            got = gym_data.read_observation(session.codec, source.observation_space, reply)
            assert_same(got.obs, want[0], f"step {steps} obs")
            assert (got.reward, got.terminated, got.truncated) == want[1:4], steps
            if codec in EXTENDED:
                assert_same(got.info, want[4], f"step {steps} info")
            if want[2] or want[3]:
                break
        await session.close()
        return steps

    assert asyncio.run(scenario()) >= 12  # the whole episode


# -- a FieldsEnv on /ws -----------------------------------------------------------


@pytest.mark.parametrize("codec", list(CODECS))
def test_a_fields_session_frames_like_openenv_and_validates_by_the_schema(codec):
    async def scenario() -> None:
        session = await started(gym_session(GridWorldEnvironment, codec))
        assert isinstance(session, FieldsSession)
        error = await refusal(session, Step({"action": "DOWN"}))
        assert error.code is ErrorCode.EXECUTION_ERROR
        reset = await answer(session, Reset(episode_id="walk"))
        assert (reset.observation["x"], reset.observation["y"], reset.reward, reset.done) == (0, 0, 0.0, False)
        step = await answer(session, Step({"action": "DOWN"}))
        assert (step.observation["x"], step.observation["y"], step.reward) == (1, 0, -0.1)
        assert step.observation["metadata"] == {}
        assert (await answer(session, State())).state == {"episode_id": "walk", "step_count": 1}
        entry = first_error(await refusal(session, Step({"action": "NORTH"})))
        assert entry["loc"] == ["action"]
        entry = first_error(await refusal(session, Step({"action": "UP", "speed": 2})))
        assert (entry["loc"], entry["type"]) == (["speed"], "extra_forbidden")
        entry = first_error(await refusal(session, Reset(options={"level": 3})))
        assert (entry["loc"], entry["type"]) == (["level"], "extra_forbidden")
        assert (await refusal(session, Render())).code is ErrorCode.UNKNOWN_TYPE
        await session.close()

    asyncio.run(scenario())


# -- a PettingZoo game on /agents ---------------------------------------------------------


def agents_session(env: str, api: str, codec: str = "msgpack") -> AgentsSession:
    source = resolve(env)
    return AgentsSession(source, api, codec=codec_for(CODECS[codec]), caller=EnvCaller("inline"))


@pytest.mark.parametrize("codec", list(CODECS))
def test_an_aec_game_session_steps_the_agent_to_act_like_the_local_game(codec):
    pytest.importorskip("pettingzoo")
    from pettingzoo.classic import connect_four_v3

    async def scenario() -> None:
        session = await started(agents_session("pettingzoo.classic.connect_four_v3", "aec", codec))
        game_spaces = session.game.observation_spaces
        assert (await refusal(session, Step({"action": 3}))).code is ErrorCode.EXECUTION_ERROR
        local = connect_four_v3.env()
        local.reset(seed=0)
        game = agents_data.read_game(session.codec, game_spaces, await answer(session, Reset(seed=0)))
        assert game["agents"] == local.agents and game["agent_selection"] == "player_0"
        for column in (3, 3, 4):
            local.step(column)
            reply = await answer(session, Step({"action": column}))
            game = agents_data.read_game(session.codec, game_spaces, reply)
            assert game["agent_selection"] == local.agent_selection
            for agent in local.agents:
                assert_same(game["observations"][agent]["observation"], local.observe(agent)["observation"])
        entry = first_error(await refusal(session, Step({"action": 9})))
        assert entry["loc"] == ["action"] and "not in the action space" in entry["msg"]
        assert (await answer(session, State())).state["step_count"] == 3
        await session.close()
        local.close()

    asyncio.run(scenario())


@pytest.mark.parametrize("codec", list(CODECS))
def test_a_parallel_game_session_steps_every_agent_like_the_local_game(codec):
    pytest.importorskip("pettingzoo")
    from pettingzoo.classic import rps_v2

    async def scenario() -> None:
        session = await started(agents_session("pettingzoo.classic.rps_v2", "parallel", codec))
        game_spaces = session.game.observation_spaces
        local = rps_v2.parallel_env()
        local.reset(seed=1)
        await answer(session, Reset(seed=1))
        for moves in ((0, 1), (2, 2), (1, 0)):
            actions = dict(zip(local.agents, moves))
            want = local.step(actions)
            game = agents_data.read_game(session.codec, game_spaces, await answer(session, Step({"actions": actions})))
            assert game["rewards"] == want[1] and game["terminations"] == want[2]
            assert {a: int(o) for a, o in game["observations"].items()} == {a: int(o) for a, o in want[0].items()}
        entry = first_error(await refusal(session, Step({"actions": {"nobody": 1}})))
        assert entry["loc"] == ["actions", "nobody"]
        entry = first_error(await refusal(session, Step({"action": 1})))
        assert (entry["loc"], entry["type"]) == (["action"], "extra_forbidden")
        await session.close()
        local.close()

    asyncio.run(scenario())


def test_a_game_asked_for_through_an_unknown_api_is_a_factory_error():
    pytest.importorskip("pettingzoo")

    async def scenario() -> None:
        session = agents_session("pettingzoo.classic.rps_v2", "bogus")
        with pytest.raises(ProtocolError) as info:
            await session.start()
        assert info.value.code is ErrorCode.FACTORY_ERROR and "not 'bogus'" in info.value.message

    asyncio.run(scenario())


# -- how env calls run ---------------------------------------------------------------


def test_env_caller_promotes_calls_that_were_only_preempted(monkeypatch):
    """On a busy machine a fast call on the thread can take long by the clock: where the
    thread's usage shows it neither computed nor blocked that long, it counts as fast."""
    from openenv_gym.server import execution as execution_module

    async def scenario(usage):
        monkeypatch.setattr(execution_module, "thread_usage", usage)
        caller = EnvCaller("auto", policy=LatencyPolicy(inline_threshold=0.05, promote_after=3))
        for _ in range(3):
            await caller(time.sleep, 0.1)  # as long as a preemption, on the thread
        inline = caller.inline
        caller.shutdown()
        return inline

    assert asyncio.run(scenario(lambda: (1.0, 7)))  # no CPU used, no switch: preempted
    assert not asyncio.run(scenario(lambda: None))  # usage unknown: the clock decides
    # (the real usage: sleeping is a voluntary switch, so the call blocked)
    monkeypatch.undo()
    assert not asyncio.run(scenario(execution_module.thread_usage))


def test_an_inline_call_reads_its_threads_usage_after_it_only_when_it_was_slow(monkeypatch):
    """An inline call costs one read of the thread's usage (a system call), before it; the
    read after it, which tells a slow call that computed or blocked from one that was only
    preempted, is made only for a call slower than the threshold."""
    from openenv_gym.server import execution as execution_module

    reads = []

    def usage() -> tuple[float, int]:
        reads.append(1)
        return 1.0, 7  # no CPU used, no switch: whatever took long was preemption

    monkeypatch.setattr(execution_module, "thread_usage", usage)

    async def scenario() -> None:
        caller = EnvCaller("auto", policy=LatencyPolicy(inline_threshold=0.05, promote_after=1))
        await caller(lambda: None)  # on the thread, fast: promoted
        assert caller.inline
        reads.clear()
        await caller(lambda: None)
        assert len(reads) == 1
        await caller(time.sleep, 0.1)  # slow by the clock only: stays inline
        assert caller.inline and len(reads) == 3
        caller.shutdown()

    asyncio.run(scenario())


class _Pool(gym.Env):
    """An env whose calls wait for threads of its own, as an EnvPool pool's do."""

    computes_on_own_threads = True
    observation_space = spaces.Discrete(2)
    action_space = spaces.Discrete(2)

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple[int, dict]:
        return 0, {}

    def step(self, action: int) -> tuple[int, float, bool, bool, dict]:
        return 0, 0.0, False, False, {}


def test_a_pool_is_judged_by_its_process_usage_and_other_envs_by_their_threads():
    from openenv_gym.server.latency import process_usage, thread_usage, usage_for

    assert usage_for(_Pool()) is process_usage
    assert usage_for(gym.wrappers.TimeLimit(_Pool(), 10)) is process_usage  # through its wrappers
    assert usage_for(gym.make("CartPole-v1")) is thread_usage
    assert usage_for(object()) is thread_usage

    class Broken(gym.Wrapper):
        @property
        def unwrapped(self) -> gym.Env:
            raise RuntimeError("no")

    assert usage_for(Broken(_Pool())) is thread_usage
    cpu, blocked = process_usage()
    assert cpu > 0 and blocked == 0  # waiting for its own threads is never blocking


def test_a_pool_session_that_waits_without_computing_stays_inline():
    """A pool's calling thread waits for the pool's threads at every call: by its thread's
    usage each slow call blocked and sends the session back to its thread. By the
    process's usage, a slow call in which the process did not compute the threshold's
    worth was slowed down by others (a busy machine preempting the pool's threads), and
    counts as fast, on the thread and inline; one in which it did is slow."""

    def spin(seconds: float) -> None:
        end = time.thread_time() + seconds
        while time.thread_time() < end:
            pass

    async def scenario(usage: Any, fn: Any, seconds: float) -> bool:
        caller = EnvCaller("auto", policy=LatencyPolicy(inline_threshold=0.05, promote_after=3))
        caller.usage = usage
        try:
            for _ in range(3):
                await caller(fn, seconds)  # on the thread, each as long as a preemption
            promoted = caller.inline
            await caller(fn, seconds)  # inline once promoted
            return promoted and caller.inline
        finally:
            caller.shutdown()

    from openenv_gym.server.latency import process_usage, thread_usage

    assert asyncio.run(scenario(process_usage, time.sleep, 0.1))  # slow, little CPU: preempted
    assert not asyncio.run(scenario(thread_usage, time.sleep, 0.1))  # the thread blocked
    assert not asyncio.run(scenario(process_usage, spin, 0.1))  # the process computed: slow


def test_a_session_judges_its_calls_by_the_usage_its_env_needs():
    from openenv_gym.server.latency import process_usage, thread_usage

    async def usage_of(env_factory: Any) -> Any:
        session = Session(resolve(env_factory), codec=codec_for(None), caller=EnvCaller("auto"))
        await session.start()
        try:
            return session.call.usage
        finally:
            await session.close()

    assert asyncio.run(usage_of(_Pool)) is process_usage
    assert asyncio.run(usage_of("CartPole-v1")) is thread_usage


def test_envpool_sessions_single_and_vector_are_judged_by_the_process_usage():
    pytest.importorskip("envpool")
    from openenv_gym.server.latency import process_usage
    from openenv_gym.server.vector import VectorSession

    source = resolve("envpool:CartPole-v1")

    async def usage_of(session: EnvHost) -> Any:
        await session.start()
        try:
            return session.call.usage
        finally:
            await session.close()

    single = Session(source, codec=codec_for(None), caller=EnvCaller("auto"))
    vector = VectorSession(source, num_envs=4, autoreset="NextStep", backend="envpool", codec=codec_for(None),
                           caller=EnvCaller("auto"))
    assert asyncio.run(usage_of(single)) is process_usage
    assert asyncio.run(usage_of(vector)) is process_usage


def test_env_caller_promotes_fast_calls_and_demotes_slow_ones():
    async def scenario():
        # Thresholds far above what a loaded machine's preemption adds to a trivial call.
        caller = EnvCaller("auto", policy=LatencyPolicy(inline_threshold=0.1, promote_after=4))
        for _ in range(4):
            await caller(lambda: None)
        assert caller.inline
        await caller(time.sleep, 0.2)  # one slow call inline: back to the thread
        assert not caller.inline and caller.promotion.promote_after == 8
        for _ in range(7):
            await caller(lambda: None)
        assert not caller.inline
        await caller(lambda: None)
        assert caller.inline  # fast again: inline again, after twice as many calls

        def compute(seconds: float) -> None:  # this much CPU, however long a loaded machine takes
            end = time.thread_time() + seconds
            while time.thread_time() < end:
                pass

        await caller(compute, 0.3)  # slow by computing, not by blocking: demoted too
        assert not caller.inline and caller.promotion.promote_after == 16
        caller.shutdown()
        strict = EnvCaller("thread")
        for _ in range(50):
            await strict(lambda: None)
        assert not strict.inline
        strict.shutdown()

    asyncio.run(scenario())


def test_env_caller_counts_the_time_its_calls_run():
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


# -- the plain step's shortest path (Session.step_now) ------------------------------------


@pytest.mark.parametrize("codec", ["msgpack-v2", "msgpack", "json", "stock-json"])
@pytest.mark.parametrize("env, actions", [
    ("CartPole-v1", [0, 1, 1, 0, 1]),
    ("Pendulum-v1", [np.array([0.5], np.float32), np.array([-2.0], np.float32)]),
    ("FrozenLake-v1", [1, 2, 2, 1]),
], ids=["cartpole", "pendulum", "frozenlake"])
def test_a_plain_step_answers_as_the_general_path_does_byte_for_byte(codec, env, actions):
    """The same seeded episode through ``step_now`` and through ``respond``: the same reply
    frames, the same episode bookkeeping."""
    async def scenario():
        fast, general = await started(gym_session(env, codec)), await started(gym_session(env, codec))
        for session in (fast, general):
            await answer(session, Reset(seed=3))
        wire = fast.codec
        for action in actions:
            data = {"action": wire.pack_space(fast.source.action_space, action)}
            if (hint := wire.hint(action)) is not None:
                data = {**data, "types": hint}
            decoded = wire.decode(wire.encode({"type": "step", "data": data}))
            quick = fast.step_now(decoded)
            slow = await answer(general, parse_message(decoded, WS_MESSAGES))
            if "types" in data:  # the general path's: a hinted action takes no short cut
                assert quick is None
                quick = await answer(fast, parse_message(decoded, WS_MESSAGES))
            assert wire.encode(quick.to_wire()) == wire.encode(slow.to_wire())
            assert (fast.step_count, fast.episode_return) == (general.step_count, general.episode_return)
        await fast.close(), await general.close()

    asyncio.run(scenario())


def test_a_step_that_is_not_plain_or_a_session_not_ready_takes_the_general_path():
    async def scenario():
        session = await started(gym_session("CartPole-v1"))
        step = {"type": "step", "data": {"action": 1}}
        assert session.step_now(step) is None  # no episode yet: the general path says so
        await answer(session, Reset(seed=0))
        for other in (
            {"type": "step", "data": {"action": 1, "metadata": {}}},
            {"type": "step", "data": {"type": "list_tools"}},
            {"type": "step", "data": {"action": 1}, "extra": 1},
            {"type": "reset", "data": {}},
            [step],
        ):
            assert session.step_now(other) is None, other
        session.lock = asyncio.Lock()  # a session that outlives its sockets: one request at a time
        assert session.step_now(step) is None
        session.lock = None
        assert session.step_now(step) is not None
        await session.close()
        threaded = await started(Session(resolve("CartPole-v1"), codec=codec_for(MSGPACK_SUBPROTOCOL),
                                         caller=EnvCaller("thread")))
        await answer(threaded, Reset(seed=0))
        assert threaded.step_now(step) is None  # its calls wait for its thread
        await threaded.close()

    asyncio.run(scenario())


def test_a_plain_step_refuses_a_bad_action_and_reports_an_env_error_as_the_general_path_does():
    async def scenario():
        session = await started(gym_session("CartPole-v1"))
        await answer(session, Reset(seed=0))
        with pytest.raises(ProtocolError) as refused:
            session.step_now({"type": "step", "data": {"action": 5}})
        with pytest.raises(ProtocolError) as general:
            await answer(session, Step({"action": 5}))
        assert (refused.value.code, refused.value.message) == (general.value.code, general.value.message)
        assert session.step_count == 0
        session.env.unwrapped.step = lambda action: 1 / 0
        with pytest.raises(ProtocolError) as failed:
            session.step_now({"type": "step", "data": {"action": 1}})
        assert failed.value.code is ErrorCode.EXECUTION_ERROR and "ZeroDivisionError" in failed.value.message
        await session.close()

    asyncio.run(scenario())
