"""TRL's GRPOTrainer trains on served envs through openenv_gym.trl, on CPU.

The model is the tiny one :func:`openenv_gym.trl.tiny_chat_model` builds, its
``generate`` scripted (:mod:`tests.trl.scripted`) so that the rollouts are known: the
optimizer steps, the tool calls, the env's rewards and the failures are real.
"""

from __future__ import annotations

import os
from unittest.mock import patch

import pytest

trl = pytest.importorskip("trl")

import torch  # noqa: E402

import openenv_gym  # noqa: E402
from openenv_gym.trl import environment_factory, seed_dataset, tiny_chat_model  # noqa: E402
from tests.trl.scripted import ScriptedGenerate, calls_so_far, tool_call  # noqa: E402

pytestmark = pytest.mark.timeout(600)

#: FrozenLake 4x4 without slipping: to the goal, into a hole (then one move too many),
#: an illegal action.
TO_GOAL = ["down", "down", "right", "right", "down", "right"]
INTO_HOLE = ["right", "down", "left"]
ILLEGAL = ["jump"]
PLANS = [TO_GOAL, INTO_HOLE, ILLEGAL, TO_GOAL]


def frozen_lake_policy(conversation: str, row: int | None) -> str:
    made = [call["arguments"]["action"] for call in calls_so_far(conversation)]
    plan = PLANS[row] if row is not None else next(p for p in PLANS if p[: len(made)] == made)
    return tool_call("act", action=plan[len(made)]) if len(made) < len(plan) else "Done."


def train(env_class, dataset, policy, tmp_path, steps=3, **config):
    model, tokenizer = tiny_chat_model()
    args = trl.GRPOConfig(
        output_dir=str(tmp_path), learning_rate=0.1, per_device_train_batch_size=4, num_generations=2,
        max_steps=steps, max_completion_length=4096, max_tool_calling_iterations=10, logging_steps=1,
        report_to="none", use_cpu=True, save_strategy="no", **config,
    )
    with patch.dict(os.environ, {"TRL_EXPERIMENTAL_SILENCE": "1"}):
        trainer = trl.GRPOTrainer(
            model=model, processing_class=tokenizer, args=args, train_dataset=dataset, environment_factory=env_class,
        )
    before = {name: p.detach().clone() for name, p in trainer.model.named_parameters()}
    generate = ScriptedGenerate(tokenizer, policy)
    with patch.object(trainer.model, "generate", side_effect=generate):
        trainer.train()
    changed = [n for n, p in trainer.model.named_parameters() if not torch.equal(before[n], p.detach())]
    return trainer, changed, before


def test_grpo_on_served_frozen_lake(tmp_path):
    with openenv_gym.local_server("FrozenLake-v1", env_kwargs={"is_slippery": False}) as url:
        FrozenLake = environment_factory(url)
        assert FrozenLake.__name__ == "FrozenLake_v1"
        trainer, changed, before = train(FrozenLake, seed_dataset(8, prompt="Walk to G."), frozen_lake_policy, tmp_path)
    logs = [entry for entry in trainer.state.log_history if "rewards/FrozenLake_v1/mean" in entry]
    assert len(logs) == 3
    for entry in logs:
        assert entry["rewards/FrozenLake_v1/mean"] == pytest.approx(0.5)
        # 6 + 3 + 1 + 6 calls over 4 rollouts; failing: the move after the hole and "jump".
        assert entry["tools/call_frequency"] == pytest.approx(16 / 4)
        assert entry["tools/failure_frequency"] == pytest.approx(2 / 16)
    envs = trainer.environments
    assert [env.reward for env in envs] == [1.0, 0.0, 0.0, 1.0]
    assert [env.done for env in envs] == [True, True, False, True]
    assert [env.steps for env in envs] == [6, 2, 0, 6]
    assert trainer.state.global_step == 3
    assert changed == list(before)
