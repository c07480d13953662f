"""Episodes played over the wire, as the checks record them, and the policies they play.

:func:`play` runs one episode of a policy on a session (a :class:`~openenv_gym.RemoteEnv`)
and gives a :class:`RecordedEpisode`: its rewards, a digest of everything the agent saw
(two episodes with one digest are the same episode: what ``runtime.episode_determinism``
compares) and each :class:`RecordedStep` as the agent saw it (what ``hacking.info_reward``
looks back over). A policy is ``policy(observation, info, mask) -> action``, as in
:mod:`~openenv_gym.kit.policies`: recorded actions (:func:`scripted`), one action repeated,
a random legal one.

    >>> import gymnasium as gym
    >>> env = gym.make("CartPole-v1")
    >>> episode = play(env, scripted(env.action_space, [0, 1, 0, 1]), seed=0, max_steps=4)
    >>> episode.total, episode.ended, [step.action for step in episode.steps]
    (4.0, False, ['[0]', '[1]', '[0]', '[1]'])
    >>> play(env, scripted(env.action_space, [0, 1, 0, 1]), seed=0, max_steps=4).digest == episode.digest
    True
"""

from __future__ import annotations

import hashlib
import itertools
import json
import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import gymnasium as gym
import numpy as np

from ... import spaces
from ...server.multiagent import action_mask
from ...spaces.stock import LEGAL_ACTIONS

#: ``policy(observation, info, mask) -> action``, as in :mod:`~openenv_gym.kit.policies`.
Policy = Callable[[Any, dict, Any], Any]


@dataclass
class RecordedStep:
    """One step as the agent saw it: the observation and ``info`` before it, the action, the reward."""

    observation: str  # a digest
    info: dict[str, Any]  # the scalar fields only
    action: str  # the action, as JSON
    reward: float


@dataclass
class RecordedEpisode:
    """What one episode over the wire gave: rewards, a digest of every observation and info,
    and its steps."""

    rewards: list[float]
    digest: str
    ended: bool
    steps: list[RecordedStep] = field(default_factory=list)
    actions: list[Any] = field(default_factory=list)

    @property
    def total(self) -> float:
        return float(sum(self.rewards))


def _digest(*values: Any) -> bytes:
    return json.dumps(values, sort_keys=True, default=_jsonable).encode()


def _jsonable(value: Any) -> Any:
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, np.generic):
        return value.item()
    return repr(value)


def _action_key(action: Any) -> str:
    return json.dumps(action, sort_keys=True, default=_jsonable)


def play(env: gym.Env, policy: Policy, *, seed: int, max_steps: int = 1000,
         max_seconds: float | None = None) -> RecordedEpisode:
    """One episode of ``policy`` on ``env`` (a :class:`~openenv_gym.RemoteEnv`), cut after
    ``max_steps`` steps or, when given, ``max_seconds`` seconds (a slow server's)."""
    deadline = math.inf if max_seconds is None else time.monotonic() + max_seconds
    digest = hashlib.sha256()
    obs, info = env.reset(seed=seed)
    digest.update(_digest(obs, info))
    rewards: list[float] = []
    steps: list[RecordedStep] = []
    actions: list[Any] = []
    for _ in range(max_steps):
        action = policy(obs, info, action_mask(obs, info))
        actions.append(action)
        observed = hashlib.sha256(_digest(obs)).hexdigest()
        seen = RecordedStep(observed, _scalars(info), _digest(action).decode(), 0.0)
        obs, reward, terminated, truncated, info = env.step(action)
        seen.reward = float(reward)
        steps.append(seen)
        rewards.append(float(reward))
        digest.update(_digest(obs, float(reward), bool(terminated), bool(truncated), info))
        if terminated or truncated:
            return RecordedEpisode(rewards, digest.hexdigest(), True, steps, actions)
        if time.monotonic() > deadline:
            break
    return RecordedEpisode(rewards, digest.hexdigest(), False, steps, actions)


def _scalars(info: dict) -> dict[str, Any]:
    """The fields of ``info`` holding one number, string or flag."""
    return {key: value.item() if isinstance(value, np.generic) else value for key, value in info.items()
            if isinstance(value, (bool, int, float, str, np.generic))}


def scripted(space: gym.Space, wire_actions: list[Any]) -> Policy:
    """The policy playing recorded wire actions in order (the last one again, should the env go on)."""
    actions = [spaces.decode(space, a) for a in wire_actions]
    steps = itertools.count()

    def policy(obs: Any, info: dict, mask: Any) -> Any:
        return actions[min(next(steps), len(actions) - 1)]

    return policy


def _constant(value: Any, env: gym.Env) -> Policy:
    """The policy playing ``value`` every step."""
    return lambda obs, info, mask: value


def _sample(space: gym.Space, obs: Any, info: dict) -> Any:
    """A random action, legal by the mask (or ``info``'s list of legal actions) when there is one."""
    mask = action_mask(obs, info)
    if mask is not None and isinstance(space, gym.spaces.Discrete):
        return space.sample(np.asarray(mask, dtype=np.int8))
    listed = _legal_choices(space, obs, info) if not isinstance(space, gym.spaces.Discrete) else None
    if listed:
        return listed[int(space.np_random.integers(len(listed)))]
    return space.sample()


def _legal_choices(space: gym.Space, obs: Any, info: dict) -> list[Any] | None:
    """The legal actions as a list: a ``Discrete``'s by its mask (all, without one), else the
    ones ``info`` lists; ``None`` when there is no list."""
    if isinstance(space, gym.spaces.Discrete):
        mask = action_mask(obs, info)
        start, n = int(space.start), int(space.n)
        legal = [start + int(i) for i in np.flatnonzero(mask)] if mask is not None else list(range(start, start + n))
        return legal or [start]
    listed = info.get(LEGAL_ACTIONS) if isinstance(info, dict) else None
    return list(listed) if isinstance(listed, list) and listed else None
