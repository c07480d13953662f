"""The official ``openenv`` client and validator against openenv-gym servers."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys

import jsonschema
import pytest
from openenv import GenericEnvClient

import openenv_gym

ENVS = {
    "CartPole-v1": lambda step: {"action": step % 2},
    "FrozenLake-v1": lambda step: {"action": step % 4},
    "Pendulum-v1": lambda step: {"action": [((step % 5) - 2) * 0.5]},
    "Blackjack-v1": lambda step: {"action": 0},  # stick: every episode ends at once
}
MAX_STEPS = 600


@pytest.fixture(scope="module", params=sorted(ENVS))
def served(request):
    with openenv_gym.local_server(request.param) as url:
        yield request.param, url


def _schema(url: str) -> dict:
    import urllib.request

    with urllib.request.urlopen(f"{url}/schema", timeout=5) as response:
        return json.loads(response.read())


def _check_against_schema(schema: dict, result) -> None:
    """RFC 008's check: {**observation, reward, done} validates against /schema.observation."""
    jsonschema.Draft202012Validator(schema["observation"]).validate(
        {**result.observation, "reward": result.reward, "done": result.done}
    )


def test_sync_client_plays_full_episodes(served):
    env_id, url = served
    schema = _schema(url)
    action = ENVS[env_id]
    with GenericEnvClient(base_url=url).sync() as client:
        for episode in range(2):
            result = client.reset(seed=episode, episode_id=f"ep-{episode}")
            _check_against_schema(schema, result)
            assert result.reward is None and result.done is False
            steps = 0
            while not result.done:
                assert steps < MAX_STEPS, "episode did not end"
                result = client.step(action(steps))
                steps += 1
                _check_against_schema(schema, result)
                assert isinstance(result.reward, float)
                assert result.done == (
                    result.observation["terminated"] or result.observation["truncated"]
                )
            state = client.state()
            assert state["episode_id"] == f"ep-{episode}"
            assert state["step_count"] == steps
            assert state["env_id"] == env_id


def test_async_client_plays_full_episodes(served):
    env_id, url = served
    action = ENVS[env_id]

    async def play() -> int:
        async with GenericEnvClient(base_url=url) as client:
            result = await client.reset(seed=3)
            steps = 0
            while not result.done and steps < MAX_STEPS:
                result = await client.step(action(steps))
                steps += 1
            assert result.done
            state = await client.state()
            assert state["step_count"] == steps
            return steps

    assert asyncio.run(asyncio.wait_for(play(), 60)) > 0


def test_malformed_action_gets_validation_error_and_session_goes_on(cartpole_url):
    with GenericEnvClient(base_url=cartpole_url).sync() as client:
        client.reset(seed=0)
        for bad in ({"action": 7}, {"action": "left"}, {"move": 1}, {"action": 1, "extra": 2}, {}):
            with pytest.raises(RuntimeError, match="VALIDATION_ERROR"):
                client.step(bad)
        result = client.step({"action": 1})
        assert result.done is False
        assert client.state()["step_count"] == 1


def test_seeded_episodes_are_reproducible_through_the_official_client(cartpole_url):
    with GenericEnvClient(base_url=cartpole_url).sync() as client:
        first = [client.reset(seed=42).observation["obs"]]
        first += [client.step({"action": i % 2}).observation["obs"] for i in range(5)]
        second = [client.reset(seed=42).observation["obs"]]
        second += [client.step({"action": i % 2}).observation["obs"] for i in range(5)]
    assert first == second


def test_openenv_validate_url_passes_every_check(cartpole_url):
    cli = os.path.join(os.path.dirname(sys.executable), "openenv")
    proc = subprocess.run(
        [cli, "validate", "--url", cartpole_url, "--json"],
        capture_output=True, text=True, timeout=120,
    )
    report = json.loads(proc.stdout[proc.stdout.index("{"):])
    failed = [c for c in report["criteria"] if not c["passed"]]
    assert not failed, failed
    assert report["passed"] is True
    assert report["standard_profile"] == "openenv-http/1.x"
    assert proc.returncode == 0
