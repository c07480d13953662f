"""Version 2 msgpack frames (:class:`~openenv_gym.protocol.MsgpackBuffersCodec`): large
arrays after the message, decoded as read-only views of the frame; and every way a
hostile frame can lie about that layout, refused with a reason."""

from __future__ import annotations

import struct

import msgpack
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from openenv_gym.errors import ErrorCode, ProtocolError
from openenv_gym.protocol import Limits, MsgpackBuffersCodec, MsgpackCodec, codec_for, codecs

BIG = codecs.OUT_OF_BAND_BYTES
FRAME = np.arange(84 * 84 * 4, dtype=np.uint8).reshape(84, 84, 4)


def header(dtype: str, shape: tuple) -> bytes:
    code = dtype.encode()
    return struct.pack("<BB", len(code), len(shape)) + code + b"".join(struct.pack("<Q", d) for d in shape)


def v2_frame(message: object, section: bytes = b"") -> bytes:
    """A version 2 frame built by hand: the length prefix, ``message``, padding, ``section``."""
    body = msgpack.packb(message, use_bin_type=True)
    head = struct.pack("<I", len(body)) + body
    return head + bytes(-len(head) % 16) + section if section else head


def after_message(dtype: str, shape: tuple, offset: int) -> msgpack.ExtType:
    return msgpack.ExtType(codecs.EXT_NDARRAY_OUT_OF_BAND, header(dtype, shape) + struct.pack("<Q", offset))


def refused(frame: bytes, codec: MsgpackCodec | None = None) -> str:
    with pytest.raises(ProtocolError) as info:
        (codec or MsgpackBuffersCodec()).decode(frame)
    assert info.value.code is ErrorCode.INVALID_JSON
    return info.value.message


def test_the_subprotocol_selects_version_2():
    codec = codec_for(MsgpackBuffersCodec.subprotocol)
    assert type(codec) is MsgpackBuffersCodec and codec.name == "msgpack" and codec.extended


@pytest.mark.parametrize(
    "value",
    [
        FRAME,
        np.arange(300, dtype=np.float64)[::2],  # not contiguous: sent as a C-order copy
        np.arange(200, dtype=">i4"),  # big-endian: sent little-endian
        np.zeros((0, 4096), np.float32),  # no bytes at all: inline
        np.arange(BIG, dtype=np.uint8),  # exactly the threshold: out of band
        np.arange(BIG - 1, dtype=np.uint8),  # just under: inline
        np.ones((3, 5, 7), dtype=np.complex128),
    ],
    ids=["atari", "strided", "big-endian", "empty", "threshold", "under", "complex"],
)
def test_arrays_round_trip_exactly(value):
    codec = MsgpackBuffersCodec()
    decoded = codec.decode(codec.encode({"v": value}))["v"]
    assert decoded.shape == value.shape and decoded.dtype == value.dtype.newbyteorder("<")
    np.testing.assert_array_equal(decoded, value)


def test_large_arrays_are_read_only_views_of_the_frame_on_16_byte_boundaries():
    codec = MsgpackBuffersCodec()
    sent = {"obs": FRAME, "odd": np.ones(BIG + 3, np.uint8), "mask": np.ones(4, bool), "last": FRAME[:2]}
    frame = codec.encode(sent)
    decoded = codec.decode(frame)
    for key in ("obs", "odd", "last"):
        view = decoded[key]
        assert view.base is frame and not view.flags.writeable, key
        start = view.__array_interface__["data"][0] - np.frombuffer(frame, np.uint8).__array_interface__["data"][0]
        assert start % 16 == 0, (key, start)
    assert decoded["mask"].nbytes < BIG  # small arrays stay inside the message
    assert len(frame) % 16 == 0  # every array padded to 16 bytes, the last one too
    with pytest.raises(ValueError, match="read-only"):
        decoded["obs"][0, 0, 0] = 1


def test_arrays_inside_tuples_numpy_scalars_and_plain_values_keep_their_types():
    codec = MsgpackBuffersCodec()
    sent = {"pair": (FRAME, (np.float32(0.5), "x")), "n": np.int64(3), "flag": np.bool_(True), "list": [1, None]}
    decoded = codec.decode(codec.encode(sent))
    np.testing.assert_array_equal(decoded["pair"][0], FRAME)
    assert decoded["pair"][1] == (np.float32(0.5), "x") and type(decoded["pair"][1][0]) is np.float32
    assert type(decoded["n"]) is np.int64 and type(decoded["flag"]) is np.bool_ and decoded["list"] == [1, None]


def test_a_frame_without_arrays_is_the_prefix_and_the_message():
    codec = MsgpackBuffersCodec()
    frame = codec.encode({"type": "state"})
    assert frame == struct.pack("<I", len(frame) - 4) + msgpack.packb({"type": "state"})
    assert codec.decode(frame) == {"type": "state"}


def test_bytearrays_and_memoryviews_decode_into_a_frame_of_their_own():
    """Transports may hand over a buffer they reuse: the views must not see it change."""
    codec = MsgpackBuffersCodec()
    received = bytearray(codec.encode({"v": FRAME}))
    decoded = codec.decode(memoryview(received))["v"]
    received[:] = bytes(len(received))
    np.testing.assert_array_equal(decoded, FRAME)


def test_a_failed_encode_leaves_nothing_behind_for_the_next_frame():
    codec = MsgpackBuffersCodec()
    with pytest.raises(TypeError, match="dtype"):
        codec.encode({"a": FRAME, "b": np.array([object()] * 600, dtype=object)})
    frame = codec.encode({"v": np.ones(BIG, np.uint8)})
    assert len(frame) == 16 * ((len(frame) - BIG) // 16) + BIG
    np.testing.assert_array_equal(codec.decode(frame)["v"], np.ones(BIG, np.uint8))


# -- hostile frames -------------------------------------------------------------------


def test_a_frame_shorter_than_its_length_prefix_is_refused():
    assert refused(b"\x01\x00").startswith("Truncated frame of 2 bytes")


def test_a_length_prefix_past_the_end_of_the_frame_is_refused():
    frame = v2_frame({"type": "state"})
    message = refused(struct.pack("<I", 10_000) + frame[4:])
    assert message.startswith("The frame says its msgpack message has 10000 bytes")


@pytest.mark.parametrize(
    "offset, shape, reason",
    [
        (16, (64,), "runs past the end"),  # 16 + 64 > the 64 bytes there
        (0, (65,), "runs past the end"),
        (2**64 - 1, (1,), "runs past the end"),  # an offset that would wrap
        (0, (2**40,), "exceeds the limit"),  # a terabyte declared: the limit refuses it first
    ],
)
def test_arrays_that_reach_past_the_array_section_are_refused(offset, shape, reason):
    frame = v2_frame({"v": after_message("|u1", shape, offset)}, bytes(64))
    assert reason in refused(frame)


def test_the_declared_size_is_checked_against_the_limit_before_the_section():
    frame = v2_frame({"v": after_message("|u1", (4096,), 0)}, bytes(4096))
    assert refused(frame, MsgpackBuffersCodec(Limits(max_array_bytes=1024))) == (
        "ndarray of 4096 bytes exceeds the limit of 1024 bytes"
    )


def test_an_out_of_band_ext_with_a_malformed_tail_is_refused():
    payload = header("|u1", (16,)) + b"\0\0\0"
    frame = v2_frame({"v": msgpack.ExtType(codecs.EXT_NDARRAY_OUT_OF_BAND, payload)}, bytes(16))
    assert "expected the 8-byte offset of its data" in refused(frame)


def test_object_arrays_are_refused_out_of_band_too():
    frame = v2_frame({"v": after_message("|O", (2,), 0)}, bytes(16))
    assert "not allowed" in refused(frame)


def test_an_out_of_band_array_on_a_version_1_session_is_refused():
    frame = msgpack.packb({"v": after_message("|u1", (16,), 0)}) + bytes(16)
    assert "only valid on openenv-gym.msgpack.v2 sessions" in refused(frame, MsgpackCodec())


@pytest.mark.parametrize("arrays", [0, 1])
def test_bytes_no_array_refers_to_are_refused(arrays):
    codec = MsgpackBuffersCodec()
    frame = codec.encode({"v": np.ones(BIG, np.uint8)} if arrays else {"type": "state"})
    assert refused(frame + bytes(16), codec).startswith("16 bytes at the end of the frame belong to no array")
    if not arrays:
        assert refused(frame + b"\0", codec).startswith("1 bytes at the end")


def test_two_arrays_may_share_bytes_and_each_is_still_checked():
    """Overlapping references cost the peer nothing (views, no copies), so they are
    allowed; every one is still bounded by the section."""
    section = np.arange(64, dtype=np.uint8).tobytes()
    frame = v2_frame({"a": after_message("|u1", (64,), 0), "b": after_message("|u1", (32,), 32)}, section)
    decoded = MsgpackBuffersCodec().decode(frame)
    np.testing.assert_array_equal(decoded["b"], np.arange(32, 64))


def test_the_frame_size_limit_comes_first():
    codec = MsgpackBuffersCodec(Limits(max_frame_bytes=1000))
    assert refused(codec.encode({"v": np.ones(2000, np.uint8)}), codec).startswith("Frame of")


def test_a_text_frame_is_refused():
    assert "binary msgpack" in refused('{"type": "state"}')  # type: ignore[arg-type]


@settings(max_examples=300, deadline=None)
@given(position=st.integers(0, 10_000), byte=st.integers(0, 255), cut=st.integers(0, 10_000))
def test_a_corrupted_or_cut_frame_is_a_protocol_error_or_decodes(position, byte, cut):
    frame = bytearray(MsgpackBuffersCodec().encode({"obs": FRAME[:20], "r": 1.0, "t": (np.ones(700, np.int8), 2)}))
    frame[position % len(frame)] = byte
    del frame[len(frame) - cut % len(frame) :]
    try:
        MsgpackBuffersCodec().decode(bytes(frame))
    except ProtocolError as exc:
        assert exc.code is ErrorCode.INVALID_JSON
