"""openenv-gym in one minute: serve a Gymnasium env over OpenEnv, play it back.

    python examples/quickstart.py

1. Serves CartPole-v1 as an OpenEnv server on 127.0.0.1 (a real uvicorn server).
2. Plays seeded episodes through ``RemoteEnv`` with msgpack frames and with JSON,
   and checks they match a local CartPole step for step; then a batch of 16
   CartPoles through ``RemoteVectorEnv``, checked against ``SyncVectorEnv``.
3. Plays one episode with the official ``openenv`` client, if it is installed.
4. Plays a chess game against the embedded chess server of ``openenv/Chess-v0``
   (random legal moves), if python-chess is installed.
5. Prints a short summary.
"""

from __future__ import annotations

import time

import gymnasium as gym
import numpy as np

import openenv_gym

EPISODES = 5


def play(env: gym.Env, seed: int) -> tuple[float, int, list]:
    """One seeded episode with a fixed policy; returns (return, length, observations)."""
    obs, _ = env.reset(seed=seed)
    total, steps, trajectory = 0.0, 0, [obs]
    terminated = truncated = False
    while not (terminated or truncated) and steps < 1000:
        action = int(obs[2] + obs[3] > 0)  # push towards the way the pole falls
        obs, reward, terminated, truncated, _ = env.step(action)
        total, steps = total + reward, steps + 1
        trajectory.append(obs)
    return total, steps, trajectory


def main() -> None:
    with openenv_gym.local_server("CartPole-v1") as url:
        print(f"serving CartPole-v1 at {url}  (schema: {url}/schema)")
        local = gym.make("CartPole-v1")
        for encoding in ("msgpack", "json"):
            remote = gym.make("openenv/Remote-v0", base_url=url, encoding=encoding)
            start, total_steps, returns = time.perf_counter(), 0, []
            for seed in range(EPISODES):
                ret, steps, remote_traj = play(remote, seed)
                _, _, local_traj = play(local, seed)
                assert all(np.array_equal(a, b) for a, b in zip(remote_traj, local_traj)), (
                    "remote and local trajectories differ"
                )
                returns.append(ret)
                total_steps += steps
            elapsed = time.perf_counter() - start
            print(
                f"RemoteEnv[{encoding:7}]: {EPISODES} episodes, mean return {np.mean(returns):6.1f}, "
                f"{total_steps / elapsed:8.0f} steps/s, identical to local CartPole"
            )
            remote.close()
        local.close()

        play_vector(url)

        try:
            from openenv import GenericEnvClient
        except ImportError:
            print("official openenv client: not installed (pip install openenv) - skipped")
        else:
            with GenericEnvClient(base_url=url).sync() as client:
                result, steps = client.reset(seed=0), 0
                while not result.done and steps < 1000:
                    result = client.step({"action": steps % 2})
                    steps += 1
                print(f"official openenv GenericEnvClient: episode of {steps} steps, done={result.done}")
    play_chess()
    print("servers stopped; all done")


def play_vector(url: str, num_envs: int = 16, steps: int = 500) -> None:
    """A batch of CartPoles in one WebSocket (batched mode), checked against SyncVectorEnv."""
    remote = openenv_gym.RemoteVectorEnv(url, num_envs=num_envs)
    local = gym.make_vec("CartPole-v1", num_envs=num_envs, vectorization_mode="sync")
    remote_obs, _ = remote.reset(seed=0)
    local_obs, _ = local.reset(seed=0)
    rng = np.random.default_rng(0)
    start, episodes = time.perf_counter(), 0
    for _ in range(steps):
        actions = rng.integers(0, 2, size=num_envs)
        remote_obs, _, terminated, truncated, _ = remote.step(actions)
        local_obs, *_ = local.step(actions)
        assert np.array_equal(remote_obs, local_obs), "remote and local vector envs differ"
        episodes += int(np.sum(terminated | truncated))
    elapsed = time.perf_counter() - start
    print(
        f"RemoteVectorEnv[{remote.mode}]: {num_envs} envs x {steps} steps, {episodes} episodes ended, "
        f"{num_envs * steps / elapsed:8.0f} env-steps/s, identical to SyncVectorEnv"
    )
    remote.close()
    local.close()


def play_chess() -> None:
    """One game of random legal moves against the embedded chess server (random opponent)."""
    try:
        import chess  # noqa: F401
    except ImportError:
        print("chess: python-chess not installed (pip install 'openenv-gym[chess]') - skipped")
        return
    env = gym.make("openenv/Chess-v0", view="raw")  # starts the built-in server in a child process
    rng = np.random.default_rng(0)
    obs, info = env.reset(seed=0)
    moves, terminated, truncated, reward = 0, False, False, 0.0
    while not (terminated or truncated) and moves < 1000:  # the action is a UCI move; info lists the legal ones
        obs, reward, terminated, truncated, info = env.step(str(rng.choice(info["legal_actions"])))
        moves += 1
    env.close()  # stops the embedded server too
    print(f"openenv/Chess-v0 (embedded server): {moves} moves as white, result {obs['result']}, reward {reward}")


if __name__ == "__main__":
    main()
