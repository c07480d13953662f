"""One session: one environment (or vector env), and the replies to its messages.

A session answers typed client messages (:mod:`openenv_gym.protocol`) with
typed replies. It knows nothing about sockets; the server's hosting loop
feeds it. Protocol problems are raised as
:class:`~openenv_gym.errors.ProtocolError` with the OpenEnv error code the
reply must carry, and values go out the way the session's negotiated
:class:`~openenv_gym.protocol.Codec` sends them.

Environment calls run through an :class:`~.execution.EnvCaller` (:mod:`.execution`),
which keeps a slow env from stalling the server's event loop (and so every other
session) while letting fast envs skip the thread hand-off that would otherwise
dominate their step time.

A session also serves MCP: JSON-RPC requests (``/ws`` ``mcp`` frames, ``WS /mcp``
frames, ``POST /mcp`` for a session that outlives its socket) are answered by
:mod:`.jsonrpc` on the session, and a Gymnasium session's tools
(:mod:`.tools`) run on its env and its episode, also as ``/ws`` steps
``{"type": "call_tool", ...}``.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import logging
import numbers
import time
import uuid
from collections.abc import Callable, Mapping
from typing import Any, NoReturn

from ..errors import EnvCallTimeout, ErrorCode, NoEpisodeError, ProtocolError, ToolCallError
from ..protocol import (
    ClientMessage,
    Codec,
    McpReply,
    McpRequest,
    Render,
    Reset,
    ServerMessage,
    State,
    StateReply,
    Step,
    validation_error,
)
from ..protocol import gym as gym_data
from ..protocol.attributes import (
    ATTRIBUTE_MESSAGES,
    Call,
    CallReply,
    GetAttr,
    GetAttrReply,
    IsWrapped,
    IsWrappedReply,
    SetAttr,
    SetAttrDone,
    values_reply,
)
from ..protocol.images import png
from ..protocol.mcp import (
    JsonRpcMessage,
    JsonRpcReply,
    ListTools,
    tool_action,
    tool_not_found,
    tool_observation,
    tools_observation,
)
from ..protocol.messages import MAX_ERROR_CHARS
from ..spaces._common import clipped
from ..text import value_text, view_for, view_for_spaces
from . import jsonrpc
from .attributes import OneEnv, SubEnvs, chosen
from .execution import EnvCaller
from .isolation import EnvCrashed, env_processes
from .latency import usage_for
from .source import EnvSource
from .tools import Position, ServedTool, ToolOutcome, gym_tools

__all__ = [
    "EnvHost", "Session", "ENV_LOST", "describe_error", "env_error", "wants_text", "check_injection", "inject_state",
]

logger = logging.getLogger("openenv_gym.server")

#: What an env call raises when its env is lost: it hung (past its deadline or step
#: timeout) or its process died. The session gets a fresh env (:meth:`EnvHost.recycle`).
ENV_LOST = (EnvCallTimeout, EnvCrashed)

class EnvHost:
    """What every kind of session shares: one environment (or vector env),
    built by ``build`` and called through an :class:`EnvCaller`, the codec of
    its connection, and the time of its last message (for the idle reaper)."""

    #: Environments this session holds, counted against the server's ``max_sessions``.
    slots = 1
    #: What ``build`` makes, for the FACTORY_ERROR message.
    builds = "instance"

    def __init__(self, source: EnvSource, build: Callable[[], Any], codec: Codec, caller: EnvCaller | None) -> None:
        self.id = str(uuid.uuid4())
        self.source = source
        self.build = build
        self.codec = codec
        self.call = caller or EnvCaller()
        self.env: Any = None
        self.last_activity = time.monotonic()
        self._reset_done = False
        #: Set by the server when it ends the session (idle timeout, shutdown).
        self.stop_reason: str | None = None
        #: ``True`` while a message is being handled (a draining server lets it finish).
        self.busy = False
        #: Set for a session that outlives its sockets (several peers may use it at
        #: once): one message at a time holds it.
        self.lock: asyncio.Lock | None = None
        #: The server's sessions, for JSON-RPC requests about other sessions (set by the
        #: server that hosts this one).
        self.registry: jsonrpc.Registry | None = None
        #: Whether its MCP peer speaks the MCP specification (it sent ``initialize``):
        #: tool results then carry ``structuredContent`` and ``isError``.
        self.spec = False

    @property
    def inline(self) -> bool:
        """Whether its env calls run on the event loop (see :class:`EnvCaller`)."""
        return self.call.inline

    def touch(self) -> None:
        """Note activity (idle sessions are closed by the server's reaper)."""
        self.last_activity = time.monotonic()

    async def start(self) -> None:
        """Build the environment; failures become FACTORY_ERROR. A session that ends
        while its env is being built has the processes of that env killed once built.
        Its calls are then judged by the usage that fits the env (:func:`~.latency.usage_for`)."""
        try:
            self.env = await self._built_env()
        except Exception as exc:  # noqa: BLE001 - any factory failure is reported
            raise ProtocolError(
                ErrorCode.FACTORY_ERROR,
                f"Environment factory '{self.source.name}' failed to create {self.builds}: "
                f"{describe_error(exc)}",
                factory_name=self.source.name,
            ) from exc
        self.call.usage = usage_for(self.env)

    async def _built_env(self) -> Any:
        if self.call.execution == "inline":
            return await self.call.build(self.build)  # built right here: a cancel cannot land midway
        build = asyncio.ensure_future(self.call.build(self.build))
        try:
            return await asyncio.shield(build)
        except asyncio.CancelledError:
            build.add_done_callback(_kill_built)
            raise

    def opened(self) -> ServerMessage | None:
        """The message that tells the client the session is open, for routes that send one."""
        return None

    def speak(self, codec: Codec, query: Mapping[str, str]) -> None:
        """Answer the connection that has just opened (or attached to) this session:
        in its codec; ``query`` holds its handshake's query parameters."""
        self.codec = codec

    async def respond(self, message: ClientMessage) -> tuple[ServerMessage | None, float]:
        """The reply to one message (never ``close``; ``None`` for a JSON-RPC
        notification, which gets none), and the seconds its env calls took (not
        counting any wait for the session's thread)."""
        lock = self.lock
        if lock is not None:
            await lock.acquire()
        self.busy = True
        self.touch()
        self.call.seconds = 0.0
        try:
            return await self.handle(message), self.call.seconds
        finally:
            self.busy = False
            if lock is not None:
                lock.release()

    async def handle(self, message: ClientMessage) -> ServerMessage | None:
        raise NotImplementedError

    # -- MCP --------------------------------------------------------------------------

    def toolbox(self) -> dict[str, ServedTool] | None:
        """The session's MCP tools by name, or ``None`` for a session without tools."""
        return None

    async def call_tool(self, name: str, arguments: dict[str, Any]) -> ToolOutcome:
        """Run one of the session's tools; a failure is a :class:`~openenv_gym.errors.ToolCallError`."""
        tool = (self.toolbox() or {}).get(name)
        if tool is None:
            raise tool_not_found(name)
        return await tool.run(self, arguments)

    async def _jsonrpc(self, message: ClientMessage) -> ServerMessage | None:
        """The reply to a JSON-RPC request on this session: ``mcp`` frames of ``/ws``
        (which always get one) and ``WS /mcp`` frames (none for a notification)."""
        if isinstance(message, McpRequest):
            response = await jsonrpc.answer(message.request, self)
            return McpReply(response or jsonrpc.ACKNOWLEDGED)
        assert isinstance(message, JsonRpcMessage)
        response = await jsonrpc.answer(message.payload, self)
        return None if response is None else JsonRpcReply(response)

    async def run(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        """Call the env; what it raises goes back to the client as EXECUTION_ERROR.

        A call past the step timeout, or an env process that died (or ran out of
        its memory cap), recycles the session: the hung env is abandoned (it
        cannot be closed while it hangs; an env in its own process is killed), a
        fresh one is built, and the client must reset. A session the server is
        ending (:attr:`stop_reason`) gets no fresh env.
        """
        call = self.call
        try:
            return call.call_inline(fn, *args, **kwargs) if call.inline else await call(fn, *args, **kwargs)
        except ToolCallError:
            raise  # a tool's own report of why it failed
        except ENV_LOST as exc:
            await self.recycle(exc)
        except Exception as exc:  # noqa: BLE001 - env errors go back to the client
            raise env_error(exc) from exc

    async def recycle(self, lost: EnvCallTimeout | EnvCrashed) -> NoReturn:
        """After an env call that hung or whose process died (``lost``): abandon the env
        (an env in its own process is killed), build a fresh one unless the session is
        ending, and raise the EXECUTION_ERROR that tells the client so."""
        what = "hung" if isinstance(lost, EnvCallTimeout) else "crashed"
        env, self.env, self._reset_done = self.env, None, False
        for process in env_processes(env):
            process.kill()
        told = f"The environment {what}: {lost}"
        if self.stop_reason is not None:  # the session is ending: no fresh env for it
            told += f". {self.stop_reason}"
        else:
            await self.start()
            told += ". This session now has a fresh environment; call reset to start a new episode"
        raise ProtocolError(ErrorCode.EXECUTION_ERROR, told) from lost

    def step_now(self, decoded: Any) -> ServerMessage | None:
        """The reply to ``decoded`` (a decoded frame) when it is a plain ``step`` that this
        session answers at once, by the shortest path (``None``: answer it by
        :meth:`respond`). Raises what the step raises; an env call that hung or crashed
        raises :data:`ENV_LOST`'s exception, for :meth:`recycle`."""
        return None

    async def close(self) -> None:
        """Close the env, then end what ran it, whatever ends the session.

        An env in a process of its own is killed after its ``close``, or at once
        while a call waits for it (the call may be why the session ends: a
        client gone or a server draining cannot wait for an env that spins). A
        call still running on the session's thread is abandoned, its env with it,
        as after a step timeout: counted in ``hung`` (a slot of the server) until
        it returns.
        """
        env, self.env = self.env, None
        try:
            if env is not None and not self.call.busy:
                with contextlib.suppress(Exception):  # closing must not fail the server
                    await self.call(env.close)
        finally:
            self.call.shutdown()
            for process in env_processes(env):
                process.kill()

    def _env(self) -> Any:
        if self.env is None:
            raise ProtocolError(ErrorCode.SESSION_ERROR, "The session's environment is closed")
        return self.env


    async def answer_attribute(
        self, message: Call | GetAttr | SetAttr | IsWrapped, envs: OneEnv | SubEnvs, num_envs: int, *,
        broadcast: bool,
    ) -> ServerMessage:
        """The reply to an attribute message (:mod:`~openenv_gym.protocol.attributes`)
        on the envs its ``indices`` names (``None``: all ``num_envs``), one by one,
        the others untouched. ``broadcast``: a ``set_attr`` without ``indices`` whose
        values are no list of one per env sets that one value on every env (a
        ``/vector`` session, as ``SyncVectorEnv.set_attr`` takes it)."""
        indices = chosen(message.indices, num_envs)
        if isinstance(message, IsWrapped):
            return values_reply(self.codec, IsWrappedReply, await self.run(envs.is_wrapped, indices, message.wrapper))
        if isinstance(message, SetAttr):
            values = self.codec.unpack_data(message.values, message.types)
            whole = isinstance(values, list) and len(values) == num_envs
            if broadcast and message.indices is None and not whole:
                values = [values] * num_envs
            if not isinstance(values, list) or len(values) != len(indices):
                raise validation_error(
                    ["values"], f"values must be a list of one value per env named ({len(indices)})", message.values
                )
            await self.run(envs.set_attr, indices, message.name, values)
            return SetAttrDone()
        kind = CallReply if isinstance(message, Call) else GetAttrReply
        args, kwargs = (message.args, message.kwargs) if isinstance(message, Call) else ([], {})
        return values_reply(self.codec, kind, await self.run(envs.call, indices, message.name, args, kwargs))


class Session(EnvHost):
    """A Gymnasium environment serving one ``/ws`` client, with its episode state.

    The action and observation objects are :mod:`openenv_gym.protocol.gym`'s;
    the codec decides how their values travel. Observations carry their text
    (:attr:`text`) for stock JSON peers, and for openenv-gym peers that ask
    (``/ws?text=1``). Its MCP tools (:mod:`.tools`) play the same episode.
    """

    def __init__(self, source: EnvSource, *, codec: Codec, caller: EnvCaller | None = None) -> None:
        caller = caller or EnvCaller()
        super().__init__(source, caller.maker(source), codec, caller)
        self.episode_id: str | None = None
        self.step_count = 0
        self.seed: int | None = None
        #: The sum of the episode's rewards so far (of those that are numbers).
        self.episode_return = 0.0
        #: Whether observation frames carry the observation's ``text``.
        self.text = wants_text(codec, {})
        #: Where the current episode stands (``None`` before the first reset).
        self.position: Position | None = None
        self._view: Any = None
        self._view_env: Any = None
        self._tools: dict[str, ServedTool] | None = None
        #: Whether plain steps may take :meth:`step_now` (a subclass steps its own way).
        self._plain = type(self) is Session

    def speak(self, codec: Codec, query: Mapping[str, str]) -> None:
        super().speak(codec, query)
        self.text = wants_text(codec, query)

    async def handle(self, message: ClientMessage) -> ServerMessage | None:
        """The reply to one validated message (never called for ``close``)."""
        if isinstance(message, Step):
            return await self._step(message)
        if isinstance(message, Reset):
            return await self._reset(message)
        if isinstance(message, State):
            return StateReply(self.state())
        if isinstance(message, Render):
            return await self._render()
        if isinstance(message, (McpRequest, JsonRpcMessage)):
            return await self._jsonrpc(message)
        if message.type in ATTRIBUTE_MESSAGES:
            return await self._attribute(message)
        raise ProtocolError(ErrorCode.UNKNOWN_TYPE, f"Unknown message type: {message.type}")

    async def _attribute(self, message: ClientMessage) -> ServerMessage:
        """``call`` / ``get_attr`` / ``set_attr`` / ``is_wrapped`` on this session's
        one env, as a Gymnasium vector env does them to each of its sub-envs."""
        assert isinstance(message, (Call, GetAttr, SetAttr, IsWrapped))
        return await self.answer_attribute(message, OneEnv(self._env()), 1, broadcast=False)

    def state(self) -> dict:
        return {
            "episode_id": self.episode_id,
            "step_count": self.step_count,
            "env_id": self.source.env_id,
            "seed": self.seed,
        }

    # -- reset / step -------------------------------------------------------

    def begin_episode(self, reset: Reset) -> None:
        """Start the episode bookkeeping after a successful reset."""
        self.episode_id = reset.episode_id or str(uuid.uuid4())
        self.step_count = 0
        self.seed = reset.seed
        self.episode_return = 0.0
        self._reset_done = True

    def require_episode(self) -> None:
        if not self._reset_done:
            raise NoEpisodeError("Call reset before step: this session has no episode yet")

    async def _reset(self, reset: Reset) -> ServerMessage:
        check_injection(self.source, reset)
        obs, info, text = await self.run(self.env_reset, reset, self.text)
        self.begin_episode(reset)
        self.position = Position(obs, info, text=text)
        return self._observation(obs, None, False, False, info, text)

    async def _step(self, step: Step) -> ServerMessage:
        if "type" in step.fields and (tool := tool_action(step.fields)) is not None:  # OpenEnv's MCP actions
            return await self._tool_step(tool)
        action = gym_data.read_action(self.codec, self.source.action_space, step)
        self.require_episode()
        reward = await self._advance(action, self.text)
        position = self.position
        assert position is not None
        return self._observation(
            position.obs, reward, position.terminated, position.truncated, position.info, position.text
        )

    def env_reset(self, reset: Reset, text: bool) -> tuple[Any, Any, str | None]:
        """Reset the env, then apply the reset's ``injected_state`` through the server's
        ``set_state`` hook, and render the observation's text when ``text`` (one env call)."""
        env = self._env()
        obs, info = env.reset(seed=reset.seed, options=reset.options)
        if reset.injected_state is not None:
            obs, info = inject_state(self.source, env, reset.injected_state)
        return obs, info, self._obs_text(env, obs, info) if text else None

    def env_step(self, action: Any, text: bool) -> tuple[Any, Any, Any, Any, Any, str | None]:
        """Step the env, and render the observation's text when ``text`` (one env call)."""
        env = self._env()
        obs, reward, terminated, truncated, info = env.step(action)
        return obs, reward, terminated, truncated, info, self._obs_text(env, obs, info) if text else None

    def step_now(self, decoded: Any) -> ServerMessage | None:
        """A plain step, answered without the general path's layers (:meth:`EnvHost.step_now`):
        the frame is ``{"type": "step", "data": {"action": ...}}`` and nothing more, the
        session runs its env calls inline, has an episode and no lock, and is a plain
        :class:`Session` (its subclasses step otherwise). The checks, the env call, the
        bookkeeping and the reply are the general path's own (:func:`read_value`,
        :meth:`env_step`, :meth:`_moved`, :meth:`_observation`): only the way there is shorter."""
        if type(decoded) is not dict or len(decoded) != 2 or decoded.get("type") != "step" or not self._plain:
            return None
        fields = decoded.get("data")
        if type(fields) is not dict or len(fields) != 1 or "action" not in fields:
            return None
        call = self.call
        if not call.inline or not self._reset_done or self.lock is not None or self.env is None:
            return None
        action = gym_data.read_value(self.codec, self.source.action_space, fields["action"], None, ["action"])
        self.touch()
        try:
            outcome = call.call_inline(self.env_step, action, self.text)
        except ENV_LOST:
            raise
        except Exception as exc:  # noqa: BLE001 - env errors go back to the client
            raise env_error(exc) from exc
        reward = self._moved(outcome)
        position = self.position
        assert position is not None
        return self._observation(
            position.obs, reward, position.terminated, position.truncated, position.info, position.text
        )

    async def _advance(self, action: Any, text: bool) -> Any:
        """Step the env with a checked action; the reward (the position moves on)."""
        return self._moved(await self.run(self.env_step, action, text))

    def _moved(self, outcome: tuple[Any, Any, Any, Any, Any, str | None]) -> Any:
        """The episode after a step (``outcome``: what :meth:`env_step` returned); its reward."""
        obs, reward, terminated, truncated, info, rendered = outcome
        self.step_count += 1
        kind = type(reward)
        if kind is float or kind is int or (kind is not bool and isinstance(reward, numbers.Real)):
            self.episode_return += float(reward)
        self.position = Position(obs, info, bool(terminated), bool(truncated), rendered)
        return reward

    def _observation(
        self, obs: Any, reward: Any, terminated: Any, truncated: Any, info: Any, text: str | None = None
    ) -> ServerMessage:
        extra = self.source.extra_values(self._env()) if self.source.extra_values is not None else None
        return gym_data.observation(
            self.codec, self.source.observation_space, obs,
            reward=reward, terminated=terminated, truncated=truncated, info=info, extra=extra, text=text,
        )

    async def _render(self) -> ServerMessage:
        frame = await self.run(self._env().render)
        return gym_data.render_reply(self.codec, self.source.render_mode, frame)

    # -- text and tools -------------------------------------------------------

    @property
    def view(self) -> Any:
        """The text view of the session's env (:mod:`openenv_gym.text`): the server's
        ``text_view`` if it has one, else the env's own (its methods, the built-in
        table, its spaces); an env in a process of its own is known by its spaces and id."""
        return self._view_of(self._env())

    def _view_of(self, env: Any) -> Any:
        """:attr:`view` for ``env``, which a call the session abandoned holds on to after
        the session dropped it."""
        if self._view is None or self._view_env is not env:
            source = self.source
            if source.text_view is None and self.call.isolated:
                self._view = view_for_spaces(source.observation_space, source.action_space, env_id=source.env_id)
            else:
                self._view = view_for(env, source.text_view)
            self._view_env = env
        return self._view

    def _obs_text(self, env: Any, obs: Any, info: Any) -> str:
        """The text of ``env``'s observation by its view; a view that fails falls back to
        the text of the observation space (and the failure is logged)."""
        try:
            return self._view_of(env).obs_to_text(obs, info)
        except Exception:  # noqa: BLE001 - the text must not cost the step
            logger.warning("text_view_failed env=%s", self.source.name, exc_info=True)
            return value_text(self.source.observation_space, obs)

    def toolbox(self) -> dict[str, ServedTool] | None:
        if self._tools is None:
            tools = [*gym_tools(self.view), *self.source.tools]
            self._tools = {tool.name: tool for tool in tools}
        return self._tools

    async def begin_if_needed(self) -> Position:
        if self.position is None or not self._reset_done:
            await self._reset(Reset())
        assert self.position is not None
        return self.position

    async def new_episode(self, reset: Reset) -> Position:
        await self._reset(reset)
        assert self.position is not None
        return self.position

    def episode_state(self) -> dict[str, Any]:
        return {
            "episode_id": self.episode_id if self._reset_done else None,
            "seed": self.seed if self._reset_done else None,
            "step_count": self.step_count,
            "return": self.episode_return,
        }

    async def position_text(self) -> str:
        position = self.position
        assert position is not None
        if position.text is None:
            position.text = await self.run(self._obs_text, self._env(), position.obs, position.info)
        return position.text

    async def play(self, action: Any) -> float:
        return float(await self._advance(action, True))

    async def frame_images(self) -> tuple[str, ...]:
        if not self.source.tool_images:
            return ()
        image = await self.frame_png()
        return (base64.b64encode(image).decode("ascii"),) if image is not None else ()

    async def frame_png(self, *, level: int = 6) -> bytes | None:
        """The env's ``rgb_array`` frame as a PNG (``None`` when it renders nothing),
        rendered and encoded on the env's thread, so the loop serves other sessions."""
        env = self._env()

        def rendered() -> bytes | None:
            frame = env.render()
            return None if frame is None else png(frame, level=level)

        return await self.run(rendered)

    async def _tool_step(self, tool: Any) -> ServerMessage:
        """The reply to OpenEnv's MCP actions as ``/ws`` steps: the observation carries
        the tool's result (or error), and the reward and done of the episode."""
        if isinstance(tool, ListTools):
            return tools_observation(t.spec for t in (self.toolbox() or {}).values())
        try:
            outcome = await self.call_tool(tool.tool_name, tool.arguments)
        except ToolCallError as exc:
            return tool_observation(tool.tool_name, exc, reward=0.0, done=self._done())
        return tool_observation(tool.tool_name, outcome.result, reward=outcome.reward, done=self._done())

    def _done(self) -> bool:
        return self.position is not None and self.position.over


def _kill_built(build: asyncio.Future) -> None:
    """Kill the processes of an env built for a session that ended meanwhile."""
    if not build.cancelled() and build.exception() is None:
        for process in env_processes(build.result()):
            process.kill()


def wants_text(codec: Codec, query: Mapping[str, str]) -> bool:
    """Whether a session's observations carry their text: always for a stock JSON peer,
    when asked (``?text=1``) for an openenv-gym peer."""
    return not codec.extended or query.get("text", "").lower() in ("1", "true", "yes")


def check_injection(source: EnvSource, reset: Reset, *, route: str | None = None) -> None:
    """Refuse a reset's ``injected_state`` (VALIDATION_ERROR, before any env call: the
    session goes on) when the server has no ``set_state`` hook, or ``route`` names a
    route that has none."""
    if reset.injected_state is None:
        return
    if route is not None:
        why = f"{route} resets whole sessions without injected states: inject one in a /ws session"
    elif source.set_state is None:
        why = (
            "This server cannot start an episode from an injected state: serve it with "
            "create_app(..., set_state=fn) (openenv-gym serve --set-state module:fn), where "
            "fn(env, injected_state) sets the env's state after its reset and returns (observation, info)"
        )
    else:
        return
    raise validation_error(["injected_state"], why, reset.injected_state)


def inject_state(source: EnvSource, env: Any, state: Any) -> tuple[Any, Any]:
    """Run the server's ``set_state`` hook on ``env``: the observation and info it returns."""
    assert source.set_state is not None
    result = source.set_state(env, state)
    if not isinstance(result, tuple) or len(result) != 2:
        raise TypeError(
            f"the set_state hook returned {type(result).__name__}: it returns (observation, info) "
            f"of the injected state, as env.reset does"
        )
    return result


def env_error(exc: Exception) -> ProtocolError:
    """The EXECUTION_ERROR for an exception the env raised: its message, and the
    name of its type in ``exception`` (a client raises a builtin type's own
    exception class too)."""
    return ProtocolError(ErrorCode.EXECUTION_ERROR, describe_error(exc), exception=type(exc).__name__)


def describe_error(exc: BaseException) -> str:
    """``"Type: message"`` of an exception, for error frames (a message longer than
    :data:`~openenv_gym.protocol.messages.MAX_ERROR_CHARS` is cut short: it may quote what a peer sent)."""
    text = clipped(str(exc), MAX_ERROR_CHARS)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__
