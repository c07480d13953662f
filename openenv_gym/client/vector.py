"""``RemoteVectorEnv``: N remote envs as one ``gymnasium.vector.VectorEnv``.

    >>> import openenv_gym
    >>> with openenv_gym.local_server("CartPole-v1") as url:
    ...     envs = openenv_gym.RemoteVectorEnv(url, num_envs=4)
    ...     obs, infos = envs.reset(seed=0)
    ...     obs, rewards, terminations, truncations, infos = envs.step(envs.action_space.sample())
    ...     envs.close()
    >>> obs.shape
    (4, 4)

Two ways to run the envs (``mode``):

- ``"batched"`` (openenv-gym servers): one WebSocket per server carries all
  of that server's envs; the server steps them with a Gymnasium vector env,
  and every step is one frame each way holding stacked arrays.
- ``"sessions"`` (any OpenEnv server, stock ones included): one ``/ws``
  session per env, all driven concurrently on one background event loop;
  Gymnasium's autoreset is done on the client.

``"auto"`` (the default) picks batched when every server offers it. Envs are
spread over one or many servers; results always come back in env order.

Partial batches, as EnvPool does them: with ``batch_size < num_envs``,
:meth:`RemoteVectorEnv.send` hands actions to some envs and
:meth:`RemoteVectorEnv.recv` returns the first ``batch_size`` envs that answer,
with their ids in ``info["env_id"]``, so a slow env or server never holds the
others back (see ``docs/vector.md``).
"""

from __future__ import annotations

import asyncio
import functools
import re
from collections import deque
from collections.abc import Awaitable, Callable, Mapping, Sequence
from copy import deepcopy
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

import gymnasium as gym
import numpy as np
from gymnasium.vector import AutoresetMode, VectorEnv
from gymnasium.vector.utils import batch_space

from ..errors import (
    CapacityReachedError,
    ConnectionClosedError,
    EnvClosedError,
    MessageTimeoutError,
    NoPendingCallError,
    PendingCallError,
    ProtocolMismatchError,
    SpaceMismatchError,
    WaitTimeoutError,
)
from ..protocol import EXTENSION_KEY, WS_REPLIES
from ..protocol import vector as wire
from ..protocol.attributes import ATTRIBUTE_REPLIES, class_path
from ..protocol.vector import AutoresetLike
from .async_session import AsyncSession, BlockingSession
from .connection import http_url
from .contract import Contract, FieldOverrides, read_contract
from .http import get_json
from .loop import InlineRunner, LoopThread
from .options import ConnectOptions
from .pickling import PicklesAsArguments, remembers_arguments
from .remote_env import owned_arrays
from .retry import Reconnect
from .session import RemoteSession
from .vector_units import Batch, Recovery, Session, SessionUnit, VectorUnit, as_batch, concat_batches

if TYPE_CHECKING:
    from typing_extensions import Unpack

    from .options import ConnectKwargs

__all__ = ["RemoteVectorEnv", "VectorMode"]

#: ``"auto"``: batched when every server offers it, else sessions.
VectorMode = Literal["auto", "batched", "sessions"]
Unit = SessionUnit | VectorUnit
#: Every reply of a ``/vector`` session, the one to ``vector_open`` included.
_VECTOR_REPLIES = {**wire.OPEN_REPLIES, **wire.VECTOR_REPLIES}
#: Every reply of a ``/ws`` session of sessions mode.
_SESSION_REPLIES = {**WS_REPLIES, **ATTRIBUTE_REPLIES}


@dataclass(frozen=True)
class _Plan:
    """Where a vector env's envs run: the mode, and per server its URL, contract
    and number of envs (servers given none are left out)."""

    mode: str
    urls: list[str]
    contracts: list[Contract]
    sizes: list[int]


def _least_loaded_split(num_envs: int, loads: Sequence[tuple[int, int | None]]) -> list[int]:
    """Envs per server, least-loaded first: each env goes to the server holding
    the fewest envs (its ``active`` ones plus those given it here) among those
    with room left (``available`` is ``None`` when unknown: no limit), ties to
    the earlier server. When no server has room, the rest go to the least
    loaded anyway, whose capacity error then says what to change. Equal loads
    give the even split, the remainder on the first servers.

        >>> _least_loaded_split(8, [(0, None)] * 3)
        [3, 3, 2]
        >>> _least_loaded_split(8, [(4, 60), (0, 60)])
        [2, 6]
        >>> _least_loaded_split(6, [(0, 2), (0, None)])
        [2, 4]
    """
    sizes = [0] * len(loads)
    held = [active for active, _ in loads]
    for _ in range(num_envs):
        roomy = [i for i, (_, available) in enumerate(loads) if available is None or sizes[i] < available]
        best = min(roomy or range(len(loads)), key=lambda i: (held[i], i))
        sizes[best] += 1
        held[best] += 1
    return sizes


def _placement(sizes: Mapping[str, int], num_envs: int) -> list[int]:
    """The envs of each server of an explicit placement ``{url: envs}``, checked.

        >>> _placement({"http://a:1": 3, "http://b:1": 5}, 8)
        [3, 5]
    """
    for url, size in sizes.items():
        if isinstance(size, bool) or not isinstance(size, int) or size < 1:
            raise ValueError(f"base_url[{url!r}] must be a positive number of envs, not {size!r}")
    if sum(sizes.values()) != num_envs:
        raise ValueError(
            f"base_url places {sum(sizes.values())} envs ({dict(sizes)}) but num_envs is {num_envs}; "
            f"the numbers of envs per server must add up to num_envs"
        )
    return list(sizes.values())


def _server_load(url: str, options: ConnectOptions) -> tuple[int, int | None]:
    """``(envs held, envs it has room for)`` from an openenv-gym server's
    ``/health``; a stock server reports neither: ``(0, None)``, nor a server whose
    optional document does not come whole within its limits and deadline."""
    try:
        health = get_json(f"{url}/health", options)
    except (ConnectionClosedError, MessageTimeoutError):
        return 0, None
    if not isinstance(health, dict):
        return 0, None
    active, available = health.get("active_sessions"), health.get("available_sessions")
    if isinstance(active, int) and isinstance(available, int):
        return active, available
    return 0, None


class _Connector:
    """Opens the connections of one unit: the first to the URL planned, each
    later one (after a loss) to where the reconnect policy locates its server
    (:attr:`Reconnect.relocate <openenv_gym.client.retry.Reconnect.relocate>`)."""

    def __init__(self, url: str, policy: Reconnect | None, open_at: Callable[[str], Awaitable[Session]]) -> None:
        self.url = url
        self._policy = policy
        self._open_at = open_at
        self._opened = False

    async def __call__(self) -> Session:
        if self._opened and self._policy is not None:
            self.url = http_url(self._policy.locate(self.url))
        self._opened = True
        return await self._open_at(self.url)


class RemoteVectorEnv(PicklesAsArguments, VectorEnv):
    """A Gymnasium vector env whose sub-envs run on OpenEnv servers.

    Args:
        base_url: one server, or a list of servers to spread the envs over,
            least-loaded first (by their ``/health``; see the vector guide),
            in contiguous blocks of env ids in the order given; or a mapping
            ``{url: number of envs}`` that places them explicitly (slots
            leased from a pool, say), in the same blocks.
        num_envs: number of sub-envs.
        mode: ``"auto"``, ``"batched"`` (openenv-gym servers only) or ``"sessions"``.
        autoreset_mode: Gymnasium's :class:`~gymnasium.vector.AutoresetMode` or
            its string value (``"NextStep"``, ``"SameStep"``, ``"Disabled"``).
        batch_size: envs :meth:`recv` returns (default ``num_envs``). In batched
            mode every server must host the same number of envs and
            ``batch_size`` must be a multiple of it (a server answers for all
            its envs at once).
        observation_space, action_space: single-env spaces overriding what a
            stock server's ``/schema`` lets the client infer.
        observation_fields, action_fields: for a stock server, the space of single
            fields, or ``None`` to leave one out (as :class:`~openenv_gym.RemoteEnv`).
        copy: return a copy of each batch of observations (``True``, like
            ``SyncVectorEnv``), or the batch itself, which the next step replaces.
            Either way the arrays are writable: an array that is a read-only view of a
            received msgpack frame is copied once (docs/protocol.md, "Copies, end to end").
        options: how to connect (:class:`~openenv_gym.client.options.ConnectOptions`);
            keyword arguments of the same names override it. ``busy_poll``
            applies to batched mode, whose connections are driven from the
            calling thread: it polls while it waits for one server's reply,
            never while it waits for several. With ``reconnect``,
            the envs of a lost connection (one env in sessions mode, all envs
            of that server in batched mode) end their episode in that step
            with ``truncated=True``, reward 0, their last observation and
            ``infos["openenv_gym.reconnected"]``; their next episode starts on
            a new connection (with the policy's backoff) when the autoreset
            mode starts it, and without a seed. The constructor never retries.

    Raises:
        CapacityReachedError: before any step, when a server cannot hold the
            envs asked of it; the message says what the server must allow.
    """

    @remembers_arguments
    def __init__(
        self,
        base_url: str | Sequence[str] | Mapping[str, int],
        num_envs: int,
        *,
        mode: VectorMode = "auto",
        autoreset_mode: AutoresetLike = AutoresetMode.NEXT_STEP,
        batch_size: int | None = None,
        observation_space: gym.Space | None = None,
        action_space: gym.Space | None = None,
        copy: bool = True,
        options: ConnectOptions | None = None,
        observation_fields: FieldOverrides | None = None,
        action_fields: FieldOverrides | None = None,
        **connect: Unpack[ConnectKwargs],
    ) -> None:
        self._units: list[Unit] = []
        self._loop: LoopThread | InlineRunner | None = None
        urls = [base_url] if isinstance(base_url, str) else list(base_url)
        if isinstance(num_envs, bool) or not isinstance(num_envs, int) or num_envs < 1:
            raise ValueError(f"num_envs must be a positive integer, not {num_envs!r}")
        if not urls:
            raise ValueError("base_url must be a URL or a non-empty list of URLs")
        placed = _placement(base_url, num_envs) if isinstance(base_url, Mapping) else None
        if mode not in ("auto", "batched", "sessions"):
            raise ValueError(f"mode must be 'auto', 'batched' or 'sessions', not {mode!r}")
        self.num_envs = num_envs
        self.batch_size = num_envs if batch_size is None else int(batch_size)
        if not 1 <= self.batch_size <= num_envs:
            raise ValueError(f"batch_size must be between 1 and num_envs={num_envs}, not {batch_size!r}")
        self.autoreset_mode = wire.autoreset_mode(autoreset_mode)
        self.copy = copy
        self.options = ConnectOptions.merge(options, **connect)
        self.message_timeout = self.options.message_timeout
        self.reconnect = self.options.reconnect

        overrides = {"observation_space": observation_space, "action_space": action_space,
                     "observation_fields": observation_fields, "action_fields": action_fields}
        plan = self._plan([http_url(u) for u in urls][:num_envs], placed, mode, overrides)
        self.mode, self.base_urls = plan.mode, plan.urls
        first = plan.contracts[0]
        self.single_observation_space = first.observation_space
        self.single_action_space = first.action_space
        self.observation_space = batch_space(first.observation_space, num_envs)
        self.action_space = batch_space(first.action_space, num_envs)
        self.render_mode = first.render_mode if first.extended else None
        self.metadata = {**first.env_metadata, "autoreset_mode": self.autoreset_mode}
        self.metadata["render_modes"] = [self.render_mode] if self.render_mode else []

        self._inflight: set[int] = set()  # units with a send() in progress
        self._waiting: str | None = None  # "reset" / "step": the *_async call a *_wait collects
        #: Each env's seed, as far as this client set it (-1: the server env's own).
        self._env_seeds = [-1] * num_envs
        self._ready: deque[Batch | BaseException] = deque()
        try:
            self._units = self._open_units(plan)
        except BaseException:
            self.close_extras()  # the runner (a loop thread in sessions mode)
            raise
        #: The unit (server session) stepping each env.
        self._unit_of = np.empty(num_envs, dtype=np.int64)
        for index, unit in enumerate(self._units):
            self._unit_of[unit.env_ids] = index
        #: The env ids of each unit: ``range(*self._blocks[unit])``.
        self._blocks = [(int(unit.env_ids[0]), int(unit.env_ids[-1]) + 1) for unit in self._units]

    # -- planning ---------------------------------------------------------------

    def _plan(
        self,
        urls: list[str],
        placed: list[int] | None,
        mode: VectorMode,
        overrides: dict[str, Any],
    ) -> _Plan:
        """Read every server's ``/schema`` and ``/health``: the mode, and how many
        envs go to which server (``placed``, else least-loaded first)."""
        options = self.options
        read = [read_contract(u, options, **overrides) for u in urls]
        schemas = [schema for schema, _ in read]
        contracts = [contract for _, contract in read]
        first = contracts[0]
        for url, contract in zip(urls[1:], contracts[1:]):
            if (contract.observation_space, contract.action_space) != (first.observation_space, first.action_space):
                raise SpaceMismatchError(
                    f"{url} serves different spaces than {urls[0]} "
                    f"({contract.observation_space} / {contract.action_space} vs "
                    f"{first.observation_space} / {first.action_space}); all servers must serve the same env"
                )
        chosen = self._choose_mode(mode, urls, schemas)
        if chosen == "batched" and self.batch_size < self.num_envs:
            sizes = placed or _least_loaded_split(self.num_envs, [(0, None)] * len(urls))
            if len(set(sizes)) != 1 or self.batch_size % sizes[0]:
                raise ValueError(
                    f"in batched mode a server answers for all its envs at once, so batch_size "
                    f"({self.batch_size}) must be a multiple of the envs per server ({sizes}); "
                    f"adjust num_envs / batch_size or use mode='sessions'"
                )
        elif placed is not None:
            sizes = placed
        elif len(urls) > 1:
            loads = [_server_load(u, options) for u in urls]
            sizes = _least_loaded_split(self.num_envs, loads)
        else:
            sizes = [self.num_envs]
        used = [i for i, size in enumerate(sizes) if size]
        return _Plan(chosen, [urls[i] for i in used], [contracts[i] for i in used], [sizes[i] for i in used])

    @staticmethod
    def _choose_mode(mode: VectorMode, urls: list[str], schemas: list) -> str:
        def offers_vector(schema: Any) -> bool:
            extension = schema.get(EXTENSION_KEY) if isinstance(schema, dict) else None
            vector = extension.get("vector") if isinstance(extension, dict) else None
            return isinstance(vector, dict) and vector.get("version") == wire.VECTOR_VERSION

        lacking = [u for u, s in zip(urls, schemas) if not offers_vector(s)]
        if mode == "batched" and lacking:
            raise ProtocolMismatchError(
                f"{', '.join(lacking)} offer(s) no batched vector sessions (openenv-gym vector "
                f"version {wire.VECTOR_VERSION}); use mode='sessions' or 'auto'"
            )
        if mode == "auto":
            return "sessions" if lacking else "batched"
        return mode

    # -- opening --------------------------------------------------------------

    def _open_units(self, plan: _Plan) -> list[Unit]:
        """Open the units of ``plan``. Batched: one session per server over a
        blocking connection, all driven from this thread (:class:`InlineRunner`:
        no event loop thread to hand each message to, and the replies of several
        servers awaited together). Sessions mode: every env's session on a
        background event loop (:class:`LoopThread`)."""
        batched = plan.mode == "batched"
        options = plan.contracts[0].session_options(self.options, min(plan.sizes) if batched else 1)
        if batched:
            self._loop = InlineRunner()

            async def opener(url: str) -> Session:
                return BlockingSession(RemoteSession(url, options, path=wire.VECTOR_PATH, replies=_VECTOR_REPLIES))
        else:
            self._loop = LoopThread(plan.urls[0])
            opener = functools.partial(AsyncSession.open, options=options, path="/ws", replies=_SESSION_REPLIES)
        recovery = None if self.reconnect is None else Recovery(self.reconnect, self._loop.sleep)
        blocks: list[tuple[int, np.ndarray]] = []  # (server, env ids) per unit
        start = 0
        for server, size in enumerate(plan.sizes):
            ids = np.arange(start, start + size)
            start += size
            blocks.extend([(server, ids)] if batched else [(server, ids[i:i + 1]) for i in range(size)])
        kind = VectorUnit if batched else SessionUnit
        units: list[Unit] = [
            kind(_Connector(plan.urls[server], self.reconnect, opener), plan.contracts[server], ids,
                 self.autoreset_mode, recovery)
            for server, ids in blocks
        ]
        outcomes = self._loop.settle([unit.open() for unit in units])
        errors = [(server, e) for (server, _), e in zip(blocks, outcomes) if isinstance(e, BaseException)]
        if errors:
            opened = [u for u, e in zip(units, outcomes) if not isinstance(e, BaseException)]
            self._loop.settle([u.close() for u in opened])
            capacity = [(server, e) for server, e in errors if isinstance(e, CapacityReachedError)]
            if capacity:
                raise self._capacity_error(*capacity[0], plan.sizes) from capacity[0][1]
            raise errors[0][1]
        return units

    def _capacity_error(self, server: int, error: CapacityReachedError, sizes: list[int]) -> CapacityReachedError:
        url, wanted = self.base_urls[server], sizes[server]
        allowed = error.details.get("max_sessions")
        if allowed is None and (found := re.search(r"(\d+)/(\d+)", error.message)):
            allowed = int(found.group(2))
        allows = f"allows {allowed} sessions at once" if allowed is not None else "refused more sessions"
        what = "a batched vector session of " if self.mode == "batched" else ""
        active = error.details.get("active_sessions")
        busy = f" ({active} in use)" if active is not None else ""
        return CapacityReachedError(
            f"{url} cannot hold {what}{wanted} envs for this RemoteVectorEnv: it {allows}{busy}. "
            f"Start it with room for at least {wanted} (an OpenEnv server: "
            f"create_app(..., max_concurrent_envs={wanted}); an openenv-gym server: "
            f"--max-sessions {wanted}), or ask for fewer envs / add servers",
            requested=wanted,
            **error.details,
        )

    # -- the Gymnasium API ----------------------------------------------------

    def reset(
        self, *, seed: int | Sequence[int | None] | None = None, options: dict[str, Any] | None = None
    ) -> tuple[Any, dict[str, Any]]:
        """Reset all envs, or those of ``options["reset_mask"]`` (a bool array)
        as ``SyncVectorEnv`` does; an int seed gives env ``i`` the seed ``seed + i``."""
        runner = self._live()
        self._drain("reset")
        seeds, options, mask = self._reset_args(seed, options)

        batch = concat_batches(self.single_observation_space, runner.gather([
            unit.reset([seeds[i] for i in unit.env_ids], options, None if mask is None else mask[unit.env_ids])
            for unit in self._units
        ]))
        return self._copy(batch.obs), batch.infos

    def _reset_args(
        self, seed: int | Sequence[int | None] | None, options: dict[str, Any] | None
    ) -> tuple[list, dict[str, Any] | None, np.ndarray | None]:
        """The seed per env, the options, and the ``reset_mask`` of a reset,
        checked as ``SyncVectorEnv`` checks them (the errors it raises)."""
        seeds = self._seeds(seed)
        options = dict(options) if options else None
        mask = options.pop("reset_mask", None) if options else None
        if mask is not None:  # SyncVectorEnv's checks, errors and messages
            if not isinstance(mask, np.ndarray):
                raise TypeError(f"`options['reset_mask']` must be a numpy array, got {type(mask)}")
            if mask.shape != (self.num_envs,):
                raise ValueError(f"`options['reset_mask']` must have shape `({self.num_envs},)`, got {mask.shape}")
            if mask.dtype != np.bool_:
                raise TypeError(f"`options['reset_mask']` must have `dtype=np.bool_`, got {mask.dtype}")
            if not mask.any():
                raise ValueError(
                    f"`options['reset_mask']` must contain a boolean array with at least one True value, "
                    f"got reset_mask={mask}"
                )
        for i, s in enumerate(seeds):
            if s is not None and (mask is None or mask[i]):
                self._env_seeds[i] = int(s)
        return seeds, options, mask

    def step(self, actions: Any) -> tuple[Any, np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
        """Step every env with its entry of ``actions`` (a batch of exactly
        ``num_envs`` actions: ``ValueError`` otherwise, before any env steps)."""
        runner = self._live()
        self._drain("step")
        space = self.single_action_space
        actions = as_batch(space, actions, self.num_envs)

        units = self._units
        if len(units) == 1:
            batch = runner.run(units[0].step(space, actions, None))
        else:
            batch = concat_batches(self.single_observation_space, runner.gather(
                [unit.step(space, actions, unit.env_ids) for unit in units]
            ))
        return self._output(batch, with_ids=False)

    def render(self) -> tuple[Any, ...] | None:
        """The frames of every env (``None`` when the server has no render mode)."""
        if self.render_mode is None:
            return None
        frames = self._live().gather([unit.render() for unit in self._units])
        return tuple(f for unit_frames in frames for f in unit_frames)

    def call(self, name: str, *args: Any, **kwargs: Any) -> tuple[Any, ...]:
        """Call a public method (or read a public attribute) of every sub-env
        (openenv-gym servers, both modes; the arguments and results are data)."""
        return self._forward(lambda ids, local: wire.Call(name, list(args), kwargs, local))

    def call_at(self, indices: Sequence[int], name: str, *args: Any, **kwargs: Any) -> tuple[Any, ...]:
        """:meth:`call` on the sub-envs ``indices`` only, their results in that
        order; the other envs are not touched (Stable-Baselines3's ``env_method``)."""
        return self._forward(lambda ids, local: wire.Call(name, list(args), kwargs, local), indices)

    def get_attr(self, name: str, *, indices: Sequence[int] | None = None) -> tuple[Any, ...]:
        """A public attribute of every sub-env (``indices``: of those, in that
        order), from openenv-gym servers, both modes."""
        return self._forward(lambda ids, local: wire.GetAttr(name, local), indices)

    def set_attr(
        self, name: str, values: list[Any] | tuple[Any, ...] | Any, *, indices: Sequence[int] | None = None
    ) -> None:
        """Set a public attribute of every sub-env (``indices``: of those only):
        one value for all, or a list or tuple of one per env (per index)."""
        ids = list(range(self.num_envs)) if indices is None else self._indices(indices)
        if isinstance(values, (list, tuple)):
            if len(values) != len(ids):
                raise ValueError(f"values must have one entry per env ({len(ids)}), not {len(values)}")
            value_of = dict(zip(ids, values))
        else:
            value_of = dict.fromkeys(ids, values)
        self._forward(lambda ids, local: wire.SetAttr(name, [value_of[i] for i in ids], indices=local), indices)

    def is_wrapped(self, wrapper_class: type | str, *, indices: Sequence[int] | None = None) -> tuple[bool, ...]:
        """Whether each sub-env (``indices``: each of those) is wrapped, on its
        server, by a wrapper of ``wrapper_class`` or of a subclass (a class, or
        its import path ``"package.module.Class"``; the server imports nothing,
        it compares class names): Stable-Baselines3's ``env_is_wrapped``."""
        path = wrapper_class if isinstance(wrapper_class, str) else class_path(wrapper_class)
        return tuple(bool(x) for x in self._forward(lambda ids, local: wire.IsWrapped(path, local), indices))

    @property
    def np_random_seed(self) -> tuple[int, ...]:  # type: ignore[override]  # SyncVectorEnv: one per env
        """The seed of every sub-env's ``np_random``, as ``SyncVectorEnv`` gives
        them: from the servers (openenv-gym ones); from stock servers, the seeds
        this client reset the envs with, ``-1`` for those it never seeded."""
        if all(unit.contract.attributes for unit in self._units):
            return tuple(int(s) for s in self.get_attr("np_random_seed"))
        return tuple(self._env_seeds)

    def _forward(
        self, message: Callable[[list[int], list[int] | None], Any], indices: Sequence[int] | None = None
    ) -> tuple[Any, ...]:
        """The per-env values of the attribute messages ``message(ids, local)``,
        one to each unit holding envs of ``indices`` (``None``: every unit):
        ``ids`` are its env ids among them, in their order, and ``local`` their
        indices within its session (``None`` when that is all its envs, and
        always for a one-env ``/ws`` unit). The values come in the order of ``indices``."""
        ids = list(range(self.num_envs)) if indices is None else self._indices(indices)
        asked: dict[int, list[int]] = {}  # unit -> its env ids among ids, in the order of ids
        for i in ids:
            asked.setdefault(int(self._unit_of[i]), []).append(i)
        calls = []
        for u, unit_ids in asked.items():
            start = self._blocks[u][0]
            everyone = indices is None or isinstance(self._units[u], SessionUnit)
            calls.append(self._units[u].call(message(unit_ids, None if everyone else [i - start for i in unit_ids])))
        results = self._live().gather(calls)
        value_of = {i: r for unit_ids, values in zip(asked.values(), results) for i, r in zip(unit_ids, values)}
        return tuple(value_of[i] for i in ids) if value_of else ()  # set_attr's replies hold no values

    def _indices(self, indices: Sequence[int]) -> list[int]:
        """``indices`` as distinct env ids in ``[0, num_envs)`` (negative ones count from the end)."""
        n = self.num_envs
        try:
            ids = [int(i) + n if int(i) < 0 else int(i) for i in indices]
        except (TypeError, ValueError):
            raise TypeError(f"indices must be a sequence of env indices, not {indices!r}") from None
        if any(not 0 <= i < n for i in ids) or len(set(ids)) != len(ids):
            raise ValueError(f"indices must be distinct env indices in [-{n}, {n}), not {list(indices)!r}")
        return ids

    # -- partial batches (EnvPool's send / recv) --------------------------------

    def send(self, actions: Any, env_ids: Sequence[int] | np.ndarray | None = None) -> None:
        """Start stepping the envs ``env_ids`` (default: all) with ``actions``
        (batched in the order of ``env_ids``); returns at once. Collect the
        results with :meth:`recv`. ``ValueError``, before anything is sent, for
        ids that repeat or are out of range, for only some of the envs of one
        server session (they step together), for envs still stepping, and for
        ``actions`` without exactly one entry per id.

        In batched mode the actions are on their way when it returns (the
        caller's buffer is free again), and no thread or event loop is
        involved: :meth:`recv` waits for every server's reply at once.
        """
        runner = self._live()
        n = self.num_envs
        ids = np.arange(n) if env_ids is None else np.asarray(env_ids).reshape(-1)
        if ids.size == 0 or ids.dtype.kind not in "iu" or (low := ids.min()) < 0 or (high := ids.max()) >= n:
            raise ValueError(f"env_ids must be distinct env ids in [0, {n}), not {env_ids!r}")
        space = self.single_action_space
        actions = as_batch(space, actions, ids.size)
        plan = self._send_plan(ids, low, high, env_ids)
        if isinstance(runner, LoopThread):  # the steps read the actions later, on the loop
            actions = deepcopy(actions)  # the caller may reuse its buffer before then
        for index, rows in plan:
            self._start(index, self._units[index].step(space, actions, rows))

    def _send_plan(
        self, ids: np.ndarray, low: int, high: int, env_ids: Any
    ) -> list[tuple[int, np.ndarray]]:
        """The units a ``send`` of ``ids`` steps, each with the entries of
        ``actions`` its envs take; ``ValueError`` for ids that repeat, that
        cover a unit in part, or whose unit is still stepping."""
        n = self.num_envs
        position = np.full(n, -1, dtype=np.int64)  # each env's entry in actions (-1: none)
        position[ids] = np.arange(ids.size)
        plan = []
        covered = 0
        for index in range(self._unit_of[low], self._unit_of[high] + 1):  # units hold blocks of env ids, in order
            start, stop = self._blocks[index]
            rows = position[start:stop]
            if rows.max() < 0:
                continue  # none of its envs
            unit = self._units[index]
            if index in self._inflight:
                raise ValueError(f"envs {unit.env_ids.tolist()} are still stepping: recv() them first")
            if rows.min() < 0:
                raise ValueError(
                    f"envs {unit.env_ids.tolist()} share one batched server session and are "
                    f"stepped together: send actions for all of them at once"
                )
            plan.append((index, rows))
            covered += rows.size
        if covered != ids.size:  # every id is in a unit of the plan: some came twice
            raise ValueError(f"env_ids must be distinct env ids in [0, {n}), not {env_ids!r}")
        return plan

    def async_reset(self, *, seed: int | Sequence[int | None] | None = None,
                    options: dict[str, Any] | None = None) -> None:
        """Reset every env in the background, like EnvPool's ``async_reset``:
        :meth:`recv` then returns the reset observations, ``batch_size`` at a time."""
        self._live()
        self._drain("async_reset")
        seeds, options, mask = self._reset_args(seed, options)

        for index, unit in enumerate(self._units):
            rows = None if mask is None else mask[unit.env_ids]
            self._start(index, unit.reset([seeds[i] for i in unit.env_ids], options, rows))

    def recv(self) -> tuple[Any, np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
        """The first ``batch_size`` envs to answer, with their ids in ``info["env_id"]``."""
        return self._output(self._collect(self.batch_size, None), with_ids=True)

    def _collect(self, n: int, timeout: float | None, *, in_order: bool = False) -> Batch:
        """The first ``n`` envs to answer (in env order with ``in_order``),
        waiting at most ``timeout`` seconds (``message_timeout`` when ``None``)."""
        limit = self.message_timeout if timeout is None else timeout

        def enough() -> bool:
            ready = sum(len(b) for b in self._ready if isinstance(b, Batch))
            if ready >= n or self._failed():
                return True
            if ready + sum(self._units[i].size for i in self._inflight) < n:
                raise ValueError(
                    f"recv() returns {n} envs but only {ready + sum(self._units[i].size for i in self._inflight)} "
                    f"were sent; send() actions for more envs first"
                )
            return False

        if not self._live().wait_until(enough, limit):
            kind = MessageTimeoutError if timeout is None else WaitTimeoutError
            raise kind(f"no env answered within {limit} s")
        batches: list[Batch] = []
        while sum(len(b) for b in batches) < n:
            item = self._ready.popleft()
            if isinstance(item, BaseException):
                raise item
            batches.append(item)
        if in_order:
            batches.sort(key=lambda b: int(b.env_ids[0]))
        return concat_batches(self.single_observation_space, batches)

    # -- AsyncVectorEnv's API, on send / recv -----------------------------------

    def reset_async(self, seed: int | Sequence[int | None] | None = None,
                    options: dict[str, Any] | None = None) -> None:
        """``AsyncVectorEnv.reset_async``: start resetting the envs (all, or those
        of ``options["reset_mask"]``); :meth:`reset_wait` collects them."""
        self._begin("reset_async")
        self.async_reset(seed=seed, options=options)
        self._waiting = "reset"

    def reset_wait(self, timeout: float | None = None) -> tuple[Any, dict[str, Any]]:
        """``AsyncVectorEnv.reset_wait``: the observations and infos of the reset
        :meth:`reset_async` started; ``multiprocessing.TimeoutError`` (a
        :class:`~openenv_gym.errors.WaitTimeoutError`) after ``timeout`` seconds."""
        batch = self._wait("reset", timeout)
        return self._copy(batch.obs), batch.infos

    def step_async(self, actions: Any) -> None:
        """``AsyncVectorEnv.step_async``: start stepping every env; :meth:`step_wait` collects them."""
        self._begin("step_async")
        self.send(actions)
        self._waiting = "step"

    def step_wait(self, timeout: float | None = None) -> tuple[Any, np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
        """``AsyncVectorEnv.step_wait``: the results of the step :meth:`step_async`
        started, in env order; ``multiprocessing.TimeoutError`` (a
        :class:`~openenv_gym.errors.WaitTimeoutError`) after ``timeout`` seconds."""
        return self._output(self._wait("step", timeout), with_ids=False)

    def _begin(self, call: str) -> None:
        self._live()
        if self._waiting is not None:
            raise PendingCallError(
                f"Calling `{call}` while waiting for a pending call to `{self._waiting}` to complete.", self._waiting
            )

    def _wait(self, what: str, timeout: float | None) -> Batch:
        self._live()
        if self._waiting != what:
            raise NoPendingCallError(f"Calling `{what}_wait` without any prior call to `{what}_async`.", what)
        try:
            batch = self._collect(self.num_envs, timeout, in_order=True)
        except WaitTimeoutError:
            raise  # still waiting: a later *_wait collects the answers
        except BaseException:
            self._waiting = None
            raise
        self._waiting = None
        return batch

    def _start(self, index: int, coro: Any) -> None:
        """Run one unit's request in the background; its answer joins the ready queue."""
        self._inflight.add(index)

        def finished(outcome: Batch | BaseException) -> None:
            self._inflight.discard(index)
            self._ready.append(outcome)

        self._live().start(coro, finished)

    def _failed(self) -> bool:
        return any(isinstance(b, BaseException) for b in self._ready)

    def _drain(self, what: str) -> None:
        """Lockstep calls need every env idle: refuse while a send() is in flight,
        and drop answers nobody received (as EnvPool's reset does)."""
        if self._waiting is not None:
            raise PendingCallError(
                f"Calling `{what}` while waiting for a pending call to `{self._waiting}` to complete.", self._waiting
            )
        if self._inflight:
            raise PendingCallError(
                f"{what}() while envs are still stepping after send(): recv() them first", "send"
            )
        self._ready.clear()

    # -- helpers ----------------------------------------------------------------

    def _seeds(self, seed: int | Sequence[int | None] | None) -> list:
        if seed is None:
            return [None] * self.num_envs
        if isinstance(seed, (int, np.integer)) and not isinstance(seed, bool):
            return [int(seed) + i for i in range(self.num_envs)]
        seeds = list(seed)  # type: ignore[arg-type]  # a bool was refused above, as an int
        if len(seeds) != self.num_envs:
            raise ValueError(
                f"If seeds are passed as a list the length must match num_envs={self.num_envs} "
                f"but got length={len(seeds)}."
            )
        return seeds

    def _copy(self, obs: Any) -> Any:
        """``obs`` as the caller gets it: a copy, or with ``copy=False`` the
        batch itself, but never a read-only view of a received frame."""
        if not self.copy:
            return owned_arrays(obs)
        return obs.copy() if type(obs) is np.ndarray else deepcopy(obs)  # one array: no memo to keep

    def _output(self, batch: Batch, *, with_ids: bool) -> tuple:
        infos = batch.infos
        if with_ids:
            infos = {**infos, "env_id": batch.env_ids.astype(np.int32), "_env_id": np.ones(len(batch), np.bool_)}
        rewards, terminations, truncations = batch.rewards, batch.terminations, batch.truncations
        if self.copy:
            rewards, terminations, truncations = np.array(rewards), np.array(terminations), np.array(truncations)
        return self._copy(batch.obs), rewards, terminations, truncations, infos

    def _live(self) -> LoopThread | InlineRunner:
        if self._loop is None or self.closed:
            raise EnvClosedError("this RemoteVectorEnv is closed; create a new one to reconnect")
        return self._loop

    def close_extras(self, **kwargs: Any) -> None:
        """Close every session and stop the event loop (idempotent); a pending
        ``*_async`` call is dropped with the warning ``AsyncVectorEnv`` gives."""
        loop, self._loop = getattr(self, "_loop", None), None
        if loop is None:
            return
        if self._waiting is not None:
            gym.logger.warn(f"Calling `close` while waiting for a pending call to `{self._waiting}` to complete.")
            self._waiting = None
        units, self._units = self._units, []

        async def close_all() -> None:
            closing = asyncio.gather(*(u.close() for u in units), return_exceptions=True)
            await asyncio.wait_for(closing, 10.0)

        try:
            if isinstance(loop, InlineRunner):
                loop.settle([unit.close() for unit in units])
            elif units:
                loop.run(close_all())
        except Exception:  # noqa: BLE001 - closing must not raise
            pass
        finally:
            loop.close()

    def __repr__(self) -> str:
        servers = self.base_urls[0] if len(self.base_urls) == 1 else f"{len(self.base_urls)} servers"
        return f"<RemoteVectorEnv {servers} num_envs={self.num_envs} mode={self.mode}>"
