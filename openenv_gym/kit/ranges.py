"""Reward ranges of well-known envs, for the ``reward.range`` a kit declares.

RFC 008 does not say whether the declared range bounds one step's reward or an
episode's return; upstream's ``runtime.reward_well_formed`` checks each step's
reward against it, and ``semantic.oracle_max`` an oracle's reward against its
top. So a range here covers both: every step reward and every episode return
(for CartPole, 1 per step and 0 to 500 per episode: ``[0, 500]``).
"""

from __future__ import annotations

__all__ = ["KNOWN_RANGES", "known_range"]

#: ``(low, high)`` by Gymnasium id or PettingZoo environment name, with where it comes from.
KNOWN_RANGES: dict[str, tuple[float, float]] = {
    "CartPole-v0": (0.0, 200.0),  # +1 per step, 200 steps
    "CartPole-v1": (0.0, 500.0),  # +1 per step, 500 steps
    "MountainCar-v0": (-200.0, 0.0),  # -1 per step, 200 steps
    "MountainCarContinuous-v0": (-100.0, 100.0),  # -0.1 u^2 per step (|u| <= 1, 999 steps), +100 at the flag
    "Acrobot-v1": (-500.0, 0.0),  # -1 per step, 500 steps
    "Pendulum-v1": (-3255.0, 0.0),  # at worst -(pi^2 + 0.1*8^2 + 0.001*2^2) = -16.27 per step, 200 steps
    "FrozenLake-v1": (0.0, 1.0),  # 1 at the goal
    "FrozenLake8x8-v1": (0.0, 1.0),
    "CliffWalking-v1": (-20000.0, 0.0),  # -1 per step, -100 for the cliff, no step limit but ours
    "Taxi-v3": (-2000.0, 20.0),  # -1 per step, -10 for an illegal pickup, +20 for a delivery; 200 steps
    "Blackjack-v1": (-1.0, 1.0),  # lose, draw, win (no natural bonus by default)
    # PettingZoo classic two-player games, per seat: lose -1, draw 0, win +1.
    "chess_v6": (-1.0, 1.0),
    "connect_four_v3": (-1.0, 1.0),
    "tictactoe_v3": (-1.0, 1.0),
    "go_v5": (-1.0, 1.0),
}


def known_range(env_id: str | None) -> tuple[float, float] | None:
    """The table's range for ``env_id`` (a Gymnasium id or PettingZoo name), if it has one."""
    if not env_id:
        return None
    return KNOWN_RANGES.get(env_id.split(":")[-1])
