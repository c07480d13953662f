"""Building and running an app: what ``create_app`` refuses, ``local_server``'s
lifetime, and ``openenv-gym serve`` shutting down on a signal."""

from __future__ import annotations

import signal
import sys
import urllib.request

import pytest

import openenv_gym
from openenv_gym.errors import ConnectionClosedError, SessionError
from tests.conftest import free_port, server_process


def test_local_server_always_stops():
    with pytest.raises(KeyError):
        with openenv_gym.local_server("CartPole-v1") as url:
            raise KeyError("boom")
    with pytest.raises(OSError):
        urllib.request.urlopen(url + "/health", timeout=2)


def test_create_app_refuses_an_instance():
    import gymnasium as gym

    with pytest.raises(TypeError, match="factory"):
        openenv_gym.create_app(gym.make("CartPole-v1"))


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_cli_serves_and_shuts_down_cleanly(sig):
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    args = [sys.executable, "-m", "openenv_gym.cli", "serve", "tests.envs:CompositeEnv",
            "--port", str(port), "--max-sessions", "3"]
    with server_process(args, url) as proc:
        with openenv_gym.RemoteEnv(url) as done:
            done.reset(seed=0)
            done.step(done.action_space.sample())
        open_session = openenv_gym.RemoteEnv(url)
        open_session.reset(seed=1)
        proc.send_signal(sig)
        assert proc.wait(20) == 0
        output = proc.stdout.read()
        assert "Traceback" not in output, output
        # The server's last frame said why: its keepalive thread read it while idle.
        with pytest.raises((SessionError, ConnectionClosedError), match="shutting down|closed|lost"):
            open_session.step(open_session.action_space.sample())
        open_session.close()
