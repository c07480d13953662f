"""A stock OpenEnv server, built on the official ``openenv`` package.

It plays the role of any environment on the OpenEnv hub: pydantic action and
observation models with integer, float, string, list and optional fields.
A counter that must reach a target by adding 1..5 per step; the observation
carries a ``label`` string, a ``history`` list and a float ``progress``.
"""

from __future__ import annotations

import uuid

from openenv.core.env_server import create_app
from openenv.core.env_server.interfaces import Environment
from openenv.core.env_server.types import Action, Observation, State
from pydantic import Field


class CounterAction(Action):
    increment: int = Field(ge=1, le=5)
    mode: str = Field(default="add", json_schema_extra={"enum": ["add", "double"]})


class CounterObservation(Observation):
    count: int = Field(default=0, ge=0, le=100)
    progress: float = 0.0
    label: str = ""
    history: list[int] = Field(default_factory=list)
    winner: str | None = None


class CounterState(State):
    count: int = 0


class CounterEnvironment(Environment):
    """Count up to ``target``; the episode ends when the count reaches it."""

    SUPPORTS_CONCURRENT_SESSIONS = True

    def __init__(self, target: int = 20) -> None:
        super().__init__()
        self.target = target
        self._state = CounterState(episode_id=None, step_count=0)

    def reset(self, seed: int | None = None, episode_id: str | None = None, **kwargs) -> CounterObservation:
        start = (seed or 0) % 5
        self._state = CounterState(episode_id=episode_id or str(uuid.uuid4()), step_count=0, count=start)
        return self._observe(reward=None)

    def step(self, action: CounterAction, timeout_s=None, **kwargs) -> CounterObservation:
        self._state.step_count += 1
        amount = action.increment * (2 if action.mode == "double" else 1)
        self._state.count = min(self._state.count + amount, 100)
        return self._observe(reward=float(amount))

    def _observe(self, reward) -> CounterObservation:
        count = self._state.count
        done = count >= self.target
        return CounterObservation(
            count=count,
            progress=count / self.target,
            label=f"count={count}",
            history=list(range(0, count, 3)),
            winner="agent" if done else None,
            done=done,
            reward=reward,
        )

    @property
    def state(self) -> CounterState:
        return self._state


def make_app(max_concurrent_envs: int = 8):
    return create_app(
        CounterEnvironment,
        CounterAction,
        CounterObservation,
        env_name="counter",
        max_concurrent_envs=max_concurrent_envs,
        state_cls=CounterState,
    )
