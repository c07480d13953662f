"""Session telemetry (:mod:`openenv_gym.protocol.validation`): what one ``/ws`` socket
did, recorded for a validator that holds the server's validation token.

A server has it when ``create_app`` is given a validation token, or the
``OPENENV_VALIDATION_TOKEN`` environment variable holds one, in simulation mode
only, as upstream's servers have it. Each ``/ws`` socket then gets a :class:`SessionTelemetry`,
which records nothing until the socket's first message opens it with the
token; a server without a token creates none and records nothing.

The record is bounded as upstream bounds it: at most :data:`MAX_RECORDS` records,
:data:`MAX_STEPS` steps and :data:`MAX_BYTES` of JSON. Past a bound it stops
recording and says so (``complete: false`` and the reason).
"""

from __future__ import annotations

import json
import os
import secrets
from collections.abc import Awaitable, Callable
from typing import Any

from ..protocol import ClientMessage, Codec, ErrorReply, Reset, ServerMessage
from ..protocol.validation import (
    MAX_SECRET_CHARS,
    MIN_SECRET_CHARS,
    RECORDED_OPERATIONS,
    VALIDATION_MESSAGES,
    ValidationOpen,
    ValidationOpened,
    ValidationRead,
    ValidationSnapshot,
    telemetry_refused,
    trajectory_record,
)

__all__ = [
    "SessionTelemetry", "Recorded", "Answer", "telemetry_token", "TOKEN_VARIABLE", "MAX_RECORDS", "MAX_STEPS",
    "MAX_BYTES",
]

#: The environment variable holding the server's validation token (upstream's name).
TOKEN_VARIABLE = "OPENENV_VALIDATION_TOKEN"
#: Records one socket keeps: a reset, a state, and a step and a state for each of 100 actions.
MAX_RECORDS = 202
#: Steps one socket records (upstream's limit on a runtime plan's actions).
MAX_STEPS = 100
#: JSON bytes of the records one socket keeps (upstream's trace limit).
MAX_BYTES = 8 * 1024 * 1024


def telemetry_token(token: str | None, mode: str) -> str | None:
    """The server's validation token: ``token``, else :data:`TOKEN_VARIABLE`; ``None``
    (telemetry off) when there is none or the server runs in production mode."""
    token = token if token is not None else os.environ.get(TOKEN_VARIABLE) or None
    if token is None or mode != "simulation":
        return None
    if not MIN_SECRET_CHARS <= len(token) <= MAX_SECRET_CHARS:
        raise ValueError(
            f"the validation token ({TOKEN_VARIABLE} or create_app(validation_token=...)) must be "
            f"{MIN_SECRET_CHARS} to {MAX_SECRET_CHARS} characters, not {len(token)}: a validator sends "
            f"one of that length (python -c 'import secrets; print(secrets.token_urlsafe(32))' makes one)"
        )
    return token


class SessionTelemetry:
    """One ``/ws`` socket's telemetry: its capability, its seed report and its bounded record."""

    def __init__(self, token: str) -> None:
        self._token = token
        self._capability: str | None = None
        #: Whether a message other than telemetry's has arrived (``validation_open`` comes first).
        self.started = False
        self._seed: dict[str, Any] | None = None
        self._records: list[dict[str, Any]] = []
        self._attribution: list[dict[str, Any]] = []
        self._steps = 0
        self._bytes = 0
        self._reason: str | None = None

    @property
    def recording(self) -> bool:
        """Whether the socket's exchanges are being recorded (opened and within bounds)."""
        return self._capability is not None and self._reason is None

    def answer(self, message: ClientMessage) -> ServerMessage:
        """The reply to ``validation_open`` or ``validation_read``; a refusal is a VALIDATION_ERROR."""
        if isinstance(message, ValidationOpen):
            if self._capability is not None:
                raise telemetry_refused("This session's telemetry is already open: read it with its capability")
            if self.started:
                raise telemetry_refused(
                    "validation_open must be the first message of a session: open a new /ws session for telemetry"
                )
            if not secrets.compare_digest(message.token.encode(), self._token.encode()):
                raise telemetry_refused("The validation token does not match the server's")
            self._capability = secrets.token_urlsafe(32)
            return ValidationOpened(self._capability)
        assert isinstance(message, ValidationRead)
        if self._capability is None or not secrets.compare_digest(
            message.capability.encode(), self._capability.encode()
        ):
            raise telemetry_refused(
                "Unknown capability: read with the one validation_open answered on this session"
            )
        return ValidationSnapshot(
            self._seed, list(self._records), list(self._attribution), self._reason is None, self._reason
        )

    def record(self, message: ClientMessage, request: Any, reply: ServerMessage, codec: Codec) -> None:
        """Record one exchange: ``request`` as decoded, ``reply`` as the client decodes it.
        Only ``reset``, ``step`` and ``state`` that succeeded are recorded."""
        if message.type not in RECORDED_OPERATIONS or isinstance(reply, ErrorReply):
            return
        if len(self._records) >= MAX_RECORDS or (message.type == "step" and self._steps >= MAX_STEPS):
            self._reason = "Session telemetry budget exceeded"
            return
        try:
            # A JSON round trip detaches the record from the session's objects,
            # and keeps exactly what the client decoded.
            text = json.dumps(
                trajectory_record(message.type, request, codec.decode(codec.encode(reply.to_wire()))),
                allow_nan=False,
            )
        except (TypeError, ValueError):
            self._reason = "Session telemetry contains non-JSON data"
            return
        if self._bytes + len(text) > MAX_BYTES:
            self._reason = "Session telemetry budget exceeded"
            return
        self._bytes += len(text)
        self._records.append(json.loads(text))
        if message.type == "step":
            self._attribution.append({"step_index": self._steps, "rubric": []})
            self._steps += 1
        if isinstance(message, Reset):
            # Every seed a reset carries goes to the env's reset(seed=...).
            requested = message.seed is not None
            self._seed = {"requested": requested, "accepted": requested, "value": message.seed}


#: How a connection's messages are answered: ``answer(message, decoded)`` is the reply
#: (``None`` for a JSON-RPC notification); ``decoded`` is the frame as it was decoded.
Answer = Callable[[ClientMessage, Any], Awaitable["ServerMessage | None"]]


class Recorded:
    """A connection's :data:`Answer` with session telemetry around it: ``validation_*``
    messages are the telemetry's to answer, every other one goes to ``answer`` and, once
    the telemetry is opened, its exchange is recorded. Chosen once per connection, on a
    route with telemetry and a server with a validation token, so that the message loop
    of every other connection knows nothing of it."""

    def __init__(self, telemetry: SessionTelemetry, answer: Answer, codec: Codec) -> None:
        self.telemetry = telemetry
        self.answer = answer
        self.codec = codec

    async def __call__(self, message: ClientMessage, decoded: Any) -> ServerMessage | None:
        telemetry = self.telemetry
        if message.type in VALIDATION_MESSAGES:
            return telemetry.answer(message)
        telemetry.started = True
        reply = await self.answer(message, decoded)
        if reply is not None and telemetry.recording:
            telemetry.record(message, decoded, reply, self.codec)
        return reply
