"""RLlib's EnvRunners stepping envs from a pool.

``pip install 'openenv-gym[rllib]'``. Each EnvRunner gets one
:class:`~openenv_gym.ray.PoolVectorEnv` (RLlib's ``vector_entry_point``
vectorization), leased from the pool by name, so any number of runners share
the pool's servers without oversubscribing one; a runner that dies gives its
slots back. Nothing else in the algorithm's config changes::

    from ray.rllib.algorithms.ppo import PPOConfig
    import openenv_gym.ray as oray
    from openenv_gym.ray.rllib import pool_environment

    pool = oray.launch("CartPole-v1", num_servers=4, sessions_per_server=64)
    config = pool_environment(PPOConfig(), pool).env_runners(num_env_runners=8, num_envs_per_env_runner=32)
    algo = config.build_algo()

A server that dies mid-training is restarted by Ray; the episodes it held end
truncated (flagged in the infos) and start again on the restarted server, and
training goes on.
"""

from __future__ import annotations

from typing import Any, TypeVar

from .._extras import missing_extra
from .pool import PoolVectorEnv, ServerPool

try:
    from ray.tune.registry import register_env
except ImportError as exc:
    raise missing_extra(exc, "openenv_gym.ray.rllib", "rllib") from exc

__all__ = ["register", "pool_environment"]

Config = TypeVar("Config")


def register(pool: ServerPool | str, *, name: str | None = None, **vector_kwargs: Any) -> str:
    """Register an RLlib env that makes a :class:`~openenv_gym.ray.PoolVectorEnv`
    on ``pool`` (or the pool of that name) per EnvRunner; return its name for
    ``config.environment(env=...)``.

    The EnvRunners must vectorize with ``gym_env_vectorize_mode="vector_entry_point"``
    (:func:`pool_environment` sets it). ``vector_kwargs`` go to
    :class:`~openenv_gym.RemoteVectorEnv` (``mode``, ``message_timeout``,
    ``reconnect``...); ``autoreset_mode`` stays ``NEXT_STEP``, which RLlib expects.
    """
    pool_name = pool if isinstance(pool, str) else pool.name
    env_name = name or f"openenv-pool:{pool_name}"

    def make(config: dict[str, Any]) -> PoolVectorEnv:
        num_envs = config.get("num_envs")
        if num_envs is None:
            raise ValueError(
                f"{env_name} makes one vector env per EnvRunner: set "
                f"config.env_runners(gym_env_vectorize_mode='vector_entry_point') "
                f"(openenv_gym.ray.rllib.pool_environment does)"
            )
        return PoolVectorEnv(pool_name, int(num_envs), **vector_kwargs)

    register_env(env_name, make)
    return env_name


def pool_environment(config: Config, pool: ServerPool | str, **vector_kwargs: Any) -> Config:
    """``config`` (an RLlib ``AlgorithmConfig``) with its env on ``pool``: the
    env :func:`register` makes, vectorized by its entry point. Returns ``config``."""
    name = register(pool, **vector_kwargs)
    return config.environment(env=name).env_runners(gym_env_vectorize_mode="vector_entry_point")  # type: ignore[attr-defined]
