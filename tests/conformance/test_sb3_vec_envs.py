"""Stable-Baselines3's own VecEnv tests, every ``DummyVecEnv`` / ``SubprocVecEnv``
a :class:`~openenv_gym.sb3.RemoteVecEnv` serving the test's own env factories.

The test sources are those of the installed SB3 version, from its sdist on
PyPI (``pip download``; the sdist ships ``tests/``), cached for the session
(or in ``$OPENENV_GYM_SB3_SDIST_DIR``, when set, across sessions). They are
adapted by :mod:`tests.conformance.sb3_adapt` into a temporary directory and
run there in a pytest subprocess, in the ``mapped`` variant of
:mod:`tests.conformance.sb3_remote` (``DummyVecEnv``: batched mode,
``SubprocVecEnv``: sessions mode). Every case must pass but those of
:data:`EXPECTED_FAILURES`, which must fail, and those of
:data:`EXPECTED_SKIPS`, which may skip: a new failure and a newly passing
expected failure both fail this test, with the cases named.

A download that fails is a failure; only a missing SB3 skips.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

pytest.importorskip("stable_baselines3")
pytestmark = pytest.mark.slow

from . import sb3_adapt  # noqa: E402

#: A directory keeping the downloaded sdist across sessions (default: one per session).
CACHE_ENV = "OPENENV_GYM_SB3_SDIST_DIR"
#: Seconds the adapted suite may take (40 to 50 s on two idle cores here, 100 to 150 s on busy ones).
SUITE_TIMEOUT = 600.0

#: Cases that fail, and why; see docs/conformance.md ("Stable-Baselines3's VecEnv tests").
EXPECTED_FAILURES: dict[str, str] = {
    **{
        f"sb3_tests/test_env_checker.py::test_check_env_detailed_error[{method}-obs_tuple4]": (
            "inherent: an observation travels encoded by its space, so the client sees "
            "the float32 the space says, not the env's float64"
        )
        for method in ("reset", "step")
    },
    **{
        f"sb3_tests/test_env_checker.py::test_check_env_detailed_error[{method}-obs_tuple{case}]": (
            "inherent: an observation of the wrong shape does not fit its space's encoding; "
            "the server refuses it with an ExecutionError saying so, not check_env's AssertionError"
        )
        for method in ("reset", "step")
        for case in (5, 6, 7, 8)
    },
    "sb3_tests/test_vec_check_nan.py::test_check_nan": (
        "decided: steps before any reset, which servers refuse (docs/vector.md); behind it, "
        "inherent: a step of 2 actions of shape (2,) for 1 env of Box(1,), which does not fit "
        "the action space's encoding"
    ),
    "sb3_tests/test_vec_envs.py::test_framestack_vecenv": (
        "decided: steps before any reset, which servers refuse (docs/vector.md)"
    ),
    "sb3_tests/test_vec_envs.py::test_subproc_start_method": (
        "the adaptation: start_method has no remote meaning and is ignored, so "
        "start_method='illegal_method' raises no ValueError"
    ),
    **{
        f"sb3_tests/test_vec_envs.py::test_vecenv_custom_calls[{wrapper}-DummyVecEnv]": (
            "inherent: reads vec_env.envs[0], a local sub-env object"
        )
        for wrapper in ("None", "VecFrameStack", "VecNormalize")
    },
    "sb3_tests/test_vec_envs.py::test_vecenv_func_checker": (
        "inherent: factories returning one env instance are served by separate "
        "servers; no local env objects to find the same one twice among"
    ),
    "sb3_tests/test_vec_monitor.py::test_vec_monitor_info_keywords": (
        "decided: BitFlippingEnv's default render_mode is 'human' (a print), and servers "
        "refuse human render modes"
    ),
}
#: Cases SB3 itself skips here, and why (they may run elsewhere).
EXPECTED_SKIPS: dict[str, str] = {
    "sb3_tests/test_vec_envs.py::test_render[DummyVecEnv]": "no X server (DISPLAY unset)",
    "sb3_tests/test_vec_envs.py::test_render[SubprocVecEnv]": "no X server (DISPLAY unset)",
    "sb3_tests/test_vec_envs.py::test_video_recorder": "moviepy is not installed",
}


@pytest.fixture(scope="session")
def sb3_source(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The unpacked sdist of the installed SB3, downloaded once per session."""
    cached = os.environ.get(CACHE_ENV)
    cache = Path(cached) if cached else tmp_path_factory.mktemp("sb3-sdist")
    return sb3_adapt.sb3_source(cache)


def mismatches(outcomes: dict[str, dict[str, str]]) -> str:
    """What in ``outcomes`` (node id -> outcome, as the plugin records them) is
    not as :data:`EXPECTED_FAILURES` and :data:`EXPECTED_SKIPS` say, case by
    case; empty when everything is."""

    def listed(cases: dict[str, dict[str, str]]) -> str:
        return "".join(f"\n  {nodeid}: {case['outcome']} {case['message']}" for nodeid, case in sorted(cases.items()))

    failing = {n: c for n, c in outcomes.items() if c["outcome"] in ("failed", "error", "xpassed")}
    unexpected = {n: c for n, c in failing.items() if n not in EXPECTED_FAILURES}
    fixed = {n: outcomes.get(n, {"outcome": "missing", "message": ""}) for n in EXPECTED_FAILURES if n not in failing}
    skipped = {n: c for n, c in outcomes.items() if c["outcome"] == "skipped" and n not in EXPECTED_SKIPS}
    if not (unexpected or fixed or skipped):
        return ""
    return (
        f"new failures:{listed(unexpected) or ' none'}\n"
        f"expected failures that did not fail (update EXPECTED_FAILURES and docs/conformance.md):"
        f"{listed(fixed) or ' none'}\nunexpected skips:{listed(skipped) or ' none'}"
    )


@pytest.mark.timeout(SUITE_TIMEOUT + 120)
def test_sb3_vec_env_tests(sb3_source: Path, tmp_path: Path) -> None:
    sb3_adapt.adapt(sb3_source, tmp_path)
    outcomes, done = sb3_adapt.run_suite(tmp_path, variant="mapped", timeout=SUITE_TIMEOUT)
    assert done.returncode in (0, 1), f"pytest exit status {done.returncode}:\n{done.stdout[-3000:]}{done.stderr[-3000:]}"
    problems = mismatches(outcomes)
    assert not problems, problems
    assert any(c["outcome"] == "passed" for c in outcomes.values())
