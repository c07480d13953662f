"""Envs that are not thread-safe run every call on one thread of the process.

pygame keeps process-wide state that two threads must not touch at once, and
the server runs envs on worker threads (and inline on event loops): the envs
that draw with pygame (:func:`~openenv_gym.server.resolve.uses_pygame`), or any
env served with ``create_app(single_thread=True)``, run every call (build,
reset, step, render, close) on the one thread named
:data:`~openenv_gym.server.session.SINGLE_THREAD_NAME`, which concurrent sessions
take turns on. Here the envs record the thread of each of their calls.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import gymnasium as gym
import numpy as np
import pytest

import openenv_gym
from openenv_gym.errors import ExecutionError
from openenv_gym.server.execution import SINGLE_THREAD_NAME
from openenv_gym.server.resolve import uses_pygame
from tests.envs import CompositeEnv, SlowEnv

pettingzoo = pytest.importorskip("pettingzoo")
pytest.importorskip("pygame")

from pettingzoo.butterfly import cooperative_pong_v6  # noqa: E402
from pettingzoo.classic import connect_four_v3  # noqa: E402
from pettingzoo.utils import BaseWrapper  # noqa: E402

#: ``(call, thread)`` of every call the recording envs of this module received.
CALLS: list[tuple[str, threading.Thread]] = []

#: Client threads playing at once, and the steps each plays.
CLIENTS, STEPS = 4, 8


def _record(call: str) -> None:
    CALLS.append((call, threading.current_thread()))


class RecordedCartPole(gym.Wrapper):
    """CartPole drawing ``rgb_array`` frames with pygame, recording its calls' threads."""

    def __init__(self) -> None:
        _record("build")
        super().__init__(gym.make("CartPole-v1", render_mode="rgb_array"))

    def reset(self, **kwargs: Any) -> Any:
        _record("reset")
        return super().reset(**kwargs)

    def step(self, action: Any) -> Any:
        _record("step")
        return super().step(action)

    def render(self) -> Any:
        _record("render")
        return super().render()

    def close(self) -> None:
        _record("close")
        super().close()


class RecordedConnectFour(BaseWrapper):
    """PettingZoo's connect four drawing ``rgb_array`` frames, recording its calls' threads."""

    def __init__(self) -> None:
        _record("build")
        super().__init__(connect_four_v3.env(render_mode="rgb_array"))

    def reset(self, seed: int | None = None, options: dict | None = None) -> None:
        _record("reset")
        super().reset(seed=seed, options=options)

    def step(self, action: Any) -> None:
        _record("step")
        super().step(action)

    def render(self) -> Any:
        _record("render")
        return super().render()

    def close(self) -> None:
        _record("close")
        super().close()


@contextlib.contextmanager
def recorded(serving: contextlib.AbstractContextManager[str]) -> Iterator[str]:
    """A server's URL, recording the calls of its envs from its first session until its
    sessions closed: the probe ``create_app`` builds and closes in its caller's thread
    to read the spaces, before any session, is not recorded."""
    with serving as url:
        CALLS.clear()
        yield url
    deadline = time.monotonic() + 10
    while not any(call == "close" for call, _ in CALLS) and time.monotonic() < deadline:
        time.sleep(0.05)


@pytest.mark.parametrize(("make", "kwargs", "expected"), [
    ("CartPole-v1", {}, False),  # imports pygame only when it renders, and it renders nothing
    ("CartPole-v1", {"render_mode": "rgb_array"}, True),
    ("FrozenLake-v1", {"render_mode": "ansi"}, False),  # text, drawn without pygame
    ("FrozenLake-v1", {"render_mode": "rgb_array"}, True),
    (connect_four_v3.env, {}, True),  # its module imports pygame
    (cooperative_pong_v6.parallel_env, {}, True),  # draws its observations with pygame, rendering or not
    (CompositeEnv, {"render_mode": "rgb_array"}, False),  # frames of numpy's own
])
def test_uses_pygame(make, kwargs, expected):
    env = gym.make(make, **kwargs) if isinstance(make, str) else make(**kwargs)
    try:
        assert uses_pygame(env) is expected
    finally:
        env.close()


def test_single_thread_is_detected_and_can_be_overridden():
    assert openenv_gym.create_app("CartPole-v1", env_kwargs={"render_mode": "rgb_array"}).state.openenv_gym.source.single_thread
    assert not openenv_gym.create_app("CartPole-v1").state.openenv_gym.source.single_thread
    assert openenv_gym.create_app("CartPole-v1", single_thread=True).state.openenv_gym.source.single_thread
    assert not openenv_gym.create_app(
        "CartPole-v1", env_kwargs={"render_mode": "rgb_array"}, single_thread=False
    ).state.openenv_gym.source.single_thread


def test_single_thread_refuses_inline_execution():
    with pytest.raises(ValueError, match="execution='auto' or 'thread', or single_thread=False"):
        openenv_gym.create_app("CartPole-v1", env_kwargs={"render_mode": "rgb_array"}, execution="inline")
    openenv_gym.create_app("CartPole-v1", env_kwargs={"render_mode": "rgb_array"}, execution="inline", single_thread=False)


def _play_cartpole(url: str, seed: int) -> list[np.ndarray]:
    with openenv_gym.RemoteEnv(url, encoding="msgpack") as env:
        env.reset(seed=seed)
        frames = [env.render()]
        for _ in range(STEPS):
            obs, reward, terminated, truncated, info = env.step(env.action_space.sample())
            if terminated or truncated:
                env.reset()
            frames.append(env.render())
    return frames


def test_concurrent_cartpole_sessions_draw_frames_on_one_thread():
    """Several sessions at once, a batched vector session among them, each drawing
    frames with pygame: every env call ran on the one thread."""
    with recorded(openenv_gym.local_server(RecordedCartPole, max_sessions=16)) as url:
        envs = openenv_gym.RemoteVectorEnv(url, num_envs=3, mode="batched", encoding="msgpack")
        try:
            with ThreadPoolExecutor(CLIENTS) as pool:
                played = [pool.submit(_play_cartpole, url, seed) for seed in range(CLIENTS)]
                envs.reset(seed=0)
                vector_frames = list(envs.render())
                for _ in range(STEPS):
                    envs.step(envs.action_space.sample())
                    vector_frames.extend(envs.render())
                frames = [frame for future in played for frame in future.result(timeout=120)]
        finally:
            envs.close()
    assert len(frames) == CLIENTS * (STEPS + 1) and len(vector_frames) == 3 * (STEPS + 1)
    assert all(frame.shape == (400, 600, 3) and frame.dtype == np.uint8 for frame in frames + vector_frames)
    calls = {call for call, _ in CALLS}
    assert {"build", "reset", "step", "render", "close"} <= calls
    assert len({thread for _, thread in CALLS}) == 1 and CALLS[0][1].name == SINGLE_THREAD_NAME


def test_a_pettingzoo_game_draws_frames_on_one_thread():
    """Two clients of the whole game (``/agents``) and one of a seat (``/ws``) at once."""
    with recorded(openenv_gym.local_server(RecordedConnectFour, max_sessions=8)) as url:
        with ThreadPoolExecutor(3) as pool:
            games = [pool.submit(_play_game, url, seed) for seed in range(2)]
            seat = pool.submit(_play_seat, url)
            frames = [frame for future in games for frame in future.result(timeout=120)]
            frames.extend(seat.result(timeout=120))
    assert len(frames) >= 4
    assert all(frame.ndim == 3 and frame.shape[2] == 3 and frame.dtype == np.uint8 for frame in frames)
    assert {"build", "reset", "step", "render", "close"} <= {call for call, _ in CALLS}
    assert len({thread for _, thread in CALLS}) == 1 and CALLS[0][1].name == SINGLE_THREAD_NAME


def _play_game(url: str, seed: int) -> list[np.ndarray]:
    env = openenv_gym.RemoteAECEnv(url, encoding="msgpack")
    try:
        env.reset(seed=seed)
        frames = [env.render()]
        for _ in range(STEPS):
            obs, reward, terminated, truncated, info = env.last()
            if terminated or truncated:
                break
            env.step(env.action_space(env.agent_selection).sample(obs["action_mask"]))
            frames.append(env.render())
        return frames
    finally:
        env.close()


def _play_seat(url: str) -> list[np.ndarray]:
    with openenv_gym.RemoteEnv(url, encoding="msgpack") as env:
        obs, info = env.reset(seed=0)
        frames = [env.render()]
        for _ in range(3):
            obs, reward, terminated, truncated, info = env.step(env.action_space.sample(obs["action_mask"]))
            frames.append(env.render())
            if terminated or truncated:
                break
    return frames


def test_a_hung_call_on_the_one_thread_times_out_and_the_session_recovers():
    """A step timeout answers a call that hangs on the one thread; the thread is not
    abandoned, so the session's fresh env is built once the hung call returns."""
    delays = iter([0.0, 2.0])  # the probe, the first session's env; then fast ones

    def factory() -> SlowEnv:
        return SlowEnv(delay=next(delays, 0.0))

    with openenv_gym.local_server(factory, step_timeout=0.5, single_thread=True) as url:
        with openenv_gym.RemoteEnv(url) as env:
            env.reset(seed=0)
            started = time.monotonic()
            with pytest.raises(ExecutionError, match="hung.*fresh environment"):
                env.step(0)
            assert time.monotonic() - started < 10
            env.reset(seed=0)
            env.step(0)
