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

from collections.abc import Mapping
from typing import Any

import gymnasium as gym

from .._extras import missing_extra

try:
    from pettingzoo import AECEnv, ParallelEnv
except ImportError as exc:  # pragma: no cover - depends on the install
    raise missing_extra(exc, "RemoteAECEnv and RemoteParallelEnv", "pettingzoo") from exc

from .. import spaces
from ..errors import OpenEnvGymError, ProtocolMismatchError
from ..wire import apply_type_hints, reset_message
from .connection import get_json, http_url
from .contract import decode_frame
from .session import Encoding, RemoteSession

__all__ = ["RemoteAECEnv", "RemoteParallelEnv", "MULTIAGENT_VERSION"]

#: The multi-agent protocol version this client speaks.
MULTIAGENT_VERSION = 1


class _Game:
    """The client side of one ``/agents`` session: spaces, requests, decoding."""

    def __init__(
        self,
        base_url: str,
        api: str,
        *,
        encoding: Encoding,
        headers: Mapping[str, str] | None,
        connect_timeout: float | None,
        message_timeout: float | None,
    ) -> None:
        self.base_url = http_url(base_url)
        schema = get_json(f"{self.base_url}/schema", headers=headers, timeout=connect_timeout)
        extension = (schema.get("x-openenv-gym") or {}) if isinstance(schema, dict) else {}
        description = extension.get("multiagent")
        if not isinstance(description, dict):
            raise ProtocolMismatchError(
                f"{self.base_url} does not serve a PettingZoo env (its /schema has no "
                f"x-openenv-gym.multiagent entry); use openenv_gym.RemoteEnv for it"
            )
        if description.get("version") != MULTIAGENT_VERSION:
            raise ProtocolMismatchError(
                f"{self.base_url} speaks multi-agent protocol version "
                f"{description.get('version')!r}; this openenv-gym speaks {MULTIAGENT_VERSION} "
                f"(upgrade openenv-gym on one side)"
            )
        if api not in description["apis"]:
            raise ProtocolMismatchError(
                f"{self.base_url} serves its game through {description['apis']}, not {api!r}"
                + (" (an AEC env that is not parallelizable)" if api == "parallel" else "")
            )
        self.description = description
        self.possible_agents: list[str] = list(description["possible_agents"])
        self.observation_spaces = {
            a: spaces.restore(d) for a, d in description["observation_spaces"].items()
        }
        self.action_spaces = {a: spaces.restore(d) for a, d in description["action_spaces"].items()}
        self.metadata: dict[str, Any] = dict(description.get("metadata") or {})
        self.render_mode: str | None = description.get("render_mode")
        self.session: RemoteSession | None = RemoteSession(
            self.base_url,
            encoding=encoding,
            headers=headers,
            connect_timeout=connect_timeout,
            message_timeout=message_timeout,
            path=f"{description['path']}?api={api}",
        )

    def request(self, message: dict) -> dict:
        """Send a message; return the decoded game of the reply."""
        if self.session is None:
            raise OpenEnvGymError("this remote env is closed; create a new one to reconnect")
        game = dict(self.session.request(message)["observation"])
        types = game.pop("types", None)
        if isinstance(types, dict):
            for key, hint in types.get("dict", {}).items():
                if key in game:
                    game[key] = apply_type_hints(game[key], hint)
        game["observations"] = {
            agent: spaces.decode(self.observation_spaces[agent], value)
            for agent, value in game["observations"].items()
        }
        return game

    def encode_action(self, agent: str, action: Any) -> Any:
        if action is None:
            return None
        return spaces.encode(self.action_spaces[agent], action, arrays=self.session.binary)

    def render(self) -> Any:
        if self.render_mode is None or self.session is None:
            return None
        return decode_frame(self.session.request({"type": "render"}))

    def state(self) -> dict:
        """The session's episode state on the server (``episode_id``, ``step_count``...)."""
        return self.session.request({"type": "state"})

    def close(self) -> None:
        session, self.session = self.session, None
        if session is not None:
            session.close()


class _RemoteGame:
    """What both PettingZoo clients share: the ``/agents`` session and its spaces."""

    def _join(self, base_url: str, api: str, **options: Any) -> None:
        self._game = _Game(base_url, api, **options)
        self.base_url = self._game.base_url
        self.possible_agents = list(self._game.possible_agents)
        self.metadata = self._game.metadata
        self.render_mode = self._game.render_mode

    def observation_space(self, agent: str) -> gym.Space:
        return self._game.observation_spaces[agent]

    def action_space(self, agent: str) -> gym.Space:
        return self._game.action_spaces[agent]

    def render(self) -> Any:
        return self._game.render()

    def server_state(self) -> dict:
        """The server's episode state of this session (``episode_id``, ``step_count``, ...)."""
        return self._game.state()

    def close(self) -> None:
        self._game.close()


class RemoteAECEnv(_RemoteGame, AECEnv):
    """A PettingZoo ``AECEnv`` whose game runs on an openenv-gym server.

    Args:
        base_url: the server (``http(s)://host:port``, ``ws(s)://...`` or ``host:port``).
        encoding: ``"auto"`` (msgpack when offered), ``"json"`` or ``"msgpack"``.
        headers: extra HTTP headers (``Authorization`` for private servers).
        connect_timeout, message_timeout: seconds for the handshake and each reply.

    Every reply carries every live agent's observation, so ``observe`` and
    ``last`` cost no round trip; ``step`` and ``reset`` cost one each.
    """

    def __init__(
        self,
        base_url: str,
        *,
        encoding: Encoding = "auto",
        headers: Mapping[str, str] | None = None,
        connect_timeout: float | None = 10.0,
        message_timeout: float | None = 60.0,
    ) -> None:
        super().__init__()
        self._join(
            base_url, "aec", encoding=encoding, headers=headers,
            connect_timeout=connect_timeout, message_timeout=message_timeout,
        )
        self.agents: list[str] = []
        self._observations: dict[str, Any] = {}


    def reset(self, seed: int | None = None, options: dict | None = None) -> None:
        self._apply(self._game.request(reset_message(seed, options)))

    def step(self, action: Any) -> None:
        encoded = self._game.encode_action(self.agent_selection, action)
        self._apply(self._game.request({"type": "step", "data": {"action": encoded}}))

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

    def __init__(
        self,
        base_url: str,
        *,
        encoding: Encoding = "auto",
        headers: Mapping[str, str] | None = None,
        connect_timeout: float | None = 10.0,
        message_timeout: float | None = 60.0,
    ) -> None:
        self._join(
            base_url, "parallel", encoding=encoding, headers=headers,
            connect_timeout=connect_timeout, message_timeout=message_timeout,
        )
        self.agents: list[str] = []


    def reset(
        self, seed: int | None = None, options: dict | None = None
    ) -> tuple[dict[str, Any], dict[str, dict]]:
        game = self._game.request(reset_message(seed, options))
        self.agents = list(game["agents"])
        return game["observations"], game["infos"]

    def step(self, actions: dict[str, Any]) -> tuple[dict, dict, dict, dict, dict]:
        encoded = {agent: self._game.encode_action(agent, a) for agent, a in actions.items()}
        game = self._game.request({"type": "step", "data": {"actions": encoded}})
        self.agents = list(game["agents"])
        return (
            game["observations"], game["rewards"], game["terminations"],
            game["truncations"], game["infos"],
        )


    def __repr__(self) -> str:
        return f"<RemoteParallelEnv {self.base_url}>"
