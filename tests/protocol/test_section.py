"""Shared sections (:mod:`openenv_gym._section`) and the version 2 frames that use them:
arrays written to memory both ends map, one reply at a time, copied out by the reader; and
every way a section, its announcement or a frame can be wrong, refused with a reason."""

from __future__ import annotations

import logging
import os
import struct
import tempfile

import msgpack
import numpy as np
import pytest

from openenv_gym._section import HEADER_BYTES, ClientSection, ServerSection, supported
from openenv_gym.errors import ProtocolError
from openenv_gym.protocol import MsgpackBuffersCodec, codecs

pytestmark = pytest.mark.skipif(not supported(), reason="shared sections need Linux on x86-64")

FRAMES = np.arange(8 * 84 * 84 * 4, dtype=np.uint32).astype(np.uint8).reshape(8, 84, 84, 4)
IN_SECTION = 1 << 31


@pytest.fixture
def pair() -> tuple[ServerSection, ClientSection]:
    writer = ServerSection(1 << 20)
    reader = ClientSection.attach(writer.announcement, 1 << 20)
    assert reader is not None
    yield writer, reader
    writer.close()


def test_arrays_travel_in_the_section_and_the_frame_holds_only_the_message(pair):
    writer, reader = pair
    message = {"obs": FRAMES, "rewards": np.arange(8.0), "small": np.zeros(3, np.int16), "n": 1}
    frame = MsgpackBuffersCodec().encode(message, writer)
    assert len(frame) < 200  # 225 KB of frames are not in it
    assert struct.unpack_from("<I", frame)[0] & IN_SECTION
    decoded = MsgpackBuffersCodec().decode(frame, reader)
    np.testing.assert_array_equal(decoded["obs"], FRAMES)
    np.testing.assert_array_equal(decoded["small"], np.zeros(3, np.int16))
    assert decoded["rewards"].dtype == np.float64 and decoded["n"] == 1
    # The arrays are the caller's: copies, not views of memory the next reply rewrites.
    assert decoded["obs"].flags.writeable and decoded["obs"].flags.owndata


def test_one_reply_at_a_time_the_rest_travel_in_their_frames(pair):
    writer, reader = pair
    encoder, decoder = MsgpackBuffersCodec(), MsgpackBuffersCodec()
    first = encoder.encode({"obs": FRAMES}, writer)
    second = encoder.encode({"obs": FRAMES + 1}, writer)  # the first is not read yet
    assert len(first) < 100 and len(second) > FRAMES.nbytes
    np.testing.assert_array_equal(decoder.decode(first, reader)["obs"], FRAMES)
    np.testing.assert_array_equal(decoder.decode(second, reader)["obs"], FRAMES + 1)
    third = encoder.encode({"obs": FRAMES + 2}, writer)  # the first was read: the section is free
    assert len(third) < 100
    np.testing.assert_array_equal(decoder.decode(third, reader)["obs"], FRAMES + 2)


def test_no_section_is_used_before_the_client_attaches_nor_past_its_size_nor_for_small_arrays():
    writer = ServerSection(FRAMES.nbytes)
    try:
        assert len(MsgpackBuffersCodec().encode({"obs": FRAMES}, writer)) > FRAMES.nbytes  # not attached
        reader = ClientSection.attach(writer.announcement, 1 << 20)
        assert reader is not None
        too_big = np.zeros(FRAMES.nbytes + 1, np.uint8)
        assert len(MsgpackBuffersCodec().encode({"obs": too_big}, writer)) > too_big.nbytes
        small = np.zeros(codecs.SHARED_SECTION_BYTES - 16, np.uint8)  # the socket moves these cheaper
        assert len(MsgpackBuffersCodec().encode({"obs": small}, writer)) > small.nbytes
        assert len(MsgpackBuffersCodec().encode({"obs": FRAMES}, writer)) < 100
    finally:
        writer.close()


def test_a_client_scribbling_on_the_section_spoils_only_its_own_replies(pair):
    writer, reader = pair
    np.frombuffer(reader._memory, np.uint8)[:] = 0xFF  # header, counters and data
    frame = MsgpackBuffersCodec().encode({"obs": FRAMES}, writer)
    assert len(frame) > FRAMES.nbytes  # its count no longer matches: the arrays go in the frame
    np.testing.assert_array_equal(MsgpackBuffersCodec().decode(frame)["obs"], FRAMES)


def flagged(message: object) -> bytes:
    body = msgpack.packb(message, use_bin_type=True)
    return struct.pack("<I", len(body) | IN_SECTION) + body


def out_of_band(shape: tuple, offset: int) -> msgpack.ExtType:
    code = b"|u1"
    head = struct.pack("<BB", len(code), len(shape)) + code + b"".join(struct.pack("<Q", d) for d in shape)
    return msgpack.ExtType(codecs.EXT_NDARRAY_OUT_OF_BAND, head + struct.pack("<Q", offset))


def refused(frame: bytes, reader: ClientSection | None) -> str:
    with pytest.raises(ProtocolError) as info:
        MsgpackBuffersCodec().decode(frame, reader)
    return str(info.value)


def test_frames_that_lie_about_the_section_are_refused(pair):
    _, reader = pair
    frame = flagged({"obs": out_of_band((1024,), 0)})
    assert "shared section, and this connection has none" in refused(frame, None)
    assert "belong to no array" in refused(frame + b"\0" * 16, reader)
    past = refused(flagged({"obs": out_of_band((1024,), (1 << 20) - 512)}), reader)
    assert "runs past the end of the frame's array section (1048576 bytes)" in past
    np.testing.assert_array_equal(MsgpackBuffersCodec().decode(frame, reader)["obs"], np.zeros(1024, np.uint8))


def test_only_a_sealed_memfd_of_this_user_with_the_announced_nonce_is_attached(pair, caplog):
    writer, _ = pair
    pid, fd, size, nonce = writer.announcement.split()
    caplog.set_level(logging.INFO, logger="openenv_gym.client")
    with tempfile.TemporaryFile() as plain:  # a file, not a sealed memfd
        plain.truncate(int(size))
        cases = {
            "nonsense": "malformed",
            f"{pid} {fd} {size}": "malformed",
            f"{pid} {fd} {size} {nonce[:-2]}": "out of bounds",
            f"{pid} {fd} {1 << 30} {nonce}": "out of bounds",
            f"{pid} {fd} {int(size) - 1} {nonce}": "not a sealed memfd",
            f"{pid} {fd} {size} {'0' * 32}": "another section",
            f"{pid} {plain.fileno()} {size} {nonce}": "not a sealed memfd",
            f"{pid} 99999 {size} {nonce}": "section_unreachable",
            f"999999999 {fd} {size} {nonce}": "section_unreachable",
        }
        for announcement, why in cases.items():
            caplog.clear()
            assert ClientSection.attach(announcement, 1 << 21) is None, announcement
            assert why in caplog.text, (announcement, caplog.text)
    assert os.path.exists(f"/proc/{pid}/fd/{fd}")


def test_the_server_closes_its_descriptor_once_the_client_has_its_mapping(pair):
    writer, reader = pair
    assert reader.data.nbytes == writer.capacity and reader.data.readonly
    MsgpackBuffersCodec().encode({"obs": FRAMES}, writer)  # the first reply in the section
    assert ClientSection.attach(writer.announcement, 1 << 21) is None  # nothing left to open
    assert HEADER_BYTES + writer.capacity == int(writer.announcement.split()[2])
