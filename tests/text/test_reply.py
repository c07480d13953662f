"""read_reply: the five forms of a reply, the wrappers it peels and the replies it refuses."""

from __future__ import annotations

import contextlib
import time

import pytest

from openenv_gym.errors import OpenEnvGymError
from openenv_gym.text import ActionParseError, read_reply
from openenv_gym.text.reply import NO_JSON


@pytest.mark.parametrize(
    "reply, text, value",
    [
        # bare values
        ("2", "2", 2),
        ("  left \n", "left", NO_JSON),
        ("0101", "0101", NO_JSON),  # not JSON (a leading zero): bare bits for a MultiBinary
        # JSON
        ("[0.1, -0.3]", "[0.1, -0.3]", [0.1, -0.3]),
        ('"e2e4"', '"e2e4"', "e2e4"),
        # fenced JSON, with and without a language word, on one line or several
        ("```json\n[1, 2]\n```", "[1, 2]", [1, 2]),
        ("Here it is:\n```\n{\"a\": 1}\n```\nDone.", '{"a": 1}', {"a": 1}),
        ("```left```", "left", NO_JSON),
        ("```json [3]```", "[3]", [3]),
        ("```json\n[1, 2]```", "[1, 2]", [1, 2]),
        # backticks inside a fenced block, but on a line of their own, do not end it
        ('```json\n{"quote": "```"}\n```', '{"quote": "```"}', {"quote": "```"}),
        ('````\n["```", "````"]\n````', '["```", "````"]', ["```", "````"]),
        ('Plan:\n  ```json\n  [{"a": "x```y"}]\n  ```\nDone.', '[{"a": "x```y"}]', [{"a": "x```y"}]),
        # an object {"action": ...} (unwrapped by the view, which knows the space)
        ('{"action": "down"}', '{"action": "down"}', {"action": "down"}),
        # <action> tags, any case, with reasoning around them, possibly holding a code block
        ("I think so.\n<action>up</action>", "up", NO_JSON),
        ("<ACTION> [0.5] </Action>", "[0.5]", [0.5]),
        ("<action>```json\n{\"action\": 1}\n```</action>", '{"action": 1}', {"action": 1}),
        # the same action twice is one action
        ("<action>up</action> so: <action>up</action>", "up", NO_JSON),
    ],
)
def test_forms(reply, text, value):
    read = read_reply(reply)
    assert read.text == text
    assert read.value == value if value is not NO_JSON else read.value is NO_JSON


def test_a_whole_json_reply_is_not_searched_for_wrappers():
    # A JSON string holding a tag is that string: so any Text action can be written as JSON.
    assert read_reply('"<action>x</action>"').value == "<action>x</action>"


@pytest.mark.parametrize(
    "reply, what",
    [
        ("<action>up</action> or <action>down</action>", "2 different <action> tags ('up', 'down')"),
        ("```json\n1\n```\n```json\n2\n```", "2 different code blocks ('1', '2')"),
    ],
)
def test_several_actions_are_refused(reply, what):
    with pytest.raises(ActionParseError, match="answer with exactly one action") as caught:
        read_reply(reply)
    assert what in str(caught.value)
    assert isinstance(caught.value, ValueError) and isinstance(caught.value, OpenEnvGymError)


@pytest.mark.parametrize("unit", ["<action>", "```a\n", " ````\n", "<action>```\n", "```\n<action>\n"])
def test_a_reply_built_to_be_slow_to_read_is_read_in_linear_time(unit):
    """A server reads its clients' text actions with ``read_reply`` (``POST /web/step``, the
    ``act`` tool): 256 KB of openings never closed, each of which a backtracking pattern
    would scan the rest of the reply from (13 s for 128 KB of ``<action>`` before), read
    about as fast as any reply of that length."""
    reply = unit * (256_000 // len(unit))
    started = time.perf_counter()
    with contextlib.suppress(ActionParseError):
        read_reply(reply)
    assert time.perf_counter() - started < 1.0
