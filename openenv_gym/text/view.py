""":class:`TextView`: one env's observations and actions as text, for a language model.

A view is made of what is known about the env: its spaces (always), and, where a source
gives them (:func:`~openenv_gym.text.view_for`), a task description, names and meanings of
its actions, an observation format (:mod:`openenv_gym.text.formats`) and a render
function that describes the env's current state. The server renders observations with it
and reads the model's replies; a client builds the same view from the spaces and the env
id alone (:func:`~openenv_gym.text.view_for_spaces`).

    >>> from gymnasium import spaces
    >>> view = TextView(spaces.Discrete(16), spaces.Discrete(4), action_names=["left", "down", "right", "up"])
    >>> view.parse_action("<action>Down</action>")
    1
    >>> view.parse_action("jump")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    openenv_gym.errors.ActionParseError: ... 'jump': action: got 'jump', not an action name; legal: one of left, ...
    >>> view.legal_actions({"action_mask": np.array([1, 0, 0, 1], dtype=np.int8)})
    ['left', 'up']
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
from gymnasium import spaces as gs

from .. import spaces
from .formats import ObservationFormat
from .reply import ActionParseError, shorten
from .values import action_text, describe_space, parse_reply, value_text

__all__ = [
    "TextView", "ServedTextView", "MAX_LISTED_ACTIONS", "ANSWER_FORMS", "action_mask", "act_tool_text",
    "reward_text", "episode_status",
]

#: ``Discrete`` action spaces up to this size list all their actions as legal when the
#: env gives no action mask; bigger ones (and other spaces) have no list (``None``).
MAX_LISTED_ACTIONS = 100

#: The forms of a reply every view reads (:func:`~openenv_gym.text.read_reply`).
ANSWER_FORMS = (
    "as a bare value, as JSON, as a ```json code block, as {{\"action\": ...}} or inside <action></action> "
    "tags, for example <action>{example}</action>"
)


def action_mask(obs: Any, info: Mapping[str, Any] | None) -> np.ndarray | None:
    """The env's action mask, by Gymnasium's and PettingZoo's conventions:
    ``info["action_mask"]`` (Taxi), else ``obs["action_mask"]`` in a ``Dict``
    observation (PettingZoo's classic games), else ``None``.

        >>> action_mask({"observation": 0, "action_mask": [0, 1]}, None)
        array([0, 1])
    """
    for holder in (info, obs):
        if isinstance(holder, Mapping) and holder.get("action_mask") is not None:
            return np.asarray(holder["action_mask"])
    return None


class TextView:
    """One env's observations and actions as text.

    Args:
        observation_space: The env's observation space.
        action_space: The env's action space.
        env_id: The env's id (``FrozenLake-v1``), named in :meth:`describe`.
        task: What the env is about, the first paragraph of :meth:`describe`.
        action_names: Names of a ``Discrete`` space's actions, in order (replies may
            use them in any case, or the actions' numbers), or of a 1-D ``Box``
            action's components (named in :meth:`describe` only).
        action_meanings: What each named ``Discrete`` action does, for :meth:`describe`.
        observation: How observations read (:mod:`openenv_gym.text.formats`), instead
            of the default text of the observation space.
        render: A function that describes the env's current state (an env's
            ``render_text()``, an ``ansi`` render), used instead of any observation
            format; ``None`` or ``""`` from it falls back to them.

    Methods that depend on the position (the legal actions; a chess move's action
    number) read it from their ``obs`` and ``info`` arguments, and by default from the
    last observation :meth:`obs_to_text` rendered: the one the model answers. So a view
    belongs to one episode at a time; make one per session.
    """

    def __init__(
        self,
        observation_space: gs.Space,
        action_space: gs.Space,
        *,
        env_id: str | None = None,
        task: str | None = None,
        action_names: Sequence[str] | None = None,
        action_meanings: Sequence[str] | None = None,
        observation: ObservationFormat | None = None,
        render: Callable[[], str | None] | None = None,
    ) -> None:
        self.observation_space = observation_space
        self.action_space = action_space
        self.env_id = env_id
        self.task = task
        self.action_names = list(action_names) if action_names else None
        self.action_meanings = list(action_meanings) if action_meanings else None
        self.observation = observation
        self.render = render
        self._obs: Any = None
        self._info: Mapping[str, Any] | None = None
        if self.action_names is not None:
            _check_names(self.action_names, action_space)

    # -- for a system prompt --------------------------------------------------------------

    def describe(self) -> str:
        """What the task, the observations and the actions are, and how to answer: for a
        system prompt.

            >>> from gymnasium import spaces
            >>> view = TextView(spaces.Box(-1.0, 1.0, shape=(2,)), spaces.Discrete(2), env_id="Demo-v0")
            >>> print(view.describe())  # doctest: +ELLIPSIS
            The environment Demo-v0.
            Observation: a list of 2 numbers, each from -1.0 to 1.0
            Actions: an integer from 0 to 1
            Answer with one action, as a bare value, as JSON, ... for example <action>0</action>
        """
        intro = self.task or (f"The environment {self.env_id}." if self.env_id else "An environment.")
        return "\n".join(
            [
                intro,
                f"Observation: {self.describe_observation()}",
                f"Actions: {self.describe_actions()}",
                "Answer with one action, " + ANSWER_FORMS.format(example=self.example_action()),
            ]
        )

    def describe_observation(self) -> str:
        """What an observation says, in words: its format's description, else its space's."""
        return self.observation.describe() if self.observation else describe_space(self.observation_space)

    def describe_actions(self) -> str:
        """The actions, in words: each name and its meaning, else the action space's values."""
        names, space = self._names(), self.action_space
        if names is None or not isinstance(space, gs.Discrete):
            return describe_space(space, names=self.action_names)
        meanings = self.action_meanings or [""] * len(names)
        listed = ", ".join(f"{n} ({m})" if m else n for n, m in zip(names, meanings))
        start = int(space.start)
        return f"{listed} (or their numbers {start} to {start + len(names) - 1})"

    def example_action(self) -> str:
        """A legal action's text, for examples."""
        return self.action_to_text(spaces.neutral(self.action_space))

    # -- observations ---------------------------------------------------------------------

    def obs_to_text(self, obs: Any, info: Mapping[str, Any] | None = None) -> str:
        """An observation as text, and the legal actions when the env gives a mask.

        The view remembers ``obs`` and ``info`` as the position that later calls
        (:meth:`parse_action`, :meth:`legal_actions`) refer to by default.
        """
        self._obs, self._info = obs, info
        text = self.render() if self.render is not None else None
        if not text:
            text = self.observation.text(obs) if self.observation else value_text(self.observation_space, obs)
        if action_mask(obs, info) is not None:
            legal = self.legal_actions(info, obs=obs)
            text += "\nLegal actions: " + (", ".join(legal) if legal else "none")
        return text

    # -- actions --------------------------------------------------------------------------

    def action_to_text(self, action: Any, *, obs: Any = None, info: Mapping[str, Any] | None = None) -> str:
        """The text of ``action``, which :meth:`parse_action` reads back to the same action."""
        return action_text(self.action_space, action, names=self._names())

    def parse_action(self, reply: Any, *, obs: Any = None, info: Mapping[str, Any] | None = None) -> Any:
        """The action a model's reply names, checked against the action space and, when
        the env gives an action mask, against the legal actions of the position.

        ``reply`` is the model's text (any form :func:`~openenv_gym.text.read_reply`
        reads) or a value already decoded from JSON (a tool call's argument).

        Raises:
            ActionParseError: naming what was received and what is legal.
        """
        action = parse_reply(self.action_space, reply, names=self.action_names)
        legal = self._legal_values(*self._context(obs, info))
        if legal is not None and int(action) not in legal:
            texts = [self.action_to_text(a) for a in legal]
            listed = ", ".join(texts) if texts else "none (the episode is over)"
            quoted = shorten(reply) if isinstance(reply, str) else repr(reply)
            raise ActionParseError(
                f"cannot play {quoted}: {self.action_to_text(action)} is not legal now; legal actions: {listed}",
                received=reply,
                legal=listed,
            )
        return action

    def legal_actions(self, info: Mapping[str, Any] | None = None, *, obs: Any = None) -> list[str] | None:
        """The texts of the legal actions: those of the env's action mask (``info`` or the
        observation's ``"action_mask"``), else every action of a ``Discrete`` space of up
        to :data:`MAX_LISTED_ACTIONS` actions, else ``None`` (not enumerable)."""
        values = self._legal_values(*self._context(obs, info))
        if values is None and isinstance(self.action_space, gs.Discrete):
            start, n = int(self.action_space.start), int(self.action_space.n)
            values = list(range(start, start + n)) if n <= MAX_LISTED_ACTIONS else None
        return None if values is None else [self.action_to_text(a) for a in values]

    def action_json_schema(self) -> dict[str, Any]:
        """The JSON Schema of an action for a tool's input: where the actions have names,
        one of the names or one of their numbers (as :meth:`describe_actions` says and
        :meth:`parse_action` reads), else the JSON Schema of the action space.

            >>> from gymnasium import spaces
            >>> TextView(spaces.Discrete(2), spaces.Discrete(2), action_names=["left", "right"]).action_json_schema()
            {'anyOf': [{'type': 'string', 'enum': ['left', 'right']}, {'type': 'integer', 'minimum': 0, 'maximum': 1}]}
        """
        names, space = self._names(), self.action_space
        if names is not None and isinstance(space, gs.Discrete):
            start = int(space.start)
            numbers = {"type": "integer", "minimum": start, "maximum": start + len(names) - 1}
            return {"anyOf": [{"type": "string", "enum": list(names)}, numbers]}
        return spaces.to_json_schema(self.action_space)

    # -- helpers for subclasses -----------------------------------------------------------

    def _names(self) -> list[str] | None:
        """Names of the ``Discrete`` actions, or ``None``."""
        return self.action_names if isinstance(self.action_space, gs.Discrete) else None

    def _context(self, obs: Any, info: Mapping[str, Any] | None) -> tuple[Any, Mapping[str, Any] | None]:
        """The position a call refers to: its arguments, else the last rendered one."""
        return (self._obs if obs is None else obs), (self._info if info is None else info)

    def _legal_values(self, obs: Any, info: Mapping[str, Any] | None) -> list[int] | None:
        """The legal actions of a ``Discrete`` space by the env's mask, else ``None``."""
        space = self.action_space
        mask = action_mask(obs, info)
        if mask is None or not isinstance(space, gs.Discrete) or mask.shape != (int(space.n),):
            return None
        return [int(space.start) + int(i) for i in np.flatnonzero(mask)]


def act_tool_text(view: Any) -> tuple[str, dict[str, Any]]:
    """The ``act`` tool of a text view, as every route shows it (the server's MCP tool, an
    ``act`` made on the client): its description (the view's task, the actions, what the
    reply brings; the task's line breaks kept, Taxi's map is one) and the JSON Schema of
    its ``action`` argument (:meth:`TextView.action_json_schema`, described by
    :meth:`TextView.describe_actions`).

        >>> from gymnasium import spaces
        >>> view = TextView(spaces.Discrete(2), spaces.Discrete(2), task="Walk.\\nTwo cells.",
        ...                 action_names=["left", "right"])
        >>> description, argument = act_tool_text(view)
        >>> print(description)
        Walk.
        Two cells.
        Take one action in the environment. Actions: left, right (or their numbers 0 to 1).
        Returns the new observation as text, the reward, and whether the episode is over.
        >>> argument["description"]
        'The action: left, right (or their numbers 0 to 1)'
    """
    actions = view.describe_actions()
    description = "\n".join(
        part for part in (
            getattr(view, "task", None),
            f"Take one action in the environment. Actions: {actions}.",
            "Returns the new observation as text, the reward, and whether the episode is over.",
        ) if part
    )
    return description, {**view.action_json_schema(), "description": f"The action: {actions}"}


def reward_text(reward: float) -> str:
    """How a tool's result states the reward of the step it played, on every route (the
    server's ``act``, an ``act`` made on the client).

        >>> reward_text(-0.5), reward_text(1 / 3)
        ('Reward: -0.5. ', 'Reward: 0.3333. ')
    """
    return f"Reward: {reward:.4g}. "


def episode_status(terminated: bool, truncated: bool) -> str:
    """How a tool's result ends, on every route: where the episode stands.

        >>> episode_status(False, False), episode_status(True, False), episode_status(False, True)
        ('The episode goes on.', 'The episode is over (terminated).', 'The episode is over (truncated: out of time).')
    """
    if terminated:
        return "The episode is over (terminated)."
    if truncated:
        return "The episode is over (truncated: out of time)."
    return "The episode goes on."


def _check_names(names: Sequence[str], space: gs.Space) -> None:
    if isinstance(space, gs.Discrete):
        n, what = int(space.n), "actions"
    elif isinstance(space, gs.Box) and len(space.shape) == 1:
        n, what = space.shape[0], "components of the action"
    else:
        raise ValueError(f"action names name a Discrete space's actions or a 1-D Box's components, not {space}")
    if len(names) != n:
        raise ValueError(f"{len(names)} action names for {n} {what}: give one name each")
    lowered = [name.lower() for name in names]
    if len(set(lowered)) != len(lowered):
        raise ValueError(f"action names must differ in more than case: {list(names)}")


class ServedTextView:
    """A view of a served env that reads observations as its server wrote them.

    A client builds its view of a :class:`~openenv_gym.RemoteEnv` from the spaces and
    the env's id: FrozenLake's position, but not its map, which lives in the env. The
    server's own view has the env; a ``RemoteEnv(url, text=True)`` receives its text
    with every observation (``served_text``). This view shows that text for the
    observation it came with, and the client's ``view`` for any other, and leaves
    everything else to ``view`` (actions, their names and legality, :meth:`describe`).
    """

    def __init__(self, view: Any, served_text: Callable[[Any], str | None]) -> None:
        self.view = view
        self._served_text = served_text

    def obs_to_text(self, obs: Any, info: Mapping[str, Any] | None = None) -> str:
        own = self.view.obs_to_text(obs, info)  # the position later calls refer to, as ever
        served = self._served_text(obs)
        return own if served is None else served

    def __getattr__(self, name: str) -> Any:
        return getattr(self.view, name)
