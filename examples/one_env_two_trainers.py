"""One served FrozenLake, two trainers: SB3 PPO on its numbers, TRL GRPO on its tools.

    python examples/one_env_two_trainers.py [--ppo-steps 20000] [--grpo-steps 6]

Serves FrozenLake-v1 (4x4, not slippery) once with openenv-gym on 127.0.0.1. Then:

1. Stable-Baselines3 PPO trains through ``RemoteVectorEnv`` (4 remote envs behind
   ``openenv_gym.sb3.RemoteVecEnv``); printed: the share of 20 deterministic episodes on
   the remote env that reach the goal, before and after.
2. TRL's ``GRPOTrainer`` trains a language model through the same server's tools, with
   ``openenv_gym.trl.environment_factory(url)``: the model calls ``act(action)`` with
   ``left``/``down``/``right``/``up`` and the env's reward is the GRPO reward. No model
   hub is reachable here, so the model is ``tiny_chat_model()`` (a random 2-layer Qwen2
   built in code), first taught by a short supervised warm start to write a tool call
   (each direction alike, so it learns the format, not the way); printed per GRPO
   step: the mean episode return, tool calls per rollout and the share that failed.

A tiny model learns little in a few GRPO steps: the point of part 2 is the pipeline
(real tool calls from real generation reaching the served env, its rewards in TRL's
logs), on CPU in minutes. Needs ``pip install 'openenv-gym[sb3,trl]'``.
"""

from __future__ import annotations

import argparse
import json
import os
import time

import gymnasium as gym
import torch
from stable_baselines3 import PPO
from stable_baselines3.common.evaluation import evaluate_policy
from stable_baselines3.common.monitor import Monitor

import openenv_gym
from openenv_gym.sb3 import RemoteVecEnv
from openenv_gym.trl import environment_factory, first_prompt_ids, seed_dataset, tiny_chat_model

PROMPT = "Walk from S to the goal G without falling into a hole H. Move with the act tool."
DIRECTIONS = ["left", "down", "right", "up"]


def ppo(url: str, steps: int) -> None:
    venv = RemoteVecEnv(url, num_envs=4)
    model = PPO("MlpPolicy", venv, n_steps=128, batch_size=64, ent_coef=0.01, seed=0, device="cpu", verbose=0)
    remote = Monitor(gym.make("openenv/Remote-v0", base_url=url))
    before, _ = evaluate_policy(model, remote, n_eval_episodes=20, deterministic=True)
    start = time.perf_counter()
    model.learn(steps, progress_bar=False)
    after, _ = evaluate_policy(model, remote, n_eval_episodes=20, deterministic=True)
    remote.close()
    venv.close()
    print(f"PPO, {steps} steps in {time.perf_counter() - start:.0f} s: goal reached in "
          f"{before:.0%} of 20 episodes before, {after:.0%} after")


def dataset(rows: int):
    """GRPO's rows: the task, and a seed per row."""
    return seed_dataset(rows, prompt=PROMPT)


def warm_start_prompt(tokenizer, env) -> list[int]:
    """The token ids of the first prompt GRPO shows for the first row: the tools' schemas
    as TRL lists them, the task and the first observation (``tests/trl/test_grpo.py``
    checks them against what GRPOTrainer itself renders)."""
    return first_prompt_ids(env, dataset(1)[0], tokenizer)


def warm_start(model, tokenizer, env, steps: int) -> None:
    """Supervised steps on one turn: the first prompt as GRPO shows it, then a tool call
    of each direction (the loss on the call alone)."""
    prompt_ids = warm_start_prompt(tokenizer, env)
    optimizer = torch.optim.AdamW(model.parameters(), lr=5e-3)
    model.train()
    for _ in range(steps):
        batch, labels = [], []
        for direction in DIRECTIONS:
            call = json.dumps({"name": "act", "arguments": {"action": direction}})
            call = f"<tool_call>\n{call}\n</tool_call>"
            completion = tokenizer.encode(call + tokenizer.eos_token)
            batch.append(prompt_ids + completion)
            labels.append([-100] * len(prompt_ids) + completion)
        width = max(len(row) for row in batch)
        mask = [[1] * len(row) + [0] * (width - len(row)) for row in batch]
        batch = [row + [tokenizer.pad_token_id] * (width - len(row)) for row in batch]
        labels = [row + [-100] * (width - len(row)) for row in labels]
        loss = model(
            input_ids=torch.tensor(batch), attention_mask=torch.tensor(mask), labels=torch.tensor(labels)
        ).loss
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
    print(f"warm start: {steps} supervised steps, last loss {loss.item():.3f}")


def grpo(url: str, steps: int, warm_steps: int, output_dir: str) -> None:
    from trl import GRPOConfig, GRPOTrainer

    FrozenLake = environment_factory(url)
    model, tokenizer = tiny_chat_model(hidden_size=64)
    start = time.perf_counter()
    warm_start(model, tokenizer, FrozenLake(), warm_steps)
    args = GRPOConfig(
        output_dir=output_dir, learning_rate=1e-4, per_device_train_batch_size=8, num_generations=4,
        max_steps=steps, max_completion_length=1024, max_tool_calling_iterations=8, logging_steps=1,
        report_to="none", use_cpu=True, save_strategy="no", seed=0,
    )
    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
    trainer = GRPOTrainer(
        model=model, processing_class=tokenizer, args=args, environment_factory=FrozenLake,
        train_dataset=dataset(64),
    )
    trainer.train()
    key = f"rewards/{FrozenLake.__name__}/mean"
    for entry in (e for e in trainer.state.log_history if key in e):
        print(f"GRPO step {entry['step']}: mean return {entry[key]:.2f}, "
              f"tool calls per rollout {entry['tools/call_frequency']:.1f}, "
              f"failed {entry['tools/failure_frequency']:.0%}")
    print(f"GRPO: {steps} steps (and the warm start) in {time.perf_counter() - start:.0f} s")


def main() -> None:
    parser = argparse.ArgumentParser(description="SB3 PPO and TRL GRPO on one served FrozenLake")
    parser.add_argument("--ppo-steps", type=int, default=20_000)
    parser.add_argument("--grpo-steps", type=int, default=6)
    parser.add_argument("--warm-start-steps", type=int, default=250)
    parser.add_argument("--output-dir", default=os.path.join(os.environ.get("TMPDIR", "/tmp"), "grpo-frozen-lake"))
    args = parser.parse_args()
    torch.set_num_threads(1)
    torch.manual_seed(0)
    # 4 PPO envs, 1 evaluation env, 8 GRPO rollouts and the warm start's env.
    with openenv_gym.local_server("FrozenLake-v1", env_kwargs={"is_slippery": False}, max_sessions=16) as url:
        ppo(url, args.ppo_steps)
        grpo(url, args.grpo_steps, args.warm_start_steps, args.output_dir)


if __name__ == "__main__":
    main()
