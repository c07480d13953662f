"""What a server serves: :class:`EnvSource`, a factory of one environment per
session and what every session shares (spaces, render mode, metadata, the
session type of its ``/ws`` route and its ``/schema``).

Sources are made by :func:`~openenv_gym.server.resolve.resolve`, once per
server, from a probe env, so that ``/schema`` and ``/metadata`` never build an
environment.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import gymnasium as gym

__all__ = ["EnvSource", "EnvLike"]

#: What the server accepts as an environment.
EnvLike = str | Callable[..., Any] | type


@dataclass
class EnvSource:
    """A factory for one environment per session, and what they all share."""

    factory: Callable[[], Any]
    name: str
    env_id: str | None
    observation_space: gym.Space
    action_space: gym.Space
    #: The :class:`~openenv_gym.server.session.Session` class serving one ``/ws`` connection.
    session_type: type
    #: The ``/schema`` document: the JSON Schemas of action, observation and state.
    schema: dict
    render_mode: str | None = None
    env_metadata: dict = field(default_factory=dict)
    max_episode_steps: int | None = None
    description: str = ""
    #: Set when the env is a PettingZoo game: ``/ws`` then serves one seat of
    #: it (:class:`~openenv_gym.server.multiagent.SeatEnv`) and ``/agents`` the whole game.
    multiagent: Any = None
    #: Observation fields beyond Gymnasium's: name -> JSON Schema, and the
    #: function reading their values from a session's env.
    extra_fields: dict[str, dict] = field(default_factory=dict)
    extra_values: Callable[[Any], dict] | None = None
    #: Set (to the env's class) when the env is a :class:`~openenv_gym.fields.FieldsEnv`,
    #: which speaks OpenEnv's named fields and publishes its own schemas.
    fields: Any = None
    #: The text view of its envs the server was given (a view, or a function making
    #: one from an env: see :func:`~openenv_gym.text.view_for`); ``None``: each env's own.
    text_view: Any = None
    #: MCP tools of the env's author, besides the built-in ones
    #: (:class:`~openenv_gym.server.tools.Tool`).
    tools: tuple[Any, ...] = ()
    #: Set when the env is an EnvPool task: the pool factory (:mod:`openenv_gym.envpool`)
    #: from which the ``envpool`` backend builds a vector session's envs in one pool.
    pool: Any = None
    #: The ``set_state`` hook of :func:`~openenv_gym.create_app`: applies a reset's
    #: ``injected_state`` to a session's env (``None``: such resets are refused).
    set_state: Callable[[Any, Any], tuple[Any, Any]] | None = None
    #: Whether every call of its envs runs on the process's one thread for envs
    #: that are not thread-safe (see :class:`~openenv_gym.server.session.EnvCaller`).
    single_thread: bool = False

    def make_isolated(self, memory_mb: int | None = None) -> Any:
        """Build a fresh environment for a session, in a process of its own
        (:mod:`~openenv_gym.server.isolation`) that may allocate ``memory_mb`` MiB
        at most (``None``: no cap), from the same factory."""
        from .isolation import ProcessEnv

        if self.fields is not None:
            raise TypeError(
                f"{self.name!r} cannot run in a process of its own: process isolation serves "
                f"Gymnasium envs, legacy Gym envs and PettingZoo seats"
            )
        return ProcessEnv(self.factory, self.name, memory_mb=memory_mb)

    def make(self) -> Any:
        """Build a fresh environment for a session."""
        env = self.factory()
        if self.fields is None and not isinstance(env, gym.Env):
            raise TypeError(
                f"the factory {self.name!r} returned {type(env).__name__}, not a gymnasium.Env"
            )
        return env
