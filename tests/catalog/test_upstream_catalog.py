"""Every catalog entry's exact view against what upstream OpenEnv's env publishes and sends.

Each entry of the catalog names an upstream env; its view (``observation_fields`` /
``action_fields``) is checked against the capture of that env's real server
(``tests/upstream/captures/``) or, for envs whose servers cannot run offline, its recorded
``/schema`` document (``tests/upstream/schemas/``, :mod:`tests.upstream.record_schemas`):
the view builds on the schema and the first observation a client would read; every
captured observation fits the observation space; sampled actions are JSON that upstream's
own action schema accepts; ``gym.make(entry.id, base_url=...)`` plays a replay of the
capture; and the entry's text view renders observations.
"""

from __future__ import annotations

import json
import warnings
from functools import cache
from pathlib import Path
from typing import Any

import gymnasium as gym
import jsonschema
import numpy as np
import pytest
from gymnasium import spaces as gs

import openenv_gym
from openenv_gym import catalog
from openenv_gym.errors import RemoteError
from openenv_gym.spaces import contains
from openenv_gym.spaces.stock import NULL_FIELDS, StockView, infer_view
from openenv_gym.text import view_for, view_for_spaces
from tests.conftest import asgi_server
from tests.upstream.replay import CAPTURED, exchanges, load, observations, replay_app

SCHEMAS = Path(__file__).resolve().parent.parent / "upstream" / "schemas"


@cache
def recordings() -> dict[str, tuple[str, str]]:
    """``upstream package -> ("capture" | "schema", short name)`` of every recording here."""
    found = {load(name)["env"]: ("capture", name) for name in CAPTURED}
    for path in sorted(SCHEMAS.glob("*.json")):
        found.setdefault(json.loads(path.read_text())["env"], ("schema", path.stem))
    return found


def recorded(entry: catalog.CatalogEntry) -> tuple[str, dict, dict | None, list[dict]]:
    """``(kind, /schema, first observation, captured observations)`` of ``entry``'s env: the
    first observation is what a client reads first (the reply to ``POST /reset``, else the
    first WebSocket observation), none for a schema alone."""
    kind, name = recordings()[entry.upstream]
    if kind == "schema":
        return kind, json.loads((SCHEMAS / f"{name}.json").read_text())["schema"], None, []
    capture = load(name)
    seen = list(observations(capture))
    reset = capture["http"]["reset"]
    first = reset["body"]["observation"] if reset["status"] == 200 else (seen[0] if seen else None)
    return kind, capture["schema"], first, seen


ENTRIES = [entry for entry in catalog.list_envs() if entry.upstream in recordings()]
CAPTURED_ENTRIES = [entry for entry in ENTRIES if recordings()[entry.upstream][0] == "capture"]


def ids(entry: catalog.CatalogEntry) -> str:
    return entry.name


def view_of(entry: catalog.CatalogEntry) -> StockView:
    _, schema, first, _ = recorded(entry)
    return infer_view(schema, first_observation=first, **entry.view())


def fits(view: StockView, fields: dict) -> list[str]:
    """The fields of one observation outside the view's space. A null number is ``nan``, which
    ``Box.contains`` refuses by design (:func:`~openenv_gym.spaces.infer_space`'s one
    exception): such a field counts as fitting when the view lists it among the nulls."""
    obs, info = view.observe(fields)
    nulls = set(info.get(NULL_FIELDS, ()))
    outside = []
    for key, space in view.observation_space.spaces.items():
        value = obs[key]
        if key in nulls and isinstance(space, gs.Box) and space.dtype.kind == "f" and np.isnan(value).all():
            continue
        if not contains(space, value):
            outside.append(key)
    return outside


def test_every_entry_has_a_capture_or_a_recorded_schema():
    missing = [entry.id for entry in catalog.list_envs() if entry.upstream not in recordings()]
    assert not missing
    # ... and every recording is some entry's (an env with no catalog id has no recording here).
    orphans = set(recordings()) - {entry.upstream for entry in catalog.list_envs()}
    assert not orphans


# Gymnasium's Sequence(stack=True).contains hands numpy scalars to Box.contains, which warns.
@pytest.mark.filterwarnings("ignore:.*Casting input x to numpy array")
@pytest.mark.parametrize("entry", ENTRIES, ids=ids)
def test_the_view_builds_and_every_captured_observation_fits(entry):
    kind, _, _, seen = recorded(entry)
    view = view_of(entry)
    assert isinstance(view.observation_space, gs.Dict) and view.observation_space.spaces
    for field in list(entry.observation_fields) + list(entry.action_fields):
        side = "observation" if field in entry.observation_fields else "action"
        assert f"{side}.{field}" in view.rules, f"{entry.id}: {side} field {field!r} is not upstream's"
    assert kind == "schema" or seen, f"{entry.id}: the capture holds no observation"
    for fields in seen:
        assert not fits(view, fields), (entry.id, fits(view, fields))


def _short(error: jsonschema.ValidationError, space: gs.Space) -> bool:
    """An empty list upstream requires ``minItems`` of: a Gymnasium ``Sequence`` has no
    minimum length, so its samples may be empty (Chat's tokens, at least one)."""
    return error.validator == "minItems" and error.instance == [] and _has_sequence(space)


def _has_sequence(space: gs.Space) -> bool:
    if isinstance(space, gs.Sequence):
        return True
    return isinstance(space, gs.Dict) and any(_has_sequence(s) for s in space.spaces.values())


@pytest.mark.parametrize("entry", ENTRIES, ids=ids)
def test_sampled_actions_are_json_upstream_accepts(entry):
    _, schema, _, _ = recorded(entry)
    view = view_of(entry)
    validator = jsonschema.Draft202012Validator(schema["action"])
    view.action_space.seed(0)
    checked = 0
    for _ in range(25):
        data = view.act(view.action_space.sample())
        json.dumps(data, allow_nan=False)  # plain JSON: no NaN, no numpy scalars
        errors = list(validator.iter_errors(data))
        assert all(_short(error, view.action_space) for error in errors), (entry.id, data, errors[:1])
        checked += not errors
    assert checked >= 5


def _round_trips(view: StockView, action: dict) -> Any:
    """The Gymnasium action that sends exactly ``action`` (a recorded step), else ``None``."""
    try:
        value = view.action.to_space(action)
        return value if view.act(value) == action else None
    except (KeyError, TypeError, ValueError):
        return None


#: Entries no recorded step of whose capture their view sends exactly: REPL's and Carla's views
#: send every optional field (all are the agent's to choose) where the script sent one or two;
#: Echo's recorded tool calls carry the ``type`` the view leaves to its default.
RESET_ONLY = ("Echo", "REPL", "Carla")


@pytest.mark.parametrize("entry", CAPTURED_ENTRIES, ids=ids)
def test_gym_make_plays_a_replay_of_the_capture(entry):
    """``gym.make(entry.id, base_url=...)`` resets and plays the recorded steps its view can
    send exactly (a few): the recorded rewards come back, and a recorded error raises."""
    capture = load(recordings()[entry.upstream][1])
    with asgi_server(replay_app(recordings()[entry.upstream][1])) as url, warnings.catch_warnings():
        warnings.simplefilter("ignore")  # Gymnasium's checker on nan, the marker of a null number
        env = gym.make(entry.id, base_url=url, view="raw")  # the view itself (Chess defaults to another)
        try:
            view = env.unwrapped.contract.view
            obs, info = env.reset(seed=0)
            assert set(obs) == set(view.observation_space.spaces)
            played = 0
            for session, sent, reply in exchanges(capture):
                if session != "scripted episode" or not isinstance(sent, dict) or sent.get("type") != "step":
                    continue
                action = _round_trips(view, sent["data"])
                if action is None:
                    continue  # the replay follows the recording from the next frame that matches
                played += 1
                if reply.get("type") == "error":
                    with pytest.raises(RemoteError):
                        env.step(action)
                    break
                obs, reward, terminated, truncated, info = env.step(action)
                assert reward == (reply["data"]["reward"] or 0.0) and terminated == reply["data"]["done"]
                if terminated or played >= 4:
                    break
            assert played or entry.name in RESET_ONLY
        finally:
            env.close()


@pytest.mark.parametrize("entry", ENTRIES, ids=ids)
def test_the_text_view_renders_observations(entry):
    """The entry's text view (the built-in table's, found by the id) describes the env and
    renders captured observations (a sampled one where only the schema is recorded)."""
    _, _, _, seen = recorded(entry)
    view = view_of(entry)
    text = view_for_spaces(view.observation_space, view.action_space, env_id=entry.id)
    assert text.describe().strip()
    if entry.name != "Chess":  # chess's default view is AlphaZero's, not the raw fields'
        assert text.task, f"{entry.id} has no text-view entry"
    view.observation_space.seed(0)
    samples = [view.observe(fields) for fields in seen[:3]] or [(view.observation_space.sample(), {})]
    for obs, info in samples:
        assert text.obs_to_text(obs, info).strip()


def test_gym_make_maze_gets_its_text_view():
    """A RemoteEnv that ``gym.make`` made carries the id the text view is found by: the maze's
    actions are upstream's Action enum (0 up, 1 down, 2 left, 3 right)."""
    with asgi_server(replay_app("maze")) as url:
        env = gym.make("openenv/Maze-v0", base_url=url)
        try:
            obs, info = env.reset(seed=0)
            view = view_for(env)
            assert view.task.startswith("Maze")
            assert [view.parse_action(name) for name in ("up", "down", "left", "right")] == [0, 1, 2, 3]
            assert view.legal_actions(info) == [name for name, legal in zip(("up", "down", "left", "right"),
                                                                          info["action_mask"]) if legal]
        finally:
            env.close()


def test_snake_view_is_the_grid_upstream_sends():
    view = view_of(catalog.get("Snake"))
    assert view.action_space == gs.Discrete(3)
    assert view.observation_space["grid"] == gs.Box(0, 5, (20, 20), np.int64)
    assert view.observation_space["observation"].shape == (20, 20, 8)
    names = view_for_spaces(view.observation_space, view.action_space, env_id="openenv/Snake-v0")
    assert names.parse_action("left") == 1


def test_configured_shapes_come_from_the_first_observation():
    """Shapes a server's configuration decides are not written in the views: Wildfire's grid
    has the length its first observation has (16 x 16 by default), DMControl's actions have
    no fixed length, and Chat's tokens never take the first observation's."""
    wildfire = view_of(catalog.get("Wildfire"))
    assert wildfire.observation_space["grid"].shape == (256,)
    assert wildfire.observation_space["wind_dir"] == gs.Discrete(9)
    assert isinstance(view_of(catalog.get("DMControl")).action_space, gs.Sequence)
    _, schema, _, _ = recorded(catalog.get("Chat"))
    chat = infer_view(schema, first_observation={"messages": [], "tokens": [1, 2, 3]}, **catalog.get("Chat").view())
    assert isinstance(chat.observation_space["tokens"], gs.Sequence)


def test_mcp_tool_views_name_the_tools():
    coding = view_of(catalog.get("CodingTools"))
    tools = catalog.get("CodingTools").action_fields["tool_name"]["enum"]
    assert coding.action_space["tool_name"] == gs.Discrete(len(tools)) and "submit_solution" in tools
    terminus = view_of(catalog.get("Terminus")).act(view_of(catalog.get("Terminus")).action_space.sample())
    assert terminus["tool_name"] == "terminal" and set(terminus["arguments"]) <= {"command", "final_answer"}


def test_upstream_recordings_are_the_servers_schemas():
    """A recorded schema is the document openenv 0.10 publishes: the four parts, the
    observation's again as the reset observation's."""
    for path in sorted(SCHEMAS.glob("*.json")):
        record = json.loads(path.read_text())
        assert list(record["schema"]) == ["action", "observation", "state", "reset_observation"], path.name
        assert record["schema"]["reset_observation"] == record["schema"]["observation"]
        assert record["not_run"], f"{path.name} does not say why its server was not run"


def test_catalog_lists_the_new_ids():
    listed = {entry.id for entry in openenv_gym.list_envs()}
    for name in ("Wildfire", "ReasoningGym", "DMControl", "REPL", "SumoRL", "Carla", "FinQA"):
        assert f"openenv/{name}-v0" in listed and f"openenv/{name}-v0" in gym.registry
