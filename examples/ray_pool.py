"""A pool of CartPole servers on Ray: step it, hand its URLs to a non-Ray client, train PPO on it.

The same command runs on a laptop and on a cluster: ``ray.init()`` joins the
cluster this machine belongs to (``ray start``, ``RAY_ADDRESS``, ``ray job submit``,
KubeRay) or starts Ray here when there is none.

    pip install 'openenv-gym[ray]'              # '[rllib]' for --train
    python examples/ray_pool.py                 # pool + vector env + plain URLs
    python examples/ray_pool.py --train         # ... and RLlib PPO to a return of 450

On a cluster, run it on the head node (or ``ray job submit -- python examples/ray_pool.py``):
one server per node, spread over the nodes, EnvRunners leasing their envs from the pool.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import ray

import openenv_gym
import openenv_gym.ray as oray


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--servers", type=int, default=0, help="server actors (default: one per node, at least 2)")
    parser.add_argument("--envs", type=int, default=64, help="envs of the vector env")
    parser.add_argument("--steps", type=int, default=1000, help="vector steps with random actions")
    parser.add_argument("--train", action="store_true", help="train RLlib PPO on the pool (needs '[rllib]')")
    args = parser.parse_args()

    ray.init()
    nodes = [node for node in ray.nodes() if node["Alive"]]
    num_servers = args.servers or max(2, len(nodes))
    # One node: bind loopback, nothing outside this machine needs the servers. Several: each
    # server binds its node's address, which the other nodes reach.
    host = "127.0.0.1" if len(nodes) == 1 else None
    print(f"Ray: {len(nodes)} node(s), {ray.cluster_resources().get('CPU', 0):.0f} CPUs; {num_servers} servers")

    # CartPole's steps are cheap: a quarter of a CPU per server leaves room for the trainer.
    with oray.launch("CartPole-v1", num_servers=num_servers, sessions_per_server=64,
                     num_cpus_per_server=0.25, host=host) as pool:
        for server in pool.health():
            print(f"  server {server['index']}: {server['url']} on node {server['node_id'][:8]}, "
                  f"{server['max_sessions']} sessions")

        # 1. A vector env over leased slots: it follows servers that Ray restarts or moves.
        envs = pool.vector_env(args.envs)
        envs.reset(seed=0)
        started = time.perf_counter()
        for _ in range(args.steps):
            envs.step(envs.action_space.sample())
        rate = args.steps * args.envs / (time.perf_counter() - started)
        print(f"vector env of {args.envs} over {envs.lease.placement}: {rate:,.0f} env-steps/s")
        envs.close()

        # 2. The URLs are plain OpenEnv servers: anything that takes URLs uses them, Ray or not.
        plain = openenv_gym.RemoteVectorEnv(pool.urls, 8)
        obs, _ = plain.reset(seed=0)
        plain.step(np.zeros(8, dtype=np.int64))
        plain.close()
        print(f"plain RemoteVectorEnv over pool.urls: {obs.shape} observations")

        if args.train:
            train(pool)


def train(pool: oray.ServerPool) -> None:
    """RLlib's tuned CartPole PPO, the env drawn from the pool: nothing else changes."""
    from ray.rllib.algorithms.ppo import PPOConfig
    from ray.rllib.core.rl_module.default_model_config import DefaultModelConfig

    from openenv_gym.ray.rllib import pool_environment

    config = (
        PPOConfig()
        .training(lr=0.0003, num_epochs=6, vf_loss_coeff=0.01)
        .rl_module(model_config=DefaultModelConfig(fcnet_hiddens=[32], fcnet_activation="linear",
                                                   vf_share_layers=True))
        .env_runners(num_env_runners=1, num_envs_per_env_runner=16)
    )
    algo = pool_environment(config, pool).build_algo()
    try:
        for iteration in range(1, 101):
            mean = algo.train()["env_runners"].get("episode_return_mean", float("nan"))
            print(f"  iteration {iteration}: mean return {mean:.1f}")
            if mean >= 450:
                break
    finally:
        algo.stop()


if __name__ == "__main__":
    main()
