"""Busy polling: keep the event loop awake for a moment after each reply.

Between two steps of a fast client on the same machine, a server whose event
loop sleeps in ``epoll_wait`` must be woken by the kernel when the next
message lands. On a virtual machine that wake-up costs tens of microseconds
on both sides (an inter-processor interrupt for the sender, a rescheduled
vCPU for the receiver): more than a batch of CartPole steps.

:class:`BusyPoll` keeps the loop polling instead, yielding to every other task
on each turn, for up to ``window`` seconds after a reply, so the next message
is read as soon as it arrives. One window serves all sessions: the loop spins
only while some loopback session's last reply is younger than ``window``,
and only for sessions whose env calls run inline (a slow env's step dwarfs a
wake-up). The client side is :data:`~openenv_gym.client.connection.LOOPBACK_BUSY_POLL`.

Each turn first offers the core to whatever else waits for it
(:data:`~openenv_gym._local.spin_turn`): on a busy machine the
spinning loop no longer holds a core that the client, another server or the
env's own threads need to produce the very message it waits for.

    >>> import asyncio
    >>> async def main():
    ...     poll = BusyPoll(0.001)
    ...     poll.after_reply()          # the loop now spins for up to 1 ms
    ...     await asyncio.sleep(0.005)
    ...     return poll.spinning
    >>> asyncio.run(main())
    False
"""

from __future__ import annotations

import asyncio
import time

from .._local import spin_turn

__all__ = ["BusyPoll", "DEFAULT_BUSY_POLL"]

#: Seconds the loop keeps polling after a reply to a loopback session.
DEFAULT_BUSY_POLL = 0.001


class BusyPoll:
    """One server's busy-polling window (``window=0`` turns it off)."""

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
