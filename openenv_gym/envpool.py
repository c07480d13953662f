"""EnvPool behind Gymnasium's APIs, by its public name: a vector env of an EnvPool task in
any autoreset mode (:class:`EnvPoolVectorEnv`), and one env of it (:class:`EnvPoolEnv`).

The adapter is the server's (its ``envpool`` vector backend steps a batched session on
one pool), so it lives in :mod:`openenv_gym.server.envpool`; this module gives its names
to code that uses a pool in its own process, as it would a ``SyncVectorEnv``:

    >>> import numpy as np
    >>> from openenv_gym.envpool import EnvPoolVectorEnv, task_factory
    >>> envs = EnvPoolVectorEnv(task_factory("CartPole-v1"), num_envs=2, autoreset_mode="SameStep")
    >>> obs, infos = envs.reset(seed=42)
    >>> obs.shape
    (2, 4)
    >>> envs.close()

Needs the ``envpool`` extra (``pip install 'openenv-gym[envpool]'``).
"""

from __future__ import annotations

from .server.envpool import ENVPOOL_PREFIX, EnvPoolEnv, EnvPoolVectorEnv, PoolFactory, is_pool, task_factory

__all__ = ["EnvPoolVectorEnv", "EnvPoolEnv", "PoolFactory", "task_factory", "is_pool", "ENVPOOL_PREFIX"]
