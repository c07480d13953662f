"""A combination lock that passes every check of ``openenv-gym check``, and variants of it,
each with one planted defect that one check must catch.

The lock: the observation is the step number, the action one of 4 digits; each
right digit of :data:`KEY` earns 1, the first wrong one ends the episode, and the
whole key (6 digits, never the same twice in a row) earns 6.
"""

from __future__ import annotations

import random
from pathlib import Path

import gymnasium as gym

KEY = (1, 3, 0, 2, 1, 3)


def oracle(obs, info, mask):
    """The kit's oracle hook: the right digit of this step."""
    return KEY[min(int(obs), len(KEY) - 1)]


class Lock(gym.Env):
    def __init__(self) -> None:
        self.observation_space = gym.spaces.Discrete(len(KEY) + 1)
        self.action_space = gym.spaces.Discrete(4)
        self.t = 0

    def info(self) -> dict:
        return {}

    def right(self, action: int) -> bool:
        return int(action) == KEY[self.t]

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.t = 0
        return self.t, self.info()

    def step(self, action):
        if not self.right(action):
            return self.t, 0.0, True, False, self.info()
        self.t += 1
        return self.t, 1.0, self.t == len(KEY), False, self.info()


class Nondeterministic(Lock):
    """Draws from the global, unseeded ``random``: episodes differ under one seed."""

    def info(self) -> dict:
        return {"temperature": random.random()}


class Leaky(Lock):
    """Hands the agent the right digit in ``info``."""

    def info(self) -> dict:
        return {"hint": KEY[min(self.t, len(KEY) - 1)]}


class Backdoor(Lock):
    """Accepts digit 2 at every step: repeating one action opens the lock."""

    def right(self, action: int) -> bool:
        return int(action) == 2 or super().right(action)


class Bleeding(Lock):
    """Keeps the step number on the class: every session moves every other one."""

    shared_t = 0

    @property  # type: ignore[override]
    def t(self) -> int:
        return Bleeding.shared_t

    @t.setter
    def t(self, value: int) -> None:
        Bleeding.shared_t = value


class Overflow(Lock):
    """Pays -1000 for the last digit on the fifth step: a bound of the action space, in a state no
    trivial policy reaches, indexes past a table."""

    def step(self, action):
        if self.t == 4 and int(action) == self.action_space.n - 1:
            return self.t, -1000.0, True, False, self.info()
        return super().step(action)


class Farm(Lock):
    """Pays 2 for the first right digit, 1 for the others: resetting after it earns more per step
    than opening the lock."""

    def step(self, action):
        obs, reward, terminated, truncated, info = super().step(action)
        return obs, 2.0 * reward if self.t == 1 else reward, terminated, truncated, info


class Tipped(Lock):
    """Tips a wrong first digit 0.5 on a seeded coin that only ``info`` shows."""

    def reset(self, *, seed=None, options=None):
        obs, _ = super().reset(seed=seed, options=options)
        self.tipped = bool(self.np_random.integers(2))
        return obs, self.info()

    def info(self) -> dict:
        return {"tipped": getattr(self, "tipped", False)}

    def step(self, action):
        obs, reward, terminated, truncated, info = super().step(action)
        if self.t == 0 and terminated and self.tipped:
            reward = 0.5
        return obs, reward, terminated, truncated, info


class Deaf(Lock):
    """Pays by the clock, whatever the agent does: 6 steps, 1 on every second one."""

    def step(self, action):
        self.t += 1
        return self.t, float(self.t % 2 == 0), self.t == len(KEY), False, {}


def clipping_app():
    """A stock OpenEnv server (``openenv``'s ``create_app``) whose schema promises an increment of
    1 to 5 that its model does not enforce: the env clips any increment into the range and pays
    for it, where an out-of-space action must be refused."""
    from openenv.core.env_server import create_app
    from pydantic import Field

    from tests import stock_server

    class ClippingAction(stock_server.CounterAction):
        increment: int = Field(json_schema_extra={"minimum": 1, "maximum": 5})

    class Clipping(stock_server.CounterEnvironment):
        def step(self, action, timeout_s=None, **kwargs):
            action.increment = min(max(action.increment, 1), 5)
            return super().step(action)

    return create_app(Clipping, ClippingAction, stock_server.CounterObservation, env_name="clipping",
                      max_concurrent_envs=8, state_cls=stock_server.CounterState)


def package(root: Path, env: str) -> Path:
    """A package directory serving ``tests.kit.planted:<env>`` as ``wrappers/`` packages do."""
    (root / "server").mkdir(parents=True)
    (root / "server" / "__init__.py").write_text("")
    (root / "server" / "app.py").write_text(
        f"import openenv_gym\nfrom tests.kit.planted import {env}\napp = openenv_gym.create_app({env})\n"
    )
    (root / "Dockerfile").write_text("FROM python:3.11-slim\n")
    (root / "openenv.yaml").write_text(f"spec_version: 1\nname: {env.lower()}\napp: server.app:app\nport: 8000\n")
    return root
