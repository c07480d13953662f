"""The web page's messages (``WS /web/live``) and upstream's live updates (``WS /ws/ui``),
sans I/O: what :mod:`openenv_gym.server.web` reads and sends on those sockets.

The page sends JSON text commands, each read into the message it stands for:

    >>> read_command({"type": "reset", "seed": 3, "options": {"agent": "player_2"}})
    Reset(seed=3, episode_id=None, options={'agent': 'player_2'}, injected_state=None)
    >>> read_command({"type": "step", "action": {"action": 1}})
    Step(fields={'action': 1})
    >>> read_command({"type": "step", "text": "left"})      # read by the env's text view
    'left'

and gets updates (:func:`page_update`, strict JSON: no NaN), each followed by the env's
frame as a PNG in a binary message when the update says ``"frame": true``; an error
(:func:`page_error`) answers only the command that caused it. Upstream's ``/ws/ui`` gets
``{"type": "state_update", "episode_state": ...}`` (:func:`state_update`), the episode
state of upstream's ``WebInterfaceManager``.
"""

from __future__ import annotations

import json
import math
from datetime import datetime
from typing import Any

from ..errors import ErrorCode, ProtocolError
from .messages import Reset, Step

__all__ = [
    "ACTION_LOG_VALUES", "MAX_ACTION_LOGS", "WAITING", "action_log", "action_log_capacity", "episode_state",
    "page_error", "page_update", "read_command", "said", "state_update",
]

#: Upstream's bound on the action log of an episode state.
MAX_ACTION_LOGS = 1000
#: The observation values the action log holds at most: as many steps as fit, up to
#: :data:`MAX_ACTION_LOGS` (a log of 1000 image observations would hold millions of objects,
#: which every garbage collection of the server walks).
ACTION_LOG_VALUES = 100_000
#: The page's first message before any episode.
WAITING = json.dumps({"type": "waiting"})
#: What a command may be.
COMMANDS = (
    '{"type": "reset", "seed"?: int, "options"?: {...}}, {"type": "step", "action": {...fields}} '
    'or {"type": "step", "text": "..."}'
)


def read_command(command: Any) -> Reset | Step | str:
    """The page's command (decoded JSON) as the reset or step it asks for, or the text of
    an action for the env's view to read.

    Raises:
        ProtocolError: VALIDATION_ERROR or UNKNOWN_TYPE, saying what a command is.
    """
    kind = command.get("type") if isinstance(command, dict) else None
    if kind == "reset":
        options = command.get("options") or {}
        if not isinstance(options, dict):
            raise ProtocolError(ErrorCode.VALIDATION_ERROR, f"a reset's options are an object, not {options!r:.100}")
        seed = {"seed": command["seed"]} if command.get("seed") is not None else {}
        return Reset.from_data({**options, **seed})
    if kind == "step" and isinstance(command.get("text"), str):
        return str(command["text"])
    if kind == "step" and isinstance(command.get("action"), dict):
        return Step(dict(command["action"]))
    raise ProtocolError(ErrorCode.UNKNOWN_TYPE, f"a command is {COMMANDS}; got {str(command)[:200]}")


def page_update(**fields: Any) -> str:
    """An update for the page: ``{"type": "update", **fields}``, infinite and NaN numbers
    as ``null`` (browsers parse strict JSON)."""
    return json.dumps(finite({"type": "update", **fields}))


def page_error(message: str) -> str:
    """The answer to a command the page may not send; the session goes on."""
    return json.dumps({"type": "error", "message": message})


def said(error: ProtocolError) -> str:
    """A protocol error for a person: each field a validation error names, else its message.

        >>> from openenv_gym.protocol.messages import validation_error
        >>> said(validation_error(["seed"], "Input should be a valid integer", "zero"))
        "seed: Input should be a valid integer (got 'zero')"
    """
    entries = error.extra.get("errors")
    fields = [
        f"{'.'.join(str(key) for key in entry.get('loc', ()))}: {entry.get('msg')} (got {entry.get('input')!r:.100})"
        for entry in (entries if isinstance(entries, list) else []) if isinstance(entry, dict)
    ]
    return "; ".join(fields or [error.message])


def episode_state(episode_id: str | None, observation: Any = None) -> dict[str, Any]:
    """Upstream's ``EpisodeState`` after a reset (or before any)."""
    return {
        "episode_id": episode_id, "step_count": 0, "current_observation": observation,
        "action_logs": [], "is_reset": True,
    }


def action_log_capacity(values_per_observation: int) -> int:
    """How many steps the action log keeps, for observations of that many values.

        >>> action_log_capacity(4), action_log_capacity(84 * 84 * 4)      # CartPole, an Atari stack
        (1000, 3)
    """
    return max(1, min(MAX_ACTION_LOGS, ACTION_LOG_VALUES // max(1, values_per_observation)))


def action_log(action: dict[str, Any], reply: dict[str, Any], step_count: int) -> dict[str, Any]:
    """Upstream's ``ActionLog`` of one step: its action fields and the reply's data."""
    return {
        "timestamp": datetime.now().isoformat(), "action": action, "observation": reply["observation"],
        "reward": reply.get("reward"), "done": bool(reply.get("done")), "step_count": step_count,
    }


def state_update(state: dict[str, Any]) -> str:
    """Upstream's ``/ws/ui`` message."""
    return json.dumps({"type": "state_update", "episode_state": state}, allow_nan=True)


def finite(value: Any) -> Any:
    """``value`` with infinite and NaN numbers as ``None``.

        >>> finite({"a": [1.0, float("inf")], "b": float("nan")})
        {'a': [1.0, None], 'b': None}
    """
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {key: finite(item) for key, item in value.items()}
    if isinstance(value, list):
        return [finite(item) for item in value]
    return value
