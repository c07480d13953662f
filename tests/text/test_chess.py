"""Chess as UCI moves: the position read off AlphaZero's planes (PettingZoo's chess_v6, the
catalog's default view) matches the real board move after move; moves and action numbers
map both ways, promotions included; OpenEnv's fen/legal_moves encoding (the catalog's raw
view); and illegal moves refused with the legal ones listed."""

from __future__ import annotations

import random

import chess
import gymnasium as gym
import numpy as np
import pytest
from pettingzoo.classic import chess_v6
from pettingzoo.classic.chess import chess_utils

import openenv_gym
from openenv_gym.text import ActionParseError, view_for, view_for_spaces
from openenv_gym.text.chess import AlphaZeroChessView, FenChessView, board_from_planes


def same_position(decoded: chess.Board, board: chess.Board) -> bool:
    return decoded.epd() == board.epd() and decoded.ep_square == board.ep_square


def test_the_planes_show_the_board_throughout_random_games():
    rng = random.Random(0)
    for _ in range(2):
        game = chess_v6.env()
        game.reset(seed=0)
        view = view_for(game)
        for ply in range(60):
            agent = game.agent_selection
            obs, _, terminated, truncated, _ = game.last()
            if terminated or truncated:
                break
            board = game.unwrapped.board
            assert same_position(board_from_planes(obs["observation"]), board), (ply, board.fen())
            legal = view.legal_actions(obs=obs)
            assert sorted(legal) == sorted(m.uci() for m in board.legal_moves)
            assert len(legal) == int(obs["action_mask"].sum())
            view.obs_to_text(obs)
            move = rng.choice(legal)
            action = view.parse_action(move)
            assert obs["action_mask"][action] == 1 and view.action_to_text(action) == move
            game.step(action)
            assert game.agent_selection != agent or game.terminations[agent]


def play(*moves: str):
    """A PettingZoo game after ``moves``, each read by the view from the mover's observation."""
    game = chess_v6.env()
    game.reset()
    view = view_for(game)
    for move in moves:
        view.obs_to_text(game.observe(game.agent_selection))
        game.step(view.parse_action(move))
    return game, view, game.observe(game.agent_selection)


@pytest.mark.parametrize(
    "moves, epd",
    [
        ((), "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq -"),  # PettingZoo's empty first history
        (("e2e4", "a7a6", "e4e5", "d7d5"), "rnbqkbnr/1pp1pppp/p7/3pP3/8/8/PPPP1PPP/RNBQKBNR w KQkq d6"),
        (("a2a3", "e7e5", "a3a4", "e5e4", "d2d4"), "rnbqkbnr/pppp1ppp/8/8/P2Pp3/8/1PP1PPPP/RNBQKBNR b KQkq d3"),
        (("g1f3", "g8f6", "g2g3", "g7g6", "f1g2", "f8g7", "e1g1"), "rnbqk2r/ppppppbp/5np1/8/8/5NP1/PPPPPPBP/RNBQ1RK1 b kq -"),
        (("g1f3", "g8f6", "g2g3", "g7g6", "f1g2", "f8g7", "e1g1", "e8g8", "b1c3"),
         "rnbq1rk1/ppppppbp/5np1/8/8/2N2NP1/PPPPPPBP/R1BQ1RK1 b - -"),
        (("h2h4", "a7a5", "h1h3", "a8a6"), "1nbqkbnr/1ppppppp/r7/p7/7P/7R/PPPPPPP1/RNBQKBN1 w Qk -"),
    ],
)
def test_en_passant_and_castling_rights_read_off_the_planes(moves, epd):
    game, view, obs = play(*moves)
    board = board_from_planes(obs["observation"])
    assert board.epd(en_passant="fen") == epd
    assert same_position(board, game.unwrapped.board)
    assert f"Position (EPD): {game.unwrapped.board.epd()}" in view.obs_to_text(obs)


def at(fen: str):
    """A PettingZoo game set to ``fen`` (history: that position only), as PettingZoo observes it."""
    game = chess_v6.env()
    game.reset()
    raw = game.unwrapped
    raw.board = chess.Board(fen)
    now = chess_utils.get_observation(raw.board, 0)[:, :, 7:]
    raw.board_history = np.dstack((now, np.zeros((8, 8, 91), dtype=bool)))
    agent = "player_0" if raw.board.turn == chess.WHITE else "player_1"
    raw.agent_selection = agent
    return game, game.observe(agent)


@pytest.mark.parametrize("fen, pawn", [("8/4P3/8/8/8/8/k7/4K3 w - - 0 1", "e7e8"), ("4k3/8/8/8/8/8/4p3/K7 b - - 0 1", "e2e1")])
def test_promotions(fen, pawn):
    game, obs = at(fen)
    view = view_for(game)
    text = view.obs_to_text(obs)
    for piece in "qrbn":
        assert f"{pawn}{piece}" in text
        action = view.parse_action(f"{pawn}{piece}")
        assert obs["action_mask"][action] == 1
        assert view.action_to_text(action) == f"{pawn}{piece}"
        black = int(fen.split()[1] == "b")  # PettingZoo's own reading of the action number
        assert chess_utils.action_to_move(game.unwrapped.board, action, black) == chess.Move.from_uci(f"{pawn}{piece}")
    assert len({view.parse_action(f"{pawn}{p}") for p in "qrbn"}) == 4
    with pytest.raises(ActionParseError) as caught:
        view.parse_action(pawn)
    assert f"a pawn reaching the last rank promotes: {pawn}q or {pawn}r or {pawn}b or {pawn}n; legal moves:" in str(
        caught.value)


UCI = "not a move in UCI notation (like e2e4 or e7e8q)"


def test_moves_refused_and_the_other_forms_of_a_move():
    game, view, obs = play("e2e4")
    view.obs_to_text(obs)
    legal = ", ".join(m.uci() for m in game.unwrapped.board.legal_moves)
    for reply, why in (("e7e4", "e7e4 is not a legal move here"), ("e5", UCI), ("Nf6", UCI), ("4672", "4672 is not a move"),
                       ("[1]", UCI), ("e2e4 e7e5", UCI)):
        with pytest.raises(ActionParseError) as caught:
            view.parse_action(reply)
        assert str(caught.value) == f"cannot play {reply!r}: {why}; legal moves: {legal}"
    e5 = view.parse_action("e7e5")
    assert e5 == view.parse_action("E7E5") == view.parse_action('{"action": "e7e5"}') == view.parse_action(
        "<action>```json\n\"e7e5\"\n```</action>") == view.parse_action(str(e5)) == view.parse_action(e5)
    assert view.action_json_schema()["pattern"] == "^[a-h][1-8][a-h][1-8][qrbn]?$"
    assert "UCI notation" in view.describe() and "for example <action>e2e4</action>" in view.describe()


def test_a_move_needs_a_position():
    view = view_for_spaces(gym.spaces.Box(0, 1, (8, 8, 111), bool), gym.spaces.Discrete(4672), env_id="chess_v6")
    assert isinstance(view, AlphaZeroChessView) and view.legal_actions() is None
    with pytest.raises(ValueError, match="no position to play a move in"):
        view.parse_action("e2e4")


# ---------------------------------------------------------------------------------------------
# The catalog's chess: both views, against the built-in server
# ---------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def chess_server():
    """The catalog's built-in chess server, in this process (faster than its embedded child)."""
    from openenv_gym.catalog.chess_env import ChessEnvironment

    with openenv_gym.local_server(ChessEnvironment) as url:
        yield url


@pytest.fixture
def raw_chess(chess_server):
    env = gym.make("openenv/Chess-v0", base_url=chess_server, view="raw")
    yield env
    env.close()


@pytest.fixture
def alphazero_chess(chess_server):
    env = gym.make("openenv/Chess-v0", base_url=chess_server)
    yield env
    env.close()


def test_catalog_chess_raw_view(raw_chess):
    obs, info = raw_chess.reset(seed=0)
    view = view_for(raw_chess)
    assert isinstance(view, FenChessView)
    text = view.obs_to_text(obs, info)
    assert text.splitlines()[0] == "You play white, to move."
    assert "Legal moves: " + ", ".join(info["legal_actions"]) in text
    with pytest.raises(ActionParseError, match="cannot play 'e2e5': e2e5 is not a legal move here; legal moves: g1h3"):
        view.parse_action("e2e5")
    action = view.parse_action('{"move": "e2e4"}')
    assert action == "e2e4" and view.action_to_text(action) == "e2e4"
    obs, reward, terminated, truncated, info = raw_chess.step(action)
    assert reward == 0.0 and not terminated
    text = view.obs_to_text(obs, info)
    assert "4 . . . . P . . ." in text and chess.Board(obs["fen"]).epd() in text
    # The client knows the spaces and the id: the same view.
    client = view_for_spaces(raw_chess.observation_space, raw_chess.action_space, env_id="openenv/Chess-v0")
    assert isinstance(client, FenChessView) and client.obs_to_text(obs, info) == text
    assert client.parse_action(info["legal_actions"][0]) == info["legal_actions"][0]


def test_catalog_chess_alphazero_view(alphazero_chess):
    obs, info = alphazero_chess.reset(seed=0)
    view = view_for(alphazero_chess)
    assert isinstance(view, AlphaZeroChessView)
    for _ in range(3):
        view.obs_to_text(obs, info)
        board = alphazero_chess.get_wrapper_attr("board")
        assert same_position(board_from_planes(obs), board)
        assert view.legal_actions() == [m.uci() for m in board.legal_moves]
        obs, reward, terminated, truncated, info = alphazero_chess.step(view.parse_action(view.legal_actions()[0]))
        assert not terminated
