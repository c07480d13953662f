#!/usr/bin/env python
"""The kernel's part of a round trip on one machine: a Unix socket and shared memory beside
TCP on loopback.

    python benchmarks/bench_socket_floor.py [--reps 5] [--window 1.0]

Measures whether a second native channel for a client on the same machine would lower the
floor under the rows the native path is asked for, before anything is built: a listener on a
Unix socket, or a shared-memory channel (the messages in memory both processes map, a
doorbell to say one is there). No WebSocket, no Python framing: a client sends a 100-byte
request, a server process answers with a reply of a row's size, each reply read whole before
the next request goes. Sizes: 120 bytes (a CartPole step reply) and 225,792 bytes (a step of
8 84x84x4 uint8 frames). Two ways to wait: ``sleep`` (both sides wake for every message:
what polling off costs) and ``spin`` (both sides retry at once: what busy polling costs).
The sockets: plain ``socket`` calls on one connection (blocking ``recv`` to sleep,
non-blocking retried to spin), TCP with ``TCP_NODELAY``, both sockets' send buffers 2 MiB,
so a reply goes in one call. Shared memory: one anonymous mapping both processes share, the
request and the reply each copied into it and out of it, as a socket copies them; sleeping
waits on an ``eventfd`` per direction (a doorbell an event loop's ``epoll`` can wait on, as
it waits on a socket), spinning reads a sequence number the writer bumps. Each window is a
fresh server process; the configs interleaved within each rep, median [min–max] of round
trips per second, and per-rep ratios to TCP.

Writes ``benchmarks/results/socket_floor.json`` and its section of ``docs/benchmarks.md``.
"""

from __future__ import annotations

import mmap
import os
import select
import socket
import struct
import sys
import tempfile
import time
from collections.abc import Callable
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
#: Every channel measured: the socket families, then shared memory where ``eventfd`` exists (Linux).
CHANNELS = (*FAMILIES, "shm") if hasattr(os, "eventfd") else tuple(FAMILIES)
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


# -- shared memory -------------------------------------------------------------------

#: The shared mapping: two sequence numbers (request, reply), then the request's bytes,
#: then the reply's.
_SEQ = struct.Struct("q")
_REQUEST_AT = 2 * _SEQ.size
_REPLY_AT = _REQUEST_AT + len(REQUEST)


def _shm_wait(memory: mmap.mmap, at: int, seq: int, doorbell: int | None, deadline: float) -> bool:
    """Wait until the sequence number at ``at`` is ``seq``: on ``doorbell`` (an eventfd) when
    sleeping, else by reading it again at once; ``False`` past the deadline or at -1 (closed)."""
    if doorbell is not None:
        if not select.select([doorbell], [], [], max(0.0, deadline - time.monotonic()))[0]:
            return False
        os.eventfd_read(doorbell)
    while (found := _SEQ.unpack_from(memory, at)[0]) != seq:
        if found < 0 or time.monotonic() > deadline:
            return False
    return True


def _shm_serve(memory: mmap.mmap, reply_size: int, doorbells: tuple[int, int] | None) -> None:
    """The server process: copy each request out, write the reply, ring, until the client closes."""
    reply, seq = b"y" * reply_size, 1
    to_server, to_client = doorbells if doorbells is not None else (None, None)
    while _shm_wait(memory, 0, seq, to_server, time.monotonic() + SERVER_PATIENCE):
        memory[_REQUEST_AT:_REPLY_AT]  # the request, copied out as a read copies it
        memory[_REPLY_AT:_REPLY_AT + reply_size] = reply
        _SEQ.pack_into(memory, _SEQ.size, seq)
        if to_client is not None:
            os.eventfd_write(to_client, 1)
        seq += 1


def _fork(serve: Callable[[], None]) -> int:
    """Run ``serve`` in a child process (the server); its pid."""
    pid = os.fork()
    if pid == 0:
        try:
            serve()
        finally:
            os._exit(0)
    return pid


def _rate(round_trip: Callable[[], None], window_s: float, max_round_trips: int) -> float:
    """Round trips per second of ``round_trip`` over one window, after a warm-up."""
    for _ in range(50):
        round_trip()
    done, start = 0, time.perf_counter()
    end = start + window_s
    while done < max_round_trips and time.perf_counter() < end:
        round_trip()
        done += 1
    return done / (time.perf_counter() - start)


def measure_shm(reply_size: int, wait: str, window_s: float, max_round_trips: int) -> float:
    """Round trips per second in one window through shared memory, against a fresh server process."""
    memory = mmap.mmap(-1, _REPLY_AT + reply_size)
    doorbells = (os.eventfd(0), os.eventfd(0)) if wait == "sleep" else None
    to_server, to_client = doorbells if doorbells is not None else (None, None)
    pid = _fork(lambda: _shm_serve(memory, reply_size, doorbells))
    seq = 0

    def round_trip() -> None:
        nonlocal seq
        seq += 1
        memory[_REQUEST_AT:_REPLY_AT] = REQUEST
        _SEQ.pack_into(memory, 0, seq)
        if to_server is not None:
            os.eventfd_write(to_server, 1)
        assert _shm_wait(memory, _SEQ.size, seq, to_client, time.monotonic() + 10), "the server is gone"
        memory[_REPLY_AT:_REPLY_AT + reply_size]  # the reply, copied out as a read copies it

    try:
        return _rate(round_trip, window_s, max_round_trips)
    finally:
        _SEQ.pack_into(memory, 0, -1)  # closed: the server's wait ends
        if to_server is not None:
            os.eventfd_write(to_server, 1)
        os.waitpid(pid, 0)
        for fd in doorbells or ():
            os.close(fd)
        memory.close()


def measure(family: str, reply_size: int, wait: str, window_s: float, max_round_trips: int) -> float:
    """Round trips per second in one window through a socket, against a fresh server process."""
    spin = wait == "spin"
    with tempfile.TemporaryDirectory() as tmp:
        listener = socket.socket(FAMILIES[family], socket.SOCK_STREAM)
        listener.bind(os.path.join(tmp, "floor.sock") if family == "unix" else ("127.0.0.1", 0))
        listener.listen(1)
        address = listener.getsockname()
        pid = _fork(lambda: _serve(listener, reply_size, spin))
        listener.close()
        try:
            client = socket.socket(FAMILIES[family], socket.SOCK_STREAM)
            client.connect(address)
            _tune(client)
            client.settimeout(0.0 if spin else 10.0)
            buffer = memoryview(bytearray(1 << 20))

            def round_trip() -> None:
                _send(client, REQUEST, time.monotonic() + 10)
                assert _receive(client, buffer, reply_size, spin, time.monotonic() + 10), "the server is gone"

            rate = _rate(round_trip, window_s, max_round_trips)
            client.close()
            return rate
        finally:
            os.waitpid(pid, 0)


def main(argv: list[str] | None = None) -> int:
    args = H.reps_parser(__doc__, window=1.0).parse_args(argv)
    run = H.run_record(__file__, argv, args, ["openenv-gym"])
    configs = [(c, label, w) for label in SIZES for w in WAITS for c in CHANNELS]
    rates: dict[str, list[float]] = {"/".join(c): [] for c in configs}
    for rep, (channel, label, wait) in H.interleaved(configs, args.reps):
        if channel == "shm":
            rate = measure_shm(SIZES[label], wait, args.window, 10 ** 6)
        else:
            rate = measure(channel, SIZES[label], wait, args.window, 10 ** 6)
        rates[f"{channel}/{label}/{wait}"].append(rate)
        H.progress(f"rep {rep + 1} {channel:4s} {wait:5s} {label}: {H.fmt(rate)} round trips/s")
    data = {**run, "round_trips_per_s": rates}
    H.publish(data, RESULTS_PATH, render, None if args.no_doc else DOC_TAG)
    return 0


def render(data: dict) -> str:
    rates = data["round_trips_per_s"]
    lines = [
        *H.run_heading("A Unix socket and shared memory beside TCP on loopback: the kernel's part of a round trip",
                       data),
        "No WebSocket, no Python framing: a 100-byte request, a reply of the row's size, each read whole "
        "before the next request. `sleep`: both sides wake for every message (polling off; the sockets "
        "block in `recv`, shared memory waits on an `eventfd` doorbell); `spin`: both sides retry at once "
        "(busy polling). Shared memory copies the request and the reply in and out of one mapping both "
        "processes share, as the sockets copy them. What a second native channel for a client on the same "
        "machine could take off a round trip, before anything is built.",
        "",
        "| reply | waiting | TCP round trips/s | Unix round trips/s | shared memory round trips/s "
        "| Unix / TCP (per rep) | shared memory / TCP (per rep) | µs saved per round trip: Unix, shared memory |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for label in SIZES:
        for wait in WAITS:
            tcp, unix, shm = (rates.get(f"{c}/{label}/{wait}", []) for c in CHANNELS)
            tcp_mid = H.summarize(tcp)["median"]
            saved = ", ".join(
                f"{1e6 / tcp_mid - 1e6 / H.summarize(other)['median']:+.1f}" if other else "-" for other in (unix, shm)
            )
            cells = [H.fmt_mmm(H.summarize(r)) if r else "-" for r in (tcp, unix, shm)]
            ratios = [f"{H.fmt_mmm(H.summarize(H.paired_ratios(r, tcp)))}x" if r else "-" for r in (unix, shm)]
            lines.append(f"| {label} | {wait} | {' | '.join(cells)} | {' | '.join(ratios)} | {saved} |")
    return "\n".join(lines) + "\n"

if __name__ == "__main__":
    sys.exit(main())
