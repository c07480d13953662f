"""The AlphaZero view of chess (its move numbers and masks) against python-chess, without a server."""

from __future__ import annotations

import random

import numpy as np
import pytest

chess = pytest.importorskip("chess")
pytest.importorskip("pettingzoo")

from openenv_gym.catalog.alphazero import ACTIONS, decode_action, encode_move, legal_action_mask  # noqa: E402

POSITIONS = 10_000


def random_positions(count: int, seed: int = 0):
    """``count`` positions from random games (each at most 120 plies, restarting at game end)."""
    rng = random.Random(seed)
    board = chess.Board()
    for _ in range(count):
        if board.is_game_over() or board.ply() >= 120:
            board = chess.Board()
        yield board
        board.push(rng.choice(list(board.legal_moves)))


def test_masks_agree_with_python_chess_on_10000_positions():
    checked = 0
    for board in random_positions(POSITIONS):
        mask = legal_action_mask(board)
        assert mask.shape == (ACTIONS,) and mask.dtype == np.int8
        actions = np.flatnonzero(mask)
        decoded = {decode_action(board, a) for a in actions}
        assert decoded == set(board.legal_moves), board.fen()
        assert len(actions) == board.legal_moves.count()  # no two moves share an action
        checked += 1
    assert checked == POSITIONS


def test_encode_decode_round_trip_including_promotions_and_black():
    seen_promotions = set()
    for board in random_positions(3_000, seed=1):
        for move in board.legal_moves:
            action = encode_move(board, move)
            assert 0 <= action < ACTIONS
            assert decode_action(board, action) == move
            if move.promotion:
                seen_promotions.add((board.turn, move.promotion))
    # Under-promotions and black's mirrored moves are the tricky cases: make sure they came up.
    board = chess.Board("8/P6k/8/8/8/8/p6K/8 w - - 0 1")
    for side in (chess.WHITE, chess.BLACK):
        board.turn = side
        for move in board.legal_moves:
            assert decode_action(board, encode_move(board, move)) == move
            seen_promotions.add((side, move.promotion))
    assert {(s, p) for s in (True, False) for p in (chess.QUEEN, chess.ROOK, chess.BISHOP, chess.KNIGHT)} <= seen_promotions


def test_mirrored_encoding_for_black():
    # 1. e4: black's e7e5 is white's e2e4 seen from the other side.
    board = chess.Board()
    e2e4 = encode_move(board, chess.Move.from_uci("e2e4"))
    board.push_uci("e2e4")
    assert encode_move(board, chess.Move.from_uci("e7e5")) == e2e4
    assert decode_action(board, e2e4) == chess.Move.from_uci("e7e5")
