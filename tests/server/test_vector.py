"""The server's ``/vector`` sessions: driven without sockets (typed messages
in, typed replies out, step for step like ``SyncVectorEnv``), and the vector
backends on live servers (SyncVectorEnv in the server, AsyncVectorEnv in worker
processes, and ``"auto"`` choosing between them by how fast the env is)."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.vector import AutoresetMode

import openenv_gym
from openenv_gym.errors import ErrorCode, ProtocolError
from openenv_gym.protocol import (
    JSON_SUBPROTOCOL,
    MSGPACK_SUBPROTOCOL,
    MsgpackBuffersCodec,
    Render,
    codec_for,
    parse_message,
)
from openenv_gym.protocol import vector as wire
from openenv_gym.server.execution import EnvCaller
from openenv_gym.server.resolve import resolve
from openenv_gym.server.vector import VectorRoute, VectorSession
from tests.envs import CompositeEnv, SlowEnv
from tests.parity import assert_same, run_parity

#: The codecs of ``/vector``, which only openenv-gym clients open (they always
#: offer a subprotocol): openenv-gym JSON and msgpack (both versions).
CODECS = {"json": JSON_SUBPROTOCOL, "msgpack": MSGPACK_SUBPROTOCOL, "msgpack-v2": MsgpackBuffersCodec.subprotocol}


@pytest.mark.parametrize("autoreset", [AutoresetMode.NEXT_STEP, AutoresetMode.SAME_STEP], ids=lambda m: m.value)
def test_async_backend_steps_like_sync_vector_env(autoreset):
    with openenv_gym.local_server("CartPole-v1", vector_backend="async") as url:
        envs = openenv_gym.RemoteVectorEnv(url, 3, mode="batched", autoreset_mode=autoreset)
        ref = gym.vector.SyncVectorEnv([lambda: gym.make("CartPole-v1")] * 3, autoreset_mode=autoreset)
        try:
            assert run_parity(envs, ref, autoreset, 300) >= 3
        finally:
            envs.close()
            ref.close()


def test_async_workers_do_not_hold_other_clients_connections():
    """Forked workers close the server's TCP sockets: another client's
    connection closes at once while an async vector session is open (a worker
    holding its socket kept it open until the client's 2 s close timeout)."""
    with openenv_gym.local_server("CartPole-v1", vector_backend="async") as url:
        other = openenv_gym.RemoteEnv(url)
        other.reset(seed=0)
        envs = openenv_gym.RemoteVectorEnv(url, 2, mode="batched")
        try:
            envs.reset(seed=0)
            started = time.monotonic()
            other.close()
            assert time.monotonic() - started < 1.0
            envs.step(np.zeros(2, dtype=np.int64))  # the workers still answer
        finally:
            envs.close()


def _opened_backend(url: str) -> str:
    from openenv_gym.client import ConnectOptions
    from openenv_gym.client.session import RemoteSession
    from openenv_gym.protocol import vector

    session = RemoteSession(url, ConnectOptions(encoding="msgpack"), path=vector.VECTOR_PATH, replies=vector.OPEN_REPLIES)
    try:
        return session.request(vector.VectorOpen(2)).backend
    finally:
        session.close()


def test_a_vector_env_larger_than_the_server_is_refused_before_anything_is_built(cartpole_url):
    """A peer may ask for any number of envs: 10**14 of them is CAPACITY_REACHED, not an
    allocation of batched spaces that takes the server down."""
    from openenv_gym.client import ConnectOptions
    from openenv_gym.client.session import RemoteSession
    from openenv_gym.errors import CapacityReachedError
    from openenv_gym.protocol import vector

    session = RemoteSession(cartpole_url, ConnectOptions(encoding="msgpack"), path=vector.VECTOR_PATH,
                            replies=vector.OPEN_REPLIES)
    try:
        with pytest.raises(CapacityReachedError):
            session.request(vector.VectorOpen(10**14))
    finally:
        session.close()
    envs = openenv_gym.RemoteVectorEnv(cartpole_url, 2, mode="batched")  # the server is fine
    try:
        envs.reset(seed=0)
    finally:
        envs.close()


def _step_a_few_times(url: str) -> None:
    env = openenv_gym.RemoteEnv(url)
    try:
        env.reset(seed=0)
        for _ in range(10):
            env.step(0)
    finally:
        env.close()


def test_auto_backend_keeps_a_gymnasium_envs_sessions_in_the_server_however_slow_it_is():
    with openenv_gym.local_server(SlowEnv, env_kwargs={"delay": 0.003}) as url:
        assert _opened_backend(url) == "sync"
        _step_a_few_times(url)
        assert _opened_backend(url) == "sync"  # async only when asked for: see docs/benchmarks.md


def test_cli_takes_a_vector_backend():
    from openenv_gym.cli import _parser

    assert _parser().parse_args(["serve", "CartPole-v1"]).vector_backend == "auto"
    assert _parser().parse_args(["serve", "CartPole-v1", "--vector-backend", "async"]).vector_backend == "async"
    with pytest.raises(ValueError, match="vector_backend"):
        openenv_gym.create_app("CartPole-v1", vector_backend="threads")


# -- a vector session without sockets ------------------------------------------------------


def vector_session(env: Any, num_envs: int, autoreset: AutoresetMode, codec: str, **make_kwargs: Any) -> VectorSession:
    """A ``/vector`` session of ``num_envs`` envs in this process, env calls inline."""
    return VectorSession(
        resolve(env, make_kwargs), num_envs=num_envs, autoreset=autoreset, backend="sync",
        codec=codec_for(CODECS[codec]), caller=EnvCaller("inline"),
    )


async def answer(session: VectorSession, message: Any) -> Any:
    reply, seconds = await session.respond(message)
    assert seconds >= 0.0
    return reply


def batch(session: VectorSession, reply: Any) -> tuple:
    """What a vector reply says, read as a client reads it: the reset's ``(obs,
    infos)`` or the step's ``(obs, rewards, terminations, truncations, infos)``."""
    assert isinstance(reply, wire.VectorObservation)
    codec = session.codec
    obs = codec.unpack_space(session.observation_space, reply.obs, path="obs")
    infos = wire.read_infos(codec, reply, session.source.observation_space)
    if reply.rewards is None:
        return obs, infos
    return (
        obs,
        np.asarray(reply.rewards, dtype=np.float64),
        np.asarray(reply.terminations, dtype=np.bool_),
        np.asarray(reply.truncations, dtype=np.bool_),
        infos,
    )


async def refusal(session: VectorSession, message: Any) -> ProtocolError:
    with pytest.raises(ProtocolError) as info:
        await session.respond(message)
    return info.value


@pytest.mark.parametrize("codec", list(CODECS))
@pytest.mark.parametrize("autoreset", list(AutoresetMode), ids=lambda m: m.value)
def test_a_vector_session_steps_like_sync_vector_env(autoreset, codec):
    """Step for step equal to ``SyncVectorEnv`` in every autoreset mode (masked
    resets in DISABLED), final observations included, on every codec."""

    async def scenario() -> int:
        session = vector_session("CartPole-v1", 3, autoreset, codec)
        await session.start()
        assert session.opened() == wire.VectorOpened(3, autoreset.value, "sync")
        ref = gym.vector.SyncVectorEnv([lambda: gym.make("CartPole-v1")] * 3, autoreset_mode=autoreset)
        ref.action_space.seed(1)
        assert_same(batch(session, await answer(session, wire.VectorReset(7))), ref.reset(seed=7), "reset")
        ends = 0
        for t in range(200):
            actions = ref.action_space.sample()
            step = wire.VectorStep(session.codec.pack_space(session.action_space, actions, path="actions"))
            want = ref.step(actions)
            assert_same(batch(session, await answer(session, step)), want, f"step {t}")
            done = want[2] | want[3]
            ends += int(done.sum())
            if autoreset is AutoresetMode.DISABLED and done.any():
                masked = wire.VectorReset(None, {"reset_mask": session.codec.pack_array(done)})
                want = ref.reset(options={"reset_mask": done})
                assert_same(batch(session, await answer(session, masked)), want, f"masked reset {t}")
        ref.close()
        await session.close()
        return ends

    assert asyncio.run(scenario()) >= 3  # the run crossed episode boundaries


@pytest.mark.parametrize("codec", list(CODECS))
def test_vector_observations_are_arrays_on_msgpack_and_lists_on_json(codec):
    async def scenario() -> None:
        session = vector_session("CartPole-v1", 2, AutoresetMode.NEXT_STEP, codec)
        await session.start()
        reply = await answer(session, wire.VectorReset(0))
        step = await answer(session, wire.VectorStep(session.codec.pack_space(session.action_space, np.zeros(2, np.int64))))
        if codec.startswith("msgpack"):
            assert isinstance(reply.obs, np.ndarray) and reply.obs.shape == (2, 4)
            assert isinstance(step.rewards, np.ndarray) and step.rewards.dtype == np.float64
        else:
            assert isinstance(reply.obs, list) and len(reply.obs) == 2 and isinstance(reply.obs[0], list)
            assert step.rewards == [1.0, 1.0] and step.terminations == [False, False]
        await session.close()

    asyncio.run(scenario())


def test_vector_messages_that_do_not_fit_are_refused_by_field():
    async def scenario() -> None:
        session = vector_session("CartPole-v1", 3, AutoresetMode.DISABLED, "msgpack")
        await session.start()
        error = await refusal(session, wire.VectorStep(np.zeros(3, np.int64)))
        assert error.code is ErrorCode.EXECUTION_ERROR and "reset" in error.message
        error = await refusal(session, wire.VectorReset(None, {"reset_mask": np.array([True, False, False])}))
        assert error.code is ErrorCode.EXECUTION_ERROR and "no reset_mask" in error.message
        error = await refusal(session, wire.VectorReset([1, 2]))
        assert error.code is ErrorCode.VALIDATION_ERROR and error.extra["errors"][0]["loc"] == ["seed"]
        with pytest.raises(ProtocolError) as refused:  # OpenEnv's set_state field: refused, never ignored
            parse_message({"type": "reset", "data": {"seed": 0, "injected_state": {"x": 1}}}, wire.VECTOR_MESSAGES)
        assert refused.value.code is ErrorCode.VALIDATION_ERROR
        assert refused.value.extra["errors"][0]["loc"] == ["injected_state"]
        await answer(session, wire.VectorReset(0))
        for mask in (np.zeros(3, np.bool_), np.ones(2, np.bool_), np.ones(3, np.int64), [None, []]):
            error = await refusal(session, wire.VectorReset(None, {"reset_mask": mask}))
            assert error.code is ErrorCode.VALIDATION_ERROR, mask
            assert error.extra["errors"][0]["loc"] == ["options", "reset_mask"], mask
        for actions in (np.full(3, 2, np.int64), np.zeros(2, np.int64), np.zeros((3, 1), np.int64)):
            error = await refusal(session, wire.VectorStep(actions))
            assert error.code is ErrorCode.VALIDATION_ERROR, actions
            assert error.extra["errors"][0]["loc"] == ["actions"], actions
        assert isinstance(await answer(session, wire.VectorStep(np.ones(3, np.int64))), wire.VectorObservation)
        await session.close()

    asyncio.run(scenario())


@pytest.mark.parametrize("codec", list(CODECS))
def test_call_get_attr_set_attr_and_render_reach_every_env(codec):
    async def scenario() -> None:
        session = vector_session(CompositeEnv, 3, AutoresetMode.NEXT_STEP, codec, render_mode="rgb_array")
        await session.start()
        codec_ = session.codec
        await answer(session, wire.VectorReset(0))
        assert wire.read_values(codec_, await answer(session, wire.GetAttr("render_mode"))) == ["rgb_array"] * 3
        values, hints = codec_.pack_data([1, np.int8(2), (3, "x")])
        assert await answer(session, wire.SetAttr("marker", values, hints)) == wire.SetAttrDone()
        assert_same(wire.read_values(codec_, await answer(session, wire.GetAttr("marker"))), [1, np.int8(2), (3, "x")])
        frames = wire.read_values(codec_, await answer(session, wire.Call("render")))
        assert len(frames) == 3 and np.asarray(frames[0]).shape == (8, 8, 3)
        rendered = wire.read_values(codec_, await answer(session, Render()))
        assert [np.asarray(f).tolist() for f in rendered] == [np.asarray(f).tolist() for f in frames]
        await session.close()

    asyncio.run(scenario())


@pytest.mark.parametrize("kind", ["call", "get_attr", "set_attr"])
@pytest.mark.parametrize("name", ["_private", "__class__", "not a name", 3])
def test_only_public_names_reach_the_envs(kind, name):
    """The route's table refuses the message before any session sees it."""
    data = {"name": name, "values": 1} if kind == "set_attr" else {"name": name}
    with pytest.raises(ProtocolError) as info:
        parse_message({"type": kind, "data": data}, VectorRoute.messages, expected=VectorRoute.expected)
    assert info.value.code is ErrorCode.VALIDATION_ERROR and info.value.extra["errors"][0]["loc"] == ["name"]
