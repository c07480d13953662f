"""Measure an env for its validation kit, in a process of its own.

    python -m openenv_gym.kit.probe '{"target": "CartPole-v1", "seed": 0}'

prints one JSON object: what the env is (id, entry point, episode limit,
Gymnasium's ``reward_threshold``), the trajectories of its canaries and of its
oracle (wire actions, rewards, return, wall time), the largest observation on
the wire, and the process's peak RSS. A process of its own makes the RSS that
of one server holding the env, and lets several packages (each with its own
top-level ``server`` package) be measured one after the other.
:func:`measure` runs it; nothing else here is public.
"""

from __future__ import annotations

import importlib
import json
import os
import resource
import subprocess
import sys
import time
from typing import Any

import gymnasium as gym
import numpy as np

from .. import spaces
from ..errors import ProbeError
from ..server.fields import FieldsSource
from ..server.multiagent import GameSource, action_mask
from .policies import Policy, canaries, controller_for, play, search
from .ranges import known_range
from .target import load_source

__all__ = ["measure", "run_in_child", "ProbeError", "MAX_STEPS", "CANARY_SEEDS"]

#: Steps after which an episode is cut (an env without an episode limit still ends).
MAX_STEPS = 1000
#: Seeds each canary plays (the kit's seed and the ones after it). Where episodes differ by
#: seed (a random start, a seeded opponent), one episode of a trivial policy is a sample, not
#: its floor: a first-legal tic-tac-toe player beats the random opponent on seed 0 (return 1)
#: but averages 0.6 over 200 seeds. Its floor is its mean return over these seeds.
CANARY_SEEDS = 32
#: Seconds the oracle search may take.
SEARCH_BUDGET_S = 30.0


def measure(
    target: str,
    *,
    env_kwargs: dict[str, Any] | None = None,
    seed: int = 0,
    oracle: str | None = None,
    timeout: float = 600.0,
) -> dict[str, Any]:
    """Run the probe on ``target`` in a fresh Python process and return what it measured.

    ``oracle`` is a ``module:attribute`` naming a policy ``(obs, info, mask) -> action``
    to use as the oracle instead of a bundled one.
    """
    request = {"target": os.fspath(target), "env_kwargs": env_kwargs, "seed": seed, "oracle": oracle}
    return run_in_child("openenv_gym.kit.probe", request, timeout=timeout, what=f"measuring {target}")


def run_in_child(module: str, request: dict[str, Any], *, timeout: float, what: str) -> dict[str, Any]:
    """Run ``python -m module 'REQUEST'`` in a fresh interpreter and return the JSON object it
    prints last. Raises :class:`ProbeError` with the child's last line of stderr when it fails."""
    env = dict(os.environ, PYGAME_HIDE_SUPPORT_PROMPT="1")
    # The caller's import path (a source checkout, say) reaches the child too.
    env["PYTHONPATH"] = os.pathsep.join([p for p in sys.path if p] + [env.get("PYTHONPATH", "")])
    done = subprocess.run(
        [sys.executable, "-m", module, json.dumps(request)],
        capture_output=True, text=True, timeout=timeout, env=env, cwd=os.getcwd(),
    )
    if done.returncode != 0:
        lines = done.stderr.strip().splitlines()
        raise ProbeError(f"{what} failed: {lines[-1] if lines else 'no output'}")
    lines = done.stdout.strip().splitlines()  # an env may print on import: the result is the last line
    return json.loads(lines[-1])


def _entry_point(source: Any, env: gym.Env) -> str | None:
    """Where the env's class lives (``module:Class``), for the kit's type tags."""
    game = getattr(env.unwrapped, "game", None) if isinstance(source, GameSource) else None
    if game is not None:
        cls = type(getattr(game, "unwrapped", game))
        return f"{cls.__module__}:{cls.__qualname__}"
    if source.env_id:
        try:
            return str(gym.spec(source.env_id).entry_point)
        except gym.error.Error:
            pass
    cls = type(env.unwrapped)
    return f"{cls.__module__}:{cls.__qualname__}"


def _reward_threshold(env_id: str | None) -> float | None:
    if not env_id:
        return None
    try:
        threshold = gym.spec(env_id).reward_threshold
    except gym.error.Error:
        return None
    return None if threshold is None else float(threshold)


def _import_policy(path: str) -> Policy:
    module, _, attribute = path.partition(":")
    if "" not in sys.path:
        sys.path.insert(0, os.getcwd())
    policy = getattr(importlib.import_module(module), attribute)
    if not callable(policy):
        raise TypeError(f"--oracle {path} is not callable; it must be policy(obs, info, mask) -> action")
    return policy


def _trajectory(name: str, kind: str, env: gym.Env, policy: Policy, seed: int, source: Any) -> dict:
    started = time.perf_counter()
    actions, rewards, ended = play(env, policy, seed=seed, max_steps=MAX_STEPS)
    return {
        "name": name,
        "kind": kind,
        "seed": seed,
        "actions": [spaces.encode(source.action_space, a) for a in actions],
        "rewards": rewards,
        "return": float(sum(rewards)),
        "steps": len(actions),
        "ended": ended,
        "seconds": time.perf_counter() - started,
    }


def _observation_bytes(env: gym.Env, source: Any, seed: int) -> int:
    """The size of the largest JSON observation of a short seeded random run."""
    obs, info = env.reset(seed=seed)
    largest = 0
    sampler = canaries(source.action_space, seed)["random"]
    for _ in range(20):
        size = len(json.dumps(spaces.encode(source.observation_space, obs)))
        largest = max(largest, size + len(json.dumps(info, default=str)))
        obs, _, terminated, truncated, info = env.step(sampler(obs, info, action_mask(obs, info)))
        if terminated or truncated:
            break
    return largest


def _oracle(request: dict, source: Any, env: gym.Env, goal: float | None, seed: int) -> tuple[str | None, dict | None]:
    """The oracle trajectory and where its policy came from."""
    if request.get("oracle"):
        policy = _import_policy(request["oracle"])
        return f"hook {request['oracle']}", _trajectory("oracle", "oracle", env, policy, seed, source)
    controller = controller_for(source.env_id)
    if controller is not None:
        return f"bundled controller for {source.env_id}", _trajectory("oracle", "oracle", env, controller, seed, source)
    if goal is None:
        return None, None
    started = time.perf_counter()
    actions = search(env, seed=seed, goal=goal, max_steps=MAX_STEPS, budget_s=SEARCH_BUDGET_S)
    if actions is None:
        return None, None
    scripted = iter(actions)
    trajectory = _trajectory("oracle", "oracle", env, lambda obs, info, mask: next(scripted), seed, source)
    trajectory["seconds"] = time.perf_counter() - started
    return "exact-foresight search of the seeded env", trajectory


def run(request: dict) -> dict:
    """Everything :func:`measure` returns, measured in this process."""
    started = time.perf_counter()
    source = load_source(request["target"], request.get("env_kwargs"))
    seed = int(request.get("seed", 0))
    env = source.make()
    startup_s = time.perf_counter() - started
    try:
        trajectories = [
            _trajectory(name, "canary", env, policy, s, source)
            for s in range(seed, seed + CANARY_SEEDS)
            for name, policy in canaries(source.action_space, s).items()
        ]
        peak_rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux
        known = known_range(source.env_id)
        goal = None if known is None else known[1]
        oracle_source, oracle = _oracle(request, source, env, goal, seed)
        observation_bytes = _observation_bytes(env, source, seed)
        entry_point = _entry_point(source, env)
    finally:
        env.close()
    return {
        "target": request["target"],
        "name": source.name,
        "env_id": source.env_id,
        "multiagent": isinstance(source, GameSource),
        "entry_point": entry_point,
        "max_episode_steps": source.max_episode_steps,
        "reward_threshold": _reward_threshold(source.env_id),
        "action_space": type(source.action_space).__name__,
        "observation_bytes": observation_bytes,
        "startup_s": startup_s,
        "peak_rss_mb": peak_rss_mb,
        "trajectories": trajectories + ([oracle] if oracle else []),
        "oracle_source": oracle_source,
        "set_state": _serves_injected_state(source),
    }


def _serves_injected_state(source: Any) -> bool:
    """Whether resets with ``injected_state`` are served (RFC 008's ``set_state``): the app's
    ``create_app(set_state=...)`` hook, or a FieldsEnv whose ``reset`` takes it."""
    if isinstance(source, FieldsSource):
        return "injected_state" in source.env_class.reset_options()
    return source.set_state is not None


def main() -> None:
    np.set_printoptions(threshold=10)
    print(json.dumps(run(json.loads(sys.argv[1]))))


if __name__ == "__main__":
    main()
