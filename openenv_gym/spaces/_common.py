"""What the modules of :mod:`openenv_gym.spaces` share: the helpers that write the messages of
:class:`~openenv_gym.errors.SpaceValueError`, the error for data that does not fit a space.

Every message starts with the path of the offending item inside the value (or description),
in the notation of :func:`_key_path`, so a user finds it in a deeply nested space::

    >>> _key_path(_key_path("obs", "pos"), 2)
    'obs["pos"][2]'
"""

from __future__ import annotations

import json
import reprlib
from collections.abc import Iterable
from typing import Any

import numpy as np

from ..errors import SpaceValueError

_SUPPORTED = "Box, Discrete, MultiDiscrete, MultiBinary, Text, Tuple, Dict, Sequence, Graph, OneOf"


def _err(path: str, problem: str) -> SpaceValueError:
    return SpaceValueError(f"{path}: {problem}", path)


def _key_path(path: str, key: Any) -> str:
    if isinstance(key, str):
        return f"{path}[{json.dumps(key, ensure_ascii=False)}]"
    return f"{path}[{key!r}]"


#: Writes the start of a value's repr only: a list of 100,000 items (a small msgpack
#: frame of 0-d arrays) must not cost seconds to describe in an error message.
_SHORT_REPR = reprlib.Repr()
_SHORT_REPR.maxstring = _SHORT_REPR.maxlong = _SHORT_REPR.maxother = 40


def short_repr(x: Any, limit: int = 40) -> str:
    """The repr of ``x`` cut to ``limit`` characters, at a cost that does not grow with ``x``."""
    r = _SHORT_REPR.repr(x)
    return r if len(r) <= limit else r[: limit - 3] + "..."


def clipped(text: str, limit: int) -> str:
    """``text`` if it has at most ``limit`` characters, else its start and how much was
    left out: a peer's string quoted in an error is not written back whole.

        >>> clipped("abcdef", 3)
        'abc... (3 more characters)'
    """
    return text if len(text) <= limit else f"{text[:limit]}... ({len(text) - limit} more characters)"


#: Characters of a peer's string (a key in an error's ``loc`` or message, an unknown message
#: type, an MCP method or tool name) an error quotes before it is cut short.
MAX_QUOTED_CHARS = 100


def quoted(value: Any) -> str:
    """The repr of a name a peer sent (a tool, a method, a key), for an error message: at
    most :data:`MAX_QUOTED_CHARS` of a string's characters.

        >>> quoted("move"), quoted(3)
        ("'move'", '3')
    """
    return repr(clipped(value, MAX_QUOTED_CHARS)) if isinstance(value, str) else short_repr(value, MAX_QUOTED_CHARS)


def _what(x: Any) -> str:
    """Short description of a value for error messages: its type and a truncated repr."""
    if isinstance(x, np.ndarray):
        return f"ndarray of dtype {x.dtype} and shape {x.shape}"
    return f"{type(x).__name__} {short_repr(x)}"


def _short_list(items: Iterable[Any], limit: int = 10) -> str:
    items = list(items)
    text = ", ".join(quoted(k) for k in items[:limit])
    return text + (f", ... ({len(items)} in all)" if len(items) > limit else "")
