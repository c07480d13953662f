"""The AlphaZero view of chess: UCI chess servers as ``Discrete(4672)`` + board planes.

OpenEnv's chess servers take UCI strings and send FEN strings. This view
turns such a server into the numeric env classic RL wants, in exactly the
encoding PettingZoo's ``chess_v6`` uses (AlphaZero's, reusing PettingZoo's
own :mod:`pettingzoo.classic.chess.chess_utils` and observation code):

- action: ``Discrete(4672)`` = 64 from-squares x 73 move planes (56 queen-like
  moves, 8 knight moves, 9 under-promotions), from the mover's side of the
  board (mirrored when black moves);
- observation: ``Box(0, 1, (8, 8, 111), bool)``: 7 auxiliary planes (castling
  rights, side to move, fifty-move counter, all-ones) and the 13 piece and
  repetition planes of the last 8 positions, from the mover's perspective;
- ``info["action_mask"]`` (``int8``, 4672) and :meth:`AlphaZeroChess.action_masks`
  (``bool``), which sb3-contrib's ``MaskablePPO`` calls.

    >>> import gymnasium as gym, openenv_gym                      # doctest: +SKIP
    >>> env = gym.make("openenv/Chess-v0")          # view="alphazero" is the default
    >>> obs, info = env.reset(seed=0)
    >>> obs.shape, int(info["action_mask"].sum())
    ((8, 8, 111), 20)

Perspective: the agent moves for whichever side is to move when it gets the
observation (the server's opponent moves for the other side; the built-in
server's agent plays white unless its ``agent_color`` says otherwise, and with
``opponent=None`` the agent plays both sides). Rewards are the server's,
unchanged. The history planes follow the game the wrapper reconstructs from
the FENs it receives (its own move, then the opponent reply that leads to the
new FEN); unlike PettingZoo, whose history is empty before the first move, the
start position is in the history from ``reset`` on. An action that is not a
legal move is sent anyway (as its UCI string, or the null move ``0000``) and
the server answers as it answers illegal moves (upstream: reward -0.1, the
game goes on).
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np

from .._extras import missing_extra

try:
    import chess
    from pettingzoo.classic.chess import chess_utils
    from pettingzoo.classic.chess.chess import raw_env as _PettingZooChess

    from ..text.chess import ACTIONS, decode_action, encode_move, player_to_move
except ImportError as exc:  # pragma: no cover - depends on the install
    raise missing_extra(exc, "the AlphaZero view of chess", "chess") from exc

__all__ = ["AlphaZeroChess", "ACTIONS", "encode_move", "decode_action", "legal_action_mask"]

_NULL_MOVE = "0000"


def legal_action_mask(board: chess.Board) -> np.ndarray:
    """``int8`` mask of the legal actions of the side to move (4672 entries).

        >>> int(legal_action_mask(chess.Board()).sum())
        20
    """
    mask = np.zeros(ACTIONS, dtype=np.int8)
    mask[chess_utils.legal_moves(board)] = 1
    return mask


class AlphaZeroChess(gym.Wrapper):
    """An env speaking OpenEnv's chess schema, as ``Discrete(4672)`` actions and
    ``(8, 8, 111)`` board planes (see the module docstring)."""

    def __init__(self, env: gym.Env) -> None:
        super().__init__(env)
        self.action_space = gym.spaces.Discrete(ACTIONS)
        self.observation_space = gym.spaces.Box(0, 1, shape=(8, 8, 111), dtype=bool)
        self.board = chess.Board()
        # PettingZoo's own observer: its board and history are set before each observe().
        self._observer = _PettingZooChess()
        self._mask = np.zeros(ACTIONS, dtype=np.int8)

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[np.ndarray, dict[str, Any]]:
        raw, info = self.env.reset(seed=seed, options=options)
        self._restart(raw["fen"])
        return self._observe(info)

    def step(self, action: Any) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        move = decode_action(self.board, int(action))
        uci = _NULL_MOVE if move is None else move.uci()
        raw, reward, terminated, truncated, info = self.env.step(uci)
        if move is not None and move in self.board.legal_moves:
            self._push(move)
        self._follow(raw["fen"])
        obs, info = self._observe(info)
        return obs, float(reward), terminated, truncated, info

    def action_masks(self) -> np.ndarray:
        """The legal actions now, as a ``bool`` array (sb3-contrib's MaskablePPO calls this)."""
        return self._mask.astype(bool)

    # -- the game as the view sees it -----------------------------------------

    def _restart(self, fen: str) -> None:
        self.board = chess.Board(fen)
        self._observer.board_history = np.zeros((8, 8, 104), dtype=bool)
        self._record()

    def _push(self, move: chess.Move) -> None:
        self.board.push(move)
        self._record()

    def _record(self) -> None:
        """Add the current position to the history planes, as PettingZoo's step does."""
        planes = chess_utils.get_observation(self.board, player=0)
        history = self._observer.board_history
        self._observer.board_history = np.dstack((planes[:, :, 7:], history[:, :, :-13]))

    def _follow(self, fen: str) -> None:
        """Catch up with the server's position: find the opponent's reply, or restart from ``fen``."""
        if self.board.fen() == fen:
            return
        for reply in self.board.legal_moves:
            self.board.push(reply)
            reached = self.board.fen() == fen
            self.board.pop()
            if reached:
                self._push(reply)
                return
        self._restart(fen)

    def _observe(self, info: dict[str, Any]) -> tuple[np.ndarray, dict[str, Any]]:
        observer = self._observer
        observer.board = self.board
        agent = observer.possible_agents[player_to_move(self.board)]
        observer.agent_selection = agent
        observed = observer.observe(agent)
        self._mask = observed["action_mask"]
        return observed["observation"], {**info, "action_mask": self._mask}
