"""SuperSuit's wrappers on remote PettingZoo games pass the checks they pass on the local game.

Each wrapper (``normalize_obs_v0``, ``frame_stack_v1``, ``frame_skip_v0``, ``black_death_v3``,
...) is put on a :class:`~openenv_gym.RemoteParallelEnv` / :class:`~openenv_gym.RemoteAECEnv`
of a server on 127.0.0.1 and, the same way, on the local game. The wrapped remote env must

* pass PettingZoo's ``parallel_api_test`` / ``api_test``, and
* play step for step like the wrapped local game under the same seeds and actions:
  observations (values and dtypes), rewards, terminations, truncations, infos and agents.

SuperSuit's vector envs (``pettingzoo_env_to_vec_env_v1`` + ``concat_vec_envs_v1``, and
``vectorize_aec_env_v0``) copy the env they are given with cloudpickle: a remote env's copy
is a new session on the same server (``openenv_gym/client/pickling.py``), so a server holds
one session per copy plus the original's, and each server here has exactly as many slots
as its tests need. Every test ends with the server holding no session.

The games install with ``.[test]`` (pygame only):

* ``knights_archers_zombies_v11`` (butterfly): a ``(27, 5)`` float64 Box in [-1, 1], agents
  that die mid-game (what ``black_death_v3`` is for), zombies spawned at random;
* ``pursuit_v5`` (SISL): a ``(7, 7, 3)`` float32 Box image in [0, 30], for the wrappers of
  3-d observations (``color_reduction_v0``, ``resize_v1``);
* ``rps_v2`` (classic): ``Discrete`` observations (``frame_stack_v1`` and
  ``agent_indicator_v0`` treat them apart).

Not covered: the wrappers of Box actions (``clip_actions_v0``, ``scale_actions_v0``, the
``nan_*`` ones), since no game installed here has Box actions (multiwalker needs Box2D,
waterworld pymunk).
"""

from __future__ import annotations

import contextlib
import json
import time
import urllib.request
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pytest

pytest.importorskip("pettingzoo")
pytest.importorskip("pygame")  # the butterfly and SISL games draw with it
# Imported by name: doctest collection (--doctest-modules) probes the module's globals for
# ``__wrapped__``, and ``supersuit``'s module __getattr__ raises ImportError, not AttributeError.
pytest.importorskip("supersuit")

from pettingzoo.butterfly import knights_archers_zombies_v11  # noqa: E402
from pettingzoo.classic import rps_v2  # noqa: E402
from pettingzoo.sisl import pursuit_v5  # noqa: E402
from pettingzoo.test import api_test, parallel_api_test  # noqa: E402
from supersuit import (  # noqa: E402
    agent_indicator_v0,
    black_death_v3,
    clip_reward_v0,
    color_reduction_v0,
    concat_vec_envs_v1,
    delay_observations_v0,
    dtype_v0,
    flatten_v0,
    frame_skip_v0,
    frame_stack_v1,
    frame_stack_v2,
    max_observation_v0,
    normalize_obs_v0,
    pad_action_space_v0,
    pad_observations_v0,
    pettingzoo_env_to_vec_env_v1,
    reshape_v0,
    resize_v1,
    sticky_actions_v0,
    vectorize_aec_env_v0,
)

import openenv_gym  # noqa: E402

#: Copies a vector test makes of its env (``concat_vec_envs_v1``'s ``num_vec_envs``).
COPIES = 2
#: Steps of each step-for-step comparison (several episodes of each game below).
STEPS = 40
#: The seed of every comparison (of its resets and of its actions).
SEED = 3
#: ``num_cycles`` of PettingZoo's API tests.
API_CYCLES = 20


@dataclass(frozen=True)
class Spec:
    """A PettingZoo game module, the arguments it is played with, and the server's size."""

    module: Any
    kwargs: dict[str, Any]
    max_sessions: int


SPECS: dict[str, Spec] = {
    # Short episodes, so that STEPS cross a few of them (resets, autoresets). With line_death,
    # an agent that touches the top or bottom border dies: random moves kill some mid-episode.
    "kaz": Spec(
        knights_archers_zombies_v11, {"max_cycles": 20, "max_zombies": 4, "spawn_delay": 5, "line_death": True}, COPIES + 1
    ),
    "pursuit": Spec(pursuit_v5, {"max_cycles": 15, "n_pursuers": 3, "n_evaders": 4, "x_size": 8, "y_size": 8}, 1),
    "rps": Spec(rps_v2, {"max_cycles": 10}, 1),
}


@dataclass
class Game:
    """One game: its server, its local envs, and the remote envs a test opened."""

    name: str
    spec: Spec
    url: str
    opened: list[Any] = field(default_factory=list)

    def local(self, api: str) -> Any:
        """The local game through ``api`` (the module's ``env`` or ``parallel_env``)."""
        make = self.spec.module.env if api == "aec" else self.spec.module.parallel_env
        return make(**self.spec.kwargs)

    def remote(self, api: str) -> Any:
        """A remote env of the served game through ``api``, closed after the test."""
        cls = openenv_gym.RemoteAECEnv if api == "aec" else openenv_gym.RemoteParallelEnv
        env = cls(self.url)
        self.opened.append(env)
        return env

    def active_sessions(self) -> int:
        """The sessions the server holds now (its ``/health``)."""
        with urllib.request.urlopen(f"{self.url}/health", timeout=5) as response:
            return int(json.loads(response.read())["active_sessions"])


@pytest.fixture(scope="module")
def servers() -> Iterator[Callable[[str], str]]:
    """Start each game's server the first time a test asks for it; all stop at the end."""
    with contextlib.ExitStack() as stack:
        urls: dict[str, str] = {}

        def url(name: str) -> str:
            if name not in urls:
                spec = SPECS[name]
                # The game's AEC env is served: the server offers the parallel API through
                # aec_to_parallel, which is what the module's parallel_env is.
                urls[name] = stack.enter_context(
                    openenv_gym.local_server(spec.module.env, env_kwargs=spec.kwargs, max_sessions=spec.max_sessions)
                )
            return urls[name]

        yield url


@pytest.fixture
def game(request: pytest.FixtureRequest, servers: Callable[[str], str]) -> Iterator[Game]:
    """The game named by the test's parameter; after the test, its remote envs are closed
    and the server must hold no session (none leaked, and the next test has every slot)."""
    played = Game(request.param, SPECS[request.param], servers(request.param))
    try:
        yield played
    finally:
        for env in played.opened:
            env.close()
        deadline = time.monotonic() + 10
        while played.active_sessions() and time.monotonic() < deadline:
            time.sleep(0.02)
    assert played.active_sessions() == 0


def _same(local: Any, remote: Any) -> bool:
    """Equal values; arrays equal in dtype and shape too."""
    if isinstance(local, dict):
        return isinstance(remote, dict) and local.keys() == remote.keys() and all(
            _same(local[k], remote[k]) for k in local
        )
    if isinstance(local, (list, tuple)):
        return isinstance(remote, (list, tuple)) and len(local) == len(remote) and all(
            _same(a, b) for a, b in zip(local, remote)
        )
    if isinstance(local, np.ndarray) and local.ndim > 0:
        return (
            isinstance(remote, np.ndarray) and local.dtype == remote.dtype and local.shape == remote.shape
            and np.array_equal(local, remote)
        )
    return bool(np.all(np.asarray(local) == np.asarray(remote)))


def _assert_same_runs(local: list, remote: list) -> None:
    assert len(local) == len(remote) > 1
    for step, (a, b) in enumerate(zip(local, remote)):
        assert _same(a, b), f"step {step}: local {a!r}\nremote {b!r}"


def _action(space: Any, rng: np.random.Generator) -> Any:
    return int(rng.integers(space.n))  # every game here has Discrete actions


def _parallel_run(env: Any, seed: int, steps: int = STEPS) -> list:
    """What a parallel env answers to seeded resets and ``rng``'s actions, ``steps`` times.
    Every episode starts with a seeded reset: unseeded, a wrapper's own generator (sticky
    actions) would start from entropy."""
    rng = np.random.default_rng(seed)
    episode = 0
    run: list = [env.reset(seed=seed)]
    for _ in range(steps):
        if not env.agents:
            episode += 1
            run.append(env.reset(seed=seed + episode))
            continue
        actions = {agent: _action(env.action_space(agent), rng) for agent in env.agents}
        run.append((*env.step(actions), list(env.agents)))
    assert episode >= 1, "the run should cross an episode's end"
    return run


def _aec_run(env: Any, seed: int, steps: int = STEPS) -> list:
    """What an AEC env shows (``last()``, ``rewards``, ``agents``) to seeded resets and
    ``rng``'s actions, over ``steps`` cycles (a move of each agent)."""
    rng = np.random.default_rng(seed)
    episode = 0
    env.reset(seed=seed)
    run: list = []
    for _ in range(steps * len(env.possible_agents)):
        if not env.agents:
            episode += 1
            env.reset(seed=seed + episode)
        agent = env.agent_selection
        observation, reward, terminated, truncated, info = env.last()
        run.append((agent, observation, reward, terminated, truncated, info, dict(env.rewards), list(env.agents)))
        env.step(None if terminated or truncated else _action(env.action_space(agent), rng))
    assert episode >= 1, "the run should cross an episode's end"
    return run


def _deaths_mid_episode(run: list) -> int:
    """Steps of a :func:`_parallel_run` of the bare game where an agent died and others played on."""
    return sum(len(step) == 6 and any(step[2].values()) and bool(step[5]) for step in run)


def test_agents_die_mid_episode_in_the_runs_of_knights_archers_zombies() -> None:
    """The runs the wrappers are compared on have agents dying while others play on (what
    black_death_v3 is for); checked on the bare local game, which the wrappers that change
    no action play alike."""
    spec = SPECS["kaz"]
    game = spec.module.parallel_env(**spec.kwargs)
    assert _deaths_mid_episode(_parallel_run(game, seed=SEED)) >= 1
    game.close()


def _quiet_api_test(test: Callable[..., None], env: Any) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the API tests' style advice (e.g. all-zero observations)
        test(env, num_cycles=API_CYCLES)


#: SuperSuit's wrappers of the family, each with the arguments it is checked with.
WRAPPERS: dict[str, Callable[[Any], Any]] = {
    "normalize_obs_v0": lambda env: normalize_obs_v0(env, env_min=-0.5, env_max=0.5),
    "frame_stack_v1": lambda env: frame_stack_v1(env, 3),
    "frame_stack_v2": lambda env: frame_stack_v2(env, 3, stack_dim=0),
    "frame_skip_v0": lambda env: frame_skip_v0(env, 2),
    "flatten_v0": flatten_v0,
    "reshape_v0": lambda env: reshape_v0(env, tuple(reversed(env.observation_space(env.possible_agents[0]).shape))),
    "dtype_v0": lambda env: dtype_v0(env, np.float32),
    "color_reduction_v0": lambda env: color_reduction_v0(env, mode="full"),
    "resize_v1": lambda env: resize_v1(env, x_size=4, y_size=4),
    "max_observation_v0": lambda env: max_observation_v0(env, 2),
    "delay_observations_v0": lambda env: delay_observations_v0(env, 2),
    "black_death_v3": black_death_v3,
    "agent_indicator_v0": agent_indicator_v0,
    "agent_indicator_v0[type_only]": lambda env: agent_indicator_v0(env, type_only=True),
    "sticky_actions_v0": lambda env: sticky_actions_v0(env, repeat_action_probability=0.5),
    "clip_reward_v0": lambda env: clip_reward_v0(env, lower_bound=0, upper_bound=0.5),
    "pad_observations_v0": pad_observations_v0,
    "pad_action_space_v0": pad_action_space_v0,
    # The tutorial's preprocessing, and a longer chain of observation wrappers.
    "black_death+frame_stack": lambda env: frame_stack_v1(black_death_v3(env), 3),
    "indicator+stack+normalize": lambda env: normalize_obs_v0(frame_stack_v1(agent_indicator_v0(env), 2)),
}

def _case(wrapper: str, game: str, api: str) -> Any:
    return pytest.param(wrapper, game, api, id=f"{wrapper}-{game}-{api}")


#: The wrappers checked on the AEC API of knights-archers-zombies too: one of each AEC code path
#: (observation, reward and action lambdas, shared modifiers, frame skipping); the others are
#: built the same way as one of these (reshape_v0 and dtype_v0 as flatten_v0, for instance).
AEC_TOO = {
    "normalize_obs_v0", "frame_stack_v1", "frame_skip_v0", "flatten_v0", "max_observation_v0", "delay_observations_v0",
    "agent_indicator_v0", "sticky_actions_v0", "clip_reward_v0", "pad_action_space_v0",
}

#: Where each wrapper is checked: every wrapper of Box observations on knights-archers-zombies,
#: those of 3-d ones on pursuit, and those that treat Discrete observations apart on rps.
CASES = [
    *[_case(w, "kaz", "parallel") for w in WRAPPERS if w not in {"color_reduction_v0", "resize_v1"}],
    *[_case(w, "kaz", "aec") for w in WRAPPERS if w in AEC_TOO],
    *[_case(w, "pursuit", api) for w in ("normalize_obs_v0", "frame_stack_v1", "agent_indicator_v0",
                                         "color_reduction_v0", "resize_v1") for api in ("parallel", "aec")],
    # pursuit's parallel env has no np_random, which frame_skip_v0 draws from: the AEC API only.
    _case("frame_skip_v0", "pursuit", "aec"),
    *[_case(w, "rps", api) for w in ("frame_stack_v1", "agent_indicator_v0", "sticky_actions_v0")
      for api in ("parallel", "aec")],
]


@pytest.mark.parametrize(("wrapper", "game", "api"), CASES, indirect=["game"])
def test_wrapped_remote_game_passes_the_api_test_and_plays_like_the_local_one(wrapper: str, game: Game, api: str) -> None:
    wrap = WRAPPERS[wrapper]
    remote = wrap(game.remote(api))
    local = wrap(game.local(api))
    run = _parallel_run if api == "parallel" else _aec_run
    try:
        # Fresh games first: a knights_archers_zombies_v11 that has played does not replay an
        # episode on a seeded reset (its zombie spawn interval survives reset), local or remote.
        _assert_same_runs(run(local, seed=SEED), run(remote, seed=SEED))
    finally:
        local.close()
    _quiet_api_test(parallel_api_test if api == "parallel" else api_test, remote)


@pytest.mark.parametrize("game", ["kaz"], indirect=True)
def test_frame_skip_over_a_random_range_replays_its_seed_remotely(game: Game) -> None:
    """``frame_skip_v0(env, (low, high))`` draws each step's skips from ``env.unwrapped.np_random``.

    A remote env's ``np_random`` is the client's, seeded by ``reset(seed=)``; the local game's is
    the game's own, which also spawns its zombies, so the skips' draws shift the local game's
    spawns and the two part ways after a few steps (both are seeded, neither is wrong). What
    holds remotely is what a seed promises: the same seed plays the same game again.
    """
    runs = []
    for _ in range(2):  # a fresh game each time (the spawn interval survives reset)
        env = frame_skip_v0(game.remote("parallel"), (1, 3))
        runs.append(_parallel_run(env, seed=5))
        env.close()
    _assert_same_runs(*runs)


def _markov(env: Any) -> Any:
    """The tutorial's preprocessing of knights-archers-zombies for SB3: agents that die
    play on as zeros (``black_death_v3``), one vector env of all the agents."""
    return pettingzoo_env_to_vec_env_v1(black_death_v3(env))


def _outcome(call: Callable[[], Any]) -> type[BaseException] | None:
    """The type of what ``call`` raises, ``None`` if it returns (to compare local and remote)."""
    try:
        call()
    except Exception as exc:  # compared, not swallowed
        return type(exc)
    return None


@pytest.mark.parametrize("game", ["kaz"], indirect=True)
@pytest.mark.parametrize("base_class", ["gymnasium", "stable_baselines3"])
def test_concat_vec_envs_of_a_remote_game_play_like_the_local_ones(game: Game, base_class: str) -> None:
    """``concat_vec_envs_v1(pettingzoo_env_to_vec_env_v1(...), COPIES, num_cpus=0)``: each copy
    is a new session, and the copies play step for step like copies of the local game."""
    if base_class == "stable_baselines3":
        pytest.importorskip("stable_baselines3")
    markov = _markov(game.remote("parallel"))
    remote = concat_vec_envs_v1(markov, COPIES, num_cpus=0, base_class=base_class)
    local = concat_vec_envs_v1(_markov(game.local("parallel")), COPIES, num_cpus=0, base_class=base_class)
    try:
        assert game.active_sessions() == COPIES + 1  # the copies and the original
        markov.close()  # SuperSuit keeps no reference to the original: it may go
        assert remote.num_envs == local.num_envs == COPIES * markov.num_envs  # one env per agent
        assert remote.observation_space == local.observation_space and remote.action_space == local.action_space
        gymnasium_api = base_class == "gymnasium"
        # SB3's reset(seed=) reaches SuperSuit's gymnasium vector env through VecEnv.seed, which
        # it does not have (SuperSuit 3.11 on Gymnasium 1.x): the same error on both sides.
        # Seeded through the vector env underneath instead, which seeds copy i with seed + i.
        assert _outcome(lambda: remote.reset(seed=0)) is _outcome(lambda: local.reset(seed=0))
        seeded = [venv if gymnasium_api else venv.venv for venv in (local, remote)]
        first = [venv.reset(seed=SEED) for venv in seeded]
        assert _same(first[0], first[1])
        rng = np.random.default_rng(SEED)
        resets = dead = 0
        for _ in range(STEPS):
            actions = rng.integers(local.action_space.n, size=local.num_envs)
            a, b = local.step(actions), remote.step(actions)
            assert _same(a, b)
            done = a[2] | a[3] if gymnasium_api else a[2]  # SB3's dones: terminated or truncated
            resets += int(np.all(done))
            dead += int(np.sum(~done & ~a[0].reshape(local.num_envs, -1).any(axis=1)))  # black death's zeros
        assert resets >= 1, "the copies should have been reset after an episode's end"
        assert dead >= 1, "some agent should have died and played on as zeros"
    finally:
        local.close()
        remote.close()


@pytest.mark.parametrize("game", ["kaz"], indirect=True)
def test_vectorize_aec_env_of_a_remote_game_plays_like_the_local_one(game: Game) -> None:
    """``vectorize_aec_env_v0``: the AEC counterpart, with cloudpickled copies too."""
    original = game.remote("aec")
    remote = vectorize_aec_env_v0(original, COPIES)
    local = vectorize_aec_env_v0(game.local("aec"), COPIES)
    try:
        assert game.active_sessions() == COPIES + 1
        original.close()
        local.reset(seed=SEED)
        remote.reset(seed=SEED)
        rng = np.random.default_rng(SEED)
        resets = deaths = 0
        for _ in range(STEPS * len(local.possible_agents)):
            assert local.agent_selection == remote.agent_selection
            assert _same(local.last(), remote.last())
            actions = rng.integers(local.action_space(local.agent_selection).n, size=COPIES)
            local.step(actions)
            remote.step(actions)
            assert np.array_equal(local.envs_dones, remote.envs_dones)
            resets += int(np.sum(local.envs_dones))
            terminated = np.stack([local.terminations[agent] for agent in local.possible_agents]).astype(bool)
            deaths += int(np.sum(terminated.any(axis=0) & ~terminated.all(axis=0)))  # one dead, one playing on
        assert resets >= COPIES, "the copies should have been reset after an episode's end"
        assert deaths >= 1, "some agent should have died while others played on"
    finally:
        for venv in (local, remote):
            for env in venv.envs:
                env.close()


def test_the_agent_to_move_after_the_end_is_observed_as_on_the_local_game():
    """A finished AEC game has no live agent; a local game still observes the agent to move
    (SuperSuit's stacking wrappers ask), and so does the remote one."""
    kwargs = {"max_cycles": 5}

    def play_out(env: Any) -> tuple[list, Any]:
        env.reset(seed=0)
        for _agent in env.agent_iter(max_iter=1000):
            _, _, terminated, truncated, _ = env.last()
            env.step(None if terminated or truncated else 0)
        return env.agents, env.observe(env.agent_selection)

    with openenv_gym.local_server(knights_archers_zombies_v11.env, env_kwargs=kwargs) as url:
        remote = openenv_gym.RemoteAECEnv(url)
        try:
            local_agents, local_obs = play_out(knights_archers_zombies_v11.env(**kwargs))
            remote_agents, remote_obs = play_out(remote)
        finally:
            remote.close()
    assert local_agents == remote_agents == []
    np.testing.assert_array_equal(remote_obs, local_obs)
