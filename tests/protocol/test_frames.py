"""Frames and their limits (``openenv_gym.protocol.frames``): what a frame may carry before it
is trusted, and what the handshake negotiates."""

from __future__ import annotations

import dataclasses
import json

import msgpack
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from openenv_gym.errors import ErrorCode, ProtocolError
from openenv_gym.protocol import codecs, frames
from openenv_gym.protocol.frames import Limits

BIG = 10**9  # a frame size past every limit: the shape is always walked


def nested(depth: int) -> list:
    """A list nested ``depth`` levels deep: ``nested(1) == []``."""
    value: list = []
    for _ in range(depth - 1):
        value = [value]
    return value


def refused(call) -> ProtocolError:
    with pytest.raises(ProtocolError) as caught:
        call()
    assert caught.value.code is ErrorCode.INVALID_JSON
    return caught.value


# -- Limits ---------------------------------------------------------------------------


def test_default_limits_match_the_reference_server_and_the_documented_bounds():
    assert Limits() == Limits(max_frame_bytes=16 * 1024 * 1024, max_array_bytes=16 * 1024 * 1024, max_depth=64,
                              max_container_len=1_000_000, max_items=100_000, max_arrays=10_000)


def test_limits_cannot_be_changed_once_made():
    with pytest.raises(dataclasses.FrozenInstanceError):
        Limits().max_depth = 1000  # type: ignore[misc]


# -- check_size -----------------------------------------------------------------------


def test_a_frame_of_exactly_the_size_limit_is_taken():
    assert frames.check_size(100, Limits(max_frame_bytes=100)) is None


def test_a_frame_one_byte_over_the_size_limit_is_refused_naming_both_sizes():
    error = refused(lambda: frames.check_size(101, Limits(max_frame_bytes=100)))
    assert error.message == "Frame of 101 bytes exceeds the limit of 100 bytes"


# -- check_shape ----------------------------------------------------------------------


def test_nesting_of_exactly_the_depth_limit_is_taken():
    assert frames.check_shape(nested(5), Limits(max_depth=5), frame_size=BIG) is None


def test_nesting_one_level_past_the_depth_limit_is_refused():
    error = refused(lambda: frames.check_shape(nested(6), Limits(max_depth=5), frame_size=BIG))
    assert error.message == "Message nesting exceeds the limit of 5 levels"


@pytest.mark.parametrize("value", [{"a": {"b": {"c": {}}}}, ((((),),),), [{"a": ([],)}]], ids=["dicts", "tuples", "mixed"])
def test_maps_and_tuples_count_as_levels_too(value):
    assert frames.check_shape(value, Limits(max_depth=4), frame_size=BIG) is None
    refused(lambda: frames.check_shape(value, Limits(max_depth=3), frame_size=BIG))


def test_map_keys_are_not_levels():
    assert frames.check_shape({"a": 1, "b": [2]}, Limits(max_depth=2), frame_size=BIG) is None


@pytest.mark.parametrize("container", [list(range(10)), dict.fromkeys(map(str, range(10)), 0), tuple(range(10))],
                         ids=["list", "map", "tuple"])
def test_a_container_of_exactly_the_length_limit_is_taken_and_one_more_is_refused(container):
    assert frames.check_shape(container, Limits(max_container_len=10), frame_size=BIG) is None
    longer = [*container, 0] if not isinstance(container, dict) else {**container, "x": 0}
    error = refused(lambda: frames.check_shape(longer, Limits(max_container_len=10), frame_size=BIG))
    assert error.message == "A container of 11 items exceeds the limit of 10"


def test_a_long_container_deep_inside_is_found():
    value = {"a": [1, {"b": [[0] * 20]}]}
    refused(lambda: frames.check_shape(value, Limits(max_container_len=10), frame_size=BIG))


def test_a_frame_smaller_than_both_limits_is_not_walked():
    """Every level and every item costs a byte of frame: a frame of 3 bytes holds neither
    4 levels nor 4 items, so the value it decoded to is not looked at."""
    assert frames.check_shape(nested(100), Limits(max_depth=3, max_container_len=3), frame_size=3) is None
    refused(lambda: frames.check_shape(nested(100), Limits(max_depth=3, max_container_len=3), frame_size=4))


def _depth(value) -> int:
    if isinstance(value, dict):
        return 1 + max(map(_depth, value.values()), default=0)
    if isinstance(value, (list, tuple)):
        return 1 + max(map(_depth, value), default=0)
    return 0


def _longest(value) -> int:
    if isinstance(value, dict):
        return max([len(value), *map(_longest, value.values())])
    if isinstance(value, (list, tuple)):
        return max([len(value), *map(_longest, value)])
    return 0


_TREES = st.recursive(
    st.integers() | st.text(max_size=3) | st.none(),
    lambda inner: st.lists(inner, max_size=6) | st.lists(inner, max_size=6).map(tuple)
    | st.dictionaries(st.text(max_size=3), inner, max_size=6),
    max_leaves=25,
)


@settings(max_examples=120, deadline=None)
@given(_TREES, st.integers(1, 8), st.integers(0, 7))
def test_check_shape_refuses_exactly_the_values_past_a_limit(value, max_depth, max_len):
    limits = Limits(max_depth=max_depth, max_container_len=max_len)
    too_deep, too_long = _depth(value) > max_depth, _longest(value) > max_len
    try:
        frames.check_shape(value, limits, frame_size=BIG)
    except ProtocolError as exc:
        assert exc.code is ErrorCode.INVALID_JSON
        assert too_deep or too_long
    else:
        assert not too_deep and not too_long


# -- every Limits field, enforced on real frames --------------------------------------


def test_max_frame_bytes_bounds_msgpack_frames_before_they_are_unpacked():
    codec = codecs.MsgpackCodec(Limits(max_frame_bytes=50))
    assert codec.decode(msgpack.packb({"v": b"x" * 30}))["v"] == b"x" * 30
    error = refused(lambda: codec.decode(msgpack.packb({"v": b"x" * 60})))
    assert error.message.startswith("Frame of 65 bytes exceeds the limit of 50 bytes")


def test_max_items_bounds_the_items_of_a_json_frame():
    codec = codecs.JsonCodec(Limits(max_items=10))
    assert codec.decode(json.dumps(list(range(10)))) == list(range(10))
    error = refused(lambda: codec.decode(json.dumps(list(range(11)))))
    assert error.message == "Message holds more than the limit of 10 items"


def test_max_items_counts_commas_inside_strings_too():
    """Items are counted before parsing, by their commas: a string full of commas is
    refused like the items it could have been."""
    refused(lambda: codecs.JsonCodec(Limits(max_items=10)).decode(json.dumps(["," * 20])))


def test_max_arrays_bounds_the_numpy_values_and_tuples_of_a_msgpack_frame():
    codec = codecs.MsgpackCodec(Limits(max_arrays=3))
    three = [np.zeros(1), np.float32(1), (1,)]
    assert len(codec.decode(codec.encode({"v": three}))["v"]) == 3
    error = refused(lambda: codec.decode(codec.encode({"v": [*three, np.int8(1)]})))
    assert error.message.startswith("Message holds more than the limit of 3 items that are arrays")


def test_max_arrays_is_counted_afresh_for_every_frame():
    codec = codecs.MsgpackCodec(Limits(max_arrays=2))
    frame = codec.encode({"v": [np.zeros(1), np.zeros(1)]})
    for _ in range(3):
        assert len(codec.decode(frame)["v"]) == 2


def test_max_array_bytes_bounds_one_decoded_array_at_its_limit():
    codec = codecs.MsgpackCodec(Limits(max_array_bytes=80))
    assert codec.decode(codec.encode({"v": np.zeros(10)}))["v"].nbytes == 80
    error = refused(lambda: codec.decode(codec.encode({"v": np.zeros(11)})))
    assert error.message == "ndarray of 88 bytes exceeds the limit of 80 bytes"


def test_max_container_len_bounds_msgpack_maps_and_arrays():
    codec = codecs.MsgpackCodec(Limits(max_container_len=5))
    assert codec.decode(codec.encode(list(range(5)))) == list(range(5))
    refused(lambda: codec.decode(codec.encode(list(range(6)))))
    refused(lambda: codec.decode(codec.encode(dict.fromkeys("abcdef", 0))))


@pytest.mark.parametrize("codec", [codecs.JsonCodec(Limits(max_depth=4)), codecs.MsgpackCodec(Limits(max_depth=4))],
                         ids=["json", "msgpack"])
def test_max_depth_bounds_real_frames_at_the_limit(codec):
    assert codec.decode(codec.encode(nested(4))) == nested(4)
    error = refused(lambda: codec.decode(codec.encode(nested(5))))
    assert error.message == "Message nesting exceeds the limit of 4 levels"


# -- handshake ------------------------------------------------------------------------


def test_msgpack_is_the_preferred_subprotocol_its_second_version_first():
    buffers = codecs.MsgpackBuffersCodec.subprotocol
    assert codecs.SUBPROTOCOLS == (buffers, codecs.MSGPACK_SUBPROTOCOL, codecs.JSON_SUBPROTOCOL)
    assert buffers == "openenv-gym.msgpack.v2"
    assert codecs.MSGPACK_SUBPROTOCOL == "openenv-gym.msgpack.v1" and codecs.JSON_SUBPROTOCOL == "openenv-gym.json.v1"


def test_the_process_header_is_lowercase_as_http_and_asgi_spell_headers():
    assert frames.PROCESS_HEADER == frames.PROCESS_HEADER.lower()
