"""Envs and checks for the pool's tests.

:class:`CountingEnv` makes every step visible: its observation is the number of
steps taken in the episode. A vector env over it must show, for every env and
every step, exactly one of: the count going up by one (a step), back to 0 (a
reset, when one was due), or unchanged with ``truncated`` and the reconnect
flag (the step a lost server took with it). :class:`StepLedger` checks that, so
a step lost or applied twice anywhere shows up as a wrong count.
"""

from __future__ import annotations

import time

import gymnasium as gym
import numpy as np

from openenv_gym.client.retry import RECONNECTED

FLAG = f"_{RECONNECTED}"


class CountingEnv(gym.Env):
    """Observation: steps taken in this episode. The episode ends after
    ``10 + seed % 10`` steps (15 when reset without a seed)."""

    def __init__(self) -> None:
        self.observation_space = gym.spaces.Box(0, 1000, shape=(1,), dtype=np.int64)
        self.action_space = gym.spaces.Discrete(2)
        self.length = 15
        self.count = 0

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        if seed is not None:
            self.length = 10 + seed % 10
        self.count = 0
        return np.array([0]), {}

    def step(self, action):
        self.count += 1
        return np.array([self.count]), 1.0, self.count >= self.length, False, {}


class SlowStartEnv(CountingEnv):
    """A :class:`CountingEnv` that takes ``start_delay`` seconds to build (a large
    simulator loading its assets): a server of it is that long starting."""

    def __init__(self, start_delay: float = 10.0) -> None:
        time.sleep(start_delay)
        super().__init__()


class StepLedger:
    """Checks a NEXT_STEP vector env of :class:`CountingEnv` step by step."""

    def __init__(self, first_obs: np.ndarray) -> None:
        self.obs = first_obs[:, 0].copy()
        self.due = np.zeros(len(first_obs), dtype=np.bool_)  # a reset comes at the next step
        self.steps = 0  # env steps the servers took
        self.lost = np.zeros(len(first_obs), dtype=np.int64)  # episodes a lost server ended, per env

    def check(self, obs: np.ndarray, terminated: np.ndarray, truncated: np.ndarray, infos: dict) -> None:
        count = obs[:, 0]
        flagged = infos.get(FLAG, np.zeros(len(count), dtype=np.bool_))
        lost = flagged & truncated
        for i in range(len(count)):
            if lost[i]:  # the step the lost connection took: nothing applied, the last count
                assert count[i] == self.obs[i] and not terminated[i], (i, count[i], self.obs[i])
            elif self.due[i]:  # autoreset (or restart on a new connection)
                assert count[i] == 0 and not (terminated[i] or truncated[i]), (i, count[i])
            else:  # one step, exactly
                assert not flagged[i], i
                assert count[i] == self.obs[i] + 1, (i, count[i], self.obs[i])
                self.steps += 1
        self.lost += lost
        self.due = terminated | truncated
        self.obs = count.copy()
