"""Where a server's environments come from.

:func:`resolve` turns what the user handed to ``create_app`` / ``serve`` (a
Gymnasium id, an ``"module:factory"`` path, an env class or a factory
callable) into an :class:`EnvSource`: a factory that builds one env per
session, plus what every session shares (spaces, render mode, metadata),
read once from a probe env so that ``/schema`` and ``/metadata`` never build
an environment.
"""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Union

import gymnasium as gym

__all__ = ["EnvSource", "EnvLike", "resolve"]

#: What the server accepts as an environment.
EnvLike = Union[str, Callable[..., gym.Env], type]


@dataclass
class EnvSource:
    """A factory for one environment per session, and what they all share."""

    factory: Callable[[], gym.Env]
    name: str
    env_id: str | None
    observation_space: gym.Space
    action_space: gym.Space
    render_mode: str | None = None
    env_metadata: dict = field(default_factory=dict)
    max_episode_steps: int | None = None
    description: str = ""

    def make(self) -> gym.Env:
        """Build a fresh environment for a session."""
        env = self.factory()
        if not isinstance(env, gym.Env):
            raise TypeError(
                f"the factory {self.name!r} returned {type(env).__name__}, not a gymnasium.Env"
            )
        return env


def _import_path(path: str) -> Any:
    module_name, _, attribute = path.partition(":")
    module = importlib.import_module(module_name)
    target: Any = module
    for part in attribute.split("."):
        target = getattr(target, part)
    return target


def _is_gym_id(text: str) -> bool:
    try:
        gym.spec(text)
    except gym.error.Error:
        return False
    return True


def resolve(env: EnvLike, **make_kwargs: Any) -> EnvSource:
    """Build an :class:`EnvSource` from an id, a ``module:factory`` path, a class or a callable.

    ``make_kwargs`` go to ``gym.make`` for ids and to the class or factory
    otherwise. A live env instance is refused: every session needs its own
    environment, so pass its class or a factory instead.

        >>> source = resolve("CartPole-v1")
        >>> source.action_space
        Discrete(2)
    """
    env_id: str | None = None
    if isinstance(env, str):
        if _is_gym_id(env) or ":" not in env:
            env_id = env
            gym.spec(env)  # raises a clear NameNotFound error for unknown ids

            def factory() -> gym.Env:
                return gym.make(env_id, **make_kwargs)

            name = env_id
        else:
            target = _import_path(env)
            return resolve(target, **make_kwargs)
    elif isinstance(env, gym.Env):
        raise TypeError(
            f"create_app() needs a way to build one environment per session, not the "
            f"instance {env!r}: pass its class, a factory function, or a Gymnasium id"
        )
    elif callable(env):
        target = env
        name = getattr(target, "__qualname__", None) or repr(target)

        def factory() -> gym.Env:
            return target(**make_kwargs)

    else:
        raise TypeError(
            f"cannot serve {env!r}: expected a Gymnasium id, a 'module:factory' path, "
            f"an env class or a factory callable"
        )

    probe = factory()
    if not isinstance(probe, gym.Env):
        raise TypeError(f"{name!r} built {type(probe).__name__}, not a gymnasium.Env")
    try:
        spec = probe.spec
        doc = inspect.getdoc(type(probe.unwrapped)) or ""
        return EnvSource(
            factory=factory,
            name=name,
            env_id=env_id or (spec.id if spec is not None else None),
            observation_space=probe.observation_space,
            action_space=probe.action_space,
            render_mode=probe.render_mode,
            env_metadata=dict(probe.metadata or {}),
            max_episode_steps=spec.max_episode_steps if spec is not None else None,
            description=doc.split("\n\n")[0].strip(),
        )
    finally:
        probe.close()
