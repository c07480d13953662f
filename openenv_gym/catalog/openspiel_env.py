"""Built-in OpenSpiel server env: OpenEnv's ``openspiel_env``, on DeepMind's ``open_spiel``.

One OpenSpiel game per session (``game_name``; upstream's default ``"catch"``),
played by integer action ids. The agent controls player ``agent_player``; the
other players move by ``opponent_policy`` (``"random"``, or ``"first"`` /
``"last"`` / ``"middle"`` of their legal actions) until it is the agent's turn
again, and chance events (the deal, the falling ball, the new 2048 tile) are
drawn from their probabilities in between. The observation is the agent's
view: ``info_state`` (the game's information state tensor, else its
observation tensor), ``legal_actions``, ``game_phase`` (``"initial"`` before
any move of the episode, ``"terminal"`` at the end, ``"playing"`` otherwise),
``current_player_id`` (OpenSpiel's: -4 once the game is over, -2 at a
simultaneous move) and ``opponent_last_action``. ``reward`` is the engine's
reward for the agent at the state it sees (``null`` before any move), ``done``
the end of the game. The games upstream lists as supported are
:data:`SUPPORTED_GAMES`; any sequential or simultaneous-move game of
``pyspiel.registered_names()`` loads.

    >>> env = OpenSpielEnvironment("tic_tac_toe", opponent_policy="first")
    >>> obs = env.reset(seed=0)
    >>> obs.fields["legal_actions"], obs.fields["game_phase"], obs.reward
    ([0, 1, 2, 3, 4, 5, 6, 7, 8], 'initial', None)
    >>> obs = env.step({"action_id": 4})           # X takes the centre, O the first free cell
    >>> obs.fields["opponent_last_action"], obs.fields["legal_actions"], obs.reward
    (0, [1, 2, 3, 5, 6, 7, 8], 0.0)

As upstream: a ``step`` before any reset, or after the game ended, ignores its
action and starts a new game (same ``episode_id``, ``step_count`` goes on);
``step_count`` counts the agent's and the opponents' moves; the action's
``game_name`` and ``game_params`` are checked for type and otherwise ignored:
the game is the server's (upstream's own client sends ``game_name="catch"``
whatever the server plays). The state is upstream's ``OpenSpielState``
(``game_name``, ``agent_player``, ``opponent_policy``, ``game_params``,
``num_players``) under the base ``State`` schema, as upstream's app publishes
it.

Configuration, as upstream's server reads it from its environment, each
keyword taking precedence over its variable: ``game_name``
(``$OPENSPIEL_GAME``), ``agent_player`` (``$OPENSPIEL_AGENT_PLAYER``),
``opponent_policy`` (``$OPENSPIEL_OPPONENT_POLICY``); ``game_params`` (the
game's parameters, e.g. ``{"rows": 5}`` for catch) is a keyword only, as
upstream. So ``create_app(OpenSpielEnvironment, env_kwargs={"game_name":
"kuhn_poker"})`` serves Kuhn poker.

Differences from upstream, on purpose (the frames keep upstream's shape):

- ``reset(seed=...)`` seeds every random draw, the chance events and the
  random opponent alike, so a seeded episode replays exactly; without a seed
  the env's stream goes on, as in Gymnasium (upstream ignores the seed and
  draws from unseeded and process-global generators). ``reset(episode_id=...)``
  is the state's ``episode_id`` (upstream ignores it too).
- An ``action_id`` that is not one of ``legal_actions`` is an
  ``EXECUTION_ERROR`` naming the legal actions, and the game stays as it was.
  Upstream hands any id to the engine, which does not check it: catch moves
  the paddle right for 99, Kuhn poker bets, and tic-tac-toe and 2048 read and
  write past their boards, which for a large id kills the server process.
- Simultaneous-move games are played (the opponents choose at the same
  time as the agent, by the policy); upstream cannot reset them.
- ``opponent_last_action`` is ``null`` at the start of every game, also one a
  step starts after the end of the last (upstream keeps the last game's).
- The configuration is checked at construction: an unknown opponent policy or
  an ``agent_player`` that is not a seat of the game is a clear error, also for
  one-player games (upstream checks the policy only when there are opponents,
  and takes a negative seat).
"""

from __future__ import annotations

import difflib
import os
import random
import uuid
from collections.abc import Callable, Mapping
from typing import Any

from .._extras import missing_extra

try:
    import pyspiel
except ImportError as exc:  # pragma: no cover - depends on the install
    raise missing_extra(exc, "the built-in OpenSpiel server", "openspiel") from exc

from ..fields import BASE_STATE_DESCRIPTION, FieldsEnv, FieldsObservation, model_schema

__all__ = ["OpenSpielEnvironment", "OPPONENT_POLICIES", "SUPPORTED_GAMES"]

#: The games upstream's README lists as supported: four for one player, two against an opponent.
SUPPORTED_GAMES = ("catch", "cliff_walking", "2048", "blackjack", "tic_tac_toe", "kuhn_poker")

#: How the other players choose among their legal actions: uniformly at random
#: (seeded by ``reset(seed=...)``), or always the first, last or middle one.
OPPONENT_POLICIES = ("random", "first", "last", "middle")

#: The environment variables upstream's ``server/app.py`` reads, and their defaults.
GAME_VAR, AGENT_PLAYER_VAR, OPPONENT_POLICY_VAR = (
    "OPENSPIEL_GAME", "OPENSPIEL_AGENT_PLAYER", "OPENSPIEL_OPPONENT_POLICY",
)
DEFAULT_GAME, DEFAULT_AGENT_PLAYER, DEFAULT_OPPONENT_POLICY = "catch", 0, "random"

_OBSERVATION_DESCRIPTION = (
    "Observation from OpenSpiel environment.\n\nThis represents what the agent sees after taking an "
    "action.\nFor single-player games, this is straightforward.\nFor multi-player games, this is from "
    "the perspective of the agent player.\n\nAttributes:\n    info_state: Information state tensor "
    "(list of floats) for the agent.\n               This contains all information available to the "
    "agent.\n    legal_actions: List of legal action IDs the agent can take.\n    game_phase: String "
    "describing the current phase (e.g., \"playing\", \"terminal\").\n    current_player_id: ID of the "
    "current player (-1 for simultaneous, player ID otherwise).\n    opponent_last_action: Last action "
    "taken by opponent (if available, None otherwise)."
)


class OpenSpielEnvironment(FieldsEnv):
    """An OpenSpiel game against fixed-policy opponents, as OpenEnv's openspiel_env."""

    name = "openspiel_env"
    description = "OpenSpiel games (catch, tic_tac_toe, kuhn_poker, ...): action ids against policy opponents"
    reset_before_step = False  # upstream's step before any reset starts a game
    action_schema = model_schema(
        "OpenSpielAction",
        {
            "action_id": {"type": "integer"},
            "game_name": {"default": "catch", "type": "string"},
            "game_params": {"additionalProperties": True, "type": "object"},
        },
        kind="action",
        required=["action_id"],
        description="Action for OpenSpiel environments.\n\nAttributes:\n    action_id: The integer action "
        "ID to take (from legal_actions).\n    game_name: Name of the OpenSpiel game (e.g., \"catch\", "
        "\"tic_tac_toe\").\n    game_params: Optional game-specific parameters (e.g., {\"rows\": 8, "
        "\"columns\": 6}).",
    )
    observation_schema = model_schema(
        "OpenSpielObservation",
        {
            "info_state": {"items": {"type": "number"}, "type": "array"},
            "legal_actions": {"items": {"type": "integer"}, "type": "array"},
            "game_phase": {"default": "playing", "type": "string"},
            "current_player_id": {"default": 0, "type": "integer"},
            "opponent_last_action": {"anyOf": [{"type": "integer"}, {"type": "null"}], "default": None},
        },
        kind="observation",
        required=["info_state", "legal_actions"],
        description=_OBSERVATION_DESCRIPTION,
    )
    state_schema = model_schema("State", {}, kind="state", description=BASE_STATE_DESCRIPTION)

    def __init__(
        self,
        game_name: str | None = None,
        agent_player: int | None = None,
        opponent_policy: str | None = None,
        game_params: Mapping[str, Any] | None = None,
    ) -> None:
        self.game_name = game_name or os.environ.get(GAME_VAR) or DEFAULT_GAME
        self.game_params = dict(game_params or {})
        self.game = _load_game(self.game_name, self.game_params)
        self.num_players = self.game.num_players()
        self.agent_player = _seat(agent_player, self.num_players)
        self.opponent_policy = opponent_policy or os.environ.get(OPPONENT_POLICY_VAR) or DEFAULT_OPPONENT_POLICY
        if self.opponent_policy not in OPPONENT_POLICIES:
            raise ValueError(
                f"opponent_policy must be one of {', '.join(OPPONENT_POLICIES)}, not {self.opponent_policy!r}"
            )
        self._tensor = _view(self.game)
        self.rng = random.Random()
        self.position: Any = None  # the pyspiel state of the game in play; None before the first
        self.fresh = True  # no move made since the game began
        self.episode_id: str | None = None
        self.step_count = 0
        self.opponent_last_action: int | None = None

    def reset(self, *, seed: int | None = None, episode_id: str | None = None) -> FieldsObservation:
        """A new game; the opponents move first if the agent is not the first to play."""
        if seed is not None:  # as Gymnasium: without a seed, the seeded stream goes on
            self.rng = random.Random(seed)
        self.episode_id = episode_id or str(uuid.uuid4())
        self.step_count = 0
        self._new_game()
        return self._observe()

    def step(self, action: dict[str, Any]) -> FieldsObservation:
        """The agent's move and the opponents' replies; before any game, or after the
        end of one, a new game instead (the action is ignored), as upstream."""
        if self.position is None or self.position.is_terminal():
            self._new_game(counted=True)
            return self._observe()
        action_id = action["action_id"]
        legal = self.position.legal_actions(self.agent_player)
        if action_id not in legal:
            raise ValueError(
                f"action_id {action_id} is not a legal action of {self.game_name} now: choose one of "
                f"observation.legal_actions, {legal}"
            )
        if self.position.is_simultaneous_node():
            joint = [
                action_id if player == self.agent_player else self._opponent_choice(player)
                for player in range(self.num_players)
            ]
            self.position.apply_actions(joint)
            self.opponent_last_action = next(
                joint[player] for player in reversed(range(self.num_players)) if player != self.agent_player
            )
        else:
            self.position.apply_action(action_id)
        self.fresh = False
        self.step_count += 1
        self._chance_events()
        self._opponents_play()
        return self._observe()

    def state(self) -> dict[str, Any]:
        return {
            "episode_id": self.episode_id,
            "step_count": self.step_count,
            "game_name": self.game_name,
            "agent_player": self.agent_player,
            "opponent_policy": self.opponent_policy,
            "game_params": dict(self.game_params),
            "num_players": self.num_players,
        }

    def _new_game(self, *, counted: bool = False) -> None:
        """Start a game and play up to the agent's first decision; ``counted``: the
        step that started it counts, as upstream counts it."""
        self.position = self.game.new_initial_state()
        self.fresh = True
        self.opponent_last_action = None
        if counted:
            self.step_count += 1
        self._chance_events()
        self._opponents_play()

    def _chance_events(self) -> None:
        """Draw chance outcomes, by their probabilities, until a player is to move."""
        position = self.position
        while position.is_chance_node():
            outcomes, probabilities = zip(*position.chance_outcomes())
            position.apply_action(self.rng.choices(outcomes, weights=probabilities)[0])

    def _opponents_play(self) -> None:
        """The other players' turns, up to the agent's turn, a simultaneous move or the end."""
        position = self.position
        while not (
            position.is_terminal()
            or position.is_simultaneous_node()
            or position.current_player() == self.agent_player
        ):
            choice = self._opponent_choice(position.current_player())
            position.apply_action(choice)
            self.opponent_last_action = choice
            self.fresh = False
            self.step_count += 1
            self._chance_events()

    def _opponent_choice(self, player: int) -> int:
        legal = self.position.legal_actions(player)
        if self.opponent_policy == "random":
            return self.rng.choice(legal)
        return legal[{"first": 0, "last": -1, "middle": len(legal) // 2}[self.opponent_policy]]

    def _observe(self) -> FieldsObservation:
        position, agent = self.position, self.agent_player
        done = position.is_terminal()
        phase = "terminal" if done else "initial" if self.fresh else "playing"
        return FieldsObservation(
            {
                "info_state": [float(x) for x in self._tensor(position, agent)],
                "legal_actions": list(position.legal_actions(agent)),
                "game_phase": phase,
                "current_player_id": int(position.current_player()),
                "opponent_last_action": self.opponent_last_action,
            },
            reward=None if self.fresh else float(position.rewards()[agent]),
            done=done,
        )


def _load_game(name: str, params: Mapping[str, Any]) -> Any:
    """The pyspiel game ``name`` with ``params``; a clear error for a game this env cannot serve."""
    known = pyspiel.registered_names()
    short_name = name.partition("(")[0]  # a game string may carry its parameters: "catch(rows=5)"
    if short_name not in known:
        close = difflib.get_close_matches(short_name, known, n=3)
        hint = f"did you mean {' or '.join(map(repr, close))}? " if close else ""
        raise ValueError(f"OpenSpiel has no game {short_name!r}: {hint}pyspiel.registered_names() lists the games")
    try:
        game = pyspiel.load_game(name, dict(params)) if params else pyspiel.load_game(name)
    except pyspiel.SpielError as exc:
        raise ValueError(
            f"OpenSpiel cannot load the game {name!r} with game_params={dict(params)!r}: {exc} "
            f"(pyspiel.load_game({short_name!r}).get_parameters() shows its parameters and their defaults)"
        ) from exc
    dynamics = game.get_type().dynamics
    if dynamics not in (pyspiel.GameType.Dynamics.SEQUENTIAL, pyspiel.GameType.Dynamics.SIMULTANEOUS):
        raise ValueError(
            f"{name!r} is a {dynamics.name.lower().replace('_', '-')} game; the OpenSpiel server plays "
            "sequential and simultaneous-move games"
        )
    return game


def _view(game: Any) -> Callable[[Any, int], list[float]]:
    """What ``info_state`` holds: the information state tensor, else the observation tensor."""
    kind = game.get_type()
    if kind.provides_information_state_tensor:
        return lambda state, player: state.information_state_tensor(player)
    if kind.provides_observation_tensor:
        return lambda state, player: state.observation_tensor(player)
    raise ValueError(
        f"{kind.short_name!r} provides neither an information state tensor nor an observation tensor, "
        "one of which info_state needs"
    )


def _seat(agent_player: int | None, num_players: int) -> int:
    """``agent_player``, else ``$OPENSPIEL_AGENT_PLAYER``, else 0: checked to be a seat of the game."""
    if agent_player is None:
        text = os.environ.get(AGENT_PLAYER_VAR)
        try:
            agent_player = DEFAULT_AGENT_PLAYER if text is None else int(text)
        except ValueError:
            raise ValueError(f"${AGENT_PLAYER_VAR} must be an integer, not {text!r}") from None
    if isinstance(agent_player, bool) or not isinstance(agent_player, int) or not 0 <= agent_player < num_players:
        seats = "0 (a one-player game)" if num_players == 1 else f"0 to {num_players - 1}"
        raise ValueError(f"agent_player must be a player of the game, {seats}, not {agent_player!r}")
    return agent_player
