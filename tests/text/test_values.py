"""The text of every space's values: round trips through a reply for any space, and the
refusal of every kind of illegal value, with a message naming what was received and what
is legal. Nothing is clipped or coerced."""

from __future__ import annotations

import math

import numpy as np
import pytest
from gymnasium import spaces as gs
from hypothesis import example, given

from openenv_gym import spaces
from openenv_gym.text import ActionParseError, action_text, describe_space, parse_reply, value_text
from tests.spaces.strategies import SETTINGS, all_spaces


def same(space, a, b) -> bool:
    """Equal values of ``space`` (by their exact JSON encoding: float32 -> float is exact)."""
    return repr(spaces.encode(space, a)) == repr(spaces.encode(space, b))


@SETTINGS
@given(all_spaces)
# Strings of backticks inside a fenced JSON block (found by this test on CI).
@example(gs.Dict({"0": gs.Text(max_length=5, min_length=3, charset="`")}))
def test_round_trip_of_any_space(space):
    for seed in range(3):
        space.seed(seed)
        action = space.sample()
        if not space.contains(action):  # Gymnasium 1.2's Graph.sample ignores a Discrete's start
            continue
        text = action_text(space, action)
        back = parse_reply(space, text)
        assert same(space, action, back), (text, action, back)
        assert space.contains(back)
        # The tagged, fenced and wrapped forms of the same text read the same.
        if not isinstance(space, gs.Text):
            for wrapped in (f"<action>{text}</action>", f"```json\n{text}\n```", f'{{"action": {text}}}'):
                assert same(space, action, parse_reply(space, wrapped)), wrapped
        # A tool call's argument, already decoded from JSON, reads the same too.
        assert same(space, action, parse_reply(space, spaces.encode(space, action)))


@SETTINGS
@given(all_spaces)
def test_every_space_is_described_and_rendered(space):
    space.seed(0)
    assert describe_space(space)
    value = space.sample()
    text = value_text(space, value)
    assert isinstance(text, str)


# ---------------------------------------------------------------------------------------------
# accepted forms, per space
# ---------------------------------------------------------------------------------------------

NAMES = ["left", "down", "right", "up"]


@pytest.mark.parametrize(
    "space, reply, expected",
    [
        (gs.Discrete(4), "2", 2),
        (gs.Discrete(4), "2.0", 2),  # an integral number is that integer
        (gs.Discrete(3, start=-1), "-1", -1),
        (gs.Discrete(3, start=-1), '"1"', 1),  # the number as a string
        (gs.Box(-1.0, 1.0, shape=(1,)), "0.5", [0.5]),  # a bare number for a one-element Box
        (gs.Box(-1.0, 1.0, shape=(1,)), "[0.5]", [0.5]),
        (gs.Box(-1.0, 1.0, shape=()), "-1", -1.0),
        (gs.Box(0, 10, shape=(2, 2), dtype=np.int64), "[[1, 2], [3, 4]]", [[1, 2], [3, 4]]),
        (gs.Box(0, 1, shape=(2,), dtype=bool), "[true, false]", [True, False]),
        (gs.MultiDiscrete([3, 2]), "[2, 1]", [2, 1]),
        (gs.MultiBinary(4), "0101", [0, 1, 0, 1]),
        (gs.MultiBinary(4), "1010", [1, 0, 1, 0]),  # JSON would read a number
        (gs.MultiBinary(4), "<action>1100</action>", [1, 1, 0, 0]),
        (gs.MultiBinary(4), "[1, 1, 0, 0]", [1, 1, 0, 0]),
        (gs.MultiBinary([2, 2]), "[[1, 0], [0, 1]]", [[1, 0], [0, 1]]),
        (gs.Text(10), "abc123", "abc123"),
        (gs.Text(10), "123", "123"),  # the text itself, not a number
        (gs.Text(10, charset="a b"), '" a "', " a "),  # JSON keeps the spaces a bare reply strips
        (gs.Text(10), '{"action": "xyz"}', "xyz"),
        (gs.Tuple([gs.Discrete(2), gs.Text(3)]), '[1, "ab"]', (1, "ab")),
        (gs.Dict({"a": gs.Discrete(2), "b": gs.Box(0.0, 1.0, shape=(2,))}), '{"a": 1, "b": [0, 1]}', None),
        (gs.Dict({"action": gs.Discrete(3)}), '{"action": 2}', {"action": 2}),  # its own key, not a wrapper
        (gs.Sequence(gs.Discrete(3)), "[0, 2, 1]", (0, 2, 1)),
        (gs.Sequence(gs.Box(0.0, 1.0, shape=(2,)), stack=True), "[[0, 1], [1, 0]]", [[0, 1], [1, 0]]),
        (gs.OneOf([gs.Discrete(2), gs.Box(0.0, 1.0, shape=(1,))]), "[1, [0.25]]", None),
        (
            gs.Graph(gs.Box(0.0, 1.0, shape=(2,)), gs.Discrete(3)),
            '{"nodes": [[0, 1], [1, 0]], "edges": [2], "edge_links": [[0, 1]]}',
            None,
        ),
    ],
)
def test_accepted_forms(space, reply, expected):
    value = parse_reply(space, reply)
    assert space.contains(value)
    if expected is not None:
        assert same(space, value, spaces.decode(space, expected))


def test_names_any_case_and_numbers():
    space = gs.Discrete(4)
    assert [parse_reply(space, r, names=NAMES) for r in ("LEFT", "Down", " right ", "3", "<action>up</action>")] == [
        0, 1, 2, 3, 3
    ]
    assert action_text(space, 1, names=NAMES) == "down"


def test_float32_actions_are_written_shortest_and_exact():
    space = gs.Box(-2.0, 2.0, shape=(3,), dtype=np.float32)
    action = np.array([0.1, -1.9999999, 1 / 3], dtype=np.float32)
    text = action_text(space, action)
    assert text == "[0.1, -1.9999999, 0.33333334]"
    assert np.array_equal(parse_reply(space, text), action)


# ---------------------------------------------------------------------------------------------
# refusals: what was received, what is legal
# ---------------------------------------------------------------------------------------------

REFUSALS = [
    # Discrete: fractions, out of range (above and below, with start), bools, names, other types
    (gs.Discrete(3), "1.5", "action: got 1.5, not an integer; legal: an integer from 0 to 2"),
    (gs.Discrete(3), "3", "action: got 3, out of range; legal: an integer from 0 to 2"),
    (gs.Discrete(3, start=1), "0", "action: got 0, out of range; legal: an integer from 1 to 3"),
    (gs.Discrete(3), "true", "action: got true, not an integer; legal: an integer from 0 to 2"),
    (gs.Discrete(3), "[1]", "action: got [1], not an integer; legal: an integer from 0 to 2"),
    (gs.Discrete(3), "two", "action: got 'two', not an integer; legal: an integer from 0 to 2"),
    (gs.Discrete(3), "", "action: got '', not an integer"),
    (gs.Discrete(3), "NaN", "action: got NaN, not an integer"),
    # Box: bounds (never clipped), length, shape, types, NaN, integer and boolean dtypes
    (gs.Box(-1.0, 1.0, shape=(2,)), "[0.5, 1.5]", "action[1]: got 1.5, above the upper bound 1.0; legal: a list of 2 numbers, each from -1.0 to 1.0"),
    (gs.Box(-1.0, 1.0, shape=(2,), dtype=np.float64), "[1.0000001, 0]", "action[0]: got 1.0000001, above the upper bound 1.0"),
    (gs.Box(-1.0, 1.0, shape=(2,)), "[-2, 0]", "action[0]: got -2.0, below the lower bound -1.0"),
    (gs.Box(-1.0, 1.0, shape=(2,)), "[0.5]", "action: expected 2 items (array of shape (2,)), got 1; legal: a list of 2 numbers"),
    (gs.Box(-1.0, 1.0, shape=(2,)), "[0.5, 0.5, 0.5]", "expected 2 items (array of shape (2,)), got 3"),
    (gs.Box(-1.0, 1.0, shape=(2,)), "0.5", "expected a list of 2 items (array of shape (2,)), got float 0.5"),
    (gs.Box(-1.0, 1.0, shape=(2,)), '["a", 0]', "action[0]: expected a number, got str 'a'"),
    (gs.Box(-1.0, 1.0, shape=(2,)), "[NaN, 0]", "action[0]: got NaN, not a number; legal: a list of 2 numbers"),
    (gs.Box(-1.0, 1.0, shape=(2, 2)), "[[0, 0], [0, 2]]", "action[1][1]: got 2.0, above the upper bound 1.0"),
    (gs.Box(0, 5, shape=(2,), dtype=np.int32), "[1.5, 2]", "action[0]: expected an integer, got 1.5; legal: a list of 2 integers, each from 0 to 5"),
    (gs.Box(0, 1, shape=(2,), dtype=bool), "[1, 0]", "action[0]: expected a boolean, got int 1; legal: a list of 2 booleans"),
    (gs.Box(low=np.array([0.0, -5.0]), high=np.array([1.0, 5.0]), dtype=np.float64), "[0, 6]", "action[1]: got 6.0, above the upper bound 5.0; legal: a list of 2 numbers: [0] from 0.0 to 1.0, [1] from -5.0 to 5.0"),
    # MultiDiscrete: per-element ranges
    (gs.MultiDiscrete([3, 2]), "[2, 2]", "action[1]: got 2, out of range; legal: a list of 2 integers: [0] from 0 to 2, [1] from 0 to 1"),
    (gs.MultiDiscrete([3, 2]), "[-1, 0]", "action[0]: got -1, out of range"),
    (gs.MultiDiscrete([3, 3]), "[1.5, 0]", "action[0]: expected an integer, got 1.5; legal: a list of 2 integers, each from 0 to 2"),
    # MultiBinary: bits only, the right number of them
    (gs.MultiBinary(4), "0121", "action: got '0121', not a string of 4 bits; legal: a list of 4 bits (0 or 1), or a string of 4 bits like \"0110\""),
    (gs.MultiBinary(4), "010", "action: got '010', not a string of 4 bits"),
    (gs.MultiBinary(4), "[0, 2, 0, 0]", "action[1]: got 2, not a bit"),
    (gs.MultiBinary(4), "[0, 1]", "action: expected 4 items (array of shape (4,)), got 2"),
    # Text: charset and length, as a bare reply and as JSON
    (gs.Text(5, charset="abc"), "abd", "action: got 'abd', the character 'd' is not allowed; legal: a string of 1 to 5 characters from the characters \"abc\""),
    (gs.Text(3, charset="abc"), "abcabc", "action: got 'abcabc', 6 characters long; legal: a string of 1 to 3 characters"),
    (gs.Text(5, min_length=2, charset="abc"), '"a"', "action: got 'a', 1 characters long; legal: a string of 2 to 5 characters"),
    (gs.Tuple([gs.Text(3)]), "[5]", "action[0]: got 5, not a string; legal: a string of 1 to 3 characters"),
    # Dict: missing, unexpected keys, a nested value named by its path
    (gs.Dict({"a": gs.Discrete(2), "b": gs.Discrete(2)}), '{"a": 1}', 'action: got {"a": 1}, missing the keys "b"; legal: a JSON object with the keys "a" (an integer from 0 to 1), "b"'),
    (gs.Dict({"a": gs.Discrete(2)}), '{"a": 1, "z": 0}', 'unexpected keys "z"'),
    (gs.Dict({"a": gs.Discrete(2)}), "[1]", "action: got [1], not a JSON object"),
    (gs.Dict({"pos": gs.Box(0.0, 1.0, shape=(2,))}), '{"pos": [0, 3]}', 'action["pos"][1]: got 3.0, above the upper bound 1.0; legal: a list of 2 numbers, each from 0.0 to 1.0'),
    # Tuple: length, nested values
    (gs.Tuple([gs.Discrete(2), gs.Discrete(2)]), "[1]", "action: got [1], 1 items; legal: a JSON list of 2 items: [0] an integer from 0 to 1"),
    (gs.Tuple([gs.Discrete(2), gs.Discrete(5)]), "[1, 7]", "action[1]: got 7, out of range; legal: an integer from 0 to 4"),
    # Sequence: items checked one by one; stacked sequences as a whole
    (gs.Sequence(gs.Discrete(3)), "[0, 5]", "action[1]: got 5, out of range; legal: an integer from 0 to 2"),
    (gs.Sequence(gs.Discrete(3)), "3", "action: got 3, not a JSON list; legal: a JSON list of any length, each item an integer from 0 to 2"),
    (gs.Sequence(gs.Box(0.0, 1.0, shape=(2,)), stack=True), "[[0, 5]]", "action: got [[0, 5]], outside the space"),
    # Graph
    (gs.Graph(gs.Box(0.0, 1.0, shape=(2,)), None), '{"nodes": [[0, 2]], "edges": null, "edge_links": null}', "outside the space (a value breaks its bounds or range); legal: a graph"),
    (gs.Graph(gs.Box(0.0, 1.0, shape=(2,)), None), '{"nodes": [[0]]}', 'action.nodes[0]: expected 2 items (shape (2,), a part of an array of shape (1, 2)), got 1; legal: a graph'),
    # OneOf: the choice, then the value
    (gs.OneOf([gs.Discrete(2), gs.Discrete(3)]), "[2, 0]", "action[0]: got 2, not a choice (there are 2); legal: a JSON pair [choice, value], one of [0, an integer from 0 to 1], [1, an integer from 0 to 2]"),
    (gs.OneOf([gs.Discrete(2), gs.Discrete(3)]), "[1, 3]", "action[1]: got 3, out of range; legal: an integer from 0 to 2"),
    (gs.OneOf([gs.Discrete(2)]), "[0]", "action: got [0], 1 items; legal: a JSON pair"),
]


@pytest.mark.parametrize(
    "space, reply, message", REFUSALS, ids=[f"{type(s).__name__}-{r}" for s, r, _ in REFUSALS]
)
def test_refusals_name_what_was_received_and_what_is_legal(space, reply, message):
    with pytest.raises(ActionParseError) as caught:
        parse_reply(space, reply)
    text = str(caught.value)
    assert text.startswith(f"cannot read an action from {reply!r}: "), text
    assert message in text
    assert caught.value.received == reply
    assert caught.value.legal and caught.value.legal in text


def test_every_space_type_is_refused_somewhere():
    refused = {type(space) for space, _, _ in REFUSALS}
    assert refused >= {gs.Discrete, gs.Box, gs.MultiDiscrete, gs.MultiBinary, gs.Text, gs.Dict, gs.Tuple,
                       gs.Sequence, gs.Graph, gs.OneOf}


def test_names_are_the_legal_words():
    with pytest.raises(ActionParseError) as caught:
        parse_reply(gs.Discrete(4), "jump", names=NAMES)
    assert str(caught.value) == (
        "cannot read an action from 'jump': action: got 'jump', not an action name; "
        "legal: one of left, down, right, up (or their numbers 0 to 3)"
    )


def test_big_charsets_are_summarized():
    space = gs.Text(4, charset="".join(chr(c) for c in range(0x4E00, 0x4E00 + 500)))
    with pytest.raises(ActionParseError, match=r"from a set of 500 characters \(the first 30: ") as caught:
        parse_reply(space, "abc")
    assert len(str(caught.value)) < 400


def test_long_replies_are_quoted_short():
    with pytest.raises(ActionParseError) as caught:
        parse_reply(gs.Discrete(2), "x" * 10_000)
    assert "(10000 characters)" in str(caught.value) and len(str(caught.value)) < 500


# ---------------------------------------------------------------------------------------------
# observations
# ---------------------------------------------------------------------------------------------


def test_observation_text():
    assert value_text(gs.Box(-math.inf, math.inf, shape=(3,)), np.array([1 / 3, 1e6, -2.5e-7])) == "[0.3333, 1e+06, -2.5e-07]"
    assert value_text(gs.Discrete(5), np.int64(3)) == "3"
    assert value_text(gs.Text(10), "hello") == "hello"
    assert value_text(gs.Tuple([gs.Discrete(32), gs.Discrete(11), gs.Discrete(2)]), (11, 10, 0)) == "(11, 10, 0)"
    assert value_text(gs.MultiBinary(3), np.array([1, 0, 1], dtype=np.int8)) == "[1, 0, 1]"
    nested = gs.Dict({"agent": gs.Dict({"pos": gs.Box(0.0, 1.0, shape=(2,))}), "t": gs.Discrete(9)})
    assert value_text(nested, {"agent": {"pos": np.array([0.25, 0.5])}, "t": 4}) == "agent: pos: [0.25, 0.5]\nt: 4"
    image = gs.Box(0, 255, shape=(84, 84, 3), dtype=np.uint8)
    text = value_text(image, np.full((84, 84, 3), 7, np.uint8))
    assert text == "an array of shape (84, 84, 3) and dtype uint8: min 7, max 7, mean 7"
    assert value_text(gs.Sequence(gs.Discrete(3)), (0, 2)) == "[0, 2]"


def test_an_action_outside_the_names_has_no_text():
    with pytest.raises(ValueError, match="7 is not an action of Discrete"):
        action_text(gs.Discrete(4), 7, names=NAMES)
