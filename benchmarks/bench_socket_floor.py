#!/usr/bin/env python
"""The kernel's part of a round trip on one machine: a Unix socket beside TCP on loopback.

    python benchmarks/bench_socket_floor.py [--reps 5] [--window 1.0]

Measures whether a second native listener on a Unix socket (for a client on the same
machine) would lower the floor under the rows the native path is asked for, before
anything is built. No WebSocket, no Python framing: a client sends a 100-byte request,
a server process answers with a reply of a row's size, both with plain ``socket`` calls
on one connection, each reply read whole before the next request goes. Sizes: 120 bytes
(a CartPole step reply) and 225,792 bytes (a step of 8 84x84x4 uint8 frames). Two ways to
wait: ``sleep`` (blocking ``recv``, both sides wake for every message: what polling off
costs) and ``spin`` (non-blocking, both sides retry at once: what busy polling costs). TCP
with ``TCP_NODELAY``; both sockets' send buffers 2 MiB, so a reply goes in one call. Each
window is a fresh server process and connection; the configs interleaved within each rep,
median [min–max] of round trips per second, and per-rep ratios Unix / TCP.

Writes ``benchmarks/results/socket_floor.json`` and its section of ``docs/benchmarks.md``.
"""

from __future__ import annotations

import os
import socket
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))

import _harness as H  # noqa: E402

RESULTS_PATH = ROOT / "benchmarks" / "results" / "socket_floor.json"
DOC_TAG = "socket-floor"
REQUEST = b"r" * 100
SIZES = {"CartPole step (120 B)": 120, "8 image frames (225,792 B)": 8 * 84 * 84 * 4}
FAMILIES = {"tcp": socket.AF_INET, "unix": socket.AF_UNIX}
WAITS = ("sleep", "spin")
BUFFER_BYTES = 2 << 20
#: Seconds a server process waits for its client (to connect, or to send) before it exits.
SERVER_PATIENCE = 30.0


def _tune(sock: socket.socket) -> None:
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, BUFFER_BYTES)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, BUFFER_BYTES)
    if sock.family == socket.AF_INET:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)


def _receive(sock: socket.socket, buffer: memoryview, size: int, spin: bool, deadline: float) -> bool:
    """Read ``size`` bytes; ``False`` when the peer closed or the deadline passed."""
    got = 0
    while got < size:
        try:
            n = sock.recv_into(buffer)
        except (BlockingIOError, TimeoutError):
            if time.monotonic() > deadline:
                return False
            continue
        if not n:
            return False
        got += n
    return True


def _send(sock: socket.socket, data: bytes, deadline: float) -> None:
    view = memoryview(data)
    while view:
        try:
            view = view[sock.send(view):]
        except (BlockingIOError, TimeoutError):
            if time.monotonic() > deadline:
                raise TimeoutError("the peer stopped reading") from None


def _serve(listener: socket.socket, reply_size: int, spin: bool) -> None:
    """The server process: answer every request with ``reply_size`` bytes until the client closes."""
    listener.settimeout(SERVER_PATIENCE)
    conn, _ = listener.accept()
    _tune(conn)
    conn.settimeout(0.0 if spin else SERVER_PATIENCE)
    reply, buffer = b"y" * reply_size, memoryview(bytearray(1 << 16))
    while _receive(conn, buffer, len(REQUEST), spin, time.monotonic() + SERVER_PATIENCE):
        _send(conn, reply, time.monotonic() + SERVER_PATIENCE)


def measure(family: str, reply_size: int, wait: str, window_s: float, max_round_trips: int) -> float:
    """Round trips per second in one window against a fresh server process."""
    spin = wait == "spin"
    with tempfile.TemporaryDirectory() as tmp:
        listener = socket.socket(FAMILIES[family], socket.SOCK_STREAM)
        listener.bind(os.path.join(tmp, "floor.sock") if family == "unix" else ("127.0.0.1", 0))
        listener.listen(1)
        address = listener.getsockname()
        pid = os.fork()
        if pid == 0:  # the server process
            try:
                _serve(listener, reply_size, spin)
            finally:
                os._exit(0)
        listener.close()
        try:
            client = socket.socket(FAMILIES[family], socket.SOCK_STREAM)
            client.connect(address)
            _tune(client)
            client.settimeout(0.0 if spin else 10.0)
            buffer = memoryview(bytearray(1 << 20))
            for _ in range(50):  # warm-up
                _send(client, REQUEST, time.monotonic() + 10)
                assert _receive(client, buffer, reply_size, spin, time.monotonic() + 10), "the server is gone"
            done, start = 0, time.perf_counter()
            end = start + window_s
            while done < max_round_trips and time.perf_counter() < end:
                _send(client, REQUEST, time.monotonic() + 10)
                assert _receive(client, buffer, reply_size, spin, time.monotonic() + 10), "the server is gone"
                done += 1
            elapsed = time.perf_counter() - start
            client.close()
        finally:
            os.waitpid(pid, 0)
    return done / elapsed


def main(argv: list[str] | None = None) -> int:
    args = H.reps_parser(__doc__, window=1.0).parse_args(argv)
    run = H.run_record(__file__, argv, args, ["openenv-gym"])
    configs = [(f, label, w) for label in SIZES for w in WAITS for f in FAMILIES]
    rates: dict[str, list[float]] = {"/".join(c): [] for c in configs}
    for rep, (family, label, wait) in H.interleaved(configs, args.reps):
        rate = measure(family, SIZES[label], wait, args.window, 10 ** 6)
        rates[f"{family}/{label}/{wait}"].append(rate)
        H.progress(f"rep {rep + 1} {family:4s} {wait:5s} {label}: {H.fmt(rate)} round trips/s")
    data = {**run, "round_trips_per_s": rates}
    H.publish(data, RESULTS_PATH, render, None if args.no_doc else DOC_TAG)
    return 0


def render(data: dict) -> str:
    rates = data["round_trips_per_s"]
    lines = [
        *H.run_heading("A Unix socket beside TCP on loopback: the kernel's part of a round trip", data),
        "Plain sockets, no WebSocket: a 100-byte request, a reply of the row's size, each read whole "
        "before the next request. `sleep`: blocking reads, both sides wake for every message (polling "
        "off); `spin`: non-blocking reads retried at once (busy polling). What a second native listener "
        "on a Unix socket could take off a round trip, before anything is built.",
        "",
        "| reply | waiting | TCP round trips/s | Unix round trips/s | Unix / TCP (per rep) | µs saved per round trip |",
        "|---|---|---|---|---|---|",
    ]
    for label in SIZES:
        for wait in WAITS:
            tcp, unix = rates[f"tcp/{label}/{wait}"], rates[f"unix/{label}/{wait}"]
            tcp_mid, unix_mid = H.summarize(tcp)["median"], H.summarize(unix)["median"]
            saved = 1e6 / tcp_mid - 1e6 / unix_mid
            lines.append(
                f"| {label} | {wait} | {H.fmt_mmm(H.summarize(tcp))} | {H.fmt_mmm(H.summarize(unix))} | "
                f"{H.fmt_mmm(H.summarize(H.paired_ratios(unix, tcp)))}x | {saved:+.1f} |"
            )
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.exit(main())
