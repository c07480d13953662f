"""Closing a client frees its server's slot before it returns.

A client's ``close`` sends OpenEnv's ``close`` message and then lets the server
close the connection, which a server does once it has ended the session (closed
its env and stopped counting it). So a program that closes an env and opens
another at once, on a server with room for one, never meets CAPACITY_REACHED,
however long the env takes to close. A server that never closes holds the client
for a bounded time only.
"""

from __future__ import annotations

import asyncio
import functools
import time

import pytest

import openenv_gym
from openenv_gym.client import ConnectOptions
from openenv_gym.client.async_session import AsyncSession
from openenv_gym.client.http import get_json
from openenv_gym.client.session import RemoteSession
from tests.client.test_session import Answering
from tests.conftest import asgi_server
from tests.envs import SlowClosingEnv

#: Each way a client holds server sessions, opened with ``num_envs`` envs.
CLIENTS = {
    "RemoteEnv": lambda url: openenv_gym.RemoteEnv(url),
    "batched": lambda url: openenv_gym.RemoteVectorEnv(url, 2, mode="batched"),
    "sessions": lambda url: openenv_gym.RemoteVectorEnv(url, 2, mode="sessions"),
}


@pytest.fixture(scope="module", params=["native listener", "main port"])
def slow_closing_server(request):
    """A server whose envs take 0.3 s to close, with room for two envs only."""
    native_port = 0 if request.param == "native listener" else None
    served = functools.partial(SlowClosingEnv, close_delay=0.3)
    with openenv_gym.local_server(served, native_port=native_port, max_sessions=2) as url:
        yield url


@pytest.mark.parametrize("client", list(CLIENTS))
def test_the_slot_is_free_when_close_returns(slow_closing_server, client):
    url = slow_closing_server
    for _ in range(3):  # each opening finds the room the close before it gave back
        env = CLIENTS[client](url)
        env.reset(seed=0)
        env.close()
        health = get_json(url + "/health")
        assert health["active_sessions"] == 0


def test_a_server_that_never_closes_holds_a_blocking_close_two_seconds_at_most():
    app = Answering({"text": '{"type": "state", "data": {}}'}, closes=False)
    with asgi_server(app) as url:
        session = RemoteSession(url, ConnectOptions())
        started = time.monotonic()
        session.close()
        assert time.monotonic() - started < 3.0
        assert session.connection.closed


def test_a_server_that_never_closes_holds_an_async_close_two_seconds_at_most():
    async def run(url: str) -> float:
        session = await AsyncSession.open(url, ConnectOptions())
        started = time.monotonic()
        await session.close()
        return time.monotonic() - started

    app = Answering({"text": '{"type": "state", "data": {}}'}, closes=False)
    with asgi_server(app) as url:
        assert asyncio.run(run(url)) < 3.0
