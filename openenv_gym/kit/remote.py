"""What ``openenv-gym check`` can learn about a server it neither started nor has a kit for.

A URL comes with no ``validation:`` block, no oracle, no canaries and no process to
measure; what the checks need of those is found out over the wire, and said to be so:

* :func:`read_facts`: whether the server is openenv-gym's or a stock OpenEnv server, its
  name, whether it holds two sessions at once (upstream's envs mostly hold one: a second
  session is answered CAPACITY_REACHED, and the checks that need two SKIP saying so), and
  whether it honours ``reset(seed=...)``;
* :func:`outside_schema`: actions the server's own ``/schema`` refuses (a wrong JSON type, a
  missing or unknown field, a value outside an ``enum`` or a ``minimum`` / ``maximum``), for
  the out-of-space probe of a stock server, whose schema, not the client's inferred space,
  says what is outside;
* :func:`open_env`: a :class:`~openenv_gym.RemoteEnv`, retried while a one-session server
  frees the slot of the session just closed.

:data:`WEAKER_AT_A_URL` says, check by check, what a verdict at a URL does not cover.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from .. import spaces
from ..errors import CapacityReachedError, OpenEnvGymError
from ..protocol import EXTENSION_KEY

__all__ = ["ServerFacts", "read_facts", "open_env", "session", "outside_schema", "WEAKER_AT_A_URL",
           "URL_SEEDS", "URL_CHANCE_SEEDS", "URL_RECORDING_S", "URL_MAX_STEPS", "URL_EPISODE_S"]

#: Seeds a server at a URL has its canaries recorded on, and the steps after which they are cut.
URL_SEEDS = 3
URL_MAX_STEPS = 100
#: Seeds the canaries play at most on a server that ignores seeds (their mean is the floor), and
#: the seconds their recording may take before it stops past the first URL_SEEDS.
URL_CHANCE_SEEDS = 10
URL_RECORDING_S = 120.0
#: Seconds after which a canary's episode is cut at a URL (a slow server's: upstream chess moves
#: its engine's reply in about half a second).
URL_EPISODE_S = 10.0
#: Seconds :func:`open_env` keeps retrying CAPACITY_REACHED (a one-session server frees the
#: slot of a closed session when its close lands).
CAPACITY_WAIT_S = 10.0

#: What each verdict at a URL does not cover, by check id (the report carries it).
WEAKER_AT_A_URL = {
    "runtime.episode_determinism": "replayed in fresh sessions only: a URL's server cannot be restarted from here, "
    "and a second process (a fresh server) is what catches state kept in a module",
    "semantic.floor_gap": "the top is the best return observed (the learner's, the probes'), not a declared one",
    "semantic.canary_floor": "against the best return observed, not a declared top",
    "semantic.no_solution_leakage": "against the best return observed, not a declared top",
    "hacking.repeated_action": "against the best return observed, not a declared top",
    "hacking.reward_range": "the range observed over every step played, not a declared one",
    "learning.learnability": "trained over the wire within the budget; the goal is the canary floor plus a "
    "margin of the observed returns, not a declared floor_margin",
    "hacking.out_of_space": "actions outside the server's own /schema (pydantic's types, enums and bounds): a "
    "range the server enforces in code only (Atari's action ids) is not probed",
}


@dataclass
class ServerFacts:
    """What the checks know of a server at a URL (:func:`read_facts`)."""

    url: str
    schema: dict
    name: str
    #: ``True`` for an openenv-gym server (exact spaces), ``False`` for a stock OpenEnv server.
    extended: bool
    #: Whether a second session opens while one is open.
    concurrent: bool
    #: How :attr:`concurrent` was found out, in words.
    sessions_evidence: str
    #: ``None`` when two seeded resets agree, else what differed (the server ignores the seed,
    #: or keeps state across episodes).
    seed_problem: str | None

    @property
    def one_session(self) -> str | None:
        """Why checks needing two sessions at once cannot run here (``None``: they can)."""
        if self.concurrent:
            return None
        return f"the server holds one session at a time ({self.sessions_evidence})"


@contextmanager
def session(url: str) -> Iterator[Any]:
    """A :func:`open_env` session, closed at the end of the block."""
    env = open_env(url)
    try:
        yield env
    finally:
        env.close()


def open_env(url: str) -> Any:
    """A :class:`~openenv_gym.RemoteEnv` on ``url`` whose first reset got a session: while the
    server answers CAPACITY_REACHED (a one-session server still closing the last session), it
    retries for up to :data:`CAPACITY_WAIT_S` seconds."""
    from ..client import RemoteEnv

    deadline = time.monotonic() + CAPACITY_WAIT_S
    while True:
        env = RemoteEnv(url)
        try:
            env.reset()
            return env
        except CapacityReachedError:
            env.close()
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)
        except BaseException:
            env.close()
            raise


def read_facts(url: str) -> ServerFacts:
    """What the checks need to know of the server at ``url`` (see the module docstring)."""
    from ..client import RemoteEnv
    from ..client.http import get_json

    schema = get_json(f"{url}/schema")
    if not isinstance(schema, dict):
        raise OpenEnvGymError(f"{url}/schema did not return a JSON object")
    try:
        metadata = get_json(f"{url}/metadata")
    except OpenEnvGymError:
        metadata = {}
    name = str(metadata.get("name") or url) if isinstance(metadata, dict) else url
    with session(url) as first:
        second = RemoteEnv(url)
        try:
            second.reset()
            concurrent, evidence = True, "a second session opened while one was open"
        except CapacityReachedError as exc:
            concurrent, evidence = False, f"a second session got CAPACITY_REACHED: {exc.message}"
        finally:
            second.close()
        seed_problem = _seed_problem(first)
    return ServerFacts(url, schema, name, isinstance(schema.get(EXTENSION_KEY), dict), concurrent, evidence,
                       seed_problem)


#: Resets with seed 0 :func:`read_facts` compares (a random start among k shows in one of
#: them with probability 1 - k**-(SEED_TRIALS - 1)).
SEED_TRIALS = 4


def _seed_problem(env: Any) -> str | None:
    """What differs between :data:`SEED_TRIALS` ``reset(seed=0)`` s of one session, and their
    first steps with one action, in words (``None``: nothing)."""
    action = spaces.neutral(env.action_space)
    runs = []
    for _ in range(SEED_TRIALS):
        obs, info = env.reset(seed=0)
        step = env.step(action)
        runs.append((obs, step[0], step[1]))
    first_obs, first_next, first_reward = runs[0]
    for obs, _, _ in runs[1:]:
        differing = _differing(first_obs, obs)
        if differing:
            return (f"resets with seed 0 gave different observations ({', '.join(differing)}): the server "
                    f"ignores reset's seed, or keeps state across episodes")
    for _, next_obs, reward in runs[1:]:
        differing = _differing(first_next, next_obs)
        if differing or reward != first_reward:
            what = ", ".join(differing) if differing else f"reward {first_reward:g} vs {reward:g}"
            return (f"the same action after resets with seed 0 gave different results ({what}): the env's "
                    f"randomness after reset (an opponent, chance events) is not seeded by reset's seed")
    return None


def _differing(a: Any, b: Any) -> list[str]:
    """The fields of two observations that differ (``["observation"]`` when they are not dicts)."""
    if isinstance(a, dict) and isinstance(b, dict):
        return [key for key in a if _digest(a.get(key)) != _digest(b.get(key))][:5]
    return [] if _digest(a) == _digest(b) else ["observation"]


def _digest(value: Any) -> str:
    def jsonable(item: Any) -> Any:
        if hasattr(item, "tolist"):
            return item.tolist()
        return repr(item)

    return hashlib.sha256(json.dumps(value, sort_keys=True, default=jsonable).encode()).hexdigest()


# -- what the server's own schema refuses ---------------------------------------------------------

#: A value of another JSON type for each type, and what it is.
_WRONG = {"integer": ("not an integer", "a string"), "number": ("not a number", "a string"),
          "string": (12345, "an integer"), "boolean": ("not a boolean", "a string"),
          "array": ("not an array", "a string"), "object": ("not an object", "a string")}


def outside_schema(schema: Mapping[str, Any], valid: Mapping[str, Any]) -> list[tuple[str, dict]]:
    """``(name, action)`` pairs the action schema of a stock server's ``/schema`` refuses, each
    the action object ``valid`` (one the server takes) with one thing changed: a required field
    left out, a field of the wrong JSON type, a value outside its ``enum`` or past its
    ``minimum`` / ``maximum``, an unknown key (pydantic's models forbid extra keys).

        >>> action = {"type": "object", "required": ["column"], "additionalProperties": False,
        ...           "properties": {"column": {"type": "integer", "minimum": 0, "maximum": 6}}}
        >>> [name for name, _ in outside_schema(action, {"column": 3})]  # doctest: +NORMALIZE_WHITESPACE
        ['column left out', "column: 'not an integer' (a string)", 'column: -1 (below its minimum 0)',
         'column: 7 (above its maximum 6)', 'an unknown key']
    """
    defs = schema.get("$defs") or {}
    properties = schema.get("properties") or {}
    found: list[tuple[str, dict]] = []
    for key in schema.get("required") or []:
        found.append((f"{key} left out", {k: v for k, v in valid.items() if k != key}))
    for key, prop in properties.items():
        if key == "metadata" or key not in valid:
            continue
        resolved = _resolved(prop, defs)
        kind = resolved.get("type")
        if isinstance(kind, str) and kind in _WRONG:
            wrong, what = _WRONG[kind]
            found.append((f"{key}: {wrong!r} ({what})", {**valid, key: wrong}))
        if isinstance(resolved.get("enum"), list) and all(isinstance(v, str) for v in resolved["enum"]):
            outside = "NOT_" + "_".join(resolved["enum"])[:40]
            found.append((f"{key}: {outside!r} (not one of its enum)", {**valid, key: outside}))
        for bound, step, words in (("minimum", -1, "below its minimum"), ("maximum", 1, "above its maximum")):
            limit = resolved.get(bound)
            if isinstance(limit, (int, float)) and not isinstance(limit, bool):
                value = limit + step if kind == "integer" else limit + step * max(1.0, abs(limit))
                found.append((f"{key}: {value:g} ({words} {limit:g})", {**valid, key: value}))
    if schema.get("additionalProperties") is False:
        found.append(("an unknown key", {**valid, "openenv_gym_unknown_field": 1}))
    return found


def _resolved(prop: Any, defs: Mapping[str, Any]) -> Mapping[str, Any]:
    if isinstance(prop, Mapping) and isinstance(prop.get("$ref"), str):
        target = defs.get(prop["$ref"].rsplit("/", 1)[-1])
        if isinstance(target, Mapping):
            return {**target, **{k: v for k, v in prop.items() if k != "$ref"}}
    return prop if isinstance(prop, Mapping) else {}
