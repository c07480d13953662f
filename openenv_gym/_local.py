"""What a peer on this machine, or in this very process, is to either end of a connection.

A client and a server on one machine busy-poll for each other's next frame (waking a
sleeping reader costs more than a fast step); in one process they must not, since they
share a GIL and a spinning thread would only slow the one it waits for. Both ends tell
these apart with what is here: :func:`is_loopback` for the host, :data:`PROCESS_TOKEN`
(sent in the handshake header :data:`~openenv_gym.protocol.frames.PROCESS_HEADER`) for the
process, and :data:`spin_turn`, one turn of a busy-poll loop. The sans-I/O protocol
package only names the header; the token, the host check and the system call live here.

    >>> is_loopback("127.0.0.1"), is_loopback("[::1]"), is_loopback("example.org")
    (True, True, False)
"""

from __future__ import annotations

import ipaddress
import os
import secrets
from collections.abc import Callable

__all__ = ["MAX_BUSY_POLL", "PROCESS_TOKEN", "busy_poll_problem", "is_loopback", "spin_turn"]

#: A random token of this Python process. A client and a server that see the
#: same one run in one process, under one GIL: neither busy-polls for the
#: other there, since a spinning thread would only slow the one it waits for.
PROCESS_TOKEN = secrets.token_hex(8)

#: One turn of a busy-poll loop, on either side of a loopback connection:
#: ``sched_yield(2)`` first lets the threads waiting for this core run (the
#: peer that is to answer, another server, an env's own threads; it releases
#: the GIL, so this process's other threads too). With a core to spare it costs
#: a system call; on a busy machine the spinning side no longer holds a core
#: the answer needs. Where there is no ``sched_yield`` (Windows), it does nothing.
spin_turn: Callable[[], None] = getattr(os, "sched_yield", lambda: None)

#: The longest busy-poll window either end takes, in seconds. A window is the gap
#: between two steps worth a core's spinning (the default is 1 ms); a longer one
#: is a value in the wrong unit, and would keep a core busy long after the peer left.
MAX_BUSY_POLL = 1.0


def busy_poll_problem(value: float | None) -> str | None:
    """What is wrong with ``value`` as a busy-poll window (``None``: nothing).

        >>> busy_poll_problem(0.001) is None
        True
        >>> for part in busy_poll_problem(1000).split("; "):
        ...     print(part)
        busy_poll is in seconds, at most 1.0, not 1000 (it would spin 1000 s after each message)
        1 ms is 0.001, and 0 turns polling off
    """
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value >= 0:
        return f"busy_poll must be a number of seconds >= 0 (0: off), not {value!r}"
    if value > MAX_BUSY_POLL:
        return (
            f"busy_poll is in seconds, at most {MAX_BUSY_POLL}, not {value!r} (it would spin {value:g} s after "
            "each message); 1 ms is 0.001, and 0 turns polling off"
        )
    return None


def is_loopback(host: str) -> bool:
    """Whether ``host`` (a name or address, IPv4-mapped IPv6 included) is this machine."""
    host = host.strip("[]").lower()
    try:
        address = ipaddress.ip_address(host)
    except ValueError:  # a name: only localhost is sure to be this machine ("127.example.org" may be anywhere)
        return host == "localhost"
    mapped = getattr(address, "ipv4_mapped", None)
    return (mapped or address).is_loopback
