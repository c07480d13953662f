"""Talking to a server on the raw protocol: a WebSocket to ``/ws``, one JSON
message and its reply, one HTTP request and its JSON answer."""

from __future__ import annotations

import json
import urllib.error
import urllib.request

from websockets.sync.client import ClientConnection, connect


def ws(url: str, **kwargs) -> ClientConnection:
    """A WebSocket to the server's ``/ws`` (no compression, as openenv-gym's clients)."""
    return connect(url.replace("http://", "ws://") + "/ws", compression=None, open_timeout=10, **kwargs)


def ask(sock: ClientConnection, message: dict) -> dict:
    """Send one JSON message; its JSON reply."""
    sock.send(json.dumps(message))
    return json.loads(sock.recv(timeout=30))


def http(url: str, path: str, body: dict | None = None, method: str | None = None) -> tuple[int, object]:
    """``(status, JSON answer)`` of a request (a POST when there is a ``body``)."""
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(url + path, data=data, method=method or ("POST" if body is not None else "GET"),
                                     headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read() or b"null")
