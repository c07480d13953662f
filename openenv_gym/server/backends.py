"""Vector backends: what steps the envs of a ``/vector`` session, one class each, in one table.

A backend builds a Gymnasium vector env of ``num_envs`` envs of the server's env in the
autoreset mode a client asked for, so the semantics are Gymnasium's own. It says which
envs it can step at all, and whether ``vector_backend="auto"`` may give it a session.

:data:`BACKENDS` has every backend by name, in the order ``"auto"`` tries them: for each
new session, :func:`choose` takes the first that can step the env and is automatic.

    >>> import gymnasium as gym
    >>> from openenv_gym.server.resolve import resolve
    >>> source = resolve("CartPole-v1")
    >>> list(BACKENDS)
    ['envpool', 'async', 'sync']
    >>> choose("auto", source).name  # not an EnvPool task
    'sync'
    >>> envs = BACKENDS["sync"].build(source, 4, gym.vector.AutoresetMode.NEXT_STEP)
    >>> envs.num_envs
    4
    >>> envs.close()

A new backend is a :class:`Backend` subclass and its row in :data:`BACKENDS`; its name
goes in :data:`VectorBackend` and the CLI's ``--vector-backend`` choices too, which
``tests/test_architecture.py`` holds equal to the table.
"""

from __future__ import annotations

import abc
import functools
import os
import socket
import stat
from collections.abc import Callable, Mapping
from typing import ClassVar, Literal

import gymnasium as gym
from gymnasium.vector import AutoresetMode

from .attributes import SubEnvs, answer_is_wrapped
from .envpool import EnvPoolVectorEnv, PoolFactory
from .source import EnvSource, PoolSource

__all__ = [
    "Backend", "SyncBackend", "AsyncBackend", "EnvPoolBackend", "BACKENDS", "AUTO", "CHOICES",
    "VectorBackend", "choose",
]


class Backend(abc.ABC):
    """One way to step the envs of a vector session (a row of :data:`BACKENDS`)."""

    #: Its name: what ``vector_backend`` says to ask for it, and ``vector_opened`` tells the client.
    name: ClassVar[str]
    #: Whether ``"auto"`` may choose it (for the envs it accepts).
    automatic: ClassVar[bool] = True

    def accepts(self, source: EnvSource) -> bool:
        """Whether it can step the envs of ``source`` (the server refuses to start otherwise)."""
        return True

    def refusal(self, source: EnvSource) -> str:
        """Why it cannot step the envs of ``source``, for a server that asked for it."""
        return f"vector_backend={self.name!r} cannot step the envs of {source.name!r}"

    @abc.abstractmethod
    def build(self, source: EnvSource, num_envs: int, autoreset_mode: AutoresetMode) -> gym.vector.VectorEnv:
        """A vector env of ``num_envs`` envs of ``source`` that autoresets as ``autoreset_mode`` says."""

    def sub_envs(self, envs: gym.vector.VectorEnv, attribute: str) -> SubEnvs:
        """The sub-envs of ``envs`` (a vector env of a session of this backend), one by one,
        for an attribute message (``call``, ``get_attr``, ...) on ``attribute``."""
        return SubEnvs(envs)

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name!r}>"


class EnvPoolBackend(Backend):
    """One EnvPool pool (:mod:`~openenv_gym.server.envpool`) steps all the session's envs on
    a C++ thread pool: for EnvPool tasks only, and always theirs under ``"auto"``."""

    name = "envpool"

    def accepts(self, source: EnvSource) -> bool:
        return _pool_factory(source) is not None

    def refusal(self, source: EnvSource) -> str:
        return (
            f"vector_backend='envpool' steps EnvPool tasks, and {source.name!r} is not one: serve "
            f"'envpool:TASK' (such as 'envpool:CartPole-v1') or a factory returning an EnvPool pool"
        )

    def build(self, source: EnvSource, num_envs: int, autoreset_mode: AutoresetMode) -> gym.vector.VectorEnv:
        pool = _pool_factory(source)
        assert pool is not None  # (the route refuses envpool for other sources)
        return EnvPoolVectorEnv(pool, num_envs, autoreset_mode=autoreset_mode)

    def sub_envs(self, envs: gym.vector.VectorEnv, attribute: str) -> SubEnvs:
        if isinstance(envs, EnvPoolVectorEnv):
            envs.call(attribute)  # raises why: EnvPool's envs are C++, not Python objects
        return SubEnvs(envs)


def _pool_factory(source: EnvSource) -> PoolFactory | None:
    """The pool factory of an EnvPool task's source (its ``pool``), ``None`` for other envs."""
    return source.pool if isinstance(source, PoolSource) else None


class AsyncBackend(Backend):
    """An ``AsyncVectorEnv``: one worker process per sub-env, for slow envs on a many-core
    server, when the server asks for it (``"auto"`` never chooses it; for a 1 ms env of 8
    sessions it paid 1.16x on 2 cores, for CartPole it cost 5-10x: docs/benchmarks.md,
    "Latency mechanisms").

    AsyncVectorEnv forks its workers from the server, which would hand each of them a copy
    of every open TCP socket (the listening one, other clients' connections): a worker
    holding a client's socket keeps that connection open after the server closes it. The
    workers here close those copies first.
    """

    name = "async"
    automatic = False

    def build(self, source: EnvSource, num_envs: int, autoreset_mode: AutoresetMode) -> gym.vector.VectorEnv:
        in_worker = functools.partial(_make_in_worker, source.make, os.getpid())
        return gym.vector.AsyncVectorEnv([in_worker] * num_envs, autoreset_mode=autoreset_mode)


class SyncBackend(Backend):
    """A ``SyncVectorEnv`` in the server's process (stepped inline on the event loop while
    it is fast, on a worker thread once it is slow): any env, and ``"auto"``'s last resort."""

    name = "sync"

    def build(self, source: EnvSource, num_envs: int, autoreset_mode: AutoresetMode) -> gym.vector.VectorEnv:
        return gym.vector.SyncVectorEnv([source.make] * num_envs, autoreset_mode=autoreset_mode, copy=False)


#: Every vector backend by name, in the order ``"auto"`` tries them (:func:`choose`).
BACKENDS: Mapping[str, Backend] = {backend.name: backend for backend in (
    EnvPoolBackend(),
    AsyncBackend(),
    SyncBackend(),
)}

#: The ``vector_backend`` that lets :func:`choose` pick a backend for each new session.
AUTO = "auto"
#: Every ``vector_backend`` a server takes.
CHOICES: tuple[str, ...] = (AUTO, *BACKENDS)
#: A server's ``vector_backend``, as a type: :data:`CHOICES` (a Literal cannot be built
#: from the table; ``tests/test_architecture.py`` holds the two equal).
VectorBackend = Literal["auto", "envpool", "async", "sync"]


def choose(configured: VectorBackend, source: EnvSource) -> Backend:
    """The backend of the vector sessions of ``source`` on a server configured with
    ``configured`` (a name of :data:`CHOICES`): that backend, or for ``"auto"`` the first
    automatic one of :data:`BACKENDS` that accepts the source."""
    if configured != AUTO:
        return BACKENDS[configured]
    return next(b for b in BACKENDS.values() if b.automatic and b.accepts(source))


def _make_in_worker(make: Callable[[], gym.Env], server_pid: int) -> gym.Env:
    """Build the env for an AsyncVectorEnv; in a worker (not the server,
    where AsyncVectorEnv builds one env to read its spaces), first close the
    TCP sockets inherited from the server, and let the env answer ``is_wrapped``
    (:func:`~openenv_gym.server.attributes.answer_is_wrapped`)."""
    if os.getpid() != server_pid:
        _close_inherited_tcp_sockets()
        return answer_is_wrapped(make())
    return make()


def _close_inherited_tcp_sockets() -> None:
    """Close this process's IPv4/IPv6 sockets (a worker's pipes to its parent
    are Unix sockets and stay open)."""
    fd_dir = next((d for d in ("/proc/self/fd", "/dev/fd") if os.path.isdir(d)), None)
    if fd_dir is None:
        return
    for name in os.listdir(fd_dir):
        fd = int(name)
        try:
            if fd < 3 or not stat.S_ISSOCK(os.fstat(fd).st_mode):
                continue
            probe = socket.socket(fileno=fd)
        except OSError:
            continue  # the listing's own descriptor, closed by now
        family = probe.family
        probe.detach()
        if family in (socket.AF_INET, socket.AF_INET6):
            os.close(fd)
