"""Record captures of upstream OpenEnv's own servers, for the replay tests in CI.

Upstream's environments (huggingface/OpenEnv ``envs/``) are not on PyPI: with their
sources at hand, this script starts each one from its package directory, unmodified,
on 127.0.0.1, plays a scripted session against it over the raw protocol, and writes
what the server answered to ``tests/upstream/captures/<env>.json.gz``:

    python tests/upstream/record.py --envs /path/to/OpenEnv/envs \\
        --python /path/to/venv/bin/python          # openenv 0.10 and the engines
    python tests/upstream/record.py --envs ... --only maze connect4

A capture holds the server's ``/health``, ``/schema`` and ``/metadata``, a list of
WebSocket sessions (each a list of ``{"send", "recv"}`` exchanges, in order: the
scripted episode, then the error probes of :data:`PROBES`, each on a session of its
own) and what a second session got while the first was open (one-session servers
answer CAPACITY_REACHED). :mod:`tests.upstream.replay` serves a capture back.
"""

from __future__ import annotations

import argparse
import datetime
import gzip
import json
import os
import random
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
CAPTURES = HERE / "captures"
sys.path.insert(0, str(HERE.parent.parent))

from tests.upstream.servers import UPSTREAM_ENVS, UpstreamEnv, running  # noqa: E402

#: Steps of the scripted episode (a new episode starts, seeded 1, 2, ..., when one ends).
EPISODE_STEPS = {"atari": 6}
DEFAULT_STEPS = 16

Choose = Callable[[int, dict], Any]


def _legal(field: str, key: str) -> Choose:
    """Play one of ``obs[field]``, the same one on every recording, as the action's ``key``
    (0 when the list is empty)."""

    def choose(i: int, obs: dict) -> Any:
        legal = obs.get(field) or [0]
        return {key: random.Random(i).choice(legal)}

    return choose


def _cycle(key: str, values: list[Any]) -> Choose:
    return lambda i, obs: {key: values[i % len(values)]}


def _steps(actions: list[dict]) -> Choose:
    """The whole actions in turn (for envs whose action has several fields)."""
    return lambda i, obs: actions[i % len(actions)]


#: The scripted action of step ``i`` after observation ``obs``, by env.
SCRIPTS: dict[str, Choose] = {
    "connect4": _legal("legal_actions", "column"),
    "maze": _legal("legal_actions", "action"),
    "openspiel": _legal("legal_actions", "action_id"),
    "atari": _legal("legal_actions", "action_id"),
    "chess": _legal("legal_moves", "move"),
    "grid_world": _cycle("action", ["RIGHT", "RIGHT", "DOWN", "DOWN", "RIGHT", "RIGHT", "DOWN", "DOWN", "LEFT", "UP"]),
    "textarena": _cycle("message", ["[10]", "I guess [5]", "[15]", "[3]", "[18]", "[1]", "[20]", "[7]", "[12]",
                                    "[14]", "no number"]),
    "coding": _cycle("code", ["print(1 + 1)", "x = 21", "print(x * 2)", "raise ValueError('boom')",
                              "import os\nprint(len(os.listdir('.')) >= 0)", "while False: pass"]),
    "echo": _cycle("tool_name", ["echo_message"]),
    # Water and firebreaks on and beside the two fires of the seeded start, a wait, an action
    # upstream does not know, and a cell off the 16x16 grid (both penalised, not refused).
    "wildfire": _steps([{"action": "water", "x": 10, "y": 6}, {"action": "break", "x": 11, "y": 6},
                        {"action": "wait"}, {"action": "break", "x": 12, "y": 10},
                        {"action": "water", "x": 12, "y": 9}, {"action": "burn"},
                        {"action": "water", "x": 99, "y": 99}]),
    "reasoning_gym": _cycle("answer", ["100", "", "I count 42 legs"]),
    "dm_control": _cycle("values", [[0.5], [-1.0], [0.0], [2.0], [-0.25]]),
    "snake": _cycle("action", [0, 1, 0, 2, 0, 0, 1, 1, 2, 0]),
    "repl": _steps([{"code": "x = 21"}, {"code": "print(x * 2)"}, {"code": "import math\nprint(math.sqrt(16))"},
                    {"code": "raise ValueError('boom')"}, {"code": "print('FINAL(42)')"},
                    {"code": "", "is_final": True, "final_answer": "42"}]),
    "dipg_safety": _cycle("llm_response", [
        "<|channel|>analysis<|message|>Fever, cough, opacity.<|end|>"
        "<|channel|>final<|message|>Pneumonia<|end|>", "I do not know"]),
    "carla": _steps([{"action_type": "observe"}, {"action_type": "control", "throttle": 0.5, "steer": 0.1},
                     {"action_type": "brake_vehicle", "brake_intensity": 0.5},
                     {"action_type": "lane_change", "lane_direction": "left"},
                     {"action_type": "maintain_speed", "target_speed_kmh": 30.0},
                     {"action_type": "emergency_stop"}]),
    "kernrl": _cycle("code", ["import torch\n\nclass ModelNew(torch.nn.Module):\n    def forward(self, *args):\n"
                              "        return args[0]\n", "not python at all ("]),
}

ECHO_STEPS = [
    {"type": "list_tools"},
    {"type": "call_tool", "tool_name": "echo_message", "arguments": {"message": "Hello, upstream!"}},
    {"type": "call_tool", "tool_name": "echo_with_length", "arguments": {"message": "four"}},
    {"type": "call_tool", "tool_name": "echo_message", "arguments": {}},
    {"type": "call_tool", "tool_name": "no_such_tool", "arguments": {}},
    {"tool_name": "echo_message", "arguments": {"message": "no type key"}},
]


def _bad_values(schema: dict) -> Iterator[tuple[str, dict]]:
    """``(name, action)`` pairs a server's own action schema refuses: a required field left
    out, each required field of the wrong JSON type, and an unknown key."""
    properties = schema.get("properties", {})
    required = [k for k in schema.get("required", []) if k in properties]
    valid = {k: _example(properties[k]) for k in required}
    yield "empty action", {}
    for key in required:
        kind = properties[key].get("type")
        wrong = "not a number" if kind in ("integer", "number") else 12345
        yield f"{key} of the wrong type", {**valid, key: wrong}
    yield "unknown key", {**valid, "no_such_field": 1}


def _example(schema: dict) -> Any:
    kind = schema.get("type")
    if "const" in schema:
        return schema["const"]
    if "$ref" in schema or "enum" in schema:
        return (schema.get("enum") or ["UP"])[0]
    return {"integer": 0, "number": 0.0, "string": "x", "boolean": False, "object": {}, "array": []}.get(kind, 0)


#: Probes beyond the action schema, each on a fresh session: (name, frames to send).
PROBES: list[tuple[str, list[Any]]] = [
    ("step before any reset", [{"type": "step", "data": "@valid"}]),
    ("unknown message type", [{"type": "no_such_type", "data": {}}]),
    ("invalid JSON", ["{not json"]),
    ("state after reset", [{"type": "reset", "data": {}}, {"type": "state"}]),
    ("out-of-range action", [{"type": "reset", "data": {"seed": 0}}, {"type": "step", "data": "@out_of_range"}]),
]

OUT_OF_RANGE = {"connect4": {"column": 7}, "maze": {"action": 9}, "openspiel": {"action_id": 99},
                "atari": {"action_id": 99}, "chess": {"move": "e2e5"}, "grid_world": {"action": "JUMP"},
                "wildfire": {"action": "water", "x": -1, "y": 0}, "dm_control": {"values": [0.1, 0.2, 0.3]},
                "snake": {"action": 7}, "carla": {"action_type": "fly"}}


class Session:
    """One raw WebSocket session, every exchange written down; once the server closes it,
    what is sent after is recorded as unsent."""

    def __init__(self, url: str) -> None:
        from websockets.sync.client import connect

        self.exchanges: list[dict] = []
        self._ws = connect(url.replace("http", "ws", 1) + "/ws", max_size=None, open_timeout=30)
        self.closed: str | None = None

    def send(self, frame: Any, timeout: float = 60.0) -> Any:
        reply: Any
        if self.closed is not None:
            reply = {"openenv_gym.recorder": f"not sent: {self.closed}"}
        else:
            try:
                self._ws.send(frame if isinstance(frame, str) else json.dumps(frame))
                reply = json.loads(self._ws.recv(timeout=timeout))
            except Exception as exc:  # noqa: BLE001 - the server closed, or said nothing: that is the capture
                self.closed = f"{type(exc).__name__}: {exc}"
                reply = {"openenv_gym.recorder": self.closed}
        self.exchanges.append({"send": frame, "recv": reply})
        return reply

    def close(self) -> None:
        self._ws.close()


def _http(url: str, path: str, body: dict | None = None) -> Any:
    import urllib.error
    import urllib.request

    request = urllib.request.Request(url + path, data=None if body is None else json.dumps(body).encode(),
                                     headers={"content-type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            status, text = response.status, response.read()
    except urllib.error.HTTPError as error:
        status, text = error.code, error.read()
    try:
        return {"status": status, "body": json.loads(text or b"null")}
    except ValueError:  # an error page that is not JSON (a server's 500): kept as text
        return {"status": status, "body": text.decode("utf-8", "replace")}


def record(env: UpstreamEnv, url: str) -> dict:
    schema = _http(url, "/schema")["body"]
    capture: dict[str, Any] = {
        "env": env.package, "name": env.name, "server_env": env.server_env,
        "recorded": datetime.date.today().isoformat(),
        "health": _http(url, "/health")["body"], "schema": schema, "metadata": _http(url, "/metadata")["body"],
        "sessions": [],
    }
    steps = EPISODE_STEPS.get(env.name, DEFAULT_STEPS)
    session = Session(url)
    try:
        obs = session.send({"type": "reset", "data": {"seed": 0}})
        capture["second_session"] = _second_session(url)
        episode = 0
        for i in range(steps):
            if obs.get("data", {}).get("done"):
                episode += 1
                obs = session.send({"type": "reset", "data": {"seed": episode}})
                continue
            fields = obs.get("data", {}).get("observation", {})
            action = ECHO_STEPS[i % len(ECHO_STEPS)] if env.name == "echo" else SCRIPTS[env.name](i, fields)
            obs = session.send({"type": "step", "data": action})
        session.send({"type": "state"})
        session.send({"type": "reset", "data": {"seed": 0}})  # the seeded start again: does it repeat?
    finally:
        session.close()
    capture["sessions"].append({"name": "scripted episode", "exchanges": session.exchanges})
    valid = _valid_action(env.name, capture)
    probes = [(name, [{"type": "reset", "data": {"seed": 0}}, {"type": "step", "data": action}])
              for name, action in _bad_values(schema["action"])]
    for name, frames in [*probes, *PROBES]:
        probe = Session(url)
        try:
            for frame in frames:
                if isinstance(frame, dict) and frame.get("data") == "@valid":
                    frame = {**frame, "data": valid}
                if isinstance(frame, dict) and frame.get("data") == "@out_of_range":
                    if env.name not in OUT_OF_RANGE:
                        continue
                    frame = {**frame, "data": OUT_OF_RANGE[env.name]}
                probe.send(frame)
        finally:
            probe.close()
        capture["sessions"].append({"name": name, "exchanges": probe.exchanges})
    capture["http"] = {"reset": _http(url, "/reset", {"seed": 0})}
    return capture


def _valid_action(name: str, capture: dict) -> Any:
    """The first action the scripted episode sent."""
    for exchange in capture["sessions"][0]["exchanges"]:
        if exchange["send"].get("type") == "step":
            return exchange["send"]["data"]
    return {}


def _second_session(url: str) -> Any:
    """What a second session gets while the first is open: its first reply (one-session
    servers answer CAPACITY_REACHED)."""
    other = Session(url)
    try:
        return other.send({"type": "reset", "data": {"seed": 0}}, timeout=30)
    finally:
        other.close()


def write(capture: dict, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    text = json.dumps(capture, indent=None, separators=(",", ":"), sort_keys=False)
    with gzip.open(path, "wt", encoding="utf-8", compresslevel=9) as out:
        out.write(text)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--envs", required=True, help="upstream OpenEnv's envs/ directory")
    parser.add_argument("--python", default=sys.executable, help="the interpreter that runs upstream's servers")
    parser.add_argument("--only", nargs="*", help="record these envs only (short names: maze, atari, ...)")
    args = parser.parse_args(argv)
    chosen = [e for e in UPSTREAM_ENVS if not args.only or e.name in args.only]
    for env in chosen:
        print(f"recording {env.package} ...", flush=True)
        with running(env, Path(args.envs), args.python) as url:
            capture = record(env, url)
        write(capture, CAPTURES / f"{env.name}.json.gz")
        size = os.path.getsize(CAPTURES / f"{env.name}.json.gz")
        print(f"  {sum(len(s['exchanges']) for s in capture['sessions'])} exchanges, {size // 1024} KiB", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
