"""How a session's env calls execute: on the event loop, on a worker thread, on the
process's one thread, or in a process of its own, each under its deadline.

:class:`EnvCaller` runs one session's calls. A fast env's calls run inline on the
event loop, skipping the thread hand-off that would otherwise dominate their step
time; a slow env's run on the session's own worker thread, so that it cannot stall
every other session; envs that are not thread-safe (pygame's) take turns on one
thread (:func:`single_thread_worker`); and with ``execution="process"`` each env
lives in a process of its own (:mod:`.isolation`). A call that outlives its step
timeout is abandoned and counted in :class:`HungCalls` until it returns.

An inline call that hangs would hang the event loop with it: every other session,
``/health`` and shutdown would wait. :class:`~.latency.InlineDeadline` bounds that: a
watchdog thread notices an inline call that has run past its deadline and interrupts it,
by a signal to the event loop's thread, whose handler raises
:class:`~openenv_gym.errors.EnvCallInterrupted` inside the env call. The session then
answers EXECUTION_ERROR, gets a fresh env, and runs its calls on its thread from then on.
Signals reach Python code in the main thread only, so the deadline holds where the event
loop runs in the main thread (``openenv-gym serve``, :func:`~openenv_gym.serve`); under
:func:`~openenv_gym.local_server`'s background thread it is not enforced. A C extension
that blocks without checking for signals cannot be interrupted; such an env belongs on its
thread (``execution="thread"``) or in its own process (``execution="process"``).
When a session runs inline, and the deadline, are the latency mechanisms of
:mod:`.latency`, set by its :class:`~.latency.LatencyPolicy`.

    >>> import asyncio
    >>> caller = EnvCaller("thread")
    >>> asyncio.run(caller(sum, [1, 2, 3]))
    6
    >>> caller.shutdown()
"""

from __future__ import annotations

import asyncio
import functools
import logging
import queue
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any, Literal

from ..errors import EnvCallInterrupted, EnvCallTimeout
from .latency import DEFAULT_POLICY, InlineDeadline, InlinePromotion, LatencyPolicy, Usage, thread_usage
from .source import EnvSource

__all__ = ["Execution", "EnvCaller", "HungCalls", "single_thread_worker", "SINGLE_THREAD_NAME", "BUILD_TIMEOUT"]

logger = logging.getLogger("openenv_gym.server")

#: How environment calls are run: ``"thread"`` always on the session's own
#: worker thread; ``"inline"`` always on the event loop (fastest, but a slow
#: call stalls every session); ``"auto"`` starts on the thread and moves a
#: session inline once its calls have proven fast, and back for good at the
#: first slow call.
Execution = Literal["auto", "thread", "inline", "process"]


#: Seconds building a session's env may take under a step timeout (if that is shorter).
BUILD_TIMEOUT = 60.0

class EnvCaller:
    """Runs one session's env calls inline or on its own worker thread.

    In ``"auto"`` mode a session starts on its thread and runs inline once its
    calls have proven fast, back on its thread at the first slow one
    (:class:`~.latency.InlinePromotion`, by the ``policy``'s threshold and run
    length). A fast env that suddenly turns slow stalls the event loop for that
    one call. Thread-bound envs (GUI toolkits, browser automation)
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
    the ``policy``'s ``inline_deadline`` is interrupted where the platform allows
    (:class:`~.latency.InlineDeadline`), raising :class:`EnvCallInterrupted`, and the session
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
        policy: LatencyPolicy = DEFAULT_POLICY,
        timeout: float | None = None,
        hung: HungCalls | None = None,
        single_thread: bool = False,
        memory_mb: int | None = None,
    ) -> None:
        #: The memory cap of each env's process, in MiB (``None``: none).
        self.memory_mb = memory_mb
        #: Each session's env lives in a process of its own (:mod:`.isolation`); its
        #: calls, which wait on that process, run on the session's thread.
        self.isolated = execution == "process"
        if self.isolated:
            execution = "thread"
        #: Every call runs on this process's one thread for envs that are not
        #: thread-safe (an env in a process of its own has that process to itself).
        self.single_thread = single_thread and not self.isolated
        if self.single_thread:
            execution = "thread"
        if timeout is not None:
            execution = "thread"
        self.timeout = timeout
        #: Where calls this caller abandons are counted until they return.
        self.hung = hung
        #: Seconds an inline call may run before it is interrupted (see :class:`~.latency.InlineDeadline`).
        self.inline_deadline = policy.inline_deadline
        self._deadline: InlineDeadline | None = None
        self.execution = execution
        #: When an ``"auto"`` session runs inline.
        self.promotion = InlinePromotion(policy)
        #: The usage that judges its calls' speed: the calling thread's, or for an env
        #: that computes on threads of its own the process's (set by the session that
        #: built the env: :func:`~.latency.usage_for`).
        self.usage: Usage = thread_usage
        self._inline = execution == "inline"
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
            return self.call_inline(fn, *args, **kwargs)
        return await self._on_thread(fn, args, kwargs, self.timeout)

    def call_inline(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        """Run one call on the event loop, under the inline deadline, and (``"auto"``)
        decide from how long it took whether the next runs inline too."""
        auto = self.execution == "auto"
        usage = self.usage() if auto else None
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
            if auto and not self.promotion.after_inline_call(elapsed, usage, self.usage):
                self._inline = False

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
        usage = self.usage if self.execution == "auto" else None  # only "auto" moves calls
        timed = _Timed(fn, args, kwargs, usage=usage)
        try:
            future = asyncio.wrap_future(self._worker.submit(timed))
            if timeout is None:
                return await future
            if not await _within(future, timeout):
                self.shutdown()  # the hung thread is left behind; the next call gets a new one
                raise EnvCallTimeout(f"{getattr(fn, '__name__', 'the call')} took longer than {timeout} s")
            return future.result()
        finally:
            if timed.elapsed is not None:
                self.seconds += timed.elapsed
            if self.execution == "auto" and self.promotion.after_thread_call(timed.elapsed, timed.before, timed.after):
                self._inline = True

    def _deadline_keeper(self) -> InlineDeadline | None:
        """The deadline keeper of the event loop's thread, when calls have a deadline."""
        if self.inline_deadline is None:
            return None
        if self._deadline is None:
            self._deadline = InlineDeadline.for_this_thread()
        return self._deadline

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
    (:func:`~.latency.thread_usage`, or :func:`~.latency.process_usage`) and where the
    platform tells it, that usage before and after."""

    __slots__ = ("fn", "args", "kwargs", "usage", "elapsed", "before", "after")

    def __init__(self, fn: Callable[..., Any], args: tuple, kwargs: dict, *, usage: Usage | None) -> None:
        self.fn, self.args, self.kwargs, self.usage = fn, args, kwargs, usage
        self.elapsed: float | None = None
        self.before: tuple[float, int] | None = None
        self.after: tuple[float, int] | None = None

    def __call__(self) -> Any:
        usage = self.usage
        if usage is not None:
            self.before = usage()
        start = time.perf_counter()
        result = self.fn(*self.args, **self.kwargs)
        self.elapsed = time.perf_counter() - start
        if usage is not None:
            self.after = usage()
        return result


async def _within(future: asyncio.Future, timeout: float) -> bool:
    """Wait at most ``timeout`` seconds for ``future``: whether it is done. If not (or if
    the wait itself is cancelled) it is cancelled, so that its outcome, when its call on a
    thread does end, is dropped rather than reported as never retrieved.

    Not :func:`asyncio.wait_for`: since Python 3.12 it needs a task to cancel, and a step
    answered in the callback that received it (:mod:`.eager`) runs before there is one
    ("Timeout should be used inside a task")."""
    try:
        await asyncio.wait((future,), timeout=timeout)
        finished = future.done()
    finally:
        if not future.done():
            future.cancel()
    return finished
