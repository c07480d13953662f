"""Frames as PNG images: what the web page draws and an MCP tool result's image content carries.

An env that renders ``rgb_array`` gives ``(height, width, 3)`` uint8 frames (``(h, w)``
grey, ``(h, w, 4)`` with alpha, also accepted). :func:`png` writes one as a PNG file
with the standard library's ``zlib`` (no imaging library needed): the web page's frames,
and, base64-encoded, the data of MCP's ``ImageContent``.

    >>> import numpy as np
    >>> frame = np.zeros((2, 3, 3), np.uint8); frame[0, 0] = (255, 0, 0)
    >>> data = png(frame)
    >>> data[:8] == b"\\x89PNG\\r\\n\\x1a\\n", len(data) < 100
    (True, True)
"""

from __future__ import annotations

import struct
import zlib

import numpy as np

__all__ = ["png", "PNG_MIME_TYPE"]

PNG_MIME_TYPE = "image/png"

#: PNG's colour type for each number of channels: grey, grey and alpha, RGB, RGBA.
_COLOUR_TYPES = {1: 0, 2: 4, 3: 2, 4: 6}


def png(frame: np.ndarray, *, level: int = 6) -> bytes:
    """``frame`` (uint8, ``(h, w)`` or ``(h, w, channels)`` with 1 to 4 channels) as a PNG.

    Raises:
        ValueError: a frame of another dtype or shape, saying which it got.
    """
    array = np.asarray(frame)
    if array.dtype != np.uint8 or array.ndim not in (2, 3) or (array.ndim == 3 and array.shape[2] not in _COLOUR_TYPES):
        raise ValueError(
            f"a PNG frame is uint8 of shape (height, width) or (height, width, 1 to 4 channels); "
            f"got {array.dtype} of shape {array.shape}"
        )
    if array.ndim == 2:
        array = array[:, :, None]
    height, width, channels = array.shape
    rows = np.empty((height, 1 + width * channels), np.uint8)
    rows[:, 0] = 0  # filter type 0 (none) for every scanline
    rows[:, 1:] = array.reshape(height, width * channels)
    header = struct.pack(">IIBBBBB", width, height, 8, _COLOUR_TYPES[channels], 0, 0, 0)
    return b"".join((
        b"\x89PNG\r\n\x1a\n",
        _chunk(b"IHDR", header),
        _chunk(b"IDAT", zlib.compress(rows.tobytes(), level)),
        _chunk(b"IEND", b""),
    ))


def _chunk(kind: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
