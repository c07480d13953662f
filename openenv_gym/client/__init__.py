"""Clients: OpenEnv servers as Gymnasium environments (and vector envs, and PettingZoo games)."""

from .options import ConnectOptions
from .remote_env import RemoteEnv
from .retry import Reconnect

__all__ = ["RemoteEnv", "ConnectOptions", "Reconnect"]
