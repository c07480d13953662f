"""A pool of openenv-gym servers on a Ray cluster: :func:`launch` and :class:`ServerPool`.

    >>> import ray
    >>> import openenv_gym.ray as oray
    >>> ray.init()                                                        # doctest: +SKIP
    >>> with oray.launch("CartPole-v1", num_servers=4, sessions_per_server=64) as pool:   # doctest: +SKIP
    ...     envs = pool.vector_env(128)        # a RemoteVectorEnv over the pool's leased slots
    ...     obs, infos = envs.reset(seed=0)
    ...     pool.urls                          # plain OpenEnv URLs, for any client or trainer

Each server is a Ray actor (:class:`~openenv_gym.ray.server.EnvServer`) that Ray
places (spread over the nodes by default) and restarts when it dies. One named
broker actor (:class:`~openenv_gym.ray.broker.PoolBroker`) owns the servers and
leases their session slots, so many processes share a pool without
oversubscribing a server: :func:`connect` finds a pool by name from any process
of the cluster.
"""

from __future__ import annotations

import atexit
import contextlib
import dataclasses
import threading
import time
from collections.abc import Mapping
from typing import Any, Literal

import numpy as np
import ray
from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

from ..client.retry import RECONNECTED, Reconnect
from ..client.vector import RemoteVectorEnv
from ..errors import OpenEnvGymError, PoolCapacityError
from ..server.options import DEFAULT_MAX_SESSIONS
from ..server.source import EnvLike
from .broker import PoolBroker, ServerSpec

__all__ = ["launch", "connect", "ServerPool", "Lease", "PoolVectorEnv", "PoolCapacityError", "NAMESPACE"]

#: The Ray namespace of every pool's broker, so any job of the cluster finds a pool by name.
NAMESPACE = "openenv_gym"
#: How the vector envs of a pool reconnect unless told otherwise: about a minute of
#: retries, time for Ray to restart a server (or move it to another node).
POOL_RECONNECT = Reconnect(attempts=12, backoff=0.2, max_backoff=8.0)

Placement = Literal["spread", "pack"]
_STRATEGIES = {"spread": "SPREAD", "pack": "DEFAULT"}


def launch(
    env: EnvLike,
    *,
    num_servers: int,
    sessions_per_server: int = DEFAULT_MAX_SESSIONS,
    num_cpus_per_server: float = 1.0,
    resources: Mapping[str, float] | None = None,
    placement: Placement | Any = "spread",
    runtime_env: Mapping[str, Any] | None = None,
    server_kwargs: Mapping[str, Any] | None = None,
    max_restarts: int = -1,
    host: str | None = None,
    name: str = "openenv-pool",
    health_interval: float | None = 10.0,
    health_timeout: float = 10.0,
) -> ServerPool:
    """Start ``num_servers`` openenv-gym servers of ``env`` as Ray actors.

    Call it on a driver connected to Ray (``ray.init()``); returns once every
    server answers.

    Args:
        env: anything :func:`~openenv_gym.create_app` serves: a Gymnasium id,
            ``"module:factory"``, an env class or factory, a PettingZoo env, a
            legacy Gym env. It must be importable on every node (install your
            package there, or ship it with ``runtime_env``).
        num_servers: server actors to start.
        sessions_per_server: sessions each server holds (its ``max_sessions``);
            a vector session of N envs takes N. The broker never leases more.
        num_cpus_per_server: CPUs Ray reserves for each server: 1 for envs whose
            steps compute (one Python process, one GIL, per server), a fraction
            or 0 for envs that mostly wait (LLM tools, sandboxes).
        resources: custom Ray resources each server needs (``{"env_host": 1}``).
        placement: ``"spread"`` (over as many nodes as possible), ``"pack"``
            (Ray's default: fill nodes in turn), or any Ray scheduling strategy
            (a placement group's, a node affinity).
        runtime_env: the servers' Ray runtime environment (``pip``, ``env_vars``...).
        server_kwargs: more keyword arguments of :func:`~openenv_gym.create_app`
            (``env_kwargs``, ``token``, ``step_timeout``, ``busy_poll``...).
        max_restarts: how often Ray restarts a server that died (``-1``: always).
        host: the address servers bind; ``None``: each node's IP address (what
            other nodes reach). Ray on one machine only: ``"127.0.0.1"``.
        name: the broker's name (in the ``openenv_gym`` namespace), for :func:`connect`.
        health_interval: seconds between the broker's health checks; a server
            that fails two in a row is restarted (one still starting, or being
            restarted, is not judged by them). ``None``: no background checks.
        health_timeout: seconds a server's ``/health`` may take.

    Raises:
        ValueError: a bad argument, or a pool of that ``name`` already running.
        RuntimeError: a server did not start (its error is attached).
    """
    if num_servers < 1 or sessions_per_server < 1:
        raise ValueError("num_servers and sessions_per_server must be at least 1")
    if isinstance(placement, str) and placement not in _STRATEGIES:
        raise ValueError(f"placement must be 'spread', 'pack' or a Ray scheduling strategy, not {placement!r}")
    if not ray.is_initialized():
        ray.init()
    with contextlib.suppress(ValueError):
        ray.get_actor(name, namespace=NAMESPACE)
        raise ValueError(f"a pool named {name!r} is running already: close it, or launch with another name=")
    options: dict[str, Any] = {
        "num_cpus": num_cpus_per_server,
        "scheduling_strategy": _STRATEGIES[placement] if isinstance(placement, str) else placement,
        "max_restarts": max_restarts,
    }
    if resources:
        options["resources"] = dict(resources)
    if runtime_env:
        options["runtime_env"] = dict(runtime_env)
    spec = ServerSpec(env, sessions_per_server, host, dict(server_kwargs or {}), options)
    here = ray.get_runtime_context().get_node_id()
    broker: Any = (
        ray.remote(PoolBroker)
        .options(
            name=name, namespace=NAMESPACE, num_cpus=0, max_concurrency=1000,
            # The broker stays with the driver: a node lost elsewhere cannot take it.
            scheduling_strategy=NodeAffinitySchedulingStrategy(here, soft=False),
        )
        .remote(spec, health_interval, health_timeout)
    )
    pool = ServerPool(broker, name, owner=True)
    try:
        ray.get(broker.scale.remote(num_servers))
    except BaseException:
        pool.close()
        raise
    return pool


def connect(name: str = "openenv-pool") -> ServerPool:
    """The pool named ``name``, from any process connected to the same Ray cluster
    (another trainer, an RLlib EnvRunner). Its leases and vector envs work as on
    the driver; closing it there only lets it go: the pool lives until the
    process that launched it closes it, or exits."""
    try:
        broker = ray.get_actor(name, namespace=NAMESPACE)
    except ValueError:
        raise OpenEnvGymError(
            f"no pool named {name!r} on this Ray cluster: launch one with openenv_gym.ray.launch(..., name={name!r})"
        ) from None
    return ServerPool(broker, name, owner=False)


class Lease:
    """Session slots leased from a pool: ``placement`` (``{url: sessions}``) until
    :meth:`release`. A context manager; released at interpreter exit at the latest."""

    def __init__(self, broker: Any, lease_id: str, placement: dict[str, int]) -> None:
        self.id = lease_id
        self.placement = placement
        self._broker = broker
        self._released = threading.Event()
        atexit.register(self.release)

    @property
    def size(self) -> int:
        return sum(self.placement.values())

    def locate(self, url: str) -> str:
        """Where the server last reached at ``url`` is now (for :class:`Reconnect`'s ``relocate``)."""
        return ray.get(self._broker.locate.remote(self.id, url), timeout=30)

    def release(self) -> None:
        """Give the slots back (idempotent; never raises)."""
        if self._released.is_set():
            return
        self._released.set()
        atexit.unregister(self.release)
        if not ray.is_initialized():  # Ray is gone, and the pool with it (calling would start a new Ray)
            return
        with contextlib.suppress(Exception):  # the pool may be gone already
            ray.get(self._broker.release.remote(self.id), timeout=10)

    def __enter__(self) -> Lease:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.release()

    def __repr__(self) -> str:
        return f"<Lease {self.id} {self.placement}>"


class ServerPool:
    """Servers of one env on a Ray cluster, behind one broker (see :func:`launch`).

    Every URL in :attr:`urls` is a normal OpenEnv server: official clients, LLM
    trainers and ``RemoteVectorEnv`` use it as they use any other. A context
    manager: leaving it (or :meth:`close`) stops every server.
    """

    def __init__(self, broker: Any, name: str, *, owner: bool) -> None:
        self.name = name
        self._broker = broker
        self._owner = owner
        self._closed = False

    @property
    def urls(self) -> list[str]:
        """The servers' URLs now (a server restarted elsewhere has a new one)."""
        return ray.get(self._live().urls.remote())

    def health(self) -> list[dict[str, Any]]:
        """Check every server now. One dict per server: ``index``, ``url``,
        ``node_id``, ``pid``, ``state`` (``"alive"``, ``"restarting"``,
        ``"unhealthy"``, ``"dead"``), ``starts`` (1 + restarts), ``leased``
        (sessions leased on it) and, from its ``/health``, ``active_sessions``,
        ``max_sessions``, ``available_sessions``."""
        return ray.get(self._live().health.remote())

    def lease(self, num_sessions: int) -> Lease:
        """Lease ``num_sessions`` session slots, least-loaded servers first.

        Raises :class:`PoolCapacityError` when the pool lacks the room (it
        never leases a server past ``sessions_per_server``)."""
        if num_sessions < 1:
            raise ValueError(f"num_sessions must be at least 1, not {num_sessions}")
        owner = ray.get_runtime_context().current_actor if ray.get_runtime_context().get_actor_id() else None
        answer = ray.get(self._live().acquire.remote(num_sessions, owner))
        if isinstance(answer, str):
            raise PoolCapacityError(f"pool {self.name!r}: {answer}")
        return Lease(self._broker, *answer)

    def vector_env(self, num_envs: int, **kwargs: Any) -> PoolVectorEnv:
        """A :class:`~openenv_gym.RemoteVectorEnv` of ``num_envs`` envs on
        slots leased from the pool (see :class:`PoolVectorEnv`)."""
        return PoolVectorEnv(self, num_envs, **kwargs)

    def scale(self, num_servers: int) -> list[str]:
        """Grow or shrink the pool to ``num_servers`` servers; the URLs. Shrinking
        stops the servers with the fewest leased sessions and moves their leases'
        slots to the others (their clients reconnect there, under the reconnect
        policy); it refuses when the others lack the room."""
        return ray.get(self._live().scale.remote(num_servers))

    def close(self) -> None:
        """Stop every server and the broker, and wait until they are gone
        (idempotent). A pool found with :func:`connect` is only let go of."""
        if self._closed:
            return
        self._closed = True
        if not self._owner:
            return
        with contextlib.suppress(Exception):
            ray.get(self._broker.close.remote(), timeout=60)
        with contextlib.suppress(Exception):
            ray.kill(self._broker, no_restart=True)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:  # the name is free again once the broker is gone
            try:
                ray.get_actor(self.name, namespace=NAMESPACE)
            except ValueError:
                return
            time.sleep(0.1)

    def _live(self) -> Any:
        if self._closed:
            raise OpenEnvGymError(f"pool {self.name!r} is closed")
        return self._broker

    def __enter__(self) -> ServerPool:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<ServerPool {self.name!r}{' closed' if self._closed else ''}>"


class PoolVectorEnv(RemoteVectorEnv):
    """A :class:`~openenv_gym.RemoteVectorEnv` on session slots leased from a pool.

    Args:
        pool: a :class:`ServerPool`, or the name of one (:func:`connect`).
        num_envs: sub-envs, one leased slot each; closing the env releases them.
        kwargs: as for :class:`~openenv_gym.RemoteVectorEnv`. ``reconnect`` is on
            (:data:`POOL_RECONNECT` unless given) and follows servers that Ray
            restarts or moves: the sub-envs of a lost server end their episode
            (``truncated``, flagged ``infos["openenv_gym.reconnected"]``) and
            start the next on the server's new address, as their autoreset mode
            says; :attr:`episodes_lost` counts them.
    """

    def __init__(self, pool: ServerPool | str, num_envs: int, **kwargs: Any) -> None:
        pool = connect(pool) if isinstance(pool, str) else pool
        self.lease = pool.lease(num_envs)
        policy = kwargs.pop("reconnect", None)
        if policy is None or policy is True:
            policy = POOL_RECONNECT
        if policy is not False:
            kwargs["reconnect"] = dataclasses.replace(policy, relocate=self.lease.locate)
        #: Episodes ended by a lost server (truncated and flagged), since the env was made.
        self.episodes_lost = 0
        try:
            super().__init__(self.lease.placement, num_envs, **kwargs)
        except BaseException:
            self.lease.release()
            raise

    def step(self, actions: Any) -> tuple[Any, np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
        obs, rewards, terminations, truncations, infos = super().step(actions)
        flagged = infos.get(f"_{RECONNECTED}")
        if flagged is not None:
            self.episodes_lost += int(np.count_nonzero(flagged & truncations))
        return obs, rewards, terminations, truncations, infos

    def close_extras(self, **kwargs: Any) -> None:
        super().close_extras(**kwargs)
        self.lease.release()
