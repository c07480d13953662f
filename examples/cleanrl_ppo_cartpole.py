"""A CleanRL-style PPO loop, written directly against ``RemoteVectorEnv``, with two halves in flight.

    python examples/cleanrl_ppo_cartpole.py [--timesteps 100000] [--seed 1] [--lockstep]

Single file, no RL library: CleanRL's ``ppo.py`` (rollout buffer, GAE,
clipped surrogate, value loss, advantage normalisation) with its envs replaced
by 8 remote CartPoles, and RL Zoo's tuned CartPole hyperparameters, the ones
``sb3_ppo_cartpole.py`` uses.

The envs are stepped the way CleanRL's EnvPool-async scripts step theirs, in two
halves (docs/vector.md, "Two halves in flight"). Two ``openenv-gym serve
CartPole-v1`` processes hold 4 envs each, and
``RemoteVectorEnv([url_a, url_b], num_envs=8, batch_size=4)`` makes each server's
envs one half. ``recv()`` returns the half whose server answered first, and its
actions go straight back with ``send(actions, info["env_id"])``. Meanwhile the
other server is stepping the other half's 4 CartPoles, so its next answer is
ready, or nearly, when the policy has dealt with this one. The client's work
(the policy's forward pass, the buffer writes, encoding and decoding) overlaps
the servers' work (decoding, stepping, encoding) instead of waiting for it.

This only pays off when a server can run at the same time as the client, on
another core or another machine. So the servers are processes of their own,
started here and stopped by PID when the script ends. ``openenv_gym.local_server``
would run them as threads of this process, where their Python code and the
client's take turns on one interpreter lock. They do not busy-poll
(``--busy-poll 0``): a server's next message comes only after the client has
dealt with the other half, so spinning for it mostly burns CPU (on 2 cores,
short runs with polling were no faster and took about 15% more CPU time).

How much the halves save depends on how the work splits. A CartPole step costs
microseconds, so here the client's work per half dominates, and two halves
double the policy's forward passes per env step. On 2 shared cores (the runs in
docs/examples.md), collecting was no faster than in lockstep. The pattern is
meant for envs whose steps cost about as much as the client's work, with a core
for each server. ``--lockstep`` runs CleanRL's plain loop on the
same two servers for comparison: every iteration sends one ``step()`` to all 8
envs and waits for both servers before the policy runs again.

The rollout buffer is indexed by ``[step, env id]``, as in CleanRL's ``ppo.py``.
Each env's steps are recorded in its own order, whichever half returned first
(that order varies, so unlike ``--lockstep`` a seed does not replay a run).
A rollout ends for a half once its envs have taken ``--num-steps`` steps: its
last observations are held, not sent. They give the bootstrap value of that
half's GAE, and the first actions of the next rollout come from the updated
policy, so every transition is on-policy, as in the lockstep loop (CleanRL's
async scripts step each env once more instead, with the old policy, and keep
that step only for its bootstrap observation). The vector env runs Gymnasium's
same-step autoreset: for an env whose episode just ended, ``recv()`` and
``step()`` return the first observation of its next episode, the reward and
termination/truncation of the step that ended it, and that step's last
observation in ``info["final_obs"]``. So ``done`` stops GAE at the episode
boundary, and a truncated episode (500 steps) is bootstrapped by adding
``gamma * V(final_obs)`` to its last reward, as SB3 does (CartPole's time
limit is not part of the observation, so it is not a real terminal state).

What it measures: after training, 20 episodes on a remote CartPole with the
policy's most likely action at each step (as SB3's ``evaluate_policy`` with
``deterministic=True``), reported as mean return +- standard deviation. 500 is
the most an episode can return. The bar is the one docs/benchmarks.md sets for
SB3 PPO: a mean of at least 450. Runs and their times are in docs/examples.md.
Needs ``pip install 'openenv-gym[sb3]'`` (torch, and the server).
"""

from __future__ import annotations

import argparse
import contextlib
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator

import numpy as np
import torch
from torch import nn

import openenv_gym


def layer(inputs: int, outputs: int, std: float = np.sqrt(2)) -> nn.Linear:
    linear = nn.Linear(inputs, outputs)
    nn.init.orthogonal_(linear.weight, std)
    nn.init.constant_(linear.bias, 0.0)
    return linear


class Agent(nn.Module):
    def __init__(self, observations: int, actions: int) -> None:
        super().__init__()
        self.critic = nn.Sequential(layer(observations, 64), nn.Tanh(), layer(64, 64), nn.Tanh(), layer(64, 1, 1.0))
        self.actor = nn.Sequential(
            layer(observations, 64), nn.Tanh(), layer(64, 64), nn.Tanh(), layer(64, actions, 0.01)
        )

    def value(self, x: torch.Tensor) -> torch.Tensor:
        return self.critic(x)

    def act(self, x: torch.Tensor, action: torch.Tensor | None = None):
        distribution = torch.distributions.Categorical(logits=self.actor(x))
        if action is None:
            action = distribution.sample()
        return action, distribution.log_prob(action), distribution.entropy(), self.critic(x)


class Rollout:
    """CleanRL's rollout buffer, indexed ``[step, env id]``, filled one group of envs at a time.

    ``act(ids)`` records the envs' current observations and the actions the policy
    picks; ``observe(ids, ...)`` records what those actions led to. Each env counts its
    own steps, so the groups may take turns in any order.
    """

    def __init__(self, agent: Agent, num_steps: int, num_envs: int, obs_dim: int, gamma: float) -> None:
        self.agent, self.num_steps, self.gamma = agent, num_steps, gamma
        self.obs = torch.zeros((num_steps, num_envs, obs_dim))
        self.actions, self.logprobs, self.rewards, self.dones, self.values = (
            torch.zeros((num_steps, num_envs)) for _ in range(5)
        )
        self.next_obs = torch.zeros((num_envs, obs_dim))  # what each env's next action will answer
        self.next_done = torch.zeros(num_envs)  # 1: next_obs starts a new episode
        self.steps = torch.zeros(num_envs, dtype=torch.long)  # steps each env has taken in this rollout
        self.running = np.zeros(num_envs)
        self.episode_returns: list[float] = []

    def start(self, ids: np.ndarray, obs: np.ndarray) -> None:
        """The first observations of envs ``ids``, after a reset."""
        self.next_obs[ids] = torch.as_tensor(obs, dtype=torch.float32)
        self.next_done[ids] = 0.0

    def act(self, ids: np.ndarray) -> np.ndarray:
        """The actions of envs ``ids``, recorded at their next step."""
        at = (self.steps[ids], torch.as_tensor(ids))
        with torch.no_grad():
            action, logprob, _, value = self.agent.act(self.next_obs[ids])
        self.obs[at], self.dones[at] = self.next_obs[ids], self.next_done[ids]
        self.actions[at], self.logprobs[at], self.values[at] = action.float(), logprob, value.flatten()
        self.steps[ids] += 1
        return action.numpy()

    def observe(self, ids: np.ndarray, obs: np.ndarray, reward: np.ndarray, terminated: np.ndarray,
                truncated: np.ndarray, info: dict) -> None:
        """What the last actions of envs ``ids`` led to (same-step autoreset)."""
        done = np.logical_or(terminated, truncated)
        self.running[ids] += reward
        self.episode_returns += self.running[ids[done]].tolist()
        self.running[ids[done]] = 0.0
        reward = torch.as_tensor(reward, dtype=torch.float32)
        cut = np.flatnonzero(truncated & ~terminated)  # ended by the time limit: not a terminal state
        if cut.size:
            with torch.no_grad():
                final = torch.as_tensor(np.stack(info["final_obs"][cut]), dtype=torch.float32)
                reward[cut] += self.gamma * self.agent.value(final).flatten()
        self.rewards[self.steps[ids] - 1, torch.as_tensor(ids)] = reward
        self.next_obs[ids] = torch.as_tensor(obs, dtype=torch.float32)
        self.next_done[ids] = torch.as_tensor(done, dtype=torch.float32)

    def full(self, ids: np.ndarray) -> bool:
        return bool((self.steps[ids] == self.num_steps).all())

    def advantages(self, gae_lambda: float) -> tuple[torch.Tensor, torch.Tensor]:
        """GAE and returns of the full buffer, each env bootstrapped from its own next observation;
        then the buffer is empty again."""
        assert bool((self.steps == self.num_steps).all()), "every env must have taken num_steps steps"
        self.steps[:] = 0
        with torch.no_grad():
            next_value = self.agent.value(self.next_obs).reshape(1, -1)
            advantages, last = torch.zeros_like(self.rewards), 0.0
            for t in reversed(range(self.num_steps)):
                nonterminal = 1.0 - (self.next_done if t == self.num_steps - 1 else self.dones[t + 1])
                following = next_value if t == self.num_steps - 1 else self.values[t + 1]
                delta = self.rewards[t] + self.gamma * following * nonterminal - self.values[t]
                advantages[t] = last = delta + self.gamma * gae_lambda * nonterminal * last
        return advantages, advantages + self.values


def collect_lockstep(envs: openenv_gym.RemoteVectorEnv, rollout: Rollout) -> None:
    """CleanRL's loop: each step sends actions to every env and waits for all of them."""
    ids = np.arange(envs.num_envs)
    while not rollout.full(ids):
        rollout.observe(ids, *envs.step(rollout.act(ids)))


def collect_halves(envs: openenv_gym.RemoteVectorEnv, rollout: Rollout, held: list[np.ndarray]) -> None:
    """Two halves in flight: act on the half that answered first while the other one steps.

    ``held`` are the halves whose observations are known and not yet acted on (all of
    them, between rollouts); a half is held again once its envs have filled the buffer.
    """
    for ids in held:
        envs.send(rollout.act(ids), ids)
    in_flight = len(held)
    held.clear()
    while in_flight:
        obs, reward, terminated, truncated, info = envs.recv()
        ids = info["env_id"]
        rollout.observe(ids, obs, reward, terminated, truncated, info)
        if rollout.full(ids):
            held.append(ids)
            in_flight -= 1
        else:
            envs.send(rollout.act(ids), ids)


@contextlib.contextmanager
def cartpole_servers(count: int, max_sessions: int) -> Iterator[list[str]]:
    """``count`` ``openenv-gym serve CartPole-v1`` processes on 127.0.0.1 (their URLs),
    each stopped by its PID on exit, whatever happened inside the block."""
    processes: list[subprocess.Popen] = []
    try:
        urls = []
        for _ in range(count):
            process = subprocess.Popen(
                [sys.executable, "-m", "openenv_gym.cli", "serve", "CartPole-v1", "--port", "0",
                 "--max-sessions", str(max_sessions), "--busy-poll", "0"],
                stdin=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
            )
            processes.append(process)
            urls.append(served_url(process))
        yield urls
    finally:
        for process in processes:
            process.terminate()
        for process in processes:
            try:
                process.wait(10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(5)


def served_url(process: subprocess.Popen) -> str:
    """The URL a starting ``openenv-gym serve`` logs once it listens (port 0: any free port).
    Its log lines are passed on to this process's stderr."""
    assert process.stderr is not None
    for line in process.stderr:
        sys.stderr.write(line)
        if " url=" in line:
            threading.Thread(target=shutil.copyfileobj, args=(process.stderr, sys.stderr), daemon=True).start()
            return line.rsplit(" url=", 1)[1].split()[0]
    raise RuntimeError(f"openenv-gym serve exited with status {process.wait()} before listening; its error is above")


def evaluate(agent: Agent, env: openenv_gym.RemoteEnv, episodes: int, seed: int) -> np.ndarray:
    """The returns of ``episodes`` episodes on ``env`` (then closed), each action the
    policy's most likely one (SB3's ``evaluate_policy(..., deterministic=True)``)."""
    returns = np.zeros(episodes)
    with env:
        for episode in range(episodes):
            obs, _ = env.reset(seed=seed + episode)
            done = False
            while not done:
                with torch.no_grad():
                    action = agent.actor(torch.tensor(obs, dtype=torch.float32)).argmax().item()
                obs, reward, terminated, truncated, _ = env.step(action)
                returns[episode] += reward
                done = terminated or truncated
    return returns


def main() -> None:
    parser = argparse.ArgumentParser(description="CleanRL-style PPO on RemoteVectorEnv, two halves in flight")
    parser.add_argument("--timesteps", type=int, default=100_000)
    parser.add_argument("--num-envs", type=int, default=8, help="envs in all, half on each server (even)")
    parser.add_argument("--num-steps", type=int, default=32, help="steps of each env per rollout")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--eval-episodes", type=int, default=20)
    parser.add_argument("--lockstep", action="store_true",
                        help="step all envs together with step(), CleanRL's plain loop, to compare")
    args = parser.parse_args()
    if args.num_envs < 2 or args.num_envs % 2:
        parser.error(f"--num-envs must be even, one half on each server, not {args.num_envs}")
    # RL Zoo's tuned PPO hyperparameters for CartPole-v1, as in sb3_ppo_cartpole.py.
    lr, gamma, gae_lambda, epochs, minibatches = 1e-3, 0.98, 0.8, 20, 1
    clip, ent_coef, vf_coef, max_grad_norm = 0.2, 0.0, 0.5, 0.5
    batch = args.num_envs * args.num_steps
    torch.manual_seed(args.seed)
    torch.set_num_threads(1)  # 64-unit layers: more threads only add synchronisation
    rng = np.random.default_rng(args.seed)

    # A SIGTERM (a job scheduler's stop) ends the script as Ctrl-C does, through the finally
    # blocks that stop the servers: they do not watch this process and would outlive it.
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(128 + signum))
    with cartpole_servers(2, max_sessions=args.num_envs) as urls:
        # One half per server: envs 0..N/2-1 on the first, the rest on the second.
        envs = openenv_gym.RemoteVectorEnv(urls, num_envs=args.num_envs, batch_size=args.num_envs // 2,
                                           autoreset_mode="SameStep")
        obs_dim = int(np.prod(envs.single_observation_space.shape))
        agent = Agent(obs_dim, int(envs.single_action_space.n))
        optimizer = torch.optim.Adam(agent.parameters(), lr=lr, eps=1e-5)
        rollout = Rollout(agent, args.num_steps, args.num_envs, obs_dim, gamma)
        held: list[np.ndarray] = []
        if args.lockstep:
            rollout.start(np.arange(args.num_envs), envs.reset(seed=args.seed)[0])
        else:
            envs.async_reset(seed=args.seed)  # env i seeded seed + i, as reset(seed=seed) does
            for _ in range(2):
                obs, *_, info = envs.recv()
                rollout.start(info["env_id"], obs)
                held.append(info["env_id"])
        start, updates, collecting = time.perf_counter(), args.timesteps // batch, 0.0

        for update in range(1, updates + 1):
            remaining = 1.0 - (update - 1.0) / updates  # learning rate and clip range anneal linearly
            optimizer.param_groups[0]["lr"] = lr * remaining
            began = time.perf_counter()
            if args.lockstep:
                collect_lockstep(envs, rollout)
            else:
                collect_halves(envs, rollout, held)
            collecting += time.perf_counter() - began
            advantages, returns = rollout.advantages(gae_lambda)

            b_obs = rollout.obs.reshape(-1, obs_dim)
            b_actions, b_logprobs = rollout.actions.reshape(-1), rollout.logprobs.reshape(-1)
            b_advantages, b_returns = advantages.reshape(-1), returns.reshape(-1)
            indices = np.arange(batch)
            for _ in range(epochs):
                rng.shuffle(indices)
                for chunk in np.array_split(indices, minibatches):
                    _, newlogprob, entropy, newvalue = agent.act(b_obs[chunk], b_actions[chunk].long())
                    ratio = (newlogprob - b_logprobs[chunk]).exp()
                    adv = b_advantages[chunk]
                    adv = (adv - adv.mean()) / (adv.std() + 1e-8)
                    clipped = ratio.clamp(1 - clip * remaining, 1 + clip * remaining)
                    policy_loss = torch.max(-adv * ratio, -adv * clipped).mean()
                    value_loss = 0.5 * ((newvalue.flatten() - b_returns[chunk]) ** 2).mean()
                    loss = policy_loss - ent_coef * entropy.mean() + vf_coef * value_loss
                    optimizer.zero_grad()
                    loss.backward()
                    nn.utils.clip_grad_norm_(agent.parameters(), max_grad_norm)
                    optimizer.step()
            if update % 10 == 0 or update == updates:
                recent = np.mean(rollout.episode_returns[-20:]) if rollout.episode_returns else float("nan")
                print(f"update {update:3d}/{updates}: {update * batch:6d} steps, "
                      f"mean return (last 20 episodes) {recent:6.1f}", flush=True)
        how = "lockstep step() on" if args.lockstep else "two halves in flight over"
        print(f"trained {updates * batch} steps in {time.perf_counter() - start:.0f} s, of which "
              f"{collecting:.0f} s collecting rollouts ({how} 2 servers)", flush=True)
        envs.close()
        returns = evaluate(agent, openenv_gym.RemoteEnv(urls[0]), args.eval_episodes, seed=args.seed)
    print(f"evaluation on the remote CartPole ({args.eval_episodes} episodes, greedy actions): "
          f"mean return {returns.mean():.1f} +- {returns.std():.1f} (max 500)")


if __name__ == "__main__":
    main()
