"""Idle connections that never send a complete request cannot lock clients out: a server
keeps at most a quarter of its file descriptors' worth of them, closing the oldest when one
more comes, so a token holder connects and steps at once through a flood of idle sockets
(silent ones, half request lines, requests whose body never comes), and through an
attacker that reconnects every socket the server closes.

The server runs with 1,024 file descriptors, soft and hard (a common default, where
1,100 idle sockets locked a token holder out until the 10 s handshake timeout closed
them); the attacker is this test process, which raises its own soft limit to its hard one.
"""

from __future__ import annotations

import contextlib
import resource
import selectors
import socket
import sys
import threading
import time
from collections.abc import Iterator

import pytest

import openenv_gym
from tests.conftest import free_port, server_process

#: The server's file descriptors, and the idle sockets the attacker opens (more than that).
SERVER_FILES, IDLE_SOCKETS = 1024, 1100
#: Seconds a token holder may take to connect, reset and step with the flood on: about
#: 0.01 s on an idle machine, 2.04 s once on CI's, busy with six jobs on 2 cores. A client
#: locked out waits for its timeouts (10 s to connect).
CONNECT_SECONDS = 5.0
#: How long the reconnecting attacker runs, and the most sockets it opens in all.
CHURN_SECONDS, CHURN_SOCKETS = 4.0, 50_000
TOKEN = "s3cret"

#: Runs the CLI after lowering this process's file limit (soft and hard) to SERVER_FILES.
LIMITED_CLI = (
    "import resource, runpy, sys; "
    f"resource.setrlimit(resource.RLIMIT_NOFILE, ({SERVER_FILES}, {SERVER_FILES})); "
    "sys.argv[0] = 'openenv-gym'; runpy.run_module('openenv_gym.cli', run_name='__main__')"
)


@contextlib.contextmanager
def limited_server(token: str | None) -> Iterator[tuple[str, int]]:
    """A server with SERVER_FILES file descriptors (and ``token``, if any): its URL and port."""
    port = free_port()
    args = [sys.executable, "-c", LIMITED_CLI, "serve", "CartPole-v1", "--port", str(port)]
    with server_process([*args, *(["--token", token] if token else [])], f"http://127.0.0.1:{port}"):
        yield f"http://127.0.0.1:{port}", port


@pytest.fixture
def server() -> Iterator[tuple[str, int]]:
    with limited_server(TOKEN) as served:
        yield served


@pytest.fixture(autouse=True)
def attacker_files() -> Iterator[None]:
    """This process may open as many files as its hard limit allows, for the test's length."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and hard < IDLE_SOCKETS + 200:
        pytest.skip(f"the attacker needs {IDLE_SOCKETS + 200} file descriptors; the hard limit is {hard}")
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


#: What idle sockets send before they fall silent, and the token of the server they flood:
#: nothing, half a request line, or (to a server without a token, whose ``/reset`` reads
#: the body: one with a token refuses it at once) a request whose body never comes.
FLOODS = {
    "silent": (b"", TOKEN),
    "half-request-line": (b"GET /health HT", TOKEN),
    "body-never-comes": (b"POST /reset HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                         b"Content-Length: 100\r\n\r\n{", None),
}


def idle_socket(port: int, prefix: bytes = b"") -> socket.socket:
    """A connection that sends ``prefix`` and then never another byte."""
    sock = socket.create_connection(("127.0.0.1", port), timeout=5)
    if prefix:
        sock.sendall(prefix)
    sock.setblocking(False)
    return sock


def closed_by_server(sock: socket.socket, timeout: float) -> bool:
    """Whether the server closes ``sock`` within ``timeout`` seconds."""
    with selectors.DefaultSelector() as selector:
        selector.register(sock, selectors.EVENT_READ)
        if not selector.select(timeout):
            return False
    try:
        return sock.recv(1) == b""
    except ConnectionResetError:
        return True


def play(url: str, token: str | None = TOKEN) -> float:
    """Seconds a client (a token holder, where the server has a token) takes to connect,
    reset and step once."""
    started = time.monotonic()
    with openenv_gym.RemoteEnv(url, token=token) as env:
        env.reset(seed=0)
        env.step(env.action_space.sample())
    return time.monotonic() - started


@contextlib.contextmanager
def flood(port: int, count: int, prefix: bytes = b"") -> Iterator[list[socket.socket]]:
    socks: list[socket.socket] = []
    try:
        for _ in range(count):
            socks.append(idle_socket(port, prefix))
        yield socks
    finally:
        for sock in socks:
            sock.close()


@pytest.mark.parametrize(("prefix", "token"), FLOODS.values(), ids=FLOODS.keys())
def test_a_flood_of_idle_sockets_does_not_lock_a_client_out(prefix, token):
    with limited_server(token) as (url, port), flood(port, IDLE_SOCKETS, prefix) as socks:
        time.sleep(0.5)  # the server accepts them all (or would, with descriptors to spare)
        assert play(url, token) < CONNECT_SECONDS
        # the oldest waited longest and were closed for newer ones; the newest still wait
        assert closed_by_server(socks[0], timeout=2.0)
        assert not closed_by_server(socks[-1], timeout=0.2)


def test_an_attacker_that_reconnects_every_closed_socket_does_not_lock_a_token_holder_out(server):
    url, port = server
    with flood(port, IDLE_SOCKETS) as socks:
        stop = threading.Event()
        reconnects = [0]

        def reconnect() -> None:
            """Open a new idle socket for each one the server closes, within the bounds."""
            deadline = time.monotonic() + CHURN_SECONDS
            with selectors.DefaultSelector() as selector:
                for sock in socks:
                    selector.register(sock, selectors.EVENT_READ)
                while not stop.is_set() and time.monotonic() < deadline and reconnects[0] < CHURN_SOCKETS:
                    for key, _ in selector.select(0.05):
                        selector.unregister(key.fileobj)
                        key.fileobj.close()  # type: ignore[union-attr]
                        fresh = idle_socket(port)
                        socks.append(fresh)
                        selector.register(fresh, selectors.EVENT_READ)
                        reconnects[0] += 1

        churn = threading.Thread(target=reconnect, daemon=True)
        churn.start()
        try:
            time.sleep(0.5)
            took = [play(url) for _ in range(3)]
        finally:
            stop.set()
            churn.join(CHURN_SECONDS + 5)
        assert max(took) < CONNECT_SECONDS, took
        assert reconnects[0] > 0  # the server closed idle sockets, and the attacker replaced them
