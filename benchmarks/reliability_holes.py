#!/usr/bin/env python
"""Reliability: four holes of a server at default flags, measured on a live server.

    python benchmarks/reliability_holes.py                                      # this checkout
    python benchmarks/reliability_holes.py --checkout /tmp/old --out old.json   # another one's server

Each probe starts ``openenv-gym serve CartPole-v1`` afresh as a subprocess on 127.0.0.1
(``--checkout``'s ``openenv_gym``, else the installed one) and stops it by its PID; the
clients are this process's:

* ``held``: one HTTP connection creates ``openenv/session/create`` sessions until refused;
  then a ``/ws`` client (``RemoteEnv``) tries to reset;
* ``errors``: ``tools/call`` of ``act`` with N arguments it does not take, for a few N: the
  answer's size against the request's, the seconds to answer, and the slowest ``/health``
  polled meanwhile;
* ``notification``: an id-less ``tools/call`` on ``POST /mcp`` (HTTP status, body size);
* ``idle``: a server limited to 1,024 file descriptors (soft and hard), 1,100 sockets that
  send nothing (or complete request headers whose body never comes), then a client
  connects, resets and steps, again every 0.5 s until it succeeds: how long it was locked out.

Results go to ``benchmarks/results/reliability_holes.json`` (``--out``).
"""

from __future__ import annotations

import argparse
import contextlib
import http.client
import json
import resource
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import _harness as h  # noqa: E402

import openenv_gym  # noqa: E402

#: The root of the checkout whose ``openenv_gym`` the servers run (``--checkout``; none:
#: the installed one), first on their ``PYTHONPATH``.
Checkout = tuple[Path, ...]

#: Runs the CLI after setting this process's file limit (soft and hard) to argv[1].
LIMITED_CLI = (
    "import resource, runpy, sys; n = int(sys.argv.pop(1)); "
    "resource.setrlimit(resource.RLIMIT_NOFILE, (n, n)); "
    "sys.argv[0] = 'openenv-gym'; runpy.run_module('openenv_gym.cli', run_name='__main__')"
)
STALLED_BODY = (b"POST /reset HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                b"Content-Length: 100\r\n\r\n{")


@contextlib.contextmanager
def server(checkout: Checkout, *flags: str, files: int | None = None) -> Iterator[tuple[str, int]]:
    """``openenv-gym serve CartPole-v1`` on a free port (with ``files`` descriptors at most)."""
    head = [sys.executable, "-c", LIMITED_CLI, str(files)] if files else [sys.executable, "-m", "openenv_gym.cli"]
    served = h.Server("holes", lambda port: [*head, "serve", "CartPole-v1", "--port", str(port), *flags],
                      ready="http:/health", env=h.python_env(*checkout), cwd=tempfile.gettempdir())
    try:
        if not served.start().wait_ready(60):
            raise RuntimeError(f"the server did not start: {served.error}")
        yield served.base_url, served.port
    finally:
        served.stop(15)


def post(port: int, body: bytes, conn: http.client.HTTPConnection | None = None) -> tuple[int, bytes]:
    own = conn is None
    conn = conn or http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    try:
        conn.request("POST", "/mcp", body, {"Content-Type": "application/json"})
        response = conn.getresponse()
        return response.status, response.read()
    finally:
        if own:
            conn.close()


def rpc(method: str, params: dict[str, Any] | None = None, request_id: int | None = 1) -> bytes:
    request: dict[str, Any] = {"jsonrpc": "2.0", "method": method, "params": params or {}}
    if request_id is not None:
        request["id"] = request_id
    return json.dumps(request).encode()


def play(url: str) -> None:
    with openenv_gym.RemoteEnv(url) as env:
        env.reset(seed=0)
        env.step(env.action_space.sample())


def probe_held(checkout: Checkout) -> dict[str, Any]:
    with server(checkout) as (url, port):
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        started, created, refusal = time.monotonic(), 0, None
        for request_id in range(1_000):
            answer = json.loads(post(port, rpc("openenv/session/create", request_id=request_id), conn)[1])
            if "error" in answer:
                refusal = answer["error"]["message"]
                break
            created += 1
        seconds = time.monotonic() - started
        conn.close()
        try:
            play(url)
            ws_client = "got a session"
        except openenv_gym.errors.OpenEnvGymError as exc:
            ws_client = f"refused: {exc}"[:200]
        health = json.loads(urllib.request.urlopen(url + "/health", timeout=10).read())
    return {"created": created, "seconds": round(seconds, 2), "refusal": refusal, "ws_client": ws_client,
            "health": health}


def poll_health(url: str, stop: threading.Event, worst: list[float]) -> None:
    """Poll ``/health`` until ``stop``, keeping its slowest answer in ``worst[0]``."""
    while not stop.is_set():
        started = time.monotonic()
        urllib.request.urlopen(url + "/health", timeout=30).read()
        worst[0] = max(worst[0], time.monotonic() - started)
        time.sleep(0.005)


def probe_errors(checkout: Checkout, counts: tuple[int, ...]) -> list[dict[str, Any]]:
    rows = []
    with server(checkout) as (url, port):
        for n in counts:
            body = rpc("tools/call", {"name": "act", "arguments": {f"a{i}": i for i in range(n)}})
            worst, stop = [0.0], threading.Event()
            poller = threading.Thread(target=poll_health, args=(url, stop, worst))
            poller.start()
            started = time.monotonic()
            _, answer = post(port, body)
            seconds = time.monotonic() - started
            stop.set()
            poller.join(30)
            rows.append({"bad_arguments": n, "request_bytes": len(body), "answer_bytes": len(answer),
                         "ratio": round(len(answer) / len(body), 3), "seconds": round(seconds, 3),
                         "worst_health_ms": round(worst[0] * 1000, 1)})
    return rows


def probe_notification(checkout: Checkout) -> dict[str, Any]:
    with server(checkout) as (_, port):
        status, body = post(port, rpc("tools/call", {"name": "observe", "arguments": {}}, request_id=None))
    return {"status": status, "body_bytes": len(body)}


def probe_idle(checkout: Checkout, prefix: bytes, count: int, files: int) -> dict[str, Any]:
    with server(checkout, files=files) as (url, port):
        socks = []
        try:
            for _ in range(count):
                sock = socket.create_connection(("127.0.0.1", port), timeout=5)
                if prefix:
                    sock.sendall(prefix)
                socks.append(sock)
            time.sleep(0.5)
            flooded, attempts = time.monotonic(), 0
            while time.monotonic() - flooded < 30:
                attempts += 1
                try:
                    started = time.monotonic()
                    play(url)
                    return {"locked_out_seconds": round(started - flooded, 2),
                            "connect_and_step_seconds": round(time.monotonic() - started, 3), "attempts": attempts}
                except openenv_gym.errors.OpenEnvGymError:
                    time.sleep(0.5)
            return {"locked_out_seconds": "over 30", "attempts": attempts}
        finally:
            for sock in socks:
                sock.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--checkout", type=Path, default=None, help="serve this checkout's openenv_gym")
    parser.add_argument("--out", type=Path, default=HERE / "results/reliability_holes.json")
    parser.add_argument("--idle-sockets", type=int, default=1_100)
    parser.add_argument("--server-files", type=int, default=1_024)
    args = parser.parse_args()
    checkout: Checkout = (args.checkout.resolve(),) if args.checkout else ()
    root = checkout[0] if checkout else HERE.parent
    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))  # the attacker's sockets
    started = time.time()
    results: dict[str, Any] = {
        "commit": subprocess.run(["git", "-C", str(root), "describe", "--always", "--dirty"],
                                 capture_output=True, text=True).stdout.strip(),
        "machine": h.machine_info(["gymnasium", "uvicorn", "websockets", "h11"]),
        "held": probe_held(checkout),
        "errors": probe_errors(checkout, (10, 1_000, 30_000, 99_000)),
        "notification": probe_notification(checkout),
        "idle_silent": probe_idle(checkout, b"", args.idle_sockets, args.server_files),
        "idle_stalled_body": probe_idle(checkout, STALLED_BODY, args.idle_sockets, args.server_files),
    }
    results["seconds"] = round(time.time() - started, 1)
    args.out.write_text(json.dumps(results, indent=2) + "\n")
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
