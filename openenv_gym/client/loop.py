"""Two ways to drive a client's coroutines from blocking code (a Gymnasium vector env).

:class:`LoopThread` runs them on a private asyncio event loop on a background
thread: the connections live on the loop, which keeps answering keepalive
pings while the caller is busy elsewhere, and each blocking call hands one
coroutine to the loop and waits for it. It drives many ``/ws`` sessions at once.

:class:`InlineRunner` runs them in the caller's thread with no event loop: a
coroutine sends its request over a blocking
:class:`~openenv_gym.client.connection.Connection` and awaits
:func:`reply_on` that connection; the runner waits for every such connection
at once, with one ``poll(2)``, and resumes each coroutine whose reply has come.
Requests to several servers are in flight together with no thread hand-off
per message, which is most of a round trip's cost for a batch of cheap envs.
A lone coroutine (a lockstep call on one server) simply blocks on its one
connection (:meth:`~openenv_gym.client.connection.Connection.wait`).

Both offer the same calls: :meth:`~InlineRunner.run` one coroutine,
:meth:`~InlineRunner.gather` several, :meth:`~InlineRunner.start` one in the
background and :meth:`~InlineRunner.wait_until` some of those have finished.

    >>> import asyncio
    >>> loop = LoopThread("example")
    >>> loop.run(asyncio.sleep(0, result=42))
    42
    >>> loop.close()
    >>> async def answer():
    ...     return 42
    >>> InlineRunner().gather([answer(), answer()])
    [42, 42]
"""

from __future__ import annotations

import _thread
import asyncio
import threading
import time
from collections.abc import Callable, Coroutine, Generator
from typing import Any, TypeVar

from .connection import Connection, wait_for_messages

__all__ = ["LoopThread", "InlineRunner", "reply_on", "Outcome"]

T = TypeVar("T")
#: What a coroutine started in the background ended with: its result, or the exception it raised.
Outcome = Any


def _first_error(outcomes: list[Outcome]) -> list[Any]:
    """``outcomes`` when none is an exception; else raise the first one."""
    for outcome in outcomes:
        if isinstance(outcome, BaseException):
            raise outcome
    return outcomes


def _cannot_wait(awaited: Any) -> RuntimeError:
    return RuntimeError(f"InlineRunner cannot wait for {awaited!r}: await reply_on() instead")


class LoopThread:
    """An event loop running forever on a daemon thread until :meth:`close`."""

    #: Waits in the coroutines this runner drives (a reconnect's backoff).
    sleep = staticmethod(asyncio.sleep)

    def __init__(self, name: str) -> None:
        self.loop = asyncio.new_event_loop()
        self._finished = asyncio.Event()  # set on the loop each time a started coroutine ends
        self._thread = threading.Thread(
            target=self.loop.run_forever, name=f"openenv-gym loop {name}", daemon=True
        )
        self._thread.start()

    def run(self, coro: Coroutine[Any, Any, T]) -> T:
        """Run ``coro`` on the loop and return its result (or raise its exception).

        The coroutine bounds its own waiting (every message has a timeout);
        a ``KeyboardInterrupt`` while waiting cancels it.
        """
        if threading.current_thread() is self._thread:
            raise RuntimeError("LoopThread.run() called from its own loop")
        done = _thread.allocate_lock()
        done.acquire()
        box: list[asyncio.Task] = []

        def start() -> None:
            task = self.loop.create_task(coro)
            task.add_done_callback(lambda _: done.release())
            box.append(task)

        self.loop.call_soon_threadsafe(start)
        try:
            done.acquire()
        except BaseException:
            self.loop.call_soon_threadsafe(lambda: box and box[0].cancel())
            raise
        return box[0].result()

    def settle(self, coros: list[Coroutine[Any, Any, Any]]) -> list[Outcome]:
        """Run ``coros`` concurrently until all have ended; each one's :data:`Outcome`."""
        async def all_of() -> list[Outcome]:
            return await asyncio.gather(*coros, return_exceptions=True)

        return self.run(all_of())

    def gather(self, coros: list[Coroutine[Any, Any, Any]]) -> list[Any]:
        """Run ``coros`` concurrently; wait for all, then raise the first error."""
        return _first_error(self.settle(coros))

    def start(self, coro: Coroutine[Any, Any, Any], done: Callable[[Outcome], None]) -> None:
        """Run ``coro`` in the background; ``done(outcome)`` is called on the loop
        when it ends. The coroutine runs later: what it reads must not change meanwhile."""
        def begin() -> None:
            def finished(task: asyncio.Task) -> None:
                done(task.exception() or task.result())
                self._finished.set()

            self.loop.create_task(coro).add_done_callback(finished)

        self.loop.call_soon_threadsafe(begin)

    def wait_until(self, condition: Callable[[], bool], timeout: float | None) -> bool:
        """Wait until ``condition()`` (checked on the loop, each time a started
        coroutine ends) holds: ``False`` after ``timeout`` seconds without."""
        async def wait() -> bool:
            deadline = None if timeout is None else time.monotonic() + timeout
            while not condition():
                self._finished.clear()
                remaining = None if deadline is None else deadline - time.monotonic()
                try:
                    await asyncio.wait_for(self._finished.wait(), remaining)
                except asyncio.TimeoutError:
                    return condition()
            return True

        return self.run(wait())

    def close(self, timeout: float = 5.0) -> None:
        """Stop the loop and its thread (idempotent)."""
        if self.loop.is_closed():
            return
        if self._thread.is_alive():
            self.loop.call_soon_threadsafe(self.loop.stop)
            self._thread.join(timeout)
        if not self._thread.is_alive():
            self.loop.close()


class _Wait:
    """What a coroutine driven by :class:`InlineRunner` awaits: a message on
    ``connection`` until ``deadline`` (``time.monotonic()``), or with no
    connection, the deadline alone. It resumes with whether the message came."""

    __slots__ = ("connection", "deadline")

    def __init__(self, connection: Connection | None, deadline: float | None) -> None:
        self.connection = connection
        self.deadline = deadline

    def __await__(self) -> Generator[_Wait, bool, bool]:
        return (yield self)

    def block(self) -> bool:
        """Wait in this thread until this wait is over: whether the message came."""
        remaining = None if self.deadline is None else max(0.0, self.deadline - time.monotonic())
        if self.connection is None:
            time.sleep(remaining or 0.0)
            return False
        return self.connection.wait(remaining)


def reply_on(connection: Connection, timeout: float | None) -> _Wait:
    """Await it (in a coroutine :class:`InlineRunner` drives) to wait for a
    message on ``connection``: ``True`` when one is there to read (or the
    connection closed: reading raises why), ``False`` after ``timeout`` seconds."""
    return _Wait(connection, None if timeout is None else time.monotonic() + timeout)


class _Task:
    """A coroutine :class:`InlineRunner` drives, and who to tell when it ends."""

    __slots__ = ("coro", "done", "outcome", "finished")

    def __init__(self, coro: Coroutine[Any, Any, Any], done: Callable[[Outcome], None] | None) -> None:
        self.coro = coro
        self.done = done
        self.outcome: Outcome = None
        self.finished = False


class InlineRunner:
    """Runs coroutines in the caller's thread, with no event loop.

    A coroutine runs at once up to its first wait: after :meth:`start`
    returns, its request is sent. It suspends only by awaiting :func:`reply_on`
    (or :meth:`sleep`); the runner resumes it from :meth:`run`, :meth:`gather`
    or :meth:`wait_until`, whichever is waiting when its reply comes, so one
    thread keeps several servers busy. Coroutines that never suspend (in-memory
    sessions) simply run to their end.

        >>> async def answer():
        ...     return 42
        >>> InlineRunner().run(answer())
        42
    """

    def __init__(self) -> None:
        self._waiting: dict[_Task, _Wait] = {}

    def run(self, coro: Coroutine[Any, Any, T]) -> T:
        """Run ``coro`` (and any started ones meanwhile) to its end: its result.

        Alone (nothing else waiting, the lockstep case), it is driven here
        directly, each wait blocking on its one connection.
        """
        if self._waiting:
            return self.gather([coro])[0]
        value: bool | None = None
        while True:
            try:
                awaited = coro.send(value)
            except StopIteration as stop:
                return stop.value
            if not isinstance(awaited, _Wait):
                coro.close()
                raise _cannot_wait(awaited)
            try:
                value = awaited.block()
            except BaseException:
                self._waiting[_Task(coro, None)] = awaited  # interrupted: a later wait resumes it
                raise

    def settle(self, coros: list[Coroutine[Any, Any, Any]]) -> list[Outcome]:
        """Run ``coros`` concurrently until all have ended; each one's :data:`Outcome`."""
        tasks = [self._begin(coro, None) for coro in coros]
        self.wait_until(lambda: all(task.finished for task in tasks), None)
        return [task.outcome for task in tasks]

    def gather(self, coros: list[Coroutine[Any, Any, Any]]) -> list[Any]:
        """Run ``coros`` concurrently; wait for all, then raise the first error."""
        return _first_error(self.settle(coros))

    def start(self, coro: Coroutine[Any, Any, Any], done: Callable[[Outcome], None]) -> None:
        """Run ``coro`` up to its first wait now, the rest whenever this runner
        waits; ``done(outcome)`` is called when it ends."""
        self._begin(coro, done)

    def wait_until(self, condition: Callable[[], bool], timeout: float | None) -> bool:
        """Drive the suspended coroutines until ``condition()`` holds: ``False``
        after ``timeout`` seconds (``None``: no limit) without."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while not condition():
            if not self._waiting:
                raise RuntimeError("InlineRunner.wait_until(): the condition can no longer come true")
            now = time.monotonic()
            if deadline is not None and now >= deadline:
                return False
            self._resume_ready(now, deadline)
        return True

    def _resume_ready(self, now: float, limit: float | None) -> None:
        """Wait for the first reply or deadline (or ``limit``), and resume every
        coroutine whose wait is over."""
        waits = self._waiting.values()
        wake = min((w.deadline for w in waits if w.deadline is not None), default=limit)
        if limit is not None and wake is not None:
            wake = min(wake, limit)
        timeout = None if wake is None else max(0.0, wake - now)
        connections = [w.connection for w in waits if w.connection is not None]
        if connections:
            ready = wait_for_messages(connections, timeout)
        else:
            time.sleep(timeout or 0.0)
            ready = []
        now = time.monotonic()
        for task, wait in list(self._waiting.items()):
            if wait.connection in ready:
                del self._waiting[task]
                self._step(task, True)
            elif wait.deadline is not None and now >= wait.deadline:
                del self._waiting[task]
                self._step(task, False)

    def _begin(self, coro: Coroutine[Any, Any, Any], done: Callable[[Outcome], None] | None) -> _Task:
        task = _Task(coro, done)
        self._step(task, None)
        return task

    def _step(self, task: _Task, value: bool | None) -> None:
        """Resume ``task`` with ``value`` until it waits again or ends."""
        try:
            awaited = task.coro.send(value)
        except StopIteration as stop:
            self._end(task, stop.value)
        except BaseException as exc:
            self._end(task, exc)
            if not isinstance(exc, Exception):
                raise
        else:
            if isinstance(awaited, _Wait):
                self._waiting[task] = awaited
            else:
                task.coro.close()
                self._end(task, _cannot_wait(awaited))

    @staticmethod
    def _end(task: _Task, outcome: Outcome) -> None:
        task.outcome, task.finished = outcome, True
        if task.done is not None:
            task.done(outcome)

    @staticmethod
    async def sleep(seconds: float) -> None:
        """Waits in the coroutines this runner drives (a reconnect's backoff),
        while the others go on."""
        await _Wait(None, time.monotonic() + seconds)

    def close(self, timeout: float = 5.0) -> None:
        """Abandon the coroutines still waiting (their connections are closed by their owners)."""
        waiting, self._waiting = self._waiting, {}
        for task in waiting:
            task.coro.close()
