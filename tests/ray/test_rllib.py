"""RLlib PPO learns CartPole through a pool of remote envs, and a server dies on the way.

The EnvRunner steps a :class:`~openenv_gym.ray.PoolVectorEnv` leased from the pool
(``pool_environment``: vector entry point, one vector env per runner); the rest of
the config is RLlib's tuned CartPole PPO. Early in training one server's process
is killed: Ray restarts it, its envs' episodes end truncated (counted), and
training goes on to a mean return of 450. On 2 cores.
"""

from __future__ import annotations

import os
import signal
import time

import pytest

ray = pytest.importorskip("ray")

import openenv_gym.ray as oray  # noqa: E402

try:
    from ray.rllib.algorithms.ppo import PPOConfig
    from ray.rllib.core.rl_module.default_model_config import DefaultModelConfig

    from openenv_gym.ray.rllib import pool_environment
except ImportError as exc:  # Ray without RLlib's dependencies (torch, ...)
    pytest.skip(f"RLlib is not usable ({exc}): pip install -e '.[test,rllib]'", allow_module_level=True)

pytestmark = [pytest.mark.usefixtures("local_ray"), pytest.mark.timeout(900)]

TARGET = 450.0
#: Bounds of the run: far more than it needs, so a failure means it does not learn.
MAX_ITERATIONS, MAX_SECONDS = 120, 720


def test_ppo_reaches_450_on_pooled_remote_envs_while_a_server_dies():
    with oray.launch("CartPole-v1", num_servers=2, sessions_per_server=16, num_cpus_per_server=0,
                     name="rllib") as pool:
        config = (
            PPOConfig()
            .training(lr=0.0003, num_epochs=6, vf_loss_coeff=0.01)
            .rl_module(model_config=DefaultModelConfig(fcnet_hiddens=[32], fcnet_activation="linear",
                                                       vf_share_layers=True))
            .env_runners(num_env_runners=1, num_envs_per_env_runner=16)
            .debugging(seed=0)
        )
        algo = pool_environment(config, pool).build_algo()
        try:
            assert sum(s["leased"] for s in pool.health()) == 16  # the runner's vector env, nothing else
            started, best, returns = time.monotonic(), float("-inf"), []
            for iteration in range(MAX_ITERATIONS):
                if iteration == 3:
                    victim = pool.health()[1]
                    os.kill(victim["pid"], signal.SIGKILL)
                result = algo.train()
                mean = result["env_runners"].get("episode_return_mean", float("nan"))
                returns.append(round(float(mean), 1))
                best = max(best, mean)
                if best >= TARGET or time.monotonic() - started > MAX_SECONDS:
                    break
            elapsed = time.monotonic() - started
            lost = sum(algo.env_runner_group.foreach_env_runner(lambda runner: runner.env.unwrapped.episodes_lost,
                                                                local_env_runner=False))
            health = pool.health()
        finally:
            algo.stop()
        print(f"PPO: best mean return {best:.1f} after {iteration + 1} iterations, {elapsed:.0f} s; "
              f"episodes lost to the killed server: {lost}; returns: {returns}")
        assert best >= TARGET, f"mean return {best:.1f} < {TARGET} after {iteration + 1} iterations: {returns}"
        assert lost >= 1  # the kill cut episodes short, and training went on
        assert health[1]["starts"] == 2 and all(s["state"] == "alive" for s in health)
        assert all(s["leased"] == 0 for s in pool.health())  # algo.stop() closed the env: lease released
    assert ("rllib", oray.NAMESPACE) not in {(a["name"], a["namespace"]) for a in
                                             ray.util.list_named_actors(all_namespaces=True)}
