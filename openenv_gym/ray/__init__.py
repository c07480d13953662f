"""openenv-gym past one machine, on Ray: a pool of env servers as Ray actors.

``pip install 'openenv-gym[ray]'``; import it under its own name, since
``from openenv_gym import ray`` would shadow Ray itself::

    import ray
    import openenv_gym.ray as oray

    ray.init()                          # a laptop; on a cluster, the same call joins it
    with oray.launch("CartPole-v1", num_servers=4, sessions_per_server=64) as pool:
        envs = pool.vector_env(128)     # RemoteVectorEnv over leased slots, follows restarts
        ...
        pool.urls                       # plain OpenEnv URLs for any other client or trainer

- :func:`launch` starts the servers (Ray actors, placed and restarted by Ray)
  and the pool's broker; :func:`connect` finds a pool by name from any process.
- :class:`ServerPool`: ``urls``, ``health()``, ``lease(n)``, ``vector_env(n)``,
  ``scale(n)``, ``close()``.
- :mod:`openenv_gym.ray.rllib`: RLlib's EnvRunners on a pool.

The guide: ``docs/distributed.md``.
"""

from __future__ import annotations

from .._extras import missing_extra

try:
    import ray  # noqa: F401
except ImportError as exc:
    raise missing_extra(exc, "openenv_gym.ray", "ray") from exc

from .pool import NAMESPACE, POOL_RECONNECT, Lease, PoolCapacityError, PoolVectorEnv, ServerPool, connect, launch

__all__ = [
    "launch",
    "connect",
    "ServerPool",
    "Lease",
    "PoolVectorEnv",
    "PoolCapacityError",
    "POOL_RECONNECT",
    "NAMESPACE",
]
