"""Gymnasium spaces and their values on the wire.

This package is the single place that knows how a :class:`gymnasium.spaces.Space` and the
values in it look on the wire. Everything else (server, client, wire codecs) calls it through
the names imported here. One module per concept:

* :mod:`~openenv_gym.spaces.description`: :func:`describe` / :func:`restore` turn a space into
  a lossless, JSON-able description and back, so an openenv-gym client recovers the server's
  exact spaces.
* :mod:`~openenv_gym.spaces.schema`: :func:`to_json_schema` gives a standard JSON Schema
  (draft 2020-12) for the JSON encoding of the space's values, so stock OpenEnv tools and
  RFC 008 validators can check them. The exact description travels next to it under
  :data:`SCHEMA_EXTENSION_KEY`.
* :mod:`~openenv_gym.spaces.values`: :func:`encode` / :func:`decode` convert values to wire
  data and back, either as pure JSON types (``arrays=False``) or with ``np.ndarray`` leaves for
  the msgpack codec (``arrays=True``). :func:`decode` checks structure, dtype and shape (not
  bounds: ``space.contains`` does that) and raises :class:`SpaceValueError` naming the path of
  the offending item. :func:`contains` and :func:`neutral` are membership that never raises and
  a harmless value of a space.
* :mod:`~openenv_gym.spaces.infer`: :func:`infer_space` / :func:`infer_fields` map the plain
  pydantic JSON Schemas that stock OpenEnv servers publish to best-effort spaces.
* :mod:`~openenv_gym.spaces.stock`: :func:`infer_view` sees a stock server's named fields as
  spaces a learner can use (a :class:`StockView`): from its schema and its first observation,
  with action masks from the legal actions it lists, overridable field by field.

Example::

    >>> import json
    >>> import numpy as np
    >>> from gymnasium import spaces
    >>> space = spaces.Dict([("pos", spaces.Box(-1.0, 1.0, shape=(3,))), ("n", spaces.Discrete(4, start=1))])
    >>> restore(json.loads(json.dumps(describe(space)))) == space
    True
    >>> wire = encode(space, {"pos": np.array([0.5, -0.25, 0.0], dtype=np.float32), "n": 2})
    >>> wire
    {'pos': [0.5, -0.25, 0.0], 'n': 2}
    >>> decode(space, wire)["pos"].dtype
    dtype('float32')
    >>> decode(space, {"pos": [0.5, "x", 0.0], "n": 2}, path="obs")
    Traceback (most recent call last):
    ...
    openenv_gym.errors.SpaceValueError: obs["pos"][1]: expected a number, got str 'x'
"""

from __future__ import annotations

from ..errors import SpaceValueError

# The limits outside __all__ stay importable from here too, as they were before the split.
from .description import FORMAT, BoundsBudget, describe, restore
from .description import MAX_BOX_ELEMENTS as MAX_BOX_ELEMENTS
from .description import MAX_DESCRIPTION_DEPTH as MAX_DESCRIPTION_DEPTH
from .description import MAX_NDIM as MAX_NDIM
from .infer import INFERRED_JSON_MAX_LENGTH as INFERRED_JSON_MAX_LENGTH
from .infer import INFERRED_TEXT_MAX_LENGTH as INFERRED_TEXT_MAX_LENGTH
from .infer import InferredSpace, InferredText, JsonText, infer_fields, infer_space
from .schema import SCHEMA_EXTENSION_KEY, to_json_schema
from .stock import LegalActions, StockView, infer_view, needs_first_observation
from .values import MAX_SEQUENCE_LENGTH, contains, decode, encode, neutral

__all__ = [
    "FORMAT",
    "SCHEMA_EXTENSION_KEY",
    "MAX_SEQUENCE_LENGTH",
    "SpaceValueError",
    "describe",
    "restore",
    "BoundsBudget",
    "to_json_schema",
    "encode",
    "decode",
    "InferredSpace",
    "infer_space",
    "infer_fields",
    "InferredText",
    "JsonText",
    "StockView",
    "LegalActions",
    "infer_view",
    "needs_first_observation",
    "neutral",
    "contains",
]
