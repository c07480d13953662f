#!/usr/bin/env python
"""Reliability: hostile and faulty peers against a live server, side by side with
OpenEnv's reference server (issue 13).

    python benchmarks/reliability_probes.py                           # full sizes, ~15 min
    python benchmarks/reliability_probes.py --scale 0.1 --window 4    # modest sizes, shorter

Three servers, each started afresh for every probe as a subprocess on 127.0.0.1 and
stopped by its PID:

* ``ours``: ``openenv-gym serve reliability_probes:faulty_cartpole --busy-poll 0
  --drain-timeout 5``;
* ``isolated``: the same with ``--execution process`` (each session's env in a
  process of its own), for the probes where the env itself misbehaves;
* ``reference``: the same env behind openenv 0.10's own ``create_app``
  (``uvicorn --factory reliability_probes:reference_app``, built like
  ``_official_env.py``), as an OpenEnv env author ships it.

The env is CartPole-v1, except that a session whose reset asks for it
(``{"hang_after": n}``, ``{"abort_after": n}``) hangs for an hour, or calls
``os.abort()``, in its step after ``n`` steps.

Beside every probe a healthy client (``RemoteEnv``, its own process) steps CartPole
for the probe's window and reports its step latency (every call, failed ones
included) and its errors. Meanwhile the server's RSS is polled every 50 ms
(``/proc/<pid>/status``) and its peak is ``VmHWM``.

Probes (each for ``--window`` seconds; every flooding peer loops until then):

* ``baseline``: no hostile peer;
* ``crashing_env``: a session's env calls ``os.abort()`` in its third step;

* ``body_100mb``: 8 concurrent ``POST /reset`` declaring and sending a 100 MB JSON body;
* ``body_zeros``: ``POST /reset`` with a ~95 MiB JSON list of zeros, chunked (no
  ``Content-Length``), two peers;
* ``ping_flood``: two WebSocket peers sending 125-byte pings, never reading a pong;
* ``arrays_flood``: two ``/ws`` msgpack peers, each sending a ~8.6 MiB step whose
  action is a list of a million 0-d arrays (ndarray ext type), one frame at a time;
* ``arrays_99999``: the same with 99,999 arrays (~0.9 MiB), just under openenv-gym's
  ``Limits.max_items``;
* ``keys_flood``: two ``/ws`` JSON peers, each sending a reset with a million option keys.

SIGTERM cases (the window runs with the case in place, then SIGTERM; the exit is
waited for at most ``--exit-cap`` seconds, then the server is SIGKILLed):

* ``hung_call``: a session's first step hangs (on the session's worker thread);
* ``hung_inline``: a session's 101st step hangs, after 100 fast ones (which promote
  openenv-gym's session to inline execution on the event loop); after the window a
  second session does the same, and the SIGTERM comes 1 s into its hang;
* ``stalled_body``: ``POST /reset`` declaring 1,000 bytes, sending one;
* ``deaf_client``: a ``/ws`` peer that pipelines step messages and reads no reply.

Writes benchmarks/results/reliability_probes.json and prints Markdown tables.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import contextlib
import json
import os
import select
import socket
import subprocess
import sys
import threading
import time
import traceback
import urllib.error
import urllib.request
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import gymnasium as gym

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import _harness as h  # noqa: E402

RESULTS = HERE / "results"
LOGS = RESULTS / "logs"
MSGPACK = "openenv-gym.msgpack.v1"
#: How long a hanging step sleeps.
HANG_SECONDS = 3600.0
#: Steps of the ``hung_inline`` session before its step hangs (openenv-gym promotes a
#: session to inline execution after 16 fast calls).
INLINE_AFTER = 100
MiB = 1 << 20


# ------------------------------------------------------------ the env, every server ----

class FaultOnRequest(gym.Wrapper):
    """CartPole that fails on request: once ``hang_after`` steps of the episode are
    done each step sleeps an hour, once ``abort_after`` are done the step calls
    ``os.abort()`` (a native crash). Both come from the reset options (``None``: never)."""

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        options = dict(options or {})
        self.faults = {"hang": options.pop("hang_after", None), "abort": options.pop("abort_after", None)}
        self.steps = 0
        return self.env.reset(seed=seed, options=options or None)

    def step(self, action: Any):
        if self.faults["abort"] is not None and self.steps >= self.faults["abort"]:
            os.abort()
        if self.faults["hang"] is not None and self.steps >= self.faults["hang"]:
            time.sleep(HANG_SECONDS)
        self.steps += 1
        return self.env.step(action)


def faulty_cartpole() -> FaultOnRequest:
    """``openenv-gym serve reliability_probes:faulty_cartpole``."""
    return FaultOnRequest(gym.make("CartPole-v1"))


def reference_app() -> Any:
    """uvicorn ``--factory`` target: :func:`faulty_cartpole` behind openenv's ``create_app``."""
    from _official_env import MAX_CONCURRENT_ENVS, CartPoleAction, CartPoleEnvironment, CartPoleObservation
    from openenv.core.env_server import create_app

    class FaultyCartPoleEnvironment(CartPoleEnvironment):
        def _make(self) -> Any:
            return faulty_cartpole()

        def reset(self, seed: int | None = None, episode_id: str | None = None, hang_after: int | None = None,
                  abort_after: int | None = None, **kwargs: Any) -> Any:
            observation = super().reset(seed=seed, episode_id=episode_id)
            self._env.faults = {"hang": hang_after, "abort": abort_after}
            return observation

    return create_app(FaultyCartPoleEnvironment, CartPoleAction, CartPoleObservation,
                      env_name="cartpole_probe", max_concurrent_envs=MAX_CONCURRENT_ENVS)


#: ``ours``: openenv-gym's defaults; ``isolated``: each session's env in its own process;
#: ``reference``: openenv 0.10's create_app.
TARGETS = ("ours", "isolated", "reference")


def server_argv(target: str, drain_timeout: float) -> Callable[[int], list[Any]]:
    if target == "reference":
        return lambda port: h.uvicorn_argv("reliability_probes:reference_app", port, factory=True)
    extra = ["--execution", "process"] if target == "isolated" else []
    return lambda port: h.openenv_gym_argv("serve", "reliability_probes:faulty_cartpole", "--port", port,
                                           "--busy-poll", 0, "--drain-timeout", drain_timeout, *extra)


# ------------------------------------------------------------ the healthy client ----

class Healthy:
    """Worker side (``_harness.py worker``): a ``RemoteEnv`` stepping CartPole.

    ``run(seconds)`` steps until the deadline, resetting at the end of each episode
    (within the same step call); a call that raises is counted by its error type,
    and the client reconnects before the next one.
    """

    def __init__(self, base_url: str, message_timeout: float = 5.0, seed: int = 0) -> None:
        self.base_url = base_url
        self.message_timeout = message_timeout
        self.seed = seed
        self.env: Any = None

    def _connect(self) -> None:
        import gymnasium as gym

        from openenv_gym import RemoteEnv

        self.env = RemoteEnv(self.base_url, busy_poll=0, message_timeout=self.message_timeout,
                             connect_timeout=self.message_timeout)
        self.named = isinstance(self.env.action_space, gym.spaces.Dict)  # the reference's {"action": n}
        self.env.reset(seed=self.seed)

    def open(self) -> dict[str, Any]:
        from openenv_gym import RemoteEnv

        # A first session may take seconds on a busy machine (process isolation starts its
        # fork server then); wait for it here, not inside the measured window.
        with RemoteEnv(self.base_url, busy_poll=0, message_timeout=60, connect_timeout=60) as warm_up:
            warm_up.reset(seed=self.seed)
        self._connect()
        return {"encoding": self.env.encoding}

    def run(self, seconds: float, max_steps: int = 2_000_000) -> dict[str, Any]:
        import random

        rng = random.Random(self.seed)
        latencies: list[float] = []
        errors: Counter[str] = Counter()
        first_error = None
        ok = 0
        cpu0 = time.process_time()
        started = time.perf_counter()
        deadline = started + seconds
        while time.perf_counter() < deadline and len(latencies) < max_steps:
            t0 = time.perf_counter()
            try:
                if self.env is None:
                    self._connect()
                action = rng.randint(0, 1)
                _, _, terminated, truncated, _ = self.env.step({"action": action} if self.named else action)
                if terminated or truncated:
                    self.env.reset()
                ok += 1
            except Exception as exc:  # noqa: BLE001 - counted: what a user would have seen
                errors[type(exc).__name__] += 1
                first_error = first_error or f"{type(exc).__name__}: {exc}"[:300]
                self.close()
                time.sleep(0.1)
            latencies.append(time.perf_counter() - t0)
        elapsed = time.perf_counter() - started
        latencies.sort()
        return {
            "calls": len(latencies), "ok": ok, "errors": dict(errors), "first_error": first_error,
            "elapsed_s": elapsed, "steps_per_s": ok / elapsed if elapsed else None,
            "p50_ms": (h.percentile(latencies, 50) or 0) * 1e3 if latencies else None,
            "p99_ms": (h.percentile(latencies, 99) or 0) * 1e3 if latencies else None,
            "max_ms": latencies[-1] * 1e3 if latencies else None,
            "client_cpu_s": time.process_time() - cpu0,
        }

    def close(self) -> None:
        if self.env is not None:
            with contextlib.suppress(Exception):
                self.env.close()
            self.env = None


# ------------------------------------------------------------ raw peers ----

def masked_frame(opcode: int, payload: bytes) -> bytes:
    """One client WebSocket frame (clients mask; a fixed key will do here)."""
    mask = b"\x01\x02\x03\x04"
    n = len(payload)
    if n < 126:
        length = bytes([0x80 | n])
    elif n < 1 << 16:
        length = bytes([0x80 | 126]) + n.to_bytes(2, "big")
    else:
        length = bytes([0x80 | 127]) + n.to_bytes(8, "big")
    masked = (int.from_bytes(payload, "big") ^ int.from_bytes((mask * (n // 4 + 1))[:n], "big")).to_bytes(n, "big")
    return bytes([0x80 | opcode]) + length + mask + masked


def ws_handshake(port: int, path: str = "/ws") -> socket.socket:
    """A raw socket that completed a WebSocket handshake (and will read nothing more)."""
    sock = socket.create_connection(("127.0.0.1", port), timeout=30)
    sock.sendall(f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                 "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n".encode())
    head = b""
    while b"\r\n\r\n" not in head:
        chunk = sock.recv(4096)
        if not chunk:
            raise ConnectionError("closed during the handshake")
        head += chunk
    if b" 101 " not in head.split(b"\r\n", 1)[0]:
        raise ConnectionError(f"handshake refused: {head[:200]!r}")
    return sock


def pump(sock: socket.socket, frames: Callable[[], bytes], deadline: float, max_bytes: int) -> dict[str, Any]:
    """Send ``frames()`` back to back, whole frames only, reading nothing, until
    ``deadline`` or ``max_bytes``; returns the bytes sent and how long sends waited
    for room (the server had stopped reading)."""
    sock.setblocking(False)
    pending = memoryview(b"")
    sent = 0
    blocked = 0.0
    while time.monotonic() < deadline and sent < max_bytes:
        if not pending:
            pending = memoryview(frames())
        t0 = time.monotonic()
        _, writable, _ = select.select([], [sock], [], min(0.2, max(0.0, deadline - t0)))
        if not writable:
            blocked += time.monotonic() - t0
            continue
        try:
            n = sock.send(pending)
        except BlockingIOError:
            continue
        except OSError as exc:
            return {"sent_bytes": sent, "blocked_s": blocked, "ended": f"{type(exc).__name__}: {exc}"}
        sent += n
        pending = pending[n:]
    return {"sent_bytes": sent, "blocked_s": blocked, "ended": "deadline" if sent < max_bytes else "byte cap"}


def read_response(sock: socket.socket, timeout: float) -> tuple[int | None, int, bytes]:
    """(status, body bytes, the first 300 bytes of the body) of an HTTP response;
    status ``None`` if the connection ended without one."""
    sock.settimeout(timeout)
    data = b""
    try:
        while b"\r\n\r\n" not in data:
            chunk = sock.recv(65536)
            if not chunk:
                return None, 0, data[:300]
            data += chunk
        head, body = data.split(b"\r\n\r\n", 1)
        status = int(head.split(b" ", 2)[1])
        length = next((int(line.split(b":", 1)[1]) for line in head.split(b"\r\n")
                       if line.lower().startswith(b"content-length:")), None)
        got, excerpt = len(body), body[:300]
        while length is not None and got < length:
            chunk = sock.recv(1 << 20)
            if not chunk:
                break
            got += len(chunk)
            if len(excerpt) < 300:
                excerpt += chunk[: 300 - len(excerpt)]
        return status, got, excerpt
    except (OSError, ValueError, IndexError):
        return None, 0, data[:300]


def post(port: int, path: str, body: Iterator[bytes], *, length: int | None, timeout: float) -> dict[str, Any]:
    """``POST path`` with ``body``'s chunks: declared with ``length``, or chunked when
    ``None``. Stops sending as soon as the server answers."""
    started = time.monotonic()
    framing = f"Content-Length: {length}" if length is not None else "Transfer-Encoding: chunked"
    sent = 0
    ended = "complete"
    try:
        sock = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    except OSError as exc:
        return {"outcome": f"connect: {type(exc).__name__}", "sent": 0, "seconds": time.monotonic() - started}
    with sock:
        try:
            sock.sendall(f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                         f"{framing}\r\n\r\n".encode())
            for chunk in body:
                if select.select([sock], [], [], 0)[0]:
                    ended = "answered early"
                    break
                sock.sendall(chunk if length is not None else b"%x\r\n%b\r\n" % (len(chunk), chunk))
                sent += len(chunk)
            else:
                if length is None:
                    sock.sendall(b"0\r\n\r\n")
        except TimeoutError:
            ended = "send stalled"
        except OSError as exc:
            ended = f"send failed: {type(exc).__name__}"
        status, size, excerpt = read_response(sock, timeout)
    return {"outcome": status if status is not None else f"no answer ({ended})", "ended": ended, "sent": sent,
            "answer_bytes": size, "answer_head": excerpt.decode("utf-8", "replace"),
            "seconds": time.monotonic() - started}


def object_body(size: int) -> Iterator[bytes]:
    """A JSON object of exactly ``size`` bytes: a seed and one long string, in 1 MiB chunks."""
    head, tail = b'{"seed":0,"pad":"', b'"}'
    yield head
    left = size - len(head) - len(tail)
    block = b"a" * MiB
    while left > 0:
        yield block[: min(left, MiB)]
        left -= MiB
    yield tail


def zeros_body(count: int) -> Iterator[bytes]:
    """A JSON list of ``count`` zeros (2 bytes each), in 1 MiB chunks."""
    yield b"["
    per = MiB // 2
    left = count
    while left > 1:
        n = min(left - 1, per)
        yield b"0," * n
        left -= n
    yield b"0]"


# ------------------------------------------------------------ probes ----

class Probe:
    """One hostile peer (or several): ``start`` it, ``finish`` it (bounded) for its
    figures, ``close`` what it holds. ``sigterm`` probes end with a SIGTERM."""

    name = ""
    what = ""
    sigterm = False
    #: The servers it runs against.
    targets: tuple[str, ...] = ("ours", "reference")

    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.threads: list[threading.Thread] = []
        self.results: list[Any] = []
        self.lock = threading.Lock()
        self._held = contextlib.ExitStack()

    def start(self, port: int, deadline: float) -> None:
        for i in range(self.peers):
            thread = threading.Thread(target=self._peer, args=(i, port, deadline), daemon=True)
            thread.start()
            self.threads.append(thread)

    peers = 1

    def _peer(self, i: int, port: int, deadline: float) -> None:
        try:
            self.peer(i, port, deadline)
        except Exception as exc:  # noqa: BLE001 - a probe's own failure, reported
            with self.lock:
                self.results.append({"peer_error": "".join(traceback.format_exception(exc))[-600:]})

    def peer(self, i: int, port: int, deadline: float) -> None:
        raise NotImplementedError

    def record(self, result: Any) -> None:
        with self.lock:
            self.results.append(result)

    def hold(self, connection: Any) -> Any:
        """Keep ``connection`` (a socket or a WebSocket) open until :meth:`close`."""
        with self.lock:
            return self._held.enter_context(connection)

    def arm(self, port: int) -> None:
        """What a SIGTERM probe does just before the SIGTERM (nothing by default)."""

    def finish(self, timeout: float) -> dict[str, Any]:
        end = time.monotonic() + timeout
        for thread in self.threads:
            thread.join(max(0.0, end - time.monotonic()))
        with self.lock:
            results = list(self.results)
        return {"unfinished_peers": sum(t.is_alive() for t in self.threads), **self.summary(results)}

    def summary(self, results: list[Any]) -> dict[str, Any]:
        return {"results": results[:50]}

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self._held.close()


class Baseline(Probe):
    name, what = "baseline", "no hostile peer: the healthy client alone"
    targets = TARGETS
    peers = 0


class CrashingEnv(Probe):
    name, what = "crashing_env", "a session's third step calls os.abort() in the env"
    targets = TARGETS

    def peer(self, i: int, port: int, deadline: float) -> None:
        from websockets.exceptions import ConnectionClosed
        from websockets.sync.client import connect

        ws = self.hold(connect(f"ws://127.0.0.1:{port}/ws", compression=None, open_timeout=30, ping_interval=None))
        ws.send(json.dumps({"type": "reset", "data": {"seed": 0, "abort_after": 2}}))
        ws.recv(timeout=30)
        for _ in range(3):
            ws.send('{"type":"step","data":{"action":0}}')
            try:
                answer = describe_answer(ws.recv(timeout=30))
            except ConnectionClosed as exc:
                answer = f"closed {exc.rcvd.code if exc.rcvd else '(no close frame)'}"
        self.record({"third_step": answer})

    def summary(self, results: list[Any]) -> dict[str, Any]:
        return {"third_step": results[0].get("third_step") if results else None, "results": results}


class BodyFlood(Probe):
    name, what = "body_100mb", "8 concurrent POST /reset, each declaring and sending a 100 MB JSON body"
    peers = 8

    def body(self) -> tuple[Iterator[bytes], int | None]:
        size = int(100_000_000 * self.args.scale)
        return object_body(size), size

    def peer(self, i: int, port: int, deadline: float) -> None:
        rounds = 0
        while time.monotonic() < deadline and rounds < 5000:
            body, length = self.body()
            self.record(post(port, "/reset", body, length=length, timeout=self.args.request_timeout))
            rounds += 1

    def summary(self, results: list[Any]) -> dict[str, Any]:
        outcomes = Counter(str(r.get("outcome", "probe error")) for r in results)
        done = [r for r in results if "seconds" in r]
        return {
            "requests": len(results), "outcomes": dict(outcomes),
            "body_bytes_sent": sum(r.get("sent", 0) for r in done),
            "answer_bytes": sum(r.get("answer_bytes", 0) for r in done),
            "slowest_request_s": max((r["seconds"] for r in done), default=None),
            "examples": {str(r.get("outcome")): r for r in results},
        }


class ZerosFlood(BodyFlood):
    name, what = "body_zeros", "2 peers, POST /reset with a ~95 MiB JSON list of zeros, chunked"
    peers = 2

    def body(self) -> tuple[Iterator[bytes], int | None]:
        return zeros_body(int(95 * MiB * self.args.scale) // 2), None


class PingFlood(Probe):
    name, what = "ping_flood", "2 WebSocket peers sending 125-byte pings, reading no pong"
    peers = 2

    def peer(self, i: int, port: int, deadline: float) -> None:
        sock = self.hold(ws_handshake(port))
        burst = masked_frame(0x9, b"p" * 125) * 512
        self.record(pump(sock, lambda: burst, deadline, int(self.args.scale * 2048 * MiB)))

    def summary(self, results: list[Any]) -> dict[str, Any]:
        return {"sent_mib": sum(r.get("sent_bytes", 0) for r in results) / MiB,
                "send_blocked_s": [round(r.get("blocked_s", 0), 2) for r in results], "results": results}


class FrameFlood(Probe):
    """Peers on ``/ws`` sending one big frame at a time, each waiting for its answer."""

    peers = 2
    subprotocols: list[str] | None = None

    def frame(self) -> bytes | str:
        raise NotImplementedError

    def peer(self, i: int, port: int, deadline: float) -> None:
        from websockets.exceptions import ConnectionClosed, InvalidHandshake
        from websockets.sync.client import connect

        frame = self.frame()
        ws = None
        while time.monotonic() < deadline:
            started = time.monotonic()
            try:
                if ws is None:
                    ws = self.hold(connect(f"ws://127.0.0.1:{port}/ws", subprotocols=self.subprotocols,
                                           compression=None, max_size=None, open_timeout=30, close_timeout=2,
                                           ping_interval=None))
                ws.send(frame)
                answer = ws.recv(timeout=self.args.request_timeout)
                self.record({"outcome": describe_answer(answer), "seconds": time.monotonic() - started})
            except ConnectionClosed as exc:
                code = exc.rcvd.code if exc.rcvd else "no close frame"
                self.record({"outcome": f"closed {code}", "seconds": time.monotonic() - started})
                ws = None
            except (TimeoutError, OSError, InvalidHandshake) as exc:
                self.record({"outcome": f"{type(exc).__name__}", "seconds": time.monotonic() - started})
                if ws is not None:
                    with contextlib.suppress(Exception):
                        ws.close()
                ws = None
                time.sleep(0.2)
        self.frame_bytes = len(frame)

    def summary(self, results: list[Any]) -> dict[str, Any]:
        done = [r for r in results if "seconds" in r]
        return {"frame_bytes": getattr(self, "frame_bytes", None), "frames": len(done),
                "outcomes": dict(Counter(r["outcome"] for r in done)),
                "slowest_answer_s": max((r["seconds"] for r in done), default=None)}


def describe_answer(answer: bytes | str) -> str:
    """``error CODE``, a reply's type, or what could not be read."""
    try:
        if isinstance(answer, bytes):
            import msgpack

            message = msgpack.unpackb(answer, strict_map_key=False, ext_hook=lambda code, data: None)
        else:
            message = json.loads(answer)
    except Exception:  # noqa: BLE001
        return "unreadable answer"
    if not isinstance(message, dict):
        return "not an object"
    if message.get("type") == "error":
        data = message.get("data") or {}
        return f"error {data.get('code')}" + (": server failed" if "failed" in str(data.get("message")) else "")
    return str(message.get("type"))


class ArraysFlood(FrameFlood):
    name, what = "arrays_flood", "2 /ws msgpack peers: a step whose action is a million 0-d arrays"
    subprotocols = [MSGPACK]
    count = 1_000_000

    def frame(self) -> bytes:
        n = int(self.count * self.args.scale)
        # ext type 1 (ndarray) of docs/protocol.md: dtype "|u1", no dimensions, one byte of data
        array = b"\xc7\x06\x01" + b"\x03\x00|u1\x00"
        return b"\x82\xa4type\xa4step\xa4data\x81\xa6action" + b"\xdd" + n.to_bytes(4, "big") + array * n


class ArraysUnderLimit(ArraysFlood):
    name, what = "arrays_99999", "2 /ws msgpack peers: a step whose action is 99,999 0-d arrays"
    count = 99_999


class KeysFlood(FrameFlood):
    name, what = "keys_flood", "2 /ws JSON peers: a reset with a million option keys"

    def frame(self) -> str:
        n = int(1_000_000 * self.args.scale)
        return '{"type":"reset","data":{' + ",".join(f'"k{i}":0' for i in range(n)) + "}}"


class HungCall(Probe):
    name, what = "hung_call", "a session's first step hangs (an hour)"
    sigterm = True
    targets = TARGETS
    hang_after = 0

    def peer(self, i: int, port: int, deadline: float) -> None:
        from websockets.sync.client import connect

        ws = self.hold(connect(f"ws://127.0.0.1:{port}/ws", compression=None, open_timeout=30, ping_interval=None))
        ws.send(json.dumps({"type": "reset", "data": {"seed": 0, "hang_after": self.hang_after}}))
        ws.recv(timeout=30)
        for _ in range(self.hang_after):
            ws.send('{"type":"step","data":{"action":0}}')
            ws.recv(timeout=30)
        ws.send('{"type":"step","data":{"action":0}}')  # hangs
        self.record({"peer": i, "hung_after_steps": self.hang_after})


class HungInline(HungCall):
    name, what = "hung_inline", (f"a session's step hangs after {INLINE_AFTER} fast ones; another's the same "
                                 "way 1 s before the SIGTERM")
    hang_after = INLINE_AFTER

    def arm(self, port: int) -> None:
        self.peer(1, port, time.monotonic())
        time.sleep(1.0)


class StalledBody(Probe):
    name, what = "stalled_body", "POST /reset declaring 1,000 bytes, sending 1"
    sigterm = True

    def peer(self, i: int, port: int, deadline: float) -> None:
        sock = self.hold(socket.create_connection(("127.0.0.1", port), timeout=30))
        sock.sendall(b"POST /reset HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                     b"Content-Length: 1000\r\n\r\n{")
        self.record({"sent": 1})


class DeafClient(Probe):
    name, what = "deaf_client", "a /ws peer pipelining steps, reading no reply"
    sigterm = True

    def peer(self, i: int, port: int, deadline: float) -> None:
        sock = self.hold(ws_handshake(port))
        sock.sendall(masked_frame(0x1, b'{"type":"reset","data":{"seed":0}}'))
        burst = masked_frame(0x1, b'{"type":"step","data":{"action":0}}') * 256
        self.record(pump(sock, lambda: burst, deadline, 256 * MiB))


PROBES: dict[str, type[Probe]] = {p.name: p for p in (
    Baseline, CrashingEnv, BodyFlood, ZerosFlood, PingFlood, ArraysFlood, ArraysUnderLimit, KeysFlood,
    HungCall, HungInline, StalledBody, DeafClient)}


# ------------------------------------------------------------ measuring ----

class RssSampler:
    """Polls a process's VmRSS every 50 ms in a thread; keeps the peak and a coarse timeline."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.peak_kib = 0
        self.timeline: list[tuple[float, int]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._t0 = time.monotonic()

    def __enter__(self) -> RssSampler:
        self._thread.start()
        return self

    def _run(self) -> None:
        last = -1.0
        while not self._stop.wait(0.05):
            rss = h.proc_status(self.pid).get("VmRSS")
            if rss is None:
                return
            self.peak_kib = max(self.peak_kib, rss)
            now = time.monotonic() - self._t0
            if now - last >= 0.5:
                self.timeline.append((round(now, 2), rss))
                last = now

    def __exit__(self, *exc: Any) -> None:
        self._stop.set()
        self._thread.join(2)


def health(url: str) -> str:
    try:
        with urllib.request.urlopen(url + "/health", timeout=5) as response:
            return f"{response.status}"
    except urllib.error.HTTPError as exc:
        return f"{exc.code}"
    except Exception as exc:  # noqa: BLE001
        return f"{type(exc).__name__}"


def cpu_snapshot(pids: list[int | None]) -> tuple[float, list[float | None], tuple[float, float] | None]:
    return time.monotonic(), [h.proc_cpu_seconds(pid) for pid in pids], h.system_cpu_seconds()


def background_cores(before: tuple, after: tuple) -> float | None:
    """Cores busy with everything but the server, the healthy client and this script
    (other processes on the machine, VM steal), on average between two snapshots."""
    (t0, cpus0, sys0), (t1, cpus1, sys1) = before, after
    if not sys0 or not sys1 or None in cpus0 or None in cpus1 or t1 <= t0:
        return None
    ours = sum(b - a for a, b in zip(cpus0, cpus1))
    return max(0.0, (sys1[0] - sys0[0]) - ours) / (t1 - t0)


def run_probe(name: str, target: str, args: argparse.Namespace, procs: h.ProcessSet) -> dict[str, Any]:
    """One probe against one fresh server, with the healthy client beside it."""
    probe = PROBES[name](args)
    tag = f"{name}-{target}"
    server = procs.add(h.Server(f"server-{tag}", server_argv(target, args.drain_timeout), ready="http:/health",
                                env=h.python_env(), log_path=LOGS / f"reliability_probes-{tag}.log"))
    worker = procs.add(h.ClientWorker(f"healthy-{tag}", log_path=LOGS / f"reliability_probes-{tag}-healthy.log"))
    result: dict[str, Any] = {"probe": name, "target": target, "what": probe.what,
                              "loadavg": Path("/proc/loadavg").read_text().split()[:3]}
    try:
        server.start()
        if not server.wait_ready(90):
            raise RuntimeError(f"{target} server did not start: {server.error}")
        worker.start()
        worker.request({"op": "open", "client": "reliability_probes:Healthy",
                        "params": {"base_url": server.base_url}}, timeout=90)
        result["rss_start_mib"] = h.proc_status(server.pid).get("VmRSS", 0) / 1024
        window = args.window
        with RssSampler(server.pid) as rss, concurrent.futures.ThreadPoolExecutor(1) as pool:
            before = cpu_snapshot([server.pid, worker.pid, os.getpid()])
            deadline = time.monotonic() + window
            probe.start(server.port, deadline)
            if probe.sigterm:
                time.sleep(min(2.0, window / 2))  # the case is in place before the window
            healthy = pool.submit(worker.request, {"op": "call", "method": "run", "args": [window]},
                                  timeout=window + 60)
            try:
                result["healthy"] = healthy.result()["value"]
            except h.WorkerError as exc:
                result["healthy"] = {"worker_error": str(exc)[-500:]}
            result["probe_result"] = probe.finish(args.request_timeout if not probe.sigterm else 5)
            after = cpu_snapshot([server.pid, worker.pid, os.getpid()])
            status = h.proc_status(server.pid)
            result["rss_peak_mib"] = max(rss.peak_kib, status.get("VmHWM", 0)) / 1024 or None  # None: died at once
            result["rss_end_mib"] = status.get("VmRSS", 0) / 1024
            result["rss_timeline_kib"] = rss.timeline
        result["background_cores"] = background_cores(before, after)
        result["alive"] = server.alive()
        result["returncode"] = None if server.alive() else server.proc.returncode
        if probe.sigterm:
            probe.arm(server.port)
            result["sigterm"] = sigterm_exit(server, args.exit_cap)
        else:
            result["health_after"] = health(server.base_url) if server.alive() else "dead"
    except Exception as exc:  # noqa: BLE001 - recorded; the next probe runs
        result["error"] = "".join(traceback.format_exception(exc))[-2000:]
    finally:
        probe.close()
        worker.stop()
        server.stop()
        result["server_log_tail"] = h.portable_text(h.tail(server.log_path, 8))
    return result


def sigterm_exit(server: h.Server, cap: float) -> dict[str, Any]:
    """SIGTERM the server; seconds until it exited (SIGKILL after ``cap`` seconds)."""
    proc = server.proc
    assert proc is not None
    started = time.monotonic()
    proc.send_signal(15)
    try:
        code = proc.wait(cap)
        return {"exit_s": time.monotonic() - started, "returncode": code, "killed": False}
    except subprocess.TimeoutExpired:
        server.kill_now()
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(10)
        return {"exit_s": None, "returncode": proc.returncode, "killed": True, "waited_s": cap}


# ------------------------------------------------------------ report ----

def did(r: dict[str, Any]) -> str:
    """What the server did with the probe, in a few words (from the probe's figures)."""
    p = r.get("probe_result") or {}
    if "error" in r:
        return "probe failed: " + r["error"].strip().splitlines()[-1][:120]
    if not r.get("alive"):
        return f"**died** (return code {r.get('returncode')})"
    if "outcomes" in p and "requests" in p:
        sent = p["body_bytes_sent"] / MiB
        return (", ".join(f"{k} ×{v}" for k, v in p["outcomes"].items())
                + f"; {sent:,.0f} MiB of bodies sent, {p['answer_bytes'] / MiB:,.1f} MiB of answers")
    if "outcomes" in p:
        return ", ".join(f"{k} ×{v}" for k, v in p["outcomes"].items()) + \
            f"; slowest answer {h.fmt(p.get('slowest_answer_s'))} s"
    if p.get("third_step"):
        return f"the crashing session's third step: {p['third_step']}"
    if "sent_mib" in p:
        return f"took {p['sent_mib']:,.0f} MiB of pings; sends waited {sum(p['send_blocked_s']):.1f} s"
    if r["probe"] == "deaf_client" and p.get("results"):
        first = p["results"][0]
        if "sent_bytes" in first:
            return f"took {first['sent_bytes'] / MiB:,.1f} MiB of steps; sends waited {first['blocked_s']:.1f} s"
    return ""


def report(results: list[dict[str, Any]]) -> str:
    lines = ["| probe | server | peak RSS MiB (start) | healthy steps ok | p50 / p99 / max ms | healthy errors "
             "| background cores | what the server did |", "|---|---|---|---|---|---|---|---|"]
    for r in results:
        hr = r.get("healthy") or {}
        errors = ", ".join(f"{k} ×{v}" for k, v in (hr.get("errors") or {}).items()) or "0"
        if "worker_error" in hr:
            errors = "worker failed"
        latency = " / ".join(h.fmt(hr.get(k)) for k in ("p50_ms", "p99_ms", "max_ms"))
        lines.append(
            f"| {r['probe']} | {r['target']} | {h.fmt(r.get('rss_peak_mib'))} ({h.fmt(r.get('rss_start_mib'))}) "
            f"| {hr.get('ok', '-')} | {latency} | {errors} | {h.fmt(r.get('background_cores'), 2)} | {did(r)} |")
    exits = [r for r in results if "sigterm" in r]
    if exits:
        lines += ["", "| case | server | exit after SIGTERM | return code |", "|---|---|---|---|"]
        for r in exits:
            s = r["sigterm"]
            took = (f"{s['exit_s']:.2f} s" if not s["killed"]
                    else f"**still running after {s['waited_s']:.0f} s** (SIGKILLed)")
            lines.append(f"| {r['probe']} | {r['target']} | {took} | {s['returncode']} |")
    return "\n".join(lines)


def code_version() -> str | None:
    try:
        out = subprocess.run(["git", "-C", str(h.ROOT), "describe", "--always", "--dirty"], capture_output=True,
                             text=True, timeout=10)
        return out.stdout.strip() or None
    except (OSError, subprocess.SubprocessError):
        return None


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--probes", default=",".join(PROBES), help=f"comma-separated subset of {', '.join(PROBES)}")
    p.add_argument("--targets", default=",".join(TARGETS),
                   help=f"comma-separated subset of {', '.join(TARGETS)} (each probe runs on those it names)")
    p.add_argument("--window", type=float, default=10.0, help="seconds each probe runs beside the healthy client")
    p.add_argument("--scale", type=float, default=1.0, help="multiplies every size (bodies, objects, byte caps)")
    p.add_argument("--request-timeout", type=float, default=60.0, help="per request of a flooding peer")
    p.add_argument("--exit-cap", type=float, default=30.0, help="seconds to wait for an exit after SIGTERM")
    p.add_argument("--drain-timeout", type=float, default=5.0, help="openenv-gym's --drain-timeout")
    p.add_argument("--out", type=Path, default=RESULTS / "reliability_probes.json")
    args = p.parse_args()
    names = [n for n in args.probes.split(",") if n]
    targets = [t for t in args.targets.split(",") if t]
    unknown = [n for n in names if n not in PROBES] + [t for t in targets if t not in TARGETS]
    if unknown:
        p.error(f"unknown probes or targets: {unknown}")
    runs = [(name, target) for name in names for target in targets if target in PROBES[name].targets]
    budget = len(runs) * (args.window + args.request_timeout + args.exit_cap + 120)
    procs = h.ProcessSet()
    out: dict[str, Any] = {"command": h.command_line(__file__, sys.argv[1:]),
                           "started": time.strftime("%Y-%m-%d %H:%M:%S"), "code": code_version(),
                           "settings": {k: v for k, v in vars(args).items() if k != "out"},
                           "machine": h.machine_info(["openenv", "uvicorn", "websockets", "starlette", "fastapi",
                                                      "msgpack", "gymnasium", "numpy"]),
                           "results": []}
    with h.GlobalTimeout(budget, procs):
        try:
            for name, target in runs:
                h.progress(f"{name} against {target}")
                r = run_probe(name, target, args, procs)
                out["results"].append(r)
                hr = r.get("healthy") or {}
                h.progress(f"  peak RSS {h.fmt(r.get('rss_peak_mib'))} MiB; healthy ok {hr.get('ok')}, "
                           f"p99 {h.fmt(hr.get('p99_ms'))} ms, errors {hr.get('errors')}; {did(r)}"
                           + (f"; SIGTERM {r['sigterm']}" if "sigterm" in r else ""))
        finally:
            procs.stop_all()
            out["loadavg_at_end"] = Path("/proc/loadavg").read_text().split()[:3]
            h.write_json(args.out, out)
            h.progress(f"wrote {args.out}")
    print()
    print(report(out["results"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
