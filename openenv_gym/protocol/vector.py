"""Batched vector sessions on the route ``/vector`` (openenv-gym extension, version 1).

One WebSocket carries a whole Gymnasium vector env: the first message opens
it, then every ``reset`` and ``step`` moves the whole batch in one frame each
way. Values are encoded per the *batched* space
(``gymnasium.vector.utils.batch_space``), so a Box observation batch is one
ndarray on a msgpack session::

    C->S {"type": "vector_open", "data": {"num_envs": 8, "autoreset_mode": "NextStep"}}
    S->C {"type": "vector_opened", "data": {"num_envs": 8, "autoreset_mode": "NextStep",
                                            "backend": "sync", "version": 1}}
    C->S {"type": "reset", "data": {"seed": 0, "options": null}}
    S->C {"type": "vector_observation", "data": {"obs": <batched obs>, "infos": {...}}}
    C->S {"type": "step", "data": {"actions": <batched actions>}}
    S->C {"type": "vector_observation", "data": {"obs", "rewards", "terminations", "truncations", "infos"}}

``call``, ``get_attr`` and ``set_attr`` reach the sub-envs (:mod:`.attributes`).

Vector infos (Gymnasium's dict of arrays with ``_key`` masks) travel as a tree
in which dicts are dicts, numeric arrays are arrays, and object arrays
(``final_obs``, strings, ...) are lists; :func:`pack_infos` and
:func:`unpack_infos` convert::

    >>> import numpy as np
    >>> infos = {"final_obs": np.array([None, np.zeros(2)], dtype=object),
    ...          "_final_obs": np.array([False, True])}
    >>> tree = pack_infos(infos)
    >>> tree["final_obs"]
    [None, array([0., 0.])]
    >>> unpack_infos(tree)["final_obs"].dtype
    dtype('O')
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

import gymnasium as gym
import numpy as np
from gymnasium.vector import AutoresetMode

from .. import spaces
from ..errors import ErrorCode, ProtocolError
from .attributes import (
    ATTRIBUTE_MESSAGES,
    ATTRIBUTE_REPLIES,
    Call,
    CallReply,
    GetAttr,
    GetAttrReply,
    IsWrapped,
    IsWrappedReply,
    SetAttr,
    SetAttrDone,
    Values,
    read_values,
    values_reply,
)
from .codecs import Codec
from .messages import (
    ClientMessage,
    Close,
    Data,
    Render,
    ServerMessage,
    validation_error,
)

__all__ = [
    "VECTOR_PATH",
    "VECTOR_VERSION",
    "AutoresetLike",
    "autoreset_mode",
    "VectorOpen",
    "VectorReset",
    "VectorStep",
    "Call",
    "GetAttr",
    "SetAttr",
    "IsWrapped",
    "VectorOpened",
    "VectorObservation",
    "CallReply",
    "GetAttrReply",
    "RenderFrames",
    "SetAttrDone",
    "IsWrappedReply",
    "OPEN_MESSAGES",
    "VECTOR_MESSAGES",
    "OPEN_REPLIES",
    "VECTOR_REPLIES",
    "FINAL_OBS",
    "pack_infos",
    "unpack_infos",
    "vector_observation",
    "read_infos",
    "values_reply",
    "read_values",
]

#: WebSocket route of batched vector sessions.
VECTOR_PATH = "/vector"
#: Version of the vector messages, advertised in ``/schema`` under ``x-openenv-gym.vector``.
VECTOR_VERSION = 1

#: What ``autoreset_mode`` arguments accept: the enum or its string value.
AutoresetLike = AutoresetMode | str


def autoreset_mode(value: AutoresetLike) -> AutoresetMode:
    """Gymnasium's :class:`~gymnasium.vector.AutoresetMode` for the enum, its value
    (``"NextStep"``) or its name in any case (``"next_step"``).

        >>> autoreset_mode("same_step")
        <AutoresetMode.SAME_STEP: 'SameStep'>
    """
    if isinstance(value, AutoresetMode):
        return value
    if isinstance(value, str):
        for mode in AutoresetMode:
            if value in (mode.value, mode.name) or value.upper() == mode.name:
                return mode
    choices = ", ".join(repr(m.value) for m in AutoresetMode)
    raise ValueError(f"autoreset_mode must be a gymnasium AutoresetMode or one of {choices}, not {value!r}")


# -- client -> server ----------------------------------------------------------------


@dataclass(slots=True)
class VectorOpen(ClientMessage):
    """The first message: open a vector env of ``num_envs`` envs."""

    type: ClassVar[str] = "vector_open"

    num_envs: int
    autoreset_mode: AutoresetMode = AutoresetMode.NEXT_STEP

    @classmethod
    def from_data(cls, data: dict | None) -> VectorOpen:
        data = data or {}
        num_envs = data.get("num_envs")
        if isinstance(num_envs, bool) or not isinstance(num_envs, int) or num_envs < 1:
            raise validation_error(["num_envs"], "Input should be a positive integer", num_envs)
        mode = data.get("autoreset_mode", "NextStep")
        try:
            return cls(num_envs, autoreset_mode(mode))
        except ValueError as exc:
            raise validation_error(["autoreset_mode"], str(exc), mode) from exc

    def to_wire(self) -> dict:
        return {"type": "vector_open", "data": {"num_envs": self.num_envs, "autoreset_mode": self.autoreset_mode.value}}


@dataclass(slots=True)
class VectorReset(ClientMessage):
    """Reset all envs (or those of ``options["reset_mask"]``): ``seed`` is one int
    (env ``i`` gets ``seed + i``), a list with one per env, or ``None``; ``options``
    go to the vector env's ``reset`` as they are. OpenEnv's ``injected_state`` field
    is refused (VALIDATION_ERROR), not ignored: a batch has no ``set_state`` hook."""

    type: ClassVar[str] = "reset"
    data: ClassVar[Data] = Data.OPTIONAL

    seed: int | list[int | None] | None = None
    options: dict[str, Any] | None = None
    types: Any = None

    @classmethod
    def from_data(cls, data: dict | None) -> VectorReset:
        data = data or {}
        seed = data.get("seed")
        for s in seed if isinstance(seed, list) else [seed]:
            if s is not None and (isinstance(s, bool) or not isinstance(s, (int, np.integer)) or s < 0):
                raise validation_error(
                    ["seed"], "Input should be a non-negative integer, a list of them, or null", seed
                )
        options = data.get("options")
        if options is not None and not isinstance(options, dict):
            raise validation_error(["options"], "Input should be a valid dictionary or null", options)
        if data.get("injected_state") is not None:  # OpenEnv's field, which a batch has no hook for
            raise validation_error(
                ["injected_state"],
                "A vector session does not set states: send a reset with injected_state on /ws, "
                "one env at a time, to a server with a set_state hook",
                data["injected_state"],
            )
        return cls(seed, options, data.get("types"))

    def to_wire(self) -> dict:
        data: dict = {"seed": self.seed, "options": self.options}
        if self.types is not None:
            data["types"] = self.types
        return {"type": "reset", "data": data}


@dataclass(slots=True)
class VectorStep(ClientMessage):
    """Step every env: ``actions`` is a value of the batched action space."""

    type: ClassVar[str] = "step"

    actions: Any
    types: Any = None

    @classmethod
    def from_data(cls, data: dict | None) -> VectorStep:
        data = data or {}
        if "actions" not in data:
            raise validation_error(["actions"], "Field required", data, "missing")
        return cls(data["actions"], data.get("types"))

    def to_wire(self) -> dict:
        data: dict = {"actions": self.actions}
        if self.types is not None:
            data["types"] = self.types
        return {"type": "step", "data": data}


#: The one message a ``/vector`` session starts with.
OPEN_MESSAGES: Mapping[str, type[ClientMessage]] = {VectorOpen.type: VectorOpen}
#: The messages of an open ``/vector`` session.
VECTOR_MESSAGES: Mapping[str, type[ClientMessage]] = {
    **{cls.type: cls for cls in (VectorReset, VectorStep, Render, Close)},
    **ATTRIBUTE_MESSAGES,
}


# -- server -> client ----------------------------------------------------------------


@dataclass(slots=True)
class VectorOpened(ServerMessage):
    """The vector env is open: its size, autoreset mode and backend."""

    type: ClassVar[str] = "vector_opened"

    num_envs: int
    autoreset_mode: str
    backend: str
    version: int = VECTOR_VERSION

    @classmethod
    def from_data(cls, data: dict) -> VectorOpened:
        return cls(data.get("num_envs"), data.get("autoreset_mode"), data.get("backend"), data.get("version"))  # type: ignore[arg-type]

    def to_wire(self) -> dict:
        return {
            "type": "vector_opened",
            "data": {
                "num_envs": self.num_envs,
                "autoreset_mode": self.autoreset_mode,
                "backend": self.backend,
                "version": self.version,
            },
        }


@dataclass(slots=True)
class VectorObservation(ServerMessage):
    """A batch's observations and infos; after a step also its rewards,
    terminations and truncations (``None`` after a reset)."""

    type: ClassVar[str] = "vector_observation"

    obs: Any
    infos: Any
    rewards: Any = None
    terminations: Any = None
    truncations: Any = None
    types: dict | None = None

    @classmethod
    def from_data(cls, data: dict) -> VectorObservation:
        types = data.get("types")
        return cls(
            data.get("obs"), data.get("infos") or {}, data.get("rewards"), data.get("terminations"),
            data.get("truncations"), types if isinstance(types, dict) else None,
        )

    def to_wire(self) -> dict:
        data: dict = {"obs": self.obs, "infos": self.infos}
        if self.rewards is not None:
            data["rewards"] = self.rewards
            data["terminations"] = self.terminations
            data["truncations"] = self.truncations
        if self.types is not None:
            data["types"] = self.types
        return {"type": "vector_observation", "data": data}


class RenderFrames(Values):
    """Every env's rendered frame."""

    type: ClassVar[str] = "render"
    __slots__ = ()


#: The reply to ``vector_open``.
OPEN_REPLIES: Mapping[str, type[ServerMessage]] = {VectorOpened.type: VectorOpened}
#: The replies of an open ``/vector`` session.
VECTOR_REPLIES: Mapping[str, type[ServerMessage]] = {
    **{cls.type: cls for cls in (VectorObservation, RenderFrames)},
    **ATTRIBUTE_REPLIES,
}


# -- values -------------------------------------------------------------------------


def pack_infos(infos: dict) -> dict:
    """Vector infos as a wire tree: object arrays become lists, the rest stays."""
    out: dict = {}
    for key, value in infos.items():
        if isinstance(value, dict):
            out[str(key)] = pack_infos(value)
        elif isinstance(value, np.ndarray) and value.dtype == object:
            out[str(key)] = value.tolist() if value.ndim == 1 else list(value)
        else:
            out[str(key)] = value
    return out


def unpack_infos(tree: Any) -> dict:
    """The inverse of :func:`pack_infos`: lists become object arrays again."""
    if not isinstance(tree, dict):
        return {}
    out: dict = {}
    for key, value in tree.items():
        if isinstance(value, dict):
            out[key] = unpack_infos(value)
        elif isinstance(value, (list, tuple)):
            array = np.empty(len(value), dtype=object)  # filled with None
            for i, item in enumerate(value):
                array[i] = item
            out[key] = array
        else:
            out[key] = np.asarray(value)
    return out


#: The info key of same-step autoreset's last observations: each one travels
#: encoded by the single observation space, as observations do (a Graph
#: observation arrives as a ``GraphInstance``, not as generic data).
FINAL_OBS = "final_obs"


def vector_observation(
    codec: Codec,
    space: gym.Space,
    obs: Any,
    infos: dict,
    *,
    single_space: gym.Space,
    rewards: Any = None,
    terminations: Any = None,
    truncations: Any = None,
) -> VectorObservation:
    """The reply to a ``reset`` (no rewards) or ``step`` of a vector env whose
    batched observation space is ``space`` (of ``single_space``). Observations
    outside it are the env's fault: EXECUTION_ERROR."""
    try:
        encoded = codec.pack_space(space, obs, path="obs")
        infos = pack_infos(infos)
        if isinstance(infos.get(FINAL_OBS), list):
            infos[FINAL_OBS] = [
                None if x is None else codec.pack_space(single_space, x, path=f"infos.{FINAL_OBS}[{i}]")
                for i, x in enumerate(infos[FINAL_OBS])
            ]
    except (spaces.SpaceValueError, TypeError, ValueError) as exc:
        raise ProtocolError(
            ErrorCode.EXECUTION_ERROR,
            f"The vector env returned observations that do not fit {space}: {exc}",
        ) from exc
    tree, hints = codec.pack_data(infos)
    if rewards is None:
        return VectorObservation(encoded, tree, types=None if hints is None else {"infos": hints})
    return VectorObservation(
        encoded,
        tree,
        codec.pack_array(np.asarray(rewards, dtype=np.float64)),
        codec.pack_array(np.asarray(terminations, dtype=np.bool_)),
        codec.pack_array(np.asarray(truncations, dtype=np.bool_)),
        None if hints is None else {"infos": hints},
    )


def read_infos(codec: Codec, message: VectorObservation, single_space: gym.Space) -> dict:
    """The vector infos of a :class:`VectorObservation` whose envs' observation
    space is ``single_space``."""
    hints = (message.types or {}).get("infos")
    infos = unpack_infos(codec.unpack_data(message.infos, hints))
    final = infos.get(FINAL_OBS)
    if isinstance(final, np.ndarray) and final.dtype == object:
        for i, x in enumerate(final):
            if x is not None:
                final[i] = codec.unpack_space(single_space, x, path=f"infos.{FINAL_OBS}[{i}]")
    return infos
