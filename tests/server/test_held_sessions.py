"""Sessions that outlive their sockets (``openenv/session/create``, MCP's ``initialize`` on
``POST /mcp``) under a cap and an idle timeout of their own, on real servers on 127.0.0.1:
one client holding no socket cannot take every slot from clients that hold one, nor keep
the slots it took for long."""

from __future__ import annotations

import json
import sys
import threading
import time
from http.client import HTTPConnection
from typing import Any

import gymnasium as gym
from websockets.sync.client import connect

import openenv_gym
from tests.conftest import free_port, server_process, wait_until
from tests.server.raw import ask, http
from tests.server.test_tools import rpc

#: Requests one flooding client may send before the test gives up on a refusal.
FLOOD_LIMIT = 400


class Client:
    """One HTTP/1.1 connection, kept alive: the flooding client holds no socket of a session."""

    def __init__(self, port: int) -> None:
        self.conn = HTTPConnection("127.0.0.1", port, timeout=30)

    def rpc(self, method: str, params: dict[str, Any] | None = None, request_id: int = 1) -> dict[str, Any]:
        body = {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params or {}}
        self.conn.request("POST", "/mcp", json.dumps(body), {"Content-Type": "application/json"})
        return json.loads(self.conn.getresponse().read())

    def flood(self) -> tuple[list[str], dict[str, Any] | None, float]:
        """Create sessions until refused: their ids, the refusal, the seconds it took."""
        started, ids = time.monotonic(), []
        for request_id in range(FLOOD_LIMIT):
            reply = self.rpc("openenv/session/create", request_id=request_id)
            if "error" in reply:
                return ids, reply["error"], time.monotonic() - started
            ids.append(reply["result"]["session_id"])
        return ids, None, time.monotonic() - started

    def close(self) -> None:
        self.conn.close()


def serve(port: int, *flags: str):
    args = [sys.executable, "-m", "openenv_gym.cli", "serve", "CartPole-v1", "--port", str(port), *flags]
    return server_process(args, f"http://127.0.0.1:{port}")


def health(url: str) -> dict[str, Any]:
    return http(url, "/health")[1]


def test_a_held_session_flood_at_default_flags_leaves_the_socket_sessions_their_slots():
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    with serve(port):
        client = Client(port)
        try:
            ids, refusal, seconds = client.flood()
            assert refusal is not None, f"{len(ids)} sessions created in {seconds:.2f} s and no refusal"
            assert len(ids) == 256 // 4  # --max-sessions 256: a quarter of the slots
            assert refusal["code"] == -32000
            assert "max_held_sessions" in refusal["message"] and "--max-held-sessions" in refusal["message"]
            assert refusal["data"] == {"held_sessions": 64, "max_held_sessions": 64}
            initialize = client.rpc("initialize", {"protocolVersion": "2025-06-18"})  # opens one too
            assert initialize["error"]["code"] == -32000 and "held sessions" in initialize["error"]["message"]
            state = health(url)
            assert (state["held_sessions"], state["max_held_sessions"], state["available_sessions"]) == (64, 64, 192)
            with openenv_gym.RemoteEnv(url) as env:  # a /ws client still gets a session
                env.reset(seed=0)
                env.step(env.action_space.sample())
            closed = client.rpc("openenv/session/close", {"session_id": ids[0]})
            assert closed["result"]["closed"] is True
            assert "result" in client.rpc("openenv/session/create")  # a freed slot is taken again
        finally:
            client.close()


def test_held_sessions_idle_past_their_timeout_are_reaped_and_free_their_slots():
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    with serve(port, "--max-sessions", "8", "--held-session-timeout", "0.5"):
        client = Client(port)
        try:
            ids, refusal, _ = client.flood()
            assert len(ids) == 2 and refusal is not None  # a quarter of 8
            assert "idle ones close after 0.5 s" in refusal["message"]
            # a reaped session leaves the held ones first, and gives its slot back once its env is closed
            assert wait_until(lambda: health(url)["held_sessions"] == 0, timeout=10)
            assert wait_until(lambda: health(url)["active_sessions"] == 0, timeout=10)
            gone = client.rpc("tools/call", {"name": "observe", "arguments": {}, "session_id": ids[0]})
            assert gone["error"]["message"] == f"Unknown session_id: {ids[0]}"
            again, _, _ = client.flood()
            assert len(again) == 2
        finally:
            client.close()


def test_a_held_session_with_a_socket_attached_is_kept_by_the_socket():
    with openenv_gym.local_server("CartPole-v1", held_session_timeout=0.5) as url:
        session = rpc(url, "openenv/session/create")["result"]["session_id"]
        with connect(url.replace("http://", "ws://") + f"/ws?session_id={session}", open_timeout=10) as sock:
            ask(sock, {"type": "reset", "data": {"seed": 0}})
            time.sleep(1.5)  # idle past the held timeout, with its socket attached: kept
            assert ask(sock, {"type": "state"})["type"] == "state"
        # detached, it idles out
        assert wait_until(lambda: health(url)["held_sessions"] == 0, timeout=10)


def slow_cartpole() -> gym.Env:
    time.sleep(0.2)
    return gym.make("CartPole-v1")


def test_held_sessions_being_built_count_against_the_cap():
    with openenv_gym.local_server(slow_cartpole, max_held_sessions=2, execution="thread") as url:
        port = int(url.rsplit(":", 1)[1])
        replies: list[dict[str, Any]] = []

        def create() -> None:
            client = Client(port)
            try:
                replies.append(client.rpc("openenv/session/create"))
            finally:
                client.close()

        threads = [threading.Thread(target=create) for _ in range(6)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(30)
        assert len(replies) == 6
        assert sum("result" in reply for reply in replies) == 2
        assert health(url)["held_sessions"] == 2


def test_the_held_timeout_is_never_above_the_session_timeout():
    server = openenv_gym.create_app("CartPole-v1", session_timeout=5.0, held_session_timeout=60.0).state.openenv_gym
    assert server.held_session_timeout == 5.0
    server = openenv_gym.create_app("CartPole-v1", max_sessions=2).state.openenv_gym
    assert (server.max_held_sessions, server.held_session_timeout) == (1, 120.0)
    server = openenv_gym.create_app("CartPole-v1", session_timeout=None, held_session_timeout=None).state.openenv_gym
    assert server.held_session_timeout is None
