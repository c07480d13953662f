"""Opt-in recovery for clients: reconnecting with backoff.

OpenEnv sessions do not survive their connection: a new WebSocket is a new
environment. So a client that reconnects starts a new episode, and says so
(``truncated=True`` and ``info["openenv_gym.reconnected"]``), never silently.

    >>> env = RemoteEnv(url, reconnect=Reconnect(attempts=5, backoff=0.5))   # doctest: +SKIP
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass
from typing import TypeVar

from ..errors import CapacityReachedError, ConnectionClosedError, MessageTimeoutError, SessionError

__all__ = ["Reconnect", "RECONNECTED", "LOST_REASON", "RECOVERABLE"]

#: ``info`` key set (to ``True``) on the step that ends an episode because the
#: connection was lost and re-established, and on the reset that followed it.
RECONNECTED = "openenv_gym.reconnected"
#: ``info`` key carrying what went wrong with the old connection.
LOST_REASON = "openenv_gym.lost_reason"

#: Failures that a new connection may cure.
RECOVERABLE = (ConnectionClosedError, MessageTimeoutError, SessionError)

T = TypeVar("T")


@dataclass(frozen=True)
class Reconnect:
    """How a client recovers a lost connection.

    Args:
        attempts: connection attempts after a loss before giving up (the last
            error is raised then).
        backoff: seconds before the first retry; doubled each time, up to
            ``max_backoff``.
        max_backoff: the longest wait between attempts.
        retry_capacity: also retry, with the same backoff, when the server
            answers CAPACITY_REACHED (another client may leave).
        relocate: where a lost server went: called with its URL before each
            attempt to reconnect, returns the URL to try (for servers that a
            scheduler restarts elsewhere, as :mod:`openenv_gym.ray` does).
            ``None``: the same URL.
    """

    attempts: int = 5
    backoff: float = 0.5
    max_backoff: float = 10.0
    retry_capacity: bool = True
    relocate: Callable[[str], str] | None = None

    def locate(self, url: str) -> str:
        """The URL to reconnect to for a server last reached at ``url``."""
        return url if self.relocate is None else self.relocate(url)

    def delays(self) -> Iterator[float]:
        delay = self.backoff
        for _ in range(self.attempts):
            yield delay
            delay = min(delay * 2, self.max_backoff)

    def retriable(self) -> tuple[type[BaseException], ...]:
        """The failures worth another attempt under this policy."""
        return (*RECOVERABLE, CapacityReachedError) if self.retry_capacity else RECOVERABLE

    def call(self, attempt: Callable[[], T]) -> T:
        """Run ``attempt`` until it succeeds or the retries are spent."""
        retriable = self.retriable()
        delays = self.delays()
        while True:
            try:
                return attempt()
            except retriable:
                delay = next(delays, None)
                if delay is None:
                    raise
                time.sleep(delay)

    async def acall(
        self,
        attempt: Callable[[], Awaitable[T]],
        sleep: Callable[[float], Awaitable[object]] = asyncio.sleep,
    ) -> T:
        """:meth:`call` for coroutines; ``sleep`` waits between attempts (a
        blocking one for coroutines that must never suspend)."""
        retriable = self.retriable()
        delays = self.delays()
        while True:
            try:
                return await attempt()
            except retriable:
                delay = next(delays, None)
                if delay is None:
                    raise
                await sleep(delay)
