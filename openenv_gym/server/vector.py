"""Batched vector sessions: one WebSocket drives a whole Gymnasium vector env.

The route ``/vector`` (:mod:`openenv_gym.protocol.vector`) is an openenv-gym
extension; stock OpenEnv clients never open it. Its first message opens the
vector env, then each ``reset`` / ``step`` is one frame each way carrying
stacked arrays.

The server builds ``gymnasium.vector.SyncVectorEnv`` (``vector_backend="sync"``,
stepped inline on the event loop while it is fast, on a worker thread once it
is slow) or ``AsyncVectorEnv`` (``"async"``: one process per sub-env) of the
server's env, with the requested autoreset mode, so the semantics are
Gymnasium's own. ``"auto"`` (the default) picks ``"sync"`` until the env has
proven slow (every one of its recent steps in this server took
:data:`SLOW_ENV_STEP` or more, see :class:`StepClock`), then ``"async"`` for
the sessions opened after that. A vector session of N envs takes N of the
server's ``max_sessions`` slots.

AsyncVectorEnv forks its workers from the server, which would hand each of
them a copy of every open TCP socket (the listening one, other clients'
connections): a worker holding a client's socket keeps that connection open
after the server closes it. The workers here close those copies first.
"""

from __future__ import annotations

import collections
import functools
import os
import socket
import stat
from typing import Any, Literal

import gymnasium as gym
import numpy as np
from gymnasium.vector.utils import batch_space

from .. import spaces
from ..errors import ErrorCode, ProtocolError
from ..protocol import ClientMessage, Codec, Render, ServerMessage, validation_error
from ..protocol import vector as wire
from .routes import Opening, Route
from .session import EnvCaller, EnvHost
from .source import EnvSource

__all__ = ["VectorSession", "VectorRoute", "VectorBackend", "StepClock", "SLOW_ENV_STEP"]

#: What steps a vector session's envs.
_Backend = gym.vector.SyncVectorEnv | gym.vector.AsyncVectorEnv

#: ``"sync"``: a SyncVectorEnv in the server process; ``"async"``: an AsyncVectorEnv
#: (one worker process per sub-env, for slow envs on a many-core server);
#: ``"auto"``: ``"sync"`` until the env proves slow, then ``"async"``.
VectorBackend = Literal["auto", "sync", "async"]

#: Seconds per env step from which ``"auto"`` hosts new vector sessions in worker
#: processes: well above what a step costs to ship to a worker and back.
SLOW_ENV_STEP = 0.001


class StepClock:
    """How long one env step takes in the server's process, by its recent
    steps: the env is slow when even the fastest of them took
    :data:`SLOW_ENV_STEP` or more (a fast env's steps, slowed by a busy
    server, are not all slow at once).

        >>> clock = StepClock()
        >>> for seconds in [0.002] * 8:
        ...     clock.observe(seconds)
        >>> clock.slow
        True
        >>> clock.observe(0.0001)  # a fast one: the others waited for a busy server
        >>> clock.slow
        False
    """

    #: Steps remembered, and steps needed before the clock tells slow from fast.
    WINDOW, ENOUGH = 32, 8

    def __init__(self) -> None:
        self._recent: collections.deque[float] = collections.deque(maxlen=self.WINDOW)

    def observe(self, seconds: float) -> None:
        self._recent.append(seconds)

    @property
    def slow(self) -> bool:
        return len(self._recent) >= self.ENOUGH and min(self._recent) >= SLOW_ENV_STEP

    def backend(self, configured: VectorBackend, num_envs: int) -> str:
        """The backend for a new vector session of ``num_envs`` envs."""
        if configured != "auto":
            return configured
        return "async" if self.slow and num_envs > 1 and (os.cpu_count() or 1) > 1 else "sync"


class VectorSession(EnvHost):
    """A Gymnasium vector env serving one client."""

    def __init__(
        self,
        source: EnvSource,
        *,
        num_envs: int,
        autoreset: Any,
        backend: str,
        codec: Codec,
        caller: EnvCaller,
    ) -> None:
        if backend not in ("sync", "async"):
            raise ValueError(f"a vector session's backend must be 'sync' or 'async', not {backend!r}")
        super().__init__(source, self._make, codec, caller)
        self.num_envs = num_envs
        self.slots = num_envs
        self.builds = f"a vector env of {num_envs}"
        self.autoreset_mode = wire.autoreset_mode(autoreset)
        self.backend = backend
        self.observation_space = batch_space(source.observation_space, num_envs)
        self.action_space = batch_space(source.action_space, num_envs)

    @property
    def in_process(self) -> bool:  # type: ignore[override]
        return self.backend == "sync"

    def _make(self) -> _Backend:
        if self.call.isolated:  # each env in a process of its own already: step them in turn
            fns = [self.source.make_isolated] * self.num_envs
            return gym.vector.SyncVectorEnv(fns, autoreset_mode=self.autoreset_mode, copy=False)
        if self.backend == "async":
            in_worker = functools.partial(_make_in_worker, self.source.make, os.getpid())
            return gym.vector.AsyncVectorEnv([in_worker] * self.num_envs, autoreset_mode=self.autoreset_mode)
        fns = [self.source.make] * self.num_envs
        return gym.vector.SyncVectorEnv(fns, autoreset_mode=self.autoreset_mode, copy=False)

    def opened(self) -> ServerMessage:
        return wire.VectorOpened(self.num_envs, self.autoreset_mode.value, self.backend)

    async def handle(self, message: ClientMessage) -> ServerMessage:
        """The reply to one validated message (never called for ``close``)."""
        if isinstance(message, wire.VectorStep):
            return await self._step(message)
        if isinstance(message, wire.VectorReset):
            return await self._reset(message)
        if isinstance(message, wire.Call):
            results = await self.run(self._vector().call, message.name, *message.args, **message.kwargs)
            return wire.values_reply(self.codec, "call", list(results))
        if isinstance(message, wire.GetAttr):
            return wire.values_reply(self.codec, "get_attr", list(await self.run(self._vector().call, message.name)))
        if isinstance(message, wire.SetAttr):
            values = self.codec.unpack_data(message.values, message.types)
            await self.run(self._vector().set_attr, message.name, values)
            return wire.SetAttrDone()
        if isinstance(message, Render):
            frames = await self.run(self._vector().render)
            return wire.values_reply(self.codec, "render", list(frames or ()))
        raise ProtocolError(ErrorCode.UNKNOWN_TYPE, f"Unknown message type: {message.type}")

    # -- reset / step ---------------------------------------------------------

    async def _reset(self, reset: wire.VectorReset) -> ServerMessage:
        if isinstance(reset.seed, list) and len(reset.seed) != self.num_envs:
            raise validation_error(["seed"], f"A list of seeds needs {self.num_envs} entries", reset.seed)
        options = self.codec.unpack_data(reset.options, reset.types) if reset.options else None
        if options and "reset_mask" in options:
            mask = np.asarray(options["reset_mask"])
            if mask.dtype != np.bool_ or mask.shape != (self.num_envs,) or not mask.any():
                raise validation_error(
                    ["options", "reset_mask"],
                    f"reset_mask must be {self.num_envs} booleans with at least one true",
                    options["reset_mask"],
                )
            if not self._reset_done:
                raise ProtocolError(ErrorCode.EXECUTION_ERROR, "Reset all envs (no reset_mask) before a masked reset")
            options = {**options, "reset_mask": mask}
        obs, infos = await self.run(self._vector().reset, seed=reset.seed, options=options)
        self._reset_done = True
        return wire.vector_observation(self.codec, self.observation_space, obs, infos)

    async def _step(self, step: wire.VectorStep) -> ServerMessage:
        try:
            actions = self.codec.unpack_space(self.action_space, step.actions, step.types, path="actions")
        except spaces.SpaceValueError as exc:
            raise validation_error(["actions"], str(exc), step.actions) from exc
        if not spaces.contains(self.action_space, actions):
            raise validation_error(
                ["actions"], f"The actions are not in the batched action space {self.action_space}", step.actions
            )
        if not self._reset_done:
            raise ProtocolError(
                ErrorCode.EXECUTION_ERROR, "Call reset before step: this vector session has no episodes yet"
            )
        obs, rewards, terminations, truncations, infos = await self.run(self._vector().step, actions)
        return wire.vector_observation(
            self.codec, self.observation_space, obs, infos,
            rewards=rewards, terminations=terminations, truncations=truncations,
        )

    def _vector(self) -> _Backend:
        if self.env is None:
            raise ProtocolError(ErrorCode.SESSION_ERROR, "The session's vector environment is closed")
        return self.env


class VectorRoute(Route):
    """``/vector``: a batched vector env per connection, opened by ``vector_open``."""

    path = wire.VECTOR_PATH
    messages = wire.VECTOR_MESSAGES
    opening = wire.OPEN_MESSAGES
    expected = True

    def __init__(self, source: EnvSource, *, backend: VectorBackend, clock: StepClock) -> None:
        super().__init__(source)
        if backend not in ("auto", "sync", "async"):
            raise ValueError(f"vector_backend must be 'auto', 'sync' or 'async', not {backend!r}")
        self.backend = backend
        self.clock = clock

    def session(self, opening: Opening) -> EnvHost:
        request = opening.message
        assert isinstance(request, wire.VectorOpen)
        return VectorSession(
            self.source,
            num_envs=request.num_envs,
            autoreset=request.autoreset_mode,
            backend=self.clock.backend(self.backend, request.num_envs),
            codec=opening.codec,
            caller=opening.caller,
        )


def _make_in_worker(make: Any, server_pid: int) -> gym.Env:
    """Build the env for an AsyncVectorEnv; in a worker (not the server,
    where AsyncVectorEnv builds one env to read its spaces), first close the
    TCP sockets inherited from the server."""
    if os.getpid() != server_pid:
        _close_inherited_tcp_sockets()
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
