"""sb3-contrib MaskablePPO learns to win material, and more games, on remote chess.

    python examples/maskable_ppo_chess.py [--timesteps 16384] [--games 50]

``gym.make("openenv/Chess-v0")`` starts the built-in chess server (upstream
OpenEnv's chess_env schema, on python-chess) in a child process and wraps it in
the AlphaZero view: ``Discrete(4672)`` actions, ``(8, 8, 111)`` board planes
and ``action_masks()``, which MaskablePPO uses to play only legal moves. The
agent plays white; the server plays black with uniformly random legal moves.

What it measures: the same policy plays ``--games`` games against that
opponent before and after training (opponent seeds 0 to games-1; the policy
samples its moves from a generator seeded the same way each time). For each,
the table gives the games won, drawn and lost, the mean game reward (the
server's: +1 win, 0 draw, -1 loss) and the mean material balance when the game
ended (pawn 1, knight and bishop 3, rook 5, queen 9; positive: the agent has
more), both +- their standard error. The untrained policy plays uniformly
random legal moves (its move head starts at zero), so the "before" row is the
random baseline, the same in every run.

How it learns in minutes: the game reward alone is too sparse (random play
against a random opponent draws most games), so training adds 0.1 x the change
in material balance to each step's reward (:class:`MaterialReward`; the
evaluation counts the game reward only). The policy learns to win material
first, and more material gives more checkmates against a random defender.
MaskablePPO's default MLP (64 units between 7104 inputs and 4672 moves)
learned nothing measurable in 16k steps, so the policy's move head
(:class:`MoveHead`) scores each move from the board around its from-square and
its to-square, AlphaZero's policy planes in factored form.

What it shows at the defaults (docs/examples.md quotes a run): before, 6 won,
39 drawn, 5 lost, material -0.1 +- 1.2; after, in four runs, 13 to 20 won out
of 50, 0 to 4 lost, material +17 to +29. Material is the clear improvement;
the win rate rises from 12% to 26-40%, and most games are still drawn
(stalemate, the fifty-move rule, too little material left: the agent has not
learnt to mate). Training games are not seeded (only the first), so the
"after" row varies between runs. About 7 CPU-minutes, 7 to 9 minutes on 2
busy shared vCPUs (one torch thread; the server uses the other core).
Needs ``pip install 'openenv-gym[chess,sb3]'``.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from typing import Any

import chess
import gymnasium as gym
import numpy as np
import torch
from sb3_contrib import MaskablePPO
from sb3_contrib.common.maskable.policies import MaskableActorCriticPolicy
from torch import nn

import openenv_gym  # noqa: F401  (registers the openenv/... ids)
from openenv_gym.catalog.alphazero import ACTIONS, encode_move

#: Material values of the pieces, in pawns.
VALUES = {chess.PAWN: 1, chess.KNIGHT: 3, chess.BISHOP: 3, chess.ROOK: 5, chess.QUEEN: 9}
#: Move planes per square in the AlphaZero encoding (56 queen-like, 8 knight, 9 under-promotion).
PLANES = 73
#: Observation planes the move head reads: 7 auxiliary planes, then the current position's 13.
CURRENT = 7 + 13


def material(board: chess.Board, color: chess.Color) -> int:
    """``color``'s material minus its opponent's, in pawns."""
    return sum(
        value * (len(board.pieces(piece, color)) - len(board.pieces(piece, not color)))
        for piece, value in VALUES.items()
    )


class MaterialReward(gym.Wrapper):
    """Adds ``scale`` x the change in the agent's material balance to each step's reward.

    It reads the position from the view's ``board``; the balance after the
    opponent's reply counts, so a piece left hanging costs what it loses.
    """

    def __init__(self, env: gym.Env, scale: float = 0.1) -> None:
        super().__init__(env)
        self.scale = scale
        self.color = chess.WHITE
        self.balance = 0

    def reset(self, **kwargs: Any) -> tuple[np.ndarray, dict[str, Any]]:
        obs, info = self.env.reset(**kwargs)
        board = self.env.get_wrapper_attr("board")
        self.color, self.balance = board.turn, material(board, board.turn)
        return obs, info

    def step(self, action: Any) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        obs, reward, terminated, truncated, info = self.env.step(action)
        balance = material(self.env.get_wrapper_attr("board"), self.color)
        reward += self.scale * (balance - self.balance)
        self.balance = balance
        return obs, reward, terminated, truncated, info


def move_squares() -> tuple[np.ndarray, np.ndarray]:
    """For each action, the index of its (from-square, plane) and of its (to-square,
    plane) in a ``(64 squares, 73 planes)`` table whose squares are in observation
    order (rank 8 first). Actions that are never legal (off the board) point anywhere."""
    source, target = np.zeros(ACTIONS, np.int64), np.zeros(ACTIONS, np.int64)
    plane = np.arange(ACTIONS) % PLANES
    board = chess.Board(None)
    moves = []
    for square in chess.SQUARES:  # every queen-like and knight move, from the mover's side
        for piece in (chess.QUEEN, chess.KNIGHT):
            board.set_piece_at(square, chess.Piece(piece, chess.WHITE))
            moves += [chess.Move(square, to) for to in board.attacks(square)]
            board.remove_piece_at(square)
        if chess.square_rank(square) == 6:  # under-promotions
            for to in chess.SquareSet(chess.BB_RANK_8 & chess.BB_KING_ATTACKS[square]):
                moves += [chess.Move(square, to, piece) for piece in (chess.KNIGHT, chess.BISHOP, chess.ROOK)]
    for move in moves:
        action = encode_move(board, move)
        source[action] = chess.square_mirror(move.from_square)
        target[action] = chess.square_mirror(move.to_square)
    return source * PLANES + plane, target * PLANES + plane


class MoveHead(nn.Module):
    """Move logits: score(from-square, plane) + score(to-square, plane).

    Two 3x3 convolutions over the current position give each square a view of
    its neighbourhood; one 1x1 convolution scores each square as a from-square
    for each of the 73 move planes, another scores it as a to-square (from the
    same features plus the raw planes, so "this move takes a queen" is one
    weight). Both start at zero: the untrained policy is uniform over legal moves.
    """

    def __init__(self, channels: int = 32) -> None:
        super().__init__()
        self.trunk = nn.Sequential(
            nn.Conv2d(CURRENT, channels, 3, padding=1), nn.ReLU(),
            nn.Conv2d(channels, channels, 3, padding=1), nn.ReLU(),
        )
        self.source = nn.Conv2d(channels, PLANES, 1)
        self.target = nn.Conv2d(channels + CURRENT, PLANES, 1)
        for head in (self.source, self.target):
            nn.init.zeros_(head.weight)
            nn.init.zeros_(head.bias)
        source, target = move_squares()
        self.register_buffer("source_index", torch.as_tensor(source))
        self.register_buffer("target_index", torch.as_tensor(target))

    def forward(self, flat_obs: torch.Tensor) -> torch.Tensor:
        planes = flat_obs.view(-1, 8, 8, 111)[..., :CURRENT].permute(0, 3, 1, 2)
        features = self.trunk(planes)

        def per_square(scores: torch.Tensor) -> torch.Tensor:  # (B, 73, 8, 8) -> (B, 64 * 73)
            return scores.flatten(2).transpose(1, 2).flatten(1)

        source = per_square(self.source(features))
        target = per_square(self.target(torch.cat([features, planes], dim=1)))
        return source.index_select(1, self.source_index) + target.index_select(1, self.target_index)


class MovePolicy(MaskableActorCriticPolicy):
    """MaskablePPO's policy with :class:`MoveHead` for moves; values come from the
    usual MLP (with PyTorch's default initialisation). Use with
    ``net_arch={"pi": [], "vf": [...]}`` so that the head gets the observation itself."""

    def _build(self, lr_schedule: Any) -> None:
        self._build_mlp_extractor()
        self.action_net = MoveHead()
        self.value_net = nn.Linear(self.mlp_extractor.latent_dim_vf, 1)
        self.optimizer = self.optimizer_class(self.parameters(), lr=lr_schedule(1), **self.optimizer_kwargs)


def play(model: MaskablePPO, env: gym.Env, games: int) -> tuple[np.ndarray, np.ndarray]:
    """``games`` games against the server's opponent (seeds 0..games-1), the policy
    sampling its moves: each game's reward (+1, 0, -1) and final material balance."""
    torch.manual_seed(0)
    rewards, balances = np.zeros(games), np.zeros(games)
    for game in range(games):
        obs, info = env.reset(seed=game)
        color = env.get_wrapper_attr("board").turn
        terminated = truncated = False
        while not (terminated or truncated):
            action, _ = model.predict(obs, action_masks=info["action_mask"].astype(bool))
            obs, reward, terminated, truncated, info = env.step(action)
        rewards[game], balances[game] = reward, material(env.get_wrapper_attr("board"), color)
    return rewards, balances


def timed(call: Callable[..., Any], *args: Any) -> tuple[Any, float]:
    """``call(*args)`` and the seconds it took."""
    start = time.perf_counter()
    result = call(*args)
    return result, time.perf_counter() - start


def row(name: str, rewards: np.ndarray, balances: np.ndarray, seconds: float) -> str:
    """One line of the before/after table: counts, and means +- their standard errors."""
    won, drawn, lost = (int(np.sum(rewards == result)) for result in (1.0, 0.0, -1.0))

    def mean(values: np.ndarray, digits: int) -> str:
        return f"{values.mean():+.{digits}f} +- {values.std(ddof=1) / np.sqrt(len(values)):.{digits}f}"

    return f"{name:<25} {won:>3} {drawn:>5} {lost:>4} {mean(rewards, 2):>14} {mean(balances, 1):>15} {seconds:>6.0f} s"


def main() -> None:
    parser = argparse.ArgumentParser(description="MaskablePPO on remote chess, before and after training")
    parser.add_argument("--timesteps", type=int, default=16_384)
    parser.add_argument("--games", type=int, default=50, help="evaluation games, before and after")
    args = parser.parse_args()
    torch.set_num_threads(1)  # batches of 1 to 256: one thread is faster, and leaves a core to the server
    env = gym.make("openenv/Chess-v0")
    try:
        model = MaskablePPO(
            MovePolicy, MaterialReward(env), n_steps=1024, batch_size=256, n_epochs=10, gamma=0.9,
            learning_rate=1e-3, policy_kwargs={"net_arch": {"pi": [], "vf": [64, 64]}}, seed=0, device="cpu",
        )
        before, before_seconds = timed(play, model, env, args.games)
        _, train_seconds = timed(model.learn, args.timesteps)
        after, after_seconds = timed(play, model, env, args.games)
        print(f"{args.games} games as white against the server's random opponent (seeds 0-{args.games - 1}), "
              f"before and after {args.timesteps} training steps ({train_seconds:.0f} s):")
        print(f"{'policy':<25} {'won':>3} {'drawn':>5} {'lost':>4} {'mean reward':>14} {'material at end':>15} "
              f"{'took':>8}")
        print(row("before training (random)", *before, before_seconds))
        print(row("after training", *after, after_seconds))
    finally:
        env.close()  # also stops the embedded chess server


if __name__ == "__main__":
    main()
