"""SkyRL's text env (openenv_gym.skyrl.TextEnv) on a served env, made as SkyRL makes it:
from its registry, with the run's env_config and the dataset row's extras."""

from __future__ import annotations

import pytest

skyrl_gym = pytest.importorskip("skyrl_gym")

import openenv_gym  # noqa: E402
from openenv_gym.client.tools import env_tools  # noqa: E402
from openenv_gym.skyrl import TextEnv  # noqa: E402


@pytest.fixture(scope="module")
def frozen_lake_url():
    with openenv_gym.local_server("FrozenLake-v1", env_kwargs={"is_slippery": False}) as url:
        yield url


def test_an_episode_made_from_skyrl_s_registry(frozen_lake_url):
    skyrl_gym.register("openenv_gym_frozen_lake", entry_point="openenv_gym.skyrl:TextEnv")
    try:
        env = skyrl_gym.make("openenv_gym_frozen_lake", env_config={"url": frozen_lake_url, "max_turns": 10},
                             extras={"seed": 3})
    finally:
        skyrl_gym.registry.pop("openenv_gym_frozen_lake")
    assert isinstance(env, TextEnv) and env.seed == 3 and env.max_turns == 10
    prompt, _ = env.init([{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Reach G."}])
    assert prompt[0] == {"role": "system", "content": "Be brief."}
    # The env's instructions, then the first observation as the server's view writes it (the map too).
    instructions, observation = prompt[1]["content"].removeprefix("Reach G.\n\n").split("\n\n")
    assert instructions.startswith("FrozenLake: walk from the start S to the goal G")
    assert "Actions: left (move left)" in instructions
    # The server's own instructions, as TRL's classes and verifiers' tasks show them: its view has the map.
    assert instructions == env_tools(frozen_lake_url).instructions and "and the map" in instructions
    assert observation == "position: row 0, column 0 (cell 0)\nmap (* = you):\n*FFF\nFHFH\nFFFH\nHFFG"
    replies = ["down", '{"action": "down"}', "<action>right</action>", "fly", "```json\n2\n```", "down"]
    outs = [env.step(reply) for reply in replies]
    assert [out["metadata"]["illegal"] for out in outs] == [False, False, False, True, False, False]
    assert not any(out["metadata"]["done"] or out["metadata"]["truncated"] for out in outs)
    assert "not an action here" in outs[3]["observations"][0]["content"]
    assert "left, down, right, up" in outs[3]["observations"][0]["content"]
    assert [out["done"] for out in outs] == [False] * 5 + [False]
    last = env.step("right")
    assert (last["reward"], last["done"], last["observations"]) == (1.0, True, [])
    assert env.get_metrics() == {"turns": 7, "episode_return": 1.0, "done": True, "truncated": False}
    env.close()


def test_turns_run_out(frozen_lake_url):
    env = TextEnv(url=frozen_lake_url, max_turns=2)
    env.init([{"role": "user", "content": "Go."}])
    assert env.step("left")["done"] is False
    assert env.step("nonsense")["done"] is True
    env.close()
    with pytest.raises(TypeError, match="needs the env"):
        TextEnv(env_config={})


def test_instructions_can_be_left_out(frozen_lake_url):
    env = TextEnv(url=frozen_lake_url, instructions=False)
    prompt, _ = env.init([{"role": "user", "content": "Go."}])
    assert prompt[0]["content"].startswith("Go.\n\nposition: row 0, column 0 (cell 0)\nmap")
    env.close()


@pytest.fixture(scope="module")
def short_cliff_url():
    """CliffWalking whose time limit ends an episode after 3 steps (each costs -1)."""
    with openenv_gym.local_server("CliffWalking-v1", env_kwargs={"max_episode_steps": 3}) as url:
        yield url


@pytest.mark.parametrize(("rule", "rewards"), [
    ({}, [-1.0, 0.0, -1.0, -1.0]),                                      # each turn the env's reward
    ({"score": "terminal"}, [0.0, 0.0, 0.0, -1.0]),                     # the last step's, on the last turn
    ({"clip": (-2.0, 0.0)}, [0.0, 0.0, 0.0, -2.0]),                     # the return, clipped
    ({"score": lambda rollout: rollout.steps}, [0.0, 0.0, 0.0, 3.0]),   # a function of the rollout
])
def test_score_rules_and_how_the_episode_ended(short_cliff_url, rule, rewards):
    env = TextEnv(url=short_cliff_url, **rule)
    env.init([{"role": "user", "content": "Go."}])
    outs = [env.step(reply) for reply in ("up", "fly", "up", "up")]
    assert [out["reward"] for out in outs] == rewards
    assert [out["done"] for out in outs] == [False, False, False, True]
    assert [(out["metadata"]["done"], out["metadata"]["truncated"]) for out in outs][-2:] == [(False, False), (True, True)]
    assert env.get_metrics() == {"turns": 4, "episode_return": -3.0, "done": True, "truncated": True}
    env.close()


def test_out_of_turns_is_no_end_of_the_episode(short_cliff_url):
    """max_turns stops the rollout, not the episode: done and truncated stay the env's,
    and a score rule scores the unfinished episode on the last turn."""
    env = TextEnv(url=short_cliff_url, max_turns=2, score="terminal")
    env.init([{"role": "user", "content": "Go."}])
    outs = [env.step("up"), env.step("up")]
    assert [(out["reward"], out["done"]) for out in outs] == [(0.0, False), (0.0, True)]
    assert env.get_metrics() == {"turns": 2, "episode_return": -2.0, "done": False, "truncated": False}
    env.close()
