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
``/health`` and shutdown would wait. :class:`InlineDeadline` bounds that: a watchdog
thread notices an inline call that has run past its deadline and interrupts it, by a
signal to the event loop's thread, whose handler raises
:class:`~openenv_gym.errors.EnvCallInterrupted` inside the env call. The session then
answers EXECUTION_ERROR, gets a fresh env, and runs its calls on its thread from then on.
Signals reach Python code in the main thread only, so the deadline holds where the event
loop runs in the main thread (``openenv-gym serve``, :func:`~openenv_gym.serve`); under
:func:`~openenv_gym.local_server`'s background thread it is not enforced. A C extension
that blocks without checking for signals cannot be interrupted; such an env belongs on its
thread (``execution="thread"``) or in its own process (``execution="process"``).

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
import signal
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from types import FrameType
from typing import Any, ClassVar, Literal

from ..errors import EnvCallInterrupted, EnvCallTimeout
from .source import EnvSource

__all__ = [
    "InlineDeadline", "EnvCallInterrupted", "INTERRUPT_SIGNAL",
    "Execution", "EnvCaller", "HungCalls", "single_thread_worker", "SINGLE_THREAD_NAME", "BUILD_TIMEOUT",
    "DEFAULT_INLINE_DEADLINE",
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

#: Seconds an inline env call may run before it is interrupted (see :class:`InlineDeadline`).
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
    (:class:`InlineDeadline`), raising :class:`EnvCallInterrupted`, and the session
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
        #: Seconds an inline call may run before it is interrupted (see :class:`InlineDeadline`).
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


# -- the deadline of inline calls ---------------------------------------------------

#: The signal the watchdog sends to interrupt an overdue inline call.
INTERRUPT_SIGNAL = getattr(signal, "SIGUSR2", None)
#: Seconds between the watchdog's looks.
_TICK = 0.1


class InlineDeadline:
    """Interrupts the inline env call of one thread that runs past its deadline.

    One per thread that runs an event loop (:meth:`for_this_thread`); a
    no-op where signals cannot reach (not the main thread, no ``SIGUSR2``).
    """

    _instances: ClassVar[dict[int, InlineDeadline]] = {}
    _lock: ClassVar[threading.Lock] = threading.Lock()

    def __init__(self, enforced: bool) -> None:
        self.enforced = enforced
        self._ends_at: float | None = None
        self._seconds = 0.0
        if enforced:
            assert INTERRUPT_SIGNAL is not None
            self._thread_id = threading.get_ident()
            signal.signal(INTERRUPT_SIGNAL, self._interrupt)
            threading.Thread(target=self._watch, name="openenv-gym deadline", daemon=True).start()

    @classmethod
    def for_this_thread(cls) -> InlineDeadline:
        """The deadline keeper of the calling thread (made on first use)."""
        ident = threading.get_ident()
        with cls._lock:
            keeper = cls._instances.get(ident)
            if keeper is None:
                main = threading.current_thread() is threading.main_thread()
                keeper = cls._instances[ident] = cls(enforced=main and INTERRUPT_SIGNAL is not None)
            return keeper

    def begin(self, seconds: float) -> None:
        """An inline env call that must end within ``seconds`` starts (``end`` it in a ``finally``)."""
        if self.enforced:
            self._seconds = seconds
            self._ends_at = time.monotonic() + seconds

    def end(self) -> None:
        """The inline env call ended."""
        self._ends_at = None

    def _watch(self) -> None:
        while True:
            time.sleep(_TICK)
            ends_at = self._ends_at
            if ends_at is not None and time.monotonic() > ends_at:
                signal.pthread_kill(self._thread_id, INTERRUPT_SIGNAL)  # type: ignore[arg-type]
                time.sleep(_TICK)  # once per tick at most, until the call unwinds

    def _interrupt(self, signum: int, frame: FrameType | None) -> None:
        ends_at = self._ends_at
        if ends_at is not None and time.monotonic() > ends_at:
            self._ends_at = None
            raise EnvCallInterrupted(f"the call ran inline for longer than {self._seconds} s")
