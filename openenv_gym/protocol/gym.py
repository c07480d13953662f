"""The data of openenv-gym's Gymnasium servers on ``/ws``: actions, observations, frames.

OpenEnv leaves the action and observation objects to each env. A Gymnasium
env served by openenv-gym has these (published in its ``/schema``):

- action: ``{"action": <value of the action space>, "metadata"?: {...}}``, plus
  ``"types"`` (type hints of the action) from an openenv-gym peer on JSON;
- observation: ``{"obs": <value of the observation space>, "terminated",
  "truncated", "info", ...}``, plus ``"types"`` for an openenv-gym peer
  (the exact types of the reward and, on JSON, of ``obs`` and ``info``) and
  ``"text"``, the observation as text, for stock JSON peers and openenv-gym
  peers that ask for it.

Both sides go through these functions, with the session's
:class:`~openenv_gym.protocol.codecs.Codec` deciding how values travel:

    >>> from gymnasium.spaces import Discrete
    >>> from openenv_gym.protocol import codec_for
    >>> codec, space = codec_for(None), Discrete(2)
    >>> step = action_step(codec, space, 1)
    >>> step.to_wire()
    {'type': 'step', 'data': {'action': 1}}
    >>> read_action(codec, space, step)
    1
    >>> reply = observation(codec, space, 0, reward=1, terminated=False, truncated=True, info={})
    >>> read_observation(codec, space, reply)
    GymStep(obs=0, reward=1.0, terminated=False, truncated=True, info={}, text=None)
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any, NamedTuple

import gymnasium as gym
import numpy as np

from .. import spaces
from ..errors import ErrorCode, ProtocolError
from ..spaces._common import short_repr
from .codecs import Codec
from .hints import jsonable
from .messages import Observation, RenderReply, Step, check_fields, validation_error

__all__ = [
    "GymStep",
    "action_step",
    "read_action",
    "observation",
    "read_observation",
    "render_reply",
    "read_value",
    "check_action_fields",
    "ACTION_FIELDS",
]

#: The fields an action object may have besides its required ones (OpenEnv's
#: ``metadata``), and from an openenv-gym peer its type hints.
ACTION_FIELDS = frozenset({"metadata"})
_EXTENDED_ACTION_FIELDS = ACTION_FIELDS | {"types"}


class GymStep(NamedTuple):
    """What one observation frame of a Gymnasium server says."""

    obs: Any
    reward: float
    terminated: bool
    truncated: bool
    info: dict
    #: The observation as the server's text view wrote it, when it sent it.
    text: str | None = None


# -- actions ------------------------------------------------------------------------


def action_step(codec: Codec, space: gym.Space, action: Any) -> Step:
    """The ``step`` message carrying ``action``, a value of ``space``."""
    fields: dict[str, Any] = {"action": codec.pack_space(space, action)}
    if (hint := codec.hint(action)) is not None:
        fields["types"] = hint
    return Step(fields)


def check_action_fields(codec: Codec, fields: Mapping[str, Any], required: frozenset[str]) -> None:
    """An action object holds ``required`` and nothing but them, ``metadata`` and
    (from an openenv-gym peer) ``types``."""
    check_fields(fields, required, _allowed_action_fields(required, codec.extended))


@functools.cache
def _allowed_action_fields(required: frozenset[str], extended: bool) -> frozenset[str]:
    return required | (_EXTENDED_ACTION_FIELDS if extended else ACTION_FIELDS)


_ACTION = frozenset({"action"})


def read_action(codec: Codec, space: gym.Space, step: Step) -> Any:
    """The action a ``step`` carries, decoded and checked against ``space``
    (VALIDATION_ERROR naming ``action`` otherwise)."""
    fields = step.fields
    check_action_fields(codec, fields, _ACTION)
    return read_value(codec, space, fields["action"], fields.get("types"), ["action"])


def read_value(codec: Codec, space: gym.Space, data: Any, hints: Any, loc: list) -> Any:
    """An action of ``space`` a peer sent in the field ``loc``, decoded and in the
    space, or a VALIDATION_ERROR naming the field."""
    try:
        value = codec.unpack_space(space, data, hints)
    except spaces.SpaceValueError as exc:
        raise validation_error(loc, str(exc), data) from exc
    if not spaces.contains(space, value):
        raise validation_error(loc, f"Action {short_repr(data, 120)} is not in the action space {space}", data)
    return value


# -- observations -------------------------------------------------------------------


def observation(
    codec: Codec,
    space: gym.Space,
    obs: Any,
    *,
    reward: Any,
    terminated: Any,
    truncated: Any,
    info: Any,
    extra: Mapping[str, Any] | None = None,
    text: str | None = None,
) -> Observation:
    """The observation frame of one ``reset`` (``reward=None``) or ``step``.

    ``extra`` adds fields beyond Gymnasium's (a PettingZoo seat's turn data),
    ``text`` the observation as text (for language models).
    An ``obs`` outside ``space`` is the env's fault: EXECUTION_ERROR.
    """
    try:
        encoded = codec.pack_space(space, obs)
    except (spaces.SpaceValueError, TypeError, ValueError) as exc:
        raise ProtocolError(
            ErrorCode.EXECUTION_ERROR,
            f"The environment returned an observation that does not fit its observation "
            f"space {space}: {exc}",
        ) from exc
    terminated, truncated = bool(terminated), bool(truncated)
    info = info if isinstance(info, dict) else {"info": info}
    info_data, info_hint = codec.pack_data(info)
    fields: dict[str, Any] = {"obs": encoded, "terminated": terminated, "truncated": truncated, "info": info_data}
    if extra:
        fields.update(extra)
    if text is not None:
        fields["text"] = text
    types = {}
    if (hint := codec.hint(obs)) is not None:
        types["obs"] = hint
    if info_hint is not None:
        types["info"] = info_hint
    if (hint := codec.number_hint(reward)) is not None:
        types["reward"] = hint
    if types:
        fields["types"] = types
    return Observation(fields, None if reward is None else float(reward), terminated or truncated)


def read_observation(codec: Codec, space: gym.Space, message: Observation) -> GymStep:
    """What an observation frame from an openenv-gym Gymnasium server says."""
    fields = message.observation
    types = fields.get("types")
    reward = 0.0 if message.reward is None else float(message.reward)
    info = fields.get("info") or {}
    text = fields.get("text")
    text = text if isinstance(text, str) else None
    if not isinstance(types, dict):  # msgpack: values travel as they are
        return GymStep(
            codec.unpack_space(space, fields.get("obs")), reward,
            bool(fields.get("terminated", message.done)), bool(fields.get("truncated", False)), info, text,
        )
    return GymStep(
        obs=codec.unpack_space(space, fields.get("obs"), types.get("obs")),
        reward=codec.unpack_data(reward, types.get("reward")),
        terminated=bool(fields.get("terminated", message.done)),
        truncated=bool(fields.get("truncated", False)),
        info=codec.unpack_data(info, types.get("info")),
        text=text,
    )


# -- rendering ----------------------------------------------------------------------


def render_reply(codec: Codec, render_mode: str | None, frame: Any) -> RenderReply:
    """The reply to ``render``: an ``rgb_array`` frame as an array (msgpack) or
    nested lists with its dtype (JSON), ``ansi`` text as it is."""
    if isinstance(frame, np.ndarray):
        return RenderReply(render_mode, codec.pack_array(frame), frame.dtype.str)
    if isinstance(frame, list) and frame and isinstance(frame[0], np.ndarray):
        return RenderReply(render_mode, [codec.pack_array(f) for f in frame], frame[0].dtype.str)
    return RenderReply(render_mode, jsonable(frame))

