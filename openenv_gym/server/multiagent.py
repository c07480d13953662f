"""PettingZoo environments as OpenEnv servers.

``create_app`` accepts a PettingZoo ``AECEnv`` or ``ParallelEnv`` (a factory,
a class, or a module path such as ``"pettingzoo.classic.connect_four_v3"``).
One session is one game with all its agents, served two ways:

- **The seat view on** ``/ws``, for stock OpenEnv clients and LLM trainers:
  the client plays one seat (``reset`` data ``{"agent": "player_1"}``, the
  first agent by default) and the server plays every other seat with an
  opponent policy (:func:`random_opponent` unless ``create_app(...,
  opponent=...)`` says otherwise), the way OpenEnv's own connect4 and
  openspiel envs do. Observations carry ``obs``, ``terminated``,
  ``truncated``, ``info`` plus ``agent``, ``current_player``,
  ``legal_actions`` and ``action_mask``. A seat is never handed over dead:
  when the game ends in the opponents' moves (a poker opponent folds before
  the seat has acted, say), the reply says ``done`` with the seat's reward,
  the ``reset`` reply too (:class:`SeatSession`).
- **The full multi-agent protocol on** ``/agents?api=aec|parallel`` (an
  openenv-gym extension, see ``docs/protocol.md``), which
  :class:`~openenv_gym.RemoteAECEnv` and :class:`~openenv_gym.RemoteParallelEnv`
  speak: every agent's observation, reward, termination, truncation and info.

    >>> from pettingzoo.classic import connect_four_v3
    >>> app = create_app(connect_four_v3.env)                       # doctest: +SKIP
    >>> app = create_app("pettingzoo.classic.connect_four_v3",      # doctest: +SKIP
    ...                  opponent=lambda turn: int(turn.legal_actions[0]))
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

import gymnasium as gym
import numpy as np

from .. import spaces
from ..protocol import WS_MESSAGES, ClientMessage, Reset, ServerMessage, Step, jsonable
from ..protocol import agents as wire
from ..protocol.attributes import ATTRIBUTE_MESSAGES
from .routes import Opening, Route
from .session import EnvHost, Session, check_injection
from .source import EnvSource
from .tools import Position

__all__ = [
    "API",
    "Turn",
    "Opponent",
    "random_opponent",
    "MultiAgentSource",
    "GameSource",
    "SeatEnv",
    "SeatSession",
    "GAME_OVER",
    "AgentsSession",
    "AgentsRoute",
    "is_pettingzoo",
    "action_mask",
    "SEAT_FIELD_SCHEMAS",
]

#: The two PettingZoo APIs.
API = Literal["aec", "parallel"]
#: Opponent moves one seat-view step may take before the server gives up.
MAX_OPPONENT_TURNS = 100_000
#: ``info`` key of a seat-view ``reset`` whose game ended before the seat's first
#: move (Gymnasium's ``reset`` returns no ``done``): ``{"reward": float,
#: "terminated": bool, "truncated": bool}``, how the game ended for the seat.
GAME_OVER = "openenv_gym.game_over"


def is_pettingzoo(obj: Any) -> bool:
    """``True`` for a PettingZoo ``AECEnv`` or ``ParallelEnv`` instance (never imports PettingZoo)."""
    if "pettingzoo" not in sys.modules:
        return False
    from pettingzoo import AECEnv, ParallelEnv

    return isinstance(obj, (AECEnv, ParallelEnv))


def action_mask(observation: Any, info: Any) -> np.ndarray | None:
    """An agent's action mask, by PettingZoo's conventions: ``observation["action_mask"]``
    in a Dict observation, else ``info["action_mask"]``, else ``None``."""
    for holder in (observation, info):
        if isinstance(holder, dict) and holder.get("action_mask") is not None:
            return np.asarray(holder["action_mask"])
    return None


@dataclass
class Turn:
    """What an opponent policy sees when a server-side seat is to move."""

    agent: str
    observation: Any
    action_space: gym.Space
    action_mask: np.ndarray | None
    info: dict

    @property
    def legal_actions(self) -> list[int]:
        """Legal actions of a ``Discrete`` action space (all of them without a mask)."""
        return _legal_actions(self.action_space, self.action_mask) or []


#: A server-side player: the action for one :class:`Turn`.
Opponent = Callable[[Turn], Any]


def random_opponent(turn: Turn) -> Any:
    """Uniformly random over the legal actions (the default opponent).

    Reproducible: the seat view seeds every agent's action space from the
    ``reset`` seed.
    """
    if turn.action_mask is not None:
        return turn.action_space.sample(turn.action_mask.astype(np.int8))
    return turn.action_space.sample()


def _legal_actions(space: gym.Space, mask: np.ndarray | None) -> list[int] | None:
    if not isinstance(space, gym.spaces.Discrete):
        return None
    start = int(space.start)
    if mask is None:
        return list(range(start, start + int(space.n)))
    return [start + int(i) for i in np.flatnonzero(mask)]


def _state_space(probe: Any) -> gym.Space | None:
    """A game's ``state_space``, when it has one (PettingZoo's wrappers raise
    ``AttributeError`` for a game without)."""
    try:
        space = probe.state_space
    except (AttributeError, NotImplementedError):
        return None
    return space if isinstance(space, gym.Space) else None


@dataclass(frozen=True)
class MultiAgentSource:
    """A factory for one PettingZoo game per session, and what every game shares."""

    factory: Callable[[], Any]
    name: str
    native_api: API
    possible_agents: list[str]
    observation_spaces: dict[str, gym.Space]
    action_spaces: dict[str, gym.Space]
    parallelizable: bool
    render_mode: str | None = None
    env_metadata: dict = field(default_factory=dict)
    #: The game's ``state_space`` (``None``: it has no global state); clients
    #: read ``state()`` with a ``call`` message (:mod:`~openenv_gym.protocol.attributes`).
    state_space: gym.Space | None = None
    opponent: Opponent = random_opponent

    @classmethod
    def from_probe(
        cls, factory: Callable[[], Any], probe: Any, name: str, opponent: Opponent | None = None
    ) -> MultiAgentSource:
        from pettingzoo import AECEnv

        agents = list(probe.possible_agents)
        for agent in agents:
            if not isinstance(agent, str):
                raise TypeError(
                    f"{name!r} has the agent id {agent!r}: openenv-gym serves string agent ids "
                    f"(they are JSON object keys on the wire); rename the agents"
                )
        metadata = dict(getattr(probe, "metadata", None) or {})
        return cls(
            factory=factory,
            name=name,
            native_api="aec" if isinstance(probe, AECEnv) else "parallel",
            possible_agents=agents,
            observation_spaces={a: probe.observation_space(a) for a in agents},
            action_spaces={a: probe.action_space(a) for a in agents},
            parallelizable=bool(metadata.get("is_parallelizable", False)),
            render_mode=getattr(probe, "render_mode", None),
            env_metadata=metadata,
            state_space=_state_space(probe),
            opponent=opponent or random_opponent,
        )

    @property
    def apis(self) -> tuple[API, ...]:
        """The APIs ``/agents`` serves: both, the other one through PettingZoo's own
        conversions (``parallel_to_aec``; ``aec_to_parallel`` for parallelizable AEC
        envs, ``turn_based_aec_to_parallel`` for turn-based ones)."""
        return ("aec", "parallel")

    def make(self, api: API) -> Any:
        """Build a game and present it through ``api``."""
        from pettingzoo.utils.conversions import (
            aec_to_parallel,
            parallel_to_aec,
            turn_based_aec_to_parallel,
        )

        env = self.factory()
        if api == self.native_api:
            return env
        if api == "aec":
            return parallel_to_aec(env)
        return aec_to_parallel(env) if self.parallelizable else turn_based_aec_to_parallel(env)

    def describe(self) -> dict:
        """The ``multiagent`` entry of ``/schema``'s ``x-openenv-gym`` object."""
        return {
            "version": wire.AGENTS_VERSION,
            "path": wire.AGENTS_PATH,
            "api": self.native_api,
            "apis": list(self.apis),
            "possible_agents": list(self.possible_agents),
            "observation_spaces": {a: spaces.describe(s) for a, s in self.observation_spaces.items()},
            "action_spaces": {a: spaces.describe(s) for a, s in self.action_spaces.items()},
            "format": spaces.FORMAT,
            "render_mode": self.render_mode,
            "metadata": jsonable(self.env_metadata),
            **({"state_space": spaces.describe(self.state_space)} if self.state_space is not None else {}),
        }

    def seat_spaces(self) -> tuple[gym.Space, gym.Space]:
        """Observation and action space of the seat view (the first agent's)."""
        first = self.possible_agents[0]
        return self.observation_spaces[first], self.action_spaces[first]

    def seats(self) -> list[str]:
        """The agents a stock client can play: those whose spaces are the first agent's."""
        observation_space, action_space = self.seat_spaces()
        return [
            a for a in self.possible_agents
            if self.observation_spaces[a] == observation_space
            and self.action_spaces[a] == action_space
        ]


@dataclass(frozen=True, kw_only=True)
class GameSource(EnvSource):
    """The source of a PettingZoo game: ``/ws`` serves one seat of it
    (:class:`SeatEnv`), ``/agents`` the whole game (:class:`AgentsSession`)."""

    #: The game every session of this source plays.
    game: MultiAgentSource


class SeatEnv(gym.Env):
    """One seat of a PettingZoo game as a Gymnasium env; the other seats play server-side.

    ``reset(options={"agent": "player_1"})`` picks the seat (the first agent
    by default); ``step`` plays the seat's action, then the opponent policy's
    moves for every other agent until the seat is to move again or its game
    is over. The reward is the seat's reward accumulated over all those moves.

    The game may end before the seat's first move (the opponents' moves after
    ``reset`` end it). Gymnasium's ``reset`` cannot say so, so its ``info``
    carries :data:`GAME_OVER` (which :class:`SeatSession` turns into
    ``done=True`` and the seat's reward on the wire), and the next ``step``,
    whatever its action (the seat has no legal one), ends the episode with the
    seat's reward: a Gymnasium loop that steps after every reset gets the
    reward once, with ``terminated``. Any other step after the end is refused.
    """

    def __init__(self, source: MultiAgentSource) -> None:
        self.source = source
        self.game = source.make("aec")
        self.observation_space, self.action_space = source.seat_spaces()
        self.render_mode = source.render_mode
        self.metadata = dict(source.env_metadata)
        self.seat = source.possible_agents[0]
        self._mask: np.ndarray | None = None
        #: The step result that ends a game over before the seat's first move,
        #: until the step that reports it.
        self._ended_at_reset: tuple[Any, float, bool, bool, dict] | None = None
        #: Whether the seat's game is over and reported (no step is left before a reset).
        self._over = True

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        options = dict(options or {})
        seat = options.pop("agent", self.source.possible_agents[0])
        if seat not in self.source.seats():
            raise ValueError(
                f"cannot play seat {seat!r}: choose one of {self.source.seats()} with reset "
                f"data {{'agent': ...}} (other agents have other spaces: use the /agents route)"
            )
        self.seat = seat
        self.game.reset(seed=seed, options=options or None)
        if seed is not None:
            for i, agent in enumerate(self.source.possible_agents):
                self.game.action_space(agent).seed(seed + i)
        obs, reward, terminated, truncated, info = self._advance()
        self._over = False
        self._ended_at_reset = None
        if terminated or truncated:
            self._ended_at_reset = (obs, float(reward), bool(terminated), bool(truncated), info)
            end = {"reward": float(reward), "terminated": bool(terminated), "truncated": bool(truncated)}
            info = {**info, GAME_OVER: end}
        return obs, info

    def step(self, action: Any):
        if self._ended_at_reset is not None:  # the seat's last turn: PettingZoo's step(None) of a dead agent
            result, self._ended_at_reset, self._over = self._ended_at_reset, None, True
            return result
        if self._over:
            raise RuntimeError(
                f"the game of seat {self.seat!r} is over: call reset to start the next one "
                f"(the last reply said done=True)"
            )
        self.game.step(action)
        result = self._advance()
        self._over = bool(result[2] or result[3])
        return result

    def _advance(self) -> tuple[Any, float, bool, bool, dict]:
        """Play the other seats until this seat is to move or its game is over."""
        game, seat = self.game, self.seat
        for _ in range(MAX_OPPONENT_TURNS):
            if seat not in game.agents:  # the env removed the seat without a last turn
                obs = game.observe(seat)
                reward = game._cumulative_rewards.get(seat, 0.0)
                self._mask = None
                return obs, reward, True, False, {}
            agent = game.agent_selection
            obs, reward, terminated, truncated, info = game.last()
            if agent == seat:
                self._mask = action_mask(obs, info)
                return obs, reward, terminated, truncated, info
            if terminated or truncated:
                game.step(None)
                continue
            mask = action_mask(obs, info)
            turn = Turn(agent, obs, game.action_space(agent), mask, info)
            game.step(self.source.opponent(turn))
        raise RuntimeError(f"the opponents played {MAX_OPPONENT_TURNS} moves in a row")

    def seat_fields(self) -> dict:
        """Observation fields of the seat view beyond Gymnasium's (OpenEnv-style turn data)."""
        game = self.game
        legal = _legal_actions(self.action_space, self._mask)
        over = self.seat not in game.agents or game.terminations.get(self.seat) or game.truncations.get(self.seat)
        return {
            "agent": self.seat,
            "current_player": None if over else game.agent_selection,
            "legal_actions": [] if over else legal,
            "action_mask": None if self._mask is None else self._mask.astype(int).tolist(),
        }

    def render(self) -> Any:
        return self.game.render()

    def close(self) -> None:
        self.game.close()


class SeatSession(Session):
    """The session of a seat view (``/ws``, HTTP and MCP): a :class:`Session` whose
    ``reset`` reply says ``done=True``, with the seat's reward, when the game ended
    before the seat's first move (:data:`GAME_OVER` in the reset's ``info``), so a
    stock OpenEnv client never receives a live-looking seat without a legal move."""

    async def _reset(self, reset: Reset) -> ServerMessage:
        reply = await super()._reset(reset)
        position = self.position
        assert position is not None
        end = position.info.get(GAME_OVER) if isinstance(position.info, dict) else None
        if not isinstance(end, dict):
            return reply
        # Rare (the game ended before the seat's first move): the reply is made again, ending.
        self.position = Position(
            position.obs, position.info, bool(end["terminated"]), bool(end["truncated"]), position.text
        )
        return self._observation(
            position.obs, end["reward"], end["terminated"], end["truncated"], position.info, position.text
        )


#: JSON Schemas of the seat-view fields in ``/schema``'s observation.
SEAT_FIELD_SCHEMAS: dict[str, dict] = {
    "agent": {"type": "string", "description": "The agent this client plays"},
    "current_player": {
        "anyOf": [{"type": "string"}, {"type": "null"}],
        "description": "The agent to move (null when the game is over)",
    },
    "legal_actions": {
        "anyOf": [{"type": "array", "items": {"type": "integer"}}, {"type": "null"}],
        "description": "Legal actions of a Discrete action space",
    },
    "action_mask": {
        "anyOf": [{"type": "array", "items": {"type": "integer"}}, {"type": "null"}],
        "description": "PettingZoo's action mask of this agent (null when the env has none)",
    },
}


class AgentsSession(Session):
    """One game on the ``/agents`` route, through the API the client asked for.

    Replies are OpenEnv observation frames whose ``observation`` holds the
    whole game (see ``docs/protocol.md``, multi-agent extension).
    """

    def __init__(self, source: Any, api: API, **kwargs: Any) -> None:
        super().__init__(source, **kwargs)
        self.game: MultiAgentSource = source.game
        self.api = api
        self.build = self._build

    def _build(self) -> Any:
        if self.call.isolated:
            raise TypeError(
                f"the whole-game route {wire.AGENTS_PATH} runs the game in the server's process, and "
                f"this server isolates envs in processes of their own (execution='process'): play a "
                f"seat on /ws"
            )
        if self.api not in self.game.apis:
            raise ValueError(
                f"this game is served through the APIs {list(self.game.apis)}, not "
                f"{self.api!r}: connect to {wire.AGENTS_PATH}?api={self.game.apis[0]}"
            )
        return self.game.make(self.api)

    def toolbox(self) -> None:
        """No MCP tools: a whole game has no one player to act for (play a seat on ``/ws``)."""
        return None

    async def handle(self, message: ClientMessage) -> ServerMessage | None:
        if isinstance(message, Reset):
            return await self._reset_game(message)
        if isinstance(message, Step):
            return await self._step_game(message)
        return await super().handle(message)

    async def _reset_game(self, reset: Reset) -> ServerMessage:
        check_injection(self.source, reset, route=wire.AGENTS_PATH)
        env = self._env()
        result = await self.run(env.reset, seed=reset.seed, options=reset.options)
        self.begin_episode(reset)
        if self.api == "parallel":
            observations, infos = result
            return self._reply(env, {"observations": observations, "infos": infos})
        return self._reply(env, self._aec_snapshot(env))

    async def _step_game(self, step: Step) -> ServerMessage:
        env = self._env()
        spaces_ = self.game.action_spaces
        if self.api == "aec":
            self.require_episode()  # before its first reset, an AEC game has no agent to act
            action = wire.read_aec_step(self.codec, spaces_, step, env.agent_selection)
            await self.run(env.step, action)
            self.step_count += 1
            return self._reply(env, self._aec_snapshot(env))
        actions = wire.read_parallel_step(self.codec, spaces_, step)
        self.require_episode()
        observations, rewards, terminations, truncations, infos = await self.run(env.step, actions)
        self.step_count += 1
        return self._reply(env, {
            "observations": observations, "rewards": rewards, "terminations": terminations,
            "truncations": truncations, "infos": infos,
        })

    @staticmethod
    def _aec_snapshot(env: Any) -> dict:
        agents = list(env.agents)
        observations = {a: env.observe(a) for a in agents}
        selected = env.agent_selection
        if selected not in observations and selected in env.possible_agents:
            # The agent to move after it left (the episode's last step): a local game still
            # answers observe() for it, and wrappers that stack observations ask.
            try:
                observations[selected] = env.observe(selected)
            except Exception:  # noqa: BLE001 - a game that cannot observe a departed agent
                pass  # the client's observe() answers None for it, as before
        return {
            "agent_selection": selected,
            "observations": observations,
            "rewards": dict(env.rewards),
            "cumulative_rewards": dict(env._cumulative_rewards),
            "terminations": dict(env.terminations),
            "truncations": dict(env.truncations),
            "infos": dict(env.infos),
        }

    def _reply(self, env: Any, game: dict) -> ServerMessage:
        return wire.game_observation(self.codec, self.game.observation_spaces, list(env.agents), game)


class AgentsRoute(Route):
    """``/agents?api=aec|parallel``: a whole PettingZoo game per connection
    (with the attribute messages: ``call("state")`` reads the game's state)."""

    path = wire.AGENTS_PATH
    messages = {**WS_MESSAGES, **ATTRIBUTE_MESSAGES}

    def session(self, opening: Opening) -> EnvHost:
        api = opening.query.get("api", "aec")
        return AgentsSession(self.source, api, codec=opening.codec, caller=opening.caller)  # type: ignore[arg-type]
