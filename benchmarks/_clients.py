"""Benchmark clients, each run inside its own ``_harness.py worker`` process.

A client has ``open() -> dict``, ``step(i) -> round trips made`` and
``close()``; ``step(i)`` uses the i-th pre-generated random action. Imports of
the stack under test happen in ``open()``, so a worker only imports its own
stack (the official client's ``import openenv`` pulls in ~190k GC-tracked
objects, which would slow every other client's garbage collections).

Step counting (all gym-like clients): one ``step()`` call is one counted step;
when it ends an episode the client also sends ``reset()`` within the same call,
so the reset round trip is *in the time but not in the step count* (``step``
returns 2 round trips then, 1 otherwise).
"""

from __future__ import annotations

import os
import statistics
from typing import Any

import numpy as np

N_ACTIONS = 1 << 16
MESSAGE_TIMEOUT_S = 10.0


def _actions(n: int, seed: int) -> list[int]:
    return np.random.default_rng(seed).integers(0, n, size=N_ACTIONS).tolist()


class OursClient:
    """``openenv_gym.RemoteEnv`` (gymnasium API) with a given encoding; ``busy_poll``:
    ``None`` for RemoteEnv's default (polling on loopback), ``0`` to turn polling off;
    ``native=False`` keeps it on the server's main port (the pure-Python path)."""

    def __init__(self, base_url: str, encoding: str = "msgpack", seed: int = 0,
                 busy_poll: float | None = None, native: bool = True) -> None:
        self.base_url = base_url
        self.encoding = encoding
        self.seed = seed
        self.busy_poll = busy_poll
        self.native = native
        self.env: Any = None

    def open(self) -> dict[str, Any]:
        from openenv_gym import RemoteEnv

        self.env = RemoteEnv(self.base_url, encoding=self.encoding, busy_poll=self.busy_poll,
                             native=self.native, message_timeout=MESSAGE_TIMEOUT_S, connect_timeout=10.0)
        self.env.reset(seed=self.seed)
        self.actions = _actions(int(self.env.action_space.n), self.seed)
        self.mask = N_ACTIONS - 1
        return {"encoding": self.env.encoding, "action_space": str(self.env.action_space),
                "observation_space": str(self.env.observation_space)}

    def step(self, i: int) -> int:
        env = self.env
        _obs, _r, terminated, truncated, _info = env.step(self.actions[i & self.mask])
        if terminated or truncated:
            env.reset()
            return 2
        return 1

    def close(self) -> None:
        if self.env is not None:
            self.env.close()
            self.env = None

    def frame_sizes(self, n: int = 50) -> dict[str, Any]:
        """Bytes of the step request and reply frames our client actually sends/receives.

        Wraps the send/recv of the live connection (openenv_gym internals:
        ``env._session.connection``), runs ``n`` steps, returns medians.
        """
        conn = self.env._session.connection
        sent: list[int] = []
        received: list[int] = []
        orig_send, orig_recv = conn.send, conn.recv

        def send(frame, *a, **k):
            sent.append(len(frame.encode() if isinstance(frame, str) else frame))
            return orig_send(frame, *a, **k)

        def recv(*a, **k):
            frame = orig_recv(*a, **k)
            received.append(len(frame.encode() if isinstance(frame, str) else frame))
            return frame

        conn.send, conn.recv = send, recv
        try:
            steps = 0
            for i in range(n):
                sent_before = len(sent)
                rts = self.step(i)
                if rts == 1 and len(sent) == sent_before + 1 and len(received) >= len(sent):
                    steps += 1
                else:  # drop the reset exchange: keep only plain step exchanges
                    del sent[sent_before:]
                    del received[sent_before:]
        finally:
            conn.send, conn.recv = orig_send, orig_recv
        return {"request_bytes": int(statistics.median(sent)),
                "reply_bytes": int(statistics.median(received)),
                "reply_bytes_max": max(received), "samples": len(sent)}


class OfficialClient:
    """``openenv.GenericEnvClient(base_url=...).sync()`` with its defaults
    (permessage-deflate offered, which uvicorn accepts)."""

    def __init__(self, base_url: str, n_actions: int = 2, seed: int = 0) -> None:
        self.base_url = base_url
        self.n_actions = n_actions
        self.seed = seed
        self.client: Any = None

    def open(self) -> dict[str, Any]:
        from openenv import GenericEnvClient

        self.client = GenericEnvClient(base_url=self.base_url,
                                       message_timeout_s=MESSAGE_TIMEOUT_S).sync()
        self.client.connect()
        self.client.reset(seed=self.seed)
        self.actions = _actions(self.n_actions, self.seed)
        self.mask = N_ACTIONS - 1
        return {}

    def step(self, i: int) -> int:
        client = self.client
        result = client.step({"action": self.actions[i & self.mask]})
        if result.done:
            client.reset()
            return 2
        return 1

    def close(self) -> None:
        if self.client is not None:
            self.client.close()
            self.client = None

    def frame_sizes(self, n: int = 20) -> dict[str, Any]:
        """Bytes of the JSON text frames (before permessage-deflate) of a plain step,
        from a separate raw websockets connection speaking the same messages."""
        import json

        from websockets.sync.client import connect

        url = self.base_url.replace("http://", "ws://").rstrip("/") + "/ws"
        request = json.dumps({"type": "step", "data": {"action": 0}})
        replies: list[int] = []
        with connect(url, compression=None, max_size=None, open_timeout=10) as ws:
            ws.send(json.dumps({"type": "reset", "data": {"seed": 0}}))
            ws.recv(timeout=MESSAGE_TIMEOUT_S)
            for _ in range(n):
                ws.send(request)
                reply = ws.recv(timeout=MESSAGE_TIMEOUT_S)
                if '"done":true' in reply:
                    break
                replies.append(len(reply.encode()))
            ws.send(json.dumps({"type": "close"}))
        return {"request_bytes": len(request.encode()),
                "reply_bytes": int(statistics.median(replies)), "samples": len(replies)}


class WsEchoClient:
    """Blocking ``websockets.sync`` client: send ``request_bytes``, receive the reply."""

    def __init__(self, url: str, request_bytes: int) -> None:
        self.url = url
        self.request_bytes = int(request_bytes)
        self.ws: Any = None

    def open(self) -> dict[str, Any]:
        from websockets.sync.client import connect

        self.ws = connect(self.url, compression=None, max_size=None, open_timeout=10)
        self.payload = os.urandom(self.request_bytes)
        self.ws.send(self.payload)
        reply = self.ws.recv(timeout=MESSAGE_TIMEOUT_S)
        return {"reply_bytes": len(reply)}

    def step(self, i: int) -> int:
        self.ws.send(self.payload)
        self.ws.recv(timeout=MESSAGE_TIMEOUT_S)
        return 1

    def close(self) -> None:
        if self.ws is not None:
            self.ws.close()
            self.ws = None


class McpHttpClient:
    """MCP ``tools/call`` over ``POST /mcp`` on a session that outlives its requests
    (``openenv/session/create``), as ``MCPToolClient`` calls tools: one keep-alive
    ``httpx`` connection, JSON-RPC bodies. The same client for every server, so the rows
    compare servers."""

    def __init__(self, base_url: str, tool: str, arguments: dict[str, Any]) -> None:
        self.base_url = base_url
        self.tool = tool
        self.arguments = arguments
        self.http: Any = None
        self.session_id: str | None = None

    def _rpc(self, method: str, params: dict[str, Any]) -> Any:
        reply = self.http.post("/mcp", json={"jsonrpc": "2.0", "id": 1, "method": method, "params": params}).json()
        if "error" in reply:
            raise RuntimeError(f"{method}: {reply['error']}")
        return reply["result"]

    def open(self) -> dict[str, Any]:
        import httpx

        self.http = httpx.Client(base_url=self.base_url, timeout=MESSAGE_TIMEOUT_S)
        self.session_id = self._rpc("openenv/session/create", {})["session_id"]
        self.params = {"name": self.tool, "arguments": self.arguments, "session_id": self.session_id}
        return {"result": self._rpc("tools/call", self.params)}

    def step(self, i: int) -> int:
        self._rpc("tools/call", self.params)
        return 1

    def close(self) -> None:
        if self.http is not None:
            if self.session_id is not None:
                self._rpc("openenv/session/close", {"session_id": self.session_id})
            self.http.close()
            self.http = None


class McpStepClient:
    """A tool called as OpenEnv's ``/ws`` step ``{"type": "call_tool", ...}`` (the path
    that carries the env's reward and done), on a raw ``websockets`` connection in JSON;
    when a reply says the episode is over it also resets (a second round trip)."""

    def __init__(self, base_url: str, tool: str, arguments: dict[str, Any]) -> None:
        self.base_url = base_url
        self.tool = tool
        self.arguments = arguments
        self.ws: Any = None

    def _ask(self, message: dict[str, Any]) -> dict[str, Any]:
        import json

        self.ws.send(json.dumps(message))
        reply = json.loads(self.ws.recv(timeout=MESSAGE_TIMEOUT_S))
        if reply["type"] != "observation" or reply["data"]["observation"].get("error"):
            raise RuntimeError(f"{message}: {reply}")
        return reply["data"]

    def open(self) -> dict[str, Any]:
        from websockets.sync.client import connect

        self.ws = connect(self.base_url.replace("http://", "ws://") + "/ws", compression=None, open_timeout=10)
        self._ask({"type": "reset", "data": {"seed": 0}})
        self.request = {"type": "step", "data": {"type": "call_tool", "tool_name": self.tool,
                                                 "arguments": self.arguments}}
        return {"reply": self._ask(self.request)}

    def step(self, i: int) -> int:
        if self._ask(self.request)["done"]:
            self._ask({"type": "reset", "data": {}})
            return 2
        return 1

    def close(self) -> None:
        if self.ws is not None:
            self.ws.close()
            self.ws = None


class McpConcurrentClient:
    """``sessions`` MCP sessions called at once from one asyncio process: each a ``/ws``
    connection calling a tool as a ``call_tool`` step in a loop. One ``step`` is one
    round of calls, one per session (it returns ``sessions`` round trips), so the
    window's round trips per second are tool calls per second."""

    def __init__(self, base_url: str, tool: str, arguments: dict[str, Any], sessions: int = 32) -> None:
        self.base_url = base_url
        self.tool = tool
        self.arguments = arguments
        self.sessions = int(sessions)
        self.loop: Any = None
        self.sockets: list[Any] = []

    def open(self) -> dict[str, Any]:
        import asyncio
        import json

        from websockets.asyncio.client import connect

        self.loop = asyncio.new_event_loop()
        self.request = json.dumps({"type": "step", "data": {"type": "call_tool", "tool_name": self.tool,
                                                            "arguments": self.arguments}})
        url = self.base_url.replace("http://", "ws://") + "/ws"

        async def opened() -> list[Any]:
            sockets = [await connect(url, compression=None, open_timeout=30) for _ in range(self.sessions)]
            for ws in sockets:
                await ws.send(json.dumps({"type": "reset", "data": {}}))
                await ws.recv()
            return sockets

        self.sockets = self.loop.run_until_complete(opened())
        self.step(0)
        return {"sessions": len(self.sockets)}

    async def _call(self, ws: Any) -> None:
        import json

        await ws.send(self.request)
        reply = json.loads(await ws.recv())
        if reply["type"] != "observation" or reply["data"]["observation"].get("error"):
            raise RuntimeError(f"call_tool: {reply}")
        if reply["data"]["done"]:
            await ws.send(json.dumps({"type": "reset", "data": {}}))
            await ws.recv()

    def step(self, i: int) -> int:
        import asyncio

        async def round_() -> None:
            await asyncio.gather(*(self._call(ws) for ws in self.sockets))

        self.loop.run_until_complete(round_())
        return len(self.sockets)

    def close(self) -> None:
        if self.loop is not None:
            for ws in self.sockets:
                self.loop.run_until_complete(ws.close())
            self.loop.close()
            self.loop = None
