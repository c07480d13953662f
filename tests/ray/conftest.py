"""Ray for the pool's tests: a local instance or a fake cluster of 3 nodes, always shut down.

The test modules skip only when Ray is not installed (``pytest.importorskip("ray")``;
``pip install -e '.[test,ray,rllib]'``; ``.ci/ray`` runs them and fails if they did not
run). Ray is kept on loopback (its nodes, and so the servers, on 127.0.0.1) and sends
no usage statistics.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

# Before Ray is imported: it reads them once.
os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")  # node address 127.0.0.1
os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")

try:
    import ray
except ImportError:  # each test module skips, with pytest.importorskip("ray")
    ray = None

ROOT = Path(__file__).resolve().parents[2]
#: Workers import the tests' envs (``tests.ray.envs``) from the checkout.
RUNTIME_ENV = {"env_vars": {"PYTHONPATH": str(ROOT)}}


def children(pid: int) -> set[int]:
    """Every live descendant of ``pid``, from /proc."""
    parents: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError, IndexError, ValueError):
                parents[int(entry.name)] = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
    found, frontier = set(), {pid}
    while frontier:
        frontier = {child for child, parent in parents.items() if parent in frontier} - found
        found |= frontier
    return found


def alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"  # a zombie has exited


def wait_gone(pids: set[int], timeout: float = 30.0) -> set[int]:
    """The processes of ``pids`` still running after up to ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while (left := {p for p in pids if alive(p)}) and time.monotonic() < deadline:
        time.sleep(0.1)
    return left


@contextlib.contextmanager
def no_process_left() -> Iterator[None]:
    """Whatever this process starts in the block has exited after it."""
    before = children(os.getpid())
    yield
    left = wait_gone(children(os.getpid()) - before)
    assert not left, f"processes left running: {sorted(left)}"


@pytest.fixture(scope="module")
def local_ray() -> Iterator[None]:
    """Ray on this machine with 2 CPUs, as ``ray.init()`` on a laptop starts it."""
    with no_process_left():
        ray.init(num_cpus=2, include_dashboard=False, runtime_env=RUNTIME_ENV)
        try:
            yield
        finally:
            ray.shutdown()


@pytest.fixture(scope="module")
def cluster() -> Iterator[object]:
    """A head and two worker nodes of one CPU each (``ray.cluster_utils.Cluster``),
    the driver connected to the head."""
    from ray.cluster_utils import Cluster

    with no_process_left():
        fake = Cluster(initialize_head=True, head_node_args={"num_cpus": 1, "include_dashboard": False})
        try:
            for _ in range(2):
                fake.add_node(num_cpus=1)
            ray.init(address=fake.address, runtime_env=RUNTIME_ENV)
            try:
                yield fake
            finally:
                ray.shutdown()
        finally:
            fake.shutdown()
