"""verifiers' rollouts (openenv_gym.verifiers) on a served env, with a scripted model.

The env is real: FrozenLake served by openenv-gym on 127.0.0.1. So is verifiers'
machinery: its env, its interception server (which records every model turn into the
trace) and its eval client, which posts each turn to an OpenAI-compatible endpoint. That
endpoint is :class:`ScriptedModel`, an HTTP server on 127.0.0.1 that answers each chat
completion with the tool call a script chooses from the conversation so far: a client of
the model stands in for the model, nothing stands in for the env.

Needs the ``verifiers`` extra (``.ci/verifiers`` runs it in ``.venv-vf``); skipped without it.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

vf = pytest.importorskip("verifiers.v1")

import openenv_gym  # noqa: E402
from openenv_gym.client.rollout import Rollout  # noqa: E402
from openenv_gym.verifiers import OpenEnvConfig, load_environment  # noqa: E402

#: FrozenLake 4x4, not slippery: from S to G past the holes.
TO_THE_GOAL = ["down", "down", "right", "right", "down", "right"]
FIRST_OBSERVATION = "position: row 0, column 0 (cell 0)\nmap (* = you):\n*FFF\nFHFH\nFFFH\nHFFG"

#: A script: the conversation so far (the request's messages) -> the assistant's next message.
Script = Callable[[list[dict[str, Any]]], dict[str, Any]]


def acting(actions: list[Any], *, tool: str = "act") -> Script:
    """Call ``tool`` with the next of ``actions`` (one per tool result so far); then answer in words."""

    def next_message(messages: list[dict[str, Any]]) -> dict[str, Any]:
        done = sum(message["role"] == "tool" for message in messages)
        if done >= len(actions):
            return {"role": "assistant", "content": "I am done."}
        call = {"id": f"call_{done}", "type": "function",
                "function": {"name": tool, "arguments": json.dumps({"action": actions[done]})}}
        return {"role": "assistant", "content": None, "tool_calls": [call]}

    return next_message


class ScriptedModel:
    """An OpenAI-compatible chat-completions endpoint on 127.0.0.1 answering by ``script``.

    Keeps every request body it got and, per rollout (verifiers sends the trace's id as
    ``X-Session-ID``), how many of its requests were in flight at once; each answer
    waits ``delay`` seconds first, as a model's generation would."""

    def __init__(self, script: Script, delay: float = 0.0) -> None:
        self.script, self.delay = script, delay
        self.requests: list[dict[str, Any]] = []
        self.in_flight: set[str] = set()
        self.most_at_once = 0
        self._lock = threading.Lock()
        model = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - http.server's name
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                session = self.headers.get("X-Session-ID", "")
                with model._lock:
                    model.requests.append(body)
                    model.in_flight.add(session)
                    model.most_at_once = max(model.most_at_once, len(model.in_flight))
                time.sleep(model.delay)
                message = model.script(body["messages"])
                with model._lock:
                    model.in_flight.discard(session)
                reply = json.dumps({
                    "id": "chatcmpl-scripted", "object": "chat.completion", "created": 0, "model": body["model"],
                    "choices": [{"index": 0, "message": message,
                                 "finish_reason": "tool_calls" if message.get("tool_calls") else "stop"}],
                    "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
                }).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(reply)))
                self.end_headers()
                self.wfile.write(reply)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)

    def __enter__(self) -> ScriptedModel:
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()

    def context(self) -> Any:
        """verifiers' model context for this endpoint (the key's variable is set by the test)."""
        client = vf.EvalClientConfig(base_url=f"http://127.0.0.1:{self.server.server_port}/v1",
                                     api_key_var="SCRIPTED_MODEL_KEY")
        return vf.ModelContext(model="scripted", client=client)


@pytest.fixture(scope="module")
def frozen_lake_url() -> Iterator[str]:
    with openenv_gym.local_server("FrozenLake-v1", env_kwargs={"is_slippery": False}, max_sessions=8) as url:
        yield url


@pytest.fixture(autouse=True)
def model_key(monkeypatch):
    monkeypatch.setenv("SCRIPTED_MODEL_KEY", "not-a-secret")


def play(env: Any, model: ScriptedModel) -> list[Any]:
    """Every task of ``env``'s taskset as one episode, all at once on one event loop; the
    one trace of each."""

    async def run() -> list[Any]:
        async with env.serving():
            return await asyncio.gather(*(env.run_episode(task, model.context()) for task in env.taskset))

    episodes = asyncio.run(run())
    assert all(episode.ok and not episode.errors for episode in episodes), [e.errors for e in episodes]
    assert all(len(episode.traces) == 1 for episode in episodes)
    return [episode.traces[0] for episode in episodes]


def test_a_rollout_reaches_the_goal_through_the_server_s_tools(frozen_lake_url):
    env = load_environment(frozen_lake_url, seeds=[0], max_turns=10)
    with ScriptedModel(acting(TO_THE_GOAL)) as model:
        [trace] = play(env, model)
    # Six turns, each an `act` call; the sixth reaches G and ends the episode, so no seventh turn.
    assert trace.num_turns == 6 and len(model.requests) == 6
    assert trace.rewards["episode_reward"].score == 1.0 and trace.reward == 1.0
    assert trace.info["episode"] == {"reward": 1.0, "last_reward": 1.0, "steps": 6, "done": True, "truncated": False}
    assert trace.metrics == {"episode_return": 1.0, "steps": 6.0, "refused_calls": 0.0, "done": 1.0, "truncated": 0.0}
    # What the model saw first: the env's instructions, then the prompt and the first observation.
    first = model.requests[0]
    system, user = first["messages"]
    assert system["role"] == "system" and system["content"].startswith("FrozenLake: walk from the start S")
    assert "Actions: left (move left), down (move down)" in system["content"]
    assert user["role"] == "user" and user["content"].startswith(OpenEnvConfig.model_fields["prompt"].default)
    assert FIRST_OBSERVATION in user["content"]
    assert [tool["function"]["name"] for tool in first["tools"]] == ["act", "observe", "legal_actions"]
    # Each tool result is the env's text after the step: the last request shows the fifth.
    results = [m["content"] for m in model.requests[-1]["messages"] if m["role"] == "tool"]
    assert len(results) == 5 and results[0].startswith("position: row 1, column 0 (cell 4)")


def test_two_rollouts_play_at_once_on_one_event_loop(frozen_lake_url):
    env = load_environment(frozen_lake_url, seeds=[0, 1], max_turns=10)
    delay = 0.5  # long beside the rest of a turn, which takes up to 1.5 s on a busy machine
    with ScriptedModel(acting(TO_THE_GOAL), delay=delay) as model:
        started = time.monotonic()
        traces = play(env, model)
        took = time.monotonic() - started
    # Both rollouts had a model call in flight at once (distinct trace ids), on asyncio.run's one loop.
    assert model.most_at_once == 2 and len({trace.id for trace in traces}) == 2
    assert [trace.reward for trace in traces] == [1.0, 1.0]
    assert [trace.task.data.seed for trace in traces] == [0, 1]
    # 12 model calls: one after another they would take 12 delays, two at a time 6.
    assert took < 12 * delay, took


def test_a_refused_action_leaves_the_env_as_it_was(frozen_lake_url):
    env = load_environment(frozen_lake_url, max_turns=10)
    with ScriptedModel(acting(["jump", *TO_THE_GOAL])) as model:
        [trace] = play(env, model)
    refusal = next(m["content"] for m in model.requests[1]["messages"] if m["role"] == "tool")
    assert refusal.startswith("Error: ") and "jump" in refusal and "left, down, right, up" in refusal
    assert trace.num_turns == 7 and trace.reward == 1.0
    assert trace.metrics["refused_calls"] == 1.0 and trace.info["episode"]["steps"] == 6


def test_an_unfinished_episode_is_scored_by_the_rule_and_flagged(frozen_lake_url):
    # The model stops after two steps: the episode is not over.
    for score, clip, expected in [("return", None, 0.0), ("terminal", None, 0.0),
                                  (unfinished_penalty, None, -1.0), (unfinished_penalty, (-0.5, 1.0), -0.5)]:
        env = load_environment(frozen_lake_url, score=score, clip=clip)
        with ScriptedModel(acting(["down", "down"])) as model:
            [trace] = play(env, model)
        assert trace.num_turns == 3 and model.requests[-1]["messages"][-1]["role"] == "tool"
        assert trace.info["episode"] == {"reward": 0.0, "last_reward": 0.0, "steps": 2, "done": False,
                                         "truncated": False}
        assert trace.rewards["episode_reward"].score == expected, score


def unfinished_penalty(rollout: Rollout) -> float:
    """A score rule of the rollout: its return, less 1 if the model left it unfinished."""
    return rollout.reward - (0 if rollout.done else 1)


def test_max_turns_ends_the_rollout(frozen_lake_url):
    env = load_environment(frozen_lake_url, max_turns=3)
    with ScriptedModel(acting(TO_THE_GOAL)) as model:
        [trace] = play(env, model)
    assert trace.num_turns == 3 and trace.info["episode"]["steps"] == 3 and trace.info["episode"]["done"] is False


def test_the_act_tool_made_on_the_client_plays_the_same_episode(frozen_lake_url):
    env = load_environment(frozen_lake_url, tools="client", max_turns=10)
    with ScriptedModel(acting(TO_THE_GOAL)) as model:
        [trace] = play(env, model)
    assert [tool["function"]["name"] for tool in model.requests[0]["tools"]] == ["act"]
    assert FIRST_OBSERVATION in model.requests[0]["messages"][1]["content"]
    assert trace.num_turns == 6 and trace.reward == 1.0 and trace.info["episode"]["done"] is True


def test_a_score_that_is_no_rule_is_refused_with_what_to_give():
    with pytest.raises(ValueError, match="define it at a module's top level"):
        load_environment("http://127.0.0.1:9", score=lambda rollout: rollout.reward)
    with pytest.raises(ValueError, match="'return' or 'terminal', or 'module:function'"):
        load_environment("http://127.0.0.1:9", score="best")
    with pytest.raises(ValueError, match=r"clip=\(1.0, 0.0\): give \(lo, hi\) with lo <= hi"):
        load_environment("http://127.0.0.1:9", clip=(1, 0))


def test_verifiers_command_line_loads_the_taskset_and_harness_by_their_id(frozen_lake_url, tmp_path):
    """``vf-eval openenv_gym_verifiers``: verifiers imports the id as a module, as it does
    any installed environment, and writes each episode's trace to ``traces.jsonl``."""
    with ScriptedModel(acting(TO_THE_GOAL)) as model:
        run = subprocess.run(
            [str(Path(sys.executable).with_name("vf-eval")), "openenv_gym_verifiers",
             "--env.taskset.url", frozen_lake_url, "--env.taskset.seeds", "[0, 1]", "--env.taskset.max-turns", "10",
             "--env.agent.runtime.type", "subprocess", "-m", "scripted", "--no-push", "-o", str(tmp_path / "runs"),
             "--client.base-url", f"http://127.0.0.1:{model.server.server_port}/v1",
             "--client.api-key-var", "SCRIPTED_MODEL_KEY"],
            capture_output=True, text=True, timeout=300, cwd=tmp_path, env=os.environ,
        )
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    [traces] = (tmp_path / "runs").glob("*/traces.jsonl")
    episodes = [json.loads(line) for line in traces.read_text().splitlines()]
    assert sorted(episode["task"]["data"]["seed"] for episode in episodes) == [0, 1]
    for episode in episodes:
        [trace] = episode["traces"]
        assert episode["ok"] and trace["rewards"]["episode_reward"]["score"] == 1.0
        assert trace["info"]["episode"]["done"] is True and trace["metrics"]["steps"] == 6.0
