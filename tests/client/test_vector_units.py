"""The units of a RemoteVectorEnv without sockets: autoreset and reconnecting.

:class:`~openenv_gym.client.vector_units.SessionUnit` and
:class:`~openenv_gym.client.vector_units.VectorUnit` talk to a :class:`Peer`: a
server in this process whose every connection is a real server-side session
of a real route (``/ws`` or ``/vector``), each typed message going through the
real codecs both ways (encoded to a frame, decoded, validated, answered,
encoded, read). Nothing of the units' logic is mocked; a lost connection is a
:class:`~openenv_gym.errors.ConnectionClosedError` on a chosen request. The
coroutines never suspend, so :class:`~openenv_gym.client.loop.InlineRunner`
runs each to its end at once (a batched vector env's also wait for replies).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.vector import AutoresetMode

from openenv_gym.client.contract import contract_from_schema
from openenv_gym.client.loop import InlineRunner
from openenv_gym.client.retry import LOST_REASON, RECONNECTED, Reconnect
from openenv_gym.client.session import read_reply
from openenv_gym.client.vector_units import Batch, Recovery, SessionUnit, VectorUnit, concat_batches
from openenv_gym.errors import ConnectionClosedError, OpenEnvGymError, ProtocolError
from openenv_gym.protocol import (
    JSON_SUBPROTOCOL,
    MSGPACK_SUBPROTOCOL,
    WS_REPLIES,
    ClientMessage,
    ErrorReply,
    ServerMessage,
    codec_for,
    parse_message,
)
from openenv_gym.protocol import vector as wire
from openenv_gym.server.execution import EnvCaller
from openenv_gym.server.resolve import resolve
from openenv_gym.server.routes import Opening, Route, WsRoute
from openenv_gym.server.session import EnvHost
from openenv_gym.server.vector import VectorRoute
from tests.parity import assert_same

#: The codecs a RemoteVectorEnv negotiates with an openenv-gym server.
CODECS = {"json": JSON_SUBPROTOCOL, "msgpack": MSGPACK_SUBPROTOCOL}
MODES = list(AutoresetMode)
FLAG, MASK = RECONNECTED, f"_{RECONNECTED}"
#: CartPole's reset draws every coordinate from [-0.05, 0.05].
RESET_BOUND = 0.05
LEFT = 0

run = InlineRunner().run


class Peer:
    """A server in this process: each :meth:`connect` opens a new session of
    ``route`` (a new env, as a new WebSocket would), reached through the codecs.

    ``lose`` holds the numbers of the requests (counted over all connections,
    from 1) that find their connection lost; ``refuse`` is how many of the
    next connection attempts fail, as against a server that is down.
    """

    def __init__(self, route: Route, subprotocol: str, replies: Mapping[str, type[ServerMessage]]) -> None:
        self.route = route
        self.subprotocol = subprotocol
        self.replies = replies
        self.requests = 0
        self.lose: set[int] = set()
        self.refuse = 0
        self.connections: list[InMemorySession] = []

    async def connect(self) -> InMemorySession:
        if self.refuse:
            self.refuse -= 1
            raise ConnectionClosedError("Failed to connect: the server is down")
        session = InMemorySession(self)
        if self.route.opening is None:  # the server starts the session as it accepts it
            await session.open(None)
        self.connections.append(session)
        return session

    def lose_next_request(self) -> None:
        self.lose.add(self.requests + 1)

    @property
    def live(self) -> int:
        """Server-side sessions whose env is still open."""
        return sum(c.hosted is not None and c.hosted.env is not None for c in self.connections)


class InMemorySession:
    """A client session (``request``, ``codec``, ``close``, ``drop``) whose server
    is one session of its peer's route, in this process."""

    def __init__(self, peer: Peer) -> None:
        self.peer = peer
        self.codec = codec_for(peer.subprotocol)  # the client's
        self._server_codec = codec_for(peer.subprotocol)  # the server's own, as across a socket
        self.hosted: EnvHost | None = None
        self.closed = False

    async def open(self, message: ClientMessage | None) -> ServerMessage | None:
        opening = Opening(self._server_codec, {}, message, EnvCaller("inline"))
        self.hosted = self.peer.route.session(opening)
        await self.hosted.start()
        return self.hosted.opened()

    async def request(self, message: ClientMessage) -> ServerMessage:
        if self.closed:
            raise ConnectionClosedError("Connection is closed")
        self.peer.requests += 1
        if self.peer.requests in self.peer.lose:
            self.drop()
            raise ConnectionClosedError(f"Connection lost (request {self.peer.requests})")
        reply = await self._answer(self.codec.encode(message.to_wire()))
        if isinstance(reply, ErrorReply) and reply.closes:
            self.drop()
        return read_reply(self.codec, self._server_codec.encode(reply.to_wire()), self.peer.replies)

    async def _answer(self, frame: Any) -> ServerMessage:
        """What the server's hosting core answers to ``frame``."""
        route, codec = self.peer.route, self._server_codec
        try:
            data = codec.decode(frame)
            if self.hosted is None:
                assert route.opening is not None
                opened = await self.open(parse_message(data, route.opening, expected=True))
                assert opened is not None
                return opened
            message = parse_message(data, route.messages, expected=route.expected)
            return (await self.hosted.respond(message))[0]
        except ProtocolError as error:
            return ErrorReply.of(error)

    async def close(self) -> None:
        self.drop()

    def drop(self) -> None:
        """Gone at once; the server closes the session's env, as after a disconnect."""
        self.closed = True
        if self.hosted is not None:
            run(self.hosted.close())


def peer(kind: str, codec: str, env: str = "CartPole-v1") -> Peer:
    source = resolve(env)
    if kind == "vector":
        route: Route = VectorRoute(source, backend="sync")
        return Peer(route, CODECS[codec], {**wire.OPEN_REPLIES, **wire.VECTOR_REPLIES})
    return Peer(WsRoute(source), CODECS[codec], WS_REPLIES)


def session_units(server: Peer, n: int, mode: AutoresetMode, recovery: Recovery | None = None) -> list[SessionUnit]:
    contract = contract_from_schema(server.route.source.schema)
    units = [SessionUnit(server.connect, contract, np.array([i]), mode, recovery) for i in range(n)]
    for unit in units:
        run(unit.open())
    return units


def vector_unit(server: Peer, n: int, mode: AutoresetMode, recovery: Recovery | None = None) -> VectorUnit:
    unit = VectorUnit(server.connect, contract_from_schema(server.route.source.schema), np.arange(n), mode, recovery)
    run(unit.open())
    return unit


def reset(units: list, seeds: list, mask: np.ndarray | None = None) -> Batch:
    """Every unit's reset, joined, as RemoteVectorEnv.reset joins them."""
    space = units[0].contract.observation_space
    return concat_batches(space, [
        run(u.reset([seeds[i] for i in u.env_ids], None, None if mask is None else mask[u.env_ids])) for u in units
    ])


def step(units: list, actions: Any) -> Batch:
    """Every unit's step with its entries of ``actions``, joined."""
    contract = units[0].contract
    return concat_batches(contract.observation_space, [run(u.step(contract.action_space, actions, u.env_ids)) for u in units])


def outcome(batch: Batch) -> tuple:
    return batch.obs, batch.rewards, batch.terminations, batch.truncations, batch.infos


def is_reset_obs(obs: np.ndarray) -> bool:
    return bool((np.abs(obs) <= RESET_BOUND).all())


def policy(**kwargs: Any) -> tuple[Recovery, list[float]]:
    """A recovery whose waits are recorded instead of slept (the coroutines never suspend)."""
    slept: list[float] = []

    async def sleep(seconds: float) -> None:
        slept.append(seconds)

    return Recovery(Reconnect(**{"attempts": 3, "backoff": 0.25, **kwargs}), sleep), slept


def step_until_ended(units: list, n: int, *, all_of_them: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """Push every cart left until an env ends (``all_of_them=False``: some envs,
    not all, in the same step); that step's observations and the envs that ended."""
    for _ in range(100):
        batch = step(units, np.full(n, LEFT, np.int64))
        done = batch.terminations | batch.truncations
        if done.any() and (all_of_them or not done.all()):
            return batch.obs, done
    raise AssertionError("no step ended the episodes the test waits for")


# -- autoreset, step for step against SyncVectorEnv ---------------------------------


@pytest.mark.parametrize("codec", list(CODECS))
@pytest.mark.parametrize("mode", MODES, ids=lambda m: m.value)
@pytest.mark.parametrize("kind", ["sessions", "vector"])
def test_units_autoreset_like_sync_vector_env(kind, mode, codec):
    """Three session units (Gymnasium's autoreset done on the client) or one
    vector unit (done by the server's vector env), against ``SyncVectorEnv``."""
    n = 3
    server = peer("ws" if kind == "sessions" else "vector", codec)
    units = session_units(server, n, mode) if kind == "sessions" else [vector_unit(server, n, mode)]
    ref = gym.vector.SyncVectorEnv([lambda: gym.make("CartPole-v1")] * n, autoreset_mode=mode)
    ref.action_space.seed(1)
    got = reset(units, [7 + i for i in range(n)])
    assert_same((got.obs, got.infos), ref.reset(seed=7), "reset")
    ends = 0
    for t in range(200):
        actions = ref.action_space.sample()
        want = ref.step(actions)
        assert_same(outcome(step(units, actions)), want, f"step {t}")
        done = want[2] | want[3]
        ends += int(done.sum())
        if mode is AutoresetMode.DISABLED and done.any():
            got = reset(units, [None] * n, mask=done)
            assert_same((got.obs, got.infos), ref.reset(options={"reset_mask": done}), f"masked reset {t}")
    assert ends >= 3, "the run must cross episode boundaries"
    assert len(server.connections) == len(units)  # no reconnection happened
    ref.close()


def test_a_disabled_env_that_ended_must_be_reset_before_it_steps():
    units = session_units(peer("ws", "msgpack"), 1, AutoresetMode.DISABLED)
    reset(units, [0])
    step_until_ended(units, 1)
    with pytest.raises(OpenEnvGymError, match="reset_mask"):
        step(units, np.array([LEFT]))
    assert is_reset_obs(reset(units, [None], mask=np.array([True])).obs)
    assert not step(units, np.array([LEFT])).terminations.any()


# -- a lost connection, session units -----------------------------------------------


@pytest.mark.parametrize("codec", list(CODECS))
def test_next_step_session_unit_truncates_the_lost_episode_then_restarts_at_the_next_step(codec):
    server = peer("ws", codec)
    recovery, slept = policy()
    units = session_units(server, 1, AutoresetMode.NEXT_STEP, recovery)
    reset(units, [0])
    last = step(units, np.array([LEFT])).obs
    server.lose_next_request()
    lost = step(units, np.array([LEFT]))
    assert lost.truncations.tolist() == [True] and not lost.terminations.any() and lost.rewards.tolist() == [0.0]
    assert np.array_equal(lost.obs, last)  # the episode ends on its last observation
    assert lost.infos[FLAG].tolist() == [True] and lost.infos[MASK].tolist() == [True]
    assert "Connection lost" in lost.infos[LOST_REASON][0]
    assert len(server.connections) == 1  # it reconnects when the next episode starts
    restarted = step(units, np.array([LEFT]))
    assert is_reset_obs(restarted.obs) and restarted.rewards.tolist() == [0.0]
    assert restarted.infos[FLAG].tolist() == [True]  # the first episode on the new connection
    assert (len(server.connections), server.live, slept) == (2, 1, [])  # the lost session's env was closed
    for _ in range(5):
        going = step(units, np.array([LEFT]))
        assert FLAG not in going.infos and going.rewards.tolist() == [1.0]


def test_next_step_session_unit_whose_reset_was_due_restarts_on_a_new_connection_at_once():
    server = peer("ws", "msgpack")
    units = session_units(server, 1, AutoresetMode.NEXT_STEP, policy()[0])
    reset(units, [0])
    step_until_ended(units, 1)
    server.lose_next_request()  # the autoreset's reset finds the connection lost
    restarted = step(units, np.array([LEFT]))
    assert is_reset_obs(restarted.obs) and restarted.rewards.tolist() == [0.0]
    assert not restarted.truncations.any() and restarted.infos[FLAG].tolist() == [True]
    assert (len(server.connections), server.live) == (2, 1)


@pytest.mark.parametrize("codec", list(CODECS))
def test_same_step_session_unit_starts_the_next_episode_in_the_lost_step(codec):
    server = peer("ws", codec)
    units = session_units(server, 1, AutoresetMode.SAME_STEP, policy()[0])
    reset(units, [0])
    last = step(units, np.array([LEFT])).obs
    server.lose_next_request()
    lost = step(units, np.array([LEFT]))
    assert lost.truncations.tolist() == [True] and lost.rewards.tolist() == [0.0]
    assert is_reset_obs(lost.obs) and lost.infos[FLAG].tolist() == [True]
    assert np.array_equal(lost.infos["final_obs"][0], last[0])
    assert lost.infos["final_info"][FLAG].tolist() == [True] and lost.infos["final_info"][LOST_REASON][0]
    assert (len(server.connections), server.live) == (2, 1)


def test_disabled_session_unit_waits_for_a_masked_reset_which_reconnects():
    server = peer("ws", "msgpack")
    units = session_units(server, 2, AutoresetMode.DISABLED, policy()[0])
    reset(units, [0, 1])
    last = step(units, np.array([LEFT, LEFT])).obs
    server.lose_next_request()  # env 0's step
    lost = step(units, np.array([LEFT, LEFT]))
    assert lost.truncations.tolist() == [True, False] and lost.infos[MASK].tolist() == [True, False]
    assert np.array_equal(lost.obs[0], last[0]) and lost.rewards.tolist() == [0.0, 1.0]
    with pytest.raises(OpenEnvGymError, match="reset"):
        step(units, np.array([LEFT, LEFT]))
    restarted = reset(units, [None, None], mask=np.array([True, False]))
    assert is_reset_obs(restarted.obs[0]) and restarted.infos[MASK].tolist() == [True, False]
    assert len(server.connections) == 3  # two units, one reconnected
    assert step(units, np.array([LEFT, LEFT])).rewards.tolist() == [1.0, 1.0]


def test_without_a_policy_a_lost_connection_raises():
    server = peer("ws", "msgpack")
    units = session_units(server, 1, AutoresetMode.NEXT_STEP)
    reset(units, [0])
    server.lose_next_request()
    with pytest.raises(ConnectionClosedError, match="lost"):
        step(units, np.array([LEFT]))
    with pytest.raises(OpenEnvGymError, match="closed"):
        step(units, np.array([LEFT]))


def test_reconnecting_backs_off_while_the_server_is_down_and_gives_up_after_its_attempts():
    server = peer("ws", "msgpack")
    recovery, slept = policy(attempts=3, backoff=0.25, max_backoff=0.75)
    units = session_units(server, 1, AutoresetMode.SAME_STEP, recovery)
    reset(units, [0])
    server.lose_next_request()
    server.refuse = 2  # down for two attempts, back at the third
    assert step(units, np.array([LEFT])).infos[FLAG].tolist() == [True]
    assert slept == [0.25, 0.5]
    server.lose_next_request()
    server.refuse = 4  # down for longer than the policy tries
    slept.clear()
    with pytest.raises(ConnectionClosedError, match="down"):
        step(units, np.array([LEFT]))
    assert slept == [0.25, 0.5, 0.75]


# -- a lost connection, a vector unit ---------------------------------------------------


@pytest.mark.parametrize("codec", list(CODECS))
def test_next_step_vector_unit_restarts_each_env_when_its_autoreset_is_due(codec):
    """The envs that ended at the step before get their reset observation in the
    lost step, on the new connection; the others are truncated there and
    restarted at the next step, flagged once more."""
    n = 3
    server = peer("vector", codec)
    units = [vector_unit(server, n, AutoresetMode.NEXT_STEP, policy()[0])]
    reset(units, [0, 1, 2])
    last, due = step_until_ended(units, n, all_of_them=False)
    server.lose_next_request()
    lost = step(units, np.full(n, LEFT, np.int64))
    assert np.array_equal(lost.truncations, ~due) and not lost.terminations.any() and (lost.rewards == 0).all()
    assert lost.infos[FLAG].all() and lost.infos[MASK].all() and all(lost.infos[LOST_REASON])
    assert np.array_equal(lost.obs[~due], last[~due]) and is_reset_obs(lost.obs[due])
    after = step(units, np.full(n, LEFT, np.int64))
    assert is_reset_obs(after.obs[~due]) and (after.rewards[~due] == 0).all()
    assert np.array_equal(after.infos[MASK], ~due) and (after.rewards[due] == 1).all()
    assert (len(server.connections), server.live) == (2, 1)
    going = step(units, np.full(n, LEFT, np.int64))
    assert FLAG not in going.infos


@pytest.mark.parametrize("codec", list(CODECS))
def test_same_step_vector_unit_starts_every_next_episode_in_the_lost_step(codec):
    n = 3
    server = peer("vector", codec)
    units = [vector_unit(server, n, AutoresetMode.SAME_STEP, policy()[0])]
    reset(units, [0, 1, 2])
    last = step(units, np.full(n, LEFT, np.int64)).obs
    server.lose_next_request()
    lost = step(units, np.full(n, LEFT, np.int64))
    assert lost.truncations.all() and not lost.terminations.any() and (lost.rewards == 0).all()
    assert is_reset_obs(lost.obs) and lost.infos[FLAG].all() and lost.infos["_final_obs"].all()
    for i in range(n):
        assert np.array_equal(lost.infos["final_obs"][i], last[i])
    assert lost.infos["final_info"][FLAG].all()
    assert (len(server.connections), server.live) == (2, 1)


def test_disabled_vector_unit_waits_for_the_reset_which_reconnects():
    n = 2
    server = peer("vector", "msgpack")
    units = [vector_unit(server, n, AutoresetMode.DISABLED, policy()[0])]
    reset(units, [0, 1])
    last = step(units, np.full(n, LEFT, np.int64)).obs
    server.lose_next_request()
    lost = step(units, np.full(n, LEFT, np.int64))
    assert lost.truncations.all() and np.array_equal(lost.obs, last) and lost.infos[FLAG].all()
    assert len(server.connections) == 1
    with pytest.raises(OpenEnvGymError, match="reset"):
        step(units, np.full(n, LEFT, np.int64))
    restarted = reset(units, [None, None], mask=lost.truncations)
    assert is_reset_obs(restarted.obs) and restarted.infos[MASK].all()
    assert (len(server.connections), server.live) == (2, 1)
    assert (step(units, np.full(n, LEFT, np.int64)).rewards == 1).all()


def test_without_a_policy_a_vector_unit_raises_on_a_lost_connection():
    server = peer("vector", "msgpack")
    units = [vector_unit(server, 2, AutoresetMode.NEXT_STEP)]
    reset(units, [0, 1])
    server.lose_next_request()
    with pytest.raises(ConnectionClosedError, match="lost"):
        step(units, np.full(2, LEFT, np.int64))
