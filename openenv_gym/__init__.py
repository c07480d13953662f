"""openenv-gym: OpenEnv servers as Gymnasium environments, and Gymnasium
environments as OpenEnv servers.

    >>> import gymnasium as gym
    >>> import openenv_gym
    >>> with openenv_gym.local_server("CartPole-v1") as url:
    ...     env = gym.make("openenv/Remote-v0", base_url=url)
    ...     obs, info = env.reset(seed=0)
    ...     env.close()

Importing the package registers the ``openenv/...`` Gymnasium ids
(Gymnasium 1.x has no plugin discovery; ``gym.make("openenv_gym:openenv/Remote-v0")``
works without the import).
"""

from __future__ import annotations

from typing import Any

from . import errors, protocol, spaces
from ._version import __version__
from .catalog import list_envs
from .client import ConnectOptions, Reconnect, RemoteEnv
from .client.vector import RemoteVectorEnv
from .fields import FieldsEnv, FieldsObservation
from .protocol import Limits
from .registration import register_envs

__all__ = [
    "RemoteEnv",
    "RemoteVectorEnv",
    "RemoteAECEnv",
    "RemoteParallelEnv",
    "ConnectOptions",
    "Reconnect",
    "create_app",
    "serve",
    "local_server",
    "ServeOptions",
    "Limits",
    "FieldsEnv",
    "FieldsObservation",
    "list_envs",
    "errors",
    "protocol",
    "spaces",
    "__version__",
]

_SERVER_NAMES = ("create_app", "serve", "local_server", "ServeOptions")
#: Need the optional [pettingzoo] extra.
_MULTIAGENT_NAMES = ("RemoteAECEnv", "RemoteParallelEnv")


def __getattr__(name: str) -> Any:
    # The server needs the optional [server] extra: import it on first use.
    if name in _SERVER_NAMES:
        from . import server

        return getattr(server, name)
    if name in _MULTIAGENT_NAMES:
        from .client import multiagent

        return getattr(multiagent, name)
    raise AttributeError(f"module 'openenv_gym' has no attribute {name!r}")


register_envs()
