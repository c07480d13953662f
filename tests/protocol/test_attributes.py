"""The attribute messages' parsers (``openenv_gym.protocol.attributes``): ``indices`` and ``is_wrapped``."""

from __future__ import annotations

import pytest

from openenv_gym.errors import ProtocolError
from openenv_gym.protocol.attributes import Call, GetAttr, IsWrapped, SetAttr, class_path


@pytest.mark.parametrize("message", [Call("reset_count", [1], {"a": 2}, [0, 3]), GetAttr("x", [2]), GetAttr("x"),
                                     SetAttr("x", [1, 2], None, [1, 0]), IsWrapped("a.b.C", [5]), IsWrapped("a.b.C")])
def test_messages_round_trip_with_and_without_indices(message):
    data = message.to_wire()["data"]
    assert type(message).from_data(data) == message
    assert ("indices" in data) == (message.indices is not None)


@pytest.mark.parametrize("indices", [[0, 0], [-1], [1.0], "0", [True], {"0": 1}])
def test_indices_must_be_distinct_non_negative_integers(indices):
    for kind, data in [(GetAttr, {"name": "x"}), (Call, {"name": "f"}), (SetAttr, {"name": "x", "values": []}),
                       (IsWrapped, {"wrapper": "a.B"})]:
        with pytest.raises(ProtocolError) as caught:
            kind.from_data({**data, "indices": indices})
        assert _reason(caught.value) == (["indices"], "indices must be a list of distinct env indices (integers >= 0)")


@pytest.mark.parametrize("wrapper", [None, 3, "", "a..B", "a.b c", "os.system('x')"])
def test_is_wrapped_names_a_class_by_its_import_path(wrapper):
    with pytest.raises(ProtocolError) as caught:
        IsWrapped.from_data({"wrapper": wrapper})
    loc, msg = _reason(caught.value)
    assert loc == ["wrapper"] and msg.startswith("wrapper must be a class's import path")


def _reason(error: ProtocolError) -> tuple[list, str]:
    """Where a VALIDATION_ERROR says the message is wrong, and why."""
    (entry,) = error.extra["errors"]
    return entry["loc"], entry["msg"]


def test_class_path_is_module_and_qualified_name():
    assert class_path(ProtocolError) == "openenv_gym.errors.ProtocolError"
