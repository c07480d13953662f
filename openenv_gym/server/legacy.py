"""Legacy Gym environments (the ``gym`` package's 0.21 and 0.26 APIs) as Gymnasium envs.

:func:`~openenv_gym.server.resolve.resolve` hands every object that is
not a ``gymnasium.Env`` to :func:`legacy_api`; when it looks like a legacy Gym
env, :func:`to_gymnasium` converts it through Farama Shimmy's compatibility
wrappers (``GymV21CompatibilityV0``, ``GymV26CompatibilityV0``), so serving an
old env takes one call::

    class OldEnv:                      # Gym 0.21 style: reset() -> obs, 4-tuple step, seed()
        observation_space = ...; action_space = ...
        def seed(self, seed=None): ...
        def reset(self): ...
        def step(self, action): ...    # -> obs, reward, done, info

    app = openenv_gym.create_app(OldEnv)             # pass the class: one env per session
    app = openenv_gym.create_app("gym:CartPole-v1")  # an id of the old ``gym`` package

The 0.26 API needs the old ``gym`` package itself (its envs are ``gym.Env``
instances). A 0.21-style env does not: when its spaces are already Gymnasium
spaces it is converted without ``gym`` installed. Shimmy is an optional
dependency: ``pip install 'openenv-gym[legacy]'``.

Serving is also how to escape legacy pins: run the old env in a virtualenv
that has them (``gym==0.26.2``, ``numpy<2``) and consume it from a modern one
with :class:`~openenv_gym.RemoteEnv` (see ``examples/legacy_env_isolation.py``).
"""

from __future__ import annotations

import inspect
import sys
from typing import Any, Literal

import gymnasium as gym

from .._extras import missing_extra

__all__ = ["LegacyApi", "GYM_ID_PREFIX", "legacy_api", "to_gymnasium", "make_gym_id"]

#: ``"v21"``: ``reset() -> obs``, ``step -> (obs, reward, done, info)``, ``seed()``;
#: ``"v26"``: the ``gym`` 0.26 API (``reset(seed=) -> (obs, info)``, 5-tuple step).
LegacyApi = Literal["v21", "v26"]

#: ``create_app("gym:CartPole-v0")`` serves an id of the old ``gym`` package.
GYM_ID_PREFIX = "gym:"

_INSTALL_HINT = "pip install 'openenv-gym[legacy]'"


def _shimmy() -> Any:
    try:
        import shimmy.openai_gym_compatibility as compatibility
    except ImportError as exc:
        raise missing_extra(exc, "serving a legacy Gym environment", "legacy") from exc
    return compatibility


def _old_gym() -> Any:
    """The old ``gym`` package when it is importable (imported only when asked for)."""
    try:
        import gym as old_gym
    except ImportError as exc:
        raise ImportError(
            f"serving an id of the old 'gym' package needs it installed: pip install 'gym' "
            f"and {_INSTALL_HINT}"
        ) from exc
    return old_gym


def _gym_version() -> tuple[int, ...]:
    version = getattr(_old_gym(), "__version__", "0.26")
    return tuple(int(part) for part in version.split(".")[:2] if part.isdigit())


def legacy_api(env: Any) -> LegacyApi | None:
    """Which legacy Gym API ``env`` (an instance) follows, or ``None`` when it is not one.

    An instance of the old ``gym`` package's ``Env`` follows that package's
    API; any other object with spaces, ``reset`` and ``step`` is judged by its
    ``reset``: one that takes ``seed`` is 0.26-style, one without it and with
    a ``seed()`` method is 0.21-style.

        >>> class Old:
        ...     observation_space = action_space = gym.spaces.Discrete(2)
        ...     def seed(self, seed=None): return [seed]
        ...     def reset(self): return 0
        ...     def step(self, action): return 0, 0.0, True, {}
        >>> legacy_api(Old())
        'v21'
    """
    if isinstance(env, (gym.Env, type)):
        return None
    old_gym = sys.modules.get("gym")
    if old_gym is not None and isinstance(env, getattr(old_gym, "Env", ())):
        return "v26" if _gym_version() >= (0, 26) else "v21"
    if not all(hasattr(env, name) for name in ("reset", "step", "observation_space", "action_space")):
        return None
    try:
        parameters = inspect.signature(env.reset).parameters
    except (TypeError, ValueError):
        return None
    if "seed" in parameters:
        return "v26"
    return "v21" if callable(getattr(env, "seed", None)) else None


def to_gymnasium(env: Any, api: LegacyApi) -> gym.Env:
    """Wrap a legacy env instance in Shimmy's compatibility wrapper for ``api``."""
    compatibility = _shimmy()
    if api == "v26":
        return compatibility.GymV26CompatibilityV0(env=env)
    if compatibility.GYM_IMPORT_ERROR is None:
        return compatibility.GymV21CompatibilityV0(env=env)
    return _gym_v21_without_gym(compatibility, env)


def make_gym_id(env_id: str, **make_kwargs: Any) -> gym.Env:
    """Build an id of the old ``gym`` package, converted for Gymnasium."""
    _old_gym()
    compatibility = _shimmy()
    wrapper = (
        compatibility.GymV26CompatibilityV0
        if _gym_version() >= (0, 26)
        else compatibility.GymV21CompatibilityV0
    )
    return wrapper(env_id=env_id, make_kwargs=make_kwargs)


def _gym_v21_without_gym(compatibility: Any, env: Any) -> gym.Env:
    """Shimmy's 0.21 wrapper for an env whose spaces are Gymnasium's, without ``gym`` installed.

    Shimmy's constructor refuses to run without ``gym`` (it converts ``gym``
    spaces); everything else it does (``seed`` on reset, the ``done`` →
    ``terminated``/``truncated`` split, render and close) applies unchanged.
    """
    for name in ("observation_space", "action_space"):
        if not isinstance(getattr(env, name), gym.Space):
            raise ImportError(
                f"{type(env).__name__}.{name} is not a Gymnasium space: converting it needs "
                f"the old 'gym' package: pip install 'gym' and {_INSTALL_HINT}"
            )
    wrapper = compatibility.GymV21CompatibilityV0.__new__(compatibility.GymV21CompatibilityV0)
    wrapper.observation_space = env.observation_space
    wrapper.action_space = env.action_space
    wrapper.metadata = getattr(env, "metadata", {"render_modes": []})
    wrapper.render_mode = None
    wrapper.reward_range = getattr(env, "reward_range", None)
    wrapper.spec = None
    wrapper.gym_env = env
    return wrapper
