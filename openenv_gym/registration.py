"""The Gymnasium ids openenv-gym registers on import.

``openenv/Remote-v0`` is a :class:`~openenv_gym.RemoteEnv` for any server::

    gym.make("openenv/Remote-v0", base_url="http://127.0.0.1:8000", max_episode_steps=500)
    gym.make_vec("openenv/Remote-v0", num_envs=8, vectorization_mode="vector_entry_point",
                 base_url="http://127.0.0.1:8000")
"""

from __future__ import annotations

import gymnasium as gym

__all__ = ["register_envs", "VECTOR_ENTRY_POINT"]

#: Every ``openenv/...`` id registers this, so ``gym.make_vec(id, num_envs=N,
#: vectorization_mode="vector_entry_point", base_url=...)`` builds a
#: :class:`~openenv_gym.RemoteVectorEnv` (keyword arguments go to it).
VECTOR_ENTRY_POINT = "openenv_gym.client.vector:RemoteVectorEnv"


def register_envs() -> None:
    """Register the ``openenv/...`` ids (idempotent): ``openenv/Remote-v0`` and the
    catalog's (:mod:`openenv_gym.catalog`)."""
    from .catalog import register_catalog

    register_catalog()
    if "openenv/Remote-v0" not in gym.registry:
        gym.register(
            id="openenv/Remote-v0",
            entry_point="openenv_gym.client.remote_env:RemoteEnv",
            vector_entry_point=VECTOR_ENTRY_POINT,
        )
