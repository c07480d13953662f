"""PettingZoo's own test utilities (``pettingzoo.test``) over the wire, in the README suite:
the survey's runner (:func:`tests.conformance.pettingzoo_survey.run_config`) on a subset of
its configurations. Each configuration runs in fresh interpreters, the local env (the
control) in one and :class:`~openenv_gym.RemoteAECEnv` / :class:`~openenv_gym.RemoteParallelEnv`
clients of servers on 127.0.0.1 in another, so pygame and the envs' global state do not
leak from one game into the next.

A test is one utility on one configuration: it passes when the utility passes over the
wire, is an expected failure when the utility fails on the local env too (the env's own
failure, not ours), and is skipped where the utility does not apply or the env does not
install. The whole survey (``python -m tests.conformance.pettingzoo_survey``: 137
configurations of 56 envs, about 40 minutes on two cores) is far more than CI can give:
docs/conformance.md has its results and times, and why these configurations.
"""

from __future__ import annotations

import functools

import pytest

pytest.importorskip("pettingzoo")

from tests.conformance.pettingzoo_survey import BY_ID, UTILITIES, ConfigRun, run_config  # noqa: E402

#: The configurations the README suite runs, and what each stands for: a fast one of each
#: kind of game that ``.[test]`` installs. Together they run every utility, on AEC-native
#: and parallel-native envs, turn-based and simultaneous games, action masks, a global
#: state as an image and as a vector, agents that die mid-game, every render mode
#: PettingZoo has (``human``, ``rgb_array``, ``ansi``), and a utility that fails on the env
#: itself (``rps_v2``'s ``state_test``: it has ``state()`` and no ``state_space``).
SUBSET: dict[str, str] = {
    "classic/connect_four_v3": "turn-based, AEC-native, action masks; frames pygame draws",
    "classic/chess_v6": "python-chess: action masks over 4672 moves, an ansi render mode",
    "classic/texas_holdem_v4[num_players=3]": "rlcard's card games, three players",
    "classic/hanabi_v5": "OpenSpiel's game through Shimmy",
    "classic/rps_v2": "a classic game with parallel_env and max_cycles; state_test fails on the env itself",
    "butterfly/cooperative_pong_v6[max_cycles=50]": "parallel-native; its state a 280x480x3 image",
    "butterfly/knights_archers_zombies_v11[max_cycles=50]": "agents that die mid-game; a vector state",
}
#: Utilities run on one configuration only, for the bug they caught (not the whole config).
ONLY: dict[str, tuple[str, ...]] = {
    # A server kept its last reply alive while it handled the next message: KAZ's image
    # state() is a view that locks its pygame screen, and the next step's draw failed
    # ("Surfaces must not be locked during blit"). Fixed in fe711d6; found by the survey.
    "butterfly/knights_archers_zombies_v11[obs_method=image,max_cycles=50]": ("state_test",),
}
#: Remote failures of ours that the survey found and the library does not fix yet, by
#: (configuration, utility): strict expected failures, so that a fix shows (as an
#: unexpected pass) and its entry goes. None among these configurations now.
KNOWN_BUGS: dict[tuple[str, str], str] = {}
#: Seconds per utility, and per side: a hung utility fails its test well inside the
#: suite's 180 s per test.
UTILITY_TIMEOUT = 60.0
SIDE_BUDGET = 150.0
CASES = [(c, u) for c in SUBSET for u in UTILITIES] + [(c, u) for c, names in ONLY.items() for u in names]


@functools.cache
def _run(config_id: str) -> ConfigRun:
    """Both sides of one configuration, run once for all its utilities' tests (the first
    of them takes the time), the two sides at once."""
    return run_config(
        BY_ID[config_id], utility_timeout=UTILITY_TIMEOUT, budget=SIDE_BUDGET, concurrently=True,
        utilities=ONLY.get(config_id, UTILITIES),
    )


@pytest.mark.parametrize(("config_id", "utility"), CASES, ids=[f"{c}-{u}" for c, u in CASES])
def test_utility_over_the_wire(config_id: str, utility: str, request: pytest.FixtureRequest) -> None:
    if (config_id, utility) in KNOWN_BUGS:
        request.applymarker(pytest.mark.xfail(reason=KNOWN_BUGS[config_id, utility], strict=True))
    run = _run(config_id)
    if not run.installed:
        pytest.skip(f"{config_id} does not import here: {run.sides['local'].missing}")
    local, remote = run.sides["local"].outcomes[utility], run.sides["remote"].outcomes[utility]
    if local.status == "n/a":
        pytest.skip(f"{utility} does not apply: {local.detail}")
    if remote.status == "pass":
        return
    if local.status != "pass":
        pytest.xfail(f"fails on the local env too ({local.status}): {local.detail}")
    pytest.fail(
        f"{utility} {remote.status} over the wire and passes on the local env: {remote.detail}\n"
        f"{remote.traceback}\n--- the child's log ---\n{run.sides['remote'].log[-3000:]}"
    )


def test_the_cases_are_in_the_survey() -> None:
    """Every id here names a survey configuration, and every known bug a case that runs."""
    assert {c for c, _ in CASES} <= set(BY_ID)
    assert set(KNOWN_BUGS) <= set(CASES)
