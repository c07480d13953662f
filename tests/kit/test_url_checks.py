"""``openenv-gym check URL`` on servers like upstream OpenEnv's own: one session at a time,
seeds ignored, no declared range, an env that fails on the server. Each gets a full report
with no ERROR it does not deserve, the skips say why, and what a URL makes weaker says so."""

from __future__ import annotations

import contextlib
import math
import random
import uuid
from types import SimpleNamespace

import gymnasium as gym
import pytest

from openenv_gym.catalog.grid_world_env import GridWorldEnvironment
from openenv_gym.kit import remote
from openenv_gym.kit.checks import hacking, run_checks, server_fault
from openenv_gym.server.app import create_app
from tests.conftest import asgi_server

pytest.importorskip("openenv")


def by_id(report: dict) -> dict[str, dict]:
    return {r["check_id"]: r for r in report["results"]}


@pytest.fixture(scope="module")
def one_session_grid():
    """Upstream's grid_world as upstream serves it: one session at a time (our built-in
    server speaks its schema exactly)."""
    with asgi_server(create_app(GridWorldEnvironment, max_sessions=1)) as url:
        yield url


def openenv_app(environment: type, **kwargs):
    from openenv.core.env_server import create_app as openenv_create_app

    return openenv_create_app(environment, *kwargs.pop("models"), **kwargs)


def unseeded_catch():
    """An env on openenv's own create_app that ignores reset's seed, as upstream's OpenSpiel
    and Atari servers do: the ball falls in a column of the global, unseeded ``random``."""
    from openenv.core.env_server.interfaces import Environment
    from openenv.core.env_server.types import Action, Observation, State

    class CatchAction(Action):
        move: int

    class CatchObservation(Observation):
        ball: int = 0
        paddle: int = 2
        row: int = 0
        legal_actions: list[int] = []

    class UnseededCatch(Environment):
        SUPPORTS_CONCURRENT_SESSIONS = True

        def __init__(self) -> None:
            super().__init__()
            self._state = State(episode_id=None, step_count=0)

        def observe(self, reward: float, done: bool) -> CatchObservation:
            return CatchObservation(ball=self.ball, paddle=self.paddle, row=self.row, legal_actions=[0, 1, 2],
                                    reward=reward, done=done)

        def reset(self, seed=None, episode_id=None, **kwargs) -> CatchObservation:
            self.ball, self.paddle, self.row = random.randrange(5), 2, 0
            self._state = State(episode_id=episode_id or str(uuid.uuid4()), step_count=0)
            return self.observe(0.0, False)

        def step(self, action: CatchAction, **kwargs) -> CatchObservation:
            self.paddle = min(4, max(0, self.paddle + action.move - 1))
            self.row += 1
            self._state.step_count += 1
            if self.row == 4:
                return self.observe(1.0 if self.paddle == self.ball else -1.0, True)
            return self.observe(0.0, False)

        @property
        def state(self) -> State:
            return self._state

    return openenv_app(UnseededCatch, models=(CatchAction, CatchObservation), max_concurrent_envs=4)


def test_a_one_session_server_gets_a_full_report_with_learnability_trained_over_the_wire(one_session_grid):
    facts = remote.read_facts(one_session_grid)
    assert not facts.concurrent and "CAPACITY_REACHED" in facts.sessions_evidence
    report = run_checks(one_session_grid)
    results = by_id(report)
    assert "error" not in {r["status"] for r in report["results"]}
    isolation = results["runtime.episode_isolation"]
    assert isolation["status"] == "skip" and "holds one session at a time" in isolation["evidence"][0]
    assert "4 sessions not measured" in " ".join(results["perf.throughput"]["evidence"])
    learned = results["learning.learnability"]
    assert learned["status"] == "pass" and learned["measured"]["learner"] == "tabular Q-learning"
    assert "trained over the wire" in " ".join(learned["evidence"])
    # The learner's best return is the observed top the checks after it compare with.
    assert results["semantic.floor_gap"]["status"] == "pass"
    assert results["semantic.floor_gap"]["measured"]["top"] == pytest.approx(0.3)
    assert "weaker at a URL" in results["semantic.floor_gap"]["evidence"][-1]
    assert results["hacking.repeated_action"]["status"] == "pass"
    assert results["hacking.reward_range"]["measured"]["observed"] == [-0.1, 1.0]
    # Outside the server's own schema: an enum value it does not list, a wrong type, an unknown key.
    outside = results["hacking.out_of_space"]
    assert outside["status"] == "pass" and outside["measured"]["outside"] == "the server's /schema"
    assert any("not one of its enum" in name for name in outside["measured"]["actions_tried"])


def test_a_server_that_ignores_seeds_is_told_so():
    with asgi_server(unseeded_catch()) as url:
        facts = remote.read_facts(url)
        assert facts.concurrent
        assert facts.seed_problem is not None and "ignores reset's seed" in facts.seed_problem
        report = run_checks(url)
    results = by_id(report)
    determinism = results["runtime.episode_determinism"]
    assert determinism["status"] == "fail"
    assert any("ignores reset's seed" in line for line in determinism["evidence"])
    assert "openenv-gym list" in determinism["remediation"]
    # Isolation cannot tell shared state from chance here: it says so instead of failing.
    assert results["runtime.episode_isolation"]["status"] == "skip"
    assert "unmet dependency" in results["runtime.episode_isolation"]["evidence"][0]
    # Catch is learnable over the wire; one action repeated is not the top over 8 random drops,
    # however low the learner's one evaluation set the top: a lucky mean must clear three
    # standard errors on a server whose episodes are chance.
    assert results["learning.learnability"]["status"] == "pass"
    repeated = results["hacking.repeated_action"]
    assert repeated["status"] == "pass"
    assert repeated["measured"]["standard_error"] > 0 and "three standard errors" in repeated["evidence"][1]
    assert results["hacking.reset_abuse"]["status"] == "pass"  # resetting dodges losses; it earns nothing


class Draws:
    """A checker as ``hacking.repeated_action`` uses it, whose episodes return set draws: action
    ``a`` at seed ``s`` returns ``returns[a][s]``; the top 0.2 with a margin of 0.2, as a learner's
    one unlucky evaluation of an unseeded Catch sets them at a URL."""

    def __init__(self, returns: list[list[float]], *, chance: bool) -> None:
        self.returns = returns
        self.kit = SimpleNamespace(probe_seeds=list(range(len(returns[0]))), top=0.2,
                                   reached_top=lambda total: total >= 0.2 - 0.2)
        self.chance = chance

    def at_the_top(self, check_id: str) -> None:
        return None

    @contextlib.contextmanager
    def session(self):
        yield SimpleNamespace(action_space=gym.spaces.Discrete(len(self.returns)))

    def episode(self, policy, *, seed: int, label: str) -> SimpleNamespace:
        return SimpleNamespace(total=self.returns[policy.args[0]][seed])


LOSING = [-1.0] * 8
LUCKY = [1.0, 1.0, 1.0, 1.0, -1.0, -1.0, -1.0, -1.0]  # four catches in eight, where one in five is the odds


@pytest.mark.parametrize("chance, status", [(False, "fail"), (True, "pass")])
def test_a_lucky_repeated_action_fails_only_where_episodes_are_not_chance(chance, status):
    result = hacking.repeated_action(Draws([LOSING, LOSING, LUCKY], chance=chance))
    assert result.status == status, result
    assert result.measured["best_return"] == 0.0
    if chance:
        assert result.measured["standard_error"] == pytest.approx(math.sqrt(8 / 7) / math.sqrt(8))
        assert "three standard errors" in result.evidence[1]


def test_a_repeated_action_that_always_wins_fails_where_episodes_are_chance():
    """Chance widens the margin by the mean's own error, which is none for a move that always wins."""
    result = hacking.repeated_action(Draws([LOSING, [1.0] * 8, LOSING], chance=True))
    assert result.status == "fail" and result.measured["standard_error"] == 0.0
    assert result.remediation == "repeating one action must not earn the top reward"


def test_infinite_returns_on_a_server_that_ignores_seeds_are_judged_by_their_mean():
    """A hostile server may pay ``Infinity`` (JSON as Python reads it): no error of the mean
    can be taken of it, and the check fails on the mean rather than raising."""
    result = hacking.repeated_action(Draws([LOSING, [math.inf] * 8, LOSING], chance=True))
    assert result.status == "fail" and "standard_error" not in result.measured


def test_an_env_failing_on_the_server_gets_a_report_that_says_what_to_do():
    from openenv.core.env_server.interfaces import Environment
    from openenv.core.env_server.types import Action, Observation, State

    class WordAction(Action):
        message: str

    class NeedsData(Environment):
        def reset(self, seed=None, episode_id=None, **kwargs) -> Observation:
            raise LookupError("Resource words not found. Please use the NLTK Downloader to obtain the resource")

        def step(self, action: WordAction, **kwargs) -> Observation:
            return Observation(done=True)

        @property
        def state(self) -> State:
            return State(episode_id=None, step_count=0)

    with asgi_server(openenv_app(NeedsData, models=(WordAction, Observation))) as url:
        report = run_checks(url)
    assert {r["status"] for r in report["results"]} == {"error"} and report["verdict"] == "fail"
    first = report["results"][0]
    assert "NLTK Downloader" in first["evidence"][0]
    assert "nltk.downloader" in first["remediation"]
    assert "GuessTheNumber-v0" in server_fault("Resource punkt not found (nltk)")


def test_outside_schema_covers_types_enums_bounds_and_extra_keys():
    schema = {"type": "object", "additionalProperties": False, "required": ["move", "steps"],
              "$defs": {"Move": {"enum": ["UP", "DOWN"], "type": "string"}},
              "properties": {"move": {"$ref": "#/$defs/Move"}, "steps": {"type": "integer", "maximum": 3},
                             "metadata": {"type": "object"}}}
    names = [name for name, _ in remote.outside_schema(schema, {"move": "UP", "steps": 1})]
    assert names == ["move left out", "steps left out", "move: 12345 (an integer)", "move: 'NOT_UP_DOWN' (not one of its enum)",
                     "steps: 'not an integer' (a string)", "steps: 4 (above its maximum 3)", "an unknown key"]


def test_canaries_play_the_legal_actions_info_lists():
    """A stock server's legal moves (chess's UCI strings) are what first-legal and random play."""
    import gymnasium as gym

    from openenv_gym.kit.policies import canaries

    policies = canaries(gym.spaces.Text(8), seed=0)
    info = {"legal_actions": ["e2e4", "d2d4", "g1f3"]}
    assert policies["first-legal"](None, info, None) == "e2e4"
    assert {policies["random"](None, info, None) for _ in range(30)} == set(info["legal_actions"])
    assert isinstance(policies["random"](None, {}, None), str)  # no list: the space's own sample
