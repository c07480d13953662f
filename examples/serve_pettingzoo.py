"""Serve PettingZoo's Connect Four and play it three ways through the wire.

    python examples/serve_pettingzoo.py      (needs: pip install 'openenv-gym[pettingzoo]' openenv)

1. The official OpenEnv client plays seat player_1 against the server's random opponent.
2. openenv_gym.RemoteAECEnv: the whole game, as a real pettingzoo.AECEnv.
3. openenv_gym.RemoteParallelEnv: the same game through PettingZoo's turn-based parallel API.
"""

from __future__ import annotations

import numpy as np
from openenv import GenericEnvClient

import openenv_gym


def main() -> None:
    with openenv_gym.local_server("pettingzoo.classic.connect_four_v3") as url:
        with GenericEnvClient(base_url=url).sync() as client:
            result = client.reset(seed=0, agent="player_1")
            moves = 0
            while not result.done:
                result = client.step({"action": result.observation["legal_actions"][-1]})
                moves += 1
            print(f"seat view: player_1 made {moves} moves, reward {result.reward}")

        env = openenv_gym.RemoteAECEnv(url)
        env.reset(seed=1)
        rng = np.random.default_rng(1)
        totals = dict.fromkeys(env.possible_agents, 0)
        for agent in env.agent_iter(max_iter=100):
            obs, reward, terminated, truncated, info = env.last()
            totals[agent] += reward
            action = None if terminated or truncated else int(rng.choice(np.flatnonzero(obs["action_mask"])))
            env.step(action)
        print(f"AEC: rewards {totals}, server state {env.server_state()}")
        env.close()

        par = openenv_gym.RemoteParallelEnv(url)
        observations, infos = par.reset(seed=2)
        steps = 0
        while par.agents and steps < 100:
            actions = {}
            for agent in par.agents:
                legal = np.flatnonzero(observations[agent]["action_mask"])
                actions[agent] = int(legal[0]) if legal.size else 0  # only the agent to move acts
            observations, rewards, terminations, truncations, infos = par.step(actions)
            steps += 1
        print(f"parallel: {steps} steps, last rewards {rewards}")
        par.close()


if __name__ == "__main__":
    main()
