"""What a model's reply says: the one action it names, in any of five forms.

A reply may be a bare value (``2``, ``left``), JSON (``[0.1, -0.3]``), fenced JSON
(a Markdown code block), an object ``{"action": ...}`` or an ``<action>...</action>``
tag, with anything around a tag or a code block (the model's reasoning) ignored.
:func:`read_reply` peels the wrappers off and returns a :class:`Reply`: the text
inside and, when that text is JSON, its value. Which of the two an action space
takes, and whether ``{"action": ...}`` is a wrapper or the value itself, is up to the
view (:mod:`openenv_gym.text.values`), which knows the space.

    >>> read_reply("I will go left. <action>left</action>")
    Reply(text='left', value=<no JSON>)
    >>> read_reply('```json\\n{"action": [0.5, -1]}\\n```').value
    {'action': [0.5, -1]}
    >>> read_reply("<action>up</action> or maybe <action>down</action>")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    openenv_gym.errors.ActionParseError: the reply holds 2 different <action> tags ('up', 'down'); answer ...
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from ..errors import ActionParseError

__all__ = ["ActionParseError", "Reply", "NO_JSON", "read_reply", "shorten"]

#: Longest excerpt of a reply an error message quotes.
QUOTE_LIMIT = 120

# The marks of an <action> tag, opening or closing, in any case.
_TAG_MARK = re.compile(r"<(/?)action>", re.IGNORECASE)
# The lines that open and close a Markdown code block as CommonMark fences it: three
# backticks or more and an optional info word (``json``), then a line of at least as many.
_OPENING = re.compile(r" {0,3}(`{3,})[^`]*")
_CLOSING = re.compile(r" {0,3}(`{3,})[ \t\r]*")
# A code block on one line (```left```, ```json [3]```) or with its fences not on lines of
# their own, with an optional language word before a space or newline.
_INLINE = re.compile(r"```(?:[\w+-]+(?=\s))?(.*?)```", re.DOTALL)


class _NoJson:
    def __repr__(self) -> str:
        return "<no JSON>"


#: :attr:`Reply.value` of a reply whose text is not JSON.
NO_JSON: Any = _NoJson()


@dataclass(frozen=True)
class Reply:
    """The action text of a reply, with its wrappers removed.

    ``text`` is the text inside any ``<action>`` tag or code block, stripped;
    ``value`` is that text read as JSON, or :data:`NO_JSON`.
    """

    text: str
    value: Any = NO_JSON


def shorten(text: str, limit: int = QUOTE_LIMIT) -> str:
    """``repr`` of ``text``, cut to ``limit`` characters for an error message.

    >>> shorten("x" * 200, limit=10)
    "'xxxxxxxxxx'... (200 characters)"
    """
    if len(text) <= limit:
        return repr(text)
    return f"{text[:limit]!r}... ({len(text)} characters)"


def read_reply(reply: str) -> Reply:
    """Take the action text out of a model's reply.

    In order: the whole reply if it is JSON; else the inside of its ``<action>`` tag;
    else the inside of its code block (fenced with three backticks, with or without a
    language word: fences on lines of their own first, as Markdown reads them, then on
    one line); else the whole reply as bare text. A tag may hold a code block.
    Several different tags (or code blocks) are an error, since the reply then names
    several actions. The time it takes grows with the reply's length, not faster: a server
    reads its clients' text actions with it.

    Raises:
        ActionParseError: if the reply holds several different actions.
    """
    text = reply.strip()
    value = _json(text)
    if value is not NO_JSON:
        return Reply(text, value)
    for find, what in ((_tags, "<action> tags"), (_blocks, "code blocks"), (_INLINE.findall, "code blocks")):
        inner = _only(find(text), text, what)
        if inner is not None:
            text = inner
            value = _json(text)
            if value is not NO_JSON:
                break
    return Reply(text, value)


def _tags(text: str) -> list[str]:
    """The insides of the ``<action>`` tags of ``text``: each from an opening mark to the
    closing mark after it (openings between are its text)."""
    found, start = [], -1
    for mark in _TAG_MARK.finditer(text):
        if start < 0 and not mark[1]:
            start = mark.end()
        elif start >= 0 and mark[1]:
            found.append(text[start : mark.start()])
            start = -1
    return found


def _blocks(text: str) -> list[str]:
    """The insides of the code blocks of ``text`` fenced on lines of their own; what is
    inside may hold backticks (a JSON string of them), on any line but one of their own.
    A block never closed is none."""
    found: list[str] = []
    inner: list[str] = []
    fence = 0  # the opening fence's backticks, while a block is open
    for line in text.split("\n"):
        if not fence:
            opening = _OPENING.fullmatch(line)
            if opening:
                fence, inner = len(opening[1]), []
            continue
        closing = _CLOSING.fullmatch(line)
        if closing and len(closing[1]) >= fence:
            found.append("\n".join(inner))
            fence = 0
        else:
            inner.append(line)
    return found


def _only(inners: list[str], text: str, what: str) -> str | None:
    found = list(dict.fromkeys(inner.strip() for inner in inners))
    if len(found) > 1:
        quoted = ", ".join(shorten(f, 40) for f in found[:3])
        raise ActionParseError(
            f"the reply holds {len(found)} different {what} ({quoted}); answer with exactly one action",
            received=text,
        )
    return found[0] if found else None


def _json(text: str) -> Any:
    if not text or text[0] not in '[{"-0123456789tfnNI':
        return NO_JSON  # not JSON, and cheap to tell
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        return NO_JSON
