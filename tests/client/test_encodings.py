"""A client's ``encoding=``: the codecs of :data:`~openenv_gym.protocol.CODECS` by name,
what each offers in the handshake, and what a server's choice means for it."""

from __future__ import annotations

import typing

import pytest

from openenv_gym.client.options import OFFERS, ConnectKwargs, ConnectOptions, Encoding
from openenv_gym.client.session import negotiated_codec
from openenv_gym.errors import ProtocolMismatchError
from openenv_gym.protocol import (
    CODECS,
    JSON_SUBPROTOCOL,
    MSGPACK_SUBPROTOCOL,
    SUBPROTOCOLS,
    JsonCodec,
    MsgpackBuffersCodec,
    MsgpackCodec,
)

URL = "ws://127.0.0.1:8000/ws"


def test_the_encodings_are_auto_and_the_names_of_the_codecs():
    """``Encoding`` is written out for type checkers; it stays the table's."""
    names = ("auto", *dict.fromkeys(codec.name for codec in CODECS))
    assert typing.get_args(Encoding) == names
    assert typing.get_type_hints(ConnectKwargs)["encoding"] == Encoding
    assert tuple(OFFERS) == names


def test_auto_offers_every_codec_in_order_of_preference_and_a_name_every_version_of_it():
    buffers = MsgpackBuffersCodec.subprotocol
    assert ConnectOptions().subprotocols == SUBPROTOCOLS == (buffers, MSGPACK_SUBPROTOCOL, JSON_SUBPROTOCOL)
    assert ConnectOptions(encoding="msgpack").subprotocols == (buffers, MSGPACK_SUBPROTOCOL)
    assert ConnectOptions(encoding="json").subprotocols == (JSON_SUBPROTOCOL,)


def test_an_encoding_that_is_no_codec_is_refused_naming_the_choices():
    with pytest.raises(ValueError, match="encoding must be one of 'auto', 'msgpack', 'json', not 'cbor'"):
        ConnectOptions(encoding="cbor")  # type: ignore[arg-type]


@pytest.mark.parametrize("encoding", ["auto", "json"])
def test_a_stock_server_that_chooses_no_subprotocol_is_spoken_to_in_json(encoding):
    codec = negotiated_codec(URL, ConnectOptions(encoding=encoding), None)
    assert isinstance(codec, JsonCodec) and not codec.extended


@pytest.mark.parametrize("chosen", SUBPROTOCOLS)
def test_the_servers_choice_is_the_codec(chosen):
    codec = negotiated_codec(URL, ConnectOptions(), chosen)
    assert codec.subprotocol == chosen and codec.extended


def test_msgpack_refuses_a_stock_server_instead_of_falling_back():
    with pytest.raises(ProtocolMismatchError, match="does not offer msgpack frames .it is not an openenv-gym server.; "
                                                    "use encoding='json' or 'auto'"):
        negotiated_codec(URL, ConnectOptions(encoding="msgpack"), None)


def test_a_server_choosing_another_codec_than_the_one_asked_for_is_named():
    with pytest.raises(ProtocolMismatchError, match=f"it chose '{JSON_SUBPROTOCOL}'"):
        negotiated_codec(URL, ConnectOptions(encoding="msgpack"), JSON_SUBPROTOCOL)
    assert isinstance(negotiated_codec(URL, ConnectOptions(encoding="msgpack"), MSGPACK_SUBPROTOCOL), MsgpackCodec)
