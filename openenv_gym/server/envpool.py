"""EnvPool behind Gymnasium's APIs: a vector env in any autoreset mode, and one env.

`EnvPool <https://github.com/sail-sg/envpool>`_ steps many envs of one task on a C++
thread pool, an order of magnitude faster than a ``SyncVectorEnv`` of Python envs.
Its pools already speak Gymnasium's vector API with one difference in each of three
places, which :class:`EnvPoolVectorEnv` removes so that a server (or any Gymnasium
code) can use a pool wherever it uses a ``SyncVectorEnv``:

- **Autoreset.** A pool resets an env on the step after its episode ended (Gymnasium's
  ``NEXT_STEP``). ``SAME_STEP`` is done exactly with the pool's own partial batches:
  the ended envs take one more step, which resets them, in the same call; their last
  observation and info go to ``infos["final_obs"]`` / ``infos["final_info"]`` as
  ``SyncVectorEnv`` puts them. ``DISABLED`` refuses to step an env that ended until a
  ``reset(options={"reset_mask": ...})`` restarts it (a pool would restart it silently).
- **Seeding.** A pool is seeded when it is built (env ``i`` with ``seed + i``, as
  Gymnasium seeds a vector env), and ignores ``reset(seed=...)``. Here a seeded reset
  builds a new pool with those seeds, so ``reset(seed=42)`` means what it means for
  ``SyncVectorEnv``: the same episodes every time. (Only a whole reset can be seeded:
  a pool cannot reseed one env.)
- **Rewards** are float64, as Gymnasium's vector envs give them (a pool's are float32).
- **Infos.** Every info entry comes with its ``_key`` mask, as Gymnasium's vector envs
  give them. A single-player pool's ``players`` entry (a copy of ``env_id``) is left out.

A pool is made by a *pool factory*: any callable taking EnvPool's ``make`` keywords
(``num_envs``, ``batch_size``, ``seed``, ``env_seed``) and returning a Gymnasium-API
pool, such as ``functools.partial(envpool.make, "Pong-v5", env_type="gymnasium")``.
:func:`task_factory` is that for a task id. Servers take ``"envpool:TASK"``
(``openenv-gym serve envpool:CartPole-v1``) or such a factory.

    >>> import numpy as np
    >>> envs = EnvPoolVectorEnv(task_factory("CartPole-v1"), num_envs=4, autoreset_mode="SameStep")
    >>> obs, infos = envs.reset(seed=42)
    >>> obs.shape, infos["env_id"]
    ((4, 4), array([0, 1, 2, 3], dtype=int32))
    >>> obs, rewards, terminations, truncations, infos = envs.step(np.zeros(4, dtype=np.int64))
    >>> rewards
    array([1., 1., 1., 1.])
    >>> envs.close()

Needs the ``envpool`` extra (``pip install 'openenv-gym[envpool]'``).
"""

from __future__ import annotations

import functools
import warnings
from collections.abc import Callable
from typing import Any, ClassVar

import gymnasium as gym
import numpy as np
from gymnasium.vector import AutoresetMode
from gymnasium.vector.utils import batch_space, concatenate, create_empty_array

__all__ = ["EnvPoolVectorEnv", "EnvPoolEnv", "PoolFactory", "task_factory", "is_pool", "ENVPOOL_PREFIX"]

#: How a server names an EnvPool task: ``"envpool:CartPole-v1"``.
ENVPOOL_PREFIX = "envpool:"

#: Builds a pool from EnvPool's ``make`` keywords (``num_envs``, ``batch_size``, ``seed``, ``env_seed``).
PoolFactory = Callable[..., Any]

_NOT_OBJECTS = (
    "EnvPool steps its envs in C++: there are no Python envs to {what}; "
    "serve the Gymnasium env with vector_backend='sync' for that"
)

#: EnvPool's seeds are C ``int``s.
_SEED_BOUND = 2**31 - 1


def is_pool(obj: Any) -> bool:
    """Whether ``obj`` is an EnvPool pool (what a pool factory returns)."""
    return all(hasattr(obj, name) for name in ("send", "recv", "config", "all_env_ids"))


def task_factory(task: str, **make_kwargs: Any) -> PoolFactory:
    """The pool factory of an EnvPool task id (``"CartPole-v1"``, ``"Pong-v5"``), with
    EnvPool's own ``make`` options (``num_threads``, ``frame_skip``, ...).

    Raises:
        ImportError: when EnvPool is not installed.
        ValueError: when EnvPool has no such task.
    """
    envpool = _envpool()
    if task not in envpool.list_all_envs():
        raise ValueError(
            f"EnvPool has no task {task!r}; its tasks are listed by envpool.list_all_envs()"
        )
    return functools.partial(envpool.make, task, env_type="gymnasium", **make_kwargs)


def _envpool() -> Any:
    try:
        import envpool
    except ImportError as exc:
        raise ImportError(
            "EnvPool tasks need the envpool package: pip install 'openenv-gym[envpool]'"
        ) from exc
    return envpool


class EnvPoolVectorEnv(gym.vector.VectorEnv):
    """A Gymnasium vector env of ``num_envs`` envs stepped by one EnvPool pool, in any
    autoreset mode (see the module's docstring for what differs from a raw pool).

    Args:
        make_pool: a pool factory (:func:`task_factory`, or any callable taking EnvPool's
            ``make`` keywords).
        num_envs: the number of envs.
        autoreset_mode: Gymnasium's autoreset mode (``NEXT_STEP`` is the pool's own).
        seed: the seed of the first pool (env ``i`` gets ``seed + i``); a random one if ``None``.

    Observations are the pool's own arrays, which a later call does not overwrite.
    """

    #: Its calls wait for the pool's C++ threads: a server judges their speed by the
    #: process's CPU, not the calling thread's (:func:`~openenv_gym.server.latency.usage_for`).
    computes_on_own_threads: ClassVar[bool] = True

    def __init__(
        self,
        make_pool: PoolFactory,
        num_envs: int,
        *,
        autoreset_mode: str | AutoresetMode = AutoresetMode.NEXT_STEP,
        seed: int | None = None,
    ) -> None:
        if num_envs < 1:
            raise ValueError(f"an EnvPool vector env needs at least one env, not {num_envs}")
        self.num_envs = num_envs
        self.autoreset_mode = AutoresetMode(autoreset_mode)
        self._make_pool = make_pool
        self._seeds = self._spread(seed)
        self._pool = self._build(self._seeds)
        #: Whether the pool has stepped or reset since it was built with ``_seeds``.
        self._used = False
        self.single_observation_space = self._pool.observation_space
        self.single_action_space = self._pool.action_space
        self.observation_space = batch_space(self.single_observation_space, num_envs)
        self.action_space = batch_space(self.single_action_space, num_envs)
        self.metadata = {**getattr(self._pool, "metadata", {}), "autoreset_mode": self.autoreset_mode}
        self.spec = None
        self.render_mode = None
        self._single_player = int(self._pool.config.get("max_num_players", 1)) == 1
        self._obs: Any = None
        #: Envs whose episode ended (``DISABLED``: they must be reset before they step).
        self._ended = np.zeros(num_envs, dtype=np.bool_)

    @property
    def pool(self) -> Any:
        """The EnvPool pool stepping the envs (rebuilt by a seeded reset)."""
        return self._pool

    # -- seeding -----------------------------------------------------------------------

    def _spread(self, seed: int | list[int | None] | None) -> list[int]:
        """Per-env seeds: ``seed + i`` for an int, random for ``None`` (entries)."""
        if isinstance(seed, (list, tuple, np.ndarray)):
            if len(seed) != self.num_envs:
                raise ValueError(f"a list of seeds needs {self.num_envs} entries, not {len(seed)}")
            seeds = [int(s) if s is not None else None for s in seed]
        elif seed is None:
            seeds = [None] * self.num_envs
        else:
            seeds = [int(seed) + i for i in range(self.num_envs)]
        fresh = np.random.SeedSequence().generate_state(self.num_envs, dtype=np.uint32) % _SEED_BOUND
        out = [int(f) if s is None else s for s, f in zip(seeds, fresh, strict=True)]
        bad = next((s for s in out if not 0 <= s <= _SEED_BOUND), None)
        if bad is not None:
            raise ValueError(f"EnvPool seeds are from 0 to {_SEED_BOUND}, not {bad}")
        return out

    def _build(self, seeds: list[int]) -> Any:
        with warnings.catch_warnings():  # EnvPool's float64 bounds of float32 Boxes, at every build
            warnings.filterwarnings("ignore", message=".*precision lowered by casting", category=UserWarning)
            pool = self._make_pool(num_envs=self.num_envs, batch_size=self.num_envs, seed=seeds[0], env_seed=seeds)
            pool.observation_space, pool.action_space  # noqa: B018 - built (and warned about) here
        if not is_pool(pool):
            raise TypeError(f"the pool factory returned {type(pool).__name__}, not an EnvPool pool")
        return pool

    # -- the vector API ----------------------------------------------------------------

    def reset(
        self, *, seed: int | list[int | None] | None = None, options: dict[str, Any] | None = None
    ) -> tuple[Any, dict[str, Any]]:
        """Reset every env, or those of ``options["reset_mask"]``; a seed reseeds all envs."""
        options = dict(options or {})
        mask = options.pop("reset_mask", None)
        if options:
            raise ValueError(f"EnvPool envs take no reset options but reset_mask, not {sorted(options)}")
        if mask is not None:
            ids = self._masked(mask, seed)
            obs, info = self._pool.reset(ids)
            self._ended[ids] = False
            self._obs = self._scattered(self._obs, obs, ids)
            return self._obs, self._infos(info, ids)
        if seed is not None:
            seeds = self._spread(seed)
            if self._used or seeds != self._seeds:
                self._pool.close()
                self._seeds, self._pool = seeds, self._build(seeds)
            self._np_random_seed = seed if isinstance(seed, int) else -1
        self._used = True
        obs, info = self._pool.reset()
        self._ended[:] = False
        self._obs = obs
        return obs, self._infos(info, None)

    def _masked(self, mask: Any, seed: Any) -> np.ndarray:
        mask = np.asarray(mask)
        if mask.dtype != np.bool_:
            raise TypeError(f"options['reset_mask'] must have dtype bool, not {mask.dtype}")
        if mask.shape != (self.num_envs,) or not mask.any():
            raise ValueError(f"options['reset_mask'] must be {self.num_envs} booleans with at least one true")
        if self._obs is None:
            raise ValueError("reset every env (no reset_mask) before a masked reset")
        if seed is not None:
            raise ValueError(
                "EnvPool seeds its envs when it builds them: only a reset of every env "
                "(no reset_mask) can take a seed"
            )
        return np.flatnonzero(mask).astype(np.int32)

    def step(self, actions: Any) -> tuple[Any, np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
        """Step every env, autoresetting as :attr:`autoreset_mode` says."""
        if self._obs is None:
            raise ValueError("call reset before step")
        if self.autoreset_mode is AutoresetMode.DISABLED and self._ended.any():
            raise ValueError(
                f"envs {np.flatnonzero(self._ended).tolist()} ended: with autoreset mode "
                f"DISABLED, reset them (options={{'reset_mask': ...}}) before they step"
            )
        obs, rewards, terminations, truncations, info = self._pool.step(actions)
        rewards = rewards.astype(np.float64)
        infos = self._infos(info, None)
        ended = terminations | truncations
        if self.autoreset_mode is AutoresetMode.SAME_STEP and ended.any():
            obs, infos = self._restart(actions, obs, infos, ended)
        elif self.autoreset_mode is AutoresetMode.DISABLED:
            self._ended = ended
        self._obs = obs
        return obs, rewards, terminations, truncations, infos

    def _restart(self, actions: Any, obs: Any, infos: dict[str, Any], ended: np.ndarray) -> tuple[Any, dict]:
        """``SAME_STEP``: the ended envs' next step (the pool resets them), in this call."""
        ids = np.flatnonzero(ended).astype(np.int32)
        final_obs = np.full(self.num_envs, None, dtype=object)
        for i in ids.tolist():
            final_obs[i] = _row(obs, i)
        final_info = _rows(infos, ended)
        new_obs, _, _, _, info = self._pool.step(_take(self.single_action_space, actions, ids), ids)
        obs = self._scattered(obs, new_obs, ids)
        for key, value in self._infos(info, ids).items():
            infos[key] = _merged(infos[key], value, ids) if key in infos else value
        infos.update(final_obs=final_obs, _final_obs=ended.copy(), final_info=final_info, _final_info=ended.copy())
        return obs, infos

    def _scattered(self, full: Any, part: Any, ids: np.ndarray) -> Any:
        """``full`` with rows ``ids`` replaced by ``part`` (a copy: earlier replies keep theirs)."""
        out = _copied(full)
        _assign(out, part, ids)
        return out

    def _infos(self, info: dict[str, Any], ids: np.ndarray | None) -> dict[str, Any]:
        """The pool's info as Gymnasium's vector infos: full-length entries with ``_key``
        masks (rows ``ids`` only, when given)."""
        mask = np.ones(self.num_envs, dtype=np.bool_)
        if ids is not None:
            mask = np.zeros(self.num_envs, dtype=np.bool_)
            mask[ids] = True
        out: dict[str, Any] = {}
        for key, value in info.items():
            if key == "players" and self._single_player:
                continue
            if isinstance(value, dict):
                out[key] = self._infos(value, ids)
            elif ids is None:
                out[key] = np.asarray(value)
            else:
                value = np.asarray(value)
                full = np.zeros((self.num_envs, *value.shape[1:]), dtype=value.dtype)
                full[ids] = value
                out[key] = full
            out[f"_{key}"] = mask.copy()
        return out

    def render(self) -> Any:
        return self._pool.render()

    def call(self, name: str, *args: Any, **kwargs: Any) -> tuple[Any, ...]:
        """Refused: an EnvPool env is not a Python object whose methods one could call."""
        raise AttributeError(_NOT_OBJECTS.format(what=f"call {name!r} on"))

    def get_attr(self, name: str) -> tuple[Any, ...]:
        """Refused, as :meth:`call`."""
        raise AttributeError(_NOT_OBJECTS.format(what=f"read {name!r} of"))

    def set_attr(self, name: str, values: Any) -> None:
        """Refused, as :meth:`call`."""
        raise AttributeError(_NOT_OBJECTS.format(what=f"set {name!r} of"))

    def close_extras(self, **kwargs: Any) -> None:
        self._pool.close()


class EnvPoolEnv(gym.Env):
    """One env of an EnvPool task, as a ``gymnasium.Env`` (a pool of one): what a
    server's ``/ws`` sessions and HTTP routes serve for an ``"envpool:TASK"``.

        >>> env = EnvPoolEnv(task_factory("CartPole-v1"))
        >>> obs, info = env.reset(seed=7)
        >>> obs.shape, env.action_space
        ((4,), Discrete(2))
        >>> env.close()
    """

    #: As :attr:`EnvPoolVectorEnv.computes_on_own_threads`: a pool of one steps it.
    computes_on_own_threads: ClassVar[bool] = True

    def __init__(self, make_pool: PoolFactory) -> None:
        self._envs = EnvPoolVectorEnv(make_pool, 1, autoreset_mode=AutoresetMode.DISABLED)
        self.observation_space = self._envs.single_observation_space
        self.action_space = self._envs.single_action_space
        self._actions: Any = create_empty_array(self.action_space, 1, fn=np.zeros)

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[Any, dict]:
        super().reset(seed=seed)
        obs, infos = self._envs.reset(seed=seed, options=options)
        return _row(obs, 0), _info_row(infos, 0)

    def step(self, action: Any) -> tuple[Any, float, bool, bool, dict]:
        actions = concatenate(self.action_space, [action], self._actions)
        obs, rewards, terminations, truncations, infos = self._envs.step(actions)
        return _row(obs, 0), float(rewards[0]), bool(terminations[0]), bool(truncations[0]), _info_row(infos, 0)

    def close(self) -> None:
        self._envs.close()


# -- batched values ----------------------------------------------------------------------


def _row(batch: Any, i: int) -> Any:
    """Entry ``i`` of a batched value (a copy)."""
    if isinstance(batch, dict):
        return {key: _row(value, i) for key, value in batch.items()}
    if isinstance(batch, tuple):
        return tuple(_row(value, i) for value in batch)
    return np.array(batch[i])


def _copied(batch: Any) -> Any:
    if isinstance(batch, dict):
        return {key: _copied(value) for key, value in batch.items()}
    if isinstance(batch, tuple):
        return tuple(_copied(value) for value in batch)
    return np.array(batch)


def _assign(out: Any, part: Any, ids: np.ndarray) -> None:
    """Write the rows of ``part`` (one per id) into rows ``ids`` of ``out``."""
    if isinstance(out, dict):
        for key in out:
            _assign(out[key], part[key], ids)
    elif isinstance(out, tuple):
        for o, p in zip(out, part, strict=True):
            _assign(o, p, ids)
    else:
        out[ids] = part


def _take(space: gym.Space, batch: Any, ids: np.ndarray) -> Any:
    """Rows ``ids`` of a batched value of ``space``."""
    if isinstance(batch, dict):
        return {key: _take(space[key], value, ids) for key, value in batch.items()}  # type: ignore[index]
    if isinstance(batch, tuple):
        return tuple(_take(s, value, ids) for s, value in zip(space, batch, strict=True))  # type: ignore[call-overload]
    return np.asarray(batch)[ids]


def _rows(infos: dict[str, Any], mask: np.ndarray) -> dict[str, Any]:
    """The vector infos of the envs of ``mask`` only (their ``_key`` masks narrowed)."""
    out: dict[str, Any] = {}
    for key, value in infos.items():
        if key.startswith("_"):
            out[key] = value & mask
        elif isinstance(value, dict):
            out[key] = _rows(value, mask)
        else:
            out[key] = value.copy()
    return out


def _merged(old: Any, new: Any, ids: np.ndarray) -> Any:
    """Vector info entry ``old`` with rows ``ids`` taken from ``new`` (both full length)."""
    if new is None:
        return old
    if isinstance(old, dict):
        return {key: _merged(value, new.get(key), ids) for key, value in old.items()}
    out = old.copy()
    out[ids] = new[ids]
    return out


def _info_row(infos: dict[str, Any], i: int) -> dict[str, Any]:
    """One env's info from vector infos (the entries its masks mark)."""
    out: dict[str, Any] = {}
    for key, value in infos.items():
        if key.startswith("_") or not infos.get(f"_{key}", np.ones(i + 1, bool))[i]:
            continue
        out[key] = _info_row(value, i) if isinstance(value, dict) else value[i]
    return out
