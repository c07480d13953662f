"""Clients: OpenEnv servers as Gymnasium environments."""

from .remote_env import RemoteEnv

__all__ = ["RemoteEnv"]
