"""Environments written for the tests."""

from __future__ import annotations

import os
import signal
import time

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from openenv_gym.fields import FieldsEnv, FieldsObservation


class CompositeEnv(gym.Env):
    """An env whose spaces use Dict, Tuple, Text, Sequence, MultiDiscrete and MultiBinary.

    Deterministic given the seed, with episodes of 12 to 20 steps, so local and
    remote copies can be compared step by step.
    """

    metadata = {"render_modes": ["ansi", "rgb_array"], "render_fps": 4}

    def __init__(self, render_mode: str | None = None) -> None:
        self.render_mode = render_mode
        self.observation_space = spaces.Dict(
            {
                "position": spaces.Box(-10.0, 10.0, shape=(2,), dtype=np.float32),
                "grid": spaces.MultiBinary((3, 3)),
                "levels": spaces.MultiDiscrete([4, 6, 8]),
                "status": spaces.Tuple((spaces.Discrete(3, start=-1), spaces.Text(12, charset="abcdefgh "))),
                "trail": spaces.Sequence(spaces.Discrete(5)),
            }
        )
        self.action_space = spaces.Dict(
            {
                "move": spaces.Box(-1.0, 1.0, shape=(2,), dtype=np.float32),
                "toggle": spaces.MultiBinary(3),
                "choice": spaces.Tuple((spaces.Discrete(4), spaces.MultiDiscrete([2, 3]))),
                "word": spaces.Text(6, charset="abcdefgh"),
            }
        )
        self._position = np.zeros(2, dtype=np.float32)
        self._steps = 0
        self._length = 12

    def _obs(self) -> dict:
        rng = self.np_random
        return {
            "position": self._position.copy(),
            "grid": rng.integers(0, 2, size=(3, 3), dtype=np.int8),
            "levels": rng.integers(0, [4, 6, 8]).astype(np.int64),
            "status": (int(rng.integers(-1, 2)), "".join(rng.choice(list("abcdefgh "), size=5))),
            "trail": tuple(int(x) for x in rng.integers(0, 5, size=self._steps % 4)),
        }

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self._position = self.np_random.uniform(-1, 1, size=2).astype(np.float32)
        self._steps = 0
        self._length = int(self.np_random.integers(12, 21))
        if options and "length" in options:
            self._length = int(options["length"])
        return self._obs(), {"length": self._length, "options": dict(options or {})}

    def step(self, action):
        self._steps += 1
        self._position = np.clip(self._position + action["move"], -10, 10).astype(np.float32)
        reward = float(np.sum(action["toggle"])) - 0.1 * len(action["word"]) + action["choice"][0]
        terminated = bool(np.abs(self._position).max() >= 9.5)
        truncated = self._steps >= self._length
        info = {"steps": self._steps, "mask": np.array([1, 0, 1], dtype=np.int8), "score": np.float32(reward)}
        return self._obs(), reward, terminated, truncated, info

    def render(self):
        if self.render_mode == "ansi":
            return f"position={self._position.round(2).tolist()} step={self._steps}\n"
        if self.render_mode == "rgb_array":
            frame = np.zeros((8, 8, 3), dtype=np.uint8)
            frame[..., 0] = self._steps
            return frame
        return None


class SlowEnv(gym.Env):
    """CartPole-like spaces; every step sleeps ``delay`` seconds."""

    def __init__(self, delay: float = 0.5) -> None:
        self.delay = delay
        self.observation_space = spaces.Box(-1, 1, shape=(1,), dtype=np.float32)
        self.action_space = spaces.Discrete(2)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        return np.zeros(1, np.float32), {}

    def step(self, action):
        time.sleep(self.delay)
        return np.zeros(1, np.float32), 0.0, False, False, {}


class SlowClosingEnv(SlowEnv):
    """A :class:`SlowEnv` whose ``close`` takes ``close_delay`` seconds (a simulator
    saving its state, a subprocess winding down)."""

    def __init__(self, delay: float = 0.0, close_delay: float = 0.3) -> None:
        super().__init__(delay)
        self.close_delay = close_delay

    def close(self) -> None:
        time.sleep(self.close_delay)


class FaultyEnv(gym.Env):
    """Raises in ``step`` on action 1 and returns an observation outside its space on 2."""

    def __init__(self) -> None:
        self.observation_space = spaces.Box(0, 1, shape=(2,), dtype=np.float32)
        self.action_space = spaces.Discrete(3)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        return np.zeros(2, np.float32), {}

    def step(self, action):
        if action == 1:
            raise RuntimeError("the simulator exploded")
        if action == 2:
            return np.zeros(5, np.float32), 0.0, False, False, {}
        return np.zeros(2, np.float32), 1.0, False, False, {}


def broken_factory() -> gym.Env:
    raise OSError("no licence for the simulator")


class HangingEnv(gym.Env):
    """Fast for ``fast_steps`` steps, then a step that sleeps for an hour."""

    def __init__(self, fast_steps: int = 40) -> None:
        self.fast_steps = fast_steps
        self.observation_space = spaces.Box(-1, 1, shape=(1,), dtype=np.float32)
        self.action_space = spaces.Discrete(2)
        self._steps = 0

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        return np.zeros(1, np.float32), {}

    def step(self, action):
        self._steps += 1
        if self._steps > self.fast_steps:
            time.sleep(3600)
        return np.zeros(1, np.float32), 0.0, False, False, {}


class CrashingEnv(gym.Env):
    """Aborts its process (SIGABRT, as native code failing an assertion would) on step
    ``crash_at``."""

    def __init__(self, crash_at: int = 3) -> None:
        self.crash_at = crash_at
        self.observation_space = spaces.Box(-1, 1, shape=(1,), dtype=np.float32)
        self.action_space = spaces.Discrete(2)
        self._steps = 0

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        return np.zeros(1, np.float32), {}

    def step(self, action):
        self._steps += 1
        if self._steps >= self.crash_at:
            os.abort()
        return np.full(1, 0.5, np.float32), 1.0, False, False, {"steps": self._steps}


class SpinningEnv(SlowEnv):
    """Steps that burn CPU without returning, for ``delay`` seconds (a native loop that
    never ends; the bound only keeps a test that leaked one from spinning for ever).
    A ``stubborn`` one ignores SIGTERM, as an env with signal handlers of its own may."""

    def __init__(self, delay: float = 600.0, stubborn: bool = False) -> None:
        super().__init__(delay)
        if stubborn:
            signal.signal(signal.SIGTERM, signal.SIG_IGN)

    def step(self, action):
        deadline = time.monotonic() + self.delay
        while time.monotonic() < deadline:
            pass
        return np.zeros(1, np.float32), 0.0, False, False, {}


class GrowingEnv(gym.Env):
    """Action 1 allocates ``megabytes`` MiB more and keeps it (an env that leaks); action 0
    is an ordinary step."""

    def __init__(self, megabytes: int = 1024) -> None:
        self.megabytes = megabytes
        self.observation_space = spaces.Box(-1, 1, shape=(1,), dtype=np.float32)
        self.action_space = spaces.Discrete(2)
        self._kept: list[np.ndarray] = []

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        return np.zeros(1, np.float32), {}

    def step(self, action):
        if action == 1:
            self._kept.append(np.ones(self.megabytes << 20, dtype=np.uint8))
        return np.zeros(1, np.float32), 1.0, False, False, {"kept_mb": len(self._kept) * self.megabytes}


class PixelsEnv(gym.Env):
    """210x160x3 uint8 frames of seeded noise (an Atari screen, 100 KB), a Discrete(4)
    action, 50-step episodes: every byte a copy gone wrong would show."""

    def __init__(self) -> None:
        self.observation_space = spaces.Box(0, 255, shape=(210, 160, 3), dtype=np.uint8)
        self.action_space = spaces.Discrete(4)
        self._t = 0

    def _frame(self) -> np.ndarray:
        return self.np_random.integers(0, 256, size=(210, 160, 3), dtype=np.uint8)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self._t = 0
        return self._frame(), {}

    def step(self, action):
        self._t += 1
        return self._frame(), float(action), False, self._t >= 50, {}


class GraphEnv(gym.Env):
    """Graph observations (one of Gymnasium's testing spaces), episodes of
    ``length`` steps: a ``final_obs`` of same-step autoreset is a ``GraphInstance``."""

    def __init__(self, length: int = 2) -> None:
        self.observation_space = spaces.Graph(spaces.Box(-1.0, 1.0, shape=(2,), dtype=np.float32), spaces.Discrete(3))
        self.action_space = spaces.Discrete(2)
        self._length = length
        self._steps = 0

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self._steps = 0
        return self.observation_space.sample(), {}

    def step(self, action):
        self._steps += 1
        return self.observation_space.sample(), 1.0, self._steps >= self._length, False, {}


class NumpyServedJaxEnv(gym.Env):
    """Says it is a jax env (``metadata["jax"]``) as Gymnasium's jax envs do;
    its server sends numpy arrays all the same."""

    metadata = {"render_modes": [], "jax": True}

    def __init__(self) -> None:
        self.observation_space = spaces.Box(-1.0, 1.0, shape=(2,), dtype=np.float32)
        self.action_space = spaces.Discrete(2)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        return np.zeros(2, dtype=np.float32), {}

    def step(self, action):
        return np.zeros(2, dtype=np.float32), 0.0, False, False, {}


class Counter(FieldsEnv):
    """A FieldsEnv whose reset takes OpenEnv's injected_state itself."""

    name = "counter_env"
    action_schema = {"type": "object", "properties": {"add": {"type": "integer"}}, "required": ["add"]}
    observation_schema = {"type": "object", "properties": {"count": {"type": "integer"}}}
    state_schema = {"type": "object"}

    def reset(self, *, seed=None, episode_id=None, injected_state=None):
        self.count = int(injected_state or 0)
        return FieldsObservation({"count": self.count})

    def step(self, action):
        self.count += action["add"]
        return FieldsObservation({"count": self.count}, reward=0.0)

    def state(self):
        return {"episode_id": None, "step_count": 0}
