"""Validation kits: what ``openenv-gym kit`` measures and writes, and that upstream's
static grader accepts it."""

from __future__ import annotations

import json

import gymnasium as gym
import numpy as np
import pytest
import yaml

from openenv_gym.cli import main
from openenv_gym.kit import KIT_FILES, make_kit, write_kit
from openenv_gym.kit.policies import canaries, controller_for, play, search
from openenv_gym.kit.probe import CANARY_SEEDS

validation = pytest.importorskip("openenv.validation")


def probe_result(**overrides):
    """A probe result as :func:`openenv_gym.kit.probe.measure` returns it, for a made-up env."""
    canary = {"kind": "canary", "seed": 0, "ended": True, "seconds": 0.01}
    result = {
        "target": "made.up:Env", "name": "made.up:Env", "env_id": None, "multiagent": False,
        "entry_point": "made.up:Env", "max_episode_steps": None, "reward_threshold": None,
        "action_space": "Discrete", "observation_bytes": 100, "startup_s": 0.5, "peak_rss_mb": 300.0,
        "trajectories": [
            {**canary, "name": "constant", "actions": [1] * 3, "rewards": [0.5, -2.0, 0.25], "return": -1.25, "steps": 3},
            {**canary, "name": "first-legal", "actions": [0] * 2, "rewards": [0.0, 0.0], "return": 0.0, "steps": 2},
            {**canary, "name": "random", "actions": [0, 1] * 60, "rewards": [0.0] * 120, "return": 0.0, "steps": 120},
        ],
        "oracle_source": None,
        "set_state": False,
    }
    return {**result, **overrides}


def test_the_floor_is_the_best_canarys_mean_return_over_its_seeds(tmp_path):
    # A first-legal player that wins one game and loses three is not at the floor 1: its mean is.
    played = [{"kind": "canary", "seed": s, "ended": True, "seconds": 0.01, "name": "first-legal",
               "actions": [0], "rewards": [r], "return": r, "steps": 1} for s, r in enumerate([1.0, -1, -1, -1])]
    kit = write_kit(tmp_path, probe_result(trajectories=[*probe_result()["trajectories"], *played]),
                    seed=0, env_kwargs=None)
    assert kit.floor == 0.0  # the random canary's mean, not first-legal's lucky 1


def test_a_measured_range_covers_every_step_reward_and_return_and_says_so(tmp_path):
    kit = write_kit(tmp_path, probe_result(), seed=0, env_kwargs=None)
    assert kit.reward_range == (-2.0, 0.5)
    assert kit.range_source == "measured over 3 episodes"
    assert kit.floor == 0.0 and kit.floor_margin == 0.25  # half the gap from the best canary to the top
    assert kit.memory_mb == 640  # twice the peak RSS, in 64 MB steps
    assert kit.plan_actions == 100  # upstream's limit, though the random canary played 120
    text = (tmp_path / "openenv.yaml").read_text()
    assert "range: [-2.0, 0.5]  # measured over 3 episodes" in text
    assert "# oracle: none found" in text
    assert not (tmp_path / KIT_FILES["oracle"]).exists()


def test_large_observations_shorten_the_plan_to_fit_upstreams_limits(tmp_path):
    kit = write_kit(tmp_path, probe_result(observation_bytes=2_000), seed=0, env_kwargs=None)
    assert kit.plan_actions == 32  # 64 KiB of observations for upstream's schema check, in 3 s of CPU
    kit = write_kit(tmp_path, probe_result(observation_bytes=1_000_000), seed=0, env_kwargs=None)
    assert kit.plan_actions == 1  # at least one step, or upstream's graders have nothing to check


def test_regenerating_replaces_the_validation_block_and_keeps_the_rest(tmp_path):
    (tmp_path / "openenv.yaml").write_text("spec_version: 1\nname: mine\napp: server.app:app\nport: 8000\n")
    write_kit(tmp_path, probe_result(), seed=0, env_kwargs=None)
    first = (tmp_path / "openenv.yaml").read_text()
    write_kit(tmp_path, probe_result(), seed=0, env_kwargs=None)
    assert (tmp_path / "openenv.yaml").read_text() == first
    manifest = yaml.safe_load(first)
    assert manifest["name"] == "mine" and manifest["port"] == 8000
    assert manifest["validation"]["network"] == {"mode": "no-network"}


def test_a_kit_for_cartpole_passes_upstreams_static_level(tmp_path):
    kit = make_kit("CartPole-v1", tmp_path)
    assert kit.reward_range == (0.0, 500.0) and kit.range_source == "table: CartPole-v1"
    assert kit.oracle_return == 500.0 and kit.floor < 50
    assert kit.tags == ["gymnasium", "classic-control"]
    plan = json.loads((tmp_path / KIT_FILES["plan"]).read_text())
    assert plan["reset"]["seed"] == 0 and 1 <= len(plan["actions"]) <= 100
    shipped = json.loads((tmp_path / KIT_FILES["canaries"]).read_text())
    assert [t["name"] for t in shipped["trajectories"][:3]] == ["constant", "first-legal", "random"]
    assert sorted({t["reset"]["seed"] for t in shipped["trajectories"]}) == list(range(CANARY_SEEDS))
    report = validation.run_validation(tmp_path, max_level=validation.Level.STATIC)
    assert report.verdict is validation.Verdict.PASS, report.results


def test_the_cli_writes_a_kit_and_reports_what_it_wrote(tmp_path, capsys):
    assert main(["kit", "FrozenLake-v1", "--env-kwargs", '{"is_slippery": false}', "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "oracle return 1 (exact-foresight search of the seeded env)" in out
    assert (tmp_path / KIT_FILES["oracle"]).exists()


def test_the_cli_says_what_to_do_when_there_is_nowhere_to_write(capsys):
    assert main(["kit", "CartPole-v1"]) == 1
    assert "--out DIR" in capsys.readouterr().err


# -- policies ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "env_id, at_least",
    [("CartPole-v1", 500.0), ("MountainCar-v0", -130.0), ("Acrobot-v1", -150.0), ("Pendulum-v1", -200.0)],
)
def test_the_bundled_controllers_solve_their_task(env_id, at_least):
    env = gym.make(env_id)
    _, rewards, ended = play(env, controller_for(env_id), seed=0, max_steps=1000)
    assert ended and sum(rewards) >= at_least


def test_canaries_respect_the_action_mask():
    space = gym.spaces.Discrete(4)
    policies = canaries(space, seed=0)
    legal = np.array([0, 0, 1, 1], dtype=np.int8)
    assert policies["first-legal"](None, {}, legal) == 2
    assert policies["constant"](None, {}, legal) == 3
    assert all(policies["random"](None, {}, legal) in (2, 3) for _ in range(20))


def test_search_finds_the_goal_of_a_deterministic_env_and_gives_up_within_its_budget():
    env = gym.make("FrozenLake-v1", is_slippery=False)
    actions = search(env, seed=0, goal=1.0, max_steps=100, budget_s=10)
    assert actions is not None
    scripted = iter(actions)
    assert sum(play(env, lambda obs, info, mask: next(scripted), seed=0, max_steps=100)[1]) == 1.0
    assert search(env, seed=0, goal=2.0, max_steps=100, budget_s=0.5) is None
