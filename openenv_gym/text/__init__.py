"""Text views of Gymnasium and PettingZoo envs, for language models (LLM trainers).

A :class:`TextView` turns an env's observations into text and a model's replies into
actions, for every Gymnasium space; the server and a remote client build the same view
(:func:`view_for` an env, :func:`view_for_spaces` its spaces and id), so both read a
reply alike.

- :meth:`TextView.describe`: the task, the observations and the actions, for a system prompt;
- :meth:`TextView.obs_to_text`: an observation (and the legal actions, where the env
  masks them);
- :meth:`TextView.parse_action`: the action a reply names, as a bare value (``2``,
  ``left``), JSON (``[0.1, -0.3]``), a fenced ```` ```json ```` block, ``{"action": ...}``
  or ``<action>...</action>``; anything that does not name a legal action is an
  :class:`ActionParseError` (a ``ValueError``) saying what was received and what is
  legal. Nothing is clipped or coerced;
- :meth:`TextView.action_to_text`, :meth:`TextView.legal_actions` and
  :meth:`TextView.action_json_schema` (for a tool's input).

    >>> import gymnasium as gym
    >>> env = gym.make("FrozenLake-v1")
    >>> obs, info = env.reset(seed=0)
    >>> view = view_for(env)
    >>> print(view.obs_to_text(obs, info))
    position: row 0, column 0 (cell 0)
    map (* = you):
    *FFF
    FHFH
    FFFH
    HFFG
    >>> view.parse_action("I'll go down: <action>down</action>")
    1
    >>> view.parse_action("4")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    openenv_gym.errors.ActionParseError: cannot read an action from '4': action: got 4, out of range; legal: ...

Where a view's parts come from (the env's own methods, the built-in table of
:mod:`~openenv_gym.text.table`, an ``ansi`` render, the spaces) is in
:mod:`~openenv_gym.text.sources`.
"""

from __future__ import annotations

from ..errors import ActionParseError
from .formats import Board, Components, Field, Grid, ObservationFormat
from .reply import Reply, read_reply
from .sources import env_key, strip_ansi, view_for, view_for_spaces
from .table import BUILTIN_VIEWS, BuiltinView, builtin_view
from .values import action_text, describe_space, parse_reply, parse_value, value_text
from .view import MAX_LISTED_ACTIONS, TextView, action_mask

__all__ = [
    "TextView",
    "ActionParseError",
    "view_for",
    "view_for_spaces",
    "env_key",
    "strip_ansi",
    "read_reply",
    "Reply",
    "action_mask",
    "MAX_LISTED_ACTIONS",
    "describe_space",
    "value_text",
    "action_text",
    "parse_reply",
    "parse_value",
    "ObservationFormat",
    "Field",
    "Components",
    "Grid",
    "Board",
    "BuiltinView",
    "BUILTIN_VIEWS",
    "builtin_view",
]
