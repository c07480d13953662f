"""PettingZoo games on the route ``/agents`` (openenv-gym extension, version 1).

A game session speaks ``/ws``'s envelopes and error codes
(:data:`~openenv_gym.protocol.messages.WS_MESSAGES`); what differs is the data:

- ``step`` carries ``{"action": <value or null>}`` for the AEC API (the action
  of ``agent_selection``) or ``{"actions": {agent: value}}`` for the parallel API;
- every observation frame carries the whole game: ``agents`` and
  ``observations`` (agent → observation) always, and what PettingZoo returned
  (AEC: ``agent_selection``, ``rewards``, ``cumulative_rewards``,
  ``terminations``, ``truncations``, ``infos``; parallel: what ``reset`` or
  ``step`` returned), with ``done`` once no agent is left.

    >>> from gymnasium.spaces import Discrete
    >>> from openenv_gym.protocol import codec_for
    >>> codec, spaces = codec_for(None), {"a": Discrete(3)}
    >>> frame = game_observation(codec, spaces, ["a"], {"observations": {"a": 2}, "infos": {"a": {}}})
    >>> read_game(codec, spaces, frame)
    {'agents': ['a'], 'observations': {'a': 2}, 'infos': {'a': {}}}
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import gymnasium as gym

from .. import spaces
from ..errors import ErrorCode, ProtocolError
from .codecs import Codec
from .gym import check_action_fields, read_value
from .messages import Observation, Step, validation_error

__all__ = [
    "AGENTS_PATH",
    "AGENTS_VERSION",
    "game_step",
    "read_aec_step",
    "read_parallel_step",
    "game_observation",
    "read_game",
]

#: The WebSocket route of the multi-agent protocol.
AGENTS_PATH = "/agents"
#: Version of the multi-agent protocol (``x-openenv-gym.multiagent.version``).
AGENTS_VERSION = 1

#: Game entries that travel exactly (no type hints needed).
_EXACT = frozenset({"agents", "agent_selection", "terminations", "truncations"})
_ACTION, _ACTIONS = frozenset({"action"}), frozenset({"actions"})


def game_step(codec: Codec, action_spaces: Mapping[str, gym.Space], actions: Mapping[str, Any], api: str) -> Step:
    """The ``step`` of a game: the AEC API's one action (``None`` for an agent
    that is done) of the only agent in ``actions``, or the parallel API's actions."""
    encoded = {
        agent: None if action is None else codec.pack_space(action_spaces[agent], action)
        for agent, action in actions.items()
    }
    if api == "aec":
        ((_, action),) = encoded.items()
        return Step({"action": action})
    return Step({"actions": encoded})


def read_aec_step(codec: Codec, action_spaces: Mapping[str, gym.Space], step: Step, agent: str) -> Any:
    """The AEC API's action of ``agent`` (the agent to act) in a game ``step``:
    ``None`` for an agent that is done, else decoded and checked against its
    space (VALIDATION_ERROR otherwise)."""
    fields = step.fields
    check_action_fields(codec, fields, _ACTION)
    value = fields["action"]
    return None if value is None else _agent_action(codec, action_spaces, agent, value, ["action"])


def read_parallel_step(codec: Codec, action_spaces: Mapping[str, gym.Space], step: Step) -> dict[str, Any]:
    """The parallel API's ``{agent: action}`` of a game ``step``, each decoded and
    checked against its agent's space (VALIDATION_ERROR otherwise)."""
    fields = step.fields
    check_action_fields(codec, fields, _ACTIONS)
    encoded = fields["actions"]
    if not isinstance(encoded, dict):
        raise validation_error(["actions"], "Input should be an object of agent: action", encoded)
    return {
        agent: _agent_action(codec, action_spaces, agent, value, ["actions", agent])
        for agent, value in encoded.items()
    }


def _agent_action(codec: Codec, action_spaces: Mapping[str, gym.Space], agent: Any, value: Any, loc: list) -> Any:
    space = action_spaces.get(agent)
    if space is None:
        raise validation_error(loc, f"Unknown agent {agent!r}", value)
    return read_value(codec, space, value, None, loc)


def game_observation(
    codec: Codec, observation_spaces: Mapping[str, gym.Space], agents: list[str], game: dict[str, Any]
) -> Observation:
    """The observation frame holding the whole game (see the module docstring).

    ``game["observations"]`` outside their agents' spaces are the env's fault:
    EXECUTION_ERROR.
    """
    raw = game["observations"]
    try:
        encoded = {a: codec.pack_space(observation_spaces[a], obs) for a, obs in raw.items()}
    except (KeyError, spaces.SpaceValueError, TypeError, ValueError) as exc:
        raise ProtocolError(
            ErrorCode.EXECUTION_ERROR,
            f"The environment returned an observation that does not fit its agent's "
            f"observation space: {exc}",
        ) from exc
    fields: dict[str, Any] = {"agents": list(agents), **game, "observations": encoded}
    for key in ("terminations", "truncations"):
        if key in fields:
            fields[key] = {a: bool(v) for a, v in fields[key].items()}
    hinted = {k: v for k, v in game.items() if k not in _EXACT}
    for key in hinted:
        if key != "observations":
            fields[key] = codec.pack_data(fields[key])[0]
    if (hints := codec.hint(hinted)) is not None:
        fields["types"] = hints
    return Observation(fields, None, not agents)


def read_game(codec: Codec, observation_spaces: Mapping[str, gym.Space], message: Observation) -> dict[str, Any]:
    """The game of a :func:`game_observation` frame, values decoded."""
    game = dict(message.observation)
    types = game.pop("types", None)
    if isinstance(types, dict):
        for key, hint in (types.get("dict") or {}).items():
            if key in game:
                game[key] = codec.unpack_data(game[key], hint)
    game["observations"] = {
        agent: codec.unpack_space(observation_spaces[agent], value)
        for agent, value in (game.get("observations") or {}).items()
    }
    return game
