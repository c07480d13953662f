"""A private asyncio event loop on a background thread, driven from blocking code.

:class:`LoopThread` lets a synchronous API (a Gymnasium vector env) run many
WebSocket connections concurrently: the connections live on the loop, which
keeps answering keepalive pings while the caller is busy elsewhere, and each
blocking call hands one coroutine to the loop and waits for it.

    >>> import asyncio
    >>> loop = LoopThread("example")
    >>> loop.run(asyncio.sleep(0, result=42))
    42
    >>> loop.close()
"""

from __future__ import annotations

import _thread
import asyncio
import threading
import time
from collections.abc import Coroutine
from typing import Any, TypeVar

__all__ = ["LoopThread", "InlineRunner"]

T = TypeVar("T")


class LoopThread:
    """An event loop running forever on a daemon thread until :meth:`close`."""

    #: Waits in the coroutines this runner drives (a reconnect's backoff).
    sleep = staticmethod(asyncio.sleep)

    def __init__(self, name: str) -> None:
        self.loop = asyncio.new_event_loop()
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

    def close(self, timeout: float = 5.0) -> None:
        """Stop the loop and its thread (idempotent)."""
        if self.loop.is_closed():
            return
        if self._thread.is_alive():
            self.loop.call_soon_threadsafe(self.loop.stop)
            self._thread.join(timeout)
        if not self._thread.is_alive():
            self.loop.close()


class InlineRunner:
    """Runs coroutines that never suspend in the caller's thread.

    The stand-in for :class:`LoopThread` when a vector env has a single
    lockstep session over a blocking connection
    (:class:`~openenv_gym.client.async_session.BlockingSession`): the same
    coroutine code runs with no event loop and no thread hand-off.

        >>> async def answer():
        ...     return 42
        >>> InlineRunner().run(answer())
        42
    """

    def run(self, coro: Coroutine[Any, Any, T]) -> T:
        try:
            coro.send(None)
        except StopIteration as stop:
            return stop.value
        coro.close()
        raise RuntimeError("InlineRunner.run() got a coroutine that waits for the event loop")

    @staticmethod
    async def sleep(seconds: float) -> None:
        """Waits in the coroutines this runner drives (a reconnect's backoff):
        blocking, since they must never suspend."""
        time.sleep(seconds)

    def close(self, timeout: float = 5.0) -> None:
        """Nothing to stop (kept for the :class:`LoopThread` interface)."""
