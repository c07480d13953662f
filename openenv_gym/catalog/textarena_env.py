"""Built-in TextArena server env: OpenEnv's ``textarena_env``, on the ``textarena`` engine.

One TextArena game per session (``env_id``; upstream's default ``"Wordle-v0"``),
played in text: the action ``message`` is what the player to move says
(``"[7]"`` in GuessTheNumber-v0). The observation is what that player sees, as
upstream frames it: ``messages`` (the engine's messages, each run of one sender
and category merged into one; textarena's default LLM wrapper renders the whole
history as one message of sender -1), ``prompt`` (the game's instructions right
after a reset, the env id after that), ``current_player_id``,
``legal_players``, ``info`` (the engine's step info) and ``metadata``
``{"env_id", "turn", "raw_messages"}``. ``reward`` is the engine's reward for
the player to move (0.0 until the game assigns one), ``done`` the engine's end
of game; Wordle-v0 also reports upstream's ``reward_signals``
(``wordle.greens``, ``wordle.yellows``, ``wordle.repetitions``,
``wordle.correct``) in ``info`` and ``metadata``. One client plays every seat of
a multi-player game in turn; a step before any reset plays the game the
constructor set up, as upstream.

    >>> env = TextArenaEnvironment("GuessTheNumber-v0")
    >>> obs = env.reset(seed=0)
    >>> obs.fields["prompt"].splitlines()[0]
    '[GAME] You are Player 0. You are playing Guess The Number.'
    >>> obs = env.step({"message": "[10]"})
    >>> obs.fields["messages"][0]["content"].splitlines()[-1], obs.reward, obs.done
    ('[GAME] The target number is higher.', 0.0, False)

Configuration, as upstream's server reads it from its environment, each keyword
taking precedence over its variable: ``env_id`` (``$TEXTARENA_ENV_ID``),
``num_players`` (``$TEXTARENA_NUM_PLAYERS``, default 1), ``max_turns``
(``$TEXTARENA_MAX_TURNS``) and the game's own keyword arguments
(``$TEXTARENA_KW_<NAME>``, e.g. ``TEXTARENA_KW_MAX_NUMBER=50``), so that
``create_app(TextArenaEnvironment, env_kwargs={"env_id": "GuessTheNumber-v0",
"max_number": 50})`` configures it.

Differences from upstream, on purpose (the frames keep upstream's shape):

- ``reset(seed=...)`` makes the episode reproducible (upstream ignores the
  seed). textarena's games draw from Python's global ``random`` (a few from
  numpy's): each env keeps its own states of both generators and swaps them in
  only for the length of each engine call, under one process-wide lock, so
  sessions neither disturb each other nor the rest of the process (only a
  thread drawing from ``random`` during an engine call would draw from that
  env's stream; and a game that blocks in a call, as the games judged over
  OpenRouter can, holds up the engine calls of other sessions). Without a
  seed the env's stream goes on, as in Gymnasium.
- It never downloads. A game that needs NLTK data (Wordle-v0, Hangman-v0, ...)
  raises a :class:`LookupError` at construction naming what is missing and how
  to install it (upstream calls ``nltk.download``, which goes to the network).
- ``max_turns`` is enforced: passed to a game that takes it, else the episode
  ends once the engine's turn counter reaches it (upstream only reports it in
  the state).
- ``$TEXTARENA_KW_*`` values are converted to the type of the game's parameter
  (upstream passes strings, which the games then mishandle); an unknown game,
  an unknown game keyword or a game the engine cannot load is a clear error at
  construction.
- The state's ``raw_state`` after a reset holds no ``reward_signals`` of the
  episode before.
"""

from __future__ import annotations

import contextlib
import difflib
import importlib
import inspect
import itertools
import json
import os
import random
import re
import sys
import threading
import uuid
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping
from enum import Enum
from typing import Any

import numpy as np

from .._extras import missing_extra

try:
    import textarena
    from textarena.envs.registration import ENV_REGISTRY
except ImportError as exc:  # pragma: no cover - depends on the install
    raise missing_extra(exc, "the built-in textarena server", "textarena") from exc

from ..fields import BASE_STATE_DESCRIPTION, FieldsEnv, FieldsObservation, model_schema

__all__ = ["TextArenaEnvironment"]

# The environment variables upstream's ``server/app.py`` reads, and its default game.
ENV_ID_VAR = "TEXTARENA_ENV_ID"
NUM_PLAYERS_VAR = "TEXTARENA_NUM_PLAYERS"
MAX_TURNS_VAR = "TEXTARENA_MAX_TURNS"
GAME_KWARG_PREFIX = "TEXTARENA_KW_"
DEFAULT_ENV_ID = "Wordle-v0"

_MESSAGE_SCHEMA = {
    "description": "Single message observed by a player.",
    "properties": {
        "sender_id": {"title": "Sender Id", "type": "integer"},
        "content": {"title": "Content", "type": "string"},
        "category": {"title": "Category", "type": "string"},
    },
    "required": ["sender_id", "content", "category"],
    "title": "TextArenaMessage",
    "type": "object",
}

#: Serialises every engine call of every env in the process: while one runs, the
#: global generators hold that env's states (and ``nltk.download`` is offline).
_ENGINE = threading.RLock()


class TextArenaEnvironment(FieldsEnv):
    """Any TextArena game, as OpenEnv's textarena_env serves it."""

    name = "textarena_env"
    description = "TextArena games (GuessTheNumber, Mastermind, Wordle, ...) played in text messages"
    reset_before_step = False  # upstream resets the game at construction
    action_schema = model_schema(
        "TextArenaAction",
        {"message": {"type": "string"}},
        kind="action",
        required=["message"],
        description="Action issued by the agent for TextArena games.",
    )
    observation_schema = model_schema(
        "TextArenaObservation",
        {
            "prompt": {"type": "string"},
            "messages": {"items": {"$ref": "#/$defs/TextArenaMessage"}, "type": "array"},
            "current_player_id": {"default": 0, "type": "integer"},
            "legal_players": {"items": {"type": "integer"}, "type": "array"},
            "info": {"additionalProperties": True, "type": "object"},
        },
        kind="observation",
        required=["prompt"],
        description="Observation returned from any TextArena game.",
        defs={"TextArenaMessage": _MESSAGE_SCHEMA},
    )
    # Upstream's app gives create_app no state class: /schema shows OpenEnv's base State.
    state_schema = model_schema("State", {}, kind="state", description=BASE_STATE_DESCRIPTION)

    def __init__(
        self,
        env_id: str | None = None,
        *,
        num_players: int | None = None,
        max_turns: int | None = None,
        **game_kwargs: Any,
    ) -> None:
        self.env_id = env_id or os.environ.get(ENV_ID_VAR) or DEFAULT_ENV_ID
        self.num_players = _count(num_players, NUM_PLAYERS_VAR, default=1)
        self.max_turns = _count(max_turns, MAX_TURNS_VAR, default=None)
        self._streams = _Streams(None)
        with self._streams.active(), _offline_nltk(self.env_id):
            self._game, self._native_turn_limit = _make_game(
                self.env_id, game_kwargs, _environ_kwargs(), self.max_turns
            )
            try:
                self._game.reset(num_players=self.num_players)
            except AssertionError as exc:  # textarena checks the player count with assert
                raise ValueError(
                    f"textarena's {self.env_id} refused num_players={self.num_players} ({exc}): pass the "
                    f"game's number of players as num_players (or ${NUM_PLAYERS_VAR})"
                ) from exc
        self._signals = _WordleSignals() if self.env_id == "Wordle-v0" else None
        self._last_signals: dict[str, float] = {}
        self.episode_id: str | None = None
        self.step_count = self.turn = 0
        self.last_reward = 0.0
        self.last_info: dict[str, Any] = {}
        self.raw_state: dict[str, Any] = {}

    def reset(self, *, seed: int | None = None, episode_id: str | None = None) -> FieldsObservation:
        """A new game; ``seed`` makes it reproducible, no seed goes on with the env's stream."""
        if seed is not None:
            self._streams = _Streams(seed)
        self._forget_history()
        with self._streams.active():
            self._game.reset(num_players=self.num_players, seed=seed)
        if self._signals is not None:
            self._signals.reset()
        self._last_signals = {}
        self.episode_id = episode_id if episode_id is not None else str(uuid.uuid4())
        self.step_count = self.turn = 0
        self.last_reward = 0.0
        self.last_info = {}
        self.raw_state = self._snapshot()
        return self._observe(0.0, False)

    def step(self, action: dict[str, Any]) -> FieldsObservation:
        """Say ``action["message"]`` as the player to move."""
        message = action["message"]
        with self._streams.active():
            done, info = self._game.step(message)
        state = self._game.state
        self.step_count += 1
        self.turn = getattr(state, "turn", self.turn + 1)
        reward = self._reward()
        done = bool(done) or self._turn_limit_reached()
        observation = self._observe(reward, done)
        last_info = _plain(info or {})
        signals = self._signals(message, observation.fields["messages"], reward) if self._signals else {}
        if signals:
            observation.fields["info"].setdefault("reward_signals", {}).update(signals)
            observation.metadata.setdefault("reward_signals", {}).update(signals)
            last_info = {**last_info, "reward_signals": signals}
        self._last_signals = signals
        self.last_reward = reward
        self.last_info = last_info
        self.raw_state = self._snapshot()
        return observation

    def state(self) -> dict[str, Any]:
        """Upstream's ``TextArenaState``: the episode, the configuration, the engine's state."""
        return {
            "episode_id": self.episode_id,
            "step_count": self.step_count,
            "env_id": self.env_id,
            "num_players": self.num_players,
            "max_turns": self.max_turns,
            "turn": self.turn,
            "last_reward": self.last_reward,
            "last_info": self.last_info,
            "raw_state": self.raw_state,
        }

    # -- the engine, read as upstream reads it ------------------------------------

    def _forget_history(self) -> None:
        """Empty the history textarena's observation wrappers keep across resets."""
        layer = self._game
        while True:
            if "full_observations" in vars(layer):
                layer.full_observations = {}
            if not isinstance(layer, textarena.Wrapper):
                return
            layer = layer.env

    def _observe(self, reward: float, done: bool) -> FieldsObservation:
        player_id, seen = self._game.get_observation()
        state = self._game.state
        messages = _messages(seen)
        prompts = [m["content"] for m in messages if m["category"] == "PROMPT"]
        if not prompts:  # the rendered history holds the prompt only right after a reset
            prompts = [messages[0]["content"]] if getattr(state, "turn", 0) == 0 and messages else [self.env_id]
        roles = getattr(state, "role_mapping", None) or {}
        return FieldsObservation(
            {
                "prompt": "\n".join(prompts).strip(),
                "messages": messages,
                "current_player_id": player_id,
                "legal_players": sorted(pid for pid in roles if isinstance(pid, int) and pid >= 0),
                "info": _plain(getattr(state, "step_info", None) or {}),
            },
            reward=reward,
            done=done,
            metadata={
                "env_id": self.env_id,
                "turn": getattr(state, "turn", 0),
                "raw_messages": [dict(m) for m in messages],
            },
        )

    def _reward(self) -> float:
        """The engine's reward for the player to move, else player 0's, else 0.0."""
        state = self._game.state
        rewards = getattr(state, "rewards", None)
        if isinstance(rewards, dict):
            for player in (getattr(state, "current_player_id", 0), 0):
                if player in rewards:
                    return float(rewards[player])
        return 0.0

    def _turn_limit_reached(self) -> bool:
        return self.max_turns is not None and not self._native_turn_limit and self.turn >= self.max_turns

    def _snapshot(self) -> dict[str, Any]:
        state = self._game.state
        snapshot = {
            "turn": getattr(state, "turn", 0),
            "game_state": _plain(getattr(state, "game_state", {})),
            "logs": _plain(list(getattr(state, "logs", []))),
            "rewards": _plain(getattr(state, "rewards", None)),
            "done": getattr(state, "done", False),
            "role_mapping": _plain(getattr(state, "role_mapping", {})),
            "game_info": _plain(getattr(state, "game_info", {})),
            "step_info": _plain(getattr(state, "step_info", {})),
        }
        if self._last_signals:
            snapshot["reward_signals"] = dict(self._last_signals)
        return snapshot


# -- configuration ----------------------------------------------------------------


def _count(value: int | None, variable: str, *, default: int | None) -> int | None:
    """A positive count: ``value``, else ``$variable``, else ``default``."""
    text = os.environ.get(variable) if value is None else None
    if text is not None:
        try:
            value = int(text)
        except ValueError:
            raise ValueError(f"${variable} must be an integer, not {text!r}") from None
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        name = variable.removeprefix("TEXTARENA_").lower()
        raise ValueError(f"{name} must be a positive integer, not {value!r}")
    return value


def _environ_kwargs() -> dict[str, str]:
    """The game keywords of ``$TEXTARENA_KW_<NAME>`` (``name`` in lower case), as strings."""
    return {
        key[len(GAME_KWARG_PREFIX):].lower(): value
        for key, value in os.environ.items()
        if key.startswith(GAME_KWARG_PREFIX)
    }


def _make_game(
    env_id: str, kwargs: Mapping[str, Any], environ: Mapping[str, str], max_turns: int | None
) -> tuple[Any, bool]:
    """The wrapped textarena game, and whether it enforces ``max_turns`` itself.

    ``kwargs`` are the game keywords given to the constructor, ``environ`` those of
    ``$TEXTARENA_KW_*`` (strings, converted here to the type of the game's parameter).
    """
    spec = ENV_REGISTRY.get(env_id)
    if spec is None:
        close = difflib.get_close_matches(env_id, list(ENV_REGISTRY), n=3)
        hint = f"; did you mean {', '.join(close)}?" if close else "; see textarena.envs.registration.ENV_REGISTRY"
        raise ValueError(f"textarena has no game {env_id!r}{hint}")
    parameters = inspect.signature(_game_class(env_id, spec.entry_point)).parameters
    named = [name for name, p in parameters.items() if p.kind is not inspect.Parameter.VAR_KEYWORD]
    if len(named) == len(parameters):  # no **kwargs: every keyword must be the game's
        unknown = [
            repr(key) if key in kwargs else f"{key!r} (from ${GAME_KWARG_PREFIX}{key.upper()})"
            for key in sorted({**environ, **kwargs})
            if key not in parameters
        ]
        if unknown:
            raise ValueError(
                f"textarena's {env_id} takes no keyword {', '.join(unknown)}; it takes "
                f"{', '.join(named) or 'none'} (besides env_id, num_players and max_turns)"
            )
    game_kwargs = {
        key: _converted(env_id, key, text, spec.kwargs.get(key, _default(parameters.get(key))))
        for key, text in environ.items()
    }
    game_kwargs.update(kwargs)
    native = max_turns is not None and "max_turns" in parameters and "max_turns" not in game_kwargs
    if native:
        game_kwargs["max_turns"] = max_turns
    return textarena.make(env_id, **game_kwargs), native


def _game_class(env_id: str, entry_point: Any) -> Any:
    """The game class behind ``entry_point`` (``"module:Class"`` or the class itself)."""
    if not isinstance(entry_point, str):
        return entry_point
    module_name, _, class_name = entry_point.partition(":")
    try:
        module = importlib.import_module(module_name)
    except SyntaxError as exc:
        raise ImportError(
            f"textarena's {env_id} does not load on Python {sys.version_info.major}."
            f"{sys.version_info.minor} ({exc.msg}, {exc.filename} line {exc.lineno}): use another game, "
            f"or a Python or textarena version it supports"
        ) from exc
    except ModuleNotFoundError as exc:
        raise ImportError(
            f"textarena's {env_id} needs the module {exc.name!r}, which is not installed", name=exc.name
        ) from exc
    return getattr(module, class_name)


def _default(parameter: inspect.Parameter | None) -> Any:
    if parameter is None or parameter.default is inspect.Parameter.empty:
        return None
    return parameter.default


_TRUE, _FALSE = frozenset({"1", "true", "yes", "on"}), frozenset({"0", "false", "no", "off"})
_KINDS = {bool: "true or false", int: "an integer", float: "a number"}


def _converted(env_id: str, key: str, text: str, example: Any) -> Any:
    """``$TEXTARENA_KW_<KEY>``'s text as a value of ``example``'s type (text if it has none)."""
    try:
        if isinstance(example, bool):
            if text.strip().lower() in _TRUE | _FALSE:
                return text.strip().lower() in _TRUE
            raise ValueError(text)
        if isinstance(example, int):
            return int(text)
        if isinstance(example, float):
            return float(text)
        if isinstance(example, (list, tuple, dict)):
            value = json.loads(text)
            if not isinstance(value, (list, dict)):
                raise ValueError(text)
            return value
    except ValueError:
        kind = _KINDS.get(type(example), "a JSON list or object")
        raise ValueError(
            f"${GAME_KWARG_PREFIX}{key.upper()}={text!r}: textarena's {env_id} takes {kind} as {key} "
            f"(its default is {example!r})"
        ) from None
    return text


# -- the engine's randomness and data ---------------------------------------------


class _Streams:
    """One env's states of Python's and numpy's global generators.

    textarena's games draw from ``random`` (and a few from ``numpy.random``), the
    process-wide generators: :meth:`active` puts this env's states in them for the
    length of one engine call and puts the process's back after, so neither another
    session nor the rest of the process sees the game's draws.
    """

    def __init__(self, seed: int | None) -> None:
        python = random.Random(seed)
        self.python = python.getstate()
        self.numpy = np.random.RandomState(None if seed is None else python.getrandbits(32)).get_state()

    @contextlib.contextmanager
    def active(self) -> Iterator[None]:
        with _ENGINE:
            outside = random.getstate(), np.random.get_state()
            random.setstate(self.python)
            np.random.set_state(self.numpy)
            try:
                yield
            finally:
                self.python, self.numpy = random.getstate(), np.random.get_state()
                random.setstate(outside[0])
                np.random.set_state(outside[1])


#: Where NLTK keeps each kind of data package (``words`` is ``corpora/words``).
_NLTK_FOLDERS = (
    "corpora", "taggers", "tokenizers", "chunkers", "grammars", "misc", "models", "sentiment", "stemmers", "help",
)


@contextlib.contextmanager
def _offline_nltk(env_id: str) -> Iterator[None]:
    """``nltk.download`` without the network while a game loads: it answers from the data
    installed here, and a game that needs data not installed raises :class:`LookupError`
    naming it (textarena's word games call ``nltk.download`` when they import)."""
    with _ENGINE:
        try:
            import nltk
        except ImportError:  # games that need it fail to import, with their own error
            yield
            return
        missing: list[str] = []

        def download(info_or_id: Any = None, *args: Any, **kwargs: Any) -> bool:
            ids = [info_or_id] if isinstance(info_or_id, str) else list(info_or_id or ["all"])
            absent = [str(i) for i in ids if not _nltk_has(nltk, str(i))]
            missing.extend(i for i in absent if i not in missing)
            return not absent

        original = nltk.download
        nltk.download = download
        try:
            yield
        except Exception as exc:
            if not missing and not isinstance(exc, LookupError):
                raise
            missing.extend(i for i in re.findall(r"nltk\.download\('([^']+)'\)", str(exc)) if i not in missing)
            raise LookupError(_nltk_advice(env_id, missing or ["(see the NLTK error above)"], nltk)) from exc
        finally:
            nltk.download = original


def _nltk_has(nltk: Any, package: str) -> bool:
    for folder in _NLTK_FOLDERS:
        try:
            nltk.data.find(f"{folder}/{package}")
        except LookupError:
            continue
        return True
    return False


def _nltk_advice(env_id: str, packages: list[str], nltk: Any) -> str:
    return (
        f"textarena's {env_id} needs the NLTK data {', '.join(packages)}, not installed here "
        f"(NLTK looks in {os.pathsep.join(nltk.data.path)}); this server never downloads. On a machine "
        f"with network run `python -m nltk.downloader -d nltk_data {' '.join(packages)}`, copy the nltk_data "
        f"directory here and set $NLTK_DATA to it; or serve a game without word lists, such as "
        f"GuessTheNumber-v0, Mastermind-v0 or TowerOfHanoi-v0"
    )


# -- observations -----------------------------------------------------------------


def _messages(seen: Any) -> list[dict[str, Any]]:
    """The engine's observation as upstream's ``TextArenaMessage`` list: each run of
    entries with one sender and category becomes one message (a rendered string is
    one message of sender -1)."""
    if seen is None:
        return []
    if isinstance(seen, str):
        return [{"sender_id": -1, "content": seen, "category": "MESSAGE"}] if seen else []
    entries = [_entry(item) for item in seen]
    return [
        {"sender_id": sender, "content": "".join(content for _, _, content in run), "category": category}
        for (sender, category), run in itertools.groupby(entries, key=lambda entry: entry[:2])
    ]


def _entry(item: Any) -> tuple[int, str, str]:
    """``(sender_id, category, content)`` of one entry of an observation."""
    sender: Any = -1
    category: Any = "MESSAGE"
    if isinstance(item, tuple) and len(item) in (2, 3):
        sender, content = item[0], item[1]
        if len(item) == 3:
            category = item[2]
    else:
        content = item
    sender_id = int(sender) if isinstance(sender, (int, float)) else -1
    return sender_id, getattr(category, "name", str(category)), str(content)


def _plain(value: Any) -> Any:
    """``value`` with the containers and enums pydantic would write as JSON made plain."""
    if isinstance(value, Enum):
        return _plain(value.value)
    if isinstance(value, Mapping):
        return {key: _plain(item) for key, item in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        return [_plain(item) for item in value]
    return value


# -- Wordle's auxiliary rewards ---------------------------------------------------

_WORDLE_GUESS = re.compile(r"\[[A-Za-z]{5}\]")
_FEEDBACK_MARKS = frozenset("GYX")


class _WordleSignals:
    """The ``reward_signals`` upstream's server adds to Wordle-v0 steps (its GRPO
    heuristics): the share of green and yellow letters of the latest feedback,
    ``1 - (earlier times this guess was made)``, and the step's reward."""

    def __init__(self) -> None:
        self.guesses: Counter[str] = Counter()

    def reset(self) -> None:
        self.guesses.clear()

    def __call__(self, message: str, messages: Iterable[Mapping[str, Any]], reward: float) -> dict[str, float]:
        guess = _wordle_guess(message)
        earlier = self.guesses[guess] if guess else 0
        greens, yellows = _feedback_counts(_latest_feedback(messages))
        if guess:
            self.guesses[guess] += 1
        return {
            "wordle.greens": greens / 5.0,
            "wordle.yellows": yellows / 5.0,
            "wordle.repetitions": 1.0 - earlier,
            "wordle.correct": float(reward or 0.0),
        }


def _wordle_guess(text: str) -> str:
    """The guess in ``text`` (``"[crane]"``): the first bracketed five letters, else its
    first five letters; ``""`` when it has fewer."""
    match = _WORDLE_GUESS.search(text)
    letters = re.sub(r"[^a-z]", "", text.lower())
    guess = match.group(0).lower() if match else f"[{letters[:5]}]" if len(letters) >= 5 else ""
    return "" if guess == "[dunno]" else guess  # upstream's placeholder for "no guess"


def _latest_feedback(messages: Iterable[Mapping[str, Any]]) -> str:
    """What follows ``Feedback:`` in the latest message that has it."""
    for message in reversed(list(messages)):
        content = str(message["content"]).strip()
        if "Feedback:" in content:
            return content.split("Feedback:", 1)[1].strip()
    return ""


def _feedback_counts(feedback: str) -> tuple[int, int]:
    """Green and yellow marks of the last all-``G``/``Y``/``X`` line of ``feedback``."""
    lines = [line.strip() for line in feedback.split("\n") if line.strip()]
    if len(lines) < 2:
        return 0, 0
    for line in reversed(lines):
        marks = line.replace(" ", "")
        if marks and set(marks) <= _FEEDBACK_MARKS:
            return marks.count("G"), marks.count("Y")
    return 0, 0
