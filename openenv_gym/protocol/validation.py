"""Session telemetry: the ``/ws`` messages a validator uses to read what a session did.

OpenEnv's RFC 008 execution amendment (upstream ``huggingface/OpenEnv`` main,
after the 0.10 release) lets a validator that holds the server's
``OPENENV_VALIDATION_TOKEN`` ask a ``/ws`` session for its own record of the
episode, which upstream's ``runtime.seed_control`` and
``runtime.trajectory_record`` graders compare with what they sent and received::

    C->S {"type": "validation_open", "data": {"schema_version": 1, "token": T}}   (the first message)
    S->C {"type": "validation_open", "data": {"schema_version": 1, "capability": C}}
    C->S reset, state, step, state, ...                                        (recorded)
    C->S {"type": "validation_read", "data": {"schema_version": 1, "capability": C}}
    S->C {"type": "validation", "data": {"schema_version": 1, "seed": {...},
          "trajectory": {"schema_version": 1, "source": "openenv-server",
                         "records": [{"operation", "request", "response"}, ...],
                         "complete": true, "reason": null},
          "attribution": [{"step_index": 0, "rubric": []}, ...],
          "rubric": [], "rubric_error": null}}

Secrets never travel back: an error about a token or a capability does not
echo it.

    >>> from openenv_gym.protocol import parse_message
    >>> parse_message({"type": "validation_open", "data": {"schema_version": 1, "token": "t" * 32}},
    ...               VALIDATION_MESSAGES)
    ValidationOpen(schema_version=1)
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

from ..errors import ErrorCode, ProtocolError
from .messages import ClientMessage, ServerMessage, check_fields, error_entry, invalid

__all__ = [
    "TELEMETRY_VERSION",
    "MIN_SECRET_CHARS",
    "MAX_SECRET_CHARS",
    "REDACTED",
    "ValidationOpen",
    "ValidationRead",
    "ValidationOpened",
    "ValidationSnapshot",
    "VALIDATION_MESSAGES",
    "RECORDED_OPERATIONS",
    "trajectory_record",
    "telemetry_refused",
]

#: The ``schema_version`` of every telemetry message and record.
TELEMETRY_VERSION = 1
#: Length bounds of a token and of a capability (upstream's).
MIN_SECRET_CHARS, MAX_SECRET_CHARS = 32, 256
#: What an error shows in place of a secret it refuses.
REDACTED = "**********"
#: The operations a session records.
RECORDED_OPERATIONS = frozenset({"reset", "step", "state"})


def _secret(data: dict, key: str) -> str:
    """The ``schema_version`` checked and the secret under ``key``, refused without being echoed."""
    fields = frozenset({"schema_version", key})
    check_fields({k: REDACTED if k == key else v for k, v in data.items()}, fields, fields)  # (errors echo data)
    version = data["schema_version"]
    if type(version) is not int or version != TELEMETRY_VERSION:
        raise invalid(error_entry(
            ["schema_version"], f"Input should be {TELEMETRY_VERSION}", version, "literal_error"
        ))
    secret = data[key]
    if not isinstance(secret, str) or not MIN_SECRET_CHARS <= len(secret) <= MAX_SECRET_CHARS:
        raise invalid(error_entry(
            [key], f"Input should be a string of {MIN_SECRET_CHARS} to {MAX_SECRET_CHARS} characters",
            REDACTED, "string_type",
        ))
    return secret


@dataclass(slots=True)
class ValidationOpen(ClientMessage):
    """Open the session's telemetry with the server's validation token (the first message)."""

    type: ClassVar[str] = "validation_open"

    token: str = field(repr=False)
    schema_version: int = TELEMETRY_VERSION

    @classmethod
    def from_data(cls, data: dict | None) -> ValidationOpen:
        return cls(_secret(data or {}, "token"))

    def to_wire(self) -> dict:
        return {"type": "validation_open", "data": {"schema_version": self.schema_version, "token": self.token}}


@dataclass(slots=True)
class ValidationRead(ClientMessage):
    """Read the session's telemetry with the capability ``validation_open`` answered."""

    type: ClassVar[str] = "validation_read"

    capability: str = field(repr=False)
    schema_version: int = TELEMETRY_VERSION

    @classmethod
    def from_data(cls, data: dict | None) -> ValidationRead:
        return cls(_secret(data or {}, "capability"))

    def to_wire(self) -> dict:
        return {
            "type": "validation_read",
            "data": {"schema_version": self.schema_version, "capability": self.capability},
        }


@dataclass(slots=True)
class ValidationOpened(ServerMessage):
    """The answer to ``validation_open``: the capability that reads this session's telemetry."""

    type: ClassVar[str] = "validation_open"

    capability: str = field(repr=False)

    @classmethod
    def from_data(cls, data: dict) -> ValidationOpened:
        return cls(str(data.get("capability", "")))

    def to_wire(self) -> dict:
        return {"type": "validation_open", "data": {"schema_version": TELEMETRY_VERSION, "capability": self.capability}}


@dataclass(slots=True)
class ValidationSnapshot(ServerMessage):
    """The answer to ``validation_read``: the seed report, and the session's record of its
    ``reset``, ``step`` and ``state`` exchanges (``complete`` false once it was capped).

    ``seed`` is ``{"requested", "accepted", "value"}`` of the last reset (``None``
    before one); ``attribution`` has one entry per recorded step. This server has
    no RFC 004 rubrics, so ``rubric`` is empty and every step's ``rubric`` too.
    """

    type: ClassVar[str] = "validation"

    seed: dict[str, Any] | None
    records: list[dict[str, Any]]
    attribution: list[dict[str, Any]]
    complete: bool = True
    reason: str | None = None

    @classmethod
    def from_data(cls, data: dict) -> ValidationSnapshot:
        trajectory = data.get("trajectory") or {}
        return cls(
            data.get("seed"), list(trajectory.get("records") or []), list(data.get("attribution") or []),
            bool(trajectory.get("complete", False)), trajectory.get("reason"),
        )

    def to_wire(self) -> dict:
        return {"type": "validation", "data": {
            "schema_version": TELEMETRY_VERSION,
            "seed": self.seed,
            "rubric": [],
            "rubric_error": None,
            "attribution": self.attribution,
            "trajectory": {
                "schema_version": TELEMETRY_VERSION,
                "source": "openenv-server",
                "records": self.records,
                "complete": self.complete,
                "reason": self.reason,
            },
        }}


#: The client messages of session telemetry (served on ``/ws``).
VALIDATION_MESSAGES = {cls.type: cls for cls in (ValidationOpen, ValidationRead)}


def trajectory_record(operation: str, request: Any, response: Any) -> dict[str, Any]:
    """One record of a session's trajectory: the request as the client sent it and the
    reply as it received it (decoded envelopes)."""
    return {"operation": operation, "request": request, "response": response}


def telemetry_refused(why: str) -> ProtocolError:
    """The error answering a telemetry message this session cannot serve (the session goes on)."""
    return ProtocolError(ErrorCode.VALIDATION_ERROR, why)
