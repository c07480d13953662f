"""Chess as text: the board, and moves in UCI notation (``e2e4``, ``e7e8q``).

Two encodings of chess reach a view, and :func:`chess_view` picks the one the spaces show:

- **AlphaZero's** (PettingZoo's ``chess_v6``, and the catalog's ``openenv/Chess-v0``
  with its default view, :mod:`openenv_gym.catalog.alphazero`): a ``Discrete(4672)`` action
  and ``(8, 8, 111)`` board planes. :class:`AlphaZeroChessView` reads the position off
  the planes (:func:`board_from_planes`), so a client that has only the observation
  reads it as the server does, and turns a UCI move into its action number and back.
- **OpenEnv's** (the catalog's ``view="raw"``, upstream ``chess_env``, as a
  :class:`~openenv_gym.RemoteEnv` sees it): the UCI string as the action, an observation
  with ``fen``, and the legal moves in ``info["legal_actions"]`` (:class:`FenChessView`).

Either way a reply names a legal move of the position in UCI notation; a move that is
not legal there is an :class:`~openenv_gym.text.ActionParseError` listing the legal ones.

    >>> from pettingzoo.classic import chess_v6
    >>> game = chess_v6.env()
    >>> game.reset()
    >>> view = chess_view(game.observation_space("player_0"), game.action_space("player_0"))
    >>> game.step(view.parse_action("<action>e2e4</action>", obs=game.observe("player_0")))
    >>> print(view.obs_to_text(game.observe("player_1")))  # doctest: +ELLIPSIS
    You play black, to move.
    8 r n b q k b n r
    7 p p p p p p p p
    6 . . . . . . . .
    5 . . . . . . . .
    4 . . . . P . . .
    3 . . . . . . . .
    2 P P P P . P P P
    1 R N B Q K B N R
      a b c d e f g h
    Position (EPD): rnbqkbnr/pppppppp/8/8/4P3/8/PPPP1PPP/RNBQKBNR b KQkq -
    Legal moves: g8h6, g8f6, b8c6, b8a6, h7h6, g7g6, f7f6, e7e6, d7d6, c7c6, b7b6, a7a6, h7h5, ...
    >>> view.parse_action("e7e4")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    openenv_gym.errors.ActionParseError: cannot play 'e7e4': e7e4 is not a legal move here; legal moves: g8h6, g8f6, ...
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

import numpy as np
from gymnasium import spaces as gs

from .._extras import missing_extra
from ..spaces.stock import LEGAL_ACTIONS
from .reply import NO_JSON, ActionParseError, read_reply, shorten
from .view import TextView, action_mask

try:
    import chess
    from pettingzoo.classic.chess import chess_utils
except ImportError as exc:  # pragma: no cover - depends on the install
    raise missing_extra(exc, "the text view of chess", "chess") from exc

__all__ = [
    "ChessView",
    "AlphaZeroChessView",
    "FenChessView",
    "chess_view",
    "board_from_planes",
    "ACTIONS",
    "encode_move",
    "decode_action",
    "player_to_move",
]

UCI = re.compile(r"[a-h][1-8][a-h][1-8][qrbn]?")
UCI_SCHEMA: dict[str, Any] = {
    "type": "string",
    "pattern": "^[a-h][1-8][a-h][1-8][qrbn]?$",
    "description": "a chess move in UCI notation: from-square, to-square, promotion piece (e2e4, e7e8q)",
}
TASK = (
    "Chess. You move for the side to move; the opponent answers. Win by checkmate; an illegal move is refused."
)
_PIECES = (chess.PAWN, chess.KNIGHT, chess.BISHOP, chess.ROOK, chess.QUEEN, chess.KING)


# -- AlphaZero's move numbers (PettingZoo's chess_utils) ----------------------------------

#: Size of AlphaZero's action space: 8 x 8 from-squares x 73 move planes.
ACTIONS = 8 * 8 * 73


def player_to_move(board: chess.Board) -> int:
    """PettingZoo's player index of the side to move (0 white, 1 black)."""
    return 0 if board.turn == chess.WHITE else 1


def encode_move(board: chess.Board, move: chess.Move) -> int:
    """The action number of ``move`` (a move of the side to move in ``board``).

        >>> encode_move(chess.Board(), chess.Move.from_uci("e2e4"))
        2421
    """
    oriented = chess_utils.mirror_move(move) if board.turn == chess.BLACK else move
    uci = oriented.uci()
    if uci not in chess_utils.moves_to_actions:
        chess_utils.make_move_mapping(uci)
    return chess_utils.moves_to_actions[uci]


def decode_action(board: chess.Board, action: int) -> chess.Move | None:
    """The move ``action`` stands for in ``board`` (``None`` if it names no move
    of any position seen so far; a returned move may still be illegal here).

        >>> decode_action(chess.Board(), 2421)
        Move.from_uci('e2e4')
    """
    if int(action) not in chess_utils.actions_to_moves:
        chess_utils.legal_moves(board)  # extends PettingZoo's lazily built table
        if int(action) not in chess_utils.actions_to_moves:
            return None
    return chess_utils.action_to_move(board, int(action), player_to_move(board))


def board_from_planes(planes: Any) -> chess.Board:
    """The position AlphaZero's observation planes show (PettingZoo's ``chess_v6``, the
    :mod:`~openenv_gym.catalog.alphazero`): pieces, side to move, castling rights and the en
    passant square. The move counters are not in the planes (they read 0 and 1).

    Planes without any piece are PettingZoo's first observation (its history is empty
    before the first move): the start position.

        >>> from pettingzoo.classic import chess_v6
        >>> game = chess_v6.env()
        >>> game.reset()
        >>> game.step(645)  # b1c3
        >>> board_from_planes(game.observe("player_1")["observation"]).epd()
        'rnbqkbnr/pppppppp/8/8/8/2N5/PPPPPPPP/R1BQKBNR b KQkq -'

    """
    planes = np.asarray(planes).astype(bool)
    position = planes[:, :, 7:19]
    if not position.any():
        return chess.Board()
    black = bool(planes[:, :, 4].all())
    board = chess.Board(None)
    for plane in range(12):
        color = (plane < 6) != black  # the first six planes are the mover's pieces
        piece = chess.Piece(_PIECES[plane % 6], color)
        for row, file in zip(*np.nonzero(position[:, :, plane])):
            rank = int(row) if black else 7 - int(row)
            if piece.piece_type == chess.PAWN and rank in (0, 7):
                # LeelaChessZero's en passant marker: a pawn that just advanced two squares
                # shows on its back rank (white on rank 1, black on rank 8).
                rank = 3 if color == chess.WHITE else 4
                board.ep_square = chess.square(int(file), 2 if color == chess.WHITE else 5)
            board.set_piece_at(chess.square(int(file), rank), piece)
    board.turn = chess.BLACK if black else chess.WHITE
    # Planes 0-3: the mover's king- and queenside rights, then the opponent's.
    rights = "kqKQ" if black else "KQkq"
    granted = {right for plane, right in enumerate(rights) if planes[:, :, plane].all()}
    board.set_castling_fen("".join(r for r in "KQkq" if r in granted) or "-")
    return board


class ChessView(TextView):
    """Chess with moves in UCI notation; subclasses say how the position and the moves are
    encoded (:meth:`board`, :meth:`legal_moves`, :meth:`to_action`, :meth:`to_move`)."""

    def board(self, obs: Any, info: Mapping[str, Any] | None) -> chess.Board | None:
        """The position ``obs`` shows (``None`` without one)."""
        raise NotImplementedError

    def legal_moves(self, obs: Any, info: Mapping[str, Any] | None) -> list[chess.Move] | None:
        """The legal moves of the position (``None`` without one)."""
        raise NotImplementedError

    def to_action(self, move: chess.Move, board: chess.Board | None) -> Any:
        """The action that plays ``move``."""
        raise NotImplementedError

    def to_move(self, action: Any, board: chess.Board | None) -> chess.Move | None:
        """The move ``action`` plays (``None`` if it names none)."""
        raise NotImplementedError

    def describe_observation(self) -> str:
        return (
            "the board from white's side (upper case white, lower case black, . empty), the side you play, "
            "the position in EPD (FEN without the move counters) and the legal moves"
        )

    def describe_actions(self) -> str:
        return (
            "one legal move in UCI notation: from-square and to-square, plus the piece a pawn promotes to "
            "(e2e4, g1f3, e7e8q)"
        )

    def example_action(self) -> str:
        return "e2e4"

    def obs_to_text(self, obs: Any, info: Mapping[str, Any] | None = None) -> str:
        self._obs, self._info = obs, info
        board = self.board(obs, info)
        if board is None:
            return "no position"
        side = "white" if board.turn == chess.WHITE else "black"
        lines = [f"You play {side}, to move{' (in check)' if board.is_check() else ''}.", _diagram(board)]
        lines.append(f"Position (EPD): {board.epd()}")
        legal = self.legal_actions(info, obs=obs)
        if legal is not None:
            lines.append("Legal moves: " + (", ".join(legal) if legal else "none (the game is over)"))
        return "\n".join(lines)

    def action_to_text(self, action: Any, *, obs: Any = None, info: Mapping[str, Any] | None = None) -> str:
        board = self.board(*self._context(obs, info))
        move = self.to_move(action, board)
        return move.uci() if move is not None else str(action)

    def legal_actions(self, info: Mapping[str, Any] | None = None, *, obs: Any = None) -> list[str] | None:
        moves = self.legal_moves(*self._context(obs, info))
        return None if moves is None else [m.uci() for m in moves]

    def action_json_schema(self) -> dict[str, Any]:
        return dict(UCI_SCHEMA)

    def parse_action(self, reply: Any, *, obs: Any = None, info: Mapping[str, Any] | None = None) -> Any:
        obs, info = self._context(obs, info)
        board, legal = self.board(obs, info), self.legal_moves(obs, info)
        value = reply
        if isinstance(reply, str):
            read = read_reply(reply)
            value = read.text if read.value is NO_JSON else read.value
        while isinstance(value, Mapping) and len(value) == 1 and set(value) <= {"action", "move"}:
            value = next(iter(value.values()))
        quoted = shorten(reply) if isinstance(reply, str) else repr(reply)
        listed = "none (the game is over)" if legal == [] else ", ".join(m.uci() for m in legal or [])
        numbered = isinstance(value, (int, np.integer)) and not isinstance(value, bool)
        if numbered and isinstance(self.action_space, gs.Discrete):  # an action number
            move = self.to_move(int(value), board) if 0 <= value < int(self.action_space.n) else None
            if move is None:
                raise self._error(quoted, f"{value} is not a move", reply, listed)
        elif isinstance(value, str) and UCI.fullmatch(value.strip().lower()):
            move = chess.Move.from_uci(value.strip().lower())
        else:
            raise self._error(quoted, "not a move in UCI notation (like e2e4 or e7e8q)", reply, listed)
        if legal is not None and move not in legal:
            promotions = [m.uci() for m in legal if m.promotion and m.uci()[:4] == move.uci()]
            if promotions and move.promotion is None:
                why = f"a pawn reaching the last rank promotes: {' or '.join(promotions)}"
                raise self._error(quoted, why, reply, listed)
            raise self._error(quoted, f"{move.uci()} is not a legal move here", reply, listed)
        return self.to_action(move, board)

    def _error(self, quoted: str, why: str, reply: Any, listed: str) -> ActionParseError:
        legal = f"; legal moves: {listed}" if listed else ""
        return ActionParseError(f"cannot play {quoted}: {why}{legal}", received=reply, legal=listed or None)


def _diagram(board: chess.Board) -> str:
    rows = str(board).splitlines()
    return "\n".join([*(f"{8 - i} {row}" for i, row in enumerate(rows)), "  a b c d e f g h"])


class AlphaZeroChessView(ChessView):
    """AlphaZero's chess: ``Discrete(4672)`` actions, ``(8, 8, 111)`` planes (alone, or
    as ``obs["observation"]`` with ``obs["action_mask"]``), the mask in ``info`` or in the
    observation."""

    def board(self, obs: Any, info: Mapping[str, Any] | None) -> chess.Board | None:
        planes = obs.get("observation") if isinstance(obs, Mapping) else obs
        return None if planes is None else board_from_planes(planes)

    def legal_moves(self, obs: Any, info: Mapping[str, Any] | None) -> list[chess.Move] | None:
        board = self.board(obs, info)
        if board is None:
            return None
        mask = action_mask(obs, info)
        moves = list(board.legal_moves)
        if mask is None or mask.shape != (ACTIONS,):
            return moves
        return [m for m in moves if mask[encode_move(board, m)]]  # the env's word, in the board's order

    def to_action(self, move: chess.Move, board: chess.Board | None) -> int:
        if board is None:  # the action number of a move depends on the side to move
            raise ValueError("no position to play a move in: render the observation first (obs_to_text) or pass obs=")
        return encode_move(board, move)

    def to_move(self, action: Any, board: chess.Board | None) -> chess.Move | None:
        if board is None or not 0 <= int(action) < ACTIONS:
            return None
        return decode_action(board, int(action))


class FenChessView(ChessView):
    """OpenEnv's chess seen through a :class:`~openenv_gym.spaces.StockView`: the action is
    the UCI string (the ``move`` field), observations have ``fen``, and ``info["legal_actions"]``
    lists the legal moves (the server's ``legal_moves``)."""

    def board(self, obs: Any, info: Mapping[str, Any] | None) -> chess.Board | None:
        fen = obs.get("fen") if isinstance(obs, Mapping) else None
        return chess.Board(fen) if fen else None

    def legal_moves(self, obs: Any, info: Mapping[str, Any] | None) -> list[chess.Move] | None:
        moves = info.get(LEGAL_ACTIONS) if isinstance(info, Mapping) else None
        if moves is None:
            board = self.board(obs, info)
            return None if board is None else list(board.legal_moves)
        return [chess.Move.from_uci(m) for m in moves]

    def to_action(self, move: chess.Move, board: chess.Board | None) -> str:
        return move.uci()

    def to_move(self, action: Any, board: chess.Board | None) -> chess.Move | None:
        return chess.Move.from_uci(action) if isinstance(action, str) and UCI.fullmatch(action) else None

    def obs_to_text(self, obs: Any, info: Mapping[str, Any] | None = None) -> str:
        text = super().obs_to_text(obs, info)
        result = obs.get("result") if isinstance(obs, Mapping) else None
        return text + (f"\nResult: {result}" if result else "")


def chess_view(observation_space: gs.Space, action_space: gs.Space, **kwargs: Any) -> ChessView | None:
    """The chess view for these spaces (AlphaZero's or OpenEnv's encoding), or ``None`` when
    they are neither (a wrapper changed them)."""
    kwargs.setdefault("task", TASK)
    if isinstance(action_space, gs.Discrete) and int(action_space.n) == ACTIONS:
        return AlphaZeroChessView(observation_space, action_space, **kwargs)
    if (
        isinstance(action_space, gs.Text)
        and isinstance(observation_space, gs.Dict)
        and "fen" in observation_space.spaces
    ):
        return FenChessView(observation_space, action_space, **kwargs)
    return None
