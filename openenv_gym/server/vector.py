"""Batched vector sessions: one WebSocket drives a whole Gymnasium vector env.

The route ``/vector`` (:mod:`openenv_gym.protocol.vector`) is an openenv-gym
extension; stock OpenEnv clients never open it. Its first message opens the
vector env, then each ``reset`` / ``step`` is one frame each way carrying
stacked arrays.

The server builds ``gymnasium.vector.SyncVectorEnv`` (``vector_backend="sync"``,
stepped inline on the event loop while it is fast, on a worker thread once it
is slow), ``AsyncVectorEnv`` (``"async"``: one process per sub-env) or, for an
EnvPool task, one EnvPool pool (``"envpool"``: a C++ thread pool, see
:mod:`openenv_gym.envpool`) of the server's env, with the requested autoreset
mode, so the semantics are Gymnasium's own. ``"auto"`` (the default) picks
``"envpool"`` for an EnvPool task, else ``"sync"`` until the env has proven
slow (every one of its recent steps in this server took :data:`SLOW_ENV_STEP`
or more, see :class:`StepClock`), then ``"async"`` for the sessions opened
after that. A vector session of N envs takes N of the
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
from .attributes import SubEnvs, answer_is_wrapped
from .envpool import EnvPoolVectorEnv
from .routes import Opening, Route
from .session import EnvCaller, EnvHost
from .source import EnvSource

__all__ = ["VectorSession", "VectorRoute", "VectorBackend", "StepClock", "SLOW_ENV_STEP"]

#: What steps a vector session's envs.
_Backend = gym.vector.SyncVectorEnv | gym.vector.AsyncVectorEnv | EnvPoolVectorEnv

#: ``"sync"``: a SyncVectorEnv in the server process; ``"async"``: an AsyncVectorEnv
#: (one worker process per sub-env, for slow envs on a many-core server);
#: ``"envpool"``: one EnvPool pool (EnvPool tasks only); ``"auto"``: ``"envpool"``
#: for an EnvPool task, else ``"sync"`` until the env proves slow, then ``"async"``.
VectorBackend = Literal["auto", "sync", "async", "envpool"]
BACKENDS = ("auto", "sync", "async", "envpool")

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

    def backend(self, configured: VectorBackend, num_envs: int, *, pool: bool = False) -> str:
        """The backend for a new vector session of ``num_envs`` envs (of an EnvPool task if ``pool``)."""
        if configured != "auto":
            return configured
        if pool:
            return "envpool"
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
        if backend not in BACKENDS[1:]:
            raise ValueError(f"a vector session's backend must be 'sync', 'async' or 'envpool', not {backend!r}")
        super().__init__(source, self._make, codec, caller)
        self.num_envs = num_envs
        self.slots = num_envs
        self.builds = f"a vector env of {num_envs}"
        self.autoreset_mode = wire.autoreset_mode(autoreset)
        self.backend = backend
        # What grows with num_envs is made with the env, once the server has found room
        # for num_envs slots: a peer may ask for any number.
        self.observation_space: gym.Space = source.observation_space
        self.action_space: gym.Space = source.action_space
        #: The envs the next step autoresets (next-step mode): their actions are
        #: placeholders the vector env ignores, and are not validated.
        self._autoresetting = np.zeros(0, dtype=np.bool_)

    @property
    def in_process(self) -> bool:  # type: ignore[override]
        return self.backend in ("sync", "envpool")

    def _make(self) -> _Backend:
        self.observation_space = batch_space(self.source.observation_space, self.num_envs)
        self.action_space = batch_space(self.source.action_space, self.num_envs)
        self._autoresetting = np.zeros(self.num_envs, dtype=np.bool_)
        if self.call.isolated:  # each env in a process of its own already: step them in turn
            fns = [self.call.maker(self.source)] * self.num_envs
            return gym.vector.SyncVectorEnv(fns, autoreset_mode=self.autoreset_mode, copy=False)
        if self.backend == "envpool":
            return EnvPoolVectorEnv(self.source.pool, self.num_envs, autoreset_mode=self.autoreset_mode)
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
        if isinstance(message, (wire.Call, wire.GetAttr, wire.SetAttr, wire.IsWrapped)):
            return await self._attribute(message)
        if isinstance(message, Render):
            frames = await self.run(self._vector().render)
            return wire.values_reply(self.codec, wire.RenderFrames, list(frames or ()))
        raise ProtocolError(ErrorCode.UNKNOWN_TYPE, f"Unknown message type: {message.type}")

    async def _attribute(self, message: wire.Call | wire.GetAttr | wire.SetAttr | wire.IsWrapped) -> ServerMessage:
        """An attribute message on the sub-envs, one by one, as Gymnasium's vector
        envs' ``call`` / ``set_attr`` do them (:meth:`EnvHost.answer_attribute`)."""
        vector = self._vector()
        if isinstance(vector, EnvPoolVectorEnv):
            vector.call(getattr(message, "name", "is_wrapped"))  # raises why an EnvPool env has no attributes
        return await self.answer_attribute(message, SubEnvs(vector), self.num_envs, broadcast=True)

    # -- reset / step ---------------------------------------------------------

    async def _reset(self, reset: wire.VectorReset) -> ServerMessage:
        if isinstance(reset.seed, list) and len(reset.seed) != self.num_envs:
            raise validation_error(["seed"], f"A list of seeds needs {self.num_envs} entries", reset.seed)
        options = self.codec.unpack_data(reset.options, reset.types) if reset.options else None
        mask = None
        if options and "reset_mask" in options:
            try:
                mask = np.asarray(options["reset_mask"])
            except ValueError:  # ragged
                mask = np.zeros(0, dtype=object)
            if mask.dtype != np.bool_ or mask.shape != (self.num_envs,) or not mask.any():
                raise validation_error(
                    ["options", "reset_mask"],
                    f"reset_mask must be {self.num_envs} booleans with at least one true",
                    options["reset_mask"],
                )
            if not self._reset_done and not mask.all():
                raise ProtocolError(
                    ErrorCode.EXECUTION_ERROR,
                    "Reset all envs (no reset_mask, or an all-true one) before a masked reset",
                )
            options = {**options, "reset_mask": mask}
        obs, infos = await self.run(self._vector().reset, seed=reset.seed, options=options)
        self._reset_done = True
        self._autoresetting[:] = False if mask is None else self._autoresetting & ~mask
        return wire.vector_observation(
            self.codec, self.observation_space, obs, infos, single_space=self.source.observation_space
        )

    async def _step(self, step: wire.VectorStep) -> ServerMessage:
        try:
            actions = self.codec.unpack_space(self.action_space, step.actions, step.types, path="actions")
        except spaces.SpaceValueError as exc:
            raise validation_error(["actions"], str(exc), step.actions) from exc
        if not self._actions_fit(actions):
            raise validation_error(
                ["actions"], f"The actions are not in the batched action space {self.action_space}", step.actions
            )
        if not self._reset_done:
            raise ProtocolError(
                ErrorCode.EXECUTION_ERROR, "Call reset before step: this vector session has no episodes yet"
            )
        obs, rewards, terminations, truncations, infos = await self.run(self._vector().step, actions)
        if self.autoreset_mode is gym.vector.AutoresetMode.NEXT_STEP:
            self._autoresetting = np.logical_or(terminations, truncations)
        return wire.vector_observation(
            self.codec, self.observation_space, obs, infos, single_space=self.source.observation_space,
            rewards=rewards, terminations=terminations, truncations=truncations,
        )

    def _actions_fit(self, actions: Any) -> bool:
        """Whether ``actions`` is in the batched action space, but for the
        entries of the envs this step autoresets (Gymnasium ignores them). One
        vectorized check of the whole batch first: a client's placeholders are
        usually legal actions too, and then no env's entry needs a look of its own."""
        if spaces.contains(self.action_space, actions):
            return True
        if not self._autoresetting.any():
            return False
        single = self.source.action_space
        rows = gym.vector.utils.iterate(self.action_space, actions)
        return all(skip or spaces.contains(single, a) for skip, a in zip(self._autoresetting, rows))

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
        if backend not in BACKENDS:
            raise ValueError(f"vector_backend must be one of {', '.join(map(repr, BACKENDS))}, not {backend!r}")
        if backend == "envpool" and source.pool is None:
            raise ValueError(
                f"vector_backend='envpool' steps EnvPool tasks, and {source.name!r} is not one: serve "
                f"'envpool:TASK' (such as 'envpool:CartPole-v1') or a factory returning an EnvPool pool"
            )
        self.backend = backend
        self.clock = clock

    def session(self, opening: Opening) -> EnvHost:
        request = opening.message
        assert isinstance(request, wire.VectorOpen)
        return VectorSession(
            self.source,
            num_envs=request.num_envs,
            autoreset=request.autoreset_mode,
            backend=self.clock.backend(self.backend, request.num_envs, pool=self.source.pool is not None),
            codec=opening.codec,
            caller=opening.caller,
        )


def _make_in_worker(make: Any, server_pid: int) -> gym.Env:
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
