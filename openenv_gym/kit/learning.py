"""Small learners for the learnability probe of ``openenv-gym check``.

RFC 008 asks whether an env gives "a learning signal within hundreds of steps".
The probe answers with the simplest learner that fits the spaces, trained over
the wire for a bounded number of episodes and seconds:

* :class:`TabularQ`: Q-learning over hashed observations, for ``Discrete`` actions
  and a small observation space (``Discrete``, or a small PettingZoo board with its mask);
* :class:`HillClimber`: random search and hill climbing of a linear policy, for ``Box``
  observations and ``Discrete`` or ``Box`` actions.

Each returns its learning curve: the mean return of its greedy policy over the
seeds the canaries played (so that it compares with their floor, a mean over the
same seeds), after each round of training; it trains on other seeds. :func:`learn` trains one on the env a
package serves, in a process of its own and in process with the env: thousands of
steps a second, where the wire would make the probe wait on latency rather than
on the reward.
"""

from __future__ import annotations

import json
import math
import os
import sys
import time
from collections import defaultdict
from typing import Any, Protocol

import gymnasium as gym
import numpy as np

from ..server.multiagent import action_mask

__all__ = ["Learner", "TabularQ", "HillClimber", "learner_for", "learn"]

#: The largest board (flattened observation) tabular Q-learning is tried on: Connect Four's
#: is 91 numbers, chess's 11,776, where a table never sees a state twice.
MAX_TABULAR_ELEMENTS = 1000
#: Steps after which a training or evaluation episode is cut.
MAX_STEPS = 1000
#: Training episodes are seeded from here on, away from the evaluation seeds (the canaries').
TRAIN_SEEDS = 1_000_000
#: Evaluations of the greedy policy over one training run of tabular Q-learning.
EVALUATIONS = 20
#: Seeds (the first evaluation seeds) a hill-climbing candidate is screened on before it is
#: scored on all of them.
SCREEN_SEEDS = 4


class Learner(Protocol):
    name: str

    def train(
        self, env: gym.Env, *, goal: float, episodes: int, budget_s: float, eval_seeds: list[int],
        max_steps: int = MAX_STEPS,
    ) -> list[float]: ...


def learner_for(observation_space: gym.Space, action_space: gym.Space, observation: Any = None) -> Learner | None:
    """The bundled learner for these spaces, if there is one: tabular Q-learning for a
    ``Discrete`` action and an observation whose numbers (text and lists of varying length
    aside: a status message, a history) are whole and few enough to be a table's key (a
    ``Discrete``; a board, a grid position, a one-hot state: integer spaces, or a float space
    whose ``observation``, when given, holds whole numbers only); else a linear policy's
    random search for a ``Box`` observation."""
    parts = _numeric_parts(observation_space, observation)
    if isinstance(action_space, gym.spaces.Discrete) and parts:
        size = sum(gym.spaces.flatdim(space) for space, _ in parts)
        if size <= MAX_TABULAR_ELEMENTS and all(_whole_numbers(space, value) for space, value in parts):
            return TabularQ(action_space, observation_space)
    if isinstance(observation_space, gym.spaces.Box) and isinstance(
        action_space, (gym.spaces.Discrete, gym.spaces.Box)
    ):
        return HillClimber(observation_space, action_space)
    return None


def _numeric_parts(space: gym.Space, observation: Any) -> list[tuple[gym.Space, Any]] | None:
    """The numeric subspaces of ``space`` with their part of ``observation`` (text and lists of
    varying length left out), or ``None`` when a part is neither (a graph, a tuple)."""
    if isinstance(space, gym.spaces.Dict):
        value = observation if isinstance(observation, dict) else {}
        found: list[tuple[gym.Space, Any]] = []
        for key, sub in space.spaces.items():
            parts = _numeric_parts(sub, value.get(key))
            if parts is None:
                return None
            found.extend(parts)
        return found
    if isinstance(space, (gym.spaces.Text, gym.spaces.Sequence)):
        return []  # a status message, a history: not part of a table's key
    if isinstance(space, (gym.spaces.Discrete, gym.spaces.MultiDiscrete, gym.spaces.MultiBinary, gym.spaces.Box)):
        return [(space, observation)]
    return None


def _whole_numbers(space: gym.Space, observation: Any) -> bool:
    """Whether every value of ``space`` (as far as ``observation`` shows, for a float ``Box``)
    is a whole number."""
    if isinstance(space, gym.spaces.Box) and space.dtype.kind == "f":
        if observation is None:
            return False
        values = np.asarray(observation, dtype=np.float64)
        return bool(np.all(np.isfinite(values)) and np.all(values == np.round(values)))
    return True


def _key(space: gym.Space | None, obs: Any) -> bytes:
    """A table's key for ``obs``, a value of ``space``: its numbers (text and lists of varying
    length aside), in a fixed order."""
    if isinstance(obs, dict):
        parts = space.spaces if isinstance(space, gym.spaces.Dict) else {}
        return b"".join(_key(parts.get(k), obs[k]) for k in sorted(obs)
                        if not isinstance(parts.get(k), (gym.spaces.Text, gym.spaces.Sequence)))
    return np.asarray(obs).tobytes()


def _legal(space: gym.spaces.Discrete, mask: np.ndarray | None) -> np.ndarray:
    start, n = int(space.start), int(space.n)
    if mask is None:
        return np.arange(start, start + n)
    legal = start + np.flatnonzero(mask)
    return legal if legal.size else np.arange(start, start + 1)


class TabularQ:
    """Epsilon-greedy Q-learning (learning rate 0.5, discount 0.99, epsilon from 1 down to 0.05)."""

    name = "tabular Q-learning"

    def __init__(self, action_space: gym.spaces.Discrete, observation_space: gym.Space | None = None,
                 seed: int = 0) -> None:
        self.space = action_space
        self.observation_space = observation_space
        self.rng = np.random.default_rng(seed)
        self.q: defaultdict[bytes, np.ndarray] = defaultdict(lambda: np.zeros(int(action_space.n)))

    def act(self, obs: Any, mask: np.ndarray | None, epsilon: float) -> int:
        legal = _legal(self.space, mask)
        if self.rng.random() < epsilon:
            return int(self.rng.choice(legal))
        values = self.q[_key(self.observation_space, obs)][legal - int(self.space.start)]
        best = legal[values == values.max()]
        return int(self.rng.choice(best))

    def episode(self, env: gym.Env, *, seed: int | None, epsilon: float, learn: bool,
                max_steps: int = MAX_STEPS) -> float:
        obs, info = env.reset(seed=seed)
        total = 0.0
        for _ in range(max_steps):
            action = self.act(obs, action_mask(obs, info), epsilon)
            next_obs, reward, terminated, truncated, info = env.step(action)
            total += float(reward)
            if learn:
                row, index = self.q[_key(self.observation_space, obs)], action - int(self.space.start)
                future = 0.0 if terminated else float(self.q[_key(self.observation_space, next_obs)].max())
                row[index] += 0.5 * (float(reward) + 0.99 * future - row[index])
            obs = next_obs
            if terminated or truncated:
                break
        return total

    def train(
        self, env: gym.Env, *, goal: float, episodes: int, budget_s: float, eval_seeds: list[int],
        max_steps: int = MAX_STEPS,
    ) -> list[float]:
        deadline = time.monotonic() + budget_s
        every = max(10, episodes // EVALUATIONS)
        curve: list[float] = []
        for done in range(1, episodes + 1):
            epsilon = max(0.05, 1.0 - done / (0.6 * episodes))
            self.episode(env, seed=TRAIN_SEEDS + done, epsilon=epsilon, learn=True, max_steps=max_steps)
            out_of_time = time.monotonic() > deadline
            if done % every == 0 or done == episodes or out_of_time:
                curve.append(float(np.mean([self.episode(env, seed=seed, epsilon=0.0, learn=False,
                                                         max_steps=max_steps) for seed in eval_seeds])))
                if curve[-1] >= goal or out_of_time:
                    break
        return curve


class HillClimber:
    """Hill climbing of a linear policy: perturb the best weights, keep what scores no lower."""

    name = "linear-policy random search"

    def __init__(self, observation_space: gym.spaces.Box, action_space: gym.Space, seed: int = 0) -> None:
        self.action_space = action_space
        self.rng = np.random.default_rng(seed)
        if isinstance(action_space, gym.spaces.Discrete):
            outputs = int(action_space.n)
        else:
            outputs = int(np.prod(action_space.shape or ()))
        self.shape = (outputs, int(np.prod(observation_space.shape or ())) + 1)

    def act(self, weights: np.ndarray, obs: Any) -> Any:
        features = np.append(np.asarray(obs, dtype=np.float64).ravel(), 1.0)
        out = weights @ features
        space = self.action_space
        if isinstance(space, gym.spaces.Discrete):
            return int(space.start) + int(np.argmax(out))
        assert isinstance(space, gym.spaces.Box)
        low, high = space.low.astype(np.float64), space.high.astype(np.float64)
        scaled = low + (np.tanh(out).reshape(space.shape) + 1) / 2 * (high - low)
        return scaled.astype(space.dtype)

    def evaluate(self, env: gym.Env, weights: np.ndarray, seeds: list[int], max_steps: int = MAX_STEPS) -> float:
        """The mean return of the policy ``weights`` over ``seeds``."""
        returns = []
        for seed in seeds:
            obs, _ = env.reset(seed=seed)
            total = 0.0
            for _ in range(max_steps):
                obs, reward, terminated, truncated, _ = env.step(self.act(weights, obs))
                total += float(reward)
                if terminated or truncated:
                    break
            returns.append(total)
        return float(np.mean(returns))

    def train(
        self, env: gym.Env, *, goal: float, episodes: int, budget_s: float, eval_seeds: list[int],
        max_steps: int = MAX_STEPS,
    ) -> list[float]:
        deadline = time.monotonic() + budget_s
        # A candidate is screened on a few seeds; only one that screens as well as the best is
        # scored on every seed, which is what the curve shows and the goal is compared with.
        screen = eval_seeds[:SCREEN_SEEDS]
        best = self.rng.normal(size=self.shape)
        best_screen = self.evaluate(env, best, screen, max_steps)
        best_return = self.evaluate(env, best, eval_seeds, max_steps)
        curve = [best_return]
        scale = 1.0
        while len(curve) < episodes and best_return < goal and time.monotonic() < deadline:
            # Half the candidates are fresh draws (random search), half perturb the best (hill climbing).
            if self.rng.random() < 0.5:
                candidate = self.rng.normal(size=self.shape)
            else:
                candidate = best + scale * self.rng.normal(size=self.shape)
            screened = self.evaluate(env, candidate, screen, max_steps)
            total = self.evaluate(env, candidate, eval_seeds, max_steps) if screened >= best_screen else -math.inf
            # Adaptive noise: search closer after a gain, farther (out of a local optimum) after a loss.
            if total >= best_return:
                best, best_screen, best_return = candidate, screened, total
                scale = max(0.01, scale / 2)
            else:
                scale = min(2.0, scale * 2)
            curve.append(best_return)
        return curve


def learn(
    target: str | os.PathLike[str], *, goal: float, episodes: int, budget_s: float, eval_seeds: list[int]
) -> dict[str, Any]:
    """Train the bundled learner on ``target``'s env until its mean return over ``eval_seeds``
    reaches ``goal``.

    Returns ``{"learner": name or None, "curve": [...], "spaces": "..."}``.
    """
    from .probe import run_in_child

    request = {"target": os.fspath(target), "goal": goal, "episodes": episodes, "budget_s": budget_s,
               "eval_seeds": eval_seeds}
    return run_in_child("openenv_gym.kit.learning", request, timeout=budget_s + 120, what=f"training on {target}")


def main() -> None:
    from .target import load_source

    request = json.loads(sys.argv[1])
    source = load_source(request["target"])
    learner = learner_for(source.observation_space, source.action_space)
    spaces = f"{source.observation_space} -> {source.action_space}"
    curve: list[float] = []
    if learner is not None:
        env = source.make()
        try:
            curve = learner.train(env, goal=request["goal"], episodes=request["episodes"],
                                  budget_s=request["budget_s"], eval_seeds=request["eval_seeds"])
        finally:
            env.close()
    print(json.dumps({"learner": None if learner is None else learner.name, "curve": curve, "spaces": spaces}))


if __name__ == "__main__":
    main()
