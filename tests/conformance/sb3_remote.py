"""Stable-Baselines3's vector envs as the adapted suites see them:
:class:`~openenv_gym.sb3.RemoteVecEnv` s serving the test's own env factories.

The adaptation (:mod:`tests.conformance.sb3_adapt`) rebinds ``DummyVecEnv``,
``SubprocVecEnv``, ``make_vec_env`` and ``check_env`` in SB3's test modules to
the names here. Each takes SB3's arguments, mounts one server per env factory
on the session's :class:`~tests.conformance.hosting.AppHost` (so
``SubprocVecEnv([make_env, make_monitored_env])`` gets two servers, each
serving its own factory) and connects a :class:`~openenv_gym.RemoteVectorEnv`
to them with same-step autoreset, SB3's, in the mode the variant named by
:data:`VARIANT_ENV` gives the class:

============  ===============  =================
variant       ``DummyVecEnv``  ``SubprocVecEnv``
============  ===============  =================
``mapped``    batched          sessions
``batched``   batched          batched
``sessions``  sessions         sessions
============  ===============  =================

``mapped`` (the default) is the natural reading: one vector session per
server for the in-process vector env, one ``/ws`` session per env for the
one of worker processes. The other two run every test in one mode.

Arguments with no remote meaning (``SubprocVecEnv``'s ``start_method``) are
ignored. A module's comparisons such as ``vec_env_class == DummyVecEnv`` and
``isinstance(env, DummyVecEnv)`` stay true of what it builds: the name
itself is rebound, so the class compared is the class built.
"""

from __future__ import annotations

import inspect
import os
from collections.abc import Callable, Sequence
from typing import Any, ClassVar

import gymnasium as gym
from stable_baselines3.common import env_checker, env_util

import openenv_gym
from openenv_gym.client.vector import VectorMode
from openenv_gym.sb3 import RemoteVecEnv

from . import hosting

__all__ = ["VARIANTS", "VARIANT_ENV", "DummyVecEnv", "SubprocVecEnv", "check_env", "make_vec_env", "mode_of"]

#: ``variant: {SB3 class name: RemoteVectorEnv mode}``.
VARIANTS: dict[str, dict[str, VectorMode]] = {
    "mapped": {"DummyVecEnv": "batched", "SubprocVecEnv": "sessions"},
    "batched": {"DummyVecEnv": "batched", "SubprocVecEnv": "batched"},
    "sessions": {"DummyVecEnv": "sessions", "SubprocVecEnv": "sessions"},
}
#: The environment variable naming the variant a run of the adapted suite uses.
VARIANT_ENV = "OPENENV_GYM_SB3_VARIANT"
#: Sessions each server allows: the one a vector env opens, and room to spare.
MAX_SESSIONS = 4


def mode_of(kind: str) -> VectorMode:
    """The ``RemoteVectorEnv`` mode of the SB3 class ``kind`` in this run's variant."""
    name = os.environ.get(VARIANT_ENV, "mapped")
    if name not in VARIANTS:
        raise ValueError(f"{VARIANT_ENV} must be one of {', '.join(VARIANTS)}, not {name!r}")
    return VARIANTS[name][kind]


def _serve(env: Callable[[], Any]) -> str:
    """Mount a server of ``env`` (a factory) on the session's host; its base URL.

    Batched sessions use the ``sync`` backend, the envs in the server's process
    (``auto``'s choice too, named so that a case never depends on it).
    """
    return hosting.current_host().serve(env, max_sessions=MAX_SESSIONS, vector_backend="sync")


class _ServedVecEnv(RemoteVecEnv):
    """A ``RemoteVecEnv`` over one server per env factory, in the mode its
    class (:attr:`sb3_class`) has in this run's variant."""

    #: The SB3 class this one stands for (a key of each of :data:`VARIANTS`).
    sb3_class: ClassVar[str]

    def __init__(self, env_fns: Sequence[Callable[[], gym.Env]]) -> None:
        env_fns = list(env_fns)
        if not env_fns:
            raise ValueError("a VecEnv needs at least one env factory")
        urls = [_serve(fn) for fn in env_fns]
        mode = mode_of(self.sb3_class)
        venv = openenv_gym.RemoteVectorEnv(urls, num_envs=len(urls), mode=mode, autoreset_mode="SameStep")
        hosting.track(venv)
        super().__init__(venv)


class DummyVecEnv(_ServedVecEnv):
    """``DummyVecEnv``'s signature, remote envs (batched mode in the ``mapped`` variant)."""

    sb3_class = "DummyVecEnv"

    def __init__(self, env_fns: list[Callable[[], gym.Env]]) -> None:
        super().__init__(env_fns)


class SubprocVecEnv(_ServedVecEnv):
    """``SubprocVecEnv``'s signature, remote envs (sessions mode in the
    ``mapped`` variant); ``start_method`` (of the worker processes) is ignored."""

    sb3_class = "SubprocVecEnv"

    def __init__(self, env_fns: list[Callable[[], gym.Env]], start_method: str | None = None) -> None:
        super().__init__(env_fns)


_make_vec_env_signature = inspect.signature(env_util.make_vec_env)


def make_vec_env(*args: Any, **kwargs: Any) -> Any:
    """SB3's ``make_vec_env``, its default ``vec_env_cls`` the remote
    :class:`DummyVecEnv` (the env factories are the very ones it builds)."""
    bound = _make_vec_env_signature.bind(*args, **kwargs)
    if bound.arguments.get("vec_env_cls") is None:
        bound.arguments["vec_env_cls"] = DummyVecEnv
    return env_util.make_vec_env(*bound.args, **bound.kwargs)


def check_env(env: gym.Env, warn: bool = True, skip_render_check: bool = True) -> None:
    """SB3's ``check_env`` on a :class:`~openenv_gym.RemoteEnv` of a server
    serving ``env`` (the test's env object itself: its one session's env)."""
    remote = openenv_gym.RemoteEnv(_serve(lambda: env))
    hosting.track(remote)
    env_checker.check_env(remote, warn=warn, skip_render_check=skip_render_check)
