"""One session: one environment (or vector env), and the replies to its messages.

A session answers typed client messages (:mod:`openenv_gym.protocol`) with
typed replies. It knows nothing about sockets; the server's hosting loop
feeds it. Protocol problems are raised as
:class:`~openenv_gym.errors.ProtocolError` with the OpenEnv error code the
reply must carry, and values go out the way the session's negotiated
:class:`~openenv_gym.protocol.Codec` sends them.

Environment calls run through an :class:`EnvCaller`, which keeps a slow env
from stalling the server's event loop (and so every other session) while
letting fast envs skip the thread hand-off that would otherwise dominate
their step time.

A session also serves MCP: JSON-RPC requests (``/ws`` ``mcp`` frames, ``WS /mcp``
frames, ``POST /mcp`` for a session that outlives its socket) are answered by
:mod:`.jsonrpc` on the session, and a Gymnasium session's tools
(:mod:`.tools`) run on its env and its episode, also as ``/ws`` steps
``{"type": "call_tool", ...}``.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import queue
import threading
import time
import uuid
from collections.abc import Callable, Mapping
from concurrent.futures import Future
from typing import Any, Literal

from ..errors import EnvCallTimeout, ErrorCode, ProtocolError, ToolCallError
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
from .deadline import EnvCallInterrupted, InlineDeadline
from .isolation import EnvCrashed, env_processes
from .source import EnvSource
from .tools import Position, Tool, ToolOutcome, gym_tools

__all__ = [
    "EnvHost", "Session", "EnvCaller", "Execution", "describe_error", "env_error", "HungCalls",
    "wants_text", "check_injection", "inject_state", "SINGLE_THREAD_NAME",
]

logger = logging.getLogger("openenv_gym.server")

#: How environment calls are run: ``"thread"`` always on the session's own
#: worker thread; ``"inline"`` always on the event loop (fastest, but a slow
#: call stalls every session); ``"auto"`` starts on the thread and moves a
#: session inline once its calls have proven fast, and back for good at the
#: first slow call.
Execution = Literal["auto", "thread", "inline", "process"]


#: Seconds building a session's env may take under a step timeout (if that is shorter).
BUILD_TIMEOUT = 60.0

#: Seconds an inline env call may run before it is interrupted (see :mod:`.deadline`).
DEFAULT_INLINE_DEADLINE = 5.0

#: The longest run of fast calls an often-demoted session needs to run inline again.
MAX_PROMOTE_AFTER = 4096

try:
    import resource

    _RUSAGE_THREAD: int | None = resource.RUSAGE_THREAD  # Linux
except (ImportError, AttributeError):
    _RUSAGE_THREAD = None


def _thread_usage() -> tuple[float, int] | None:
    """CPU seconds and voluntary context switches of the calling thread, where
    the platform tells them (Linux), else ``None``."""
    if _RUSAGE_THREAD is None:
        return None
    usage = resource.getrusage(_RUSAGE_THREAD)
    return usage.ru_utime + usage.ru_stime, usage.ru_nvcsw


class EnvCaller:
    """Runs one session's env calls inline or on its own worker thread.

    In ``"auto"`` mode a session starts on its thread; after ``promote_after``
    consecutive calls that each took less than ``inline_threshold`` seconds it
    runs inline, and the first call slower than that sends it back to its
    thread. Where the platform reports per-thread usage (Linux), a slow
    call that neither blocked nor used ``inline_threshold`` of CPU was only
    preempted by another process: it counts as fast, inline and on the
    thread alike (on a busy machine, a streak of calls timed by the clock
    alone would rarely reach ``promote_after``). Each demotion
    doubles the run of fast calls needed to come back
    (up to :data:`MAX_PROMOTE_AFTER`), so a genuinely slow env stays on its
    thread while a fast env that was merely preempted on a busy machine
    returns inline. A fast env that suddenly turns slow stalls the event loop
    for that one call. Thread-bound envs (GUI toolkits, browser automation)
    should use ``"thread"``, which keeps every call on one thread.

    With ``single_thread``, every call runs on the one thread this process
    keeps for envs that are not thread-safe (:func:`single_thread_worker`):
    pygame, which draws the frames of Gymnasium's classic control, toy text and
    Box2D envs and of PettingZoo's games, keeps process-wide state that two
    threads must not touch at once. Such calls never run inline (the event
    loops of two servers in one process are two threads), and the sessions of
    such envs take turns on that thread.

    With a ``timeout``, every call runs on the thread (a hung call inline
    could not be timed out) and one that takes longer raises
    :class:`EnvCallTimeout`; the hung thread is abandoned and the next call
    gets a fresh one (a single-thread caller's calls stay on their one thread,
    which is not abandoned: the calls queued behind a hung one wait for it, and
    the timeout counts that wait). Without one, an inline call that runs past
    ``inline_deadline`` is interrupted where the platform allows
    (:mod:`.deadline`), raising :class:`EnvCallInterrupted`, and the session
    runs on its thread for good: a fast env that hangs stalls the event loop
    for ``inline_deadline`` seconds, not for ever.

    With ``"process"``, each env lives in a process of its own
    (:mod:`.isolation`), which may allocate ``memory_mb`` MiB at most (``None``:
    no cap; a cap needs ``"process"``).
    """

    def __init__(
        self,
        execution: Execution = "auto",
        *,
        timeout: float | None = None,
        inline_threshold: float = 0.002,
        promote_after: int = 16,
        hung: HungCalls | None = None,
        inline_deadline: float | None = DEFAULT_INLINE_DEADLINE,
        single_thread: bool = False,
        memory_mb: int | None = None,
    ) -> None:
        if execution not in ("auto", "thread", "inline", "process"):
            raise ValueError(f"execution must be 'auto', 'thread', 'inline' or 'process', not {execution!r}")
        if memory_mb is not None and execution != "process":
            raise ValueError(
                f"env_memory_mb caps the memory of each env's own process, and execution={execution!r} "
                f"runs envs in the server's: add execution='process' (--execution process), or drop the cap"
            )
        if memory_mb is not None and memory_mb <= 0:
            raise ValueError(f"env_memory_mb is a positive number of MiB, not {memory_mb}")
        #: The memory cap of each env's process, in MiB (``None``: none).
        self.memory_mb = memory_mb
        #: Each session's env lives in a process of its own (:mod:`.isolation`); its
        #: calls, which wait on that process, run on the session's thread.
        self.isolated = execution == "process"
        if self.isolated:
            execution = "thread"
        if single_thread and execution == "inline":
            raise ValueError(
                "this env is served on one thread (it draws with pygame, or single_thread=True said so), "
                "and execution='inline' runs its calls on the event loop: use execution='auto' or "
                "'thread', or single_thread=False (--no-single-thread) if the env is safe on several threads"
            )
        #: Every call runs on this process's one thread for envs that are not
        #: thread-safe (an env in a process of its own has that process to itself).
        self.single_thread = single_thread and not self.isolated
        if self.single_thread:
            execution = "thread"
        if timeout is not None:
            if timeout <= 0:
                raise ValueError(f"the step timeout must be positive, not {timeout}")
            if execution == "inline":
                raise ValueError(
                    "a step timeout needs env calls on a worker thread: use execution='auto' "
                    "or 'thread' with it"
                )
            execution = "thread"
        if inline_deadline is not None and inline_deadline <= 0:
            raise ValueError(f"the inline deadline must be positive or None, not {inline_deadline}")
        self.timeout = timeout
        #: Where calls this caller abandons are counted until they return.
        self.hung = hung
        #: Seconds an inline call may run before it is interrupted (see :mod:`.deadline`).
        self.inline_deadline = inline_deadline
        self._deadline: InlineDeadline | None = None
        self.execution = execution
        self.inline_threshold = inline_threshold
        self.promote_after = promote_after
        self._inline = execution == "inline"
        self._fast_calls = 0
        #: Seconds the calls spent running (on the thread: from when it started
        #: the call, so waiting for the thread is not counted), summed until reset.
        self.seconds = 0.0
        self._worker: _Worker | None = None

    @property
    def inline(self) -> bool:
        return self._inline

    @property
    def busy(self) -> bool:
        """Whether a call is running on the session's own thread (the shared single
        thread's calls are not the session's to abandon)."""
        return self._worker is not None and not self.single_thread and self._worker.busy

    def maker(self, source: EnvSource) -> Callable[[], Any]:
        """What builds one of ``source``'s envs for a session of this caller: in a
        process of its own, under the memory cap, when isolated; else in this process."""
        if self.isolated:
            return functools.partial(source.make_isolated, self.memory_mb)
        return source.make

    async def __call__(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        if self._inline:
            auto = self.execution == "auto"
            usage = _thread_usage() if auto else None
            deadline = self._deadline or self._deadline_keeper()
            start = time.perf_counter()
            if deadline is not None:
                deadline.begin(self.inline_deadline)  # type: ignore[arg-type]
            try:
                return fn(*args, **kwargs)
            except EnvCallInterrupted:
                self.execution, self._inline = "thread", False  # this env hangs: never inline again
                raise
            finally:
                if deadline is not None:
                    deadline.end()
                self.seconds += (elapsed := time.perf_counter() - start)
                if auto and elapsed > self.inline_threshold and self._worked(usage, _thread_usage()):
                    self._inline = False
                    self._fast_calls = 0
                    self.promote_after = min(self.promote_after * 2, MAX_PROMOTE_AFTER)
        return await self._on_thread(fn, args, kwargs, self.timeout)

    async def build(self, fn: Callable[[], Any]) -> Any:
        """Build a session's env (``fn``) on its thread: env calls' timeout is for
        calls, so a build gets :data:`BUILD_TIMEOUT` seconds, or more. A caller
        told to run everything inline (``execution="inline"``) builds inline too."""
        if self.execution == "inline":
            return await self(fn)
        timeout = None if self.timeout is None else max(self.timeout, BUILD_TIMEOUT)
        return await self._on_thread(fn, (), {}, timeout)

    async def _on_thread(
        self, fn: Callable[..., Any], args: tuple, kwargs: dict, timeout: float | None
    ) -> Any:
        if self._worker is None:
            self._worker = single_thread_worker() if self.single_thread else _Worker()
        timed = _Timed(fn, args, kwargs, usage=self.execution == "auto")  # only "auto" moves calls
        try:
            future = asyncio.wrap_future(self._worker.submit(timed))
            if timeout is None:
                return await future
            try:
                return await asyncio.wait_for(future, timeout)
            except asyncio.TimeoutError:
                self.shutdown()  # the hung thread is left behind; the next call gets a new one
                raise EnvCallTimeout(f"{getattr(fn, '__name__', 'the call')} took longer than {timeout} s") from None
        finally:
            if timed.elapsed is not None:
                self.seconds += timed.elapsed
            if self.execution == "auto":
                elapsed = timed.elapsed
                if elapsed is not None and (
                    elapsed < self.inline_threshold or not self._worked(timed.before, timed.after)
                ):
                    self._fast_calls += 1
                    if self._fast_calls >= self.promote_after:
                        self._inline = True
                else:
                    self._fast_calls = 0

    def _deadline_keeper(self) -> InlineDeadline | None:
        """The deadline keeper of the event loop's thread, when calls have a deadline."""
        if self.inline_deadline is None:
            return None
        if self._deadline is None:
            self._deadline = InlineDeadline.for_this_thread()
        return self._deadline

    def _worked(self, before: tuple[float, int] | None, after: tuple[float, int] | None) -> bool:
        """Whether a call that took long, between the usages ``before`` and ``after``
        of its thread, blocked or computed (``False``: it was merely preempted;
        ``True`` where the usage is unknown)."""
        if before is None or after is None:
            return True
        cpu, blocked = after[0] - before[0], after[1] > before[1]
        return blocked or cpu >= self.inline_threshold

    def shutdown(self) -> None:
        """Let the worker thread end once its call (if any) returns; a call that is
        still running counts in ``hung`` until it does. The single thread, which
        other sessions share, goes on."""
        if self._worker is not None and not self.single_thread:
            self._worker.abandon(self.hung)
        self._worker = None


class HungCalls:
    """The env calls of one server still running on threads their sessions
    abandoned (a step timeout, a close that did not return): each holds a
    thread, and perhaps an environment, until it returns."""

    def __init__(self) -> None:
        self._workers: set[_Worker] = set()

    def __len__(self) -> int:
        return len(self._workers)

    def add(self, worker: _Worker) -> None:
        self._workers.add(worker)

    def discard(self, worker: _Worker) -> None:
        self._workers.discard(worker)


class _Worker:
    """One daemon thread running the calls submitted to it, in order.

    A daemon, unlike a ``ThreadPoolExecutor``'s workers, which the interpreter
    joins at exit: an env call that hangs for good must not keep the server
    process (or a program that used ``local_server``) from exiting.
    """

    def __init__(self, name: str = "openenv-gym-env") -> None:
        self._calls: queue.SimpleQueue[tuple[Future, Callable[[], Any]] | None] = queue.SimpleQueue()
        self._busy = False
        #: Where it is counted once abandoned in the middle of a call, until the call returns.
        self._hung: HungCalls | None = None
        #: Orders the end of a call against its abandonment (else a call ending then could stay counted).
        self._lock = threading.Lock()
        threading.Thread(target=self._run, name=name, daemon=True).start()

    @property
    def busy(self) -> bool:
        """Whether it is running a call now."""
        return self._busy

    def submit(self, fn: Callable[[], Any]) -> Future:
        future: Future = Future()
        self._calls.put((future, fn))
        return future

    def abandon(self, hung: HungCalls | None) -> None:
        """No more calls: the thread ends once the one it runs (if any) returns,
        counted in ``hung`` until then."""
        with self._lock:
            if self._busy and hung is not None:
                self._hung = hung
                hung.add(self)
        self._calls.put(None)

    def _run(self) -> None:
        while (call := self._calls.get()) is not None:
            future, fn = call
            if not future.set_running_or_notify_cancel():
                continue
            self._busy = True
            try:
                result = fn()
            except BaseException as exc:  # noqa: BLE001 - handed to the caller
                future.set_exception(exc)
            else:
                future.set_result(result)
            finally:
                with self._lock:
                    self._busy = False
                    if self._hung is not None:
                        self._hung.discard(self)


#: The name of the thread that runs every call of this process's single-thread envs.
SINGLE_THREAD_NAME = "openenv-gym-single-thread"

_single_thread: _Worker | None = None
_single_thread_lock = threading.Lock()


def single_thread_worker() -> _Worker:
    """The one thread of this process for envs that are not thread-safe (see
    :class:`EnvCaller`), started at its first call and shared by every server
    in the process: pygame's state is the process's, whichever server draws."""
    global _single_thread
    with _single_thread_lock:
        if _single_thread is None:
            _single_thread = _Worker(SINGLE_THREAD_NAME)
        return _single_thread


class _Timed:
    """A call run on a worker thread, timed there: the seconds it took and, with ``usage``
    and where the platform tells it, the thread's usage before and after (see :func:`_thread_usage`)."""

    __slots__ = ("fn", "args", "kwargs", "usage", "elapsed", "before", "after")

    def __init__(self, fn: Callable[..., Any], args: tuple, kwargs: dict, *, usage: bool) -> None:
        self.fn, self.args, self.kwargs, self.usage = fn, args, kwargs, usage
        self.elapsed: float | None = None
        self.before: tuple[float, int] | None = None
        self.after: tuple[float, int] | None = None

    def __call__(self) -> Any:
        if self.usage:
            self.before = _thread_usage()
        start = time.perf_counter()
        result = self.fn(*self.args, **self.kwargs)
        self.elapsed = time.perf_counter() - start
        if self.usage:
            self.after = _thread_usage()
        return result


class EnvHost:
    """What every kind of session shares: one environment (or vector env),
    built by ``build`` and called through an :class:`EnvCaller`, the codec of
    its connection, and the time of its last message (for the idle reaper)."""

    #: Environments this session holds, counted against the server's ``max_sessions``.
    slots = 1
    #: Whether its env steps in the server's process (its step times then
    #: tell how fast the env is; see :class:`~openenv_gym.server.vector.StepClock`).
    in_process = True
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
        while its env is being built has the processes of that env killed once built."""
        try:
            self.env = await self._built_env()
        except Exception as exc:  # noqa: BLE001 - any factory failure is reported
            raise ProtocolError(
                ErrorCode.FACTORY_ERROR,
                f"Environment factory '{self.source.name}' failed to create {self.builds}: "
                f"{describe_error(exc)}",
                factory_name=self.source.name,
            ) from exc

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

    def toolbox(self) -> dict[str, Tool] | None:
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
        try:
            return await self.call(fn, *args, **kwargs)
        except ToolCallError:
            raise  # a tool's own report of why it failed
        except (EnvCallTimeout, EnvCrashed) as exc:
            what = "hung" if isinstance(exc, EnvCallTimeout) else "crashed"
            env, self.env, self._reset_done = self.env, None, False
            for process in env_processes(env):
                process.kill()
            told = f"The environment {what}: {exc}"
            if self.stop_reason is not None:  # the session is ending: no fresh env for it
                told += f". {self.stop_reason}"
            else:
                await self.start()
                told += ". This session now has a fresh environment; call reset to start a new episode"
            raise ProtocolError(ErrorCode.EXECUTION_ERROR, told) from exc
        except Exception as exc:  # noqa: BLE001 - env errors go back to the client
            raise env_error(exc) from exc

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
        #: Whether observation frames carry the observation's ``text``.
        self.text = wants_text(codec, {})
        #: Where the current episode stands (``None`` before the first reset).
        self.position: Position | None = None
        self._view: Any = None
        self._view_env: Any = None
        self._tools: dict[str, Tool] | None = None

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
        self._reset_done = True

    def require_episode(self) -> None:
        if not self._reset_done:
            raise ProtocolError(
                ErrorCode.EXECUTION_ERROR, "Call reset before step: this session has no episode yet"
            )

    async def _reset(self, reset: Reset) -> ServerMessage:
        check_injection(self.source, reset)
        obs, info, text = await self.run(self.env_reset, reset, self.text)
        self.begin_episode(reset)
        self.position = Position(obs, info, text=text)
        return self._observation(obs, None, False, False, info, text)

    async def _step(self, step: Step) -> ServerMessage:
        if (tool := tool_action(step.fields)) is not None:  # OpenEnv's MCP actions carry a type
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
        return obs, info, self._obs_text(obs, info) if text else None

    def env_step(self, action: Any, text: bool) -> tuple[Any, Any, Any, Any, Any, str | None]:
        """Step the env, and render the observation's text when ``text`` (one env call)."""
        obs, reward, terminated, truncated, info = self._env().step(action)
        return obs, reward, terminated, truncated, info, self._obs_text(obs, info) if text else None

    async def _advance(self, action: Any, text: bool) -> Any:
        """Step the env with a checked action; the reward (the position moves on)."""
        obs, reward, terminated, truncated, info, rendered = await self.run(self.env_step, action, text)
        self.step_count += 1
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
        env = self._env()
        if self._view is None or self._view_env is not env:
            source = self.source
            if source.text_view is None and self.call.isolated:
                self._view = view_for_spaces(source.observation_space, source.action_space, env_id=source.env_id)
            else:
                self._view = view_for(env, source.text_view)
            self._view_env = env
        return self._view

    def _obs_text(self, obs: Any, info: Any) -> str:
        """The observation's text by the view; a view that fails falls back to the
        text of the observation space (and the failure is logged)."""
        try:
            return self.view.obs_to_text(obs, info)
        except Exception:  # noqa: BLE001 - the text must not cost the step
            logger.warning("text_view_failed env=%s", self.source.name, exc_info=True)
            return value_text(self.source.observation_space, obs)

    def toolbox(self) -> dict[str, Tool] | None:
        if self._tools is None:
            tools = [*gym_tools(self.view), *self.source.tools]
            self._tools = {tool.name: tool for tool in tools}
        return self._tools

    async def begin_if_needed(self) -> Position:
        if self.position is None or not self._reset_done:
            await self._reset(Reset())
        assert self.position is not None
        return self.position

    async def position_text(self) -> str:
        position = self.position
        assert position is not None
        if position.text is None:
            position.text = await self.run(self._obs_text, position.obs, position.info)
        return position.text

    async def play(self, action: Any) -> float:
        return float(await self._advance(action, True))

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
