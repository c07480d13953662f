"""What the protocol's unit tests share: the three codecs a session may negotiate, a trip
through real frames, and the reading of a VALIDATION_ERROR."""

from __future__ import annotations

from typing import Any

import pytest

from openenv_gym.errors import ErrorCode, ProtocolError
from openenv_gym.protocol import JSON_SUBPROTOCOL, MSGPACK_SUBPROTOCOL, MsgpackBuffersCodec
from openenv_gym.protocol.codecs import Codec

#: The subprotocols of msgpack's two versions, whose values keep their numpy types exactly.
MSGPACK_SUBPROTOCOLS = (MsgpackBuffersCodec.subprotocol, MSGPACK_SUBPROTOCOL)

#: Parametrizes a test by ``subprotocol``: each one a handshake can end with (stock JSON is
#: none at all); the test makes its codec with ``codec_for(subprotocol)``.
each_subprotocol = pytest.mark.parametrize(
    "subprotocol", [None, JSON_SUBPROTOCOL, *MSGPACK_SUBPROTOCOLS], ids=["stock-json", "gym-json", "msgpack-v2", "msgpack"]
)


def through_frames(codec: Codec, message: Any) -> Any:
    """``message`` as the peer decodes it: encoded to a real frame and decoded again."""
    return codec.decode(codec.encode(message))


def validation_reason(error: ProtocolError) -> tuple[list, str, str]:
    """Where a VALIDATION_ERROR says the message is wrong, why, and pydantic's kind of error."""
    assert error.code is ErrorCode.VALIDATION_ERROR, error
    entry = error.extra["errors"][0]
    return entry["loc"], entry["msg"], entry["type"]
