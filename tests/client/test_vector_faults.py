"""RemoteVectorEnv when a server dies under it: recovery, or a typed error.

Real servers on 127.0.0.1 are killed (SIGKILL) and restarted on the same port
while a vector env is running. With ``reconnect`` the envs of the lost
connection end their episode (``truncated``, flagged in ``infos``) and start
the next one on the new connection exactly when their autoreset mode starts
it; the envs of other servers go on as if nothing happened, step for step
equal to a local ``SyncVectorEnv``. Without it, the step raises a typed error
within the message timeout.
"""

from __future__ import annotations

import contextlib
import signal
import subprocess
import threading
import time
from collections.abc import Iterator

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.vector import AutoresetMode

import openenv_gym
from openenv_gym.client.retry import LOST_REASON, RECONNECTED, Reconnect
from openenv_gym.errors import ConnectionClosedError, MessageTimeoutError, OpenEnvGymError
from tests.conftest import free_port, serve_args, server_process

#: Retries for about 10 s: a restarted server is back well within that.
POLICY = Reconnect(attempts=40, backoff=0.05, max_backoff=0.25)
FLAG, MASK = RECONNECTED, f"_{RECONNECTED}"
MODES = ["sessions", "batched"]
#: CartPole's reset draws every coordinate from [-0.05, 0.05].
RESET_BOUND = 0.05


@contextlib.contextmanager
def server(port: int) -> Iterator[subprocess.Popen]:
    with server_process(serve_args(port), f"http://127.0.0.1:{port}") as proc:
        yield proc


def kill(proc: subprocess.Popen) -> None:
    proc.kill()
    proc.wait(10)


@contextlib.contextmanager
def server_back_later(port: int, delay: float) -> Iterator[None]:
    """Restart the server on ``port`` after ``delay`` s, in the background
    (a step that waits for it meanwhile must be retrying with backoff)."""
    stop = threading.Event()

    def run() -> None:
        time.sleep(delay)
        with server(port):
            stop.wait(30)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join(20)


def is_reset_obs(obs: np.ndarray) -> bool:
    return bool((np.abs(obs) <= RESET_BOUND).all())


def step_until_some_ended(envs: gym.vector.VectorEnv) -> tuple[np.ndarray, np.ndarray]:
    """Push every cart left until some envs (not all) end an episode in the
    same step; return that step's observations and the envs that ended."""
    left = np.zeros(envs.num_envs, dtype=np.int64)
    for _ in range(100):
        obs, _, terminations, truncations, _ = envs.step(left)
        done = terminations | truncations
        if done.any() and not done.all():
            return obs, done
    raise AssertionError("no step ended the episodes of only some envs")


@pytest.mark.parametrize("mode", MODES)
def test_next_step_a_restarted_server_truncates_its_envs_and_restarts_them_when_due(mode):
    """The envs whose reset was due at the lost step (their episode ended at
    the step before) get their reset observation in it, on the new connection;
    the others are truncated there and get theirs at the next step."""
    port = free_port()
    with contextlib.ExitStack() as stack:
        proc = stack.enter_context(server(port))
        envs = openenv_gym.RemoteVectorEnv(f"http://127.0.0.1:{port}", 3, mode=mode, reconnect=POLICY, message_timeout=5)
        stack.callback(envs.close)
        left = np.zeros(3, dtype=np.int64)
        envs.reset(seed=[0, 1, 2])
        last_obs, due = step_until_some_ended(envs)
        kill(proc)
        stack.enter_context(server(port))

        obs, rewards, terminations, truncations, infos = envs.step(left)
        assert np.array_equal(truncations, ~due) and not terminations.any() and (rewards == 0).all()
        assert infos[FLAG].all() and infos[MASK].all() and all(infos[LOST_REASON])
        assert np.array_equal(obs[~due], last_obs[~due])  # the episodes the loss cut end on their last obs
        assert is_reset_obs(obs[due])  # the due ones restarted, on the new connection

        obs, rewards, terminations, truncations, infos = envs.step(left)
        assert is_reset_obs(obs[~due]) and (rewards[~due] == 0).all()  # their autoreset step
        assert np.array_equal(infos[MASK], ~due)  # flagged once more: their first reset after the loss
        assert (rewards[due] == 1).all()  # the others stepped on
        for _ in range(30):
            obs, rewards, terminations, truncations, infos = envs.step(envs.action_space.sample())
            assert FLAG not in infos and obs in envs.observation_space


@pytest.mark.parametrize("mode", MODES)
def test_next_step_only_the_restarted_servers_envs_are_touched(mode):
    """Two servers, the second restarts: envs 0-1 match SyncVectorEnv step for
    step throughout; envs 2-3 are truncated once, flagged, and go on (here no
    reset is due at the lost step, so they reconnect at the next one)."""
    port_a, port_b = free_port(), free_port()
    ref = gym.vector.SyncVectorEnv([lambda: gym.make("CartPole-v1")] * 4)
    with contextlib.ExitStack() as stack:
        stack.enter_context(server(port_a))
        proc_b = stack.enter_context(server(port_b))
        urls = [f"http://127.0.0.1:{port_a}", f"http://127.0.0.1:{port_b}"]
        envs = openenv_gym.RemoteVectorEnv(urls, 4, mode=mode, reconnect=POLICY, message_timeout=5)
        stack.callback(envs.close)
        stack.callback(ref.close)
        got, want = envs.reset(seed=7), ref.reset(seed=7)
        assert np.array_equal(got[0], want[0])
        ref.action_space.seed(1)
        ends_a = 0
        done_b = np.zeros(2, dtype=np.bool_)
        last_b = got[0][2:]
        for t in range(120):
            if t == 40:
                kill(proc_b)
                stack.enter_context(server(port_b))
            actions = ref.action_space.sample()
            obs, rewards, terminations, truncations, infos = envs.step(actions)
            want_obs, want_rewards, want_terms, want_truncs, _ = ref.step(actions)
            assert np.array_equal(obs[:2], want_obs[:2]), t
            assert np.array_equal(rewards[:2], want_rewards[:2]), t
            assert np.array_equal(terminations[:2], want_terms[:2]), t
            assert np.array_equal(truncations[:2], want_truncs[:2]), t
            assert MASK not in infos or not infos[MASK][:2].any(), t
            ends_a += int((want_terms[:2] | want_truncs[:2]).sum())
            if t < 40:
                assert np.array_equal(obs, want_obs) and FLAG not in infos, t
            elif t == 40:  # the lost step: truncated, unless a reset was due (then restarted)
                assert infos[MASK][2:].all(), t
                assert np.array_equal(truncations[2:], ~done_b) and (rewards[2:] == 0).all(), t
                assert np.array_equal(obs[2:][~done_b], last_b[~done_b]), t
            elif t > 41:
                assert FLAG not in infos, t
            done_b, last_b = terminations[2:] | truncations[2:], obs[2:]
        assert ends_a >= 2, "envs 0-1 must cross episode boundaries"


@pytest.mark.parametrize("mode", MODES)
def test_same_step_the_lost_step_returns_the_new_episode_after_waiting_for_the_server(mode):
    port = free_port()
    with contextlib.ExitStack() as stack:
        proc = stack.enter_context(server(port))
        envs = openenv_gym.RemoteVectorEnv(
            f"http://127.0.0.1:{port}", 3, mode=mode, autoreset_mode=AutoresetMode.SAME_STEP,
            reconnect=POLICY, message_timeout=5,
        )
        stack.callback(envs.close)
        left = np.zeros(3, dtype=np.int64)
        envs.reset(seed=0)
        last_obs, *_ = envs.step(left)
        kill(proc)
        started = time.monotonic()
        with server_back_later(port, 0.5):
            obs, rewards, terminations, truncations, infos = envs.step(left)
            assert time.monotonic() - started >= 0.5  # it waited for the server, retrying
            assert truncations.all() and not terminations.any() and (rewards == 0).all()
            assert is_reset_obs(obs)  # the new episodes start in this step
            assert infos[FLAG].all() and infos[MASK].all()
            assert infos["_final_obs"].all()
            for i in range(3):
                assert np.array_equal(infos["final_obs"][i], last_obs[i])
            assert infos["final_info"][FLAG].all() and all(infos["final_info"][LOST_REASON])
            for _ in range(30):
                obs, rewards, terminations, truncations, infos = envs.step(envs.action_space.sample())
                assert FLAG not in infos and obs in envs.observation_space


@pytest.mark.parametrize("mode", MODES)
def test_disabled_the_lost_envs_wait_for_a_masked_reset_which_reconnects(mode):
    port = free_port()
    with contextlib.ExitStack() as stack:
        proc = stack.enter_context(server(port))
        envs = openenv_gym.RemoteVectorEnv(
            f"http://127.0.0.1:{port}", 2, mode=mode, autoreset_mode=AutoresetMode.DISABLED,
            reconnect=POLICY, message_timeout=5,
        )
        stack.callback(envs.close)
        left = np.zeros(2, dtype=np.int64)
        envs.reset(seed=0)
        last_obs, *_ = envs.step(left)
        kill(proc)
        obs, rewards, terminations, truncations, infos = envs.step(left)  # the server is still down
        assert truncations.all() and not terminations.any() and (rewards == 0).all()
        assert np.array_equal(obs, last_obs) and infos[FLAG].all()
        with pytest.raises(OpenEnvGymError, match="reset"):
            envs.step(left)
        with server_back_later(port, 0.3):
            obs, infos = envs.reset(options={"reset_mask": truncations})
            assert is_reset_obs(obs) and infos[FLAG].all() and infos[MASK].all()
            for _ in range(5):
                obs, rewards, terminations, truncations, infos = envs.step(left)
                assert FLAG not in infos and (rewards == 1).all()


@pytest.mark.parametrize("mode", MODES)
def test_without_reconnect_a_lost_server_raises_a_typed_error_within_the_timeout(mode):
    port = free_port()
    with server(port) as proc:
        envs = openenv_gym.RemoteVectorEnv(f"http://127.0.0.1:{port}", 2, mode=mode, message_timeout=1)
        try:
            envs.reset(seed=0)
            envs.step(np.zeros(2, dtype=np.int64))
            proc.send_signal(signal.SIGSTOP)  # hung: nothing answers
            try:
                started = time.monotonic()
                with pytest.raises(MessageTimeoutError):
                    envs.step(np.zeros(2, dtype=np.int64))
                assert time.monotonic() - started < 1.5
            finally:
                proc.send_signal(signal.SIGCONT)
            kill(proc)  # gone
            started = time.monotonic()
            with pytest.raises((ConnectionClosedError, MessageTimeoutError)):
                envs.step(np.zeros(2, dtype=np.int64))
            assert time.monotonic() - started < 1.5
        finally:
            envs.close()
