"""Built-in Chess server env: OpenEnv's ``chess_env``, on python-chess.

Speaks exactly the upstream schema: action ``move`` (UCI); observation
``fen``, ``legal_moves``, ``is_check``, ``result`` (plus ``done`` and
``reward``); state ``episode_id``, ``step_count`` (half-moves, both sides'),
``fen``, ``current_player``, ``move_history``. Rewards are upstream's: +1 when
the agent wins, -1 when it loses, 0 for a draw, and -0.1 for an illegal or
malformed move, which leaves the game as it was. ``reset`` takes an optional
``fen`` start position.

    >>> env = ChessEnvironment(opponent="random")
    >>> obs = env.reset(seed=0)
    >>> obs.fields["fen"]
    'rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1'
    >>> env.step({"move": "e2e5"}).reward      # illegal: the game goes on
    -0.1

Differences from upstream, on purpose: the opponent defaults to ``"random"``
(upstream: ``"moonfish"``, an optional dependency here), and the agent plays
white unless ``agent_color`` says otherwise (upstream alternates by a hash of
the episode id; ``agent_color=None`` does the same here, from the seed).
"""

from __future__ import annotations

import random
import uuid
from typing import Any

from .._extras import missing_extra

try:
    import chess
except ImportError as exc:  # pragma: no cover - depends on the install
    raise missing_extra(exc, "the built-in chess server", "chess") from exc

from ..fields import FieldsEnv, FieldsObservation, model_schema

__all__ = ["ChessEnvironment", "OPPONENTS"]

#: Opponents: ``"random"`` (uniform legal moves), ``"moonfish"`` (the engine
#: upstream uses; needs ``pip install moonfish``), ``None`` (self-play: the
#: agent moves for both sides).
OPPONENTS = ("random", "moonfish", None)


class ChessEnvironment(FieldsEnv):
    """Chess against a configurable opponent, as OpenEnv's chess_env."""

    name = "chess_env"
    description = "Chess on python-chess: UCI moves against a random, moonfish or no opponent"
    action_schema = model_schema(
        "ChessAction",
        {"move": {"type": "string"}},
        kind="action",
        required=["move"],
        description='Action for Chess environment.\n\nAttributes:\n    move: UCI format move string '
        '(e.g., "e2e4", "e7e8q" for promotion).',
    )
    observation_schema = model_schema(
        "ChessObservation",
        {
            "fen": {"default": "", "type": "string"},
            "legal_moves": {"items": {"type": "string"}, "type": "array"},
            "is_check": {"default": False, "type": "boolean"},
            "result": {"anyOf": [{"type": "string"}, {"type": "null"}], "default": None},
        },
        kind="observation",
        description="Observation for Chess environment.\n\nAttributes:\n    fen: Board position in "
        "FEN notation.\n    legal_moves: List of legal moves in UCI format.\n    is_check: Whether "
        "the current player is in check.\n    done: Whether the game is over.\n    reward: Reward "
        "for the last action.\n    result: Game result string if game is over (e.g., \"1-0\", "
        "\"0-1\", \"1/2-1/2\").",
    )
    state_schema = model_schema(
        "ChessState",
        {
            "step_count": {"default": 0, "type": "integer"},
            "fen": {"default": chess.STARTING_FEN, "type": "string"},
            "current_player": {"default": "white", "type": "string"},
            "move_history": {"items": {"type": "string"}, "type": "array"},
        },
        kind="state",
        description="State for Chess environment.\n\nAttributes:\n    episode_id: Unique ID for the "
        "current game.\n    fen: Current board position in FEN notation.\n    current_player: "
        "\"white\" or \"black\".\n    move_history: List of moves played in UCI format.\n    "
        "step_count: Number of half-moves played.",
    )

    def __init__(
        self,
        opponent: str | None = "random",
        opponent_depth: int = 2,
        max_moves: int = 500,
        agent_color: str | None = "white",
    ) -> None:
        if opponent not in OPPONENTS:
            raise ValueError(f"opponent must be one of {OPPONENTS}, not {opponent!r}")
        if agent_color not in ("white", "black", None):
            raise ValueError(f"agent_color must be 'white', 'black' or None, not {agent_color!r}")
        self._search = _moonfish_search() if opponent == "moonfish" else None
        self.opponent = opponent
        self.opponent_depth = opponent_depth
        self.max_moves = max_moves
        self.agent_color_setting = agent_color
        self.board = chess.Board()
        self.agent_color = chess.WHITE
        self.episode_id: str | None = None
        self.step_count = 0
        self.history: list[str] = []
        self.rng = random.Random()

    def reset(
        self, *, seed: int | None = None, episode_id: str | None = None, fen: str | None = None
    ) -> FieldsObservation:
        """A new game from the start position or ``fen``; the opponent opens if it plays white."""
        if seed is not None:  # as Gymnasium: without a seed, the seeded stream goes on
            self.rng = random.Random(seed)
        self.board = chess.Board(fen) if fen else chess.Board()
        self.episode_id = episode_id or str(uuid.uuid4())
        self.step_count = 0
        self.history = []
        if self.agent_color_setting is None:
            self.agent_color = self.rng.random() < 0.5
        else:
            self.agent_color = self.agent_color_setting == "white"
        if self.opponent is not None and self.board.turn != self.agent_color:
            self._opponent_move()
        return self._observe(0.0, self._outcome()[1])

    def step(self, action: dict[str, Any]) -> FieldsObservation:
        """Play ``action["move"]`` and the opponent's reply."""
        try:
            move = chess.Move.from_uci(action["move"])
        except ValueError:
            move = None
        if move is None or move not in self.board.legal_moves:
            return self._observe(-0.1, False)
        self._push(move)
        reward, done = self._outcome()
        if not done and self.opponent is not None:
            self._opponent_move()
            reward, done = self._outcome()
        return self._observe(reward, done)

    def state(self) -> dict[str, Any]:
        return {
            "episode_id": self.episode_id,
            "step_count": self.step_count,
            "fen": self.board.fen(),
            "current_player": "white" if self.board.turn else "black",
            "move_history": list(self.history),
        }

    def _push(self, move: chess.Move) -> None:
        self.board.push(move)
        self.step_count += 1
        self.history.append(move.uci())

    def _opponent_move(self) -> None:
        legal = list(self.board.legal_moves)
        if not legal:
            return
        if self._search is not None:
            move = self._search(self.board, depth=self.opponent_depth)
        else:
            move = self.rng.choice(legal)
        self._push(move)

    def _outcome(self) -> tuple[float, bool]:
        """Upstream's reward and end of game, from the agent's side."""
        board = self.board
        if board.is_checkmate():
            return (1.0 if board.turn != self.agent_color else -1.0), True
        drawn = (
            board.is_stalemate()
            or board.is_insufficient_material()
            or board.is_fifty_moves()
            or board.is_repetition(3)
            or self.step_count >= self.max_moves
        )
        return 0.0, drawn

    def _observe(self, reward: float, done: bool) -> FieldsObservation:
        board = self.board
        result = None
        if done:
            result = ("1-0" if board.turn == chess.BLACK else "0-1") if board.is_checkmate() else "1/2-1/2"
        return FieldsObservation(
            {
                "fen": board.fen(),
                "legal_moves": [move.uci() for move in board.legal_moves],
                "is_check": board.is_check(),
                "result": result,
            },
            reward=reward,
            done=done,
            metadata={"fullmove_number": board.fullmove_number, "halfmove_clock": board.halfmove_clock},
        )


def _moonfish_search():
    try:
        from moonfish.lib import search_move
    except ImportError as exc:
        raise ImportError(
            "opponent='moonfish' needs the moonfish engine: pip install moonfish "
            "(or use opponent='random' or None)"
        ) from exc
    return search_move
