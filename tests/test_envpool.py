"""EnvPool behind Gymnasium's APIs (:mod:`openenv_gym.envpool`), in-process and served.

EnvPool's envs draw from their own C++ RNGs, so the reference for a served EnvPool
task is an in-process EnvPool with the same seeds, step for step; the reference for
the autoreset modes is EnvPool's own next-step pool: every mode must play the very
same episodes.
"""

from __future__ import annotations

import functools
import re
import time

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.vector import AutoresetMode

import openenv_gym
from openenv_gym.envpool import EnvPoolEnv, EnvPoolVectorEnv, task_factory
from openenv_gym.errors import ExecutionError
from openenv_gym.server import create_app
from tests.parity import assert_same, run_parity

envpool = pytest.importorskip("envpool")

TASK = "CartPole-v1"
N = 4
#: CartPole's episodes under :func:`lean` last 8 to 60 steps: enough for several each.
STEPS = 300


def cartpole() -> openenv_gym.envpool.PoolFactory:
    return task_factory(TASK)


def lean(obs: np.ndarray) -> np.ndarray:
    """Push towards the pole's lean (so actions follow from observations, not from time)."""
    return (obs[:, 2] > 0).astype(np.int64)


def episodes(envs: gym.vector.VectorEnv, steps: int = STEPS) -> list[list[tuple]]:
    """Each env's finished episodes, as lists of (obs, reward, terminated, truncated)."""
    mode = envs.metadata["autoreset_mode"]
    obs, _ = envs.reset(seed=11)
    current: list[list[tuple]] = [[(obs[i].tolist(),)] for i in range(envs.num_envs)]
    done: list[list[list[tuple]]] = [[] for _ in range(envs.num_envs)]
    restart = np.zeros(envs.num_envs, dtype=bool)
    for _ in range(steps):
        obs, rewards, terminations, truncations, infos = envs.step(lean(obs))
        for i in range(envs.num_envs):
            if restart[i]:  # NEXT_STEP: this step was the reset
                assert rewards[i] == 0 and not terminations[i] and not truncations[i]
                current[i] = [(obs[i].tolist(),)]
                continue
            last = infos["final_obs"][i] if infos.get("_final_obs", np.zeros(N, bool))[i] else obs[i]
            current[i].append((last.tolist(), float(rewards[i]), bool(terminations[i]), bool(truncations[i])))
            if terminations[i] or truncations[i]:
                done[i].append(current[i])
                current[i] = [(obs[i].tolist(),)] if mode is AutoresetMode.SAME_STEP else []
        ended = terminations | truncations
        restart = ended if mode is AutoresetMode.NEXT_STEP else np.zeros_like(ended)
        if mode is AutoresetMode.DISABLED and ended.any():
            obs, _ = envs.reset(options={"reset_mask": ended})
            for i in np.flatnonzero(ended):
                current[i] = [(obs[i].tolist(),)]
    return done


# -- in-process -----------------------------------------------------------------------------


def test_next_step_mode_is_the_pools_own_step_for_step():
    raw = envpool.make(TASK, env_type="gymnasium", num_envs=N, seed=5)
    envs = EnvPoolVectorEnv(cartpole(), N)
    try:
        obs, infos = envs.reset(seed=5)
        want, want_infos = raw.reset()
        assert_same(obs, want)
        assert_same(infos["elapsed_step"], want_infos["elapsed_step"])
        ends = 0
        for t in range(STEPS):
            got, want = envs.step(lean(obs)), raw.step(lean(obs))
            want = (want[0], want[1].astype(np.float64), *want[2:])  # Gymnasium's vector rewards
            for a, b, what in zip(got[:4], want[:4], ["obs", "rewards", "terminations", "truncations"]):
                assert_same(a, b, f"step {t} {what}")
            assert_same(got[4]["elapsed_step"], want[4]["elapsed_step"], f"step {t} elapsed_step")
            assert got[4]["_elapsed_step"].all()
            obs = got[0]
            ends += int((got[2] | got[3]).sum())
        assert ends >= 2 * N
    finally:
        envs.close()
        raw.close()


def test_every_autoreset_mode_plays_the_same_episodes():
    played = {}
    for mode in AutoresetMode:
        envs = EnvPoolVectorEnv(cartpole(), N, autoreset_mode=mode)
        try:
            played[mode] = episodes(envs)
        finally:
            envs.close()
    reference = played[AutoresetMode.NEXT_STEP]
    assert all(len(env_episodes) >= 3 for env_episodes in reference)
    for mode in (AutoresetMode.SAME_STEP, AutoresetMode.DISABLED):
        for i in range(N):
            n = min(len(played[mode][i]), len(reference[i]))
            assert n >= 3
            assert played[mode][i][:n] == reference[i][:n], f"{mode.value}: env {i}"


def test_same_step_infos_are_laid_out_as_sync_vector_envs():
    envs = EnvPoolVectorEnv(cartpole(), N, autoreset_mode=AutoresetMode.SAME_STEP)
    try:
        obs, _ = envs.reset(seed=3)
        for _ in range(STEPS):
            obs, _, terminations, truncations, infos = envs.step(np.ones(N, dtype=np.int64))
            ended = terminations | truncations
            if ended.any():
                break
        assert ended.any()
        assert_same(infos["_final_obs"], ended)
        assert_same(infos["_final_info"], ended)
        assert infos["final_obs"].dtype == object
        for i in range(N):
            assert (infos["final_obs"][i] is None) == (not ended[i])
        # The final info is the ended step's; the info beside the new observation is the reset's.
        assert (infos["final_info"]["elapsed_step"][ended] > 0).all()
        assert_same(infos["final_info"]["_elapsed_step"], ended)
        assert (infos["elapsed_step"][ended] == 0).all()
        assert (np.abs(obs[ended]) <= 0.05).all(), "an ended env starts its next episode in the same step"
    finally:
        envs.close()


def test_a_seeded_reset_replays_and_each_env_takes_seed_plus_its_index():
    envs = EnvPoolVectorEnv(cartpole(), N)
    other = EnvPoolVectorEnv(cartpole(), N)
    try:
        first, _ = envs.reset(seed=42)
        for _ in range(20):
            envs.step(np.zeros(N, dtype=np.int64))
        assert_same(envs.reset(seed=42)[0], first)
        assert_same(other.reset(seed=[42 + i for i in range(N)])[0], first)
        assert not np.array_equal(other.reset(seed=43)[0], first)
        assert_same(other.reset(seed=43)[0][:-1], first[1:])
        assert envs.np_random_seed == 42
    finally:
        envs.close()
        other.close()


def test_bad_resets_and_steps_are_refused_clearly():
    envs = EnvPoolVectorEnv(cartpole(), N, autoreset_mode=AutoresetMode.DISABLED)
    try:
        with pytest.raises(ValueError, match="call reset before step"):
            envs.step(np.zeros(N, dtype=np.int64))
        with pytest.raises(ValueError, match="before a masked reset"):
            envs.reset(options={"reset_mask": np.ones(N, dtype=bool)})
        envs.reset(seed=0)
        with pytest.raises(TypeError, match="dtype bool"):
            envs.reset(options={"reset_mask": np.ones(N, dtype=int)})
        with pytest.raises(ValueError, match="only a reset of every env"):
            envs.reset(seed=1, options={"reset_mask": np.ones(N, dtype=bool)})
        with pytest.raises(ValueError, match="no reset options but reset_mask"):
            envs.reset(options={"difficulty": 2})
        for _ in range(STEPS):
            _, _, terminations, truncations, _ = envs.step(np.ones(N, dtype=np.int64))
            if (terminations | truncations).any():
                break
        ended = np.flatnonzero(terminations | truncations).tolist()
        with pytest.raises(ValueError, match=re.escape(f"envs {ended} ended: with autoreset mode DISABLED")):
            envs.step(np.ones(N, dtype=np.int64))
        with pytest.raises(AttributeError, match="no Python envs"):
            envs.get_attr("gravity")
    finally:
        envs.close()


def test_one_env_passes_gymnasiums_env_checker():
    from gymnasium.utils.env_checker import check_env

    env = EnvPoolEnv(cartpole())
    try:
        check_env(env, skip_render_check=True)
    finally:
        env.close()


# -- served ---------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def envpool_url():
    with openenv_gym.local_server(f"envpool:{TASK}") as url:
        yield url


@pytest.mark.parametrize("mode", list(AutoresetMode), ids=lambda m: m.value)
def test_served_pool_matches_the_pool_in_process_step_for_step(envpool_url, mode):
    envs = openenv_gym.RemoteVectorEnv(envpool_url, N, mode="batched", autoreset_mode=mode.value)
    ref = EnvPoolVectorEnv(cartpole(), N, autoreset_mode=mode)
    try:
        assert envs.observation_space == ref.observation_space and envs.action_space == ref.action_space
        # One pool: EnvPool numbers its envs (pools of one, as the sync backend would build, are all 0).
        assert_same(envs.reset(seed=0)[1]["env_id"], np.arange(N, dtype=np.int32))
        assert run_parity(envs, ref, mode, STEPS) >= N
    finally:
        envs.close()
        ref.close()


def test_envs_spread_over_servers_carry_their_ids_in_the_vector_env(envpool_url):
    """Each server's pool numbers its own envs from 0; ``infos["env_id"]`` gives
    the vector env's ids, in lockstep steps as in partial batches."""
    servers = [envpool_url, envpool_url]  # two sessions, two pools
    envs = openenv_gym.RemoteVectorEnv(servers, N, mode="batched")
    try:
        assert_same(envs.reset(seed=0)[1]["env_id"], np.arange(N, dtype=np.int32))
        for _ in range(3):
            assert_same(envs.step(np.ones(N, dtype=np.int64))[4]["env_id"], np.arange(N, dtype=np.int32))
    finally:
        envs.close()
    halves = openenv_gym.RemoteVectorEnv(servers, N, mode="batched", batch_size=N // 2)
    try:
        halves.async_reset(seed=0)
        seen = []
        # recv() returns the first half to answer: on a busy machine one session's seeded
        # reset (which builds its pool) may take as long as many steps of the other.
        deadline = time.monotonic() + 30
        while len(seen) < 4 or not {(0, 1), (2, 3)} <= set(seen):
            assert time.monotonic() < deadline, f"in 30 s, recv() returned only the halves {sorted(set(seen))}"
            *_, infos = halves.recv()
            seen.append(tuple(infos["env_id"].tolist()))
            assert seen[-1] in ((0, 1), (2, 3))
            halves.send(np.ones(N // 2, dtype=np.int64), infos["env_id"])
    finally:
        halves.close()


def test_a_pool_factory_serves_as_a_task_id_does():
    factory = functools.partial(envpool.make, TASK, env_type="gymnasium")
    with openenv_gym.local_server(factory) as url:
        envs = openenv_gym.RemoteVectorEnv(url, N, mode="batched")
        ref = EnvPoolVectorEnv(cartpole(), N)
        try:
            assert_same(envs.reset(seed=0)[1]["env_id"], np.arange(N, dtype=np.int32))
            assert run_parity(envs, ref, AutoresetMode.NEXT_STEP, 50) >= 0
        finally:
            envs.close()
            ref.close()


def test_a_served_session_of_one_env_matches_the_env_in_process(envpool_url):
    remote = openenv_gym.RemoteEnv(envpool_url)
    local = EnvPoolEnv(cartpole())
    try:
        assert_same(remote.reset(seed=9)[0], local.reset(seed=9)[0])
        for t in range(30):
            got, want = remote.step(1), local.step(1)
            assert_same(got[0], want[0], f"step {t}")
            assert got[1:4] == want[1:4]
            if want[2] or want[3]:
                break
    finally:
        remote.close()
        local.close()


def test_the_envpool_backend_is_refused_for_envs_that_are_not_envpool_tasks():
    with pytest.raises(ValueError, match="vector_backend='envpool' steps EnvPool tasks"):
        create_app("CartPole-v1", vector_backend="envpool")


def test_a_refused_step_over_the_wire_names_the_envs_and_the_session_goes_on(envpool_url):
    envs = openenv_gym.RemoteVectorEnv(envpool_url, N, mode="batched", autoreset_mode="Disabled")
    try:
        envs.reset(seed=0)
        for _ in range(STEPS):
            _, _, terminations, truncations, _ = envs.step(np.ones(N, dtype=np.int64))
            ended = terminations | truncations
            if ended.any():
                break
        with pytest.raises(ExecutionError, match="ended: with autoreset mode DISABLED"):
            envs.step(np.ones(N, dtype=np.int64))
        envs.reset(options={"reset_mask": ended})
        assert envs.step(np.ones(N, dtype=np.int64))[0].shape == (N, 4)
    finally:
        envs.close()
