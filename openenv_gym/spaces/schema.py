"""Standard JSON Schemas (draft 2020-12) for the JSON encoding of a space's values.

Stock OpenEnv tools and RFC 008 validators read a server's JSON Schemas; :func:`to_json_schema`
describes what :func:`~openenv_gym.spaces.encode` produces, in terms they understand. An
openenv-gym server puts the exact description next to it under :data:`SCHEMA_EXTENSION_KEY`,
where :func:`~openenv_gym.spaces.restore` finds it::

    >>> from gymnasium import spaces
    >>> from openenv_gym.spaces import FORMAT, describe, restore
    >>> space = spaces.MultiBinary(2)
    >>> schema = {**to_json_schema(space), SCHEMA_EXTENSION_KEY: {"format": FORMAT, "space": describe(space)}}
    >>> schema["type"], schema["items"], schema["maxItems"]
    ('array', {'type': 'integer', 'minimum': 0, 'maximum': 1}, 2)
    >>> restore(schema[SCHEMA_EXTENSION_KEY]) == space
    True
"""

from __future__ import annotations

import functools
import math
from typing import Any

import numpy as np
from gymnasium import spaces as gs

from ._common import _SUPPORTED, _key_path
from .values import MAX_SEQUENCE_LENGTH

__all__ = ["SCHEMA_EXTENSION_KEY", "to_json_schema"]

SCHEMA_EXTENSION_KEY = "x-openenv-gym-space"
"""Key under which ``{"format": FORMAT, "space": describe(space)}`` is embedded in a JSON Schema."""


def to_json_schema(space: gs.Space) -> dict[str, Any]:
    """Return a standard JSON Schema (draft 2020-12) for the JSON encoding of ``space``'s values.

    The schema describes what ``encode(space, value)`` produces (see :func:`encode`): Box,
    MultiDiscrete and MultiBinary values are nested arrays with ``minItems == maxItems`` per
    dimension (a Box of shape ``()`` is a bare number), with ``minimum`` / ``maximum`` when
    finite (the smallest low / largest high for per-element bounds); Discrete is a bounded
    integer; Text a string with ``minLength`` / ``maxLength``; Tuple an array with
    ``prefixItems``; Dict an object with every key required and no others; Sequence an array;
    Graph an object ``{nodes, edges, edge_links}``; OneOf a pair ``[index, value]``.
    It does not carry the exact description; callers add
    ``{SCHEMA_EXTENSION_KEY: {"format": FORMAT, "space": describe(space)}}`` next to it.

    Example::

        >>> from gymnasium import spaces
        >>> to_json_schema(spaces.Discrete(3, start=1))
        {'type': 'integer', 'minimum': 1, 'maximum': 3}
        >>> to_json_schema(spaces.Box(0, 255, shape=(2,), dtype=np.uint8))
        {'type': 'array', 'items': {'type': 'integer', 'minimum': 0, 'maximum': 255}, 'minItems': 2, 'maxItems': 2}
    """
    return _schema(space, "space")


@functools.singledispatch
def _schema(space: Any, path: str) -> dict[str, Any]:
    raise TypeError(
        f"{path}: no JSON Schema for {type(space).__module__}.{type(space).__qualname__}; "
        f"supported space types are {_SUPPORTED}"
    )


def _nd_schema(element: dict[str, Any], shape: tuple[int, ...]) -> dict[str, Any]:
    schema = element
    for dim in reversed(shape):
        schema = {"type": "array", "items": schema, "minItems": int(dim), "maxItems": int(dim)}
    return schema


def _box_element_schema(space: gs.Box) -> dict[str, Any]:
    kind = space.dtype.kind
    if kind == "b":
        return {"type": "boolean"}
    if kind in "iu":
        schema: dict[str, Any] = {"type": "integer"}
        if space.low.size:
            schema["minimum"] = int(space.low.min())
            schema["maximum"] = int(space.high.max())
        return schema
    schema = {"type": "number"}
    if space.low.size:
        lo, hi = float(space.low.min()), float(space.high.max())
        if math.isfinite(lo):
            schema["minimum"] = lo
        if math.isfinite(hi):
            schema["maximum"] = hi
    return schema


def _element_schema(space: gs.Space) -> tuple[dict[str, Any], tuple[int, ...]] | None:
    """Element schema and shape for spaces whose values are (or batch into) ndarrays."""
    if isinstance(space, gs.Box):
        return _box_element_schema(space), space.shape
    if isinstance(space, gs.Discrete):
        return {"type": "integer", "minimum": int(space.start), "maximum": int(space.start) + int(space.n) - 1}, ()
    if isinstance(space, gs.MultiDiscrete):
        start = np.asarray(getattr(space, "start", np.zeros_like(space.nvec)))
        schema: dict[str, Any] = {"type": "integer"}
        if space.nvec.size:
            schema["minimum"] = int(start.min())
            schema["maximum"] = int((start.astype(object) + space.nvec.astype(object) - 1).max())
        return schema, space.shape
    if isinstance(space, gs.MultiBinary):
        return {"type": "integer", "minimum": 0, "maximum": 1}, space.shape
    return None


@_schema.register(gs.Box)
@_schema.register(gs.Discrete)
@_schema.register(gs.MultiDiscrete)
@_schema.register(gs.MultiBinary)
def _schema_array(space: gs.Space, path: str) -> dict[str, Any]:
    element, shape = _element_schema(space)  # type: ignore[misc]
    return _nd_schema(element, shape)


@_schema.register(gs.Text)
def _schema_text(space: gs.Text, path: str) -> dict[str, Any]:
    return {"type": "string", "minLength": int(space.min_length), "maxLength": int(space.max_length)}


def _fixed_array_schema(items: list[dict[str, Any]]) -> dict[str, Any]:
    if not items:  # prefixItems must be non-empty
        return {"type": "array", "items": False, "maxItems": 0}
    return {"type": "array", "prefixItems": items, "items": False, "minItems": len(items), "maxItems": len(items)}


@_schema.register(gs.Tuple)
def _schema_tuple(space: gs.Tuple, path: str) -> dict[str, Any]:
    return _fixed_array_schema([_schema(s, f"{path}[{i}]") for i, s in enumerate(space.spaces)])


def _object_schema(properties: dict[str, Any]) -> dict[str, Any]:
    return {"type": "object", "properties": properties, "required": list(properties), "additionalProperties": False}


@_schema.register(gs.Dict)
def _schema_dict(space: gs.Dict, path: str) -> dict[str, Any]:
    return _object_schema({k: _schema(s, _key_path(path, k)) for k, s in space.spaces.items()})


def _batched_schema(space: gs.Space, path: str) -> dict[str, Any]:
    """Schema of ``n`` values of ``space`` batched the way Gymnasium stacks them."""
    element = _element_schema(space)
    if element is not None:
        items = _nd_schema(*element)
    elif isinstance(space, gs.Tuple):
        return _fixed_array_schema([_batched_schema(s, f"{path}[{i}]") for i, s in enumerate(space.spaces)])
    elif isinstance(space, gs.Dict):
        return _object_schema({k: _batched_schema(s, _key_path(path, k)) for k, s in space.spaces.items()})
    else:
        items = _schema(space, f"{path}[*]")
    return {"type": "array", "items": items, "maxItems": MAX_SEQUENCE_LENGTH}


@_schema.register(gs.Sequence)
def _schema_sequence(space: gs.Sequence, path: str) -> dict[str, Any]:
    if space.stack:
        return _batched_schema(space.feature_space, path)
    return {"type": "array", "items": _schema(space.feature_space, f"{path}[*]"), "maxItems": MAX_SEQUENCE_LENGTH}


@_schema.register(gs.Graph)
def _schema_graph(space: gs.Graph, path: str) -> dict[str, Any]:
    nodes = _batched_schema(space.node_space, f"{path}.nodes")
    if space.edge_space is None:
        edges: dict[str, Any] = {"type": "null"}
        links: dict[str, Any] = {"type": "null"}
    else:
        edges = {"anyOf": [_batched_schema(space.edge_space, f"{path}.edges"), {"type": "null"}]}
        pair = {"type": "array", "items": {"type": "integer", "minimum": 0}, "minItems": 2, "maxItems": 2}
        links = {"anyOf": [{"type": "array", "items": pair, "maxItems": MAX_SEQUENCE_LENGTH}, {"type": "null"}]}
    return _object_schema({"nodes": nodes, "edges": edges, "edge_links": links})


@_schema.register(gs.OneOf)
def _schema_one_of(space: gs.OneOf, path: str) -> dict[str, Any]:
    return {
        "oneOf": [
            _fixed_array_schema([{"const": i}, _schema(s, f"{path}[{i}]")]) for i, s in enumerate(space.spaces)
        ]
    }
