"""Gymnasium's vector envs as the adapted suites see them: ``RemoteVectorEnv`` s
serving the test's own env factories.

The adaptation (:mod:`tests.conformance.adapt`) rebinds ``SyncVectorEnv``,
``AsyncVectorEnv`` and ``gym.make_vec`` in Gymnasium's test modules to the
names here. Each takes Gymnasium's arguments, mounts servers for the env
factories on the session's :class:`~tests.conformance.hosting.AppHost` and
connects a :class:`~openenv_gym.RemoteVectorEnv` to them, in the variant
named by :data:`VARIANT_ENV`:

========================  ==========  =====================================
variant                   mode        servers
========================  ==========  =====================================
``sessions-each``         sessions    one server per env, serving its factory
``sessions-shared``       sessions    one server for all, serving the first factory
``batched-each``          batched     one server per env
``batched-shared``        batched     one server for all
========================  ==========  =====================================

Arguments that say how a local process pool works (``shared_memory``,
``context``, ``daemon``, ``worker``) have no remote meaning and are ignored.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from typing import Any

import gymnasium as gym
from gymnasium.vector import AutoresetMode

import openenv_gym

from . import hosting

__all__ = ["VARIANTS", "VARIANT_ENV", "variant", "SyncVectorEnv", "AsyncVectorEnv", "make_vec"]

#: ``variant: (mode, servers)``.
VARIANTS = {
    "sessions-each": ("sessions", "each"),
    "sessions-shared": ("sessions", "shared"),
    "batched-each": ("batched", "each"),
    "batched-shared": ("batched", "shared"),
}
#: The environment variable naming the variant a run of the adapted suite uses.
VARIANT_ENV = "OPENENV_GYM_CONFORMANCE_VARIANT"

def variant() -> tuple[str, str]:
    name = os.environ.get(VARIANT_ENV, "sessions-each")
    if name not in VARIANTS:
        raise ValueError(f"{VARIANT_ENV} must be one of {', '.join(VARIANTS)}, not {name!r}")
    return VARIANTS[name]


def _serve(env_fns: Sequence[Callable[[], gym.Env]], observation_mode: Any) -> dict[str, Any]:
    """Servers for ``env_fns`` in this run's variant: ``RemoteVectorEnv``'s
    ``base_url``, ``num_envs`` and ``mode``."""
    host = hosting.current_host()
    if observation_mode != "same":
        raise ValueError(
            f"observation_mode={observation_mode!r}: a RemoteVectorEnv batches the one observation space its servers share"
        )
    env_fns = list(env_fns)
    if not env_fns:
        raise ValueError("a vector env needs at least one env factory")
    mode, servers = variant()
    if servers == "each":
        urls = [host.serve(fn, max_sessions=4) for fn in env_fns]
    else:
        urls = [host.serve(env_fns[0], max_sessions=len(env_fns) + 4)]
    return {"base_url": urls, "num_envs": len(env_fns), "mode": mode}


class SyncVectorEnv(openenv_gym.RemoteVectorEnv):
    """``SyncVectorEnv``'s signature, remote envs."""

    def __init__(
        self,
        env_fns: Sequence[Callable[[], gym.Env]],
        copy: bool = True,
        observation_mode: Any = "same",
        autoreset_mode: AutoresetMode | str = AutoresetMode.NEXT_STEP,
    ) -> None:
        super().__init__(**_serve(env_fns, observation_mode), autoreset_mode=autoreset_mode, copy=copy)
        hosting.track(self)


class AsyncVectorEnv(openenv_gym.RemoteVectorEnv):
    """``AsyncVectorEnv``'s signature, remote envs (``step_async`` / ``step_wait``
    and ``reset_async`` / ``reset_wait`` are RemoteVectorEnv's own)."""

    def __init__(
        self,
        env_fns: Sequence[Callable[[], gym.Env]],
        shared_memory: bool = True,
        copy: bool = True,
        context: str | None = None,
        daemon: bool = True,
        worker: Callable | None = None,
        observation_mode: Any = "same",
        autoreset_mode: AutoresetMode | str = AutoresetMode.NEXT_STEP,
    ) -> None:
        super().__init__(**_serve(env_fns, observation_mode), autoreset_mode=autoreset_mode, copy=copy)
        hosting.track(self)


#: ``AsyncVectorEnv`` arguments ``SyncVectorEnv`` does not take.
_POOL_ONLY = ("shared_memory", "context", "daemon", "worker")


def make_vec(
    id: str | gym.envs.registration.EnvSpec,
    num_envs: int = 1,
    vectorization_mode: Any = None,
    vector_kwargs: dict[str, Any] | None = None,
    wrappers: Sequence[Callable[[gym.Env], gym.Wrapper]] | None = None,
    **kwargs: Any,
) -> gym.vector.VectorEnv:
    """``gym.make_vec``, remote for the ``sync`` and ``async`` modes: the env
    factories are the very ones ``gym.make_vec`` builds (it is called in
    ``sync`` mode, and its ``env_fns`` served). A vector entry point is
    Gymnasium's own vector env and stays local."""
    spec = gym.spec(id) if isinstance(id, str) else id
    mode = vectorization_mode
    if mode is None:
        mode = "vector_entry_point" if spec.vector_entry_point is not None else "sync"
    mode = getattr(mode, "value", mode)
    if mode not in ("sync", "async"):
        return gym.make_vec(id, num_envs, vectorization_mode, vector_kwargs, wrappers, **kwargs)
    vector_kwargs = dict(vector_kwargs or {})
    pool = {k: vector_kwargs.pop(k) for k in _POOL_ONLY if k in vector_kwargs}
    local = gym.make_vec(id, num_envs, "sync", vector_kwargs, wrappers, **kwargs)
    try:
        env_fns = list(local.env_fns)
    finally:
        local.close()
    kind = SyncVectorEnv if mode == "sync" else AsyncVectorEnv
    return kind(env_fns, **pool, **vector_kwargs)
