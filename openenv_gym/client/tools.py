"""An env's tools as a language-model trainer calls them: text in, text, reward and done out.

:func:`env_tools` looks at an env once and says which tools it has (:class:`EnvTools`);
each :meth:`EnvTools.open` gives a :class:`ToolSession`, one env episode after another,
for one rollout worker. Two kinds of session, one interface:

- :class:`ServerToolSession`: the server's own MCP tools (an openenv-gym server's
  ``act`` / ``observe`` / ``legal_actions``, an upstream ``MCPEnvironment``'s), called
  as ``call_tool`` steps on one ``/ws`` session, so every result carries the env's
  reward and ``done`` and lands on the env the session reset;
- :class:`ViewToolSession`: for servers without tools (openenv-gym servers of earlier
  releases, stock OpenEnv servers of named fields) and for local Gymnasium envs, one
  ``act`` tool made here from the env's :mod:`text view <openenv_gym.text>`: a
  :class:`~openenv_gym.RemoteEnv` (or the local env) steps, the view writes the text
  and reads the model's action, refusing an illegal one with a message saying what is
  legal.

    >>> tools = env_tools("FrozenLake-v1", env_kwargs={"is_slippery": False})
    >>> tools.name, [tool.name for tool in tools.tools]
    ('FrozenLake-v1', ['act'])
    >>> session = tools.open()
    >>> print(session.reset(seed=0))
    position: row 0, column 0 (cell 0)
    map (* = you):
    *FFF
    FHFH
    FFFH
    HFFG
    >>> print(session.call("act", {"action": "right"}).text.splitlines()[0])
    position: row 0, column 1 (cell 1)
    >>> session.call("act", {"action": "jump"})  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    openenv_gym.errors.ToolCallError: invalid_args: cannot read an action from 'jump': ...
    >>> session.close()
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

import gymnasium as gym
from websockets.protocol import State

from ..errors import (
    ConnectionClosedError,
    ExecutionError,
    MessageTimeoutError,
    OpenEnvGymError,
    ToolCallError,
    UnknownTypeError,
    ValidationError,
)
from ..protocol import EXTENSION_KEY, Observation, Reset, jsonable
from ..protocol.tools import (
    EPISODE_TOOL_NAMES,
    Tool,
    ToolResult,
    call_tool_step,
    list_tools_step,
    read_tool_result,
    read_tools,
)
from ..text import view_for
from ..text.view import act_tool_text, episode_status, reward_text
from .async_session import AsyncSession
from .connection import http_url
from .http import get_json
from .native import read_schema
from .options import ConnectOptions
from .remote_env import RemoteEnv
from .session import RemoteSession

__all__ = [
    "ToolsFrom", "EnvTools", "ToolSession", "ServerToolSession", "AsyncServerToolSession", "ViewToolSession",
    "env_tools", "view_session", "outcome",
]

#: Where tools come from: ``"server"``, the server's own MCP tools; ``"client"``, an
#: ``act`` tool made here from the env's text view; ``"auto"``, the server's when it
#: has any, else the client's.
ToolsFrom = Literal["auto", "server", "client"]

#: The observation fields that are not what the env shows (left out of a reset's text).
_NOT_SHOWN = ("reward", "done")
_URL = re.compile(r"^[\w.-]+:\d+(/.*)?$|^\[[0-9a-fA-F:.]+\]:\d+(/.*)?$")


def outcome(reward: float, terminated: bool, truncated: bool = False) -> str:
    """The line after an observation's text that says what the step brought, worded as
    the server's ``act`` tool words it.

        >>> outcome(1.0, True)
        'Reward: 1. The episode is over (terminated).'
    """
    return f"{reward_text(reward)}{episode_status(terminated, truncated)}"


class ToolSession:
    """One env, one episode at a time, driven through tools.

    :meth:`reset` starts an episode and returns its first observation as text;
    :meth:`call` calls one tool and returns a :class:`~openenv_gym.protocol.tools.ToolResult`
    (its text, the env's reward for the step and whether the episode is over) or raises
    :class:`~openenv_gym.errors.ToolCallError` (a ``ValueError``) with a message for the
    model.
    """

    def reset(self, seed: int | None = None, options: Mapping[str, Any] | None = None) -> str:
        raise NotImplementedError

    def call(self, name: str, arguments: Mapping[str, Any]) -> ToolResult:
        raise NotImplementedError

    def close(self) -> None:
        raise NotImplementedError


class _ServerTools:
    """What a session on a server's tools holds, blocking or async: the server, how to
    reach it, its tools, and whether its ``observe`` tool says a reset's text."""

    def __init__(self, base_url: str, options: ConnectOptions, tools: list[Tool]) -> None:
        self.base_url = base_url
        self.options = options
        self.tools = tools
        self._observe = any(tool.name == "observe" and not tool.input_schema.get("required") for tool in tools)


class ServerToolSession(_ServerTools, ToolSession):
    """The server's MCP tools, called as ``call_tool`` steps on one ``/ws`` session.

    The connection opens at the first :meth:`reset` and again at a reset after it was
    lost. A reset's text is the observation's ``text`` field where the server sends one,
    else the observation's text that the server's ``observe`` tool gives (without its
    line on where the episode stands), else the observation as JSON.
    """

    def __init__(self, base_url: str, options: ConnectOptions, tools: list[Tool]) -> None:
        super().__init__(base_url, options, tools)
        self._session: RemoteSession | None = None

    def reset(self, seed: int | None = None, options: Mapping[str, Any] | None = None) -> str:
        if self._session is None or self._session.connection.closed:
            self._session = RemoteSession(self.base_url, self.options)
        reply = _observation(self._session.request(Reset(seed, options=dict(options) if options else None)))
        text = _reset_text(reply, self._observe)
        return _observed_text(self.call("observe", {})) if text is None else text

    def call(self, name: str, arguments: Mapping[str, Any]) -> ToolResult:
        if self._session is None or self._session.connection.closed:
            raise OpenEnvGymError("no episode is running on this session: call reset() first")
        return read_tool_result(_observation(self._session.request(call_tool_step(name, arguments))))

    def close(self) -> None:
        session, self._session = self._session, None
        if session is not None:
            session.close()


class AsyncServerToolSession(_ServerTools):
    """:class:`ServerToolSession` for ``asyncio`` callers: the same tools, replies and
    errors, with ``async`` :meth:`reset`, :meth:`call` and :meth:`close` over one
    connection of the running event loop, so that many sessions (the rollouts of an
    async trainer or eval harness) play at once in one process instead of each blocking
    the loop. :meth:`EnvTools.open_async` makes one.

        >>> async def rollout(tools, seed):                      # doctest: +SKIP
        ...     session = tools.open_async()
        ...     try:
        ...         text = await session.reset(seed=seed)
        ...         return await session.call("act", {"action": "down"})
        ...     finally:
        ...         await session.close()
        >>> await asyncio.gather(*(rollout(tools, seed) for seed in range(8)))  # doctest: +SKIP
    """

    def __init__(self, base_url: str, options: ConnectOptions, tools: list[Tool]) -> None:
        super().__init__(base_url, options, tools)
        self._session: AsyncSession | None = None

    async def reset(self, seed: int | None = None, options: Mapping[str, Any] | None = None) -> str:
        if self._session is None or self._session.websocket.state is not State.OPEN:
            self._session = await AsyncSession.open(self.base_url, self.options)
        reply = _observation(await self._session.request(Reset(seed, options=dict(options) if options else None)))
        text = _reset_text(reply, self._observe)
        return _observed_text(await self.call("observe", {})) if text is None else text

    async def call(self, name: str, arguments: Mapping[str, Any]) -> ToolResult:
        if self._session is None:
            raise OpenEnvGymError("no episode is running on this session: call reset() first")
        return read_tool_result(_observation(await self._session.request(call_tool_step(name, arguments))))

    async def close(self) -> None:
        session, self._session = self._session, None
        if session is not None:
            await session.close()


def _reset_text(reply: Observation, observe: bool) -> str | None:
    """A reset's text: the observation's ``text`` where the server sends one, ``None``
    when the server's ``observe`` tool is to say it, else the observation as JSON."""
    text = reply.observation.get("text")
    if isinstance(text, str):
        return text
    if observe:
        return None
    shown = {k: v for k, v in reply.observation.items() if k not in _NOT_SHOWN and not _empty(v)}
    return json.dumps(jsonable(shown))


def _observed_text(result: ToolResult) -> str:
    """A reset's text from the server's ``observe`` tool: the observation's text alone,
    as an ``act`` made on the client gives it (openenv-gym's structured result holds it
    without the line saying the episode goes on), else the tool's text."""
    text = result.data.get("text") if isinstance(result.data, Mapping) else None
    return text if isinstance(text, str) else result.text


class ViewToolSession(ToolSession):
    """An ``act`` tool made here, over a Gymnasium env and its text view.

    ``make_env`` makes the env (a :class:`~openenv_gym.RemoteEnv` of a server, or a local
    env) at the first :meth:`reset`; ``view`` is passed to
    :func:`~openenv_gym.text.view_for` with it (``None``: the env's own view), and
    ``env_id`` where the env does not say its id (a stock server's ``/metadata`` name, by
    which the built-in views know it). An action the view cannot read, or that is not legal
    now, never reaches the env: it is a :class:`~openenv_gym.errors.ToolCallError` with the
    view's message.
    """

    def __init__(self, make_env: Callable[[], gym.Env], view: Any = None, env_id: str | None = None) -> None:
        self.make_env = make_env
        self.view_source = view
        self.env_id = env_id
        self.env: gym.Env | None = None
        self.view: Any = None
        self.tools: list[Tool] = []
        self._fields = False

    def _open(self) -> gym.Env:
        if self.env is None:
            env = self.make_env()
            try:
                core = env.unwrapped
                if self.env_id is None and self.view_source is None and isinstance(core, RemoteEnv) and not getattr(
                    core.contract, "env_id", None
                ):
                    # A stock server's env is known to the built-in views by its /metadata name.
                    self.env_id = _server_name(core.base_url, core.options)
                self.view = view_for(env, self.view_source, env_id=self.env_id)
                act, self._fields = act_tool(self.view)
            except BaseException:
                env.close()
                raise
            self.env, self.tools = env, [act]
        return self.env

    @property
    def instructions(self) -> str | None:
        """What the model is told of the env before its first observation
        (:attr:`EnvTools.instructions`): a served env's own, which its server's view (that
        has the env) wrote into its ``/schema``, else this session's view's description."""
        env = self._open()
        contract = getattr(env.unwrapped, "contract", None)
        served = getattr(contract, "instructions", None) if self.view_source is None else None
        return served or _described(self.view)

    def reset(self, seed: int | None = None, options: Mapping[str, Any] | None = None) -> str:
        env = self._open()
        obs, info = env.reset(seed=seed, options=dict(options) if options else None)
        return self.view.obs_to_text(obs, info)

    def call(self, name: str, arguments: Mapping[str, Any]) -> ToolResult:
        if self.env is None:
            raise OpenEnvGymError("no episode is running on this session: call reset() first")
        if name != "act":
            raise ToolCallError(f"Unknown tool: {name!r} (the one tool is 'act')", error_type="tool_not_found")
        if not self._fields and set(arguments) != {"action"}:
            raise ToolCallError(
                f"act takes one argument, 'action'; got {sorted(arguments) or 'none'}", error_type="invalid_args"
            )
        return self.act(dict(arguments) if self._fields else arguments["action"])

    def act(self, reply: Any) -> ToolResult:
        """Step with the action ``reply`` says: a model's whole reply (a bare value, JSON,
        fenced JSON, ``<action>...</action>``, as :mod:`openenv_gym.text` reads them) or
        the action's value.

        Raises:
            ToolCallError: ``reply`` holds no action the view can read, or one that is
                not legal now (``invalid_args``); the env was not stepped.
        """
        if self.env is None:
            raise OpenEnvGymError("no episode is running on this session: call reset() first")
        try:
            action = self.view.parse_action(reply)
        except ValueError as exc:
            raise ToolCallError(str(exc), error_type="invalid_args") from exc
        obs, reward, terminated, truncated, info = self.env.step(action)
        text = f"{self.view.obs_to_text(obs, info)}\n{outcome(float(reward), bool(terminated), bool(truncated))}"
        return ToolResult(text, float(reward), bool(terminated or truncated), truncated=bool(truncated))

    def close(self) -> None:
        env, self.env = self.env, None
        if env is not None:
            env.close()


def act_tool(view: Any) -> tuple[Tool, bool]:
    """The ``act`` tool of a text view, and whether its arguments are the action's own
    fields (an action that is a JSON object of named fields, as stock OpenEnv servers
    take) rather than one ``action`` argument."""
    description, argument = act_tool_text(view)
    properties = argument.get("properties") if argument.get("type") == "object" else None
    if isinstance(properties, dict) and properties:
        return Tool("act", description, {k: v for k, v in argument.items() if k != "description"}), True
    wrapped = {
        "type": "object", "properties": {"action": argument}, "required": ["action"], "additionalProperties": False,
    }
    return Tool("act", description, wrapped), False


@dataclass(frozen=True)
class EnvTools:
    """The tools of one env, and how to open sessions on it.

    ``name`` is the env's id (the server's name for it); ``tools`` what every session
    offers; ``kind`` where they come from (``"server"`` or ``"client"``);
    ``instructions`` what a model is told before its first observation (the env's text
    view's :meth:`~openenv_gym.text.TextView.describe`: the task, the observations, the
    actions and how to answer; an openenv-gym server's own in its ``/schema``), for a
    system or first user message; ``None`` when neither the server nor a view has any.
    """

    name: str
    tools: list[Tool]
    kind: Literal["server", "client"]
    open: Callable[[], ToolSession]
    instructions: str | None = None
    #: The server's URL and connection options, for :meth:`open_async` (``None``: a
    #: local env, or tools made on the client).
    server: tuple[str, ConnectOptions] | None = None

    def open_async(self) -> AsyncServerToolSession:
        """An :class:`AsyncServerToolSession` on the server's tools, for ``asyncio`` callers.

        Raises:
            TypeError: the tools are not the server's (a local env, or an ``act`` tool made
                on the client, whose env steps through a blocking connection or in process).
        """
        if self.server is None:
            raise TypeError(
                f"{self.name}'s tools are made on the client (kind {self.kind!r}), which has no async session: "
                "open() one in a thread (asyncio.to_thread), or serve the env with openenv-gym for its own tools"
            )
        return AsyncServerToolSession(*self.server, self.tools)


def env_tools(
    url_or_env: str | Callable[..., gym.Env],
    *,
    tools: ToolsFrom = "auto",
    view: Any = None,
    env_kwargs: Mapping[str, Any] | None = None,
    options: ConnectOptions | None = None,
    **connect: Any,
) -> EnvTools:
    """The tools of a served env, or of a local Gymnasium env.

    Args:
        url_or_env: An OpenEnv server's URL (``http://127.0.0.1:8000``, ``host:port``),
            or a local Gymnasium env: its id or a function that makes one (each session
            makes its own).
        tools: Where the tools come from (:data:`ToolsFrom`). A server's tools are read
            once here, with a ``list_tools`` step.
        view: For client-side tools, the text view (or a function making one from the
            env) given to :func:`~openenv_gym.text.view_for`.
        env_kwargs: For a local env, the keyword arguments that make it.
        options, connect: How to connect to a server
            (:class:`~openenv_gym.client.options.ConnectOptions` and its fields as
            keywords).
    """
    url, options, make_env = _target(url_or_env, env_kwargs, options, connect)
    if url is not None and options is not None:
        return _server_tools(url, tools, view, options)
    if tools == "server":
        raise ValueError(f"{url_or_env!r} is a local env, which has no server tools: use tools='auto' or 'client'")
    return _client_tools(make_env, view)


def view_session(
    url_or_env: str | Callable[..., gym.Env],
    *,
    view: Any = None,
    env_kwargs: Mapping[str, Any] | None = None,
    options: ConnectOptions | None = None,
    **connect: Any,
) -> ViewToolSession:
    """A :class:`ViewToolSession` on a served env or a local one (the arguments are
    :func:`env_tools`'), for trainers that hand over the model's whole reply as the
    action (:meth:`ViewToolSession.act`) rather than calling tools."""
    return ViewToolSession(_target(url_or_env, env_kwargs, options, connect)[2], view)


def _target(
    url_or_env: str | Callable[..., gym.Env],
    env_kwargs: Mapping[str, Any] | None,
    options: ConnectOptions | None,
    connect: dict[str, Any],
) -> tuple[str | None, ConnectOptions | None, Callable[[], gym.Env]]:
    """A server's URL and connection options (``None`` for a local env), and a function
    making the env as a Gymnasium env."""
    if isinstance(url_or_env, str) and _is_url(url_or_env):
        if env_kwargs:
            raise TypeError("env_kwargs are for a local env; a server makes its envs itself")
        url, merged = http_url(url_or_env), ConnectOptions.merge(options, **connect)
        return url, merged, lambda: RemoteEnv(url, options=merged, text=True)
    if options is not None or connect:
        raise TypeError("connection options are for a server URL, not a local env")
    return None, None, _local_factory(url_or_env, dict(env_kwargs or {}))


def _server_tools(url: str, tools: ToolsFrom, view: Any, options: ConnectOptions) -> EnvTools:
    # The optional documents (/metadata's name, the instructions) are read after the ones
    # a session needs: a server that never answers fails within one connect_timeout.
    listed = _list_tools(url, options) if tools != "client" else None
    if listed:
        name, instructions = _server_name(url, options), _server_instructions(url, options)
        return EnvTools(
            name, listed, "server", lambda: ServerToolSession(url, options, listed), instructions, (url, options)
        )
    if tools == "server":
        raise OpenEnvGymError(
            f"{url} offers no MCP tools (it does not answer a list_tools step): use tools='client' for an act "
            "tool made from its /schema and a text view"
        )
    return _client_tools(lambda: RemoteEnv(url, options=options, text=True), view)


def _client_tools(make_env: Callable[[], gym.Env], view: Any) -> EnvTools:
    probe = ViewToolSession(make_env, view)
    try:
        env = probe._open()
        core = env.unwrapped
        if isinstance(core, RemoteEnv):  # /metadata's name (read by _open for a stock server)
            name = probe.env_id or _server_name(core.base_url, core.options)
        else:
            name = getattr(probe.view, "env_id", None) or _local_name(env)
        listed, instructions = probe.tools, probe.instructions
    finally:
        probe.close()
    return EnvTools(name, listed, "client", lambda: ViewToolSession(make_env, view, name), instructions)


def _described(view: Any) -> str | None:
    describe = getattr(view, "describe", None)
    return describe() if callable(describe) else None


def _server_instructions(url: str, options: ConnectOptions) -> str | None:
    """An openenv-gym server's instructions for its env (``/schema``'s
    ``x-openenv-gym.text.instructions``, its own view's description); ``None`` from
    other servers, or when the optional document does not come whole in time. Read with
    :func:`~openenv_gym.client.native.read_schema`, so the sessions opened next find the
    server's native listener."""
    try:
        schema = read_schema(url, options)
    except (ConnectionClosedError, MessageTimeoutError):
        return None
    extension = schema.get(EXTENSION_KEY) if isinstance(schema, dict) else None
    text = extension.get("text") if isinstance(extension, dict) else None
    instructions = text.get("instructions") if isinstance(text, dict) else None
    return instructions if isinstance(instructions, str) and instructions else None


def _list_tools(url: str, options: ConnectOptions) -> list[Tool] | None:
    """The server's tools but its episode tools (:data:`~openenv_gym.protocol.tools.EPISODE_TOOL_NAMES`:
    a trainer starts each episode itself, which the model must not), or ``None`` when it
    answers a ``list_tools`` step with an error (it has none: openenv-gym servers before
    tools, stock envs of named fields)."""
    session = RemoteSession(url, options)
    try:
        reply = session.request(list_tools_step())
    except (ValidationError, UnknownTypeError, ExecutionError):
        return None
    finally:
        session.close()
    listed = read_tools(reply) if isinstance(reply, Observation) else None
    return None if listed is None else [tool for tool in listed if tool.name not in EPISODE_TOOL_NAMES]


def _server_name(url: str, options: ConnectOptions) -> str:
    """The name a server gives its env on ``/metadata`` (openenv-gym servers: the env id);
    ``OpenEnv`` when the optional document does not come whole within its limits and deadline."""
    try:
        metadata = get_json(f"{url}/metadata", options)
    except (ConnectionClosedError, MessageTimeoutError):
        metadata = None
    name = metadata.get("name") if isinstance(metadata, dict) else None
    return name if isinstance(name, str) and name else "OpenEnv"


def _observation(reply: Any) -> Observation:
    if not isinstance(reply, Observation):
        raise OpenEnvGymError(f"the server answered a step with {type(reply).__name__}, not an observation")
    return reply


def _empty(value: Any) -> bool:
    return value is None or (isinstance(value, dict) and not value)


def _is_url(target: str) -> bool:
    return "://" in target or bool(_URL.match(target))


def _local_factory(env: str | Callable[..., gym.Env], env_kwargs: dict[str, Any]) -> Callable[[], gym.Env]:
    def make() -> gym.Env:
        made = gym.make(env, **env_kwargs) if isinstance(env, str) else env(**env_kwargs)
        if not isinstance(made, gym.Env):
            raise TypeError(
                f"{env!r} made a {type(made).__name__}, not a Gymnasium env; serve other envs (PettingZoo games "
                "too) with openenv_gym.local_server and pass its URL"
            )
        return made

    return make


def _local_name(env: gym.Env) -> str:
    spec = getattr(env, "spec", None)
    return spec.id if spec is not None and spec.id else type(env.unwrapped).__name__
