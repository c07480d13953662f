"""Remote envs that pickle: as the arguments they were created with.

A remote env holds a socket, which no pickle can carry; what it stands for is
"a session on that server, connected so". :class:`PicklesAsArguments` pickles
an env as its class and the arguments of its ``__init__``, and unpickling
creates the env anew from them: **a copy is a new env on the same server** (a
new connection, a new session, no episode yet), not the same episode. That is
what SuperSuit's ``concat_vec_envs_v1`` (which copies envs with cloudpickle),
``multiprocessing``, Ray and RLlib need of an env they hand to their workers.

    >>> import pickle, openenv_gym
    >>> with openenv_gym.local_server("CartPole-v1") as url:   # doctest: +SKIP
    ...     env = openenv_gym.RemoteEnv(url)
    ...     copy = pickle.loads(pickle.dumps(env))   # a second session on the server
    ...     copy.reset(seed=0)
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, TypeVar

__all__ = ["PicklesAsArguments", "remembers_arguments"]

F = TypeVar("F", bound=Callable[..., None])


def remembers_arguments(init: F) -> F:
    """Decorate the ``__init__`` of a :class:`PicklesAsArguments` class: it
    remembers the arguments of the outermost such call (a subclass's own
    decorated ``__init__`` wins over the ones it calls with ``super()``)."""

    @functools.wraps(init)
    def remembering(self: Any, *args: Any, **kwargs: Any) -> None:
        if "_created_with" not in self.__dict__:
            self.__dict__["_created_with"] = (remembering, args, kwargs)
        init(self, *args, **kwargs)

    return remembering  # type: ignore[return-value]


def _recreate(cls: type[Any], init: Callable[..., None], args: tuple, kwargs: dict) -> Any:
    """Unpickle: a new ``cls`` made by the ``__init__`` that made the original."""
    env = object.__new__(cls)
    init(env, *args, **kwargs)
    return env


class PicklesAsArguments:
    """Pickles as the class and its ``__init__`` arguments (see the module)."""

    def __reduce__(self) -> tuple[Callable[..., Any], tuple]:
        created = self.__dict__.get("_created_with")
        if created is None:  # pragma: no cover - every remote env's __init__ remembers
            raise TypeError(f"{type(self).__name__} cannot be pickled: it does not know how it was created")
        return _recreate, (type(self), *created)
