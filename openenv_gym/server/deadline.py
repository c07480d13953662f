"""A deadline for env calls that run inline on the event loop.

A session whose env has proven fast runs its calls inline (see
:class:`~openenv_gym.server.execution.EnvCaller`), saving a thread hand-off per
step. If such a call then hangs, the event loop hangs with it: every other
session, ``/health`` and shutdown wait. :class:`InlineDeadline` bounds that: a
watchdog thread notices an inline call that has run past its deadline and
interrupts it, by a signal to the event loop's thread, whose handler raises
:class:`EnvCallInterrupted` inside the env call (a ``time.sleep`` or any Python
code returns at once). The session then answers EXECUTION_ERROR, gets a fresh
env, and runs its calls on its thread from then on.

Signals reach Python code in the main thread only, so the deadline holds where
the event loop runs in the main thread (``openenv-gym serve``, :func:`serve`);
elsewhere (:func:`~openenv_gym.local_server`'s background thread) it is not
enforced. A C extension that blocks without checking for signals cannot be
interrupted; such an env belongs on its thread (``execution="thread"``) or in
its own process (``execution="process"``).

    >>> deadline = InlineDeadline.for_this_thread()
    >>> deadline.begin(5.0)
    >>> # ... the inline env call ...
    >>> deadline.end()
"""

from __future__ import annotations

import signal
import threading
import time
from types import FrameType
from typing import ClassVar

from ..errors import EnvCallInterrupted

__all__ = ["InlineDeadline", "EnvCallInterrupted", "INTERRUPT_SIGNAL"]

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
