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
from typing import Any, ClassVar

import gymnasium as gym

__all__ = ["EnvSource", "PoolSource", "EnvLike"]

#: What the server accepts as an environment.
EnvLike = str | Callable[..., Any] | type


@dataclass(frozen=True, kw_only=True)
class EnvSource:
    """A factory for one environment per session, and what they all share.

    Built whole by :func:`~openenv_gym.server.resolve.resolve` and never changed after.
    A Gymnasium env's source is an ``EnvSource``; its subclasses say what else an env of
    their kind shares: :class:`PoolSource` (an EnvPool task),
    :class:`~openenv_gym.server.multiagent.GameSource` (a PettingZoo game),
    :class:`~openenv_gym.server.fields.FieldsSource` (a :class:`~openenv_gym.fields.FieldsEnv`).
    """

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
    #: What a model is told of the env before its first observation: its text view's
    #: :meth:`~openenv_gym.text.TextView.describe` (the task, the observations, the
    #: actions and how to answer; ``None``: no view describes it).
    instructions: str | None = None
    #: Observation fields beyond Gymnasium's: name -> JSON Schema, and the
    #: function reading their values from a session's env.
    extra_fields: dict[str, dict] = field(default_factory=dict)
    extra_values: Callable[[Any], dict] | None = None
    #: The text view of its envs the server was given (a view, or a function making
    #: one from an env: see :func:`~openenv_gym.text.view_for`); ``None``: each env's own.
    text_view: Any = None
    #: Whether the built-in tools' results carry the env's ``rgb_array`` frame
    #: (:attr:`~openenv_gym.server.options.ServeOptions.tool_images`).
    tool_images: bool = False
    #: MCP tools of the env's author, besides the built-in ones
    #: (:class:`~openenv_gym.server.tools.ServedTool`).
    tools: tuple[Any, ...] = ()
    #: The ``set_state`` hook of :class:`~openenv_gym.server.options.ServeOptions`: applies
    #: a reset's ``injected_state`` to a session's env (``None``: such resets are refused).
    set_state: Callable[[Any, Any], tuple[Any, Any]] | None = None
    #: Whether every call of its envs runs on the process's one thread for envs
    #: that are not thread-safe (see :class:`~openenv_gym.server.execution.EnvCaller`).
    single_thread: bool = False

    #: Whether a session's env may live in a process of its own (:meth:`make_isolated`).
    isolable: ClassVar[bool] = True

    def make_isolated(self, memory_mb: int | None = None) -> Any:
        """Build a fresh environment for a session, in a process of its own
        (:mod:`~openenv_gym.server.isolation`) that may allocate ``memory_mb`` MiB
        at most (``None``: no cap), from the same factory."""
        from .isolation import ProcessEnv

        if not self.isolable:
            raise TypeError(
                f"{self.name!r} cannot run in a process of its own: process isolation serves "
                f"Gymnasium envs, legacy Gym envs and PettingZoo seats"
            )
        return ProcessEnv(self.factory, self.name, memory_mb=memory_mb)

    def make(self) -> Any:
        """Build a fresh environment for a session."""
        env = self.factory()
        if self.isolable and not isinstance(env, gym.Env):
            raise TypeError(
                f"the factory {self.name!r} returned {type(env).__name__}, not a gymnasium.Env"
            )
        return env


@dataclass(frozen=True, kw_only=True)
class PoolSource(EnvSource):
    """The source of an EnvPool task: each session's env is a pool of one env, and the
    ``envpool`` vector backend builds a vector session's envs in one pool."""

    #: The pool factory (:mod:`openenv_gym.envpool`): ``pool(num_envs)`` builds a pool.
    pool: Callable[..., Any]
