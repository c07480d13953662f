"""Upstream OpenEnv's own servers, as this project runs them when their sources are at hand.

Each :class:`UpstreamEnv` is one package of upstream's ``envs/`` directory, with the
environment variables its ``server/app.py`` reads (the game it serves). :func:`running`
serves one from its package directory, unmodified, on 127.0.0.1, with an interpreter
that has ``openenv`` 0.10 and the env's engine (``openenv_gym.local_server``), and stops
it on exit.

A value of ``server_env`` may name upstream's ``envs/`` directory as ``{envs}``: a capture
records the placeholder, not this machine's paths.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import openenv_gym


@dataclass(frozen=True)
class UpstreamEnv:
    """One upstream env package: ``name`` (``maze``), its directory ``package`` (``maze_env``)."""

    name: str
    package: str
    server_env: dict[str, str] = field(default_factory=dict)
    #: Sessions the server holds at once (upstream's default ``max_concurrent_envs``).
    sessions: int = 1

    def environment(self, envs_dir: Path) -> dict[str, str]:
        """``server_env`` with ``{envs}`` standing for ``envs_dir``."""
        return {key: value.format(envs=envs_dir) for key, value in self.server_env.items()}


UPSTREAM_ENVS = (
    UpstreamEnv("echo", "echo_env", sessions=8),
    UpstreamEnv("connect4", "connect4_env"),
    UpstreamEnv("grid_world", "grid_world_env"),
    UpstreamEnv("maze", "maze_env"),
    UpstreamEnv("chess", "chess_env"),
    UpstreamEnv("openspiel", "openspiel_env", {"OPENSPIEL_GAME": "catch"}, sessions=8),
    UpstreamEnv("textarena", "textarena_env",
                {"TEXTARENA_ENV_ID": "GuessTheNumber-v0", "TEXTARENA_DOWNLOAD_NLTK": "0"}, sessions=8),
    UpstreamEnv("atari", "atari_env", {"ATARI_GAME": "pong"}),
    UpstreamEnv("coding", "coding_env"),
    UpstreamEnv("wildfire", "wildfire_env"),
    UpstreamEnv("reasoning_gym", "reasoning_gym_env", sessions=8),
    # No renderer: pixels only come with render=True, which the scripted episode never asks.
    UpstreamEnv("dm_control", "dm_control_env", {"MUJOCO_GL": "disable"}),
    UpstreamEnv("snake", "snake_env"),
    # server/repl_environment.py imports repl_env.recursive_controller by its package name:
    # upstream's envs/ directory must be importable (its Dockerfile's PYTHONPATH has /app).
    UpstreamEnv("repl", "repl_env", {"PYTHONPATH": "{envs}"}, sessions=8),
    UpstreamEnv("dipg_safety", "dipg_safety_env"),
    # CARLA_MODE=mock is upstream's own simulator stand-in (no CARLA server needed).
    UpstreamEnv("carla", "carla_env", {"CARLA_MODE": "mock", "CARLA_SCENARIO": "trolley_saves"}),
    # No GPU (nor torch) here: the server runs, and each evaluation reports that it failed.
    UpstreamEnv("kernrl", "kernrl"),
)

BY_NAME = {env.name: env for env in UPSTREAM_ENVS}


@contextmanager
def running(env: UpstreamEnv, envs_dir: Path, python: str, startup_timeout: float = 120.0) -> Iterator[str]:
    """The URL of ``env``'s server, started from ``envs_dir / env.package`` with ``python``."""
    with openenv_gym.local_server(
        envs_dir / env.package, env=env.environment(envs_dir), python=python, startup_timeout=startup_timeout
    ) as url:
        yield url
