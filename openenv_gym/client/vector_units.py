"""The pieces a :class:`~openenv_gym.RemoteVectorEnv` is made of.

A *unit* hosts some of the vector env's sub-envs and answers for all of them
at once, on the client's event loop:

- :class:`SessionUnit`: one ``/ws`` session, so one env, with Gymnasium's
  autoreset done on the client (no OpenEnv server autoresets);
- :class:`VectorUnit`: one ``/vector`` session of an openenv-gym server, so a
  block of envs stepped by a Gymnasium vector env on the server.

Each answer is a :class:`Batch` over the unit's envs; :func:`concat_batches`
joins batches into the vector env's answer, whatever units they came from.
Values are batched the way ``gymnasium.vector.utils.batch_space`` batches them
(arrays stacked on a new first axis; Tuple and Dict per part; any other space
as a tuple of items), and infos are Gymnasium's dict of arrays with ``_key``
masks, built by Gymnasium's own ``VectorEnv._add_info``.

Under a :class:`~openenv_gym.client.retry.Reconnect` policy a unit survives
its connection: the episodes in flight end (``truncated``, the last
observation, ``info["openenv_gym.reconnected"]``), and the next ones start on
a new connection exactly when the autoreset mode starts them (see
:meth:`VectorUnit.step`).
"""

from __future__ import annotations

import itertools
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, TypeVar

import gymnasium as gym
import numpy as np
from gymnasium.vector import AutoresetMode, VectorEnv
from gymnasium.vector.utils import batch_space, concatenate, create_empty_array

from ..errors import CapacityReachedError, ErrorCode, OpenEnvGymError, ProtocolError
from ..protocol import Render, RenderReply, Reset, ServerMessage, State
from ..protocol import vector as wire
from .async_session import AsyncSession, BlockingSession
from .contract import Contract
from .retry import LOST_REASON, RECONNECTED, RECOVERABLE, Reconnect

__all__ = [
    "Batch", "Recovery", "SessionUnit", "VectorUnit", "concat_batches", "take_rows", "infos_for", "as_batch",
]

Session = AsyncSession | BlockingSession
#: Opens a new connection for a unit (its first request is the unit's own).
Connect = Callable[[], Awaitable[Session]]
T = TypeVar("T")

#: The info key of each env's id in the vector env (EnvPool's, and ``recv``'s).
ENV_ID = "env_id"

_ARRAY_SPACES = (gym.spaces.Box, gym.spaces.Discrete, gym.spaces.MultiDiscrete, gym.spaces.MultiBinary)


@dataclass
class Batch:
    """What some envs returned: observations batched over them, and one entry per env."""

    obs: Any
    rewards: np.ndarray
    terminations: np.ndarray
    truncations: np.ndarray
    infos: dict
    env_ids: np.ndarray

    def __len__(self) -> int:
        return len(self.env_ids)


@dataclass(frozen=True)
class Recovery:
    """How units recover lost connections: the policy, and the ``sleep`` that
    suits the runner driving them (see :mod:`openenv_gym.client.loop`)."""

    policy: Reconnect
    sleep: Callable[[float], Awaitable[object]]


# -- batched values -----------------------------------------------------------


def _concat_values(space: gym.Space, parts: list) -> Any:
    if len(parts) == 1:
        return parts[0]
    if isinstance(space, _ARRAY_SPACES):
        return np.concatenate(parts)
    if isinstance(space, gym.spaces.Tuple):
        return tuple(_concat_values(s, [p[i] for p in parts]) for i, s in enumerate(space.spaces))
    if isinstance(space, gym.spaces.Dict):
        return {k: _concat_values(s, [p[k] for p in parts]) for k, s in space.spaces.items()}
    return tuple(itertools.chain.from_iterable(parts))


def take_rows(space: gym.Space, value: Any, rows: np.ndarray) -> Any:
    """The entries ``rows`` of a batched value of single space ``space``."""
    if isinstance(space, _ARRAY_SPACES):
        return np.asarray(value)[rows]
    if isinstance(space, gym.spaces.Tuple):
        return tuple(take_rows(s, value[i], rows) for i, s in enumerate(space.spaces))
    if isinstance(space, gym.spaces.Dict):
        return {k: take_rows(s, value[k], rows) for k, s in space.spaces.items()}
    return tuple(value[int(r)] for r in rows)


def as_batch(space: gym.Space, value: Any, n: int, path: str = "actions") -> Any:
    """``value`` as a batch of exactly ``n`` entries of the single space ``space``,
    batched as ``batch_space`` batches them; ``ValueError`` (naming the env, and
    the key within it) when an entry does not fit, and ``TypeError`` when it is
    no batch at all, before anything is sent: no env steps on a bad batch.

    Both ways of handing a vector env its actions are taken: Gymnasium's batch
    (an array for Box, Discrete, MultiDiscrete and MultiBinary; a dict of
    batches for Dict; a ``tuple`` of batches for Tuple) and Stable-Baselines3's
    list of one action per env (a list of arrays, of dicts, of tuples). For a
    Tuple space a ``tuple`` is Gymnasium's batch and a ``list`` holds one entry
    per env.

        >>> as_batch(gym.spaces.Box(-1, 1, (1,)), [np.array([0.5]), np.array([-0.5])], 2).shape
        (2, 1)
        >>> space = gym.spaces.Dict({"x": gym.spaces.Discrete(3)})
        >>> as_batch(space, [{"x": 1}, {"x": 2}], 2)
        {'x': array([1, 2])}
        >>> as_batch(space, [{"x": 1}, {"y": 2}], 2)
        Traceback (most recent call last):
        ...
        ValueError: actions[1]: expected a dict with the keys ['x'], got the keys ['y']
        >>> as_batch(gym.spaces.Discrete(2), [0, 1, 1], 2)
        Traceback (most recent call last):
        ...
        ValueError: actions holds 3 entries, not one per env (2)
    """
    if isinstance(space, gym.spaces.Dict):
        if isinstance(value, dict):
            missing, extra = set(space.spaces) - set(value), set(value) - set(space.spaces)
            if missing or extra:
                raise ValueError(
                    f"{path} must be a dict of batches with the keys {list(space.spaces)} "
                    f"(or a list of one dict per env), not a dict with the keys {list(value)}"
                )
            return {key: as_batch(part, value[key], n, f"{path}[{key!r}]") for key, part in space.spaces.items()}
        return _stack(space, _entries(value, n, path), path)
    if isinstance(space, gym.spaces.Tuple):
        if isinstance(value, tuple) and len(value) == len(space.spaces):
            return tuple(as_batch(part, value[i], n, f"{path}[{i}]") for i, part in enumerate(space.spaces))
        if isinstance(value, (list, np.ndarray)) and len(value) != n and len(value) == len(space.spaces):
            return as_batch(space, tuple(value), n, path)  # a list of batches, as Gymnasium's iterate takes it
        return _stack(space, _entries(value, n, path), path)
    if isinstance(space, _ARRAY_SPACES) and isinstance(value, np.ndarray):
        if value.ndim == 0:
            raise TypeError(f"{path} must be a batch of {n} entries, one per env, not {value!r}")
        if len(value) != n:
            raise ValueError(f"{path} holds {len(value)} entries, not one per env ({n})")
        return value
    return _stack(space, _entries(value, n, path), path)


def _entries(value: Any, n: int, path: str) -> list:
    """The ``n`` per-env entries of a list (or tuple, or array) ``value``."""
    if isinstance(value, (dict, str, bytes)) or not isinstance(value, (list, tuple, np.ndarray)) or (
        isinstance(value, np.ndarray) and value.ndim == 0
    ):
        raise TypeError(f"{path} must be a batch of {n} entries, one per env, not {value!r}")
    if len(value) != n:
        raise ValueError(f"{path} holds {len(value)} entries, not one per env ({n})")
    return list(value)


def _stack(space: gym.Space, entries: list, path: str, paths: list[str] | None = None) -> Any:
    """The batch of the per-env ``entries`` (``paths``: where each is, for errors)."""
    where = paths if paths is not None else [f"{path}[{i}]" for i in range(len(entries))]
    if isinstance(space, gym.spaces.Dict):
        keys = list(space.spaces)
        for entry, at in zip(entries, where):
            if not isinstance(entry, dict) or set(entry) != set(keys):
                got = f"the keys {list(entry)}" if isinstance(entry, dict) else repr(entry)
                raise ValueError(f"{at}: expected a dict with the keys {keys}, got {got}")
        return {
            key: _stack(part, [entry[key] for entry in entries], path, [f"{at}[{key!r}]" for at in where])
            for key, part in space.spaces.items()
        }
    if isinstance(space, gym.spaces.Tuple):
        size = len(space.spaces)
        for entry, at in zip(entries, where):
            if not isinstance(entry, (tuple, list, np.ndarray)) or len(entry) != size:
                raise ValueError(f"{at}: expected a tuple of {size} values, got {entry!r}")
        return tuple(
            _stack(part, [entry[i] for entry in entries], path, [f"{at}[{i}]" for at in where])
            for i, part in enumerate(space.spaces)
        )
    if isinstance(space, _ARRAY_SPACES):
        shape = space.shape or ()
        for entry, at in zip(entries, where):
            if np.shape(entry) != shape:
                raise ValueError(f"{at}: expected a value of shape {shape} ({space}), got shape {np.shape(entry)}")
        return np.asarray(entries) if entries else np.empty((0, *shape), dtype=space.dtype)
    return tuple(entries)


def _item(space: gym.Space, value: Any, row: int) -> Any:
    """Entry ``row`` of a batched value, as Gymnasium's ``iterate`` yields it."""
    if isinstance(space, _ARRAY_SPACES):
        return value[row]
    if isinstance(space, gym.spaces.Tuple):
        return tuple(_item(s, value[i], row) for i, s in enumerate(space.spaces))
    if isinstance(space, gym.spaces.Dict):
        return {k: _item(s, value[k], row) for k, s in space.spaces.items()}
    return value[row]


def _empty(space: gym.Space, n: int) -> Any:
    """Gymnasium's empty batch of ``n`` values of ``space`` (to concatenate into)."""
    return create_empty_array(space, n)


def _place_infos(num_envs: int, parts: list[tuple[dict, np.ndarray]]) -> dict:
    """Dict-of-arrays infos of ``num_envs`` envs from parts ``(infos, rows)``,
    each holding the infos of the envs ``rows`` (indices, in order).

    A key missing from a part gets zeros (``None`` for objects, ``False`` for
    masks) there, and every array keeps the dtype of the first part that has
    the key: exactly what ``VectorEnv._add_info`` builds env by env.
    """
    keys: dict = {}
    for infos, _ in parts:
        for key, value in infos.items():
            keys.setdefault(key, value)
    out: dict = {}
    for key, first in keys.items():
        if isinstance(first, dict):
            out[key] = _place_infos(num_envs, [(infos.get(key) or {}, rows) for infos, rows in parts])
            continue
        array = np.empty((num_envs, *first.shape[1:]), dtype=first.dtype)
        array[...] = None if first.dtype == object else 0
        for infos, rows in parts:
            if key in infos:
                array[rows] = infos[key]
        out[key] = array
    return out


def _take_infos(infos: dict, rows: np.ndarray) -> dict:
    """The infos of the envs ``rows`` alone (keys none of them has are left out)."""
    out: dict = {}
    for key, value in infos.items():
        mask = infos.get(f"_{key}")
        if mask is None:
            continue  # a mask: taken with its key
        picked = np.asarray(mask)[rows]
        if picked.any():
            out[key] = _take_infos(value, rows) if isinstance(value, dict) else value[rows]
            out[f"_{key}"] = picked
    return out


def concat_batches(single_space: gym.Space, batches: list[Batch]) -> Batch:
    """One batch of all the envs of ``batches``, in the order given."""
    if len(batches) == 1:
        return batches[0]
    return Batch(
        obs=_concat_values(single_space, [b.obs for b in batches]),
        rewards=np.concatenate([b.rewards for b in batches]),
        terminations=np.concatenate([b.terminations for b in batches]),
        truncations=np.concatenate([b.truncations for b in batches]),
        infos=_place_infos(sum(map(len, batches)), [(b.infos, rows) for b, rows in zip(batches, _blocks(batches))]),
        env_ids=np.concatenate([b.env_ids for b in batches]),
    )


def _blocks(batches: list[Batch]) -> list[np.ndarray]:
    """The rows of each batch in the concatenation of ``batches``."""
    ends = np.cumsum([len(b) for b in batches])
    return [np.arange(end - len(b), end) for b, end in zip(batches, ends)]


def _select(space: gym.Space, pick: np.ndarray, a: Batch, b: Batch) -> Batch:
    """The rows of ``b`` where ``pick`` is true and those of ``a`` elsewhere
    (two answers for the same envs)."""
    n = len(pick)
    items = [_item(space, (b if p else a).obs, i) for i, p in enumerate(pick)]
    rows_a, rows_b = np.flatnonzero(~pick), np.flatnonzero(pick)
    return Batch(
        obs=concatenate(space, items, _empty(space, n)),
        rewards=np.where(pick, b.rewards, a.rewards),
        terminations=np.where(pick, b.terminations, a.terminations),
        truncations=np.where(pick, b.truncations, a.truncations),
        infos=_place_infos(n, [(_take_infos(a.infos, rows_a), rows_a), (_take_infos(b.infos, rows_b), rows_b)]),
        env_ids=a.env_ids,
    )


class _InfoBatcher:
    """Gymnasium's own info batching (``VectorEnv._add_info``) for ``num_envs`` envs."""

    _add_info = VectorEnv._add_info

    def __init__(self, num_envs: int) -> None:
        self.num_envs = num_envs


def infos_for(num_envs: int, per_env: list[tuple[int, dict]], infos: dict | None = None) -> dict:
    """Dict-of-arrays infos from ``(index, info)`` pairs, added in the order
    given (to ``infos`` when given)."""
    batcher = _InfoBatcher(num_envs)
    infos = {} if infos is None else infos
    for index, info in per_env:
        if info:
            infos = batcher._add_info(infos, info, index)  # type: ignore[misc]  # Gymnasium's, borrowed
    return infos


# -- units --------------------------------------------------------------------


class _Unit:
    """What both units share: their envs, their connection, and its recovery.

    A connection lost under a :class:`Recovery` is dropped and every env of
    the unit is *owed* a new episode: the next reset of an owed env runs on a
    new connection (opened with the policy's backoff) and its info carries
    ``RECONNECTED`` and ``LOST_REASON``. Without a policy, errors propagate.
    """

    def __init__(
        self,
        connect: Connect,
        contract: Contract,
        env_ids: np.ndarray,
        autoreset: AutoresetMode,
        recovery: Recovery | None,
    ) -> None:
        self.session: Session | None = None
        self.contract = contract
        self.env_ids = env_ids
        self.autoreset = autoreset
        self.space = contract.observation_space
        self._connect = connect
        self._recovery = recovery
        #: Envs whose episode a lost connection ended, until a reset restarts them.
        self._owed = np.zeros(len(env_ids), dtype=np.bool_)
        self._lost = ""  # why the last connection was lost

    @property
    def size(self) -> int:
        return len(self.env_ids)

    async def open(self) -> None:
        """Connect (CAPACITY_REACHED when the server cannot hold these envs)."""
        self.session = await self._open_session()

    async def _open_session(self) -> Session:
        session = await self._connect()
        try:
            await self._greet(session)
        except BaseException:
            session.drop()
            raise
        return session

    async def _greet(self, session: Session) -> None:
        """The unit's first request on a new connection."""
        raise NotImplementedError

    def _live(self) -> Session:
        if self.session is None:
            raise self._lost_error()
        return self.session

    def _lost_error(self) -> OpenEnvGymError:
        return OpenEnvGymError(
            f"envs {self.env_ids.tolist()} lost their connection ({self._lost}) and have no "
            f"episode: reset them (reset(), or reset(options={{'reset_mask': mask}})) to reconnect"
        )

    async def _recover(self, attempt: Callable[[Session], Awaitable[T]]) -> T:
        """``attempt(session)``; under a policy, a lost connection is replaced
        (first, if there is none) and ``attempt`` tried again, with backoff."""
        if self._recovery is None:
            return await attempt(self._live())

        async def once() -> T:
            if self.session is None:
                self.session = await self._open_session()
            try:
                return await attempt(self.session)
            except (*RECOVERABLE, CapacityReachedError) as error:
                self._drop(error)
                raise

        return await self._recovery.policy.acall(once, self._recovery.sleep)

    def _drop(self, error: BaseException) -> None:
        """Abandon the connection after ``error``: every episode on it is gone."""
        session, self.session = self.session, None
        self._lost = str(error)
        self._owed[:] = True
        if session is not None:
            session.drop()

    def _lost_info(self) -> dict:
        return {RECONNECTED: True, LOST_REASON: self._lost}

    async def call(self, message: Any) -> list:
        """A ``call`` / ``get_attr`` / ``set_attr`` (``values``: one per env) or
        ``render`` message to the unit's envs; the per-env values of the reply."""
        session = self._live()
        if isinstance(message, wire.SetAttr):  # values of no space: the codec says how they travel
            values, hints = session.codec.pack_data(message.values)
            message = wire.SetAttr(message.name, values, hints, message.indices)
        reply = await session.request(message)
        if isinstance(reply, wire.SetAttrDone):
            return []
        return wire.read_values(session.codec, reply)

    async def close(self) -> None:
        if self.session is not None:
            await self.session.close()


class SessionUnit(_Unit):
    """One env on one ``/ws`` session, autoreset on the client as Gymnasium defines it.

    NEXT_STEP: the step after an episode ends resets the env (reward 0, the
    action ignored). SAME_STEP: the step that ends an episode also resets, and
    ``final_obs`` / ``final_info`` carry the last observation and info.
    DISABLED: stepping an env whose episode ended is an error until
    ``reset(options={"reset_mask": ...})`` resets it.

    A lost connection ends the episode the same way (truncated); the reset
    that follows, whoever asks for it, reconnects.
    """

    def __init__(
        self,
        connect: Connect,
        contract: Contract,
        env_ids: np.ndarray,
        autoreset: AutoresetMode,
        recovery: Recovery | None = None,
    ) -> None:
        super().__init__(connect, contract, env_ids, autoreset, recovery)
        self._pending_reset = False
        self._ended = False
        self._obs: Any = None

    async def _greet(self, session: Session) -> None:
        """A cheap request: a server over capacity answers it with CAPACITY_REACHED."""
        await session.request(State())

    async def _reset_one(self, seed: int | None, options: dict | None) -> tuple[Any, dict]:
        message = Reset(seed, options=options)

        async def attempt(session: Session) -> Any:
            return self.contract.read(session.codec, await session.request(message))

        step = await self._recover(attempt)
        self._pending_reset = self._ended = False
        if not self._owed[0]:
            return step.obs, step.info
        self._owed[0] = False  # the first episode on a new connection
        return step.obs, {**step.info, **self._lost_info()}

    def _batch(self, obs: Any, reward: float, terminated: bool, truncated: bool, infos: list[dict]) -> Batch:
        self._obs = obs
        return Batch(
            obs=concatenate(self.space, [obs], _empty(self.space, 1)),
            rewards=np.array([reward], dtype=np.float64),
            terminations=np.array([terminated]),
            truncations=np.array([truncated]),
            infos=infos_for(1, [(0, info) for info in infos]),
            env_ids=self.env_ids,
        )

    async def reset(self, seeds: list, options: dict | None, mask: np.ndarray | None) -> Batch:
        if mask is not None and not mask[0]:
            return self._batch(self._obs, 0.0, False, False, [])
        obs, info = await self._reset_one(seeds[0], options)
        return self._batch(obs, 0.0, False, False, [info])

    async def step(self, single_action_space: gym.Space, actions: Any, rows: np.ndarray | None) -> Batch:
        """Step the env with entry ``rows[0]`` of ``actions`` (``None``: entry 0)."""
        if self.autoreset is AutoresetMode.NEXT_STEP and self._pending_reset:
            obs, info = await self._reset_one(None, None)
            return self._batch(obs, 0.0, False, False, [info])
        if self.autoreset is AutoresetMode.DISABLED and self._ended:
            raise OpenEnvGymError(
                f"env {int(self.env_ids[0])} ended its episode and autoreset_mode is DISABLED: "
                f"reset it with reset(options={{'reset_mask': mask}}) before stepping it again"
            )
        session = self._live()
        action = _item(single_action_space, actions, 0 if rows is None else int(rows[0]))
        try:
            reply = await session.request(self.contract.step_message(session.codec, action))
            step = self.contract.read(session.codec, reply)
        except RECOVERABLE as error:
            if self._recovery is None:
                raise
            return await self._truncate(error)
        done = step.terminated or step.truncated
        if self.autoreset is AutoresetMode.SAME_STEP and done:
            final = {"final_obs": step.obs, "final_info": step.info}
            obs, info = await self._reset_one(None, None)
            return self._batch(obs, step.reward, step.terminated, step.truncated, [final, info])
        self._pending_reset = self._ended = done
        return self._batch(step.obs, step.reward, step.terminated, step.truncated, [step.info])

    async def _truncate(self, error: BaseException) -> Batch:
        """End the episode the lost connection took with it: truncated, the last
        observation, flagged. SAME_STEP starts the next one in this step, on a
        new connection; NEXT_STEP at the next step; DISABLED at the next reset."""
        self._drop(error)
        lost = self._lost_info()
        if self.autoreset is AutoresetMode.SAME_STEP:
            final = {"final_obs": self._obs, "final_info": lost}
            obs, info = await self._reset_one(None, None)
            return self._batch(obs, 0.0, False, True, [final, info])
        self._pending_reset = self._ended = True
        return self._batch(self._obs, 0.0, False, True, [lost])

    async def render(self) -> list:
        if not self.contract.extended or self.contract.render_mode is None:
            return [None]
        reply = await self._live().request(Render())
        return [reply.decoded_frame() if isinstance(reply, RenderReply) else None]

    async def call(self, message: Any) -> list:
        """A ``call`` / ``get_attr`` / ``set_attr`` / ``is_wrapped`` message to this
        env, over the attribute extension of ``/ws`` (openenv-gym servers that advertise it)."""
        if not self.contract.attributes:
            raise OpenEnvGymError(
                f"{message.type}() needs an openenv-gym server: the OpenEnv /ws protocol has no message "
                f"for it, and this server does not advertise openenv-gym's attribute messages "
                f"(x-openenv-gym.attributes in /schema). Serve the env with openenv-gym (a recent one)"
            )
        return await super().call(message)


class VectorUnit(_Unit):
    """A block of envs on one ``/vector`` session of an openenv-gym server.

    The server's vector env autoresets them. A lost connection takes all of
    their episodes; :meth:`step` then restarts each env exactly when its
    autoreset mode would have reset it (see :meth:`_truncate`).
    """

    def __init__(
        self,
        connect: Connect,
        contract: Contract,
        env_ids: np.ndarray,
        autoreset: AutoresetMode,
        recovery: Recovery | None = None,
    ) -> None:
        super().__init__(connect, contract, env_ids, autoreset, recovery)
        self.observation_space = batch_space(contract.observation_space, len(env_ids))
        self.action_space = batch_space(contract.action_space, len(env_ids))
        self._obs: Any = None
        #: Envs whose last step ended (NEXT_STEP: the server resets them at the next step).
        self._done = np.zeros(len(env_ids), dtype=np.bool_)

    async def _greet(self, session: Session) -> None:
        """Open the server's vector env (CAPACITY_REACHED when it does not fit)."""
        await session.request(wire.VectorOpen(self.size, self.autoreset))

    def _batch(self, session: Session, reply: ServerMessage, rewards: bool) -> Batch:
        if not isinstance(reply, wire.VectorObservation):
            raise ProtocolError(ErrorCode.SESSION_ERROR, f"Expected a vector observation, got {reply.type!r}")
        n = self.size
        codec = session.codec
        obs = codec.unpack_space(self.observation_space, reply.obs, path="obs")
        if rewards:
            r = np.asarray(reply.rewards, dtype=np.float64)
            term = np.asarray(reply.terminations, dtype=np.bool_)
            trunc = np.asarray(reply.truncations, dtype=np.bool_)
        else:
            r, term, trunc = np.zeros(n), np.zeros(n, np.bool_), np.zeros(n, np.bool_)
        infos = wire.read_infos(codec, reply, self.space)
        local = infos.get(ENV_ID)
        if isinstance(local, np.ndarray) and local.dtype.kind in "iu" and local.shape == (n,):
            # The server numbers its envs from 0 (EnvPool's info["env_id"]): this unit's are a block of ours.
            infos[ENV_ID] = self.env_ids[local].astype(local.dtype)
        return Batch(obs, r, term, trunc, infos, self.env_ids)

    def _unchanged(self) -> Batch:
        n = self.size
        return Batch(self._obs, np.zeros(n), np.zeros(n, np.bool_), np.zeros(n, np.bool_), {}, self.env_ids)

    @staticmethod
    def _reset_message(
        session: Session, seeds: list, options: dict | None, mask: np.ndarray | None
    ) -> wire.VectorReset:
        if mask is not None:
            options = {**(options or {}), "reset_mask": session.codec.pack_array(mask)}
        seed = None if all(s is None for s in seeds) else [None if s is None else int(s) for s in seeds]
        return wire.VectorReset(seed, options)

    async def reset(self, seeds: list, options: dict | None, mask: np.ndarray | None) -> Batch:
        """Reset all envs, or those of ``mask``. A new connection (after a
        loss) has no episodes yet, so its first reset starts all of them."""
        if mask is not None and not mask.any():
            return self._unchanged()

        async def attempt(session: Session) -> tuple[np.ndarray, Batch]:
            if mask is None or self._owed.all():
                rows = np.ones(self.size, np.bool_)
                own = seeds if mask is None else [s if m else None for s, m in zip(seeds, mask)]
                message = self._reset_message(session, own, options, None)
            else:
                rows, message = mask, self._reset_message(session, seeds, options, mask)
            return rows, self._batch(session, await session.request(message), rewards=False)

        rows, batch = await self._recover(attempt)
        return self._started(rows, batch)

    def _started(self, rows: np.ndarray, batch: Batch) -> Batch:
        """The answer to a reset of the envs ``rows``: the others keep their
        observation, and those a lost connection had ended carry the flag."""
        if (self._owed & ~rows).any():  # the server's observation of these is not the one reported
            batch = _select(self.space, rows, self._unchanged(), batch)
        flagged = np.flatnonzero(rows & self._owed)
        batch.infos = infos_for(self.size, [(int(i), self._lost_info()) for i in flagged], batch.infos)
        self._owed &= ~rows
        self._done &= ~rows
        self._obs = batch.obs
        return batch

    async def step(self, single_action_space: gym.Space, actions: Any, rows: np.ndarray | None) -> Batch:
        """Step this unit's envs with the entries ``rows`` of ``actions``
        (``None``: ``actions`` holds exactly this unit's envs).

        After a lost connection (NEXT_STEP), the envs it ended get their reset
        observation here, as any autoreset step gives it (reward 0, the action
        ignored): all of them on a new connection, or, when some envs were
        restarted at once (see :meth:`_truncate`), the others by a masked
        reset after the step.
        """
        owed = self._owed.copy() if self._owed.any() else None  # None: the common case, nothing owed
        if owed is not None and owed.all():
            if self.autoreset is not AutoresetMode.NEXT_STEP:
                raise self._lost_error()  # DISABLED (or a recovery that gave up): a reset restarts them
            return await self.reset([None] * self.size, None, None)
        if rows is not None:
            actions = take_rows(single_action_space, actions, rows)
        session = self._live()
        encoded = session.codec.pack_space(self.action_space, actions, path="actions")
        try:
            batch = self._batch(session, await session.request(wire.VectorStep(encoded)), rewards=True)
            if owed is not None:
                message = self._reset_message(session, [None] * self.size, None, owed)
                restarted = self._started(owed, self._batch(session, await session.request(message), rewards=False))
                batch = _select(self.space, owed, batch, restarted)
        except RECOVERABLE as error:
            if self._recovery is None:
                raise
            return await self._truncate(error)
        self._done = batch.terminations | batch.truncations
        self._obs = batch.obs
        return batch

    async def _truncate(self, error: BaseException) -> Batch:
        """End the episodes the lost connection took with it: truncated, the
        last observations, reward 0, flagged.

        Envs whose reset is due at this very step start their next episode in
        it, on a new connection: all of them in SAME_STEP (with ``final_obs``
        / ``final_info``), and in NEXT_STEP those whose last step ended (this
        step is their autoreset). The others stay owed a reset: NEXT_STEP gives
        it at the next step, DISABLED at the reset that asks for them.
        """
        n = self.size
        if self.autoreset is AutoresetMode.NEXT_STEP:
            due = self._done | self._owed
        else:
            due = np.full(n, self.autoreset is AutoresetMode.SAME_STEP)
        self._drop(error)
        lost = self._lost_info()
        truncated = Batch(
            self._obs, np.zeros(n), np.zeros(n, np.bool_), np.ones(n, np.bool_),
            infos_for(n, [(i, lost) for i in range(n)]), self.env_ids,
        )
        if not due.any():
            return truncated
        restarted = await self.reset([None] * n, None, None)
        if self.autoreset is AutoresetMode.SAME_STEP:
            finals = [(i, {"final_obs": _item(self.space, truncated.obs, i), "final_info": lost}) for i in range(n)]
            return Batch(
                restarted.obs, truncated.rewards, truncated.terminations, truncated.truncations,
                infos_for(n, finals, restarted.infos), self.env_ids,
            )
        self._owed = ~due
        batch = _select(self.space, due, truncated, restarted)
        self._obs = batch.obs
        return batch

    async def render(self) -> list:
        return await self.call(Render())
