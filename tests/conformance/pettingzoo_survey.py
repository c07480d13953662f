"""PettingZoo's test utilities on every PettingZoo env that installs here, each one run on
the env itself (the control) and over the wire, on :class:`~openenv_gym.RemoteAECEnv` /
:class:`~openenv_gym.RemoteParallelEnv` clients of servers on 127.0.0.1.

Each (env, configuration) runs in fresh interpreters, one for the local env and one for
the remote: pygame, the ALE and the like keep process-wide state, and one env's crash or
hang must not take the next one with it. The configurations are the ones the envs' own
projects run these utilities on (PettingZoo's ``test/all_parameter_combs_test.py``, MPE2's,
and MAgent's from before it left PettingZoo), so a failure here is one those projects would
see too, or one of ours: a utility that fails over the wire and passes on the local env.

    python -m tests.conformance.pettingzoo_survey                       # the table, printed
    python -m tests.conformance.pettingzoo_survey --write docs/conformance.md
    python -m tests.conformance.pettingzoo_survey --only 'classic/' --json /tmp/survey.json

``tests/conformance/test_pettingzoo.py`` runs the same :func:`run_config` on a subset in the
README suite. This module imports neither PettingZoo nor the envs until a child process
runs one (:func:`child_main`), so the parent stays light and its import is cheap.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import importlib
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
import traceback
import warnings
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

#: The repository root: children import this module from it, whatever their working directory.
ROOT = Path(__file__).resolve().parents[2]
BEGIN = "<!-- pettingzoo-survey:begin -->"
END = "<!-- pettingzoo-survey:end -->"

#: The utilities, in the order a child runs them.
UTILITIES = (
    "api_test",
    "parallel_api_test",
    "seed_test",
    "parallel_seed_test",
    "max_cycles_test",
    "state_test",
    "render_test",
)
SIDES = ("local", "remote")
#: Seconds one utility may take on one side before its child is ended (the survey's default).
UTILITY_TIMEOUT = 300.0
#: Seconds a child may take to import its env and find which utilities apply.
STARTUP_TIMEOUT = 60.0
#: What the children run with: no window, no sound, one BLAS thread (two children share two
#: cores), and every thread's Python stack in the log when a child crashes.
CHILD_ENV = {
    "SDL_VIDEODRIVER": "dummy",
    "SDL_AUDIODRIVER": "dummy",
    "PYGAME_HIDE_SUPPORT_PROMPT": "1",
    "OMP_NUM_THREADS": "1",
    "PYTHONFAULTHANDLER": "1",
}


# --- the configurations ------------------------------------------------------------------


@dataclass(frozen=True)
class Config:
    """One env and the keyword arguments it is built with.

    ``source`` says whose tests the configuration comes from. Atari games are built with
    ``auto_rom_install_path`` pointing at the ROMs that ale-py ships (see
    :meth:`build_kwargs`): PettingZoo's tests install ROMs with AutoROM, which downloads
    them, and nothing outside the package registries is reachable here.
    """

    module: str
    kwargs: tuple[tuple[str, Any], ...] = ()
    source: str = "PettingZoo's tests"

    @property
    def env(self) -> str:
        """``family/name``: ``classic/chess_v6``, ``mpe2/simple_v3``, ``magent2/battle_v4``."""
        parts = self.module.split(".")
        family = parts[1] if parts[0] == "pettingzoo" else parts[0]
        return f"{family}/{parts[-1]}"

    @property
    def args(self) -> str:
        """The keyword arguments as a short string (``num_players=3,max_cycles=50``)."""
        return ",".join(f"{k}={v}" for k, v in self.kwargs)

    @property
    def id(self) -> str:
        """Unique among :data:`CONFIGS`: the env and its arguments."""
        return f"{self.env}[{self.args}]" if self.kwargs else self.env

    def build_kwargs(self) -> dict[str, Any]:
        """The arguments the env is built with: :attr:`kwargs`, and for an Atari game the
        ROM directory ale-py ships (multi-agent-ale-py ships none)."""
        kwargs = dict(self.kwargs)
        if self.module.startswith("pettingzoo.atari."):
            with contextlib.suppress(ImportError):
                import ale_py

                kwargs.setdefault("auto_rom_install_path", str(Path(ale_py.__file__).parent / "roms"))
        return kwargs


def _configs(source: str, prefix: str, table: Sequence[tuple[str, dict[str, Any]]]) -> list[Config]:
    return [Config(f"{prefix}.{name}", tuple(kwargs.items()), source) for name, kwargs in table]


_MC = {"max_cycles": 50}
#: PettingZoo 1.27's test/all_parameter_combs_test.py, family by family.
_ATARI: list[tuple[str, dict[str, Any]]] = [
    *((name, _MC) for name in (
        "space_war_v2", "quadrapong_v4", "basketball_pong_v3", "wizard_of_wor_v3", "ice_hockey_v2",
        "pong_v3", "surround_v2", "entombed_competitive_v3", "flag_capture_v2", "entombed_cooperative_v3",
        "tennis_v3", "warlords_v3", "mario_bros_v3", "joust_v3", "foozpong_v3", "video_checkers_v4",
        "othello_v3", "double_dunk_v3", "volleyball_pong_v3", "boxing_v2",
    )),
    *((name, {"num_players": 4, **_MC}) for name in (
        "basketball_pong_v3", "pong_v3", "foozpong_v3", "volleyball_pong_v3",
    )),
    ("boxing_v2", {"obs_type": "grayscale_image", **_MC}),
    ("boxing_v2", {"obs_type": "ram", **_MC}),
    ("combat_plane_v2", {"game_version": "jet", **_MC}),
    ("combat_plane_v2", {"guided_missile": True, **_MC}),
    ("combat_tank_v2", {"has_maze": True, **_MC}),
    ("combat_tank_v2", {"is_invisible": True, **_MC}),
    ("combat_tank_v2", {"billiard_hit": True, **_MC}),
    ("maze_craze_v3", {"game_version": "race", **_MC}),
    ("maze_craze_v3", {"game_version": "capture", **_MC}),
    ("maze_craze_v3", {"visibilty_level": 1, **_MC}),  # PettingZoo's spelling of the argument
    ("maze_craze_v3", {"visibilty_level": 3, **_MC}),
    ("space_invaders_v2", {
        "alternating_control": True, "moving_shields": True, "zigzaging_bombs": True,
        "fast_bomb": True, "invisible_invaders": True, **_MC,
    }),
]
_BUTTERFLY: list[tuple[str, dict[str, Any]]] = [
    ("cooperative_pong_v6", _MC),
    ("cooperative_pong_v6", {"bounce_randomness": True, **_MC}),
    ("knights_archers_zombies_v11", _MC),
    ("knights_archers_zombies_v11", {"spawn_delay": 50, **_MC}),
    ("knights_archers_zombies_v11", {"num_knights": 4, "num_archers": 5, **_MC}),
    ("knights_archers_zombies_v11", {"killable_knights": False, "killable_archers": False, **_MC}),
    *(("knights_archers_zombies_v11", {"obs_method": method, **_MC})
      for method in ("image", "vector", "vector-sequence", "vector-masked")),
    ("knights_archers_zombies_v11", {"max_cycles": 100}),
    ("knights_archers_zombies_v11", {"max_zombies": 2, "max_arrows": 60, **_MC}),
    ("pistonball_v6", _MC),
    ("pistonball_v6", {"n_pistons": 30, **_MC}),
    ("pistonball_v6", {"continuous": False, **_MC}),
    ("pistonball_v6", {"random_drop": False, "random_rotate": False, **_MC}),
]
_CLASSIC: list[tuple[str, dict[str, Any]]] = [
    ("connect_four_v3", {}),
    ("rps_v2", {}),
    ("chess_v6", {}),
    ("tictactoe_v3", {}),
    ("leduc_holdem_v4", {}),
    ("texas_holdem_v4", {"num_players": 3}),
    ("texas_holdem_v4", {"num_players": 4}),
    ("texas_holdem_no_limit_v6", {}),
    ("texas_holdem_no_limit_v6", {"num_players": 3}),
    ("texas_holdem_no_limit_v6", {"num_players": 4}),
    ("go_v5", {"board_size": 13, "komi": 2.5}),
    ("go_v5", {"board_size": 9, "komi": 0.0}),
    ("hanabi_v5", {}),
    ("hanabi_v5", {"colors": 3}),
    ("hanabi_v5", {"ranks": 3}),
    ("hanabi_v5", {"players": 4}),
    ("hanabi_v5", {"max_information_tokens": 3}),
    ("hanabi_v5", {"max_life_tokens": 2}),
    ("hanabi_v5", {
        "colors": 5, "ranks": 3, "players": 4, "hand_size": 5, "max_information_tokens": 3, "max_life_tokens": 2,
    }),
    ("hanabi_v5", {"observation_type": "minimal"}),
    ("hanabi_v5", {"observation_type": "seer"}),
    ("hanabi_v5", {"random_start_player": True}),
]
_SISL: list[tuple[str, dict[str, Any]]] = [
    ("multiwalker_v9", {"n_walkers": 10, **_MC}),
    ("multiwalker_v9", {"shared_reward": False, **_MC}),
    ("multiwalker_v9", {"terminate_on_fall": False, **_MC}),
    ("multiwalker_v9", {"terminate_on_fall": False, "remove_on_fall": False, **_MC}),
    ("pursuit_v5", _MC),
    ("pursuit_v5", {"x_size": 8, "y_size": 19, **_MC}),
    ("pursuit_v5", {"shared_reward": True, **_MC}),
    ("pursuit_v5", {"n_evaders": 5, "n_pursuers": 16, **_MC}),
    ("pursuit_v5", {"obs_range": 15, **_MC}),
    ("pursuit_v5", {"n_catch": 3, **_MC}),
    ("pursuit_v5", {"freeze_evaders": True, **_MC}),
]
_CONTINUOUS = {"continuous_actions": True}
#: MPE2 1.1's test/all_parameter_combs_test.py: its parameter combinations, then its partial
#: observability ones (the ``num_*_neighbors`` arguments).
_MPE2: list[tuple[str, dict[str, Any]]] = [
    ("collect_treasure_v1", _MC),
    ("collect_treasure_v1", {"num_collectors": 4, "num_deposits": 2, "num_treasures": 4, **_MC}),
    ("collect_treasure_v1", {**_CONTINUOUS, **_MC}),
    ("collect_treasure_v1", {"num_collectors": 3, "num_deposits": 1, "num_treasures": 3, **_CONTINUOUS, **_MC}),
    *((name, extra | _MC) for name in ("simple_v3", "simple_push_v3", "simple_crypto_v3", "simple_speaker_listener_v4")
      for extra in ({}, _CONTINUOUS)),
    ("simple_adversary_v3", {"N": 4, **_MC}),
    ("simple_reference_v3", {"local_ratio": 0.2, **_MC}),
    *((name, extra | _MC) for name in ("simple_formation_v1", "simple_line_v1") for extra in (
        {}, {"N": 3}, {"N": 6}, {"N": 4, **_CONTINUOUS}, {"N": 4, "terminate_on_success": True},
    )),
    ("simple_spread_v3", {"N": 5, **_MC}),
    *(("simple_tag_v3", sizes | extra | _MC) for extra in ({}, _CONTINUOUS) for sizes in (
        {"num_good": 5, "num_adversaries": 10, "num_obstacles": 4},
        {"num_good": 1, "num_adversaries": 1, "num_obstacles": 1},
    )),
    *(("simple_world_comm_v3", sizes | extra | _MC) for extra in ({}, _CONTINUOUS) for sizes in (
        {"num_good": 5, "num_adversaries": 10, "num_obstacles": 4, "num_food": 3},
        {"num_good": 1, "num_adversaries": 1, "num_obstacles": 1, "num_food": 1},
    )),
    ("simple_adversary_v3", {"N": 4, **_CONTINUOUS, **_MC}),
    ("simple_reference_v3", {"local_ratio": 0.2, **_CONTINUOUS, **_MC}),
    ("simple_spread_v3", {"N": 5, **_CONTINUOUS, **_MC}),
    # partial observability
    ("simple_tag_v3", {"num_good": 1, "num_adversaries": 3, "num_obstacles": 2,
                       "num_agent_neighbors": 2, "num_landmark_neighbors": 1, **_MC}),
    ("simple_tag_v3", {"num_good": 1, "num_adversaries": 3, "num_obstacles": 2,
                       "num_agent_neighbors": 100, "num_landmark_neighbors": 100, **_MC}),
    ("simple_tag_v3", {"num_good": 2, "num_adversaries": 4, "num_obstacles": 3, "num_agent_neighbors": 2, **_MC}),
    ("simple_tag_v3", {"num_good": 1, "num_adversaries": 3, "num_obstacles": 2, "num_agent_neighbors": 2,
                       "num_landmark_neighbors": 1, **_CONTINUOUS, **_MC}),
    ("simple_spread_v3", {"N": 5, "num_agent_neighbors": 2, "num_landmark_neighbors": 2, **_MC}),
    ("simple_spread_v3", {"N": 4, "num_landmark_neighbors": 2, **_MC}),
    ("simple_spread_v3", {"N": 5, "num_agent_neighbors": 2, "num_landmark_neighbors": 2, **_CONTINUOUS, **_MC}),
    ("simple_spread_v3", {"N": 3, "num_agent_neighbors": 100, "num_landmark_neighbors": 100, **_MC}),
    ("simple_adversary_v3", {"N": 2, "num_agent_neighbors": 2, "num_landmark_neighbors": 1, **_MC}),
    ("simple_adversary_v3", {"N": 3, "num_agent_neighbors": 2, **_MC}),
]
#: MAgent2's own tests run none of these utilities: these are the configurations PettingZoo
#: ran them on before MAgent left it (PettingZoo 1.22's all_parameter_combs_test.py), the
#: small maps; gather_v5, which that list did not have, at its defaults (``_DEFAULTS``).
_MAGENT2: list[tuple[str, dict[str, Any]]] = [
    ("adversarial_pursuit_v4", {"map_size": 15}),
    ("battle_v4", {"map_size": 15}),
    ("battlefield_v5", {"map_size": 46}),
    ("combined_arms_v6", {"map_size": 16}),
    ("tiger_deer_v4", {"map_size": 15}),
]
_DEFAULTS: list[tuple[str, dict[str, Any]]] = [("gather_v5", {})]

CONFIGS: tuple[Config, ...] = (
    *_configs("PettingZoo's tests", "pettingzoo.atari", _ATARI),
    *_configs("PettingZoo's tests", "pettingzoo.butterfly", _BUTTERFLY),
    *_configs("PettingZoo's tests", "pettingzoo.classic", _CLASSIC),
    *_configs("PettingZoo's tests", "pettingzoo.sisl", _SISL),
    *_configs("MPE2's tests", "mpe2", _MPE2),
    *_configs("PettingZoo 1.22's tests", "magent2.environments", _MAGENT2),
    *_configs("the env's defaults: no project's tests run it", "magent2.environments", _DEFAULTS),
)
BY_ID: dict[str, Config] = {config.id: config for config in CONFIGS}
assert len(BY_ID) == len(CONFIGS), "two configurations share an id"


# --- the child: one side of one configuration ----------------------------------------------


class LocalModule:
    """An env module whose ``env`` / ``parallel_env`` build with the configuration's
    arguments, which a call's own arguments override (``max_cycles_test`` passes
    ``max_cycles=4``, ``render_test`` a render mode)."""

    def __init__(self, module: ModuleType, kwargs: dict[str, Any]) -> None:
        self.module = module
        self.kwargs = kwargs

    def env(self, **kwargs: Any) -> Any:
        return self.module.env(**{**self.kwargs, **kwargs})

    def parallel_env(self, **kwargs: Any) -> Any:
        return self.module.parallel_env(**{**self.kwargs, **kwargs})


class OverTheWire(LocalModule):
    """The same module, its games on servers of their own: each call serves the module's
    factory (``env`` for an AEC client, ``parallel_env`` for a parallel one, as a local
    test would build them) with the call's arguments on 127.0.0.1 and returns a client.

    ``render_mode="human"`` is served without a render mode: servers refuse human
    rendering (a window no client sees), and a client without one renders ``None``, which
    is what ``render_test`` expects of ``"human"``. Sessions use msgpack: a state or a
    frame of several hundred kilobytes is one binary frame, not a JSON list."""

    def __init__(self, module: ModuleType, kwargs: dict[str, Any], stack: contextlib.ExitStack) -> None:
        super().__init__(module, kwargs)
        self._stack = stack

    def _serve(self, factory: Callable[..., Any], kwargs: dict[str, Any]) -> str:
        import openenv_gym

        kwargs = {**self.kwargs, **kwargs}
        if kwargs.get("render_mode") == "human":
            kwargs["render_mode"] = None
        return self._stack.enter_context(openenv_gym.local_server(functools.partial(factory, **kwargs), max_sessions=8))

    def env(self, **kwargs: Any) -> Any:
        import openenv_gym

        client = openenv_gym.RemoteAECEnv(self._serve(self.module.env, kwargs), encoding="msgpack")
        self._stack.callback(client.close)
        return client

    def parallel_env(self, **kwargs: Any) -> Any:
        import openenv_gym

        client = openenv_gym.RemoteParallelEnv(self._serve(self.module.parallel_env, kwargs), encoding="msgpack")
        self._stack.callback(client.close)
        return client


def applicable(module: ModuleType, kwargs: dict[str, Any]) -> dict[str, str | None]:
    """Which utilities apply to the env, found on the env itself: ``None`` for one that
    applies, else why not. The local side finds them and the remote side is given them
    (run at the same time, it finds them the same way), so both run the same utilities.

    Parallel utilities need ``parallel_env``; ``max_cycles_test`` an env that takes
    ``max_cycles`` (it builds with it); ``state_test`` a ``state()`` that does not raise
    ``NotImplementedError`` (AECEnv's default) and a parallel env to compare;
    ``render_test`` render modes in the metadata.
    """
    reasons: dict[str, str | None] = dict.fromkeys(UTILITIES)
    parallel = hasattr(module, "parallel_env")
    if not parallel:
        for name in ("parallel_api_test", "parallel_seed_test"):
            reasons[name] = "no parallel_env"
    try:
        module.env(**{**kwargs, "max_cycles": 4}).close()
    except TypeError:
        reasons["max_cycles_test"] = "takes no max_cycles"
    env = module.env(**kwargs)
    env.reset(seed=0)
    try:
        env.state()
    except NotImplementedError:
        reasons["state_test"] = "no state()"
    except Exception:  # a state() that is there and broken: state_test shows how
        pass
    if not parallel:  # max_cycles_test plays a parallel env too; state_test compares with one
        for name in ("max_cycles_test", "state_test"):
            reasons[name] = reasons[name] or "no parallel_env"
    if not env.metadata.get("render_modes"):
        reasons["render_test"] = "no render modes"
    env.close()
    return reasons


def _runs() -> dict[str, Callable[[LocalModule], None]]:
    """How each utility runs on a module stand-in, with the cycles PettingZoo's tests give it."""
    from pettingzoo.test import (
        api_test,
        max_cycles_test,
        parallel_api_test,
        parallel_seed_test,
        render_test,
        seed_test,
        state_test,
    )

    return {
        "api_test": lambda m: api_test(m.env(), num_cycles=1000),
        "parallel_api_test": lambda m: parallel_api_test(m.parallel_env(), num_cycles=1000),
        "seed_test": lambda m: seed_test(m.env, num_cycles=500),
        "parallel_seed_test": lambda m: parallel_seed_test(m.parallel_env, num_cycles=500),
        "max_cycles_test": lambda m: max_cycles_test(m),
        "state_test": lambda m: state_test(m.env(), m.parallel_env(), num_cycles=10),
        "render_test": lambda m: render_test(lambda render_mode: m.env(render_mode=render_mode)),
    }


def _record(out: Path, **event: Any) -> None:
    with out.open("a") as f:
        f.write(json.dumps(event) + "\n")
        f.flush()
        os.fsync(f.fileno())


def _error(exc: BaseException) -> dict[str, str]:
    message = " ".join(str(exc).split())
    return {
        "error": f"{type(exc).__name__}: {message}"[:400],
        "traceback": "".join(traceback.format_exception(exc)[-6:])[-3000:],
    }


def child_main(
    config_id: str, side: str, utilities: Sequence[str], out: Path, reasons: dict[str, str | None] | None = None
) -> int:
    """Run ``utilities`` on one side of one configuration, one JSON line per event in
    ``out``: ``ready`` (which apply), ``start`` before each, ``result`` after each. The
    parent reads them as they come, so a utility that hangs or crashes the process is
    known by name, and the parent starts a new child for the ones after it.

    ``reasons`` are :func:`applicable`'s, found by the local side: given them, a remote
    child builds no env in its own process (pygame's state stays the servers')."""
    warnings.simplefilter("ignore")  # the checkers' style advice (all-zero observations, ...)
    config = BY_ID[config_id]
    kwargs = config.build_kwargs()
    try:
        module = importlib.import_module(config.module)
    except ImportError as exc:
        _record(out, event="ready", installed=False, **_error(exc))
        return 0
    if reasons is None:
        try:
            reasons = applicable(module, kwargs)
        except ImportError as exc:  # what the env imports when it is built (hanabi's open_spiel)
            _record(out, event="ready", installed=False, **_error(exc))
            return 0
        except Exception as exc:  # the env does not build: every utility fails with why
            _record(out, event="ready", installed=True, applicable=dict.fromkeys(UTILITIES))
            for name in utilities:
                _record(out, event="result", utility=name, status="fail", seconds=0.0, **_error(exc))
            return 0
    _record(out, event="ready", installed=True, applicable=reasons)
    runs = _runs()
    for name in utilities:
        if reasons[name] is not None:
            _record(out, event="result", utility=name, status="n/a", detail=reasons[name], seconds=0.0)
            continue
        _record(out, event="start", utility=name)
        began = time.monotonic()
        try:  # the utility, then closing its clients and servers: a failure of either is a result
            with contextlib.ExitStack() as stack:
                stand_in = OverTheWire(module, kwargs, stack) if side == "remote" else LocalModule(module, kwargs)
                runs[name](stand_in)
        except Exception as exc:
            result = {"status": "fail", **_error(exc)}
        else:
            result = {"status": "pass"}
        _record(out, event="result", utility=name, seconds=round(time.monotonic() - began, 2), **result)
    return 0


# --- the parent: children, bounded in time ------------------------------------------------


@dataclass
class Outcome:
    """One utility on one side: ``pass``, ``fail``, ``n/a``, ``timeout``, ``crash`` (the
    process died in it) or ``not run`` (a child that never got to it)."""

    status: str
    detail: str = ""
    seconds: float = 0.0
    traceback: str = ""


@dataclass
class SideRun:
    """Every utility on one side of a configuration, and how long the side took."""

    side: str
    installed: bool = True
    missing: str = ""
    outcomes: dict[str, Outcome] = field(default_factory=dict)
    seconds: float = 0.0
    children: int = 0
    log: str = ""
    applicable: dict[str, str | None] = field(default_factory=dict)


@dataclass
class ConfigRun:
    """Both sides of one configuration."""

    config: Config
    sides: dict[str, SideRun]

    @property
    def installed(self) -> bool:
        return all(run.installed for run in self.sides.values())

    def ours(self) -> dict[str, Outcome]:
        """The utilities that fail over the wire and pass on the local env: our bugs."""
        local, remote = self.sides.get("local"), self.sides.get("remote")
        if local is None or remote is None:
            return {}
        return {
            name: outcome for name, outcome in remote.outcomes.items()
            if outcome.status not in ("pass", "n/a") and name in local.outcomes and local.outcomes[name].status == "pass"
        }


def child_environment() -> dict[str, str]:
    """This process's environment for a child: the repository on ``PYTHONPATH`` (the
    child imports this module), and :data:`CHILD_ENV`."""
    path = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p)
    return {**os.environ, **CHILD_ENV, "PYTHONPATH": path}


def _read_events(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    events = []
    for line in path.read_text().splitlines():
        with contextlib.suppress(json.JSONDecodeError):  # a line the child was writing when it died
            events.append(json.loads(line))
    return events


def _end(process: subprocess.Popen[bytes]) -> None:
    """End a child and its process group (it leads one of its own), then reap it."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGKILL)
    process.wait()


def run_side(
    config: Config,
    side: str,
    *,
    utility_timeout: float = UTILITY_TIMEOUT,
    budget: float | None = None,
    reasons: dict[str, str | None] | None = None,
    utilities: Sequence[str] = UTILITIES,
) -> SideRun:
    """Every applicable utility on one side of ``config``, in child processes.

    One child runs them in turn; a child that runs past ``utility_timeout`` in one
    utility (or :data:`STARTUP_TIMEOUT` before the first) is ended, that utility recorded
    as ``timeout`` (``crash`` if the child died in it), and a new child runs the rest.
    At most one child a utility, each bounded: the side is bounded too, and ``budget``
    bounds it as a whole (what it leaves undone is ``not run``). ``reasons`` (which
    utilities apply) go to the children; without them a child finds them itself.
    ``utilities`` are the ones to run, of :data:`UTILITIES`.
    """
    run = SideRun(side)
    remaining = [name for name in UTILITIES if name in utilities]
    began = time.monotonic()
    spent = began + budget if budget is not None else float("inf")
    logs: list[str] = []
    with tempfile.TemporaryDirectory(prefix="pz-survey-") as tmp:
        while remaining:
            run.children += 1
            out = Path(tmp) / f"events-{run.children}.jsonl"
            log_path = Path(tmp) / f"log-{run.children}.txt"
            command = [
                sys.executable, "-m", "tests.conformance.pettingzoo_survey", "--child", config.id,
                "--side", side, "--utilities", ",".join(remaining), "--out", str(out),
            ]
            reasons = reasons or run.applicable or None  # what an earlier child found
            if reasons is not None:
                command += ["--applicable", json.dumps(reasons)]
            with log_path.open("wb") as log:
                process = subprocess.Popen(
                    command, cwd=tmp, env=child_environment(), stdin=subprocess.DEVNULL,
                    stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
                )
                running: str | None = None
                started = time.monotonic()
                deadline = started + STARTUP_TIMEOUT
                timed_out = False
                seen = 0
                while process.poll() is None:
                    events = _read_events(out)
                    for event in events[seen:]:
                        if event["event"] == "start":
                            started = time.monotonic()
                            running, deadline = event["utility"], started + utility_timeout
                        elif event["event"] == "result":
                            running, deadline = None, time.monotonic() + STARTUP_TIMEOUT
                    seen = len(events)
                    if time.monotonic() > min(deadline, spent):
                        timed_out = True
                        _end(process)
                        break
                    time.sleep(0.1)
            events = _read_events(out)
            logs.append(log_path.read_text(errors="replace")[-4000:])
            for event in events:
                if event["event"] == "ready" and not event["installed"]:
                    run.installed, run.missing = False, event["error"]
                    remaining = []
                elif event["event"] == "ready":
                    run.applicable = event["applicable"]
                elif event["event"] == "start":
                    running = event["utility"]
                elif event["event"] == "result":
                    running = None
                    name = event["utility"]
                    run.outcomes[name] = Outcome(
                        event["status"], event.get("detail") or event.get("error", ""), event["seconds"],
                        event.get("traceback", ""),
                    )
                    remaining.remove(name)
            if not run.installed:
                break
            over_budget = time.monotonic() > spent
            if running is not None:  # the child ended (or was ended) inside a utility
                if timed_out:
                    how = f"over the side's {budget:.0f} s" if over_budget else f"over {utility_timeout:.0f} s"
                    run.outcomes[running] = Outcome("timeout", how, round(time.monotonic() - started, 1))
                else:
                    run.outcomes[running] = Outcome("crash", f"the process died (exit {process.returncode})")
                remaining.remove(running)
            if remaining and (running is None or over_budget):
                # It ended between utilities (nothing more will come of a new child), or
                # the side's time is spent.
                if over_budget:
                    why = f"the side's {budget:.0f} s were spent"
                elif timed_out:
                    why = "the child took too long to start"
                else:
                    why = f"the child ended (exit {process.returncode})"
                for name in remaining:
                    run.outcomes[name] = Outcome("not run", why)
                remaining = []
    run.seconds = round(time.monotonic() - began, 1)
    run.log = "\n".join(logs)[-8000:]
    return run


def run_config(
    config: Config,
    *,
    utility_timeout: float = UTILITY_TIMEOUT,
    budget: float | None = None,
    concurrently: bool = False,
    utilities: Sequence[str] = UTILITIES,
) -> ConfigRun:
    """Both sides of ``config``, each bounded by ``budget`` seconds if given.

    By default the local env goes first (the control), one child at a time, and a
    configuration whose env does not import here is not run over the wire. With
    ``concurrently`` the two sides run at once (two children), and the remote side finds
    for itself which utilities apply: half the wall time where a side waits on a clock
    (``render_test``'s human mode ticks at the env's frame rate). ``utilities`` are the
    ones to run (all by default).
    """
    options: dict[str, Any] = {"utility_timeout": utility_timeout, "budget": budget, "utilities": utilities}
    if concurrently:
        with ThreadPoolExecutor(max_workers=2) as pool:
            futures = {side: pool.submit(run_side, config, side, **options) for side in SIDES}
            return ConfigRun(config, {side: future.result() for side, future in futures.items()})
    runs: dict[str, SideRun] = {}
    reasons = None
    for side in SIDES:
        runs[side] = run_side(config, side, reasons=reasons, **options)
        if not runs[side].installed:
            break
        reasons = runs[side].applicable or None
    return ConfigRun(config, runs)


def survey(
    configs: Sequence[Config],
    *,
    jobs: int = 2,
    utility_timeout: float = UTILITY_TIMEOUT,
    utilities: Sequence[str] = UTILITIES,
    progress: Callable[[ConfigRun], None] | None = None,
) -> list[ConfigRun]:
    """:func:`run_config` on every configuration, ``jobs`` configurations (so children) at
    once, in the order given."""
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        futures = [
            pool.submit(run_config, config, utility_timeout=utility_timeout, utilities=utilities)
            for config in configs
        ]
        results = []
        for future in futures:
            results.append(future.result())
            if progress is not None:
                progress(results[-1])
    return results


# --- the table -------------------------------------------------------------------------------

_MARK = {"pass": "✓", "fail": "✗", "n/a": "–", "timeout": "⏱", "crash": "💥", "not run": "·"}
_SHORT = {
    "api_test": "api", "parallel_api_test": "parallel api", "seed_test": "seed", "parallel_seed_test": "parallel seed",
    "max_cycles_test": "max cycles", "state_test": "state", "render_test": "render",
}


def _cell(run: ConfigRun, name: str) -> str:
    local, remote = run.sides["local"].outcomes.get(name), run.sides.get("remote")
    remote_outcome = remote.outcomes.get(name) if remote else None
    if local is None or remote_outcome is None:
        return ""  # not run (--utilities)
    if local.status == remote_outcome.status == "n/a":
        return "–"
    cell = f"{_MARK[local.status]} {_MARK[remote_outcome.status]}"
    return f"**{cell}**" if name in run.ours() else cell


def _failures(runs: Sequence[ConfigRun]) -> list[str]:
    """One line per distinct failure (side, utility, first line of the error), with the
    configurations it hit."""
    seen: dict[tuple[str, str, str], list[str]] = {}
    for run in runs:
        for side, side_run in run.sides.items():
            for name, outcome in side_run.outcomes.items():
                if outcome.status in ("pass", "n/a"):
                    continue
                detail = re.sub(r"0x[0-9a-f]+|\d+\.\d+", "…", outcome.detail)[:240]
                seen.setdefault((name, side, f"{outcome.status}: {detail}"), []).append(run.config.id)
    lines = []
    for (name, side, detail), ids in sorted(seen.items()):
        where = ", ".join(f"`{i}`" for i in ids[:6]) + (f" and {len(ids) - 6} more" if len(ids) > 6 else "")
        lines.append(f"- `{name}`, {side} ({len(ids)}): {detail.replace('|', '/')} — {where}")
    return lines


def render_table(
    runs: Sequence[ConfigRun], *, wall: float | None = None, jobs: int = 2, replaced: Sequence[str] = ()
) -> str:
    """The results as Markdown: a table of every configuration that installs (each cell
    local then remote), the ones that do not, and every distinct failure. ``replaced``
    are configurations whose rows come from a later run than the wall time's."""
    ran = [run for run in runs if run.installed]
    missing = [run for run in runs if not run.installed]
    head = "| env | configuration | " + " | ".join(_SHORT[name] for name in UTILITIES) + " | seconds (local, remote) |"
    lines = [
        "Each cell: the local env, then over the wire. ✓ pass, ✗ fail, ⏱ timeout, 💥 crash, "
        "– not applicable; **bold**: fails over the wire only (ours).",
        "",
        head,
        "|" + "---|" * (len(UTILITIES) + 3),
    ]
    for run in ran:
        seconds = ", ".join(f"{run.sides[side].seconds:.0f}" for side in SIDES if side in run.sides)
        cells = " | ".join(_cell(run, name) for name in UTILITIES)
        lines.append(f"| `{run.config.env}` | {run.config.args or '(defaults)'} | {cells} | {seconds} |")
    counts = {status: 0 for status in _MARK}
    for run in ran:
        for side_run in run.sides.values():
            for outcome in side_run.outcomes.values():
                counts[outcome.status] += 1
    total = sum(run.sides[side].seconds for run in ran for side in run.sides)
    lines += [
        "",
        f"{len(ran)} configurations of {len({run.config.env for run in ran})} envs ran, "
        + ", ".join(f"{n} {status}" for status, n in counts.items() if n)
        + f" (utility runs, both sides); {len(_ours(runs))} fail over the wire only. "
        + f"Children's time added up: {total:.0f} s"
        + (f"; wall time {wall:.0f} s with {jobs} at once." if wall is not None else "."),
    ]
    if replaced:
        lines[-1] += " Rerun later, their rows from the rerun: " + ", ".join(f"`{i}`" for i in replaced) + "."
    if missing:
        by_error: dict[str, list[str]] = {}
        for run in missing:
            by_error.setdefault(run.sides["local"].missing, []).append(run.config.env)
        lines += ["", "Not installed here (the env does not import):", ""]
        for error, envs in sorted(by_error.items()):
            names = sorted(set(envs))
            lines.append(f"- {error}: {len(envs)} configurations of " + ", ".join(f"`{n}`" for n in names))
    failures = _failures(ran)
    if failures:
        lines += ["", "Failures (utility, side, count): error — configurations:", "", *failures]
    return "\n".join(lines)


def _ours(runs: Sequence[ConfigRun]) -> list[tuple[str, str]]:
    return [(run.config.id, name) for run in runs for name in run.ours()]


def write_doc(path: Path, table: str) -> None:
    """Replace what is between :data:`BEGIN` and :data:`END` in ``path`` with ``table``."""
    text = path.read_text()
    start, end = text.find(BEGIN), text.find(END)
    if start < 0 or end < start:
        raise SystemExit(f"{path} has no {BEGIN} ... {END} markers")
    path.write_text(text[: start + len(BEGIN)] + "\n" + table + "\n" + text[end:])


def _as_json(run: ConfigRun) -> dict[str, Any]:
    return {
        "id": run.config.id,
        "sides": {
            side: {
                "installed": r.installed, "missing": r.missing, "seconds": r.seconds, "children": r.children,
                "outcomes": {name: vars(o) for name, o in r.outcomes.items()}, "log": r.log,
            }
            for side, r in run.sides.items()
        },
    }


def _from_json(data: dict[str, Any]) -> ConfigRun:
    sides = {}
    for side, r in data["sides"].items():
        outcomes = {name: Outcome(**o) for name, o in r["outcomes"].items()}
        sides[side] = SideRun(side, r["installed"], r["missing"], outcomes, r["seconds"], r["children"], r["log"])
    return ConfigRun(BY_ID[data["id"]], sides)


def _write_json(path: Path, runs: Sequence[ConfigRun], wall: float | None = None, jobs: int | None = None) -> None:
    data = {"wall": wall, "jobs": jobs, "runs": [_as_json(r) for r in runs]}
    path.write_text(json.dumps(data, indent=1))


def _read_json(paths: Sequence[Path]) -> tuple[list[ConfigRun], float | None, int | None, list[str]]:
    """The runs of ``--json`` files, later files' runs of a configuration replacing the
    earlier ones (a rerun of a few configurations after a fix), with the first file's wall
    time and jobs, and the ids that were replaced."""
    runs: dict[str, ConfigRun] = {}
    replaced: list[str] = []
    wall = jobs = None
    for index, path in enumerate(paths):
        data = json.loads(path.read_text())
        if isinstance(data, list):  # the format before wall times were kept
            data = {"wall": None, "jobs": None, "runs": data}
        if index == 0:
            wall, jobs = data["wall"], data["jobs"]
        for item in data["runs"]:
            if item["id"] in runs:
                replaced.append(item["id"])
            runs[item["id"]] = _from_json(item)
    return list(runs.values()), wall, jobs, replaced


@contextlib.contextmanager
def _progress_printer(count: int, json_path: Path | None) -> Iterator[Callable[[ConfigRun], None]]:
    """A line on stderr per configuration done, and the JSON so far rewritten (a long
    survey that is stopped keeps what it found)."""
    done: list[ConfigRun] = []
    began = time.monotonic()

    def show(run: ConfigRun) -> None:
        done.append(run)
        if json_path is not None:
            _write_json(json_path, done)
        if not run.installed:
            state = "not installed"
        else:
            state = " ".join(
                f"{_SHORT[n].replace(' ', '_')}={_cell(run, n).replace(' ', '/')}" for n in UTILITIES
            )
        elapsed = time.monotonic() - began
        print(f"[{len(done)}/{count} {elapsed:.0f}s] {run.config.id}: {state}", file=sys.stderr, flush=True)

    yield show


def main(argv: Sequence[str] | None = None) -> int:
    """The survey's command line; also the children's (``--child``)."""
    parser = argparse.ArgumentParser(
        prog="python -m tests.conformance.pettingzoo_survey",
        description="PettingZoo's test utilities on every PettingZoo env here, locally and over the wire.",
    )
    parser.add_argument("--write", type=Path, help="write the table between the survey markers of this Markdown file")
    parser.add_argument("--json", type=Path, help="write every outcome (tracebacks, logs) to this file")
    parser.add_argument(
        "--from-json", type=Path, nargs="+",
        help="make the table from earlier --json files instead of running (a later file's rows replace an earlier's)",
    )
    parser.add_argument("--only", help="run the configurations whose id matches this regular expression")
    parser.add_argument("--jobs", type=int, default=2, choices=(1, 2), help="configurations at once (default 2)")
    parser.add_argument("--timeout", type=float, default=UTILITY_TIMEOUT, help="seconds per utility and side")
    parser.add_argument("--list", action="store_true", help="list the configurations (and whose they are) and stop")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--side", choices=SIDES, help=argparse.SUPPRESS)
    parser.add_argument("--utilities", help="run these utilities only (comma-separated)")
    parser.add_argument("--out", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--applicable", type=json.loads, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        return child_main(args.child, args.side, args.utilities.split(","), args.out, args.applicable)
    configs = [c for c in CONFIGS if args.only is None or re.search(args.only, c.id)]
    if args.list:
        print("\n".join(f"{c.id}  ({c.source})" for c in configs))
        return 0
    began = time.monotonic()
    replaced: list[str] = []
    jobs = args.jobs
    if args.from_json:
        runs, wall, read_jobs, replaced = _read_json(args.from_json)
        jobs = read_jobs or jobs
    else:
        with _progress_printer(len(configs), args.json) as show:
            utilities = args.utilities.split(",") if args.utilities else UTILITIES
            if unknown := set(utilities) - set(UTILITIES):
                parser.error(f"no such utilities: {', '.join(sorted(unknown))}")
            runs = survey(configs, jobs=args.jobs, utility_timeout=args.timeout, utilities=utilities, progress=show)
        wall = time.monotonic() - began
    if args.json:
        _write_json(args.json, runs, wall, jobs)
    table = render_table(runs, wall=wall, jobs=jobs, replaced=replaced)
    if args.write:
        write_doc(args.write, table)
    else:
        print(table)
    return 1 if _ours(runs) else 0


if __name__ == "__main__":
    sys.exit(main())
