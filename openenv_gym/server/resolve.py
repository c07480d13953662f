"""From what the user hands to ``create_app`` to an :class:`~openenv_gym.server.source.EnvSource`.

:func:`resolve` takes a Gymnasium id, a ``"module:factory"`` path, a
PettingZoo module, an id of the old ``gym`` package (``"gym:CartPole-v1"``),
an EnvPool task (``"envpool:CartPole-v1"``), an env class or a factory callable
(one returning an EnvPool pool is a pool factory). It turns it into a factory (the first
matching entry of :data:`_FACTORIES`), builds one probe env, and reads from
the probe what every session shares; the kind of env the probe is (a
:class:`~openenv_gym.fields.FieldsEnv`, a PettingZoo game, a legacy Gym env,
a Gymnasium env) decides the session type and ``/schema`` of the source.

The probe also tells whether the env draws with pygame (:func:`uses_pygame`),
whose calls must all run on one thread, and whether it is a jax env, which
sessions get wrapped in Gymnasium's ``JaxToNumpy``.
"""

from __future__ import annotations

import dataclasses
import functools
import importlib
import importlib.util
import inspect
import logging
import sys
import types
from collections.abc import Callable, Iterator, Mapping
from typing import Any, NamedTuple

import gymnasium as gym

from ..fields import FieldsEnv
from ..text import view_for
from . import envpool, legacy, multiagent
from .fields import FieldsSession, FieldsSource
from .options import ServeOptions, check_single_thread
from .schema import gym_schema_document
from .session import Session
from .source import EnvLike, EnvSource, PoolSource
from .tools import check_tool_names, function_tool

logger = logging.getLogger("openenv_gym.server")

__all__ = ["resolve", "uses_pygame"]


class _Factory(NamedTuple):
    """How to build one env, the name the server goes by, and its Gymnasium id."""

    make: Callable[[], Any]
    name: str
    env_id: str | None = None
    #: An EnvPool task's pool factory (``make`` then builds a pool of one env).
    pool: envpool.PoolFactory | None = None


def resolve(
    env: EnvLike, env_kwargs: Mapping[str, Any] | None = None, options: ServeOptions | None = None
) -> EnvSource:
    """Build the :class:`EnvSource` of an id, a ``module:factory`` path, a class or a callable,
    whole: what ``options`` add to each env (a text view, MCP tools, a ``set_state`` hook,
    a PettingZoo opponent, one thread for all its calls) included.

    ``env_kwargs`` go to ``gym.make`` for ids and to the class or factory
    otherwise. A live env instance is refused: every session needs its own
    environment, so pass its class or a factory instead. What ``options`` ask of an env
    of another kind (an opponent for a Gymnasium env, tools for a FieldsEnv) is refused
    here, where the env's kind is known.

    PettingZoo envs (``AECEnv`` / ``ParallelEnv`` factories, or a module path
    such as ``"pettingzoo.classic.connect_four_v3"``) resolve through
    :mod:`~openenv_gym.server.multiagent`; legacy Gym envs (0.21 and 0.26
    APIs, and ids of the old ``gym`` package as ``"gym:CartPole-v1"``) are
    converted through Shimmy by :mod:`~openenv_gym.server.legacy`.

        >>> source = resolve("CartPole-v1")
        >>> source.action_space
        Discrete(2)
    """
    options = options or ServeOptions()
    factory = _factory(env, dict(env_kwargs or {}))
    probe = factory.make()
    single_thread = uses_pygame(probe) if options.single_thread is None else options.single_thread
    shared = _Shared(options, single_thread)
    source = _source(factory, probe, shared)
    if source.tool_images and source.render_mode != "rgb_array":
        raise ValueError(
            f"tool_images= shows the env's rgb_array frame in tool results, but {factory.name!r} renders "
            f"{source.render_mode!r}: make it with render_mode='rgb_array' (env_kwargs={{'render_mode': "
            f"'rgb_array'}}, --env-kwargs '{{\"render_mode\": \"rgb_array\"}}')"
        )
    return source


class _Shared(NamedTuple):
    """What the options add to every env of a source, of whatever kind."""

    options: ServeOptions
    single_thread: bool

    def fields(self, name: str, kind: str) -> dict[str, Any]:
        """The :class:`EnvSource` fields the options set, for an env of ``kind``
        (``"gym"``, ``"game"`` or ``"fields"``), refusing what that kind cannot take."""
        options = self.options
        check_single_thread(options, self.single_thread)
        if options.opponent is not None and kind != "game":
            raise TypeError("opponent= applies to PettingZoo environments only")
        tools = tuple(function_tool(fn) for fn in options.tools)
        check_tool_names(list(tools))
        if kind == "fields":
            if options.set_state is not None:
                raise TypeError(
                    f"{name!r} speaks OpenEnv's named fields (a FieldsEnv): its reset takes "
                    f"injected_state itself (a keyword argument of reset); set_state= applies to Gymnasium "
                    f"and PettingZoo envs"
                )
            if tools or options.text_view is not None or options.tool_images:
                raise TypeError(
                    f"{name!r} speaks OpenEnv's named fields (a FieldsEnv): it serves the tools it declares "
                    f"(FieldsEnv.tools) and no text view; tools=, text_view= and tool_images= apply to Gymnasium and "
                    f"PettingZoo envs"
                )
        return {"text_view": options.text_view, "tools": tools, "set_state": options.set_state,
                "single_thread": self.single_thread, "tool_images": options.tool_images}


# -- what to build ---------------------------------------------------------------------


def _factory(env: EnvLike, make_kwargs: dict[str, Any]) -> _Factory:
    for matches, build in _FACTORIES:
        if matches(env):
            return build(env, make_kwargs)
    raise TypeError(
        f"cannot serve {env!r}: expected a Gymnasium id, a 'module:factory' path, "
        f"an env class or a factory callable"
    )


# Factories are partials of importable functions, so that a process of its own
# (execution="process") can be sent one and build the same env.


def _old_gym_id(env: Any, make_kwargs: dict[str, Any]) -> _Factory:
    old_id = env[len(legacy.GYM_ID_PREFIX):]
    return _Factory(functools.partial(legacy.make_gym_id, old_id, **make_kwargs), env)


def _envpool_task(env: Any, make_kwargs: dict[str, Any]) -> _Factory:
    pool = envpool.task_factory(env[len(envpool.ENVPOOL_PREFIX):], **make_kwargs)
    return _pool_factory(pool, env)


def _pool_factory(pool: envpool.PoolFactory, name: str) -> _Factory:
    return _Factory(functools.partial(envpool.EnvPoolEnv, pool), name, pool=pool)


def _pettingzoo_module(env: Any, make_kwargs: dict[str, Any]) -> _Factory:
    module = importlib.import_module(env)
    target = getattr(module, "env", None) or getattr(module, "parallel_env", None)
    if target is None:
        raise TypeError(
            f"the module {env!r} has no 'env' or 'parallel_env' function: name the "
            f"factory as '{env}:FACTORY'"
        )
    return _Factory(_factory(target, make_kwargs).make, env)


def _gym_id(env: Any, make_kwargs: dict[str, Any]) -> _Factory:
    gym.spec(env)  # raises a clear NameNotFound error for unknown ids
    return _Factory(functools.partial(gym.make, env, **make_kwargs), env, env)


def _import_path(env: Any, make_kwargs: dict[str, Any]) -> _Factory:
    module_name, _, attribute = env.partition(":")
    target: Any = importlib.import_module(module_name)
    for part in attribute.split("."):
        target = getattr(target, part)
    return _factory(target, make_kwargs)


def _instance(env: Any, make_kwargs: dict[str, Any]) -> _Factory:
    raise TypeError(
        f"create_app() needs a way to build one environment per session, not the "
        f"instance {env!r}: pass its class, a factory function, or a Gymnasium id"
    )


def _callable(env: Any, make_kwargs: dict[str, Any]) -> _Factory:
    return _Factory(functools.partial(env, **make_kwargs), getattr(env, "__qualname__", None) or repr(env))


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


def _is_instance(env: Any) -> bool:
    return isinstance(env, gym.Env) or multiagent.is_pettingzoo(env) or legacy.legacy_api(env) is not None


#: ``(matches, factory)`` pairs, the first match wins.
_FACTORIES: list[tuple[Callable[[Any], bool], Callable[[Any, dict[str, Any]], _Factory]]] = [
    (lambda env: isinstance(env, str) and env.startswith(legacy.GYM_ID_PREFIX), _old_gym_id),
    (lambda env: isinstance(env, str) and env.startswith(envpool.ENVPOOL_PREFIX), _envpool_task),
    (lambda env: isinstance(env, str) and _is_module(env), _pettingzoo_module),
    (lambda env: isinstance(env, str) and (_is_gym_id(env) or ":" not in env), _gym_id),
    (lambda env: isinstance(env, str), _import_path),
    (_is_instance, _instance),
    (callable, _callable),
]


# -- what the probe says ---------------------------------------------------------------


def _source(factory: _Factory, probe: Any, shared: _Shared) -> EnvSource:
    """The source of the env ``probe`` (an env ``factory`` built); closes the probe."""
    if getattr(probe, "render_mode", None) == "human":
        if callable(getattr(probe, "close", None)):
            probe.close()
        raise ValueError(
            f"{factory.name!r} renders in render_mode='human': for a person at the server (a window, "
            f"or text printed to its console), which no remote client sees, and pygame windows are "
            f"not safe on the server's worker threads. Serve it with render_mode='rgb_array' (or "
            f"'ansi', or None) and show the frames on the client"
        )
    if isinstance(probe, FieldsEnv):
        return _fields_source(factory, probe, shared)
    if multiagent.is_pettingzoo(probe):
        return _multiagent_source(factory, probe, shared)
    if envpool.is_pool(probe):  # a pool factory: sessions get pools of one env
        probe.close()
        factory = _pool_factory(factory.make, factory.name)
        probe = factory.make()
    if not isinstance(probe, gym.Env):
        api = legacy.legacy_api(probe)
        if api is None:
            if callable(getattr(probe, "close", None)):
                probe.close()
            raise TypeError(
                f"{factory.name!r} built {type(probe).__name__}, which is neither a gymnasium.Env, "
                f"a PettingZoo env, nor a legacy Gym env"
            )
        probe = legacy.to_gymnasium(probe, api)
        factory = factory._replace(make=_converted(factory.make, api))
    if (probe.metadata or {}).get("jax") and "jax" in sys.modules:  # no jax arrays without jax
        probe = _to_numpy(probe, factory.name)
        factory = factory._replace(make=functools.partial(_build_numpy, factory.make, factory.name))
    return _gym_source(factory, probe, shared)


def _converted(make: Callable[[], Any], api: legacy.LegacyApi) -> Callable[[], gym.Env]:
    return functools.partial(_build_converted, make, api)


def _build_converted(make: Callable[[], Any], api: legacy.LegacyApi) -> gym.Env:
    return legacy.to_gymnasium(make(), api)


def _build_numpy(make: Callable[[], Any], name: str) -> gym.Env:
    return _to_numpy(make(), name)


def _to_numpy(env: gym.Env, name: str) -> gym.Env:
    """A jax env (``metadata["jax"]``, such as ``phys2d/CartPole-v1``) taking and
    returning numpy values, as every session's env does: the codecs and space
    checks know numpy arrays, not jax arrays."""
    try:
        from gymnasium.wrappers import JaxToNumpy
    except ImportError as exc:  # array-api-compat, which jax envs themselves do not import
        env.close()
        raise ImportError(
            f"{name!r} is a jax env, served through Gymnasium's JaxToNumpy, which needs "
            f"{exc.name}: pip install 'gymnasium[jax]'"
        ) from exc
    return JaxToNumpy(env)


def _gym_source(factory: _Factory, probe: gym.Env, shared: _Shared) -> EnvSource:
    try:
        spec = probe.spec
        kind: type[EnvSource] = EnvSource if factory.pool is None else PoolSource
        of_kind: dict[str, Any] = {} if factory.pool is None else {"pool": factory.pool}
        source = kind(
            factory=factory.make,
            name=factory.name,
            env_id=factory.env_id or (spec.id if spec is not None else None),
            observation_space=probe.observation_space,
            action_space=probe.action_space,
            session_type=Session,
            schema={},
            render_mode=probe.render_mode,
            env_metadata=_served_metadata(probe.metadata),
            max_episode_steps=spec.max_episode_steps if spec is not None else None,
            description=_summary(type(probe.unwrapped)),
            instructions=_instructions(factory.name, probe, shared.options.text_view),
            **of_kind,
            **shared.fields(factory.name, "gym"),
        )
    finally:
        probe.close()
    return dataclasses.replace(source, schema=gym_schema_document(source))


def _fields_source(factory: _Factory, probe: FieldsEnv, shared: _Shared) -> EnvSource:
    try:
        observation_space, action_space = probe.inferred_spaces()
        return FieldsSource(
            factory=factory.make,
            name=factory.name,
            env_id=probe.name,
            observation_space=observation_space,
            action_space=action_space,
            session_type=FieldsSession,
            schema=probe.schema_document(),
            description=probe.description or _summary(type(probe)),
            env_class=type(probe),
            **shared.fields(factory.name, "fields"),
        )
    finally:
        probe.close()


def _multiagent_source(factory: _Factory, probe: Any, shared: _Shared) -> EnvSource:
    """The source of a PettingZoo game: the seat view for ``/ws``, the game for ``/agents``."""
    try:
        game = multiagent.MultiAgentSource.from_probe(factory.make, probe, factory.name, shared.options.opponent)
        description = _summary(type(getattr(probe, "unwrapped", probe)))
        instructions = _instructions(factory.name, probe, shared.options.text_view)
    finally:
        probe.close()
    observation_space, action_space = game.seat_spaces()
    source = multiagent.GameSource(
        factory=functools.partial(multiagent.SeatEnv, game),
        name=factory.name,
        env_id=game.env_metadata.get("name") or None,
        observation_space=observation_space,
        action_space=action_space,
        session_type=multiagent.SeatSession,
        schema={},
        render_mode=game.render_mode,
        env_metadata=game.env_metadata,
        description=description,
        instructions=instructions,
        game=game,
        extra_fields=multiagent.SEAT_FIELD_SCHEMAS,
        extra_values=_seat_fields,
        **shared.fields(factory.name, "game"),
    )
    return dataclasses.replace(source, schema=gym_schema_document(source, {"multiagent": game.describe()}))


def _seat_fields(env: Any) -> dict:
    return env.unwrapped.seat_fields()


def _instructions(name: str, probe: Any, text_view: Any) -> str | None:
    """The probe's text view's description, for a model's first message (``None`` when
    no view can describe it: the server serves the env all the same)."""
    try:
        return view_for(probe, text_view).describe()
    except Exception:  # noqa: BLE001 - an env no view knows is still served
        logger.warning("text_view_failed env=%s (no instructions)", name, exc_info=True)
        return None


def _served_metadata(metadata: Any) -> dict:
    """An env's metadata as its clients see it: without ``"jax"``, since
    observations reach them as numpy arrays (the server wraps a jax env in
    ``JaxToNumpy``; a client that believed them jax arrays, as ``check_env``
    does, would wrap the remote env in ``JaxToNumpy`` again)."""
    return {k: v for k, v in dict(metadata or {}).items() if k != "jax"}


def _summary(cls: type) -> str:
    """The first paragraph of a class's own docstring (not one it inherits: PettingZoo's
    games would say what an ``AECEnv`` is) that is not a Markdown heading (Gymnasium's open
    with ``## Description``)."""
    own = cls.__dict__.get("__doc__")
    paragraphs = (p.strip() for p in (inspect.cleandoc(own) if isinstance(own, str) else "").split("\n\n"))
    return next((p for p in paragraphs if p and not p.startswith("#")), "")


# -- whether the env draws with pygame -------------------------------------------------

#: Render modes that draw no frame.
_TEXT_RENDER_MODES = (None, "ansi")


def uses_pygame(env: Any) -> bool:
    """Whether ``env`` draws with pygame, which is not thread-safe: a module
    defining one of its classes (the env's, its wrappers', the game objects it
    holds) imports pygame, as PettingZoo's games and Box2D's car racing do; or
    the env renders frames and such a module names pygame in its code, as
    Gymnasium's classic control and toy text envs do, importing it at their
    first ``render()``. An env without a render mode whose module only imports
    pygame lazily never touches it, and keeps its fast calls inline.

        >>> uses_pygame(gym.make("CartPole-v1"))
        False
        >>> uses_pygame(gym.make("CartPole-v1", render_mode="rgb_array"))
        True
    """
    modules = {module for module in _modules(env) if module is not None}
    if any(_imports_pygame(module) for module in modules):
        return True
    if getattr(env, "render_mode", None) in _TEXT_RENDER_MODES:
        return False
    return any(_code_names_pygame(module) for module in modules)


def _modules(env: Any) -> Iterator[types.ModuleType | None]:
    """The modules defining the classes of ``env``, of its ``unwrapped`` env, of
    the envs each wraps (``.env`` down to the innermost) and of their bases,
    builtins aside."""
    pending, seen = [env, getattr(env, "unwrapped", None)], set()
    while pending:
        layer = pending.pop()
        if layer is None or id(layer) in seen:
            continue
        seen.add(id(layer))
        for cls in type(layer).__mro__:
            if cls.__module__ != "builtins":
                yield sys.modules.get(cls.__module__)
        pending.append(inspect.getattr_static(layer, "env", None))


def _imports_pygame(module: types.ModuleType) -> bool:
    return any(
        isinstance(value, types.ModuleType) and value.__name__.partition(".")[0] == "pygame"
        for value in vars(module).values()
    )


def _code_names_pygame(module: types.ModuleType) -> bool:
    """Whether a function or method the module defines names ``pygame`` (an
    ``import pygame`` inside a function, as a lazy import is written)."""
    for value in vars(module).values():
        if getattr(value, "__module__", None) != module.__name__:
            continue
        members = vars(value).values() if isinstance(value, type) else (value,)
        for member in members:
            function = getattr(member, "__func__", member)  # classmethods and staticmethods
            code = getattr(function, "__code__", None)
            if isinstance(code, types.CodeType) and _names(code, "pygame"):
                return True
    return False


def _names(code: types.CodeType, name: str) -> bool:
    """Whether ``code``, or a function nested in it, names ``name``."""
    return name in code.co_names or any(
        isinstance(const, types.CodeType) and _names(const, name) for const in code.co_consts
    )
