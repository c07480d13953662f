"""Built-in Atari server env: OpenEnv's ``atari_env``, Atari 2600 games on the ALE.

Speaks exactly the upstream schema. The action ``action_id`` indexes the
game's action set (the minimal one, or all 18 with ``full_action_space``);
the action's ``game_name``, ``obs_type`` and ``full_action_space`` fields are
accepted and ignored, as upstream does: the server's configuration decides.
The observation's ``screen`` is the frame flattened (``rgb``: 210 x 160 x 3,
``grayscale``: 210 x 160, ``ram``: the 128 bytes of RAM) with its shape in
``screen_shape``; ``lives``, ``episode_frame_number`` and ``frame_number``
(frames since the env was made, or last reset with a seed) are the ALE's counters. Every observation's
``metadata`` holds ``game_name`` and ``action_meanings`` (the ALE names of
the action set, ``"Action.NOOP"``, ...). A step plays the action for
``frameskip`` frames (fewer when the game ends) and its reward is their sum;
``done`` is the ALE's game over. An ``action_id`` outside the action set is
an ``EXECUTION_ERROR`` naming the valid range; bad field values are
``VALIDATION_ERROR`` entries exactly as pydantic words them upstream.

    >>> env = AtariEnvironment("pong")
    >>> obs = env.reset(seed=0)
    >>> obs.fields["screen_shape"], len(obs.fields["screen"])
    ([210, 160, 3], 100800)
    >>> obs.metadata["action_meanings"][:3]
    ['Action.NOOP', 'Action.FIRE', 'Action.RIGHT']
    >>> env.step({"action_id": 2}).fields["episode_frame_number"]
    4

Differences from upstream, on purpose, none of them in the wire's shape:
``reset(seed=...)`` seeds the ALE's random draws (sticky actions) and starts a
fresh ALE (its ``frame_number`` from 0) so that a seeded episode replays exactly
(upstream ignores the seed; without one, as Gymnasium, the stream goes on), ``reset(episode_id=...)`` is the state's
``episode_id`` (upstream ignores it too), every session has an env of its own
(upstream's server holds one session), and the game is checked when the env
is made, with the names of the games close to a misspelt one.
"""

from __future__ import annotations

import difflib
import math
import re
import uuid
from typing import Any, ClassVar, Literal

import numpy as np

from .._extras import missing_extra

try:
    from ale_py import Action, ALEInterface, LoggerMode, roms
except ImportError as exc:  # pragma: no cover - depends on the install
    raise missing_extra(exc, "the built-in atari server", "atari") from exc

from ..fields import BASE_STATE_DESCRIPTION, FieldsEnv, FieldsObservation, model_schema
from ..protocol.messages import Problems, error_entry, invalid

__all__ = ["AtariEnvironment", "OBS_TYPES"]

#: What ``screen`` holds: the RGB frame, the grayscale frame, or the RAM.
OBS_TYPES = ("rgb", "grayscale", "ram")
ObsType = Literal["rgb", "grayscale", "ram"]

ALEInterface.setLoggerMode(LoggerMode.Error)  # the ALE prints its banner and ROM info otherwise

_PYDANTIC_ERRORS_URL = "https://errors.pydantic.dev/2.14/v/"
# Strings pydantic's lax mode reads as an integer (after stripping whitespace) and as a boolean.
_INTEGER_TEXT = re.compile(r"[+-]?[0-9](?:_?[0-9])*(?:\.0+)?")
_TRUE = frozenset({"1", "on", "t", "true", "y", "yes"})
_FALSE = frozenset({"0", "off", "f", "false", "n", "no"})
_I64 = 2.0**63


class AtariEnvironment(FieldsEnv):
    """An Atari 2600 game of the Arcade Learning Environment, as OpenEnv's atari_env.

    Args:
        game: the ALE's name of the game (``"pong"``, ``"breakout"``,
            ``"space_invaders"``; ``ale_py.roms.get_all_rom_ids()`` lists them).
        obs_type: ``"rgb"``, ``"grayscale"`` or ``"ram"``: what ``screen`` holds.
        full_action_space: all 18 Atari actions instead of the game's minimal set.
        mode, difficulty: the game's mode and difficulty switch (``None``: its default).
        repeat_action_probability: the chance the ALE repeats the previous action
            instead of the one sent (sticky actions).
        frameskip: frames each step plays the action for.

    These are the ``ATARI_*`` variables of upstream's ``server/app.py``
    (``ATARI_GAME`` is ``game``, ``ATARI_REPEAT_ACTION_PROB`` is
    ``repeat_action_probability``), so that
    ``create_app(AtariEnvironment, env_kwargs={"game": "breakout"})`` serves what
    upstream serves with ``ATARI_GAME=breakout``.
    """

    name = "atari_env"
    description = "Atari 2600 games of the Arcade Learning Environment (ALE), ROMs bundled"
    #: As upstream: an env that is made has a game loaded, and answers steps before any reset.
    reset_before_step = False

    action_schema = model_schema(
        "AtariAction",
        {
            "action_id": {"type": "integer"},
            "game_name": {"default": "pong", "type": "string"},
            "obs_type": {"default": "rgb", "enum": list(OBS_TYPES), "type": "string"},
            "full_action_space": {"default": False, "type": "boolean"},
        },
        kind="action",
        required=["action_id"],
        description="Action for Atari environments.\n\nAttributes:\n    action_id: The integer action "
        "ID to take (from legal_actions).\n    game_name: Name of the Atari game (e.g., \"pong\", "
        "\"breakout\", \"space_invaders\").\n    obs_type: Observation type (\"rgb\", \"grayscale\", "
        "or \"ram\").\n    full_action_space: Whether to use full (18 actions) or minimal action space.",
    )
    observation_schema = model_schema(
        "AtariObservation",
        {
            "screen": {"items": {"type": "integer"}, "type": "array"},
            "screen_shape": {"items": {"type": "integer"}, "type": "array"},
            "legal_actions": {"items": {"type": "integer"}, "type": "array"},
            "lives": {"default": 0, "type": "integer"},
            "episode_frame_number": {"default": 0, "type": "integer"},
            "frame_number": {"default": 0, "type": "integer"},
        },
        kind="observation",
        required=["screen", "screen_shape", "legal_actions"],
        description="Observation from Atari environment.\n\nThis represents what the agent sees after "
        "taking an action.\n\nAttributes:\n    screen: Screen observation as a flattened list of "
        "pixels.\n            Shape depends on obs_type:\n            - rgb: [210, 160, 3] "
        "flattened\n            - grayscale: [210, 160] flattened\n            - ram: [128] (RAM "
        "contents)\n    screen_shape: Original shape of the screen before flattening.\n    "
        "legal_actions: List of legal action IDs the agent can take.\n    lives: Number of lives "
        "remaining.\n    episode_frame_number: Frame number within current episode.\n    "
        "frame_number: Total frame number since environment creation.",
    )
    # openenv 0.10's create_app publishes the base State's schema, whatever the env's state
    # holds; the state replies carry AtariState's fields (see state()).
    state_schema = model_schema("State", {}, kind="state", description=BASE_STATE_DESCRIPTION)

    _FIELDS: ClassVar[tuple[str, ...]] = ("metadata", "action_id", "game_name", "obs_type", "full_action_space")

    def __init__(
        self,
        game: str = "pong",
        obs_type: ObsType = "rgb",
        full_action_space: bool = False,
        mode: int | None = None,
        difficulty: int | None = None,
        repeat_action_probability: float = 0.0,
        frameskip: int = 4,
    ) -> None:
        if obs_type not in OBS_TYPES:
            raise ValueError(f"obs_type must be 'rgb', 'grayscale' or 'ram', not {obs_type!r}")
        if not isinstance(full_action_space, bool):
            raise ValueError(f"full_action_space must be True or False, not {full_action_space!r}")
        if isinstance(frameskip, bool) or not isinstance(frameskip, int) or frameskip < 1:
            raise ValueError(f"frameskip must be a positive integer (frames per step), not {frameskip!r}")
        if (
            isinstance(repeat_action_probability, bool)
            or not isinstance(repeat_action_probability, (int, float))
            or not 0.0 <= repeat_action_probability <= 1.0
        ):
            raise ValueError(
                f"repeat_action_probability must be a number from 0 to 1, not {repeat_action_probability!r}"
            )
        self.game = game
        self.obs_type: ObsType = obs_type
        self.full_action_space = full_action_space
        self.mode = mode
        self.difficulty = difficulty
        self.repeat_action_probability = float(repeat_action_probability)
        self.frameskip = frameskip
        self._rom = _rom_path(game)
        self.ale = ALEInterface()
        self._load(np.random.SeedSequence())
        actions = self.ale.getLegalActionSet() if self.full_action_space else self.ale.getMinimalActionSet()
        self._actions: list[Action] = list(actions)
        self._action_meanings = [str(action) for action in self._actions]
        height, width = self.ale.getScreenDims()
        shape = {"rgb": (height, width, 3), "grayscale": (height, width), "ram": (self.ale.getRAMSize(),)}
        self._screen = np.empty(shape[obs_type], dtype=np.uint8)
        self.episode_id: str | None = None
        self.step_count = 0

    def _load(self, seeds: np.random.SeedSequence) -> None:
        """Load the game with the ALE's generator seeded from ``seeds``, in the mode and
        difficulty asked for (the ALE reads its settings when it loads a game)."""
        self.ale.setInt("random_seed", int(seeds.generate_state(1)[0] & 0x7FFFFFFF))
        self.ale.setFloat("repeat_action_probability", self.repeat_action_probability)
        self.ale.loadROM(self._rom)
        for what, value, available in (
            ("mode", self.mode, self.ale.getAvailableModes),
            ("difficulty", self.difficulty, self.ale.getAvailableDifficulties),
        ):
            if value is None:
                continue
            choices = [int(c) for c in available()]
            if isinstance(value, bool) or not isinstance(value, int) or value not in choices:
                raise ValueError(f"{self.game} has no {what} {value!r}; its {what}s are {choices}")
            if what == "mode":
                self.ale.setMode(value)
            else:
                self.ale.setDifficulty(value)

    def reset(self, *, seed: int | None = None, episode_id: str | None = None) -> FieldsObservation:
        """A new game; with ``seed``, the ALE's random draws start afresh from it."""
        if seed is not None:  # a fresh ALE: frame_number too starts again, so the episode replays exactly
            self._load(np.random.SeedSequence(seed))
        self.ale.reset_game()
        self.episode_id = episode_id or str(uuid.uuid4())
        self.step_count = 0
        return self._observe(0.0)

    def step(self, action: dict[str, Any]) -> FieldsObservation:
        """Play ``action["action_id"]`` for ``frameskip`` frames (fewer if the game ends)."""
        action_id = action["action_id"]
        if not 0 <= action_id < len(self._actions):
            raise ValueError(f"Invalid action_id: {action_id}. Valid range: [0, {len(self._actions) - 1}]")
        ale_action = self._actions[action_id]
        reward = 0.0
        for _ in range(self.frameskip):
            reward += self.ale.act(ale_action)
            if self.ale.game_over():
                break
        self.step_count += 1
        return self._observe(reward)

    def state(self) -> dict[str, Any]:
        """The episode's ``episode_id`` and ``step_count`` and the env's configuration
        (upstream's ``AtariState``)."""
        return {
            "episode_id": self.episode_id,
            "step_count": self.step_count,
            "game_name": self.game,
            "obs_type": self.obs_type,
            "full_action_space": self.full_action_space,
            "mode": self.mode,
            "difficulty": self.difficulty,
            "repeat_action_probability": self.repeat_action_probability,
            "frameskip": self.frameskip,
        }

    def _observe(self, reward: float) -> FieldsObservation:
        if self.obs_type == "rgb":
            self.ale.getScreenRGB(self._screen)
        elif self.obs_type == "grayscale":
            self.ale.getScreenGrayscale(self._screen)
        else:
            self.ale.getRAM(self._screen)
        return FieldsObservation(
            {
                "screen": self._screen.ravel().tolist(),  # one C call for the whole frame
                "screen_shape": list(self._screen.shape),
                "legal_actions": list(range(len(self._actions))),
                "lives": self.ale.lives(),
                "episode_frame_number": self.ale.getEpisodeFrameNumber(),
                "frame_number": self.ale.getFrameNumber(),
            },
            reward=reward,
            done=self.ale.game_over(),
            metadata={"game_name": self.game, "action_meanings": list(self._action_meanings)},
        )

    @classmethod
    def parse_action(cls, data: Any) -> dict[str, Any]:
        """``data`` validated as upstream's pydantic ``AtariAction`` validates it (lax mode:
        ``"3"``, ``3.0`` and ``true`` are action ids, ``"yes"`` is ``true``), with pydantic's
        error entries: each field in the model's order, then each unknown key."""
        if not isinstance(data, dict):
            entry = error_entry(["data"], "Input should be a valid dictionary", data, "dict_type")
            raise invalid({**entry, **_pydantic_keys("dict_type")})
        problems = Problems()
        out: dict[str, Any] = {}
        for key in cls._FIELDS:
            if key not in data:
                if key == "action_id":
                    problems.add([key], "Field required", data, "missing", **_pydantic_keys("missing"))
                continue
            try:
                out[key] = _FIELD_CHECKS[key](data[key])
            except _Invalid as exc:
                problems.add([key], exc.msg, data[key], exc.kind, **_pydantic_keys(exc.kind, exc.ctx))
        for key, value in data.items():
            if key not in cls._FIELDS:
                problems.add([key], "Extra inputs are not permitted", value, "extra_forbidden",
                             **_pydantic_keys("extra_forbidden"))
        if problems:
            raise problems.error()
        return out


def _rom_path(game: str) -> str:
    """The bundled ROM of ``game``, or an error naming the games close to it."""
    games = roms.get_all_rom_ids()
    if game not in games:
        snake = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", str(game)).lower()
        close = difflib.get_close_matches(snake, games, n=3, cutoff=0.6)
        hint = f"; did you mean {' or '.join(map(repr, close))}?" if close else ""
        raise ValueError(
            f"the ALE has no game {game!r}{hint} (ale_py.roms.get_all_rom_ids() lists its {len(games)} games)"
        )
    return str(roms.get_rom_path(game))


# -- pydantic's lax validation of AtariAction's fields ---------------------------


class _Invalid(Exception):
    def __init__(self, msg: str, kind: str, ctx: dict[str, Any] | None = None) -> None:
        self.msg, self.kind, self.ctx = msg, kind, ctx


def _pydantic_keys(kind: str, ctx: dict[str, Any] | None = None) -> dict[str, Any]:
    """What pydantic 2.14 writes in a VALIDATION_ERROR entry after ``input``: ``ctx``
    (when the error has one) and ``url``."""
    return {**({} if ctx is None else {"ctx": ctx}), "url": _PYDANTIC_ERRORS_URL + kind}


def _action_id(value: Any) -> int:
    if isinstance(value, (bool, int)):
        return int(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise _Invalid("Input should be a finite number", "finite_number")
        if not value.is_integer():
            raise _Invalid("Input should be a valid integer, got a number with a fractional part", "int_from_float")
        if abs(value) >= _I64:
            raise _Invalid("Unable to parse input string as an integer, exceeded maximum size", "int_parsing_size")
        return int(value)
    if isinstance(value, str):
        text = value.strip()
        if _INTEGER_TEXT.fullmatch(text):
            return int(text.split(".")[0])
        raise _Invalid("Input should be a valid integer, unable to parse string as an integer", "int_parsing")
    raise _Invalid("Input should be a valid integer", "int_type")


def _game_name(value: Any) -> str:
    if not isinstance(value, str):
        raise _Invalid("Input should be a valid string", "string_type")
    return value


def _obs_type(value: Any) -> str:
    if isinstance(value, str) and value in OBS_TYPES:
        return value
    expected = "'rgb', 'grayscale' or 'ram'"
    raise _Invalid(f"Input should be {expected}", "literal_error", {"expected": expected})


def _full_action_space(value: Any) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str):
        if value.lower() in _TRUE:
            return True
        if value.lower() in _FALSE:
            return False
    if isinstance(value, (int, float)) and (isinstance(value, int) or value.is_integer()):
        if value in (0, 1):
            return bool(value)
        raise _Invalid("Input should be a valid boolean, unable to interpret input", "bool_parsing")
    if isinstance(value, str):
        raise _Invalid("Input should be a valid boolean, unable to interpret input", "bool_parsing")
    raise _Invalid("Input should be a valid boolean", "bool_type")


def _metadata(value: Any) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise _Invalid("Input should be a valid dictionary", "dict_type")
    return value


_FIELD_CHECKS = {
    "metadata": _metadata,
    "action_id": _action_id,
    "game_name": _game_name,
    "obs_type": _obs_type,
    "full_action_space": _full_action_space,
}
