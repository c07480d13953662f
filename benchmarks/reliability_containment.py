#!/usr/bin/env python
"""Reliability: does ``--execution process`` contain the env? (docs/reliability.md,
"Process isolation that contains")

    python benchmarks/reliability_containment.py                      # this checkout, ~1 min
    python benchmarks/reliability_containment.py --checkout ../old    # another checkout's code

Every case starts ``openenv-gym serve ENV --execution process`` afresh, as a subprocess
on 127.0.0.1 (the checkout's code first on ``PYTHONPATH``), opens a session whose step
spins on the CPU for ever (``tests.envs:SpinningEnv``), and measures how long the
session's env process lives on once the session ends:

* ``client_gone`` / ``client_closes``: the client drops its socket / sends a close frame;
* ``reaper``: ``--session-timeout 1``, the client connected and waiting;
* ``drain``: SIGTERM with ``--drain-timeout 1``, the env ignoring SIGTERM (as an env with
  handlers of its own may); the server's exit is timed too;
* ``held_close``: a held session (``openenv/session/create``) closed while a ``tools/call``
  spins in it;
* ``sigkill``: the server killed by SIGKILL, with one spinning and one idle session: the
  processes below it (read from /proc before the kill) still alive 5 s later.

Then ``memory``: ``tests.envs:GrowingEnv`` keeps 1,024 MiB more at each ``step(1)``; the
RSS of the server's whole tree after three of them, with and without ``--env-memory-mb 512``
(not with ``--checkout`` of a version without the flag), and the memory of an env process
that has just started. And ``rlimit_*``: which limit to cap with. A fork server's child
(as an env process is) sets ``RLIMIT_AS`` or ``RLIMIT_DATA`` to 512 MiB, builds
CartPole-v1, then grows a list by 1 MiB at a time: the MiB it held when the MemoryError came.

Every wait is capped (``--cap`` seconds); every process a case started that is still
alive at its end is killed by its PID. Writes benchmarks/results/reliability_containment.json
(``--out``) and prints a Markdown table.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.conftest import ServerProcesses, process_gone  # noqa: E402 - after the path

SPINNING = "tests.envs:SpinningEnv"


def alive(pid: int) -> bool:
    return not process_gone(pid)


def kind(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as cmdline:
            text = cmdline.read().decode(errors="replace")
    except OSError:
        return "?"
    if "resource_tracker" in text:
        return "resource tracker"
    return "fork server or env" if "forkserver" in text else text.split("\0")[0]


def status_kib(pid: int, key: str) -> int:
    try:
        with open(f"/proc/{pid}/status") as status:
            for line in status:
                if line.startswith(key + ":"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def until(condition: Callable[[], bool], cap: float) -> float | None:
    """Seconds until ``condition()`` holds (polled every 20 ms), ``None`` past ``cap``."""
    started = time.monotonic()
    while time.monotonic() - started < cap:
        if condition():
            return time.monotonic() - started
        time.sleep(0.02)
    return None


class Server(ServerProcesses):
    """``openenv-gym serve`` of one case, and every process below it it was seen with."""

    def __init__(self, checkout: Path, env: str, *flags: str) -> None:
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            port = sock.getsockname()[1]
        python_path = os.pathsep.join(p for p in (str(checkout), os.environ.get("PYTHONPATH")) if p)
        proc = subprocess.Popen(
            [sys.executable, "-m", "openenv_gym.cli", "serve", env, "--port", str(port), "--execution", "process",
             *flags], env={**os.environ, "PYTHONPATH": python_path}, cwd=checkout, stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        super().__init__(proc, f"http://127.0.0.1:{port}")
        if until(self._healthy, 60) is None:
            raise RuntimeError(f"the server did not start: {flags}")

    def _healthy(self) -> bool:
        try:
            return self.health()["status"] == "healthy"
        except OSError:
            return False

    def tree_rss_mib(self) -> float:
        return sum(status_kib(pid, "VmRSS") for pid in {self.proc.pid, *self.descendants()}) / 1024

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)
        self.kill_seen()


@contextlib.contextmanager
def serving(checkout: Path, *flags: str, env: str = SPINNING) -> Iterator[Server]:
    server = Server(checkout, env, *flags)
    try:
        yield server
    finally:
        server.stop()


def ws(server: Server) -> Any:
    from websockets.sync.client import connect

    return connect(server.url.replace("http://", "ws://") + "/ws", compression=None, open_timeout=10)


def spin_on(server: Server, sock: Any, cap: float) -> int:
    sock.send(json.dumps({"type": "reset", "data": {"seed": 0}}))
    sock.recv(timeout=30)
    return server.spinning_env(lambda: sock.send(json.dumps({"type": "step", "data": {"action": 0}})), cap)


def post(server: Server, body: dict) -> dict:
    request = urllib.request.Request(server.url + "/mcp", data=json.dumps(body).encode(), method="POST",
                                     headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=60) as response:
        return json.loads(response.read())


def free(server: Server) -> bool:
    health = server.health()
    return health["active_sessions"] == 0 and health["hung_env_calls"] == 0


def ended(server: Server, pid: int, cap: float, end: Callable[[], Any]) -> dict[str, Any]:
    """End the session by ``end()``: seconds until its env process is gone and its slot free."""
    end()
    gone = until(lambda: not alive(pid), cap)
    return {"gone_after_end_s": gone, "slot_free_s": until(lambda: free(server), cap)}


def case_client(checkout: Path, cap: float, *, frame: bool) -> dict[str, Any]:
    with serving(checkout) as server, ws(server) as sock:
        pid = spin_on(server, sock, cap)
        return ended(server, pid, cap, sock.close if frame else sock.close_socket)


def case_reaper(checkout: Path, cap: float) -> dict[str, Any]:
    with serving(checkout, "--session-timeout", "1") as server, ws(server) as sock:
        started = time.monotonic()
        pid = spin_on(server, sock, cap)
        gone = until(lambda: not alive(pid), cap)
        return {"gone_after_step_s": None if gone is None else time.monotonic() - started,
                "session_timeout_s": 1.0, "slot_free_s": until(lambda: free(server), cap)}


def case_drain(checkout: Path, cap: float) -> dict[str, Any]:
    with serving(checkout, "--drain-timeout", "1", "--env-kwargs", '{"stubborn": true}') as server, ws(server) as sock:
        pid = spin_on(server, sock, cap)
        started = time.monotonic()
        server.proc.send_signal(signal.SIGTERM)
        gone = until(lambda: not alive(pid), cap)
        exited = until(lambda: server.proc.poll() is not None, max(cap - (time.monotonic() - started), 0.1))
        return {"drain_timeout_s": 1.0, "gone_after_sigterm_s": gone,
                "server_exit_s": None if exited is None else time.monotonic() - started}


def case_held(checkout: Path, cap: float) -> dict[str, Any]:
    with serving(checkout) as server:
        session = post(server, {"jsonrpc": "2.0", "id": 1, "method": "openenv/session/create"})["result"]["session_id"]
        act = {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
               "params": {"name": "act", "arguments": {"action": 0}, "session_id": session}}
        acting = threading.Thread(target=lambda: post(server, act), daemon=True)
        pid = server.spinning_env(acting.start, cap)
        close = {"jsonrpc": "2.0", "id": 3, "method": "openenv/session/close", "params": {"session_id": session}}
        return ended(server, pid, cap, lambda: post(server, close))


def case_sigkill(checkout: Path, cap: float) -> dict[str, Any]:
    with serving(checkout) as server, ws(server) as spinning, ws(server) as idle:
        spin_on(server, spinning, cap)
        idle.send(json.dumps({"type": "reset", "data": {"seed": 0}}))
        idle.recv(timeout=30)
        below = server.descendants()
        kinds = {pid: kind(pid) for pid in below}
        server.proc.kill()
        server.proc.wait(10)
        all_gone = until(lambda: not any(alive(pid) for pid in below), 5.0)
        return {"below_server": sorted(kinds.values()), "all_gone_s": all_gone,
                "alive_5s_after": sorted(kinds[pid] for pid in below if alive(pid))}


def case_memory(checkout: Path, cap: float, memory_mb: int | None) -> dict[str, Any]:
    flags = ("--env-kwargs", '{"megabytes": 1024}', *(("--env-memory-mb", str(memory_mb)) if memory_mb else ()))
    with serving(checkout, *flags, env="tests.envs:GrowingEnv") as server, ws(server) as sock:
        sock.send(json.dumps({"type": "reset", "data": {"seed": 0}}))
        sock.recv(timeout=30)
        [pid] = server.env_processes()
        fresh = {"env_VmData_mib": status_kib(pid, "VmData") // 1024, "env_VmRSS_mib": status_kib(pid, "VmRSS") // 1024,
                 "env_VmSize_mib": status_kib(pid, "VmSize") // 1024}
        before = server.tree_rss_mib()
        answers = []
        for _ in range(3):
            sock.send(json.dumps({"type": "step", "data": {"action": 1}}))
            reply = json.loads(sock.recv(timeout=cap))
            answers.append(reply["type"] if reply["type"] != "error" else reply["data"]["message"])
            sock.send(json.dumps({"type": "reset", "data": {}}))
            sock.recv(timeout=cap)
        return {"memory_mb": memory_mb, **fresh, "tree_rss_mib_start": round(before),
                "tree_rss_mib_after_3_steps": round(server.tree_rss_mib()), "answers": answers}


def _grow_under(limit: str, mib: int, answer: Any) -> None:
    """In a fork server's child: cap ``limit`` at ``mib``, build CartPole, grow until refused."""
    import resource

    import gymnasium as gym

    cap = mib << 20
    resource.setrlimit(getattr(resource, limit), (cap, cap))
    env = gym.make("CartPole-v1")
    env.reset(seed=0)
    start = {key: status_kib(os.getpid(), key) // 1024 for key in ("VmSize", "VmData", "VmRSS")}
    held: list[bytearray] = []
    try:
        while len(held) < 4 * mib:
            held.append(bytearray(1 << 20))
    except MemoryError:
        pass
    answer.send({"started_mib": start, "grew_mib_before_memory_error": len(held)})


def case_rlimit(limit: str, mib: int) -> dict[str, Any]:
    import multiprocessing

    context = multiprocessing.get_context("forkserver")
    mine, theirs = context.Pipe()
    child = context.Process(target=_grow_under, args=(limit, mib, theirs), daemon=True)
    child.start()
    try:
        return mine.recv() if mine.poll(60) else {"error": "no answer in 60 s"}
    finally:
        child.kill()
        child.join(5)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--checkout", type=Path, default=ROOT, help="the checkout whose code the servers run")
    parser.add_argument("--cap", type=float, default=30.0, help="seconds any one wait may take")
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "reliability_containment.json")
    parser.add_argument("--no-memory", action="store_true", help="skip the memory cases (a checkout without the flag)")
    args = parser.parse_args()
    checkout, cap = args.checkout.resolve(), args.cap
    cases: dict[str, Callable[[], dict[str, Any]]] = {
        "client_gone": lambda: case_client(checkout, cap, frame=False),
        "client_closes": lambda: case_client(checkout, cap, frame=True),
        "reaper": lambda: case_reaper(checkout, cap),
        "drain": lambda: case_drain(checkout, cap),
        "held_close": lambda: case_held(checkout, cap),
        "sigkill": lambda: case_sigkill(checkout, cap),
    }
    if not args.no_memory:
        cases["memory_uncapped"] = lambda: case_memory(checkout, cap, None)
        cases["memory_capped_512"] = lambda: case_memory(checkout, cap, 512)
        cases["rlimit_as_512"] = lambda: case_rlimit("RLIMIT_AS", 512)
        cases["rlimit_data_512"] = lambda: case_rlimit("RLIMIT_DATA", 512)
    results: dict[str, Any] = {}
    for name, case in cases.items():
        print(f"... {name}", file=sys.stderr, flush=True)
        try:
            results[name] = case()
        except Exception as exc:  # noqa: BLE001 - one case's failure is its result
            results[name] = {"error": f"{type(exc).__name__}: {exc}"}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    described = subprocess.run(["git", "-C", str(checkout), "describe", "--always", "--dirty"],
                               capture_output=True, text=True, check=False).stdout.strip()
    args.out.write_text(json.dumps({"code": described or None, "results": results}, indent=2) + "\n")
    print("| case | result |\n|---|---|")
    for name, result in results.items():
        print(f"| {name} | {json.dumps(result)} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
