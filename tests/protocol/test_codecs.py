"""The sans-I/O protocol layer: codecs, limits, message validation, type hints."""

from __future__ import annotations

import json
import struct

import msgpack
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from openenv_gym import protocol
from openenv_gym.errors import CLOSING_ERRORS, ErrorCode, ProtocolError
from openenv_gym.protocol import WS_MESSAGES, Close, ErrorReply, Limits, Observation, Reset, Step, codecs, parse_message


def ndarray_ext(dtype: str, shape: tuple, data: bytes) -> msgpack.ExtType:
    code = dtype.encode()
    header = struct.pack("<BB", len(code), len(shape)) + code
    header += b"".join(struct.pack("<Q", d) for d in shape)
    return msgpack.ExtType(codecs.EXT_NDARRAY, header + data)


# -- codecs ------------------------------------------------------------------


def test_json_frames_are_compact_stock_openenv():
    codec = protocol.codec_for(None)
    frame = codec.encode(Observation({"count": 3}, 3.0, False).to_wire())
    assert frame == '{"type":"observation","data":{"observation":{"count":3},"reward":3.0,"done":false}}'
    assert codec.decode(frame)["data"]["observation"] == {"count": 3}


def test_observation_metadata_goes_inside_and_on_top_like_openenv_0_10():
    message = Observation({"x": 1, "metadata": {"a": 1}}, None, True, {"a": 1}).to_wire()
    assert message["data"]["metadata"] == {"a": 1}
    assert "metadata" not in Observation({}, None, False).to_wire()["data"]


@pytest.mark.parametrize(
    "value",
    [
        np.arange(12, dtype=np.float32).reshape(3, 4),
        np.zeros((84, 84, 4), dtype=np.uint8),
        np.array([True, False]),
        np.arange(5, dtype=np.int64)[::2],  # not contiguous
        np.array(3.5, dtype=np.float64),  # 0-d array
        np.arange(6, dtype=">i4"),  # big-endian is sent little-endian
    ],
)
@pytest.mark.parametrize("codec_type", [codecs.MsgpackCodec, codecs.MsgpackBuffersCodec])
def test_msgpack_arrays_round_trip_exactly(value, codec_type):
    codec = codec_type()
    decoded = codec.decode(codec.encode({"v": value}))["v"]
    assert isinstance(decoded, np.ndarray)
    assert decoded.shape == value.shape
    assert decoded.dtype == value.dtype.newbyteorder("<") or decoded.dtype == value.dtype
    np.testing.assert_array_equal(decoded, value)


def test_msgpack_decodes_arrays_without_copying_the_payload():
    codec = codecs.MsgpackCodec()
    decoded = codec.decode(codec.encode({"v": np.ones((64, 64), np.float32)}))["v"]
    assert not decoded.flags.owndata  # a view over the received bytes


@pytest.mark.parametrize("codec_type", [codecs.MsgpackCodec, codecs.MsgpackBuffersCodec])
def test_msgpack_keeps_numpy_scalars_and_tuples(codec_type):
    codec = codec_type()
    value = {"a": np.int64(3), "b": np.float32(0.5), "c": (1, (2, "x")), "d": [1, 2], "e": np.bool_(True)}
    decoded = codec.decode(codec.encode(value))
    assert type(decoded["a"]) is np.int64 and decoded["a"] == 3
    assert type(decoded["b"]) is np.float32
    assert decoded["c"] == (1, (2, "x")) and isinstance(decoded["c"][1], tuple)
    assert decoded["d"] == [1, 2]
    assert type(decoded["e"]) is np.bool_


def test_msgpack_refuses_object_dtype_on_encode():
    with pytest.raises(TypeError, match="dtype"):
        codecs.MsgpackCodec().encode({"v": np.array([object()], dtype=object)})


@pytest.mark.parametrize(
    "ext, reason",
    [
        (ndarray_ext("|O", (1,), b"\0" * 8), "not allowed"),
        (ndarray_ext(">i4", (1,), b"\0" * 4), "not allowed"),
        (ndarray_ext("<f4", (3,), b"\0" * 8), "declares shape"),
        # 10 GB declared, 8 bytes carried: refused before any allocation.
        (ndarray_ext("<u1", (10 * 1024**3,), b"\0" * 8), "declares shape"),
        (msgpack.ExtType(codecs.EXT_NDARRAY, b"\x03"), "Truncated"),
        (msgpack.ExtType(99, b""), "Unknown msgpack extension"),
    ],
)
def test_msgpack_refuses_bad_arrays_with_a_reason(ext, reason):
    frame = msgpack.packb({"type": "step", "data": {"action": ext}})
    with pytest.raises(ProtocolError, match=reason) as info:
        codecs.MsgpackCodec().decode(frame)
    assert info.value.code is ErrorCode.INVALID_JSON


def test_a_known_array_header_still_checks_the_data_size():
    codec = codecs.MsgpackCodec()
    array = np.arange(6, dtype=np.float32).reshape(2, 3)
    for _ in range(2):  # the second decode takes the cached header
        np.testing.assert_array_equal(codec.decode(codec.encode({"v": array}))["v"], array)
    short = msgpack.packb({"v": ndarray_ext("<f4", (2, 3), b"\0" * 20)})
    with pytest.raises(ProtocolError, match="declares shape"):
        codec.decode(short)


def test_array_header_caches_stay_bounded():
    codec = codecs.MsgpackCodec()
    for n in range(600):
        codec.decode(codec.encode({"v": np.zeros(n, np.uint8)}))
    assert len(codec._known_headers) <= codecs._HEADER_CACHE_SIZE
    assert len(codecs._HEADERS) <= codecs._HEADER_CACHE_SIZE


def test_array_size_limit_is_checked():
    codec = codecs.MsgpackCodec(Limits(max_array_bytes=100))
    frame = msgpack.packb({"v": ndarray_ext("<u1", (200,), b"\0" * 200)})
    with pytest.raises(ProtocolError, match="exceeds the limit"):
        codec.decode(frame)


@pytest.mark.parametrize("codec", [codecs.JsonCodec(Limits(max_depth=8)), codecs.MsgpackCodec(Limits(max_depth=8))])
def test_nesting_depth_is_limited(codec):
    deep: list = []
    node = deep
    for _ in range(20):
        node.append([])
        node = node[0]
    frame = codec.encode({"type": "step", "data": {"action": deep}})
    with pytest.raises(ProtocolError, match="nesting"):
        codec.decode(frame)


def test_very_deep_json_is_an_error_not_a_crash():
    with pytest.raises(ProtocolError) as info:
        codecs.JsonCodec().decode("[" * 200_000 + "]" * 200_000)
    assert info.value.code is ErrorCode.INVALID_JSON


def test_container_length_and_frame_size_are_limited():
    codec = codecs.JsonCodec(Limits(max_container_len=10, max_frame_bytes=1000))
    with pytest.raises(ProtocolError, match="items exceeds"):
        codec.decode(json.dumps(list(range(11))))
    with pytest.raises(ProtocolError, match="exceeds the limit of 1000 bytes"):
        codec.decode(" " * 1001)


def test_wrong_frame_kind_for_the_codec():
    with pytest.raises(ProtocolError, match="binary msgpack"):
        codecs.MsgpackCodec().decode('{"type":"state"}')
    with pytest.raises(ProtocolError, match="Invalid JSON"):
        codecs.JsonCodec().decode(b"\xff\xfe")


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=512))
def test_random_bytes_never_escape_as_other_exceptions(data):
    for codec in (codecs.MsgpackBuffersCodec(), codecs.MsgpackCodec(), codecs.JsonCodec()):
        try:
            message = codec.decode(data)
        except ProtocolError as exc:
            assert exc.code is ErrorCode.INVALID_JSON
            continue
        try:
            parse_message(message, WS_MESSAGES)
        except ProtocolError as exc:
            assert exc.code in (ErrorCode.UNKNOWN_TYPE, ErrorCode.VALIDATION_ERROR)


# -- messages ----------------------------------------------------------------


@pytest.mark.parametrize(
    "message, code, loc",
    [
        ({"data": {}}, ErrorCode.UNKNOWN_TYPE, None),
        ({"type": "render_all"}, ErrorCode.UNKNOWN_TYPE, None),
        ({"type": 3}, ErrorCode.UNKNOWN_TYPE, None),
        ([1, 2], ErrorCode.VALIDATION_ERROR, []),
        ({"type": "state", "data": {}}, ErrorCode.VALIDATION_ERROR, ["data"]),
        ({"type": "step"}, ErrorCode.VALIDATION_ERROR, ["data"]),
        ({"type": "step", "data": 5}, ErrorCode.VALIDATION_ERROR, ["data"]),
        ({"type": "reset", "data": {}, "extra": 1}, ErrorCode.VALIDATION_ERROR, ["extra"]),
    ],
)
def test_client_messages_are_validated_like_openenv(message, code, loc):
    with pytest.raises(ProtocolError) as info:
        parse_message(message, WS_MESSAGES)
    assert info.value.code is code
    if loc is not None:
        assert info.value.extra["errors"][0]["loc"] == loc
    frame = ErrorReply.of(info.value).to_wire()
    assert frame["type"] == "error" and frame["data"]["code"] == code.value


def test_unknown_type_message_matches_the_reference_server():
    with pytest.raises(ProtocolError) as info:
        parse_message({"data": {}}, WS_MESSAGES)
    assert info.value.message == "Unknown message type: "


def test_valid_client_messages():
    assert parse_message({"type": "reset"}, WS_MESSAGES) == Reset()
    assert parse_message({"type": "step", "data": {"action": 1}}, WS_MESSAGES) == Step({"action": 1})
    assert parse_message({"type": "close"}, WS_MESSAGES) == Close()


def test_only_three_errors_close_the_connection():
    assert CLOSING_ERRORS == {
        ErrorCode.CAPACITY_REACHED, ErrorCode.FACTORY_ERROR, ErrorCode.SESSION_ERROR
    }


# -- JSON type hints ---------------------------------------------------------


def test_type_hints_restore_numpy_types_over_json():
    info = {
        "prob": 1.0,
        "action_mask": np.array([1, 0, 1], dtype=np.int8),
        "nested": {"t": (np.float32(0.25), 2), "plain": [1, 2]},
        "count": np.int64(4),
    }
    hints = protocol.type_hints(info)
    plain = json.loads(codecs.JsonCodec().encode(protocol.jsonable(info)))
    restored = protocol.apply_type_hints(plain, json.loads(json.dumps(hints)))
    assert restored["prob"] == 1.0 and type(restored["prob"]) is float
    assert restored["action_mask"].dtype == np.int8
    assert restored["nested"]["t"] == (np.float32(0.25), 2)
    assert type(restored["nested"]["t"][0]) is np.float32
    assert restored["nested"]["plain"] == [1, 2]
    assert type(restored["count"]) is np.int64
    assert protocol.type_hints({"a": 1, "b": [1.0, "x"]}) is None


@settings(max_examples=200, deadline=None)
@given(st.recursive(st.none() | st.integers() | st.text(), lambda c: st.lists(c) | st.dictionaries(st.text(), c)),
       st.recursive(st.none() | st.integers() | st.text(), lambda c: st.lists(c) | st.dictionaries(st.text(), c)))
def test_hostile_type_hints_never_break_decoding(value, hints):
    protocol.apply_type_hints(value, hints)


def test_lone_surrogates_echoed_in_errors_still_make_valid_utf8_frames():
    codec = codecs.JsonCodec()
    message = codec.decode('{"type": "\\ud800x"}')
    with pytest.raises(ProtocolError) as info:
        parse_message(message, WS_MESSAGES)
    frame = codec.encode(ErrorReply.of(info.value).to_wire())
    frame.encode("utf-8")  # what the transport does
    assert json.loads(frame)["data"]["code"] == "UNKNOWN_TYPE"
    assert codec.encode({"text": "héllo"}) == '{"text":"héllo"}'  # plain Unicode stays as is


@pytest.mark.parametrize("depth", [65, 300, 5000])
def test_deeply_nested_tuples_are_refused_before_they_exhaust_the_stack(depth):
    inner = msgpack.packb([0, 1])
    for _ in range(depth):
        inner = msgpack.packb([msgpack.ExtType(codecs.EXT_TUPLE, inner)])
    frame = msgpack.packb({"type": "step", "data": {"action": msgpack.ExtType(codecs.EXT_TUPLE, inner)}})
    codec = codecs.MsgpackCodec()
    with pytest.raises(ProtocolError, match="nesting exceeds"):
        codec.decode(frame)
    assert codec.decode(codec.encode({"t": (1, (2, (3,)))}))["t"] == (1, (2, (3,)))  # still usable


@pytest.mark.parametrize("value", [np.array(1 + 2j), np.array([1j, 2j]), np.array("x", dtype=object)])
def test_jsonable_takes_arrays_json_cannot_carry_of_any_shape(value):
    """The fuzzer's finding: a 0-d complex array (a msgpack frame's whole message) made
    the error that echoes it raise, ending the session."""
    plain = protocol.jsonable(value)
    assert json.loads(json.dumps(plain)) == plain
    with pytest.raises(ProtocolError) as refused:
        parse_message(value, WS_MESSAGES)
    assert refused.value.code is ErrorCode.VALIDATION_ERROR
