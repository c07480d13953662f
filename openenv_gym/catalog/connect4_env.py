"""Built-in Connect4 server env: OpenEnv's ``connect4_env``.

A 6x7 board (``board[row][column]``, row 0 at the top; 1 and -1 are the two
players, 0 an empty cell). The action ``column`` drops a piece for the player
to move. As upstream, with ``opponent=None`` the agent moves for both players
in turn (``metadata["next_player"]`` says whose turn it is); with
``opponent="random"`` a random legal reply follows each agent move. Rewards:
+1 to the mover who connects four, -1 when the random opponent does, 0 for a
full board, and -1 (ending the episode) for a full or nonexistent column.

    >>> env = Connect4Environment()
    >>> env.reset().fields["legal_actions"]
    [0, 1, 2, 3, 4, 5, 6]
"""

from __future__ import annotations

import random
import uuid
from typing import Any

from ..fields import FieldsEnv, FieldsObservation, model_schema

__all__ = ["Connect4Environment"]

ROWS, COLUMNS = 6, 7


class Connect4Environment(FieldsEnv):
    """Connect Four, as OpenEnv's connect4_env."""

    name = "connect4_env"
    description = "Connect Four on a 6x7 board"
    action_schema = model_schema(
        "Connect4Action",
        {"column": {"type": "integer"}},
        kind="action",
        required=["column"],
        description="Action for Connect4 environment.\n\nAttributes:\n    column: The column index "
        "(0 to 6) where the piece will be placed.",
    )
    observation_schema = model_schema(
        "Connect4Observation",
        {
            "board": {"items": {"items": {"type": "integer"}, "type": "array"}, "type": "array"},
            "legal_actions": {"items": {"type": "integer"}, "type": "array"},
        },
        kind="observation",
        description="Observation for Connect4 environment.\n\nAttributes:\n    board: The current "
        "board as a 2D list (6 rows x 7 columns).\n           1 = current player, -1 = opponent, "
        "0 = empty.\n    legal_actions: List of column indices that are valid moves.\n    done: "
        "Whether the game is over.\n    reward: Reward for the last action.",
    )
    state_schema = model_schema(
        "Connect4State",
        {
            "step_count": {
                "default": 0, "description": "Number of steps taken in the current episode",
                "minimum": 0, "type": "integer",
            },
            "board": {"items": {"items": {"type": "integer"}, "type": "array"}, "type": "array"},
            "next_player": {"default": 1, "type": "integer"},
        },
        kind="state",
        description="State for Connect4 environment.\n\nAttributes:\n    episode_id: Unique ID for "
        "the current game.\n    board: Current board state (rows x columns), 0 = empty, 1 = "
        "player, -1 = opponent.\n    next_player: Whose turn it is (1 or -1).\n    step_count: "
        "Number of steps taken in the game.",
    )

    def __init__(self, opponent: str | None = None) -> None:
        if opponent not in (None, "random"):
            raise ValueError(f"opponent must be None (self-play) or 'random', not {opponent!r}")
        self.opponent = opponent
        self.board = [[0] * COLUMNS for _ in range(ROWS)]
        self.next_player = 1
        self.episode_id: str | None = None
        self.step_count = 0
        self.rng = random.Random()

    def reset(self, *, seed: int | None = None, episode_id: str | None = None) -> FieldsObservation:
        if seed is not None:  # as Gymnasium: without a seed, the seeded stream goes on
            self.rng = random.Random(seed)
        self.board = [[0] * COLUMNS for _ in range(ROWS)]
        self.next_player = 1
        self.episode_id = episode_id or str(uuid.uuid4())
        self.step_count = 0
        return self._observe(0.0, False)

    def step(self, action: dict[str, Any]) -> FieldsObservation:
        self.step_count += 1
        column = action["column"]
        if column not in self._legal():
            self.next_player = -self.next_player
            return self._observe(-1.0, True)
        reward, done = self._drop(column)
        if not done and self.opponent == "random":
            reward, done = self._drop(self.rng.choice(self._legal()))
            reward = -reward
        return self._observe(reward, done)

    def state(self) -> dict[str, Any]:
        return {
            "episode_id": self.episode_id,
            "step_count": self.step_count,
            "board": [row[:] for row in self.board],
            "next_player": self.next_player,
        }

    def _legal(self) -> list[int]:
        return [c for c in range(COLUMNS) if self.board[0][c] == 0]

    def _drop(self, column: int) -> tuple[float, bool]:
        """Drop the mover's piece; the mover's reward and whether the game ended."""
        row = max(r for r in range(ROWS) if self.board[r][column] == 0)
        player = self.next_player
        self.board[row][column] = player
        self.next_player = -player
        if self._connects(row, column, player):
            return 1.0, True
        return 0.0, not self._legal()

    def _connects(self, row: int, column: int, player: int) -> bool:
        for dr, dc in ((1, 0), (0, 1), (1, 1), (1, -1)):
            run = 0
            for k in range(-3, 4):
                r, c = row + k * dr, column + k * dc
                run = run + 1 if 0 <= r < ROWS and 0 <= c < COLUMNS and self.board[r][c] == player else 0
                if run >= 4:
                    return True
        return False

    def _observe(self, reward: float, done: bool) -> FieldsObservation:
        return FieldsObservation(
            {"board": [row[:] for row in self.board], "legal_actions": self._legal()},
            reward=reward, done=done, metadata={"next_player": self.next_player},
        )
