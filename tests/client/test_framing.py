"""ClientFraming, the client's RFC 6455 framing, read against websockets' own frames.

Each stream is serialized by ``websockets.frames.Frame`` (the server side: unmasked) and
fed in pieces cut at random places, through one buffer overwritten after every feed, as
the connection reads its socket: the frames come out whole and equal to what was sent,
however the bytes were cut, and nothing of a read is kept past it.
"""

from __future__ import annotations

import random
import struct

import pytest
from websockets.exceptions import PayloadTooBig, ProtocolError
from websockets.frames import Close, Frame, Opcode

from openenv_gym.client.framing import ClientFraming

#: Payload sizes on both sides of each length encoding (7 bits, 16 bits, 64 bits).
SIZES = (0, 1, 125, 126, 127, 65535, 65536, 70_000, 300_000)


def feed(framing: ClientFraming, stream: bytes, cuts: list[int], *, whole: bool = False) -> list[Frame]:
    """Feed ``stream`` cut at ``cuts`` through one reused buffer; the frames received.
    ``whole``: each read is first offered to ``whole_message``, as the connection does."""
    inbox = bytearray(max(len(stream), 1))
    events = []
    for start, end in zip([0, *cuts], [*cuts, len(stream)]):
        size = end - start
        inbox[:size] = stream[start:end]
        message = framing.whole_message(memoryview(inbox)[:size]) if whole else None
        if message is not None:
            events.append(Frame(*message))
        else:
            framing.receive_data(memoryview(inbox)[:size])
        inbox[:] = b"\xaa" * len(inbox)  # the next read overwrites it: nothing may point into it
        events += framing.events_received()
    return events


def random_cuts(rng: random.Random, length: int, pieces: int) -> list[int]:
    return sorted(rng.sample(range(1, length), min(pieces, length - 1))) if length > 1 else []


def messages(rng: random.Random) -> list[Frame]:
    frames = []
    for size in rng.sample(SIZES, len(SIZES)):
        data = rng.randbytes(size)
        if rng.random() < 0.3 and size > 2:  # a fragmented message (RFC 6455 §5.4), a ping inside it
            frames += [Frame(Opcode.BINARY, data[:1], fin=False), Frame(Opcode.PING, b"p"),
                       Frame(Opcode.CONT, data[1:2], fin=False), Frame(Opcode.CONT, data[2:], fin=True)]
        else:
            frames.append(Frame(rng.choice([Opcode.BINARY, Opcode.TEXT]), data))
    return frames


@pytest.mark.parametrize("seed", range(12))
def test_frames_cut_anywhere_come_out_whole_and_equal(seed):
    rng = random.Random(seed)
    sent = messages(rng)
    stream = b"".join(frame.serialize(mask=False) for frame in sent)
    pieces = rng.choice([1, 3, 20, 200, 2000])
    framing = ClientFraming(max_size=1 << 20)
    received = feed(framing, stream, random_cuts(rng, len(stream), pieces))
    data_frames = [f for f in sent if f.opcode is not Opcode.PING]
    assert [(f.opcode, f.data, f.fin) for f in received] == [(f.opcode, f.data, f.fin) for f in data_frames]
    assert all(type(f.data) is bytes for f in received)
    assert framing.parser_exc is None
    pongs = [frame for frame in sent if frame.opcode is Opcode.PING]
    assert len(framing.data_to_send()) == len(pongs)  # each ping answered, masked


@pytest.mark.parametrize("seed", range(6))
def test_reads_of_one_whole_frame_each_skip_the_events_and_read_the_same(seed):
    """Cut at every frame boundary, each read holds one frame: the data frames come out of
    ``whole_message``, the rest (pings, fragments) out of ``receive_data``, in order, equal."""
    rng = random.Random(seed)
    sent = messages(rng)
    serialized = [frame.serialize(mask=False) for frame in sent]
    boundaries = [sum(map(len, serialized[: i + 1])) for i in range(len(serialized) - 1)]
    framing = ClientFraming(max_size=1 << 20)
    taken = []
    original = framing.whole_message

    def counted(view):
        message = original(view)
        taken.append(message is not None)
        return message

    framing.whole_message = counted  # type: ignore[method-assign]
    received = feed(framing, b"".join(serialized), boundaries, whole=True)
    data_frames = [f for f in sent if f.opcode is not Opcode.PING]
    assert [(f.opcode, f.data, f.fin) for f in received] == [(f.opcode, f.data, f.fin) for f in data_frames]
    unfragmented = [f.opcode in (Opcode.BINARY, Opcode.TEXT) and f.fin for f in sent]
    assert taken == unfragmented  # every whole data frame, and only those, skipped the events
    assert framing.parser_exc is None


@pytest.mark.parametrize("stream", [
    b"\x82\x03ab",                                      # cut short
    b"\x82\x01a\x82\x01b",                              # followed by another frame
    b"\x02\x01a",                                       # a fragment
    b"\x89\x01p",                                       # a control frame (a ping)
    b"\x82\x81abcdx",                                   # masked: the general path fails it
    b"\xc2\x01x",                                       # a reserved bit
    b"\x82\x7e\x04\x01" + b"x" * 1025,                 # over the limit (1,024 bytes)
    b"\x82",                                           # one byte of a header
])
def test_a_read_that_is_not_exactly_one_acceptable_data_frame_goes_the_general_way(stream):
    assert ClientFraming(max_size=1024).whole_message(memoryview(stream)) is None


def test_whole_messages_of_each_length_encoding_and_none_while_a_frame_is_pending():
    framing = ClientFraming(max_size=None)
    for size in (0, 125, 126, 65535, 65536):
        frame = Frame(Opcode.BINARY, bytes(size)).serialize(mask=False)
        assert framing.whole_message(memoryview(frame)) == (Opcode.BINARY, bytes(size))
    assert framing.whole_message(memoryview(b"\x81\x02hi")) == (Opcode.TEXT, b"hi")
    framing.receive_data(b"\x82\x05ab")  # a payload still arriving
    assert framing.whole_message(memoryview(b"\x82\x01x")) is None
    framing.receive_data(b"cde")
    assert [f.data for f in framing.events_received()] == [b"abcde"]
    framing.send_close(1000)  # closing: what still comes is the general path's to drop
    assert framing.whole_message(memoryview(b"\x82\x01x")) is None


def test_every_cut_of_a_header_and_payload_reads_the_same():
    frame = Frame(Opcode.BINARY, bytes(range(256)) * 300)  # 76,800 bytes: a 64-bit length
    stream = frame.serialize(mask=False) + Frame(Opcode.TEXT, b"next").serialize(mask=False)
    for cut in range(1, 16):
        received = feed(ClientFraming(max_size=None), stream, [cut, len(stream) - 3])
        assert [(f.opcode, f.data) for f in received] == [(Opcode.BINARY, frame.data), (Opcode.TEXT, b"next")]


@pytest.mark.parametrize("cut", [1, 2, 5, None])
def test_a_frame_over_the_limit_fails_with_1009_even_when_its_header_is_cut(cut):
    stream = b"\x82\x7f" + struct.pack("!Q", 1 << 40) + b"x" * 10
    framing = ClientFraming(max_size=1 << 20)
    assert feed(framing, stream, [] if cut is None else [cut]) == []
    assert isinstance(framing.parser_exc, PayloadTooBig)
    close = b"".join(framing.data_to_send())
    assert close[0] == 0x88 and framing.close_code == 1009
    framing.receive_data(Frame(Opcode.BINARY, b"later").serialize(mask=False))
    assert framing.events_received() == []  # nothing more is read


def test_a_fragmented_message_counts_whole_against_the_limit():
    stream = (Frame(Opcode.BINARY, b"x" * 600, fin=False).serialize(mask=False)
              + Frame(Opcode.CONT, b"y" * 600, fin=True).serialize(mask=False))
    framing = ClientFraming(max_size=1000)
    received = feed(framing, stream, [700])
    assert [f.data for f in received] == [b"x" * 600]
    assert isinstance(framing.parser_exc, PayloadTooBig) and framing.close_code == 1009


@pytest.mark.parametrize("stream, reason", [
    (b"\x82\x83abcdxyz", "masked"),
    (b"\xc2\x01x", "reserved bits"),
    (b"\x83\x01x", "invalid opcode"),
    (b"\x09\x01x", "fragmented control frame"),
    (b"\x80\x01x", "continuation frame with no message"),
    (b"\x02\x01x\x82\x01y", "new message inside a fragmented one"),
])
def test_a_frame_that_breaks_the_protocol_fails_with_1002(stream, reason):
    framing = ClientFraming(max_size=1 << 20)
    feed(framing, stream, [1])
    assert isinstance(framing.parser_exc, ProtocolError) and reason in str(framing.parser_exc)
    assert framing.close_code == 1002


def test_a_close_frame_is_answered_and_ends_reading():
    framing = ClientFraming(max_size=1 << 20)
    stream = Frame(Opcode.CLOSE, Close(1001, "going away").serialize()).serialize(mask=False)
    feed(framing, stream + Frame(Opcode.BINARY, b"late").serialize(mask=False), [3])
    assert (framing.close_code, framing.close_reason) == (1001, "going away")
    assert framing.events_received() == []
    assert b"".join(framing.data_to_send())[0] == 0x88
