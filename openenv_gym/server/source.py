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
import importlib.util
import inspect
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Union

import gymnasium as gym

from . import legacy

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
    #: Set when the env is a PettingZoo game: ``/ws`` then serves one seat of
    #: it (:class:`~openenv_gym.server.multiagent.SeatEnv`) and ``/agents`` the whole game.
    multiagent: Any = None
    #: Observation fields beyond Gymnasium's: name -> JSON Schema, and the
    #: function reading their values from a session's env.
    extra_fields: dict[str, dict] = field(default_factory=dict)
    extra_values: Callable[[gym.Env], dict] | None = None
    #: Set (to the env's class) when the env is a
    #: :class:`~openenv_gym.server.fields.FieldsEnv`, which speaks OpenEnv's
    #: named fields: ``/ws`` and ``/schema`` then follow the env's own schemas.
    fields: Any = None

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


def _is_module(text: str) -> bool:
    """``True`` for a dotted module path (``pettingzoo.classic.connect_four_v3``)."""
    if ":" in text or "." not in text or _is_gym_id(text):
        return False
    try:
        return importlib.util.find_spec(text) is not None
    except (ImportError, ValueError):
        return False


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

    PettingZoo envs (``AECEnv`` / ``ParallelEnv`` factories, or a module path
    such as ``"pettingzoo.classic.connect_four_v3"``) resolve through
    :mod:`~openenv_gym.server.multiagent`; legacy Gym envs (0.21 and 0.26
    APIs, and ids of the old ``gym`` package as ``"gym:CartPole-v1"``) are
    converted through Shimmy by :mod:`~openenv_gym.server.legacy`.

        >>> source = resolve("CartPole-v1")
        >>> source.action_space
        Discrete(2)
    """
    from . import multiagent  # it builds on the session module, which needs this one

    env_id: str | None = None
    if isinstance(env, str) and env.startswith(legacy.GYM_ID_PREFIX):
        old_id = env[len(legacy.GYM_ID_PREFIX):]

        def factory() -> gym.Env:
            return legacy.make_gym_id(old_id, **make_kwargs)

        name = env
    elif isinstance(env, str) and _is_module(env):
        module = importlib.import_module(env)
        target = getattr(module, "env", None) or getattr(module, "parallel_env", None)
        if target is None:
            raise TypeError(
                f"the module {env!r} has no 'env' or 'parallel_env' function: name the "
                f"factory as '{env}:FACTORY'"
            )
        source = resolve(target, **make_kwargs)
        source.name = env
        if source.multiagent is not None:
            source.multiagent.name = env
        return source
    elif isinstance(env, str):
        if _is_gym_id(env) or ":" not in env:
            env_id = env
            gym.spec(env)  # raises a clear NameNotFound error for unknown ids

            def factory() -> gym.Env:
                return gym.make(env_id, **make_kwargs)

            name = env_id
        else:
            target = _import_path(env)
            return resolve(target, **make_kwargs)
    elif isinstance(env, gym.Env) or multiagent.is_pettingzoo(env) or legacy.legacy_api(env):
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
    from .fields import FieldsEnv, fields_source  # here: fields imports this module

    if isinstance(probe, FieldsEnv):
        return fields_source(factory, probe, name)
    if multiagent.is_pettingzoo(probe):
        return _multiagent_source(factory, probe, name)
    if not isinstance(probe, gym.Env):
        api = legacy.legacy_api(probe)
        if api is None:
            if callable(getattr(probe, "close", None)):
                probe.close()
            raise TypeError(
                f"{name!r} built {type(probe).__name__}, which is neither a gymnasium.Env, "
                f"a PettingZoo env, nor a legacy Gym env"
            )
        probe = legacy.to_gymnasium(probe, api)
        legacy_factory = factory

        def factory() -> gym.Env:
            return legacy.to_gymnasium(legacy_factory(), api)

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


def _multiagent_source(factory: Callable[[], Any], probe: Any, name: str) -> EnvSource:
    """The source of a PettingZoo game: the seat view for ``/ws``, the game for ``/agents``."""
    from . import multiagent

    try:
        game = multiagent.MultiAgentSource.from_probe(factory, probe, name)
        description = multiagent.description_of(probe)
    finally:
        probe.close()
    observation_space, action_space = game.seat_spaces()
    return EnvSource(
        factory=lambda: multiagent.SeatEnv(game),
        name=name,
        env_id=game.env_metadata.get("name") or None,
        observation_space=observation_space,
        action_space=action_space,
        render_mode=game.render_mode,
        env_metadata=game.env_metadata,
        description=description,
        multiagent=game,
        extra_fields=multiagent.SEAT_FIELD_SCHEMAS,
        extra_values=lambda env: env.unwrapped.seat_fields(),
    )
