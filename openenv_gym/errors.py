"""Exceptions raised by openenv-gym clients.

An error frame from a server becomes a :class:`RemoteError` subclass chosen by
its OpenEnv error code, so callers can catch exactly what they care about::

    try:
        env.step(action)
    except openenv_gym.errors.ValidationError as exc:
        print(exc.code, exc.message, exc.details["errors"])
"""

from __future__ import annotations

from typing import Any

from .wire import ErrorCode

__all__ = [
    "OpenEnvGymError",
    "RemoteError",
    "InvalidJsonError",
    "UnknownTypeError",
    "ValidationError",
    "ExecutionError",
    "CapacityReachedError",
    "FactoryError",
    "SessionError",
    "ConnectionClosedError",
    "MessageTimeoutError",
    "ProtocolMismatchError",
    "remote_error",
]


class OpenEnvGymError(Exception):
    """Base class of every exception openenv-gym raises on purpose."""


class RemoteError(OpenEnvGymError):
    """The server answered with an OpenEnv error frame.

    ``code`` is the OpenEnv error code, ``message`` the server's message and
    ``details`` any further keys of the frame (``errors`` for validation
    errors, ``active_sessions``/``max_sessions`` for capacity errors).
    """

    code: ErrorCode = ErrorCode.SESSION_ERROR

    def __init__(self, message: str, *, code: ErrorCode | str | None = None, **details: Any):
        if code is not None:
            self.code = ErrorCode(code)
        self.message = message
        self.details = details
        super().__init__(f"{self.code.value}: {message}")


class InvalidJsonError(RemoteError):
    code = ErrorCode.INVALID_JSON


class UnknownTypeError(RemoteError):
    code = ErrorCode.UNKNOWN_TYPE


class ValidationError(RemoteError):
    """The server rejected the message or the action (the session goes on)."""

    code = ErrorCode.VALIDATION_ERROR

    def __str__(self) -> str:
        errors = self.details.get("errors") or []
        reasons = "; ".join(
            f"{'.'.join(map(str, e.get('loc', []))) or '<message>'}: {e.get('msg')}"
            for e in errors
            if isinstance(e, dict)
        )
        return f"{self.code.value}: {self.message}" + (f" ({reasons})" if reasons else "")


class ExecutionError(RemoteError):
    """The environment raised inside ``reset`` or ``step`` (the session goes on)."""

    code = ErrorCode.EXECUTION_ERROR


class CapacityReachedError(RemoteError):
    """The server holds as many sessions as it allows; it closed the connection."""

    code = ErrorCode.CAPACITY_REACHED


class FactoryError(RemoteError):
    """The server could not build an environment for this session."""

    code = ErrorCode.FACTORY_ERROR


class SessionError(RemoteError):
    """The session failed as a whole; the server closed the connection."""

    code = ErrorCode.SESSION_ERROR


class ConnectionClosedError(OpenEnvGymError, ConnectionError):
    """The connection to the server is gone (closed by either side, or lost)."""


class MessageTimeoutError(OpenEnvGymError, TimeoutError):
    """The server did not answer within ``message_timeout`` seconds."""


class ProtocolMismatchError(OpenEnvGymError):
    """The server does not offer what the client was asked to use
    (for example ``encoding="msgpack"`` against a stock OpenEnv server)."""


_BY_CODE = {
    cls.code: cls
    for cls in (
        InvalidJsonError,
        UnknownTypeError,
        ValidationError,
        ExecutionError,
        CapacityReachedError,
        FactoryError,
        SessionError,
    )
}


def remote_error(data: dict) -> RemoteError:
    """Build the exception for the ``data`` of an OpenEnv error frame."""
    details = {k: v for k, v in data.items() if k not in ("message", "code")}
    message = str(data.get("message", "")) or "(no message)"
    try:
        code = ErrorCode(data.get("code"))
    except ValueError:
        return RemoteError(f"{message} (unknown error code {data.get('code')!r})", **details)
    return _BY_CODE[code](message, **details)
