"""How a server keeps a fast env's step from paying for threads and wake-ups: the
latency mechanisms, in one place, set by one :class:`LatencyPolicy`.

A remote step of a fast env (CartPole steps in microseconds) costs mostly what
surrounds it: handing the call to a worker thread and back, and the kernel waking the
event loop when the next message lands. Three mechanisms cut that. Each is kept because
a benchmark row, with and without it in one run, shows what it does
(``benchmarks/latency_mechanisms.py``; docs/benchmarks.md, "Latency mechanisms"):

- **Inline execution** (:class:`InlinePromotion`, which
  :class:`~.execution.EnvCaller` consults under ``execution="auto"``): a session
  whose calls proved fast runs them on the event loop, and its first slow call sends it
  back to its thread. CartPole, auto / always on the thread: 2.5x. An EnvPool pool is
  judged by its process's CPU (:func:`usage_for`): over a long session it then stays
  inline, as ``execution="inline"`` does.
- **The inline deadline** (:class:`InlineDeadline`): a watchdog interrupts an inline
  call that runs past ``inline_deadline``, so that a fast env that hangs stalls the loop
  for seconds, not for ever. It is the safety inline execution needs, and costs nothing
  measurable (deadline 5 s / none: within the noise).
- **Busy polling** (:class:`BusyPoll`): after a reply to a client on this machine, the
  loop polls for the next message for a moment instead of sleeping in ``epoll_wait``.
  CartPole, both sides poll / neither: 2.45x. The client's half is
  :data:`~openenv_gym.client.connection.LOOPBACK_BUSY_POLL`.

Each turn of the polling loop first offers the core to whatever else waits for it
(:data:`~openenv_gym._local.spin_turn`): on a busy machine the spinning loop no longer
holds a core that the client, another server or the env's own threads need to produce
the very message it waits for.

    >>> policy = LatencyPolicy(busy_poll=0)          # no busy polling, the rest as default
    >>> promotion = InlinePromotion(policy)
    >>> [promotion.after_thread_call(0.0001, None, None) for _ in range(16)][-1]
    True
"""

from __future__ import annotations

import asyncio
import dataclasses
import signal
import threading
import time
from collections.abc import Callable
from types import FrameType
from typing import ClassVar

from .._local import spin_turn
from ..errors import EnvCallInterrupted

__all__ = [
    "LatencyPolicy", "DEFAULT_POLICY", "InlinePromotion", "InlineDeadline", "BusyPoll", "thread_usage",
    "process_usage", "usage_for",
    "INTERRUPT_SIGNAL", "DEFAULT_INLINE_DEADLINE", "DEFAULT_BUSY_POLL", "MAX_PROMOTE_AFTER",
]

#: Seconds an inline env call may run before it is interrupted (see :class:`InlineDeadline`).
DEFAULT_INLINE_DEADLINE = 5.0

#: Seconds the loop keeps polling after a reply to a loopback session (see :class:`BusyPoll`).
DEFAULT_BUSY_POLL = 0.001

#: The longest run of fast calls an often-demoted session needs to run inline again.
MAX_PROMOTE_AFTER = 4096


@dataclasses.dataclass(frozen=True)
class LatencyPolicy:
    """The settings of a server's latency mechanisms (the server's
    :class:`~.options.ServeOptions` carries the two a user sets:
    ``inline_deadline`` and ``busy_poll``).

        >>> LatencyPolicy().inline_threshold
        0.002
    """

    inline_threshold: float = 0.002
    """Seconds under which an env call counts as fast (see :class:`InlinePromotion`)."""

    promote_after: int = 16
    """Consecutive fast calls on the thread after which a session runs inline."""

    inline_deadline: float | None = DEFAULT_INLINE_DEADLINE
    """Seconds an inline call may run before it is interrupted (``None``: never)."""

    busy_poll: float = DEFAULT_BUSY_POLL
    """Seconds the loop polls for the next message after a reply (0: it sleeps)."""


#: The defaults, what a server runs under unless its options say otherwise.
DEFAULT_POLICY = LatencyPolicy()


try:
    import resource

    _RUSAGE_THREAD: int | None = resource.RUSAGE_THREAD  # Linux
except (ImportError, AttributeError):
    _RUSAGE_THREAD = None

#: A usage: CPU seconds and voluntary context switches, or ``None`` where the platform does not tell.
Usage = Callable[[], tuple[float, int] | None]


def thread_usage() -> tuple[float, int] | None:
    """CPU seconds and voluntary context switches of the calling thread, where
    the platform tells them (Linux), else ``None``."""
    if _RUSAGE_THREAD is None:
        return None
    usage = resource.getrusage(_RUSAGE_THREAD)
    return usage.ru_utime + usage.ru_stime, usage.ru_nvcsw


def process_usage() -> tuple[float, int] | None:
    """CPU seconds of the whole process (all its threads), with no count of blocking,
    where the platform tells them (Linux), else ``None``: the usage of an env that
    computes on threads of its own (see :func:`usage_for`)."""
    if _RUSAGE_THREAD is None:
        return None
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime, 0


def usage_for(env: object) -> Usage:
    """The usage that judges the calls of ``env`` (:class:`InlinePromotion`): its
    calling thread's (:func:`thread_usage`), or for an env whose class says it
    ``computes_on_own_threads`` (an EnvPool pool) the whole process's
    (:func:`process_usage`).

    Such an env's calling thread waits for its threads at every call, which is not
    blocking on the world outside, and its work is their CPU, not the caller's. By
    its thread's usage each of its calls would have blocked, so a call that a busy
    machine slowed down by preempting the pool's threads would send the session
    to its thread, and each time for longer (each demotion doubles the fast calls
    needed to come back): a long session spent more and more of its steps paying
    two thread hand-offs each (docs/benchmarks.md, "A long session on an EnvPool
    server"). By the process's usage such a call was merely preempted, unless the
    process computed ``inline_threshold`` of CPU in it.

        >>> class Pool:
        ...     computes_on_own_threads = True
        >>> usage_for(Pool()) is process_usage, usage_for(object()) is thread_usage
        (True, True)

    An env whose ``unwrapped`` raises is judged by its thread: a guess about speed must
    not fail a session whose env was built.
    """
    try:
        unwrapped = getattr(env, "unwrapped", env)
    except Exception:  # noqa: BLE001 - any env's own property
        return thread_usage
    return process_usage if getattr(type(unwrapped), "computes_on_own_threads", False) else thread_usage


# -- inline execution -------------------------------------------------------------


class InlinePromotion:
    """When a session of ``execution="auto"`` runs its env calls inline, and when it
    goes back to its thread.

    A session starts on its thread; after ``promote_after`` consecutive calls that each
    took less than ``inline_threshold`` seconds it runs inline, and the first call slower
    than that sends it back. Where the platform reports per-thread usage (Linux), a slow
    call that neither blocked nor used ``inline_threshold`` of CPU was only preempted by
    another process: it counts as fast, inline and on the thread alike (on a busy
    machine, a streak of calls timed by the clock alone would rarely reach
    ``promote_after``). The usage is the calling thread's, or for an env that computes
    on threads of its own the process's (:func:`usage_for`). Each demotion doubles the
    run of fast calls needed to come back (up to :data:`MAX_PROMOTE_AFTER`), so a
    genuinely slow env stays on its thread while a fast env that was merely preempted
    on a busy machine returns inline.
    """

    def __init__(self, policy: LatencyPolicy) -> None:
        self.inline_threshold = policy.inline_threshold
        #: Fast calls in a row needed to run inline (doubled at each demotion).
        self.promote_after = policy.promote_after
        self._fast_calls = 0

    def after_inline_call(
        self, elapsed: float, before: tuple[float, int] | None, usage: Callable[[], tuple[float, int] | None]
    ) -> bool:
        """Whether the session stays inline after an inline call that took ``elapsed``
        seconds, its thread's usage ``before`` it; ``usage`` (:func:`thread_usage`) reads
        the usage after it, only for a slow call: a fast one, nearly every call, pays
        one system call for its usage, not two."""
        if elapsed > self.inline_threshold and self._worked(before, usage()):
            self._fast_calls = 0
            self.promote_after = min(self.promote_after * 2, MAX_PROMOTE_AFTER)
            return False
        return True

    def after_thread_call(
        self, elapsed: float | None, before: tuple[float, int] | None, after: tuple[float, int] | None
    ) -> bool:
        """Whether the session now runs inline after a call on its thread (``elapsed``:
        ``None`` when it did not complete)."""
        if elapsed is not None and (elapsed < self.inline_threshold or not self._worked(before, after)):
            self._fast_calls += 1
            return self._fast_calls >= self.promote_after
        self._fast_calls = 0
        return False

    def _worked(self, before: tuple[float, int] | None, after: tuple[float, int] | None) -> bool:
        """Whether a call that took long, between the usages ``before`` and ``after``
        of its thread, blocked or computed (``False``: it was merely preempted;
        ``True`` where the usage is unknown)."""
        if before is None or after is None:
            return True
        cpu, blocked = after[0] - before[0], after[1] > before[1]
        return blocked or cpu >= self.inline_threshold


# -- the deadline of inline calls --------------------------------------------------

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

# -- busy polling ------------------------------------------------------------------


class BusyPoll:
    """One server's busy-polling window (``window=0`` turns it off).

    Between two steps of a fast client on the same machine, a server whose event loop
    sleeps in ``epoll_wait`` must be woken by the kernel when the next message lands. On
    a virtual machine that wake-up costs tens of microseconds on both sides (an
    inter-processor interrupt for the sender, a rescheduled vCPU for the receiver): more
    than a batch of CartPole steps. :class:`BusyPoll` keeps the loop polling instead,
    yielding to every other task on each turn, for up to ``window`` seconds after a
    reply. One window serves all sessions: the loop spins only while some loopback
    session's last reply is younger than ``window``, and only for sessions whose env
    calls run inline (a slow env's step dwarfs a wake-up).

        >>> import asyncio
        >>> async def main():
        ...     poll = BusyPoll(0.001)
        ...     poll.after_reply()          # the loop now spins for up to 1 ms
        ...     await asyncio.sleep(0.005)
        ...     return poll.spinning
        >>> asyncio.run(main())
        False
    """

    def __init__(self, window: float) -> None:
        self.window = window
        self._until = 0.0
        self._task: asyncio.Task | None = None

    @property
    def spinning(self) -> bool:
        return self._task is not None

    def after_reply(self) -> None:
        """Keep the loop polling until ``window`` seconds from now."""
        if not self.window:
            return
        self._until = time.perf_counter() + self.window
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._spin())

    async def _spin(self) -> None:
        try:
            while time.perf_counter() < self._until:
                spin_turn()
                await asyncio.sleep(0)  # a ready task makes the loop poll without sleeping
        finally:
            self._task = None

    def stop(self) -> None:
        """End the current window now (server shutdown)."""
        self._until = 0.0
        if self._task is not None:
            self._task.cancel()
