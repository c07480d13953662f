"""The server's latency mechanisms (``openenv_gym.server.latency``): busy polling on
loopback, a window after each reply, never for a peer in the same process, and the
options that set it on both sides (the client's side is in
``tests/client/test_connection.py``); the policy the options build. How a session's
calls move inline and back is tested through ``EnvCaller`` in ``test_session.py``."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import time

import pytest

import openenv_gym
from openenv_gym import cli
from openenv_gym._local import MAX_BUSY_POLL
from openenv_gym.cli import _parser
from openenv_gym.client.connection import LOOPBACK_BUSY_POLL
from openenv_gym.server.latency import BusyPoll, LatencyPolicy
from tests.conftest import asgi_server, subprocess_env


def test_a_window_spins_then_ends_and_zero_never_spins():
    async def scenario() -> list[bool]:
        seen = []
        poll = BusyPoll(0.02)
        poll.after_reply()
        await asyncio.sleep(0)
        seen.append(poll.spinning)
        await asyncio.sleep(0.1)
        seen.append(poll.spinning)
        off = BusyPoll(0.0)
        off.after_reply()
        seen.append(off.spinning)
        return seen

    assert asyncio.run(scenario()) == [True, False, False]


def test_each_turn_of_a_window_offers_the_core_to_others(monkeypatch):
    """The spinning loop yields the core on every turn (``sched_yield``), so on a busy
    machine it does not hold a core the message it waits for needs."""
    turns = []
    monkeypatch.setattr("openenv_gym.server.latency.spin_turn", lambda: turns.append(1))

    async def scenario() -> None:
        poll = BusyPoll(0.02)
        poll.after_reply()
        await asyncio.sleep(0.1)

    asyncio.run(scenario())
    assert len(turns) > 10


def test_negative_windows_are_refused_on_both_sides(cartpole_url):
    with pytest.raises(ValueError, match="busy_poll"):
        openenv_gym.create_app("CartPole-v1", busy_poll=-1)
    with pytest.raises(ValueError, match="busy_poll"):
        openenv_gym.RemoteEnv(cartpole_url, busy_poll=-0.5)


@pytest.mark.parametrize("window", [1000, 1000.0, 2.5])
def test_a_window_in_the_wrong_unit_is_refused_on_both_sides_and_by_the_cli(cartpole_url, window, capsys):
    """Microseconds or milliseconds given as seconds: the server would spin a core for
    that long after each reply, long after its client left."""
    says = "busy_poll is in seconds, at most 1.0"
    with pytest.raises(ValueError, match=says):
        openenv_gym.create_app("CartPole-v1", busy_poll=window)
    with pytest.raises(ValueError, match=says):
        openenv_gym.RemoteEnv(cartpole_url, busy_poll=window)
    assert cli.main(["serve", "CartPole-v1", "--busy-poll", str(window)]) == 1
    assert says in capsys.readouterr().err


def test_the_largest_window_is_taken():
    assert openenv_gym.create_app("CartPole-v1", busy_poll=MAX_BUSY_POLL) is not None


_CLIENT = """
import sys, time, openenv_gym
env = openenv_gym.RemoteEnv(sys.argv[1])
env.reset(seed=0)
for i in range(10):
    if any(env.step(i % 2)[2:4]):
        env.reset()
print(env.unwrapped._live().connection._busy_poll, flush=True)
time.sleep(5)
env.close()
"""


def test_the_server_polls_after_replying_to_a_client_in_another_process_then_sleeps():
    """A window of 3 s (set on the server's poller: options take at most 1 s), so that
    a loaded machine delaying this test by a second still sees the loop spinning after
    the client's last step, and then stopping."""
    app = openenv_gym.create_app("CartPole-v1", busy_poll=MAX_BUSY_POLL, execution="inline")
    poll = app.state.openenv_gym.busy_poll
    poll.window = 3.0
    with asgi_server(app) as url:
        client = subprocess.Popen(
            [sys.executable, "-c", _CLIENT, url], stdout=subprocess.PIPE, text=True, env=subprocess_env()
        )
        try:
            assert float(client.stdout.readline()) == LOOPBACK_BUSY_POLL  # it polls too
            assert poll.spinning
            deadline = time.monotonic() + 10
            while poll.spinning and time.monotonic() < deadline:
                time.sleep(0.05)
            assert not poll.spinning
        finally:
            client.kill()
            client.wait(10)
            client.stdout.close()


def test_neither_side_polls_for_a_peer_in_its_own_process():
    app = openenv_gym.create_app("CartPole-v1", busy_poll=0.5)
    with asgi_server(app) as url:
        env = openenv_gym.RemoteEnv(url)
        try:
            env.reset(seed=0)
            env.step(0)
            assert env._live().connection._busy_poll == 0
            assert not app.state.openenv_gym.busy_poll.spinning
        finally:
            env.close()


def test_cli_takes_a_window():
    args = _parser().parse_args(["serve", "CartPole-v1", "--busy-poll", "0"])
    assert args.busy_poll == 0.0
    assert _parser().parse_args(["serve", "CartPole-v1"]).busy_poll is None




def test_the_serve_options_set_the_policy_every_session_runs_under():
    """``ServeOptions.latency`` carries the user's two settings, and each session's
    ``EnvCaller`` and the server's polling window take them from it."""
    from openenv_gym.server.hosting import Server
    from openenv_gym.server.resolve import resolve

    options = openenv_gym.ServeOptions(inline_deadline=2.5, busy_poll=0.0005)
    assert options.latency == LatencyPolicy(inline_deadline=2.5, busy_poll=0.0005)
    server = Server(resolve("CartPole-v1"), options)
    caller = server.env_caller()
    assert caller.inline_deadline == 2.5 and server.busy_poll.window == 0.0005
    assert caller.promotion.promote_after == LatencyPolicy().promote_after
    caller.shutdown()
