"""Batched vector sessions: one WebSocket drives a whole Gymnasium vector env.

The route :data:`~openenv_gym.vector_wire.VECTOR_PATH` (``WS /vector``) is an
openenv-gym extension; stock OpenEnv clients never open it. The first message
opens the vector env, and then each ``reset`` / ``step`` is one frame each way
carrying stacked arrays::

    C->S {"type": "vector_open", "data": {"num_envs": 8, "autoreset_mode": "NextStep"}}
    S->C {"type": "vector_opened", "data": {"num_envs": 8, "autoreset_mode": "NextStep", "version": 1}}
    C->S {"type": "reset", "data": {"seed": 0, "options": null}}
    S->C {"type": "vector_observation", "data": {"obs": <batched obs>, "infos": {...}}}
    C->S {"type": "step", "data": {"actions": <batched actions>}}
    S->C {"type": "vector_observation", "data": {"obs", "rewards", "terminations", "truncations", "infos"}}

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
from typing import TYPE_CHECKING, Any, Literal

import gymnasium as gym
import numpy as np
from gymnasium.vector.utils import batch_space

from .. import spaces
from ..vector_wire import VECTOR_VERSION, autoreset_mode, infos_fields
from ..wire import (
    ClientMessage,
    ErrorCode,
    WireError,
    apply_type_hints,
    jsonable,
    type_hints,
    validation_error,
)
from .session import EnvCaller, EnvHost
from .source import EnvSource
from .transport import next_frame

if TYPE_CHECKING:
    from starlette.websockets import WebSocket

    from .app import _Server

__all__ = [
    "VectorSession", "VectorBackend", "StepClock", "SLOW_ENV_STEP", "serve_vector",
    "parse_vector_message", "VECTOR_MESSAGE_TYPES",
]

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


#: Message types of a vector session after ``vector_open``.
VECTOR_MESSAGE_TYPES = frozenset({"reset", "step", "call", "get_attr", "set_attr", "render", "close"})
_NO_DATA = frozenset({"render", "close"})


def parse_vector_message(message: Any, *, first: bool) -> ClientMessage:
    """Validate a decoded vector-session message.

    The first message must be ``vector_open``; unknown types are UNKNOWN_TYPE,
    a bad envelope VALIDATION_ERROR, as on ``/ws``.
    """
    if not isinstance(message, dict):
        raise validation_error([], "Input should be a valid dictionary", message, "dict_type")
    kind = message.get("type")
    allowed = {"vector_open"} if first else VECTOR_MESSAGE_TYPES
    if kind not in allowed:
        expected = "vector_open" if first else ", ".join(sorted(VECTOR_MESSAGE_TYPES))
        raise WireError(
            ErrorCode.UNKNOWN_TYPE, f"Unknown message type: {kind!r} (expected {expected})"
        )
    for key in message:
        if key not in ("type", "data"):
            raise validation_error([key], "Extra inputs are not permitted", message[key], "extra_forbidden")
    data = message.get("data")
    if data is None and kind in _NO_DATA | {"reset"}:
        data = {}
    if not isinstance(data, dict):
        raise validation_error(["data"], "Input should be a valid dictionary", data, "dict_type")
    return ClientMessage(kind, data)


def _public_name(data: dict) -> str:
    name = data.get("name")
    if not isinstance(name, str) or not name.isidentifier() or name.startswith("_"):
        raise validation_error(
            ["name"], "Input should be the name of a public attribute (no leading underscore)",
            name,
        )
    return name


class VectorSession(EnvHost):
    """A Gymnasium vector env serving one client, with what its replies need.

    ``arrays`` is ``True`` on msgpack sessions (ndarrays travel as raw bytes);
    on JSON sessions values are JSON with type hints.
    """

    def __init__(
        self,
        source: EnvSource,
        *,
        num_envs: int,
        autoreset: Any,
        backend: VectorBackend,
        arrays: bool,
        caller: EnvCaller,
    ) -> None:
        if backend not in ("sync", "async"):
            raise ValueError(f"a vector session's backend must be 'sync' or 'async', not {backend!r}")
        super().__init__(source, self._make, caller)
        self.num_envs = num_envs
        self.slots = num_envs
        self.builds = f"a vector env of {num_envs}"
        self.autoreset_mode = autoreset_mode(autoreset)
        self.backend = backend
        self.arrays = arrays
        self.observation_space = batch_space(source.observation_space, num_envs)
        self.action_space = batch_space(source.action_space, num_envs)

    @property
    def in_process(self) -> bool:  # type: ignore[override]
        return self.backend == "sync"

    def _make(self) -> gym.vector.VectorEnv:
        if self.backend == "async":
            fns = [functools.partial(_make_in_worker, self.source.make, os.getpid())] * self.num_envs
            return gym.vector.AsyncVectorEnv(fns, autoreset_mode=self.autoreset_mode)
        fns = [self.source.make] * self.num_envs
        return gym.vector.SyncVectorEnv(fns, autoreset_mode=self.autoreset_mode, copy=False)

    def opened(self) -> dict:
        return {
            "type": "vector_opened",
            "data": {
                "num_envs": self.num_envs,
                "autoreset_mode": self.autoreset_mode.value,
                "backend": self.backend,
                "version": VECTOR_VERSION,
            },
        }

    async def handle(self, message: ClientMessage) -> dict:
        """The reply to one validated message (never called for ``close``)."""
        self.touch()
        kind, data = message.type, message.data
        if kind == "step":
            return await self._step(data)
        if kind == "reset":
            return await self._reset(data)
        if kind in ("call", "get_attr"):
            args = data.get("args") or [] if kind == "call" else []
            kwargs = data.get("kwargs") or {} if kind == "call" else {}
            if not isinstance(args, list) or not isinstance(kwargs, dict):
                raise validation_error(["args"], "args must be a list and kwargs an object", data)
            results = await self.run(self._vector().call, _public_name(data), *args, **kwargs)
            return self._values_reply(kind, list(results))
        if kind == "set_attr":
            values = apply_type_hints(data.get("values"), data.get("types"))
            await self.run(self._vector().set_attr, _public_name(data), values)
            return {"type": "set_attr", "data": {}}
        if kind == "render":
            frames = await self.run(self._vector().render)
            return self._values_reply("render", list(frames or ()))
        raise WireError(ErrorCode.UNKNOWN_TYPE, f"Unknown message type: {kind}")

    # -- reset / step ---------------------------------------------------------

    async def _reset(self, data: dict) -> dict:
        seed = data.get("seed")
        seeds = seed if isinstance(seed, list) else [seed]
        for s in seeds:
            if s is not None and (isinstance(s, bool) or not isinstance(s, (int, np.integer)) or s < 0):
                raise validation_error(["seed"], "Input should be a non-negative integer, a list of them, or null", seed)
        if isinstance(seed, list) and len(seed) != self.num_envs:
            raise validation_error(["seed"], f"A list of seeds needs {self.num_envs} entries", seed)
        options = data.get("options")
        if options is not None and not isinstance(options, dict):
            raise validation_error(["options"], "Input should be a valid dictionary or null", options)
        options = apply_type_hints(options, data.get("types")) if options else None
        if options and "reset_mask" in options:
            mask = np.asarray(options["reset_mask"])
            if mask.dtype != np.bool_ or mask.shape != (self.num_envs,) or not mask.any():
                raise validation_error(
                    ["options", "reset_mask"],
                    f"reset_mask must be {self.num_envs} booleans with at least one true",
                    options["reset_mask"],
                )
            if not self._reset_done:
                raise WireError(ErrorCode.EXECUTION_ERROR, "Reset all envs (no reset_mask) before a masked reset")
            options = {**options, "reset_mask": mask}
        obs, infos = await self.run(self._vector().reset, seed=seed, options=options)
        self._reset_done = True
        return self._observation(obs, infos)

    async def _step(self, data: dict) -> dict:
        if "actions" not in data:
            raise validation_error(["actions"], "Field required", data, "missing")
        space = self.action_space
        try:
            actions = spaces.decode(space, apply_type_hints(data["actions"], data.get("types")), path="actions")
        except spaces.SpaceValueError as exc:
            raise validation_error(["actions"], str(exc), data["actions"]) from exc
        if not spaces.contains(space, actions):
            raise validation_error(["actions"], f"The actions are not in the batched action space {space}", data["actions"])
        if not self._reset_done:
            raise WireError(ErrorCode.EXECUTION_ERROR, "Call reset before step: this vector session has no episodes yet")
        obs, rewards, terminations, truncations, infos = await self.run(self._vector().step, actions)
        reply = self._observation(obs, infos)
        fields = reply["data"]
        if self.arrays:
            fields["rewards"] = np.asarray(rewards, dtype=np.float64)
            fields["terminations"] = np.asarray(terminations, dtype=np.bool_)
            fields["truncations"] = np.asarray(truncations, dtype=np.bool_)
        else:
            fields["rewards"] = np.asarray(rewards, dtype=np.float64).tolist()
            fields["terminations"] = np.asarray(terminations, dtype=np.bool_).tolist()
            fields["truncations"] = np.asarray(truncations, dtype=np.bool_).tolist()
        return reply

    def _observation(self, obs: Any, infos: dict) -> dict:
        try:
            encoded = spaces.encode(self.observation_space, obs, arrays=self.arrays, path="obs")
        except (spaces.SpaceValueError, TypeError, ValueError) as exc:
            raise WireError(
                ErrorCode.EXECUTION_ERROR,
                f"The vector env returned observations that do not fit {self.observation_space}: {exc}",
            ) from exc
        return {"type": "vector_observation", "data": {"obs": encoded, **infos_fields(infos, arrays=self.arrays)}}

    def _values_reply(self, kind: str, values: list) -> dict:
        if self.arrays:
            return {"type": kind, "data": {"values": values}}
        data: dict = {"values": jsonable(values)}
        if (hints := type_hints(values)) is not None:
            data["types"] = hints
        return {"type": kind, "data": data}

    def _vector(self) -> gym.vector.VectorEnv:
        if self.env is None:
            raise WireError(ErrorCode.SESSION_ERROR, "The session's vector environment is closed")
        return self.env


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


def _open_request(data: dict) -> tuple[int, Any]:
    num_envs = data.get("num_envs")
    if isinstance(num_envs, bool) or not isinstance(num_envs, int) or num_envs < 1:
        raise validation_error(["num_envs"], "Input should be a positive integer", num_envs)
    mode = data.get("autoreset_mode", "NextStep")
    try:
        autoreset_mode(mode)
    except ValueError as exc:
        raise validation_error(["autoreset_mode"], str(exc), mode) from exc
    return num_envs, mode


async def serve_vector(server: "_Server", websocket: "WebSocket") -> None:
    """The ``WS /vector`` endpoint: open a vector env, then answer until ``close``."""
    codec, _chosen, reply = await server.accept(websocket)
    try:
        frame = await next_frame(websocket, codec)
        if frame is None:
            return
        num_envs, mode = _open_request(parse_vector_message(codec.decode(frame), first=True).data)
    except WireError as exc:
        await reply(exc.to_message())
        await websocket.close(1000)
        return
    if await server.refuse_if_full(websocket, reply, num_envs):
        return
    session = VectorSession(
        server.source,
        num_envs=num_envs,
        autoreset=mode,
        backend=server.env_steps.backend(server.vector_backend, num_envs),
        arrays=codec.binary,
        caller=server.env_caller(),
    )
    async with server.hosting(websocket, session, reply):
        await session.start()
        await reply(session.opened())
        await server.serve_messages(
            websocket, session, codec, reply, parse=lambda m: parse_vector_message(m, first=False)
        )
