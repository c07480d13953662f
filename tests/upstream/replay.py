"""Captures of upstream OpenEnv's own servers (``tests/upstream/captures/``, written by
:mod:`tests.upstream.record`), read back and served again.

:func:`load` reads one; :func:`observations` and :func:`sent_actions` walk its exchanges;
:func:`replay_app` is an ASGI app that answers as the captured server did: ``/health``,
``/schema``, ``/metadata`` and ``POST /reset`` with what it answered, and each ``/ws``
session by finding, in the captured sessions, the frame the client sent and answering the
reply recorded after it (the captured sessions in order, each followed from where the
last frame matched). A frame the capture has no reply for gets an error frame that says
so, so a test that drifts from the recording fails with a reason.
"""

from __future__ import annotations

import gzip
import json
from collections.abc import Iterator
from functools import cache
from pathlib import Path
from typing import Any

CAPTURES = Path(__file__).resolve().parent / "captures"
#: The upstream envs with a capture here, by their short name.
CAPTURED = tuple(sorted(p.name.removesuffix(".json.gz") for p in CAPTURES.glob("*.json.gz")))
RESERVED = ("done", "reward", "metadata")
#: The captures no recorded step of which the inferred view sends exactly: the views of REPL and
#: CARLA send every field (none is required) where the script sent one or two; echo's steps are
#: list_tools / call_tool messages with a ``type``; every step dipg_safety's server answered is
#: an error (its step() returns a client StepResult, which openenv 0.10 cannot serialize).
UNSENDABLE = ("echo", "repl", "carla", "dipg_safety")


@cache
def _read(name: str) -> str:
    with gzip.open(CAPTURES / f"{name}.json.gz", "rt", encoding="utf-8") as capture:
        return capture.read()


def load(name: str) -> dict:
    """The capture of upstream's ``name`` env (``"maze"``, ``"atari"``, ...), a fresh copy."""
    return json.loads(_read(name))


def exchanges(capture: dict) -> Iterator[tuple[str, Any, Any]]:
    """``(session name, frame sent, reply)`` of every captured exchange, in order."""
    for session in capture["sessions"]:
        for exchange in session["exchanges"]:
            yield session["name"], exchange["send"], exchange["recv"]


def observations(capture: dict) -> Iterator[dict]:
    """The named fields (without ``done``, ``reward``, ``metadata``) of every observation the
    captured server sent."""
    for _, _, reply in exchanges(capture):
        if isinstance(reply, dict) and reply.get("type") == "observation":
            yield {k: v for k, v in reply["data"]["observation"].items() if k not in RESERVED}


def sent_actions(capture: dict) -> Iterator[dict]:
    """The actions of the scripted episode's steps, as they were sent."""
    for name, frame, _ in exchanges(capture):
        if name == "scripted episode" and isinstance(frame, dict) and frame.get("type") == "step":
            yield frame["data"]


def _key(frame: Any) -> str:
    """A sent frame, comparable: text frames by their JSON value, a frame that is not JSON as it is."""
    if isinstance(frame, str):
        try:
            return json.dumps(json.loads(frame), sort_keys=True)
        except ValueError:
            return frame
    return json.dumps(frame, sort_keys=True)


class _Cursor:
    """Where one ``/ws`` connection is in the capture: the session it follows and the position
    after the last frame that matched."""

    def __init__(self, capture: dict) -> None:
        self.sessions = [[(_key(e["send"]), e["recv"]) for e in s["exchanges"]] for s in capture["sessions"]]
        self.session: int | None = None
        self.position = 0

    def reply(self, frame: str) -> Any:
        key = _key(frame)
        order = ([self.session] if self.session is not None else []) + list(range(len(self.sessions)))
        for index in order:
            start = self.position if index == self.session else 0
            for at, (sent, reply) in enumerate(self.sessions[index][start:], start):
                if sent == key:
                    self.session, self.position = index, at + 1
                    return reply
        return {"type": "error", "data": {"code": "EXECUTION_ERROR",
                                          "message": f"replay: the capture has no reply to {frame[:200]}"}}


def replay_app(name: str) -> Any:
    """An ASGI app answering as upstream's captured ``name`` server did (see the module docstring)."""
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import JSONResponse
    from starlette.routing import Route, WebSocketRoute
    from starlette.websockets import WebSocket, WebSocketDisconnect

    capture = load(name)
    http_reset = capture["http"]["reset"]

    def fixed(body: Any):
        async def endpoint(request: Request) -> JSONResponse:
            return JSONResponse(body)
        return endpoint

    async def reset(request: Request) -> JSONResponse:
        await request.body()  # read it, as the real server does: a body left unread resets the connection
        return JSONResponse(http_reset["body"], status_code=http_reset["status"])

    async def ws(websocket: WebSocket) -> None:
        await websocket.accept()
        cursor = _Cursor(capture)
        try:
            while True:
                frame = await websocket.receive_text()
                if _key(frame) == _key({"type": "close"}):
                    await websocket.close()  # as upstream does: the session ends, then the socket
                    return
                reply = cursor.reply(frame)
                if isinstance(reply, dict) and "openenv_gym.recorder" in reply:
                    await websocket.close()  # the captured server closed the session there
                    return
                await websocket.send_text(json.dumps(reply))
        except WebSocketDisconnect:
            return

    return Starlette(routes=[
        Route("/health", fixed(capture["health"])),
        Route("/schema", fixed(capture["schema"])),
        Route("/metadata", fixed(capture["metadata"])),
        Route("/reset", reset, methods=["POST"]),
        WebSocketRoute("/ws", ws),
    ])
