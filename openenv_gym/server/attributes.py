"""The server's half of the attribute messages (:mod:`~openenv_gym.protocol.attributes`):
what ``call``, ``get_attr``, ``set_attr`` and ``is_wrapped`` do to the envs of a session.

A ``/ws`` or ``/agents`` session has one env; a ``/vector`` session's envs are
the sub-envs of its Gymnasium vector env. Without ``indices`` a message reaches
every env, as Gymnasium's ``VectorEnv.call`` / ``get_attr`` / ``set_attr`` do;
with them, only the envs named, one by one, as Stable-Baselines3's
``VecEnv.env_method(..., indices=...)`` does: the others are not touched.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any

import gymnasium as gym

from ..protocol import validation_error
from ..protocol.attributes import class_path

__all__ = ["call_attribute", "is_wrapped", "chosen", "OneEnv", "SubEnvs", "answer_is_wrapped"]

#: Wrappers followed inward before :func:`is_wrapped` gives up (a loop of wrappers would not end).
MAX_WRAPPERS = 1_000
#: The attribute :func:`answer_is_wrapped` gives an env that lives in an ``AsyncVectorEnv`` worker.
IS_WRAPPED_ATTRIBUTE = "openenv_gym_is_wrapped"


def call_attribute(env: Any, name: str, args: list, kwargs: dict) -> Any:
    """What Gymnasium's vector envs' ``call`` does to one sub-env: its attribute
    ``name`` (through its wrappers), called with the arguments when callable.
    PettingZoo games, whose wrappers forward attributes themselves, too. An env
    in a process of its own (:class:`~openenv_gym.server.isolation.ProcessEnv`)
    answers for itself."""
    answer = type(env).__dict__.get("call_attribute")
    if answer is not None:
        return answer(env, name, args, kwargs)
    getter = getattr(env, "get_wrapper_attr", None)
    attribute = getter(name) if getter is not None else getattr(env, name)
    return attribute(*args, **kwargs) if callable(attribute) else attribute


def is_wrapped(env: Any, wrapper: str) -> bool:
    """Whether ``env`` or an env its wrappers wrap (``.env``, all the way in) is
    of the class named ``wrapper`` (:func:`~openenv_gym.protocol.attributes.class_path`)
    or of a subclass, as Stable-Baselines3's ``is_wrapped`` asks it; by the names
    of classes, so nothing is imported. An env in a process of its own
    (:class:`~openenv_gym.server.isolation.ProcessEnv`) answers for itself.

        >>> is_wrapped(gym.make("CartPole-v1"), "gymnasium.wrappers.common.TimeLimit")
        True
        >>> is_wrapped(gym.make("CartPole-v1"), "stable_baselines3.common.monitor.Monitor")
        False
    """
    answer = type(env).__dict__.get("is_wrapped")
    if answer is not None:
        return bool(answer(env, wrapper))
    for _ in range(MAX_WRAPPERS):
        if any(class_path(base) == wrapper for base in type(env).__mro__):
            return True
        if not isinstance(env, gym.Wrapper):
            return False
        env = env.env
    return False


def answer_is_wrapped(env: Any) -> Any:
    """``env``, able to answer ``is_wrapped`` from an ``AsyncVectorEnv`` worker
    (whose commands reach an env by attribute name only): an attribute
    :data:`IS_WRAPPED_ATTRIBUTE` on the outermost wrapper, nothing else changed."""
    setattr(env, IS_WRAPPED_ATTRIBUTE, functools.partial(is_wrapped, env))
    return env


def chosen(indices: list[int] | None, num_envs: int) -> list[int]:
    """The env indices a message names (``None``: every env), checked against ``num_envs``."""
    if indices is None:
        return list(range(num_envs))
    if any(i >= num_envs for i in indices):
        raise validation_error(
            ["indices"], f"This session has {num_envs} envs: indices must be below {num_envs}", indices
        )
    return indices


class OneEnv:
    """The one env of a ``/ws`` or ``/agents`` session, reached as :class:`SubEnvs`
    reaches a vector env's (``indices`` is ``[0]`` or ``[]``)."""

    def __init__(self, env: Any) -> None:
        self.env = env

    def call(self, indices: Sequence[int], name: str, args: list, kwargs: dict) -> list:
        return [call_attribute(self.env, name, args, kwargs) for _ in indices]

    def set_attr(self, indices: Sequence[int], name: str, values: Sequence[Any]) -> None:
        for value in values:
            self.env.set_wrapper_attr(name, value)

    def is_wrapped(self, indices: Sequence[int], wrapper: str) -> list[bool]:
        return [is_wrapped(self.env, wrapper) for _ in indices]


class SubEnvs:
    """The sub-envs of a server's ``SyncVectorEnv`` or ``AsyncVectorEnv``, one by
    one: ``call``, ``set_attr`` and ``is_wrapped`` on the envs named only (an
    ``AsyncVectorEnv``'s through the commands its workers take, sent to their pipes
    only), each doing to its env what the vector env's own ``call`` / ``set_attr``
    does to every env."""

    def __init__(self, vector: gym.vector.VectorEnv) -> None:
        self.vector = vector

    def call(self, indices: Sequence[int], name: str, args: list, kwargs: dict) -> list:
        if isinstance(self.vector, gym.vector.SyncVectorEnv):
            return [call_attribute(self.vector.envs[i], name, args, kwargs) for i in indices]
        # A worker whose env raises is shut down (Gymnasium's AsyncVectorEnv): ask first
        # whether the envs have the attribute, so a wrong name costs no worker.
        found = self._commands(indices, [("_call", ("has_wrapper_attr", (name,), {}))] * len(indices))
        if not all(found):
            missing = [i for i, has in zip(indices, found) if not has]
            raise AttributeError(f"the envs {missing} have no attribute {name!r}")
        return self._commands(indices, [("_call", (name, args, kwargs))] * len(indices))

    def set_attr(self, indices: Sequence[int], name: str, values: Sequence[Any]) -> None:
        if isinstance(self.vector, gym.vector.SyncVectorEnv):
            for i, value in zip(indices, values):
                self.vector.envs[i].set_wrapper_attr(name, value)
            return
        self._commands(indices, [("_setattr", (name, value)) for value in values])

    def is_wrapped(self, indices: Sequence[int], wrapper: str) -> list[bool]:
        if isinstance(self.vector, gym.vector.SyncVectorEnv):
            return [is_wrapped(self.vector.envs[i], wrapper) for i in indices]
        return [bool(x) for x in self.call(indices, IS_WRAPPED_ATTRIBUTE, [wrapper], {})]

    def _commands(self, indices: Sequence[int], commands: list[tuple[str, Any]]) -> list:
        vector = self.vector
        if not isinstance(vector, gym.vector.AsyncVectorEnv):
            raise AttributeError(f"{type(vector).__name__} has no sub-envs to reach one by one")
        pipes = [vector.parent_pipes[i] for i in indices]
        for pipe, command in zip(pipes, commands):
            pipe.send(command)
        results, successes = zip(*[pipe.recv() for pipe in pipes]) if pipes else ((), ())
        # Raises what a worker's env raised (and, as Gymnasium does, shuts that worker
        # down); it counts the failures among all envs, so the others count as done.
        vector._raise_if_errors([*successes, *[True] * (vector.num_envs - len(pipes))])
        return list(results)
