"""The Gymnasium ids openenv-gym registers on import.

``openenv/Remote-v0`` is a :class:`~openenv_gym.RemoteEnv` for any server::

    gym.make("openenv/Remote-v0", base_url="http://127.0.0.1:8000", max_episode_steps=500)
"""

from __future__ import annotations

import gymnasium as gym

__all__ = ["register_envs"]


def register_envs() -> None:
    """Register the ``openenv/...`` ids (idempotent)."""
    if "openenv/Remote-v0" not in gym.registry:
        gym.register(
            id="openenv/Remote-v0",
            entry_point="openenv_gym.client.remote_env:RemoteEnv",
        )
