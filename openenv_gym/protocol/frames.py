"""Frames and their limits: what a WebSocket (or HTTP body) may carry before it is trusted.

A frame is one WebSocket message: ``str`` for a text frame (JSON), ``bytes``
for a binary one (msgpack). :class:`Limits` bounds every incoming frame, and
:func:`check_shape` walks a decoded message, without recursion, against the
nesting and length limits, so a hostile peer gets an ``INVALID_JSON``
:class:`~openenv_gym.errors.ProtocolError` instead of a crash or a huge
allocation.

    >>> check_shape([[[]]], Limits(max_depth=2), frame_size=100)
    Traceback (most recent call last):
    ...
    openenv_gym.errors.ProtocolError: Message nesting exceeds the limit of 2 levels

This module also names what the WebSocket handshake carries besides the
subprotocol (which :mod:`.codecs` owns): the header of the per-process token that
tells a peer in this very process (the token itself is the process's, not the
protocol's: :mod:`openenv_gym._local`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..errors import ErrorCode, ProtocolError

__all__ = [
    "Frame",
    "Limits",
    "check_size",
    "check_shape",
    "PROCESS_HEADER",
    "NATIVE_KEY",
    "NATIVE_HEADER",
    "SECTION_HEADER",
]

#: One WebSocket message: text (JSON) or binary (msgpack).
Frame = str | bytes

#: Handshake header (request and response) carrying a random token of the sender's
#: process (:data:`openenv_gym._local.PROCESS_TOKEN`): a peer that sees its own token
#: runs in the same process.
PROCESS_HEADER = "x-openenv-gym-process"

#: The ``/schema`` key under which an openenv-gym server advertises its native listener:
#: ``{"port": ..., "id": ..., "version": 1}`` (see :mod:`openenv_gym.server.native`).
NATIVE_KEY = "x-openenv-gym-native"

#: Handshake response header of the native listener, carrying the ``id`` it advertises:
#: a client that reaches some other server on that port can tell.
NATIVE_HEADER = "x-openenv-gym-native"

#: Handshake header of a shared section (:mod:`openenv_gym._section`): ``offer`` in the
#: request of a client that can attach one, and the section's announcement (``"pid fd size
#: nonce"``) in the reply of a native listener that made one for the connection.
SECTION_HEADER = "x-openenv-gym-section"


@dataclass(frozen=True)
class Limits:
    """Bounds applied to every incoming frame, and every HTTP body, before it is trusted.

    ``max_frame_bytes`` matches the OpenEnv reference server (uvicorn's 16 MiB).
    ``max_array_bytes`` bounds one decoded array; ``max_depth`` the nesting of
    lists and maps; ``max_container_len`` the length of any one list or map;
    ``max_items`` the items of JSON containers one frame decodes into: a small
    frame of a million of them would hold the event loop for a second;
    ``max_arrays`` the msgpack ndarrays, numpy scalars and tuples one frame
    decodes into, each of which costs microseconds where a JSON item costs
    nanoseconds: 100,000 of them held the loop for seconds on a busy machine.
    """

    max_frame_bytes: int = 16 * 1024 * 1024
    max_array_bytes: int = 16 * 1024 * 1024
    max_depth: int = 64
    max_container_len: int = 1_000_000
    max_items: int = 100_000
    max_arrays: int = 10_000


def too_deep(limits: Limits) -> ProtocolError:
    return ProtocolError(
        ErrorCode.INVALID_JSON, f"Message nesting exceeds the limit of {limits.max_depth} levels"
    )


def too_many_items(limits: Limits) -> ProtocolError:
    return ProtocolError(
        ErrorCode.INVALID_JSON, f"Message holds more than the limit of {limits.max_items} items"
    )


def too_many_arrays(limits: Limits) -> ProtocolError:
    return ProtocolError(
        ErrorCode.INVALID_JSON,
        f"Message holds more than the limit of {limits.max_arrays} items that are arrays, numpy "
        f"scalars or tuples: batch values into fewer, larger arrays",
    )


def check_size(size: int, limits: Limits) -> None:
    """Refuse a frame (or body) of ``size`` bytes over ``limits.max_frame_bytes``."""
    if size > limits.max_frame_bytes:
        raise ProtocolError(
            ErrorCode.INVALID_JSON,
            f"Frame of {size} bytes exceeds the limit of {limits.max_frame_bytes} bytes",
        )


#: The containers decoded frames hold (json and msgpack give these exact types).
_NESTED = frozenset({dict, list, tuple})
#: Containers up to this long are walked item by item: the set of their items' types costs more.
_SHORT = 16


def check_shape(value: Any, limits: Limits, frame_size: int) -> None:
    """Reject nesting deeper than ``limits.max_depth`` and containers longer than
    ``limits.max_container_len`` (iteratively, no recursion).

    Every nesting level and every item costs at least one byte of frame, so
    frames no longer than both limits are skipped without a walk.
    """
    max_depth, max_len = limits.max_depth, limits.max_container_len
    if frame_size <= min(max_depth, max_len) or type(value) not in _NESTED:
        return
    stack = [(value, 1)]
    children: Any
    while stack:
        node, depth = stack.pop()
        children = node.values() if type(node) is dict else node
        if depth > max_depth:
            raise too_deep(limits)
        if len(children) > max_len:
            raise ProtocolError(
                ErrorCode.INVALID_JSON,
                f"A container of {len(children)} items exceeds the limit of {max_len}",
            )
        # The types of a long container's items, gathered in C: a flat list of 100,800 numbers
        # (an Atari screen) is one set, not 100,800 checks in Python.
        if len(children) > _SHORT and _NESTED.isdisjoint(set(map(type, children))):
            continue
        for child in children:
            if type(child) in _NESTED:
                stack.append((child, depth + 1))
