"""What the tests of the built-in servers (Atari, OpenSpiel, TextArena) share: a server per
configuration of the env, raw ``/ws`` sessions, HTTP JSON, the capture of upstream's server
they are compared with, and a frame's shape (its keys and JSON types)."""

from __future__ import annotations

import contextlib
import json
import urllib.request
from collections.abc import Callable, Iterator
from typing import Any

import pytest

import openenv_gym
from tests.conftest import asgi_server
from tests.upstream.replay import CAPTURES, load


def serving(environment: type) -> Iterator[Callable[..., str]]:
    """For a module fixture: ``serve(**env_kwargs)``, the URL of a server of
    ``environment(**env_kwargs)``, one per configuration, all stopped at the module's end."""
    with contextlib.ExitStack() as stack:
        urls: dict[str, str] = {}

        def url(**env_kwargs: Any) -> str:
            key = json.dumps(env_kwargs, sort_keys=True)
            if key not in urls:
                app = openenv_gym.create_app(environment, env_kwargs=env_kwargs)
                urls[key] = stack.enter_context(asgi_server(app))
            return urls[key]

        yield url


def capture(name: str, setting: str, expected: str) -> dict:
    """Upstream's capture of ``name``, which must have served ``expected`` as ``setting``."""
    path = CAPTURES / f"{name}.json.gz"
    if not path.exists():
        pytest.skip(f"no capture of upstream's {name} server at {path}: record one with "
                    f"python tests/upstream/record.py --envs <OpenEnv>/envs --only {name}")
    recorded = load(name)
    assert recorded["server_env"].get(setting, expected) == expected, f"the replay expects {expected}"
    return recorded


class RawSession:
    """One raw ``/ws`` session: frames in, decoded replies out."""

    def __init__(self, ws: Any) -> None:
        self.ws = ws

    def send(self, frame: Any) -> dict:
        self.ws.send(frame if isinstance(frame, str) else json.dumps(frame))
        return json.loads(self.ws.recv(timeout=30))

    def reset(self, **data: Any) -> dict:
        return self.send({"type": "reset", "data": data})

    def step(self, action_id: Any, **fields: Any) -> dict:
        """A step of an action of ``action_id`` (Atari's, OpenSpiel's) and ``fields``."""
        return self.send({"type": "step", "data": {"action_id": action_id, **fields}})

    def state(self) -> dict:
        return self.send({"type": "state"})["data"]


@contextlib.contextmanager
def raw_session(url: str) -> Iterator[RawSession]:
    from websockets.sync.client import connect

    with connect(url.replace("http", "ws", 1) + "/ws", max_size=None) as ws:
        yield RawSession(ws)


def http_json(url: str, body: dict | None = None) -> Any:
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(url, data=data, headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=30) as response:
        return json.load(response)


def shape(value: Any) -> Any:
    """The JSON types of a frame, keys and all: what a client can rely on besides values."""
    if isinstance(value, dict):
        return {key: shape(item) for key, item in value.items()}
    if isinstance(value, list):
        return ["list", *sorted({json.dumps(shape(item)) for item in value})]
    return type(value).__name__
