"""How a client maps Gymnasium values to a server's messages, and back.

A server's ``/schema`` decides which :class:`Contract` applies:

- :class:`GymContract` for openenv-gym servers: exact spaces come from the
  schema's extension key; actions travel as ``{"action": value}``;
  observations carry ``obs``, ``terminated``, ``truncated`` and ``info``.
- :class:`FieldsContract` for stock OpenEnv servers: the action and the
  observation are objects of named fields; spaces are inferred from the plain
  JSON Schema (or given by the user); ``done`` becomes ``terminated`` and
  ``truncated`` is always ``False``, since OpenEnv has a single ``done``.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym

from .. import spaces
from ..errors import ErrorCode, ProtocolError
from ..protocol import EXTENSION_KEY, Codec, Observation, ServerMessage, Step
from ..protocol import gym as gym_data
from ..protocol.attributes import ATTRIBUTES_VERSION
from ..protocol.gym import GymStep

__all__ = [
    "Contract",
    "GymContract",
    "FieldsContract",
    "GymStep",
    "contract_from_schema",
    "EXTRA_FIELDS",
    "MISSING_FIELDS",
]

#: Observation fields OpenEnv itself puts on every observation.
RESERVED_OBSERVATION_FIELDS = ("done", "reward", "metadata")
#: ``info`` key holding the observation fields of a stock server that are not in the
#: observation space (an answer of another shape, say), by name.
EXTRA_FIELDS = "openenv_gym.extra_fields"
#: ``info`` key naming the fields of the observation space the server left out (they
#: take their schema default, else :func:`~openenv_gym.spaces.neutral`).
MISSING_FIELDS = "openenv_gym.missing_fields"


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


def _observation(reply: ServerMessage) -> Observation:
    if not isinstance(reply, Observation):
        raise ProtocolError(ErrorCode.SESSION_ERROR, f"Expected an observation, got {reply.type!r}")
    return reply


class GymContract(Contract):
    """The contract of an openenv-gym server (exact spaces, terminated/truncated)."""

    extended = True

    def __init__(
        self,
        schema: dict,
        extension: dict,
        observation_space: gym.Space | None = None,
        action_space: gym.Space | None = None,
    ) -> None:
        self.observation_space = observation_space or _exact_space(schema["observation"], "obs")
        self.action_space = action_space or _exact_space(schema["action"], "action")
        self.render_mode = extension.get("render_mode")
        self.env_metadata = dict(extension.get("metadata") or {})
        self.env_id = extension.get("env_id")
        self.max_episode_steps = extension.get("max_episode_steps")
        attributes = extension.get("attributes")
        #: Whether ``/ws`` takes ``call`` / ``get_attr`` / ``set_attr`` (:mod:`~openenv_gym.protocol.attributes`).
        self.attributes = isinstance(attributes, dict) and attributes.get("version") == ATTRIBUTES_VERSION

    def step_message(self, codec: Codec, action: Any) -> Step:
        return gym_data.action_step(codec, self.action_space, action)

    def read(self, codec: Codec, reply: ServerMessage) -> GymStep:
        return gym_data.read_observation(codec, self.observation_space, _observation(reply))


class FieldsContract(Contract):
    """The contract of a stock OpenEnv server: named fields, one ``done``."""

    def __init__(self, schema: dict, observation_space=None, action_space=None):
        self._obs = self._fields(schema.get("observation"), observation_space,
                                 RESERVED_OBSERVATION_FIELDS, "observation")
        self._act = self._fields(schema.get("action"), action_space, ("metadata",), "action")
        self.observation_space = self._obs.space
        self.action_space = self._act.space

    @staticmethod
    def _fields(schema: Any, user_space: gym.Space | None, exclude: tuple[str, ...], what: str) -> spaces.InferredSpace:
        if user_space is not None:
            parts = user_space.spaces if isinstance(user_space, gym.spaces.Dict) else None

            def to_space(value: Any) -> Any:
                if parts is not None and isinstance(value, dict):
                    return {
                        k: spaces.decode(space, value[k], path=k) if k in value else spaces.neutral(space)
                        for k, space in parts.items()
                    }
                return spaces.decode(user_space, value)

            def to_json(value: Any) -> Any:
                return spaces.encode(user_space, value)

            return spaces.InferredSpace(user_space, to_space, to_json)
        if not isinstance(schema, dict):
            raise ValueError(
                f"the server's /schema has no {what} schema; pass {what}_space= explicitly"
            )
        return spaces.infer_fields(schema, exclude=exclude)

    def step_message(self, codec: Codec, action: Any) -> Step:
        data = self._act.to_json(action)
        if not isinstance(data, dict):
            raise TypeError(
                f"a stock OpenEnv server takes an action object of named fields; the action "
                f"space must be a Dict of those fields, not {self.action_space}"
            )
        return Step(data)

    def read(self, codec: Codec, reply: ServerMessage) -> GymStep:
        message = _observation(reply)
        fields = dict(message.observation)
        metadata = message.metadata or fields.get("metadata")
        for key in RESERVED_OBSERVATION_FIELDS:
            fields.pop(key, None)
        info: dict = {}
        if metadata:
            info["metadata"] = metadata
        if isinstance(self.observation_space, gym.spaces.Dict):
            # Nothing is dropped silently: fields outside the space go to info, and
            # fields the server left out (they take their default or a neutral value)
            # are named there.
            known = self.observation_space.spaces
            extra = {k: fields.pop(k) for k in list(fields) if k not in known}
            missing = [k for k in known if k not in fields]
            if extra:
                info[EXTRA_FIELDS] = extra
            if missing:
                info[MISSING_FIELDS] = missing
        return GymStep(
            obs=self._obs.to_space(fields),
            reward=0.0 if message.reward is None else float(message.reward),
            terminated=message.done,
            truncated=False,
            info=info,
        )


def _exact_space(object_schema: dict, field: str) -> gym.Space:
    extension = object_schema["properties"][field][spaces.SCHEMA_EXTENSION_KEY]
    if extension.get("format") != spaces.FORMAT:
        raise ValueError(
            f"the server describes its spaces in format {extension.get('format')!r}; this "
            f"openenv-gym understands {spaces.FORMAT!r} (upgrade openenv-gym on one side)"
        )
    return spaces.restore(extension["space"])


def contract_from_schema(
    schema: dict,
    *,
    observation_space: gym.Space | None = None,
    action_space: gym.Space | None = None,
) -> Contract:
    """Pick the contract for a server from its ``/schema`` document."""
    extension = schema.get(EXTENSION_KEY)
    if isinstance(extension, dict):
        return GymContract(schema, extension, observation_space, action_space)
    return FieldsContract(schema, observation_space, action_space)
