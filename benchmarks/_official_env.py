"""Gymnasium envs served by the *official* OpenEnv stack (the comparison anchor).

Written the way a typical OpenEnv env is: pydantic ``Action`` / ``Observation``
models, an ``Environment`` subclass with synchronous ``reset`` / ``step`` (so the
server runs them on its per-session executor thread), observations as JSON
lists, served by ``openenv.core.env_server.create_app`` under uvicorn:

    python -m uvicorn --app-dir benchmarks --factory _official_env:cartpole_app --port 8001
    python -m uvicorn --app-dir benchmarks --factory _official_env:image_app --port 8002

``cartpole_app``: gymnasium ``CartPole-v1``; observation ``{"obs": [4 floats]}``.
``image_app``: ``_envs.RandomImageEnv`` (84x84x4 uint8); observation
``{"pixels": [[[int]*4]*84]*84]}``, a nested list, OpenEnv's usual way to ship an image.
Both: action ``{"action": int}``, ``done = terminated or truncated``, float reward.

``echo_app``: an OpenEnv MCP env (``MCPEnvironment`` with FastMCP tools), upstream's
echo server, for ``bench_mcp.py``:

    python -m uvicorn --app-dir benchmarks --factory _official_env:echo_app --port 8003
"""

from __future__ import annotations

import uuid
from typing import Any

import gymnasium as gym
from _envs import RandomImageEnv
from openenv.core.env_server import create_app
from openenv.core.env_server.interfaces import Environment
from openenv.core.env_server.types import Action, Observation, State
from pydantic import Field

MAX_CONCURRENT_ENVS = 8


class CartPoleAction(Action):
    action: int = Field(ge=0, le=1, description="0 = push left, 1 = push right")


class CartPoleObservation(Observation):
    obs: list[float] = Field(description="cart position, cart velocity, pole angle, pole angular velocity")


class ImageAction(Action):
    action: int = Field(ge=0, le=3)


class ImageObservation(Observation):
    pixels: list[list[list[int]]] = Field(description="84x84x4 uint8 frame as nested lists")


class _GymEnvironment(Environment):
    """An OpenEnv Environment running one gymnasium env (sync reset/step)."""

    SUPPORTS_CONCURRENT_SESSIONS = True
    observation_cls: type = Observation

    def __init__(self) -> None:
        super().__init__()
        self._env = self._make()
        self._state = State(episode_id=None, step_count=0)

    def _make(self) -> gym.Env:
        raise NotImplementedError

    def _observation(self, obs: Any, reward: float | None, done: bool) -> Observation:
        raise NotImplementedError

    def reset(self, seed: int | None = None, episode_id: str | None = None,
              **kwargs: Any) -> Observation:
        obs, _info = self._env.reset(seed=seed)
        self._state = State(episode_id=episode_id or str(uuid.uuid4()), step_count=0)
        return self._observation(obs, None, False)

    def step(self, action: Action, timeout_s: float | None = None, **kwargs: Any) -> Observation:
        obs, reward, terminated, truncated, _info = self._env.step(action.action)
        self._state.step_count += 1
        return self._observation(obs, float(reward), bool(terminated or truncated))

    @property
    def state(self) -> State:
        return self._state

    def close(self) -> None:
        self._env.close()


class CartPoleEnvironment(_GymEnvironment):
    def _make(self) -> gym.Env:
        return gym.make("CartPole-v1")

    def _observation(self, obs: Any, reward: float | None, done: bool) -> Observation:
        return CartPoleObservation(obs=obs.tolist(), reward=reward, done=done)


class ImageEnvironment(_GymEnvironment):
    def _make(self) -> gym.Env:
        return RandomImageEnv()

    def _observation(self, obs: Any, reward: float | None, done: bool) -> Observation:
        return ImageObservation(pixels=obs.tolist(), reward=reward, done=done)


def cartpole_app():
    """uvicorn ``--factory`` target: the official server for CartPole-v1."""
    return create_app(CartPoleEnvironment, CartPoleAction, CartPoleObservation,
                      env_name="cartpole_bench", max_concurrent_envs=MAX_CONCURRENT_ENVS)


def image_app():
    """uvicorn ``--factory`` target: the official server for the 84x84x4 image env."""
    return create_app(ImageEnvironment, ImageAction, ImageObservation,
                      env_name="image84_bench", max_concurrent_envs=MAX_CONCURRENT_ENVS)


def echo_app():
    """uvicorn ``--factory`` target: the official MCP echo server, an ``MCPEnvironment``
    with FastMCP tools ``echo_message`` and ``echo_with_length``, as upstream's
    ``echo_env`` serves them (up to 64 sessions, for the concurrent rows)."""
    from fastmcp import FastMCP
    from openenv.core.env_server.mcp_environment import MCPEnvironment
    from openenv.core.env_server.mcp_types import CallToolAction, CallToolObservation

    class EchoEnvironment(MCPEnvironment):
        SUPPORTS_CONCURRENT_SESSIONS = True

        def __init__(self) -> None:
            tools = FastMCP("echo_env")

            @tools.tool
            def echo_message(message: str) -> str:
                """Echo back the provided message."""
                return message

            @tools.tool
            def echo_with_length(message: str) -> dict:
                """Echo back the message with its length."""
                return {"message": message, "length": len(message)}

            super().__init__(tools)
            self._state = State(episode_id=str(uuid.uuid4()), step_count=0)

        def reset(self, seed: int | None = None, episode_id: str | None = None, **kwargs: Any) -> Observation:
            self._state = State(episode_id=episode_id or str(uuid.uuid4()), step_count=0)
            return Observation(reward=0.0, metadata={"status": "ready"})

        def _step_impl(self, action: Action, timeout_s: float | None = None, **kwargs: Any) -> Observation:
            return Observation(reward=0.0)

        @property
        def state(self) -> State:
            return self._state

    return create_app(EchoEnvironment, CallToolAction, CallToolObservation, reset_observation_cls=Observation,
                      env_name="echo_env", max_concurrent_envs=64)
