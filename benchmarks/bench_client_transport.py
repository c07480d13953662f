"""Which client framing a blocking caller should use: round trips/s against one echo server.

A Gymnasium ``step()`` blocks its caller until the reply comes, so a client's WebSocket is
used one message at a time from a plain thread. This measures the designs such a caller
can use, against one picows echo server in its own process (the native listener's stack,
so the server's part is the same for every row), one message in flight, interleaved reps:

- ``ours``: :class:`openenv_gym.client.connection.Connection`, the client every openenv-gym
  client uses: its own sans-I/O framing (:class:`~openenv_gym.client.framing.ClientFraming`)
  on a socket that never blocks (a reply waited for with one ``poll(2)``);
- ``picows_private_loop``: picows's client (framing in C) on an event loop of the calling
  thread's own, run until each reply (``run_until_complete``), the way a blocking API can
  use an asyncio-only library;
- ``lean_framer``: the least a blocking Python client can do: one ``sendall`` of a masked
  frame (masked in C by ``websockets.speedups``), ``recv_into`` a buffer, the header parsed
  with ``struct``: no protocol object, no events; a floor, not a client (no pings, close
  handshake, fragments or limits);
- ``picows_async``: picows's client awaited from a coroutine, for reference: what an
  ``async`` caller reaches; a blocking caller cannot.

Sizes are CartPole's step (25-byte request, 124-byte reply), an 84x84x4 uint8 frame
(28,260-byte reply) and eight of them, a batched N=8 reply (225,912 bytes: past glibc's
mmap threshold, where a client that frees large temporaries pays page faults on every
message). Busy polling is off everywhere.

    python benchmarks/bench_client_transport.py --reps 7 --wait-idle 20
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as _dt
import os
import socket
import struct
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import _harness as H

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
DOC = ROOT / "docs" / "benchmarks.md"
RESULTS = HERE / "results" / "client_transport.json"
#: Each size: (request bytes, reply bytes, its column's title, the share of ``--count`` it runs).
SIZES = {
    "cartpole": (25, 124, "CartPole sizes", 1),
    "image": (25, 84 * 84 * 4 + 36, "84x84x4 frame", 4),
    "image_batch": (25, 8 * 84 * 84 * 4 + 120, "8 such frames (a batched N=8 reply)", 32),
}
PACKAGES = ["openenv-gym", "picows", "websockets", "numpy"]


def _serve(port: int) -> None:
    """A picows echo server: each binary message on ``/N`` answered with N bytes."""
    from picows import WSListener, WSMsgType, ws_create_server

    class Echo(WSListener):
        def __init__(self, size: int) -> None:
            self.reply = b"r" * size

        def on_ws_frame(self, transport, frame) -> None:
            if frame.msg_type == WSMsgType.BINARY:
                transport.send(WSMsgType.BINARY, self.reply)
            elif frame.msg_type == WSMsgType.CLOSE:
                transport.send_close(frame.get_close_code())
                transport.disconnect()

    def listener(request):
        return Echo(int(request.path.decode().strip("/") or 124))

    async def main() -> None:
        server = await ws_create_server(listener, "127.0.0.1", port)
        await server.serve_forever()

    asyncio.run(main())


# -- the clients: each returns round trips/s over ``count`` round trips ----------------------


def ours(url: str, request: bytes, count: int) -> float:
    from openenv_gym.client.connection import Connection
    from openenv_gym.client.options import ConnectOptions

    connection = Connection.open(url, ConnectOptions(busy_poll=0, max_message_bytes=1 << 24))
    try:
        started = time.perf_counter()
        for _ in range(count):
            connection.send(request)
            connection.recv(10.0)
        return count / (time.perf_counter() - started)
    finally:
        connection.close()


def _picows_client():
    from picows import WSListener, WSMsgType

    class Waiter(WSListener):
        future: asyncio.Future | None = None

        def on_ws_frame(self, transport, frame) -> None:
            if frame.msg_type == WSMsgType.BINARY and self.future is not None:
                self.future.set_result(frame.get_payload_as_bytes())
                self.future = None

    return Waiter, WSMsgType


def picows_private_loop(url: str, request: bytes, count: int) -> float:
    from picows import ws_connect

    waiter, kinds = _picows_client()
    loop = asyncio.new_event_loop()
    try:
        transport, listener = loop.run_until_complete(ws_connect(waiter, url))
        started = time.perf_counter()
        for _ in range(count):
            listener.future = loop.create_future()
            transport.send(kinds.BINARY, request)
            loop.run_until_complete(listener.future)
        rate = count / (time.perf_counter() - started)
        transport.disconnect()
        return rate
    finally:
        loop.close()


def picows_async(url: str, request: bytes, count: int) -> float:
    from picows import ws_connect

    waiter, kinds = _picows_client()

    async def main() -> float:
        transport, listener = await ws_connect(waiter, url)
        loop = asyncio.get_running_loop()
        started = time.perf_counter()
        for _ in range(count):
            listener.future = loop.create_future()
            transport.send(kinds.BINARY, request)
            await listener.future
        rate = count / (time.perf_counter() - started)
        transport.disconnect()
        return rate

    return asyncio.run(main())


def lean_framer(url: str, request: bytes, count: int) -> float:
    from websockets.speedups import apply_mask  # type: ignore[import-not-found]

    host, port_path = url.removeprefix("ws://").split(":", 1)
    port, _, path = port_path.partition("/")
    sock = socket.create_connection((host, int(port)))
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    sock.sendall(
        f"GET /{path} HTTP/1.1\r\nHost: {host}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
        f"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n".encode()
    )
    head = b""
    while b"\r\n\r\n" not in head:
        head += sock.recv(4096)
    buffer = bytearray(1 << 20)
    view = memoryview(buffer)
    mask = os.urandom(4)
    frame_head = struct.pack("!BB", 0x82, 0x80 | len(request)) + mask
    try:
        started = time.perf_counter()
        for _ in range(count):
            sock.sendall(frame_head + apply_mask(request, mask))
            have = 0
            while True:
                have += sock.recv_into(view[have:])
                if have < 2:
                    continue
                length = buffer[1] & 0x7F
                start = 2 if length < 126 else 4 if length == 126 else 10
                if have < start:
                    continue
                if length == 126:
                    length = struct.unpack_from("!H", buffer, 2)[0]
                elif length == 127:
                    length = struct.unpack_from("!Q", buffer, 2)[0]
                if have >= start + length:
                    bytes(view[start : start + length])
                    break
        return count / (time.perf_counter() - started)
    finally:
        sock.close()


CLIENTS: dict[str, tuple[str, Callable[[str, bytes, int], float]]] = {
    "ours": ("openenv-gym Connection (ClientFraming; a socket that never blocks, waited on with poll)", ours),
    "picows_private_loop": ("picows client on a private event loop, run until each reply", picows_private_loop),
    "lean_framer": ("lean pure-Python framer (floor: sendall + recv_into, header by struct)", lean_framer),
    "picows_async": ("picows client awaited in a coroutine (an async caller; for reference)", picows_async),
}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reps", type=int, default=7)
    parser.add_argument("--count", type=int, default=4000, help="round trips per window")
    parser.add_argument("--wait-idle", type=float, default=0.0)
    parser.add_argument("--no-doc", action="store_true", help="do not rewrite docs/benchmarks.md")
    args = parser.parse_args(argv)
    if args.wait_idle > 0:
        H.wait_for_idle_start(args.wait_idle)
    started = _dt.datetime.now().astimezone()
    machine = H.machine_info(PACKAGES)
    port = H.free_port()
    server = subprocess.Popen([sys.executable, __file__, "--serve", str(port)])
    results: dict[str, dict[str, list[float]]] = {size: {name: [] for name in CLIENTS} for size in SIZES}
    try:
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                time.sleep(0.1)
        for rep in range(args.reps):
            for size, (request_bytes, reply_bytes, _, share) in SIZES.items():
                url = f"ws://127.0.0.1:{port}/{reply_bytes}"
                count = max(args.count // share, 50)
                for name, (_, client) in CLIENTS.items():
                    results[size][name].append(client(url, b"q" * request_bytes, count))
            H.progress(f"rep {rep + 1}/{args.reps} done")
    finally:
        server.terminate()
        server.wait(10)
    summary = {size: {name: H.summarize(values) for name, values in rows.items()} for size, rows in results.items()}
    ratios = {
        size: {name: H.summarize(H.paired_ratios(rows[name], rows["ours"])) for name in CLIENTS}
        for size, rows in results.items()
    }
    H.write_json(RESULTS, {"started": started.isoformat(timespec="seconds"), "machine": machine,
                           "args": vars(args), "round_trips_per_s": results, "summary": summary, "ratios": ratios})
    lines = [
        "## Client framing for a blocking caller",
        "",
        f"_Generated by `benchmarks/bench_client_transport.py` on {started.isoformat(timespec='seconds')}; "
        f"every rep in `benchmarks/results/client_transport.json`._",
        "",
        f"Command: `{H.command_line(__file__, sys.argv[1:] if argv is None else argv)}`: {args.reps} reps, "
        f"{args.count:,} round trips per window for CartPole (a quarter of that for the frame, a 32nd for "
        "the batch), one message in flight, "
        "against one picows echo server in its own process; reps interleaved; median [min–max].",
        "",
        f"Machine: {H.format_machine(machine)}.",
        "",
        "| client | " + " | ".join(f"{title}, round trips/s | / ours" for *_, title, _ in SIZES.values()) + " |",
        "|---|" + "---|---|" * len(SIZES),
    ]
    for name, (label, _) in CLIENTS.items():
        cells = [f"{H.fmt_mmm(summary[size][name], 0)} | {H.fmt_mmm(ratios[size][name])}x" for size in SIZES]
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    body = "\n".join(lines) + "\n"
    print(body)
    if not args.no_doc:
        H.update_markdown_section(DOC, "client-transport", body, "")
    return 0


if __name__ == "__main__":
    if sys.argv[1:2] == ["--serve"]:
        _serve(int(sys.argv[2]))
        sys.exit(0)
    sys.exit(main())
