"""A pool of env servers on local Ray (``ray.init(num_cpus=2)``).

What a pool promises, each against real servers in Ray actors: every URL is a
normal OpenEnv server; ``vector_env`` steps exactly like ``SyncVectorEnv``;
leases never put more sessions on a server than it holds, from any process; a
server that dies is restarted, on its old port when it can, and its envs are
truncated, flagged and restarted without a step lost or applied twice; a
server that comes back elsewhere is followed; the pool scales; a server that
stops answering is restarted by the health check, and one slow to start is left
to start; nothing is left running after ``close()`` or after the driver exits.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import textwrap
import threading
import time

import gymnasium as gym
import numpy as np
import pytest

import openenv_gym

ray = pytest.importorskip("ray")

import openenv_gym.ray as oray  # noqa: E402
from tests.ray.conftest import ROOT, alive, wait_gone  # noqa: E402
from tests.ray.envs import StepLedger  # noqa: E402

pytestmark = [pytest.mark.usefixtures("local_ray"), pytest.mark.timeout(300)]

COUNTING = "tests.ray.envs:CountingEnv"
#: Servers that do not busy-poll: the test's client and several servers share 2 cores.
QUIET = {"busy_poll": 0.0}


def launch(env: str = "CartPole-v1", **kwargs) -> oray.ServerPool:
    kwargs = {"num_servers": 2, "sessions_per_server": 16, "num_cpus_per_server": 0, "server_kwargs": QUIET,
              **kwargs}
    return oray.launch(env, **kwargs)


def pids_of(pool: oray.ServerPool) -> set[int]:
    return {server["pid"] for server in pool.health()}


def crash(pid: int) -> None:
    """What an env server's process dying looks like to Ray: SIGKILL (the
    process is an actor of this test's Ray instance)."""
    os.kill(pid, signal.SIGKILL)


def wait_until(condition, timeout: float = 60.0, what: str = "condition", interval: float = 0.2):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if value := condition():
            return value
        time.sleep(interval)
    raise AssertionError(f"{what} not met within {timeout} s")


def test_every_url_is_an_openenv_server_and_close_leaves_nothing():
    GenericEnvClient = pytest.importorskip("openenv").GenericEnvClient  # noqa: N806 - the official client

    pool = launch(name="urls")
    try:
        urls = pool.urls
        health = pool.health()
        assert len(urls) == 2 and [s["url"] for s in health] == urls
        assert all(s["state"] == "alive" and s["starts"] == 1 and s["max_sessions"] == 16 for s in health)
        assert len({s["pid"] for s in health}) == 2 and all(url.startswith("http://127.0.0.1:") for url in urls)
        with GenericEnvClient(base_url=urls[0]).sync() as client:  # the official OpenEnv client
            result = client.reset(seed=0)
            result = client.step({"action": 1})
            assert len(result.observation["obs"]) == 4 and result.reward == 1.0
        plain = openenv_gym.RemoteVectorEnv(urls, 4)  # a client that knows nothing of Ray
        try:
            plain.reset(seed=0)
            plain.step(plain.action_space.sample())
        finally:
            plain.close()
        processes = pids_of(pool)
    finally:
        pool.close()
    assert not wait_gone(processes), "server processes left after close()"
    with pytest.raises(openenv_gym.errors.OpenEnvGymError, match="no pool named 'urls'"):
        oray.connect("urls")
    with pytest.raises(openenv_gym.errors.OpenEnvGymError, match="closed"):
        pool.urls  # noqa: B018 - reading it raises


def test_a_pool_serves_pettingzoo_games_too():
    """Any env create_app serves: here a PettingZoo game, played whole through RemoteAECEnv."""
    api_test = pytest.importorskip("pettingzoo.test").api_test

    with launch("pettingzoo.classic.connect_four_v3", num_servers=1, name="games") as pool:
        env = openenv_gym.RemoteAECEnv(pool.urls[0])
        try:
            api_test(env, num_cycles=20)
        finally:
            env.close()


@pytest.mark.parametrize("mode", ["batched", "sessions"])
def test_vector_env_steps_exactly_like_sync_vector_env(mode):
    with launch(num_servers=3, name=f"exact-{mode}") as pool:
        envs = pool.vector_env(16, mode=mode)
        reference = gym.vector.SyncVectorEnv([lambda: gym.make("CartPole-v1")] * 16)
        try:
            assert sorted(envs.lease.placement.values()) == [5, 5, 6]  # spread over the 3 servers
            assert [s["active_sessions"] for s in pool.health()] == [6, 5, 5]
            got, want = envs.reset(seed=42), reference.reset(seed=42)
            np.testing.assert_array_equal(got[0], want[0])
            actions = np.random.default_rng(0).integers(0, 2, size=(200, 16))
            ends = 0
            for t, action in enumerate(actions):
                got, want = envs.step(action), reference.step(action)
                for a, b in zip(got[:4], want[:4]):
                    np.testing.assert_array_equal(a, b, err_msg=f"step {t}")
                ends += int((got[2] | got[3]).sum())
            assert ends > 16  # episodes ended and autoreset, on every server
        finally:
            envs.close()
            reference.close()
        assert [s["leased"] for s in pool.health()] == [0, 0, 0]  # closing released the lease


def test_leases_never_oversubscribe_a_server_from_any_process():
    with launch(num_servers=2, sessions_per_server=4, name="leases") as pool:
        first = pool.lease(5)
        assert sorted(first.placement.values()) == [2, 3]

        @ray.remote(num_cpus=0)
        def other_trainer(name: str) -> dict:
            """Another process of the cluster takes the rest of the pool and steps it."""
            envs = oray.connect(name).vector_env(3)
            try:
                envs.reset(seed=0)
                envs.step(envs.action_space.sample())
                return dict(envs.lease.placement)
            finally:
                envs.close()

        placement = ray.get(other_trainer.remote("leases"))
        assert sum(placement.values()) == 3
        with pool.lease(3):  # the other trainer released its 3
            assert [s["leased"] for s in pool.health()] == [4, 4]
            with pytest.raises(oray.PoolCapacityError, match="room for 0 more sessions"):
                pool.lease(1)
        first.release()
        first.release()  # idempotent
        assert [s["leased"] for s in pool.health()] == [0, 0]
        assert sum(pool.lease(8).placement.values()) == 8


def test_the_lease_of_a_holder_that_died_is_released():
    """An EnvRunner that crashes never closes its env: the broker's health check
    finds its holder gone and takes the slots back."""
    with launch(num_servers=1, sessions_per_server=4, name="orphans", health_interval=1.0) as pool:

        @ray.remote(num_cpus=0)
        class Runner:
            def make_env(self, name: str) -> int:
                self.envs = oray.connect(name).vector_env(4)
                return self.envs.lease.size

        runner = Runner.remote()
        assert ray.get(runner.make_env.remote("orphans")) == 4
        assert pool.health()[0]["leased"] == 4
        ray.kill(runner)
        wait_until(lambda: pool.health()[0]["leased"] == 0, 30, "the lease released")
        pool.lease(4).release()


@pytest.mark.parametrize("mode", ["batched", "sessions"])
def test_a_crashed_server_is_restarted_and_its_envs_truncated_without_losing_a_step(mode):
    with launch(COUNTING, name=f"crash-{mode}") as pool:
        before = pool.health()
        envs = pool.vector_env(8, mode=mode)
        try:
            on_crashed = np.array([url == before[1]["url"] for url in envs.lease.placement
                                   for _ in range(envs.lease.placement[url])])
            obs, _ = envs.reset(seed=list(range(8)))
            ledger = StepLedger(obs)
            # Episodes of 10 to 17 steps (seeds 0-7): no env's reset falls due at steps 18-20,
            # when the loss shows, so each env of the crashed server loses one episode. (An env
            # whose reset is due at the lost step gets its reset there instead, untruncated.)
            for t in range(50):
                if t == 18:
                    crash(before[1]["pid"])
                obs, _, terminated, truncated, infos = envs.step(np.ones(8, dtype=np.int64))
                ledger.check(obs, terminated, truncated, infos)
            after = pool.health()
        finally:
            envs.close()
        assert np.array_equal(ledger.lost > 0, on_crashed) and ledger.lost.max() == 1
        assert envs.episodes_lost == int(on_crashed.sum())
        assert after[1]["starts"] == 2 and after[1]["pid"] != before[1]["pid"]
        assert after[1]["url"] == before[1]["url"]  # back on its old port
        assert after[0]["starts"] == 1 and after[0]["pid"] == before[0]["pid"]


def test_a_server_back_at_another_address_is_followed():
    """The port is taken while the server is down: it comes back on another, and
    the envs reconnect there through the broker."""
    with launch(COUNTING, num_servers=1, name="moved") as pool:
        (before,) = pool.health()
        port = int(before["url"].rsplit(":", 1)[1])
        envs = pool.vector_env(4)
        try:
            obs, _ = envs.reset(seed=0)
            ledger = StepLedger(obs)
            crash(before["pid"])
            squatter = socket.socket()
            squatter.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # past the old connections' TIME_WAIT
            try:
                wait_until(lambda: _listen(squatter, port), 10, "the old port free", interval=0.01)
                for _ in range(30):
                    ledger.check(*_step(envs))
            finally:
                squatter.close()
        finally:
            envs.close()
        (after,) = pool.health()
        assert after["url"] != before["url"] and pool.urls == [after["url"]]
        assert ledger.lost.tolist() == [1, 1, 1, 1] and envs.episodes_lost == 4


def _listen(sock: socket.socket, port: int) -> bool:
    try:
        sock.bind(("127.0.0.1", port))
        sock.listen()
    except OSError:
        return False
    return True


def _step(envs):
    obs, _, terminated, truncated, infos = envs.step(np.ones(envs.num_envs, dtype=np.int64))
    return obs, terminated, truncated, infos


def test_scale_up_and_down_moves_the_leases_of_stopped_servers():
    with launch(COUNTING, num_servers=2, sessions_per_server=8, name="scale") as pool:
        envs = pool.vector_env(6)  # 3 + 3
        try:
            obs, _ = envs.reset(seed=0)
            ledger = StepLedger(obs)
            assert len(pool.scale(3)) == 3
            with pool.lease(2) as lease, pool.lease(1):
                assert list(lease.placement) == [pool.urls[2]]  # least-loaded first: the new server
                with pytest.raises(RuntimeError, match="lack room"):  # 9 sessions, one server of 8
                    pool.scale(1)
            assert len(pool.urls) == 3  # refused: nothing stopped
            for _ in range(5):
                ledger.check(*_step(envs))
            pool.scale(1)  # stops the idle server and one of the two holding the envs
            for _ in range(20):
                ledger.check(*_step(envs))
            (server,) = pool.health()
        finally:
            envs.close()
        assert ledger.lost.tolist() == [0, 0, 0, 1, 1, 1]  # the second server's envs moved
        assert server["leased"] == 6 and server["index"] == 0


def test_a_server_slow_to_start_is_not_restarted_by_the_health_check():
    """Checks that run while a server starts (its env takes 13 s to build here; on a busy
    machine Ray's actors are as slow) wait for the actor to be built and time out: they must
    not count against it. Two did, and the broker killed the server before it was up, so
    ``launch`` failed with "server 0 of the pool did not start"."""
    with launch("tests.ray.envs:SlowStartEnv", num_servers=1, name="slow-start", health_interval=0.5,
                health_timeout=0.5, server_kwargs={**QUIET, "env_kwargs": {"start_delay": 13.0}}) as pool:
        (server,) = pool.health()
    assert (server["starts"], server["state"]) == (1, "alive")


def test_the_health_check_restarts_a_server_that_stops_answering():
    """An env call that blocks the server's event loop (inline execution) makes
    its /health time out: after two failed checks the broker has Ray restart it."""
    pool = launch("tests.envs:SlowEnv", num_servers=1, name="stuck", health_interval=1.0, health_timeout=1.0,
                  server_kwargs={**QUIET, "execution": "inline", "env_kwargs": {"delay": 60.0}})
    with pool:
        (before,) = pool.health()
        env = openenv_gym.RemoteEnv(before["url"], message_timeout=90)
        env.reset()
        stuck = threading.Thread(target=lambda: _swallow(env.step, 0), daemon=True)
        stuck.start()
        after = wait_until(lambda: next((s for s in pool.health() if s["starts"] == 2 and s["state"] == "alive"),
                                        None), 60, "a restart")
        stuck.join(30)
        env.close()
    assert after["pid"] != before["pid"] and not alive(before["pid"])


def _swallow(call, *args):
    try:
        call(*args)
    except openenv_gym.errors.OpenEnvGymError:
        pass  # the server was killed under this call


def test_nothing_is_left_when_the_driver_exits_without_closing():
    address = ray.get_runtime_context().gcs_address
    script = textwrap.dedent(f"""
        import ray, openenv_gym.ray as oray
        ray.init(address={address!r})
        pool = oray.launch("CartPole-v1", num_servers=2, num_cpus_per_server=0, name="orphan")
        print(" ".join(str(s["pid"]) for s in pool.health()), flush=True)
    """)  # ... and exits, the pool still open
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=240, env=env)
    assert run.returncode == 0, run.stderr[-3000:]
    servers = {int(pid) for pid in run.stdout.split()}
    assert len(servers) == 2
    assert not wait_gone(servers), "server processes outlived their driver"
    wait_until(lambda: _no_pool("orphan"), 30, "the broker gone")


def _no_pool(name: str) -> bool:
    try:
        oray.connect(name)
    except openenv_gym.errors.OpenEnvGymError:
        return True
    return False
