"""Reading frames off a Starlette WebSocket, shared by every session route."""

from __future__ import annotations

from starlette.websockets import WebSocket

from ..wire import SUBPROTOCOLS, Codec, ErrorCode, WireError

__all__ = ["next_frame"]


async def next_frame(websocket: WebSocket, codec: Codec) -> str | bytes | None:
    """The next frame of the kind ``codec`` reads, or ``None`` once the peer is gone.

    A frame of the other kind (binary on a JSON session, text on a msgpack
    one) ends the session with SESSION_ERROR, as OpenEnv does for binary
    frames.
    """
    frame_key, other_key = ("bytes", "text") if codec.binary else ("text", "bytes")
    while True:
        event = await websocket.receive()
        if event["type"] == "websocket.disconnect":
            return None
        frame = event.get(frame_key)
        if frame is not None:
            return frame
        if event.get(other_key) is not None:
            wanted = "binary msgpack" if codec.binary else "text JSON"
            raise WireError(
                ErrorCode.SESSION_ERROR,
                f"This session speaks {codec.name}: send {wanted} frames "
                f"(negotiate the subprotocol {SUBPROTOCOLS[0]!r} for msgpack)",
            )
