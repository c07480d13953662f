"""How a client maps Gymnasium values to a server's messages, and back.

A server's ``/schema`` decides which :class:`Contract` applies (:func:`read_contract`
fetches it):

- :class:`GymContract` for openenv-gym servers: exact spaces come from the
  schema's extension key; actions travel as ``{"action": value}``;
  observations carry ``obs``, ``terminated``, ``truncated`` and ``info``.
- :class:`FieldsContract` for stock OpenEnv servers: the action and the
  observation are objects of named fields, seen through a
  :class:`~openenv_gym.spaces.StockView` (inferred from the plain JSON Schema
  and the server's first observation, overridable field by field);
  ``done`` becomes ``terminated`` and ``truncated`` is always ``False``, since
  OpenEnv has a single ``done``.

A schema the client cannot use (spaces it cannot restore, or whose bounds would take more
than ``max_message_bytes``, a side missing) is refused with one
:class:`~openenv_gym.errors.ProtocolMismatchError`: ``{url}/schema: <why>``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

import gymnasium as gym
import numpy as np

from .. import spaces
from ..errors import ConnectionClosedError, ErrorCode, OpenEnvGymError, ProtocolError, ProtocolMismatchError
from ..protocol import EXTENSION_KEY, Codec, Frame, Observation, ServerMessage, Step
from ..protocol import gym as gym_data
from ..protocol.attributes import ATTRIBUTES_VERSION
from ..protocol.codecs import SHARED_SECTION_BYTES
from ..protocol.gym import GymStep
from ..spaces.stock import EXTRA_FIELDS, MISSING_FIELDS, RESERVED_OBSERVATION_FIELDS, FieldOverrides
from .http import post_json
from .native import read_schema
from .options import ConnectOptions

__all__ = [
    "Contract",
    "GymContract",
    "FieldsContract",
    "GymStep",
    "contract_from_schema",
    "read_contract",
    "EXTRA_FIELDS",
    "MISSING_FIELDS",
    "FieldOverrides",
]


#: The most step frames a contract keeps encoded (one per action of a small Discrete space).
_MAX_STEP_FRAMES = 256


class Contract:
    """How a client maps Gymnasium values to one kind of server's messages, and back."""

    observation_space: gym.Space
    action_space: gym.Space
    #: ``True`` for openenv-gym servers.
    extended: bool = False
    render_mode: str | None = None
    env_metadata: dict = {}
    #: Whether ``/ws`` takes the attribute messages (openenv-gym servers that advertise them).
    attributes: bool = False

    def step_message(self, codec: Codec, action: Any) -> Step:
        """The ``step`` message for ``action``."""
        raise NotImplementedError

    def read(self, codec: Codec, reply: ServerMessage) -> GymStep:
        """What a reply to ``reset`` or ``step`` says, as Gymnasium values."""
        raise NotImplementedError

    def step_frame(self, codec: Codec, action: Any) -> Frame:
        """The ``step`` message for ``action``, encoded by ``codec``."""
        return codec.encode(self.step_message(codec, action).to_wire())

    def read_decoded(self, codec: Codec, decoded: Any) -> GymStep | None:
        """What a decoded reply says, when it is an observation this contract reads as it
        is (``None``: type it first, and :meth:`read` it; an error frame is one)."""
        return None

    def session_options(self, options: ConnectOptions, num_envs: int = 1) -> ConnectOptions:
        """``options`` for a session that answers for ``num_envs`` envs: offering no shared
        section when its replies cannot carry :data:`SHARED_SECTION_BYTES` of arrays (the
        observations have a known size under it, and nothing is rendered), since the
        section would go unused while holding a descriptor at each end."""
        if not options.shared_memory or self.render_mode is not None:
            return options
        nbytes = array_bytes(self.observation_space)
        if nbytes is None or nbytes * num_envs >= SHARED_SECTION_BYTES:
            return options
        return dataclasses.replace(options, shared_memory=False)


def array_bytes(space: gym.Space) -> int | None:
    """The bytes of the arrays in any value of ``space`` (``None``: no bound is known, as
    for text, sequences, graphs and spaces of its own).

        >>> array_bytes(gym.spaces.Box(0, 255, (84, 84, 4), dtype=np.uint8))
        28224
        >>> array_bytes(gym.spaces.Dict(pos=gym.spaces.Box(-1, 1, (3,)), n=gym.spaces.Discrete(4)))
        12
    """
    if isinstance(space, (gym.spaces.Box, gym.spaces.MultiBinary, gym.spaces.MultiDiscrete)):
        return int(np.prod(space.shape)) * space.dtype.itemsize
    if isinstance(space, gym.spaces.Discrete):
        return 0
    if isinstance(space, (gym.spaces.Dict, gym.spaces.Tuple)):
        parts = [array_bytes(s) for s in (space.spaces.values() if isinstance(space, gym.spaces.Dict) else space)]
        return None if None in parts else sum(p for p in parts if p is not None)
    return None


def _observation(reply: ServerMessage) -> Observation:
    if not isinstance(reply, Observation):
        raise ProtocolError(ErrorCode.SESSION_ERROR, f"Expected an observation, got {reply.type!r}")
    return reply


class GymContract(Contract):
    """The contract of an openenv-gym server (exact spaces, terminated/truncated).

    ``budget`` bounds what restoring the schema's spaces may allocate
    (:class:`~openenv_gym.spaces.BoundsBudget`); a space the schema lacks or that cannot
    be restored raises :class:`~openenv_gym.errors.ProtocolMismatchError`.
    """

    extended = True

    def __init__(
        self,
        schema: dict,
        extension: dict,
        observation_space: gym.Space | None = None,
        action_space: gym.Space | None = None,
        budget: spaces.BoundsBudget | None = None,
    ) -> None:
        self.observation_space = observation_space or _exact_space(schema, "observation", "obs", budget)
        self.action_space = action_space or _exact_space(schema, "action", "action", budget)
        self.render_mode = extension.get("render_mode")
        self.env_metadata = dict(extension.get("metadata") or {})
        self.env_id = extension.get("env_id")
        self.max_episode_steps = extension.get("max_episode_steps")
        text = extension.get("text")
        instructions = text.get("instructions") if isinstance(text, dict) else None
        #: The server's instructions for its env (its view's description), if it gives them.
        self.instructions: str | None = instructions if isinstance(instructions, str) and instructions else None
        #: Encoded step frames by (subprotocol, action), for a Discrete space of few actions.
        self._frames: dict[tuple, Frame] | None = (
            {} if type(self.action_space) is gym.spaces.Discrete and self.action_space.n <= _MAX_STEP_FRAMES else None
        )
        attributes = extension.get("attributes")
        #: Whether ``/ws`` takes ``call`` / ``get_attr`` / ``set_attr`` (:mod:`~openenv_gym.protocol.attributes`).
        self.attributes = isinstance(attributes, dict) and attributes.get("version") == ATTRIBUTES_VERSION

    def step_message(self, codec: Codec, action: Any) -> Step:
        return gym_data.action_step(codec, self.action_space, action)

    def step_frame(self, codec: Codec, action: Any) -> Frame:
        """As :meth:`Contract.step_frame`; the frames of a small ``Discrete`` space's actions
        (Python ints, as policies and Gymnasium's ``sample`` give them) are encoded once
        each, per codec: a step then encodes nothing."""
        space = self.action_space
        if type(action) is not int or self._frames is None or not space.start <= action < space.start + space.n:  # type: ignore[attr-defined]
            return super().step_frame(codec, action)
        key = (codec.subprotocol, action)
        frame = self._frames.get(key)
        if frame is None:
            frame = super().step_frame(codec, action)
            if len(self._frames) < _MAX_STEP_FRAMES:
                self._frames[key] = frame
        return frame

    def read(self, codec: Codec, reply: ServerMessage) -> GymStep:
        return gym_data.read_observation(codec, self.observation_space, _observation(reply))

    def read_decoded(self, codec: Codec, decoded: Any) -> GymStep | None:
        """An observation frame read as :meth:`read` reads it, with no message object
        between: the commonest reply of a step."""
        if type(decoded) is not dict or decoded.get("type") != "observation":
            return None
        data = decoded.get("data")
        if type(data) is not dict or type(data.get("observation")) is not dict:
            return None
        return self.read(codec, Observation.from_data(data))


class FieldsContract(Contract):
    """The contract of a stock OpenEnv server: named fields, one ``done``.

    ``view`` (a :class:`~openenv_gym.spaces.StockView`) says how the fields look as
    spaces; ``view.describe()`` says which rule chose each one.
    """

    def __init__(self, view: spaces.StockView) -> None:
        self.view = view
        self.observation_space = view.observation_space
        self.action_space = view.action_space

    def step_message(self, codec: Codec, action: Any) -> Step:
        return Step(self.view.act(action))

    def read(self, codec: Codec, reply: ServerMessage) -> GymStep:
        message = _observation(reply)
        fields = dict(message.observation)
        metadata = message.metadata or fields.get("metadata")
        for key in RESERVED_OBSERVATION_FIELDS:
            fields.pop(key, None)
        obs, info = self.view.observe(fields)
        if metadata:
            info = {"metadata": metadata, **info}
        return GymStep(
            obs=obs,
            reward=0.0 if message.reward is None else float(message.reward),
            terminated=message.done,
            truncated=False,
            info=info,
        )


def _exact_space(schema: dict, side: str, field: str, budget: spaces.BoundsBudget | None) -> gym.Space:
    """The exact space an openenv-gym schema describes for ``side`` (``observation`` or
    ``action``), under ``{side}.properties.{field}`` and its extension key."""
    object_schema = schema.get(side)
    properties = object_schema.get("properties") if isinstance(object_schema, dict) else None
    prop = properties.get(field) if isinstance(properties, dict) else None
    extension = prop.get(spaces.SCHEMA_EXTENSION_KEY) if isinstance(prop, dict) else None
    if not isinstance(extension, dict):
        raise ProtocolMismatchError(
            f"no {side} space: an openenv-gym schema describes it at "
            f"{side}.properties.{field}[{spaces.SCHEMA_EXTENSION_KEY!r}]"
        )
    try:
        return spaces.restore(extension, budget=budget)
    except ValueError as exc:
        raise ProtocolMismatchError(f"its {side} space: {exc}") from exc


def contract_from_schema(
    schema: dict,
    *,
    observation_space: gym.Space | None = None,
    action_space: gym.Space | None = None,
    first_observation: Mapping[str, Any] | None = None,
    observation_fields: FieldOverrides | None = None,
    action_fields: FieldOverrides | None = None,
    first_observation_source: str = "",
    budget: spaces.BoundsBudget | None = None,
) -> Contract:
    """Pick the contract for a server from its ``/schema`` document (for a stock server, with
    the fields of its first observation when :func:`~openenv_gym.spaces.needs_first_observation`).

    Raises:
        ProtocolMismatchError: the schema describes no space this client can use for a side
            not given whole (``budget``: one whose bounds would take more than it allows).
        ValueError: the field overrides do not fit the server.
    """
    extension = schema.get(EXTENSION_KEY)
    if isinstance(extension, dict):
        if observation_fields or action_fields:
            raise ValueError(
                "observation_fields= / action_fields= override the inferred fields of a stock OpenEnv "
                "server; this openenv-gym server publishes exact spaces (pass observation_space= / "
                "action_space= to replace them)"
            )
        return GymContract(schema, extension, observation_space, action_space, budget)
    view = spaces.infer_view(
        schema, first_observation=first_observation, observation_fields=observation_fields,
        action_fields=action_fields, observation_space=observation_space, action_space=action_space,
        first_observation_source=first_observation_source,
    )
    return FieldsContract(view)


def read_contract(
    base_url: str,
    options: ConnectOptions,
    *,
    observation_space: gym.Space | None = None,
    action_space: gym.Space | None = None,
    observation_fields: FieldOverrides | None = None,
    action_fields: FieldOverrides | None = None,
) -> tuple[dict, Contract]:
    """``(schema, contract)`` of the server at ``base_url``: its ``/schema``, and for a stock
    server whose schema leaves shapes or action counts open, its first observation, read
    with ``POST /reset`` (a stateless reset that holds no session, so it works on a server
    that takes one session at a time). When that reset fails, the view is inferred from the
    schema alone, and its rules say why.

    The bounds of the spaces an openenv-gym server describes may take ``max_message_bytes``
    together (a ``Box``'s ``low`` and ``high`` are each as large as one of its values): a few
    hundred bytes of schema can declare a ``Box`` of gigabytes.

    Raises:
        ProtocolMismatchError: ``{base_url}/schema: <why>``, for a schema this client cannot use.
    """
    schema = read_schema(base_url, options)
    if not isinstance(schema, dict):
        raise OpenEnvGymError(f"{base_url}/schema did not return a JSON object")
    first: Mapping[str, Any] | None = None
    source = "not needed: the schema leaves no list's shape or action count open"
    whole = observation_space is not None and action_space is not None
    if whole:
        source = "not needed: both spaces given"
    elif not isinstance(schema.get(EXTENSION_KEY), dict) and spaces.needs_first_observation(schema):
        try:
            reply = post_json(f"{base_url}/reset", {}, options)
        except ConnectionClosedError as exc:
            source = f"none: {exc}; lists stay Sequences and integer actions unbounded"
        else:
            fields = reply.get("observation") if isinstance(reply, dict) else None
            if isinstance(fields, dict):
                first = {**fields, "metadata": fields.get("metadata") or reply.get("metadata") or {}}
                source = "POST /reset (a stateless reset: no session held)"
            else:
                source = "none: POST /reset did not answer an observation object"
    try:
        contract = contract_from_schema(
            schema, observation_space=observation_space, action_space=action_space, first_observation=first,
            observation_fields=observation_fields, action_fields=action_fields, first_observation_source=source,
            budget=spaces.BoundsBudget(options.max_message_bytes, "max_message_bytes"),
        )
    except ProtocolMismatchError as exc:
        raise ProtocolMismatchError(f"{base_url}/schema: {exc}") from exc
    return schema, contract
