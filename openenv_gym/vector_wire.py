"""Batched vector sessions on the wire, sans I/O (openenv-gym extension, version 1).

One WebSocket on the route :data:`VECTOR_PATH` carries a whole Gymnasium vector
env: the first message opens it, then every ``reset`` and ``step`` moves the
whole batch in one frame each way. Both the server (:mod:`openenv_gym.server.vector`)
and the client (:mod:`openenv_gym.client.vector`) use this module; the frames
themselves go through the codecs of :mod:`openenv_gym.wire`, and values are
encoded per the *batched* space (``gymnasium.vector.utils.batch_space``) with
:mod:`openenv_gym.spaces`, so a Box observation batch is one ndarray on a
msgpack session.

Vector infos (Gymnasium's dict of arrays with ``_key`` masks) travel as a tree
in which dicts are dicts, numeric arrays are arrays, and object arrays
(``final_obs``, strings, ...) are lists; :func:`pack_infos` and
:func:`unpack_infos` convert::

    >>> import numpy as np
    >>> infos = {"final_obs": np.array([None, np.zeros(2)], dtype=object),
    ...          "_final_obs": np.array([False, True])}
    >>> tree = pack_infos(infos)
    >>> tree["final_obs"]
    [None, array([0., 0.])]
    >>> unpack_infos(tree)["final_obs"].dtype
    dtype('O')
"""

from __future__ import annotations

from typing import Any, Union

import numpy as np
from gymnasium.vector import AutoresetMode

from .wire import apply_type_hints, jsonable, type_hints

__all__ = [
    "VECTOR_PATH",
    "VECTOR_VERSION",
    "AutoresetLike",
    "autoreset_mode",
    "pack_infos",
    "unpack_infos",
    "infos_fields",
    "infos_from_fields",
]

#: WebSocket route of batched vector sessions.
VECTOR_PATH = "/vector"
#: Version of the vector messages, advertised in ``/schema`` under ``x-openenv-gym.vector``.
VECTOR_VERSION = 1

#: What ``autoreset_mode`` arguments accept: the enum or its string value.
AutoresetLike = Union[AutoresetMode, str]


def autoreset_mode(value: AutoresetLike) -> AutoresetMode:
    """Gymnasium's :class:`~gymnasium.vector.AutoresetMode` for the enum, its value
    (``"NextStep"``) or its name in any case (``"next_step"``).

        >>> autoreset_mode("same_step")
        <AutoresetMode.SAME_STEP: 'SameStep'>
    """
    if isinstance(value, AutoresetMode):
        return value
    if isinstance(value, str):
        for mode in AutoresetMode:
            if value in (mode.value, mode.name) or value.upper() == mode.name:
                return mode
    choices = ", ".join(repr(m.value) for m in AutoresetMode)
    raise ValueError(f"autoreset_mode must be a gymnasium AutoresetMode or one of {choices}, not {value!r}")


def pack_infos(infos: dict) -> dict:
    """Vector infos as a wire tree: object arrays become lists, the rest stays."""
    out: dict = {}
    for key, value in infos.items():
        if isinstance(value, dict):
            out[str(key)] = pack_infos(value)
        elif isinstance(value, np.ndarray) and value.dtype == object:
            out[str(key)] = value.tolist() if value.ndim == 1 else list(value)
        else:
            out[str(key)] = value
    return out


def unpack_infos(tree: Any) -> dict:
    """The inverse of :func:`pack_infos`: lists become object arrays again."""
    if not isinstance(tree, dict):
        return {}
    out: dict = {}
    for key, value in tree.items():
        if isinstance(value, dict):
            out[key] = unpack_infos(value)
        elif isinstance(value, (list, tuple)):
            array = np.empty(len(value), dtype=object)  # filled with None
            for i, item in enumerate(value):
                array[i] = item
            out[key] = array
        else:
            out[key] = np.asarray(value)
    return out


def infos_fields(infos: dict, *, arrays: bool) -> dict:
    """The reply fields carrying ``infos``: ``{"infos": tree}`` on msgpack; on JSON
    the tree as JSON plus ``{"types": {"infos": hints}}`` restoring dtypes and tuples."""
    tree = pack_infos(infos)
    if arrays:
        return {"infos": tree}
    fields: dict = {"infos": jsonable(tree)}
    if (hints := type_hints(tree)) is not None:
        fields["types"] = {"infos": hints}
    return fields


def infos_from_fields(data: dict) -> dict:
    """Vector infos from reply fields made by :func:`infos_fields`."""
    tree = data.get("infos") or {}
    types = data.get("types")
    if isinstance(types, dict) and types.get("infos") is not None:
        tree = apply_type_hints(tree, types["infos"])
    return unpack_infos(tree)
