"""PettingZoo environments whose games run on an openenv-gym server.

:class:`RemoteAECEnv` and :class:`RemoteParallelEnv` are real PettingZoo envs
(they pass ``pettingzoo.test.api_test`` / ``parallel_api_test``) that speak the
multi-agent extension of a server made by ``create_app`` from a PettingZoo env
(route ``/agents``, see ``docs/protocol.md``). Per-agent spaces are exact, and
msgpack frames keep every numpy type.

    >>> import openenv_gym
    >>> from pettingzoo.classic import connect_four_v3
    >>> with openenv_gym.local_server(connect_four_v3.env) as url:     # doctest: +SKIP
    ...     env = openenv_gym.RemoteAECEnv(url)
    ...     env.reset(seed=0)
    ...     for agent in env.agent_iter():
    ...         obs, reward, terminated, truncated, info = env.last()
    ...         action = None if terminated or truncated else \\
    ...             env.action_space(agent).sample(obs["action_mask"])
    ...         env.step(action)
    ...     env.close()
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import gymnasium as gym
import numpy as np
from gymnasium.utils import seeding

from .._extras import missing_extra

try:
    from pettingzoo import AECEnv, ParallelEnv
except ImportError as exc:  # pragma: no cover - depends on the install
    raise missing_extra(exc, "RemoteAECEnv and RemoteParallelEnv", "pettingzoo") from exc

from .. import spaces
from ..errors import OpenEnvGymError, ProtocolMismatchError
from ..protocol import EXTENSION_KEY, WS_REPLIES, Render, RenderReply, Reset, State, StateReply
from ..protocol import agents as wire
from ..protocol.attributes import ATTRIBUTE_REPLIES, Call, read_values
from ..spaces._common import quoted, short_repr
from .connection import http_url
from .native import read_schema
from .options import ConnectOptions
from .pickling import PicklesAsArguments, remembers_arguments
from .session import RemoteSession

if TYPE_CHECKING:
    from typing_extensions import Unpack

    from .options import ConnectKwargs

__all__ = ["RemoteAECEnv", "RemoteParallelEnv"]


class _Game:
    """The client side of one ``/agents`` session: spaces, requests, decoding.

    A multi-agent description this client cannot use (a field missing or of another type, an
    agent without its spaces, spaces it cannot restore or whose bounds would take more than
    ``max_message_bytes`` together) is refused with one
    :class:`~openenv_gym.errors.ProtocolMismatchError` naming the server's ``/schema``.
    """

    def __init__(self, base_url: str, api: str, options: ConnectOptions) -> None:
        self.base_url = http_url(base_url)
        self.api = api
        schema = read_schema(self.base_url, options)
        extension = schema.get(EXTENSION_KEY) if isinstance(schema, dict) else None
        description = extension.get("multiagent") if isinstance(extension, dict) else None
        if not isinstance(description, dict):
            raise ProtocolMismatchError(
                f"{self.base_url} does not serve a PettingZoo env (its /schema has no "
                f"{EXTENSION_KEY}.multiagent entry); use openenv_gym.RemoteEnv for it"
            )
        if description.get("version") != wire.AGENTS_VERSION:
            raise ProtocolMismatchError(
                f"{self.base_url} speaks multi-agent protocol version "
                f"{description.get('version')!r}; this openenv-gym speaks {wire.AGENTS_VERSION} "
                f"(upgrade openenv-gym on one side)"
            )
        where = f"{self.base_url}/schema: its {EXTENSION_KEY}.multiagent"
        apis = _names(description, "apis", where)
        if api not in apis:
            raise ProtocolMismatchError(
                f"{self.base_url} serves its game through {apis}, not {api!r}"
                + (" (an AEC env that is not parallelizable)" if api == "parallel" else "")
            )
        self.description = description
        self.possible_agents: list[str] = _names(description, "possible_agents", where)
        budget = spaces.BoundsBudget(options.max_message_bytes, "max_message_bytes")
        self.observation_spaces = _agent_spaces(description, "observation_spaces", self.possible_agents, budget, where)
        self.action_spaces = _agent_spaces(description, "action_spaces", self.possible_agents, budget, where)
        self.metadata: dict[str, Any] = dict(_entry(description, "metadata", dict, "an object", where, True) or {})
        self.render_mode: str | None = _entry(description, "render_mode", str, "a string", where, True)
        state_space = _entry(description, "state_space", dict, "a space", where, True)
        self.state_space = None if state_space is None else _restored(state_space, budget, f"{where}.state_space")
        path = _entry(description, "path", str, "a path", where)
        self.session: RemoteSession | None = RemoteSession(
            self.base_url, options, path=f"{path}?api={api}", replies={**WS_REPLIES, **ATTRIBUTE_REPLIES},
        )

    def _live(self) -> RemoteSession:
        if self.session is None:
            raise OpenEnvGymError("this remote env is closed; create a new one to reconnect")
        return self.session

    def reset(self, seed: int | None, options: dict | None) -> dict:
        """Reset the game; its decoded state."""
        return self._game(self._live().request(Reset(seed, options=options)))

    def step(self, actions: dict[str, Any]) -> dict:
        """Step the game with ``{agent: action}`` (one agent for the AEC API); its decoded state."""
        session = self._live()
        return self._game(session.request(wire.game_step(session.codec, self.action_spaces, actions, self.api)))

    def _game(self, reply: Any) -> dict:
        return wire.read_game(self._live().codec, self.observation_spaces, reply)

    def render(self) -> Any:
        if self.render_mode is None or self.session is None:
            return None
        reply = self.session.request(Render())
        return reply.decoded_frame() if isinstance(reply, RenderReply) else None

    def game_state(self) -> Any:
        """The game's ``state()``, in its ``state_space``."""
        if self.state_space is None:
            raise NotImplementedError(f"the game served at {self.base_url} has no state() (no state_space)")
        session = self._live()
        (value,) = read_values(session.codec, session.request(Call("state")))  # an array keeps its dtype
        return value

    def state(self) -> dict:
        """The session's episode state on the server (``episode_id``, ``step_count``...)."""
        reply = self._live().request(State())
        assert isinstance(reply, StateReply)
        return reply.state

    def close(self) -> None:
        session, self.session = self.session, None
        if session is not None:
            session.close()


def _entry(description: dict, key: str, kind: type, what: str, where: str, optional: bool = False) -> Any:
    """``description[key]`` if it is of type ``kind`` (or, ``optional``, absent or null:
    ``None``); else a refusal that names the server (``where``) and says it is not ``what``."""
    value = description.get(key)
    if not isinstance(value, kind) and not (optional and value is None):
        raise ProtocolMismatchError(f"{where}.{key} is not {what}: {short_repr(value)}")
    return value


def _names(description: dict, key: str, where: str) -> list[str]:
    """``description[key]``, a list of names (the APIs, the agents)."""
    names = _entry(description, key, list, "a list of names", where)
    if not all(isinstance(name, str) for name in names):
        raise ProtocolMismatchError(f"{where}.{key} is not a list of names: {short_repr(names)}")
    return list(names)


def _agent_spaces(
    description: dict, key: str, agents: list[str], budget: spaces.BoundsBudget, where: str
) -> dict[str, gym.Space]:
    """The space of each agent that ``description[key]`` describes (an object of a space per agent)."""
    described = _entry(description, key, dict, "an object of a space per agent", where)
    missing = [agent for agent in agents if agent not in described]
    if missing:
        raise ProtocolMismatchError(f"{where}.{key} has no space for agent {quoted(missing[0])}")
    return {agent: _restored(described[agent], budget, f"{where}.{key}[{quoted(agent)}]") for agent in agents}


def _restored(description: Any, budget: spaces.BoundsBudget, where: str) -> gym.Space:
    """The space ``description`` describes, within ``budget``; a refusal naming ``where`` otherwise."""
    try:
        return spaces.restore(description, budget=budget)
    except ValueError as exc:
        raise ProtocolMismatchError(f"{where}: {exc}") from exc


class _RemoteGame(PicklesAsArguments):
    """What both PettingZoo clients share: the ``/agents`` session and its spaces."""

    def _join(self, base_url: str, api: str, options: ConnectOptions) -> None:
        self._np_random: np.random.Generator | None = None
        self._game = _Game(base_url, api, options)
        self.base_url = self._game.base_url
        self.possible_agents = list(self._game.possible_agents)
        self.metadata = self._game.metadata
        self.render_mode = self._game.render_mode
        if self._game.state_space is not None:
            self.state_space = self._game.state_space

    @property
    def np_random(self) -> np.random.Generator:
        """The env's random generator, as a PettingZoo env has one (SuperSuit's
        ``frame_skip_v0`` and ``sticky_actions_v0`` draw from it): seeded by
        ``reset(seed=...)``, made unseeded on first use otherwise. The game's own
        generator is the server's; this one is the client's."""
        if self._np_random is None:
            self._np_random, _ = seeding.np_random()
        return self._np_random

    @np_random.setter
    def np_random(self, value: np.random.Generator) -> None:
        self._np_random = value

    def _seed(self, seed: int | None) -> None:
        """A seeded reset seeds :attr:`np_random` too, as a PettingZoo env's does."""
        if seed is not None:
            self._np_random, _ = seeding.np_random(seed)

    def observation_space(self, agent: str) -> gym.Space:
        return self._game.observation_spaces[agent]

    def action_space(self, agent: str) -> gym.Space:
        return self._game.action_spaces[agent]

    def render(self) -> Any:
        return self._game.render()

    def state(self) -> Any:
        """The game's global state (PettingZoo's ``state()``), in ``state_space``;
        ``NotImplementedError`` for a game that has none, as PettingZoo raises."""
        return self._game.game_state()

    def server_state(self) -> dict:
        """The server's episode state of this session (``episode_id``, ``step_count``, ...)."""
        return self._game.state()

    def close(self) -> None:
        self._game.close()


class RemoteAECEnv(_RemoteGame, AECEnv):
    """A PettingZoo ``AECEnv`` whose game runs on an openenv-gym server.

    Args:
        base_url: the server (``http(s)://host:port``, ``ws(s)://...`` or ``host:port``).
        options: how to connect (:class:`~openenv_gym.client.options.ConnectOptions`);
            keyword arguments of the same names override it.

    Every reply carries every live agent's observation, so ``observe`` and
    ``last`` cost no round trip; ``step`` and ``reset`` cost one each.
    """

    @remembers_arguments
    def __init__(
        self, base_url: str, *, options: ConnectOptions | None = None, **connect: Unpack[ConnectKwargs]
    ) -> None:
        super().__init__()
        self._join(base_url, "aec", ConnectOptions.merge(options, **connect))
        self.agents: list[str] = []
        self._observations: dict[str, Any] = {}

    def reset(self, seed: int | None = None, options: dict | None = None) -> None:
        self._apply(self._game.reset(seed, options))
        self._seed(seed)

    def step(self, action: Any) -> None:
        self._apply(self._game.step({self.agent_selection: action}))

    def observe(self, agent: str) -> Any:
        return self._observations.get(agent)

    def _apply(self, game: dict) -> None:
        self.agents = list(game["agents"])
        self.agent_selection = game["agent_selection"]
        self._observations = game["observations"]
        self.rewards = dict(game["rewards"])
        self._cumulative_rewards = dict(game["cumulative_rewards"])
        self.terminations = dict(game["terminations"])
        self.truncations = dict(game["truncations"])
        self.infos = dict(game["infos"])

    def __repr__(self) -> str:
        return f"<RemoteAECEnv {self.base_url}>"


class RemoteParallelEnv(_RemoteGame, ParallelEnv):
    """A PettingZoo ``ParallelEnv`` whose game runs on an openenv-gym server.

    Arguments as for :class:`RemoteAECEnv`. Servers of AEC envs offer the
    parallel API when the env is parallelizable (``metadata["is_parallelizable"]``).
    """

    @remembers_arguments
    def __init__(
        self, base_url: str, *, options: ConnectOptions | None = None, **connect: Unpack[ConnectKwargs]
    ) -> None:
        self._join(base_url, "parallel", ConnectOptions.merge(options, **connect))
        self.agents: list[str] = []

    def reset(
        self, seed: int | None = None, options: dict | None = None
    ) -> tuple[dict[str, Any], dict[str, dict]]:
        game = self._game.reset(seed, options)
        self._seed(seed)
        self.agents = list(game["agents"])
        return game["observations"], game["infos"]

    def step(self, actions: dict[str, Any]) -> tuple[dict, dict, dict, dict, dict]:
        game = self._game.step(actions)
        self.agents = list(game["agents"])
        return (
            game["observations"], game["rewards"], game["terminations"],
            game["truncations"], game["infos"],
        )

    def __repr__(self) -> str:
        return f"<RemoteParallelEnv {self.base_url}>"
