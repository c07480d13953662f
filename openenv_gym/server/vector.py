"""Batched vector sessions: one WebSocket drives a whole Gymnasium vector env.

The route ``/vector`` (:mod:`openenv_gym.protocol.vector`) is an openenv-gym
extension; stock OpenEnv clients never open it. Its first message opens the
vector env, then each ``reset`` / ``step`` is one frame each way carrying
stacked arrays.

What steps a session's envs is a vector backend of the table
:data:`~openenv_gym.server.backends.BACKENDS`, each building a Gymnasium vector
env of the server's env with the requested autoreset mode, so the semantics are
Gymnasium's own: ``"sync"`` (a ``SyncVectorEnv`` in the server's process),
``"async"`` (an ``AsyncVectorEnv``: one process per sub-env) or, for an EnvPool
task, ``"envpool"`` (one EnvPool pool: a C++ thread pool, see
:mod:`~openenv_gym.server.envpool`). ``"auto"`` (the default) is ``"envpool"`` for an EnvPool
task, else ``"sync"``. A vector session of N envs takes N of the server's ``max_sessions`` slots.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium.vector.utils import batch_space

from .. import spaces
from ..errors import ErrorCode, NoEpisodeError, ProtocolError
from ..protocol import ClientMessage, Codec, Render, ServerMessage, validation_error
from ..protocol import vector as wire
from .backends import AUTO, BACKENDS, CHOICES, VectorBackend, choose
from .execution import EnvCaller
from .routes import Opening, Route
from .session import EnvHost
from .source import EnvSource

__all__ = ["VectorSession", "VectorRoute", "VectorBackend"]

class VectorSession(EnvHost):
    """A Gymnasium vector env serving one client, of the backend named ``backend``
    (a key of :data:`~openenv_gym.server.backends.BACKENDS`)."""

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
        if backend not in BACKENDS:
            names = ", ".join(map(repr, BACKENDS))
            raise ValueError(f"a vector session's backend must be one of {names}, not {backend!r}")
        super().__init__(source, self._make, codec, caller)
        self.num_envs = num_envs
        self.slots = num_envs
        self.builds = f"a vector env of {num_envs}"
        self.autoreset_mode = wire.autoreset_mode(autoreset)
        self.backend = BACKENDS[backend]
        # What grows with num_envs is made with the env, once the server has found room
        # for num_envs slots: a peer may ask for any number.
        self.observation_space: gym.Space = source.observation_space
        self.action_space: gym.Space = source.action_space
        #: The envs the next step autoresets (next-step mode): their actions are
        #: placeholders the vector env ignores, and are not validated.
        self._autoresetting = np.zeros(0, dtype=np.bool_)

    def _make(self) -> gym.vector.VectorEnv:
        self.observation_space = batch_space(self.source.observation_space, self.num_envs)
        self.action_space = batch_space(self.source.action_space, self.num_envs)
        self._autoresetting = np.zeros(self.num_envs, dtype=np.bool_)
        if self.call.isolated:  # each env in a process of its own already: step them in turn
            fns = [self.call.maker(self.source)] * self.num_envs
            return gym.vector.SyncVectorEnv(fns, autoreset_mode=self.autoreset_mode, copy=False)
        return self.backend.build(self.source, self.num_envs, self.autoreset_mode)

    def opened(self) -> ServerMessage:
        return wire.VectorOpened(self.num_envs, self.autoreset_mode.value, self.backend.name)

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
        sub_envs = self.backend.sub_envs(self._vector(), getattr(message, "name", "is_wrapped"))
        return await self.answer_attribute(message, sub_envs, self.num_envs, broadcast=True)

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
            raise NoEpisodeError("Call reset before step: this vector session has no episodes yet")
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

    def _vector(self) -> gym.vector.VectorEnv:
        if self.env is None:
            raise ProtocolError(ErrorCode.SESSION_ERROR, "The session's vector environment is closed")
        return self.env


class VectorRoute(Route):
    """``/vector``: a batched vector env per connection, opened by ``vector_open``."""

    path = wire.VECTOR_PATH
    messages = wire.VECTOR_MESSAGES
    opening = wire.OPEN_MESSAGES
    expected = True

    def __init__(self, source: EnvSource, *, backend: VectorBackend) -> None:
        super().__init__(source)
        if backend not in CHOICES:
            raise ValueError(f"vector_backend must be one of {', '.join(map(repr, CHOICES))}, not {backend!r}")
        if backend != AUTO and not BACKENDS[backend].accepts(source):
            raise ValueError(BACKENDS[backend].refusal(source))
        #: The backend of every vector session of this server.
        self.backend = choose(backend, source)

    def session(self, opening: Opening) -> EnvHost:
        request = opening.message
        assert isinstance(request, wire.VectorOpen)
        return VectorSession(
            self.source,
            num_envs=request.num_envs,
            autoreset=request.autoreset_mode,
            backend=self.backend.name,
            codec=opening.codec,
            caller=opening.caller,
        )
