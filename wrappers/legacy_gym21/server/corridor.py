"""A Gym 0.21-style env, written against the old API on purpose.

``seed()`` sets the randomness, ``reset()`` returns the observation alone and
``step()`` returns ``(obs, reward, done, info)`` with gym's
``TimeLimit.truncated`` convention. openenv-gym serves it unchanged.
"""

from __future__ import annotations

import numpy as np
from gymnasium import spaces


class CorridorEnv:
    """Walk right along a corridor of ``length`` cells; the goal is the last cell."""

    metadata = {"render.modes": ["ansi"]}

    def __init__(self, length: int = 10, max_steps: int = 100) -> None:
        self.length = length
        self.max_steps = max_steps
        self.observation_space = spaces.Discrete(length + 1)
        self.action_space = spaces.Discrete(2)  # 0: left, 1: right
        self.seed()

    def seed(self, seed=None):
        self.rng = np.random.default_rng(seed)
        return [seed]

    def reset(self):
        self.position = int(self.rng.integers(0, self.length // 2))
        self.steps = 0
        return self.position

    def step(self, action):
        self.position = min(max(self.position + (1 if action == 1 else -1), 0), self.length)
        self.steps += 1
        at_goal = self.position == self.length
        out_of_time = self.steps >= self.max_steps and not at_goal
        info = {"TimeLimit.truncated": True} if out_of_time else {}
        return self.position, (1.0 if at_goal else -0.01), at_goal or out_of_time, info

    def render(self, mode="ansi"):
        return "." * self.position + "@" + "." * (self.length - self.position)

    def close(self):
        pass
