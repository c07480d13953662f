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
from pettingzoo.classic import tictactoe_v3  # noqa: E402

import openenv_gym  # noqa: E402
from openenv_gym.trl import environment_factory, rollout_flags, seed_dataset, tiny_chat_model  # noqa: E402
from tests.conftest import asgi_server  # noqa: E402
from tests.trl.scripted import ScriptedGenerate, calls_so_far, tool_call  # noqa: E402
from tests.upstream_tools import corridor_app  # noqa: E402

pytestmark = pytest.mark.timeout(600)

#: FrozenLake 4x4 without slipping: to the goal, into a hole (then one move too many),
#: an illegal action.
TO_GOAL = ["down", "down", "right", "right", "down", "right"]
INTO_HOLE = ["right", "down", "left"]
ILLEGAL = ["jump"]
PLANS = [TO_GOAL, INTO_HOLE, ILLEGAL, TO_GOAL]


#: Tic-tac-toe against an opponent that takes the first free cell (cells numbered down
#: the columns): a win on the middle row; a loss, after trying a taken cell.
WIN = [4, 1, 7]
LOSS = [8, 8, 4, 6]


def plans_policy(plans: list[list], tool: str = "act", argument: str = "action"):
    """Row ``i`` of each generation batch calls ``tool`` with the actions of
    ``plans[i]``, one per turn, then stops; later turns are told apart by the calls
    already made (so no plan may be a prefix of another)."""

    def policy(conversation: str, row: int | None) -> str:
        made = [call["arguments"][argument] for call in calls_so_far(conversation)]
        plan = plans[row] if row is not None else next(p for p in plans if p[: len(made)] == made)
        return tool_call(tool, **{argument: plan[len(made)]}) if len(made) < len(plan) else "Done."

    return policy


def corridor_policy(conversation: str, row: int | None) -> str:
    """Even rows walk right until the exit, odd rows left twice."""
    made = [call["arguments"]["direction"] for call in calls_so_far(conversation)]
    right = row % 2 == 0 if row is not None else made[0] == "right"
    if right:
        at_exit = conversation.rfind("cell 3 of") > conversation.rfind("<tool_call>")
        return "Done." if made and at_exit else tool_call("move", direction="right")
    return tool_call("move", direction="left") if len(made) < 2 else "Done."


def train(env_class, dataset, policy, tmp_path, steps=3, reward_funcs=None, **config):
    model, tokenizer = tiny_chat_model()
    args = trl.GRPOConfig(
        output_dir=str(tmp_path), learning_rate=0.1, per_device_train_batch_size=4, num_generations=2,
        max_steps=steps, max_completion_length=4096, max_tool_calling_iterations=10, logging_steps=1,
        report_to="none", use_cpu=True, save_strategy="no", **config,
    )
    with patch.dict(os.environ, {"TRL_EXPERIMENTAL_SILENCE": "1"}):
        trainer = trl.GRPOTrainer(
            model=model, processing_class=tokenizer, args=args, train_dataset=dataset, environment_factory=env_class,
            reward_funcs=reward_funcs,
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
        trainer, changed, before = train(
            FrozenLake, seed_dataset(8, prompt="Walk to G."), plans_policy(PLANS), tmp_path,
            reward_funcs=rollout_flags(), reward_weights=[0.0, 0.0],
        )
    logs = [entry for entry in trainer.state.log_history if "rewards/FrozenLake_v1/mean" in entry]
    assert len(logs) == 3
    for entry in logs:
        assert entry["rewards/FrozenLake_v1/mean"] == pytest.approx(0.5)
        # How the episodes ended, logged at weight 0: the "jump" rollout left its episode unfinished.
        assert entry["rewards/episode_done/mean"] == pytest.approx(3 / 4)
        assert entry["rewards/episode_truncated/mean"] == 0
        # 6 + 3 + 1 + 6 calls over 4 rollouts; failing: the move after the hole and "jump".
        assert entry["tools/call_frequency"] == pytest.approx(16 / 4)
        assert entry["tools/failure_frequency"] == pytest.approx(2 / 16)
    envs = trainer.environments
    assert [env.reward for env in envs] == [1.0, 0.0, 0.0, 1.0]
    assert [env.done for env in envs] == [True, True, False, True]
    assert [env.steps for env in envs] == [6, 2, 0, 6]
    assert trainer.state.global_step == 3
    assert changed == list(before)


def test_grpo_on_an_upstream_mcp_env_calls_its_own_tools(tmp_path):
    """An env built on openenv's MCPEnvironment: its tools become the methods, and the
    rewards TRL logs are the ones its call_tool steps carry."""
    with asgi_server(corridor_app()) as url:
        Corridor = environment_factory(url)
        assert Corridor.__name__ == "Corridor"
        assert {"move", "observe"} <= set(vars(Corridor))
        assert "direction: Where to go." in Corridor.move.__doc__
        prompt = "Walk to the exit of the corridor."
        trainer, changed, before = train(Corridor, seed_dataset(8, prompt=prompt), corridor_policy, tmp_path, steps=2)
    logs = [entry for entry in trainer.state.log_history if "rewards/Corridor/mean" in entry]
    assert len(logs) == 2
    for entry in logs:
        assert entry["rewards/Corridor/mean"] == pytest.approx(0.5)
        assert entry["tools/failure_frequency"] == 0
    envs = trainer.environments
    assert [env.reward for env in envs] == [1.0, 0.0, 1.0, 0.0]
    assert [env.done for env in envs] == [True, False, True, False]
    assert [env.steps for env in envs][1::2] == [2, 2]
    assert changed == list(before)


def test_grpo_on_a_served_pettingzoo_game(tmp_path):
    """Tic-tac-toe served with an opponent on the server's side: an act tool from its
    text view, an illegal move a tool failure TRL counts, the game's rewards logged."""
    app = openenv_gym.create_app(tictactoe_v3.env, opponent=lambda turn: turn.legal_actions[0])
    with asgi_server(app) as url:
        TicTacToe = environment_factory(url, tools="client", name="TicTacToe")
        trainer, changed, before = train(
            TicTacToe, seed_dataset(8, prompt="Win at tic-tac-toe."), plans_policy([WIN, LOSS, LOSS, WIN]),
            tmp_path, steps=2,
        )
    logs = [entry for entry in trainer.state.log_history if "rewards/TicTacToe/mean" in entry]
    assert len(logs) == 2
    for entry in logs:
        assert entry["rewards/TicTacToe/mean"] == pytest.approx(0.0)
        assert entry["tools/call_frequency"] == pytest.approx(14 / 4)
        assert entry["tools/failure_frequency"] == pytest.approx(2 / 14)
    envs = trainer.environments
    assert [env.reward for env in envs] == [1.0, -1.0, -1.0, 1.0]
    assert [env.steps for env in envs] == [3, 3, 3, 3]
    assert all(env.done for env in envs)
    assert changed == list(before)


def load_example(name: str):
    """A module of ``examples/``, imported from its file."""
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[2] / "examples" / f"{name}.py"
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_two_trainers_example_warm_starts_on_the_prompt_grpo_shows(tmp_path):
    """``examples/one_env_two_trainers.py`` teaches its model a tool call on one prompt
    before GRPO: it must be, token for token, the first prompt GRPOTrainer renders for
    the example's dataset (another tool list, or the observation elsewhere, and the
    warm-started model writes nothing GRPO can use)."""
    example = load_example("one_env_two_trainers")
    with openenv_gym.local_server("FrozenLake-v1", env_kwargs={"is_slippery": False}) as url:
        FrozenLake = environment_factory(url)
        _, tokenizer = tiny_chat_model()
        warm = example.warm_start_prompt(tokenizer, FrozenLake())
        shown: list[list[int]] = []

        class Recording(ScriptedGenerate):
            def __call__(self, input_ids, **kwargs):
                if self.calls == 0:
                    pad = self.tokenizer.pad_token_id
                    shown.extend(row[row != pad].tolist() for row in input_ids)
                return super().__call__(input_ids, **kwargs)

        model, tokenizer = tiny_chat_model()
        args = trl.GRPOConfig(
            output_dir=str(tmp_path), learning_rate=0.1, per_device_train_batch_size=4, num_generations=2,
            max_steps=1, max_completion_length=256, max_tool_calling_iterations=2, logging_steps=1,
            report_to="none", use_cpu=True, save_strategy="no",
        )
        with patch.dict(os.environ, {"TRL_EXPERIMENTAL_SILENCE": "1"}):
            trainer = trl.GRPOTrainer(model=model, processing_class=tokenizer, args=args,
                                      train_dataset=example.dataset(4), environment_factory=FrozenLake)
        with patch.object(trainer.model, "generate", side_effect=Recording(tokenizer, lambda text, row: "Done.")):
            trainer.train()
    assert shown, "GRPOTrainer generated nothing"
    assert all(ids == warm for ids in shown)
    text = tokenizer.decode(warm)
    for tool in ("act", "observe", "legal_actions"):
        assert f'"name": "{tool}"' in text
    assert "new_episode" not in text and example.PROMPT in text and "*FFF" in text
    assert "FrozenLake: walk from the start S to the goal G" in text  # the env's instructions


def test_score_shapes_the_reward_and_is_no_tool():
    """``score=`` decides a rollout's reward from its env: here an unfinished episode costs
    1. It is not one of the tools TRL shows the model."""
    from openenv_gym.trl import model_tools

    with openenv_gym.local_server("FrozenLake-v1", env_kwargs={"is_slippery": False}) as url:
        FrozenLake = environment_factory(url, score=lambda env: env.reward if env.done else env.reward - 1)
        plain = environment_factory(url)
        env, other = FrozenLake(), plain()
        assert [tool.__name__ for tool in model_tools(env)] == ["act", "legal_actions", "observe"]
        for rollout in (env, other):
            rollout.reset(seed=0)
            rollout.act(action="down")
        assert (env.get_reward(), other.get_reward()) == (-1.0, 0.0)  # unfinished
        for action in TO_GOAL[1:]:
            env.act(action=action)
        assert env.done and env.get_reward() == 1.0


@pytest.fixture(scope="module")
def short_cliff_url():
    """CliffWalking whose time limit ends an episode after 3 steps (each costs -1)."""
    with openenv_gym.local_server("CliffWalking-v1", env_kwargs={"max_episode_steps": 3}) as url:
        yield url


@pytest.mark.parametrize("tools", ["server", "client"])
def test_reward_rules_and_the_truncation_flag(short_cliff_url, tools):
    """Named score rules and clip, over a real server's episode cut short by its time
    limit, on both routes: the server's tools and an act tool made on the client."""
    envs = {
        "return": environment_factory(short_cliff_url, tools=tools)(),
        "terminal": environment_factory(short_cliff_url, tools=tools, score="terminal")(),
        "clipped": environment_factory(short_cliff_url, tools=tools, clip=(-2.0, 0.0))(),
    }
    for env in envs.values():
        env.reset(seed=0)
        env.act(action="up")
        assert (env.done, env.truncated) == (False, False)
        assert env.get_reward() == (0.0 if env is envs["terminal"] else -1.0)  # "terminal": nothing unfinished
        env.act(action="up")
        env.act(action="up")
        assert (env.done, env.truncated, env.steps, env.reward) == (True, True, 3, -3.0)
    # The return; the last step's reward (an unfinished episode would score 0); the return clipped.
    assert {rule: env.get_reward() for rule, env in envs.items()} == {"return": -3.0, "terminal": -1.0, "clipped": -2.0}
    with pytest.raises(ValueError, match="the episode is over"):
        envs["return"].act(action="up")
    envs["return"].reset(seed=0)  # a new episode starts a new rollout
    assert (envs["return"].done, envs["return"].truncated, envs["return"].get_reward()) == (False, False, 0.0)


def test_a_score_or_clip_that_is_none_says_what_to_give(short_cliff_url):
    with pytest.raises(ValueError, match="'return', 'terminal' or a function"):
        environment_factory(short_cliff_url, score="final")
    with pytest.raises(ValueError, match="lo <= hi"):
        environment_factory(short_cliff_url, clip=(1.0, -1.0))
