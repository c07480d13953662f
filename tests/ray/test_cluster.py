"""A pool on a fake cluster of 3 nodes (``ray.cluster_utils.Cluster``: a head and two
workers, one CPU each, all on this machine).

Servers spread over the nodes, and a vector env over them steps exactly like a
``SyncVectorEnv``; the server processes of one node are killed in
the middle of a run, then a whole node is removed: each time Ray restarts the
servers (those of the lost node on the nodes left), the vector env reports
exactly the lost episodes as truncated and flagged, and no env step is lost
or applied twice. Closing leaves no actor and no process.
"""

from __future__ import annotations

import os
import signal

import gymnasium as gym
import numpy as np
import pytest

ray = pytest.importorskip("ray")

import openenv_gym.ray as oray  # noqa: E402
from tests.ray.conftest import wait_gone  # noqa: E402
from tests.ray.envs import CountingEnv, StepLedger  # noqa: E402

pytestmark = [pytest.mark.timeout(600)]

NUM_ENVS = 16


@pytest.fixture(scope="module")
def pool(cluster):
    with oray.launch("tests.ray.envs:CountingEnv", num_servers=3, sessions_per_server=16,
                     num_cpus_per_server=0.5, server_kwargs={"busy_poll": 0.0}, name="cluster") as pool:
        yield pool
    assert not wait_gone(_pids), "server processes left after close()"


_pids: set[int] = set()


def worker_nodes(cluster) -> dict[str, object]:
    return {node.node_id: node for node in cluster.worker_nodes}


def run(envs, ledger: StepLedger, steps: int, event=None, at: int = 0) -> None:
    for t in range(steps):
        if t == at and event is not None:
            event()
        obs, _, terminated, truncated, infos = envs.step(np.ones(NUM_ENVS, dtype=np.int64))
        ledger.check(obs, terminated, truncated, infos)


def env_nodes(pool, envs) -> np.ndarray:
    """The node of each env's server."""
    node_of = {server["url"]: server["node_id"] for server in pool.health()}
    return np.array([node_of[url] for url, n in envs.lease.placement.items() for _ in range(n)])


def test_servers_spread_over_the_nodes(pool, cluster):
    health = pool.health()
    _pids.update(server["pid"] for server in health)
    nodes = {server["node_id"] for server in health}
    assert len(nodes) == 3 and nodes == {n["NodeID"] for n in ray.nodes() if n["Alive"]}


def test_vector_env_over_the_nodes_steps_like_sync_vector_env(pool, cluster):
    envs = pool.vector_env(NUM_ENVS)
    reference = gym.vector.SyncVectorEnv([CountingEnv] * NUM_ENVS)
    try:
        assert len(set(env_nodes(pool, envs))) == 3
        got, want = envs.reset(seed=5), reference.reset(seed=5)
        np.testing.assert_array_equal(got[0], want[0])
        for t in range(60):
            actions = np.ones(NUM_ENVS, dtype=np.int64)
            for a, b in zip(envs.step(actions)[:4], reference.step(actions)[:4]):
                np.testing.assert_array_equal(a, b, err_msg=f"step {t}")
    finally:
        envs.close()
        reference.close()


def test_the_servers_of_a_node_killed_mid_run(pool, cluster):
    envs = pool.vector_env(NUM_ENVS)
    try:
        hosting = {s["node_id"] for s in pool.health()}
        victim = next(i for i in worker_nodes(cluster) if i in hosting)
        on_victim = env_nodes(pool, envs) == victim
        assert 0 < on_victim.sum() < NUM_ENVS
        victims = [s["pid"] for s in pool.health() if s["node_id"] == victim]
        obs, _ = envs.reset(seed=list(range(NUM_ENVS)))
        ledger = StepLedger(obs)
        run(envs, ledger, 60, lambda: [os.kill(pid, signal.SIGKILL) for pid in victims], at=20)
    finally:
        envs.close()
    assert np.array_equal(ledger.lost, on_victim.astype(np.int64))  # one truncated episode each, no other
    assert envs.episodes_lost == on_victim.sum()
    restarted = [s for s in pool.health() if s["starts"] == 2]
    assert len(restarted) == len(victims) and all(s["state"] == "alive" for s in restarted)
    _pids.update(server["pid"] for server in pool.health())


def test_a_lost_node_moves_its_servers_to_the_nodes_left(pool, cluster):
    envs = pool.vector_env(NUM_ENVS)
    try:
        hosting = {s["node_id"] for s in pool.health()}
        lost_id, lost = next((i, node) for i, node in worker_nodes(cluster).items() if i in hosting)
        on_lost = env_nodes(pool, envs) == lost_id
        moving = {s["index"] for s in pool.health() if s["node_id"] == lost_id}
        assert moving and 0 < on_lost.sum() < NUM_ENVS
        obs, _ = envs.reset(seed=list(range(NUM_ENVS)))
        ledger = StepLedger(obs)
        run(envs, ledger, 60, lambda: cluster.remove_node(lost), at=20)
        health = pool.health()
    finally:
        envs.close()
    assert np.array_equal(ledger.lost, on_lost.astype(np.int64))
    left = {n["NodeID"] for n in ray.nodes() if n["Alive"]}
    assert lost_id not in left and len(left) == 2
    assert all(s["state"] == "alive" and s["node_id"] in left for s in health)
    assert {s["index"] for s in health if s["starts"] > 1} >= moving  # restarted, elsewhere
    _pids.update(server["pid"] for server in health)
