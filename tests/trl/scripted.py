"""Scripted generation for TRL's ``GRPOTrainer``: the model's ``generate`` replaced by a
policy that reads each conversation and answers with text, as TRL's own tests script
generation (``patch.object(trainer.model, "generate", side_effect=...)``).

The policy sees one conversation as text (prompt, tool calls and tool results so far)
and the row's index in the generation batch, and returns the assistant's next message;
:func:`tool_call` writes a call in the Qwen 2.5 format TRL parses.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

import torch

#: A policy: (conversation so far as text, row in the batch or None) -> the assistant's message.
Policy = Callable[[str, "int | None"], str]

_CALL = re.compile(r'<tool_call>\n(\{"name": "\w+", "arguments": .*?\})\n</tool_call>')


def tool_call(name: str, **arguments: Any) -> str:
    """An assistant message calling ``name`` with ``arguments``."""
    return f"<tool_call>\n{json.dumps({'name': name, 'arguments': arguments})}\n</tool_call>"


def calls_so_far(conversation: str) -> list[dict[str, Any]]:
    """The tool calls the assistant made in ``conversation`` (``{"name", "arguments"}``)."""
    return [json.loads(found) for found in _CALL.findall(conversation)]


class ScriptedGenerate:
    """``model.generate`` replaced by ``policy``; counts its calls.

    The first call for a generation batch holds all its rows, in order, none of them
    with a tool result yet: the policy gets each row's index. Later calls (after tool
    results) hold only the rows still calling tools, in an order of TRL's: the policy
    gets ``None`` and tells a conversation by the calls already in it.
    """

    def __init__(self, tokenizer: Any, policy: Policy) -> None:
        self.tokenizer = tokenizer
        self.policy = policy
        self.calls = 0

    def __call__(self, input_ids: torch.Tensor, **kwargs: Any) -> torch.Tensor:
        self.calls += 1
        pad = self.tokenizer.pad_token_id
        texts = [self.tokenizer.decode(row[row != pad]) for row in input_ids]
        first = not any("<tool_response>" in text for text in texts)
        completions = [
            self.tokenizer.encode(self.policy(text, i if first else None) + self.tokenizer.eos_token)
            for i, text in enumerate(texts)
        ]
        width = max(len(c) for c in completions)
        padded = [c + [pad] * (width - len(c)) for c in completions]
        return torch.cat([input_ids, torch.tensor(padded, dtype=input_ids.dtype, device=input_ids.device)], dim=1)
