"""Step-for-step comparison of two vector envs, and of the values they return."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
from gymnasium.vector import AutoresetMode


def assert_same(a, b, path="value"):
    """Exact equality of values, dtypes and container types (NaN equals NaN).

    Dict key order is not compared: a Dict observation decoded from the wire has
    its space's key order, the env's own dict may not (both are the same value)."""
    if isinstance(b, dict):
        assert isinstance(a, dict) and set(a) == set(b), f"{path}: keys {list(a)} != {list(b)}"
        for key in b:
            assert_same(a[key], b[key], f"{path}[{key!r}]")
    elif isinstance(b, np.ndarray):
        assert isinstance(a, np.ndarray), f"{path}: {type(a)} is not an ndarray"
        assert a.dtype == b.dtype and a.shape == b.shape, f"{path}: {a.dtype}{a.shape} != {b.dtype}{b.shape}"
        if b.dtype == object:
            for i, (x, y) in enumerate(zip(a, b)):
                assert_same(x, y, f"{path}[{i}]")
        else:
            assert np.array_equal(a, b, equal_nan=b.dtype.kind in "fc"), f"{path}: {a} != {b}"
    elif isinstance(b, (tuple, list)):
        assert type(a) is type(b) and len(a) == len(b), f"{path}: {a!r} != {b!r}"
        for i, (x, y) in enumerate(zip(a, b)):
            assert_same(x, y, f"{path}[{i}]")
    else:
        assert a == b and type(a) is type(b), f"{path}: {a!r} ({type(a)}) != {b!r} ({type(b)})"


def run_parity(envs: gym.vector.VectorEnv, ref: gym.vector.VectorEnv, mode: AutoresetMode, steps: int) -> int:
    """Step both with the same actions; return the number of episode ends seen."""
    ref.action_space.seed(1)
    assert_same(envs.reset(seed=7), ref.reset(seed=7), "reset")
    ends = 0
    for t in range(steps):
        actions = ref.action_space.sample()
        got, want = envs.step(actions), ref.step(actions)
        assert_same(got, want, f"step {t}")
        done = want[2] | want[3]
        ends += int(done.sum())
        if mode is AutoresetMode.DISABLED and done.any():
            assert_same(envs.reset(options={"reset_mask": done}), ref.reset(options={"reset_mask": done}), f"masked reset {t}")
    return ends
