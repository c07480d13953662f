"""The pool's broker: one named Ray actor that owns the servers and leases their slots.

:class:`PoolBroker` starts the server actors (:class:`~openenv_gym.ray.server.EnvServer`)
and keeps the pool's table: each server's URL, node and process, the session
slots each lease holds on it, and every URL a server ever had. Leases go
least-loaded first and never past a server's ``sessions_per_server``, so any
number of trainer processes can share one pool through it. A health check
restarts servers that stop answering; servers that move tell the broker their
new URL, and :meth:`PoolBroker.locate` sends reconnecting clients there.

It is an asyncio actor: every method is a coroutine and none blocks, so
thousands of clients can ask at once while a scale-up waits for new servers.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import ray
from ray.exceptions import ActorDiedError, ActorUnavailableError

from ..client.vector import _least_loaded_split
from ..server.source import EnvLike
from .server import EnvServer

__all__ = ["PoolBroker", "ServerSpec"]

logger = logging.getLogger("openenv_gym.ray")


@dataclass(frozen=True)
class ServerSpec:
    """What every server of a pool runs, and where Ray may place it."""

    env: EnvLike
    sessions_per_server: int
    host: str | None
    server_kwargs: Mapping[str, Any]
    #: Options of the server actors (``num_cpus``, ``resources``, ``scheduling_strategy``,
    #: ``runtime_env``, ``max_restarts``): given to ``ray.remote``'s ``.options``.
    actor_options: Mapping[str, Any]


@dataclass
class _Server:
    handle: Any
    url: str = ""
    node_id: str = ""
    pid: int = 0
    starts: int = 0
    #: "starting", "alive", "restarting", "unhealthy" (its /health failed), "dead".
    state: str = "starting"
    failures: int = 0  # health checks failed in a row


@dataclass
class _Lease:
    slots: dict[int, int]  # server index -> sessions
    owner: Any  # the actor holding it (released when it dies), or None
    #: Servers removed by a scale-down -> where their slots went.
    moved: dict[int, int] = field(default_factory=dict)


class PoolBroker:
    """The broker actor of a pool (created by :func:`~openenv_gym.ray.launch`).

    Args:
        spec: what the servers run and their actor options.
        health_interval: seconds between health checks of every server
            (``None``: no background checks; :meth:`health` still checks).
        health_timeout: seconds a server's ``/health`` may take.
    """

    def __init__(self, spec: ServerSpec, health_interval: float | None, health_timeout: float) -> None:
        self.spec = spec
        self.health_timeout = health_timeout
        self.servers: dict[int, _Server] = {}
        self.leases: dict[str, _Lease] = {}
        self.urls_seen: dict[str, int] = {}  # every URL a server had -> its index
        self._health: dict[int, dict[str, Any]] = {}  # the sessions each server reported last
        self._indices = itertools.count()
        self._lease_ids = itertools.count(1)
        self._checker = (
            asyncio.get_event_loop().create_task(self._check_forever(health_interval))
            if health_interval
            else None
        )

    # -- servers ----------------------------------------------------------------

    async def scale(self, num_servers: int) -> list[str]:
        """Start or stop servers until there are ``num_servers``; the URLs.

        Stopping picks the servers with the fewest leased slots; the slots they
        held move, one block per lease and server, to servers with room, and
        the clients of those leases reconnect there. When the others lack the
        room, nothing is stopped and the error says so.
        """
        if num_servers < 1:
            raise ValueError(f"num_servers must be at least 1, not {num_servers}")
        extra = num_servers - len(self.servers)
        if extra > 0:
            await self._start([next(self._indices) for _ in range(extra)])
        elif extra < 0:
            await self._stop(self._plan_removal(-extra))
        return await self.urls()

    async def _start(self, indices: list[int]) -> None:
        me = ray.get_runtime_context().current_actor
        spec = self.spec
        remote = ray.remote(EnvServer).options(**spec.actor_options)
        for index in indices:
            handle = remote.remote(
                spec.env, index=index, broker=me, host=spec.host,
                max_sessions=spec.sessions_per_server, server_kwargs=spec.server_kwargs,
            )
            self.servers[index] = _Server(handle)
        results = await asyncio.gather(
            *(self.servers[i].handle.address.remote() for i in indices), return_exceptions=True
        )
        failed = [(i, r) for i, r in zip(indices, results) if isinstance(r, BaseException)]
        for index, address in zip(indices, results):
            if not isinstance(address, BaseException):
                self._record(index, address)
        if failed:
            for index in indices:
                with contextlib.suppress(Exception):
                    ray.kill(self.servers.pop(index).handle, no_restart=True)
            index, error = failed[0]
            raise RuntimeError(f"server {index} of the pool did not start: {error}") from error

    def _plan_removal(self, count: int) -> dict[int, list[tuple[str, int]]]:
        """The ``count`` servers to stop (fewest leased slots first) and, per
        server, where each lease's slots go: ``{index: [(lease, new index)]}``."""
        load = self._loads()
        victims = sorted(self.servers, key=lambda i: (load[i], -i))[:count]
        room = {i: self.spec.sessions_per_server - load[i] for i in self.servers if i not in victims}
        plan: dict[int, list[tuple[str, int]]] = {}
        for victim in victims:
            plan[victim] = []
            for lease_id, lease in self.leases.items():
                held = lease.slots.get(victim, 0)
                if not held:
                    continue
                target = max(room, key=lambda i: (room[i], -i), default=None)
                if target is None or room[target] < held:
                    raise RuntimeError(
                        f"cannot stop {count} server(s): the remaining servers lack room for the "
                        f"{held} sessions lease {lease_id} holds on server {victim}. "
                        f"Release leases (close their vector envs) first, or scale down less"
                    )
                room[target] -= held
                plan[victim].append((lease_id, target))
        return plan

    async def _stop(self, plan: dict[int, list[tuple[str, int]]]) -> None:
        for victim, moves in plan.items():
            for lease_id, target in moves:
                lease = self.leases[lease_id]
                lease.slots[target] = lease.slots.get(target, 0) + lease.slots.pop(victim)
                lease.moved[victim] = target
        await asyncio.gather(*(self._retire(self.servers.pop(i)) for i in plan))

    async def _retire(self, server: _Server) -> None:
        with contextlib.suppress(Exception):
            await asyncio.wait_for(server.handle.close.remote(), 30)
        with contextlib.suppress(Exception):
            ray.kill(server.handle, no_restart=True)

    def _record(self, index: int, address: Mapping[str, Any]) -> None:
        server = self.servers.get(index)
        if server is None:  # a server this broker already stopped
            return
        if address["pid"] != server.pid:
            server.starts += 1
        server.url, server.node_id, server.pid = address["url"], address["node_id"], address["pid"]
        server.state, server.failures = "alive", 0
        self.urls_seen[server.url] = index

    async def register(self, index: int, address: Mapping[str, Any]) -> None:
        """A server (re)started: where it runs now."""
        self._record(index, address)

    async def port_hint(self, index: int, host: str) -> int:
        """The port a restarting server had, if it was on ``host`` (else 0: any)."""
        server = self.servers.get(index)
        if server is None or not server.url:
            return 0
        prefix = f"http://[{host}]:" if ":" in host else f"http://{host}:"
        return int(server.url[len(prefix):]) if server.url.startswith(prefix) else 0

    async def urls(self) -> list[str]:
        """Every server's current URL, in the order they were started."""
        return [self.servers[i].url for i in sorted(self.servers)]

    # -- leases -----------------------------------------------------------------

    def _loads(self) -> dict[int, int]:
        load = dict.fromkeys(self.servers, 0)
        for lease in self.leases.values():
            for index, held in lease.slots.items():
                load[index] = load.get(index, 0) + held
        return load

    async def acquire(self, num_sessions: int, owner: Any = None) -> tuple[str, dict[str, int]] | str:
        """Lease ``num_sessions`` slots, least-loaded servers first: the lease's
        id and ``{url: sessions}``; or, when the pool lacks the room, why."""
        load = self._loads()
        order = sorted(self.servers)
        capacity = self.spec.sessions_per_server
        free = sum(capacity - load[i] for i in order)
        if num_sessions > free:
            return (
                f"the pool has room for {free} more sessions ({len(order)} servers x {capacity} "
                f"sessions, {sum(load.values())} leased) but {num_sessions} were asked for: ask for "
                f"fewer, release leases (close vector envs), or grow the pool with scale()"
            )
        sizes = _least_loaded_split(num_sessions, [(load[i], capacity - load[i]) for i in order])
        slots = {i: n for i, n in zip(order, sizes) if n}
        lease_id = f"lease-{next(self._lease_ids)}"
        self.leases[lease_id] = _Lease(slots, owner)
        return lease_id, {self.servers[i].url: n for i, n in slots.items()}

    async def release(self, lease_id: str) -> None:
        """Give a lease's slots back (idempotent)."""
        self.leases.pop(lease_id, None)

    async def locate(self, lease_id: str, url: str) -> str:
        """Where a client of ``lease_id`` that last reached ``url`` reconnects:
        that server's URL now (after a restart, or on the server its slots
        moved to when it was stopped)."""
        index = self.urls_seen.get(url)
        lease = self.leases.get(lease_id)
        if index is None:
            return url
        while lease is not None and index in lease.moved:
            index = lease.moved[index]
        server = self.servers.get(index)
        return server.url if server is not None else url

    # -- health -----------------------------------------------------------------

    async def health(self) -> list[dict[str, Any]]:
        """Check every server now: its ``/health`` and where it runs, with
        ``index``, ``state``, ``starts`` and the sessions ``leased`` on it."""
        await self._check()
        load = self._loads()
        return [
            {"index": index, "url": server.url, "node_id": server.node_id, "pid": server.pid,
             "state": server.state, "starts": server.starts, "leased": load[index],
             **self._health.get(index, {})}
            for index, server in sorted(self.servers.items())
        ]

    async def _check_forever(self, interval: float) -> None:
        while True:
            await asyncio.sleep(interval)
            try:
                await self._check()
            except Exception:  # noqa: BLE001 - the next round tries again
                logger.exception("health check of the pool failed")

    async def _check(self) -> None:
        """One round: each server's ``/health``; a server that failed twice in
        a row is killed for Ray to restart; leases of dead owners are released.

        A server still starting is not checked: its ``/health`` call waits for the actor
        to be built, which on a busy machine, or with an env slow to build, takes longer
        than a check may, and :meth:`scale` waits for it and raises if it fails."""
        indices = sorted(i for i, server in self.servers.items() if server.state != "starting")
        results = await asyncio.gather(*(self._check_one(i) for i in indices), return_exceptions=True)
        self._health = {i: r for i, r in zip(indices, results) if isinstance(r, dict)}
        await self._release_orphans()

    async def _check_one(self, index: int) -> dict[str, Any] | None:
        server = self.servers[index]
        try:
            health = await asyncio.wait_for(server.handle.health.remote(self.health_timeout), self.health_timeout + 5)
        except ActorDiedError:
            server.state = "dead"  # its restarts are spent: health() reports it
            return None
        except ActorUnavailableError:
            server.state = "restarting"
            return None
        except Exception as error:  # noqa: BLE001 - no answer, or not a healthy one
            if server.state == "restarting":
                return None  # not up again yet: it registers when it is (a restart is no failure)
            server.failures += 1
            server.state = "unhealthy"
            if server.failures >= 2:
                logger.warning("server %d (%s) failed %d health checks: restarting it (%s)",
                               index, server.url, server.failures, error)
                server.failures = 0
                with contextlib.suppress(Exception):
                    ray.kill(server.handle, no_restart=False)
                server.state = "restarting"
            return None
        if health.get("pid") != server.pid or health.get("url") != server.url:
            self._record(index, health)
        server.state, server.failures = "alive", 0
        return {k: health[k] for k in ("active_sessions", "max_sessions", "available_sessions") if k in health}

    async def _release_orphans(self) -> None:
        """Release the leases whose owner actor is dead (a crashed EnvRunner's)."""
        owned = [(lease_id, lease.owner) for lease_id, lease in self.leases.items() if lease.owner is not None]

        async def dead(owner: Any) -> bool:
            try:
                await asyncio.wait_for(owner.__ray_ready__.remote(), 1.0)
            except ActorDiedError:
                return True
            except Exception:  # noqa: BLE001 - busy or restarting: alive as far as we know
                return False
            return False

        verdicts = await asyncio.gather(*(dead(owner) for _, owner in owned))
        for (lease_id, _), is_dead in zip(owned, verdicts):
            if is_dead:
                logger.warning("releasing %s: the actor holding it is gone", lease_id)
                self.leases.pop(lease_id, None)

    # -- shutdown ---------------------------------------------------------------

    async def close(self) -> None:
        """Stop every server (each drains its sessions first)."""
        if self._checker is not None:
            self._checker.cancel()
        servers = list(self.servers.values())
        self.servers.clear()
        self.leases.clear()
        await asyncio.gather(*(self._retire(s) for s in servers))

