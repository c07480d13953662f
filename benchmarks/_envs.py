"""Environments used only by the benchmarks.

``RandomImageEnv``: an Atari-sized observation without Atari: Box(0, 255,
(84, 84, 4), uint8) filled with fresh random pixels on every reset and step
(incompressible, the worst case for any compression), Discrete(4) actions,
episodes of exactly 1000 steps (``truncated`` on the last one), reward 1.0 per
step. A step costs what drawing 28,224 random bytes costs, 40-60 µs on the benchmark
machines (``python -m timeit -s "import numpy; r = numpy.random.default_rng()"
"r.bytes(28224)"``): for one env that is small beside a round trip, but eight of them
stepped in turn take 300-460 µs per batched step, which ``AsyncVectorEnv`` spreads over
the machine's cores and a server's ``SyncVectorEnv`` backend does not (see the
benchmarks' notes on the N=8 image row).

With ``render_mode="rgb_array"`` it renders 84x84 RGB noise (the web page's benchmark).

``RandomImageWorkEnv``: the same env's work (the same random bytes drawn at every reset and
step) with a 1-byte observation, its first pixel: served beside ``RandomImageEnv``, the
difference is what moving the image costs (``bench_payload.py``).

``SlowStep``: any env whose reset and step also sleep a few milliseconds, standing for the
latency of an env a language model acts in (``_envs:make_slow_frozen_lake``, for
``bench_async_rollouts.py``).

Served by openenv-gym as ``_envs:make_image_env`` (with this directory on
``PYTHONPATH``), and wrapped by ``_official_env.py`` for the official stack.
"""

from __future__ import annotations

import time
from typing import Any

import gymnasium as gym
import numpy as np

IMAGE_SHAPE = (84, 84, 4)
IMAGE_EPISODE_STEPS = 1000


class RandomImageEnv(gym.Env):
    """84x84x4 uint8 random-pixel observations, Discrete(4), 1000-step episodes."""

    metadata: dict[str, Any] = {"render_modes": ["rgb_array"]}

    def __init__(self, shape: tuple[int, int, int] = IMAGE_SHAPE,
                 episode_steps: int = IMAGE_EPISODE_STEPS, render_mode: str | None = None) -> None:
        self.render_mode = render_mode
        self.shape = tuple(int(n) for n in shape)
        self.episode_steps = int(episode_steps)
        self.observation_space = gym.spaces.Box(0, 255, self.shape, np.uint8)
        self.action_space = gym.spaces.Discrete(4)
        self._nbytes = int(np.prod(self.shape))
        self._t = 0
        self._last: np.ndarray | None = None

    def _frame(self) -> np.ndarray:
        # rng.bytes + frombuffer: ~3x cheaper than rng.integers for uint8 noise.
        self._last = np.frombuffer(self.np_random.bytes(self._nbytes), np.uint8).reshape(self.shape)
        return self._last

    def render(self) -> np.ndarray | None:
        """With ``render_mode="rgb_array"``: the observation's first three planes, an 84x84 RGB
        frame of noise (the worst case for the web page's PNG frames)."""
        if self.render_mode != "rgb_array" or self._last is None:
            return None
        return np.ascontiguousarray(self._last[:, :, :3])

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        super().reset(seed=seed)
        self._t = 0
        return self._frame(), {}

    def step(self, action: Any):
        self._t += 1
        truncated = self._t >= self.episode_steps
        return self._frame(), 1.0, False, truncated, {}


def make_image_env(**kwargs: Any) -> RandomImageEnv:
    """Factory for ``openenv-gym serve _envs:make_image_env``."""
    return RandomImageEnv(**kwargs)


class RandomImageWorkEnv(RandomImageEnv):
    """:class:`RandomImageEnv`'s work, drawing its frame at every reset and step, with an
    observation of one byte (the frame's first): its payload without the image."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.observation_space = gym.spaces.Box(0, 255, (1,), np.uint8)

    def _frame(self) -> np.ndarray:
        return super()._frame().reshape(-1)[:1].copy()  # the whole frame stays drawn, and rendered


def make_image_work_env(**kwargs: Any) -> RandomImageWorkEnv:
    """Factory for ``openenv-gym serve _envs:make_image_work_env``."""
    return RandomImageWorkEnv(**kwargs)


class SlowStep(gym.Wrapper):
    """An env whose ``step`` (and ``reset``) also sleeps ``step_ms`` milliseconds: the
    latency of an env an LLM acts in (a sandbox, a simulator, a remote API), which costs
    wall time but no CPU, so concurrent rollouts can overlap it."""

    def __init__(self, env: gym.Env, step_ms: float) -> None:
        super().__init__(env)
        self.delay = float(step_ms) / 1000.0

    def reset(self, **kwargs: Any):
        time.sleep(self.delay)
        return self.env.reset(**kwargs)

    def step(self, action: Any):
        time.sleep(self.delay)
        return self.env.step(action)


def make_slow_frozen_lake(step_ms: float = 10.0) -> gym.Env:
    """Factory for ``openenv-gym serve _envs:make_slow_frozen_lake``: FrozenLake 4x4
    without slipping, each reset and step ``step_ms`` ms long."""
    return SlowStep(gym.make("FrozenLake-v1", is_slippery=False), step_ms)
