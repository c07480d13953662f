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
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium.vector import AutoresetMode, VectorEnv
from gymnasium.vector.utils import batch_space, concatenate, create_empty_array

from .. import spaces
from ..errors import OpenEnvGymError
from ..vector_wire import infos_from_fields
from ..wire import apply_type_hints, type_hints
from .async_session import AsyncSession
from .contract import Contract, decode_frame

__all__ = ["Batch", "SessionUnit", "VectorUnit", "concat_batches", "take_rows", "infos_for"]

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


def _item(space: gym.Space, value: Any, row: int) -> Any:
    """Entry ``row`` of a batched value, as Gymnasium's ``iterate`` yields it."""
    if isinstance(space, _ARRAY_SPACES):
        return value[row]
    if isinstance(space, gym.spaces.Tuple):
        return tuple(_item(s, value[i], row) for i, s in enumerate(space.spaces))
    if isinstance(space, gym.spaces.Dict):
        return {k: _item(s, value[k], row) for k, s in space.spaces.items()}
    return value[row]


def _concat_infos(parts: list[tuple[dict, int]]) -> dict:
    """Join dict-of-arrays infos of consecutive env blocks (``(infos, n_envs)`` each).

    A key missing from a block gets zeros (``None`` for objects, ``False`` for
    masks) there, and every array keeps the dtype of the first block that has
    the key: exactly what ``VectorEnv._add_info`` builds env by env.
    """
    if len(parts) == 1:
        return parts[0][0]
    keys: dict = {}
    for infos, _ in parts:
        for key, value in infos.items():
            keys.setdefault(key, value)
    out: dict = {}
    for key, first in keys.items():
        if isinstance(first, dict):
            out[key] = _concat_infos([(infos.get(key) or {}, n) for infos, n in parts])
            continue
        chunks = []
        for infos, n in parts:
            value = infos.get(key)
            if value is None:
                fill = np.empty((n, *first.shape[1:]), dtype=first.dtype)
                fill[...] = None if first.dtype == object else 0
                value = fill
            chunks.append(value)
        if first.dtype == object:
            joined = np.empty(sum(len(c) for c in chunks), dtype=object)
            joined[:] = list(itertools.chain.from_iterable(chunks))
            out[key] = joined
        else:
            out[key] = np.concatenate(chunks).astype(first.dtype, copy=False)
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
        infos=_concat_infos([(b.infos, len(b)) for b in batches]),
        env_ids=np.concatenate([b.env_ids for b in batches]),
    )


class _InfoBatcher:
    """Gymnasium's own info batching (``VectorEnv._add_info``) for ``num_envs`` envs."""

    _add_info = VectorEnv._add_info

    def __init__(self, num_envs: int) -> None:
        self.num_envs = num_envs


def infos_for(num_envs: int, per_env: list[tuple[int, dict]]) -> dict:
    """Dict-of-arrays infos from ``(index, info)`` pairs, added in the order given."""
    batcher = _InfoBatcher(num_envs)
    infos: dict = {}
    for index, info in per_env:
        if info:
            infos = batcher._add_info(infos, info, index)
    return infos


# -- units --------------------------------------------------------------------


class SessionUnit:
    """One env on one ``/ws`` session, autoreset on the client as Gymnasium defines it.

    NEXT_STEP: the step after an episode ends resets the env (reward 0, the
    action ignored). SAME_STEP: the step that ends an episode also resets, and
    ``final_obs`` / ``final_info`` carry the last observation and info.
    DISABLED: stepping an env whose episode ended is an error until
    ``reset(options={"reset_mask": ...})`` resets it.
    """

    def __init__(
        self,
        session: AsyncSession,
        contract: Contract,
        env_id: int,
        autoreset: AutoresetMode,
    ) -> None:
        self.session = session
        self.contract = contract
        self.env_ids = np.array([env_id], dtype=np.int64)
        self.autoreset = autoreset
        self.space = contract.observation_space
        self._pending_reset = False
        self._ended = False
        self._obs: Any = None

    @property
    def size(self) -> int:
        return 1

    async def probe(self) -> None:
        """A cheap request: a server over capacity answers it with CAPACITY_REACHED."""
        await self.session.request({"type": "state"})

    async def _reset_one(self, seed: int | None, options: dict | None) -> tuple[Any, dict]:
        data: dict[str, Any] = dict(options or {})
        if seed is not None:
            data["seed"] = int(seed)
        step = self.contract.step(await self.session.request({"type": "reset", "data": data}))
        self._pending_reset = self._ended = False
        return step.obs, step.info

    def _batch(self, obs: Any, reward: float, terminated: bool, truncated: bool, infos: list[dict]) -> Batch:
        self._obs = obs
        return Batch(
            obs=concatenate(self.space, [obs], create_empty_array(self.space, 1)),
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
        session = self.session
        data = self.contract.action_data(
            _item(single_action_space, actions, 0 if rows is None else int(rows[0])),
            arrays=session.binary,
            hints=session.extended and not session.binary,
        )
        step = self.contract.step(await session.request({"type": "step", "data": data}))
        done = step.terminated or step.truncated
        if self.autoreset is AutoresetMode.SAME_STEP and done:
            final = {"final_obs": step.obs, "final_info": step.info}
            obs, info = await self._reset_one(None, None)
            return self._batch(obs, step.reward, step.terminated, step.truncated, [final, info])
        self._pending_reset = self._ended = done
        return self._batch(step.obs, step.reward, step.terminated, step.truncated, [step.info])

    async def render(self) -> list:
        if not self.contract.extended or self.contract.render_mode is None:
            return [None]
        return [decode_frame(await self.session.request({"type": "render"}))]

    async def call(self, kind: str, data: dict) -> list:
        raise OpenEnvGymError(
            f"{kind}() needs batched mode: the OpenEnv /ws protocol has no message for it. "
            f"Use mode='batched' with an openenv-gym server"
        )

    async def close(self) -> None:
        await self.session.close()


class VectorUnit:
    """A block of envs on one ``/vector`` session of an openenv-gym server."""

    def __init__(
        self,
        session: AsyncSession,
        contract: Contract,
        env_ids: np.ndarray,
    ) -> None:
        self.session = session
        self.contract = contract
        self.env_ids = env_ids
        self.space = contract.observation_space
        self.observation_space = batch_space(contract.observation_space, len(env_ids))
        self.action_space = batch_space(contract.action_space, len(env_ids))
        self._obs: Any = None

    @property
    def size(self) -> int:
        return len(self.env_ids)

    async def open(self, autoreset: AutoresetMode) -> None:
        """Open the server's vector env (CAPACITY_REACHED when it does not fit)."""
        await self.session.request(
            {"type": "vector_open", "data": {"num_envs": self.size, "autoreset_mode": autoreset.value}}
        )

    def _batch(self, data: dict, rewards: bool) -> Batch:
        n = self.size
        self._obs = obs = spaces.decode(self.observation_space, data["obs"], path="obs")
        if rewards:
            r = np.asarray(data["rewards"], dtype=np.float64)
            term = np.asarray(data["terminations"], dtype=np.bool_)
            trunc = np.asarray(data["truncations"], dtype=np.bool_)
        else:
            r, term, trunc = np.zeros(n), np.zeros(n, np.bool_), np.zeros(n, np.bool_)
        return Batch(obs, r, term, trunc, infos_from_fields(data), self.env_ids)

    async def reset(self, seeds: list, options: dict | None, mask: np.ndarray | None) -> Batch:
        if mask is not None:
            if not mask.any():
                return Batch(self._obs, np.zeros(self.size), np.zeros(self.size, np.bool_),
                             np.zeros(self.size, np.bool_), {}, self.env_ids)
            options = {**(options or {}), "reset_mask": mask}
        seed = None if all(s is None for s in seeds) else [None if s is None else int(s) for s in seeds]
        payload = {"seed": seed, "options": options}
        if not self.session.binary and options and "reset_mask" in options:
            payload["options"] = {**options, "reset_mask": mask.tolist()}
        return self._batch(await self.session.request({"type": "reset", "data": payload}), rewards=False)

    async def step(self, single_action_space: gym.Space, actions: Any, rows: np.ndarray | None) -> Batch:
        """Step this unit's envs with the entries ``rows`` of ``actions``
        (``None``: ``actions`` holds exactly this unit's envs)."""
        if rows is not None:
            actions = take_rows(single_action_space, actions, rows)
        encoded = spaces.encode(self.action_space, actions, arrays=self.session.binary, path="actions")
        data = await self.session.request({"type": "step", "data": {"actions": encoded}})
        return self._batch(data, rewards=True)

    async def render(self) -> list:
        return await self.call("render", {})

    async def call(self, kind: str, data: dict) -> list:
        """``call`` / ``get_attr`` / ``set_attr`` / ``render`` on the server's vector env."""
        if not self.session.binary and (hints := type_hints(data.get("values"))) is not None:
            data = {**data, "types": hints}
        reply = await self.session.request({"type": kind, "data": data})
        return list(apply_type_hints(reply.get("values") or [], reply.get("types")))

    async def close(self) -> None:
        await self.session.close()
