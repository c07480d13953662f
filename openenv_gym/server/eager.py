"""Answering a message in the callback that received it, and finishing on the session's
task only when the answer has to wait.

A session's messages are answered by its task: the transport queues each frame, wakes
the task, and the task answers. For a fast env whose calls run inline, nothing in the
answer ever waits, and the wake-up is a large share of the server's work per step
(a future resolved, a turn of the event loop, the task's stack of coroutines resumed).
:func:`begin` instead runs the answer's coroutine at once, in the transport's callback,
as far as it goes without waiting: to its end, almost always. If it does have to wait
(an env call on the session's thread, a lock held by another request), what is left
of it is a :class:`Suspended`, which the session's task awaits to finish it, exactly
where it stopped: the task's cancellation, timeouts and errors reach it as they would
have reached the coroutine on the task.

    >>> import asyncio
    >>> async def quick():
    ...     return "answered"
    >>> begin(quick())
    Done(value='answered')
    >>> async def slow():
    ...     await asyncio.sleep(0.01)
    ...     return "answered later"
    >>> async def main():
    ...     started = begin(slow())
    ...     return await started
    >>> asyncio.run(main())
    'answered later'

What runs this way must not need :func:`asyncio.current_task` (there is no task until
it suspends) nor a context variable of its task: the server begins at once only the
messages whose answers need neither (see :data:`~.hosting.AT_ONCE`).
"""

from __future__ import annotations

from collections.abc import Coroutine, Generator
from dataclasses import dataclass
from typing import Any

__all__ = ["begin", "Done", "Suspended"]


@dataclass(frozen=True, slots=True)
class Done:
    """A coroutine that ran to its end at once, and what it returned."""

    value: Any


class Suspended:
    """The rest of a coroutine that began at once and then had to wait: awaiting it (on
    a task) runs the rest, and returns what the coroutine returns. Closing it instead
    closes the coroutine (its ``finally`` blocks run)."""

    __slots__ = ("_coroutine", "_waiting_on")

    def __init__(self, coroutine: Coroutine[Any, Any, Any], waiting_on: Any) -> None:
        self._coroutine = coroutine
        #: What the coroutine yielded when it stopped: the future it waits for.
        self._waiting_on = waiting_on

    def __await__(self) -> Generator[Any, Any, Any]:
        coroutine, yielded = self._coroutine, self._waiting_on
        while True:
            try:
                sent = yield yielded
            except BaseException as exc:  # the task's cancellation, or a failed future
                try:
                    yielded = coroutine.throw(exc)
                except StopIteration as stop:
                    return stop.value
            else:
                try:
                    yielded = coroutine.send(sent)
                except StopIteration as stop:
                    return stop.value

    def close(self) -> None:
        """Give up the rest of it (its session ended before a task could finish it)."""
        self._coroutine.close()


def begin(coroutine: Coroutine[Any, Any, Any]) -> Done | Suspended:
    """Run ``coroutine`` now, until it returns (:class:`Done`) or first waits
    (:class:`Suspended`, for a task to await). What it raises before either, this raises."""
    try:
        waiting_on = coroutine.send(None)
    except StopIteration as stop:
        return Done(stop.value)
    return Suspended(coroutine, waiting_on)
