"""The policies a validation kit plays: canaries that must stay at the floor, and oracles
that must reach the top of the declared reward range.

A policy is ``policy(observation, info, mask) -> action``, where ``mask`` is the
agent's action mask by PettingZoo's conventions (``None`` without one). Canaries
(:func:`canaries`) need nothing but the action space:

* ``constant``: the largest action every step (``Discrete``: its last action,
  ``Box``: its upper bound), legal or not: what an agent stuck on one output does;
* ``first-legal``: the first legal action every step (``Box``: the lower bound);
* ``random``: uniform over the legal actions, seeded.

Oracles come from :data:`CONTROLLERS` (hand-written controllers for Gymnasium's
classic-control tasks), from a user hook (any policy), or from :func:`search`, an
exact-foresight search for deterministic envs with a ``Discrete`` action space
(FrozenLake without slip, a PettingZoo seat against the server's seeded opponent).
"""

from __future__ import annotations

import copy
import math
import time
from collections.abc import Callable
from typing import Any

import gymnasium as gym
import numpy as np

from ..server.multiagent import action_mask
from ..spaces.stock import LEGAL_ACTIONS

__all__ = ["Policy", "canaries", "controller_for", "search", "CONTROLLERS", "play"]

#: ``policy(observation, info, mask) -> action``.
Policy = Callable[[Any, dict, "np.ndarray | None"], Any]


def _legal(space: gym.Space, mask: np.ndarray | None) -> list[int]:
    start, n = int(space.start), int(space.n)  # type: ignore[attr-defined]
    if mask is None:
        return list(range(start, start + n))
    return [start + int(i) for i in np.flatnonzero(mask)] or [start]


def _listed(info: dict) -> list[Any] | None:
    """The legal actions ``info`` lists (a stock server's legal moves), if it lists any."""
    listed = info.get(LEGAL_ACTIONS) if isinstance(info, dict) else None
    return listed if isinstance(listed, list) and listed else None


def canaries(space: gym.Space, seed: int) -> dict[str, Policy]:
    """The three canary policies of ``space``, the random one seeded with ``seed``. Where
    ``info`` lists the legal actions of a non-``Discrete`` space (``info["legal_actions"]``,
    chess's moves), first-legal plays the first of them and random draws one."""
    if isinstance(space, gym.spaces.Discrete):
        last = int(space.start) + int(space.n) - 1
        constant: Policy = lambda obs, info, mask: last  # noqa: E731
        first: Policy = lambda obs, info, mask: _legal(space, mask)[0]  # noqa: E731
    elif isinstance(space, gym.spaces.Box):
        high, low = space.high.copy(), space.low.copy()
        constant = lambda obs, info, mask: high  # noqa: E731
        first = lambda obs, info, mask: low  # noqa: E731
    else:
        fixed = space.sample()
        constant = lambda obs, info, mask: fixed  # noqa: E731
        first = lambda obs, info, mask: (_listed(info) or [fixed])[0]  # noqa: E731
    sampler = copy.deepcopy(space)
    sampler.seed(seed)
    rng = np.random.default_rng(seed)

    def random(obs: Any, info: dict, mask: np.ndarray | None) -> Any:
        if mask is not None and isinstance(space, gym.spaces.Discrete):
            return sampler.sample(mask.astype(np.int8))
        listed = _listed(info)
        return listed[int(rng.integers(len(listed)))] if listed else sampler.sample()

    return {"constant": constant, "first-legal": first, "random": random}


# -- classic-control controllers -----------------------------------------------------------


def _cartpole(obs: Any, info: dict, mask: Any) -> int:
    """A PD controller on the pole angle, with a little cart feedback: holds 500 steps."""
    x, x_dot, theta, theta_dot = (float(v) for v in obs)
    return int(theta + 0.1 * theta_dot + 0.01 * x + 0.1 * x_dot > 0)


def _mountain_car(obs: Any, info: dict, mask: Any) -> int:
    """Push the way the car moves: pumps energy until it reaches the flag."""
    return 2 if float(obs[1]) >= 0 else 0


def _mountain_car_continuous(obs: Any, info: dict, mask: Any) -> np.ndarray:
    return np.array([1.0 if float(obs[1]) >= 0 else -1.0], dtype=np.float32)


def _acrobot(obs: Any, info: dict, mask: Any) -> int:
    """Torque along the second joint's velocity: pumps energy until the tip swings up."""
    return 2 if float(obs[5]) >= 0 else 0


def _pendulum(obs: Any, info: dict, mask: Any) -> np.ndarray:
    """Energy-shaping swing-up, then a PD controller near the top."""
    theta = math.atan2(float(obs[1]), float(obs[0]))
    theta_dot = float(obs[2])
    if abs(theta) < 0.6:
        torque = -(12.0 * theta + 2.5 * theta_dot)
    else:
        energy = 0.5 * theta_dot**2 + 15.0 * (math.cos(theta) - 1.0)  # 0 upright at rest
        torque = 2.0 * math.copysign(1.0, theta_dot or 1.0) if energy < 0 else -0.5 * theta_dot
    return np.array([max(-2.0, min(2.0, torque))], dtype=np.float32)


#: Oracle controllers of Gymnasium's classic-control tasks, by env name (id without version).
CONTROLLERS: dict[str, Policy] = {
    "CartPole": _cartpole,
    "MountainCar": _mountain_car,
    "MountainCarContinuous": _mountain_car_continuous,
    "Acrobot": _acrobot,
    "Pendulum": _pendulum,
}


def controller_for(env_id: str | None) -> Policy | None:
    """The bundled controller of the Gymnasium id ``env_id``, if there is one."""
    if not env_id:
        return None
    name = env_id.split(":")[-1].split("/")[-1].rsplit("-v", 1)[0]
    return CONTROLLERS.get(name)


# -- playing ---------------------------------------------------------------------------------


def play(env: gym.Env, policy: Policy, *, seed: int, max_steps: int) -> tuple[list[Any], list[float], bool]:
    """One episode of ``policy`` from ``reset(seed=seed)``: its actions, its rewards, and
    whether it ended by itself (``False``: cut after ``max_steps``)."""
    obs, info = env.reset(seed=seed)
    actions: list[Any] = []
    rewards: list[float] = []
    for _ in range(max_steps):
        action = policy(obs, info, action_mask(obs, info))
        obs, reward, terminated, truncated, info = env.step(action)
        actions.append(action)
        rewards.append(float(reward))
        if terminated or truncated:
            return actions, rewards, True
    return actions, rewards, False


def search(
    env: gym.Env, *, seed: int, goal: float, max_steps: int, budget_s: float, max_nodes: int = 20_000
) -> list[int] | None:
    """Actions reaching a return of at least ``goal`` from ``reset(seed=seed)``, or ``None``.

    A depth-first search with exact foresight: a node is reached again by
    replaying its actions from ``reset(seed=seed)``, so the env (opponents and
    all) must be deterministic given its seed, and its action space ``Discrete``.
    A node whose observation was already seen is not expanded again. Bounded by
    ``budget_s`` seconds and ``max_nodes`` expanded nodes.
    """
    if not isinstance(env.action_space, gym.spaces.Discrete):
        return None
    deadline = time.monotonic() + budget_s
    obs, info = env.reset(seed=seed)
    seen = {_key(env, obs)}
    # Each frame: actions to the node, return so far, its untried actions (first on top).
    first = list(reversed(_legal(env.action_space, action_mask(obs, info))))
    stack: list[tuple[list[int], float, list[int]]] = [([], 0.0, first)]
    for _ in range(max_nodes):
        if not stack or time.monotonic() > deadline:
            break
        path, total, untried = stack[-1]
        if not untried or len(path) >= max_steps:
            stack.pop()
            continue
        action = untried.pop()
        obs, reward, terminated, truncated, info = _replay(env, seed, [*path, action])
        if total + reward >= goal:
            return [*path, action]
        key = _key(env, obs)
        if not (terminated or truncated or key in seen):
            seen.add(key)
            legal = _legal(env.action_space, action_mask(obs, info))
            stack.append(([*path, action], total + reward, list(reversed(legal))))
    return None


def _replay(env: gym.Env, seed: int, actions: list[int]) -> tuple[Any, float, bool, bool, dict]:
    """The last step of ``actions`` played from ``reset(seed=seed)``."""
    env.reset(seed=seed)
    step: tuple[Any, float, bool, bool, dict] = (None, 0.0, False, False, {})
    for action in actions:
        obs, reward, terminated, truncated, info = env.step(action)
        step = (obs, float(reward), bool(terminated), bool(truncated), info)
    return step


def _key(env: gym.Env, obs: Any) -> bytes:
    return np.asarray(gym.spaces.flatten(env.observation_space, obs)).tobytes()
