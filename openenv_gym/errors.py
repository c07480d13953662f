"""Every exception openenv-gym raises on purpose, in one tree.

::

    OpenEnvGymError
    ├── ProtocolError            a frame or message breaks the protocol; detected here,
    │   │                        carrying the OpenEnv error code it answers to
    │   └── NoEpisodeError           a step before any reset (EXECUTION_ERROR; HTTP 409)
    ├── RemoteError              the peer answered with an OpenEnv error frame
    │   ├── InvalidJsonError         INVALID_JSON
    │   ├── UnknownTypeError         UNKNOWN_TYPE
    │   ├── ValidationError          VALIDATION_ERROR    (the session goes on)
    │   ├── ExecutionError           EXECUTION_ERROR     (the session goes on; also the
    │   │                                builtin type the env raised, ValueError say)
    │   ├── CapacityReachedError     CAPACITY_REACHED    (the server closed the connection)
    │   ├── FactoryError             FACTORY_ERROR       (the server closed the connection)
    │   └── SessionError             SESSION_ERROR       (the server closed the connection)
    ├── HttpError                a server's HTTP answer (``status``, JSON ``payload``) to a
    │                            request its route cannot serve
    ├── JsonRpcError             a JSON-RPC request that cannot be served; carries the
    │                            error response to send
    ├── ConnectionClosedError    (also ConnectionError) the connection is gone
    │   └── LimitExceededError       the server sent more than a client limit allows (a
    │                                document or message too large or too deeply nested,
    │                                a flood of messages nobody asked for): dropped
    ├── MessageTimeoutError      (also TimeoutError) no answer in time
    │   └── WaitTimeoutError         (also multiprocessing.TimeoutError) a ``*_wait(timeout)``
    ├── EnvClosedError           (also gymnasium.error.ClosedEnvironmentError) used after close
    ├── SpaceMismatchError       (also RuntimeError) servers of one vector env serve other spaces
    ├── PendingCallError         (also gymnasium.error.AlreadyPendingCallError) a call while
    │                            another is in flight
    ├── NoPendingCallError       (also gymnasium.error.NoAsyncCallError) a ``*_wait`` without
    │                            its ``*_async``
    ├── ProtocolMismatchError    the peer does not offer what was asked for
    ├── SpaceValueError          (also ValueError) a value does not fit its space
    ├── ActionParseError         (also ValueError) a model's reply names no legal action
    ├── EnvCallTimeout           (also TimeoutError) a server's env call hung
    │   └── EnvCallInterrupted       an inline env call overran its deadline and was stopped
    ├── EnvCrashed               a session's env process died
    ├── ToolCallError            (also ValueError) an env's MCP tool refused a call or failed
    ├── ListenError              (also OSError) a server could not bind its address
    ├── EmbeddedServerError      (also RuntimeError) a built-in server did not start
    ├── PoolCapacityError        a Ray pool's lease asked for more sessions than are free
    └── ProbeError               (also RuntimeError) the kit could not measure an env

Each is defined here and also importable where it is raised (``openenv_gym.text``'s
:class:`ActionParseError`, ``openenv_gym.spaces``' :class:`SpaceValueError`, ...), so
``openenv_gym.errors`` alone names them all; ``except OpenEnvGymError`` catches
whatever openenv-gym raised on purpose.

Local and remote protocol errors are told apart, as h11 does: a
:class:`ProtocolError` is raised by this process on data that breaks the
protocol (a server answers it with an error frame; a client raises it for a
reply it cannot read), while a :class:`RemoteError` is what the peer itself
reported. Where Gymnasium raises an exception of its own (or a builtin one)
for the same mistake, the exception here is that type too, so code written
for Gymnasium's vector envs catches what it always caught. A client catches
exactly what it cares about::

    try:
        env.step(action)
    except openenv_gym.errors.ValidationError as exc:
        print(exc.code, exc.message, exc.details["errors"])
"""

from __future__ import annotations

import builtins
import enum
import multiprocessing
from typing import Any

import gymnasium as gym

__all__ = [
    "ErrorCode",
    "CLOSING_ERRORS",
    "OpenEnvGymError",
    "ProtocolError",
    "NoEpisodeError",
    "RemoteError",
    "InvalidJsonError",
    "UnknownTypeError",
    "ValidationError",
    "ExecutionError",
    "CapacityReachedError",
    "FactoryError",
    "SessionError",
    "ConnectionClosedError",
    "LimitExceededError",
    "MessageTimeoutError",
    "WaitTimeoutError",
    "EnvClosedError",
    "SpaceMismatchError",
    "PendingCallError",
    "NoPendingCallError",
    "ProtocolMismatchError",
    "HttpError",
    "JsonRpcError",
    "SpaceValueError",
    "ActionParseError",
    "EnvCallTimeout",
    "EnvCallInterrupted",
    "EnvCrashed",
    "ToolCallError",
    "ListenError",
    "EmbeddedServerError",
    "PoolCapacityError",
    "ProbeError",
    "remote_error",
    "execution_error_type",
]


class ErrorCode(str, enum.Enum):
    """The seven OpenEnv WebSocket error codes, with OpenEnv's semantics."""

    INVALID_JSON = "INVALID_JSON"
    UNKNOWN_TYPE = "UNKNOWN_TYPE"
    VALIDATION_ERROR = "VALIDATION_ERROR"
    EXECUTION_ERROR = "EXECUTION_ERROR"
    CAPACITY_REACHED = "CAPACITY_REACHED"
    FACTORY_ERROR = "FACTORY_ERROR"
    SESSION_ERROR = "SESSION_ERROR"


#: After an error with one of these codes the server closes the connection
#: (code 1000), exactly like the OpenEnv reference server; after any other error
#: the session goes on.
CLOSING_ERRORS = frozenset(
    {ErrorCode.CAPACITY_REACHED, ErrorCode.FACTORY_ERROR, ErrorCode.SESSION_ERROR}
)


class OpenEnvGymError(Exception):
    """Base class of every exception openenv-gym raises on purpose."""


class ProtocolError(OpenEnvGymError):
    """A frame or message that breaks the protocol, with the OpenEnv error code
    it answers to and any further fields of the error frame (``extra``).

    A server sends it back as an error frame
    (:func:`openenv_gym.protocol.error_message`); a client raises it when a
    reply cannot be read.
    """

    def __init__(self, code: ErrorCode | str, message: str, **extra: Any) -> None:
        super().__init__(message)
        self.code = ErrorCode(code)
        self.message = message
        self.extra = extra

    def __repr__(self) -> str:
        return f"ProtocolError({self.code.value}, {self.message!r})"


class NoEpisodeError(ProtocolError):
    """A step before any reset: the session has no episode to play yet.

    Over a WebSocket it is the EXECUTION_ERROR frame stock servers send for it; over
    HTTP (``POST /web/step``) it is 409 Conflict, not 500: nothing failed, the request
    only came before the reset it needs.
    """

    def __init__(self, message: str) -> None:
        super().__init__(ErrorCode.EXECUTION_ERROR, message)


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
    """The environment raised inside ``reset`` or ``step`` (the session goes on).

    When the env raised a builtin exception type, the server names it
    (``details["exception"]``) and the error raised here is also of that
    type: an env's ``ValueError`` is caught by ``except ValueError``.
    """

    code = ErrorCode.EXECUTION_ERROR

    def __str__(self) -> str:  # a KeyError among the bases would quote the message
        return f"{self.code.value}: {self.message}"


_EXECUTION_ERRORS: dict[type[Exception], type[ExecutionError]] = {}


def execution_error_type(name: Any) -> type[ExecutionError]:
    """:class:`ExecutionError`, also of the builtin exception type ``name``
    (``"ValueError"``) when there is one of that name.

        >>> issubclass(execution_error_type("ValueError"), ValueError)
        True
        >>> execution_error_type("MyError") is ExecutionError
        True
    """
    builtin = getattr(builtins, name, None) if isinstance(name, str) else None
    if not isinstance(builtin, type) or not issubclass(builtin, Exception) or issubclass(builtin, Warning):
        return ExecutionError
    if builtin not in _EXECUTION_ERRORS:
        try:
            _EXECUTION_ERRORS[builtin] = type(f"Execution{name}", (ExecutionError, builtin), {"__module__": __name__})
        except TypeError:  # a builtin whose instance layout cannot be combined
            return ExecutionError
    return _EXECUTION_ERRORS[builtin]


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


class LimitExceededError(ConnectionClosedError):
    """The server sent more than one of this client's limits allows: an HTTP document
    over ``max_document_bytes``, a WebSocket message over ``max_message_bytes``, JSON
    nested deeper than the protocol's limit, or a flood of messages nobody asked for.
    The client dropped the exchange (or the connection); the message names the server
    and the limit, which :class:`~openenv_gym.client.ConnectOptions` can raise."""


class MessageTimeoutError(OpenEnvGymError, TimeoutError):
    """The server did not answer within ``message_timeout`` seconds (an HTTP exchange
    or a handshake: within ``connect_timeout``)."""


class WaitTimeoutError(MessageTimeoutError, multiprocessing.TimeoutError):
    """A vector env's ``step_wait`` / ``reset_wait`` ran past its ``timeout``
    (what ``AsyncVectorEnv`` raises: ``multiprocessing.TimeoutError``)."""


class EnvClosedError(OpenEnvGymError, gym.error.ClosedEnvironmentError):
    """A remote env was used after ``close()``: create a new one to reconnect."""


class SpaceMismatchError(OpenEnvGymError, RuntimeError):
    """The servers of one vector env serve different spaces (Gymnasium's vector
    envs raise ``RuntimeError`` for sub-envs whose spaces differ)."""


class PendingCallError(OpenEnvGymError, gym.error.AlreadyPendingCallError):
    """A call to a vector env while another one is in flight (``step_async``
    twice, ``step`` between ``send`` and ``recv``, ...)."""


class NoPendingCallError(OpenEnvGymError, gym.error.NoAsyncCallError):
    """``step_wait`` / ``reset_wait`` without the ``step_async`` / ``reset_async`` it waits for."""


class ProtocolMismatchError(OpenEnvGymError):
    """The server does not offer what the client was asked to use
    (for example ``encoding="msgpack"`` against a stock OpenEnv server)."""


class HttpError(OpenEnvGymError):
    """An HTTP answer to a request a route cannot serve: ``status`` and the JSON ``payload``
    (:mod:`openenv_gym.protocol.http` raises it; a server sends it as the response)."""

    def __init__(self, status: int, payload: dict[str, Any]) -> None:
        super().__init__(f"HTTP {status}: {payload.get('detail')}")
        self.status = status
        self.payload = payload


class JsonRpcError(OpenEnvGymError):
    """A JSON-RPC request that cannot be served; ``response`` is the JSON-RPC error to send
    (``None`` for a notification: JSON-RPC answers none, not even an error)."""

    def __init__(self, response: dict[str, Any], *, notification: bool = False) -> None:
        super().__init__(response["error"]["message"])
        self.response = None if notification else response


class SpaceValueError(OpenEnvGymError, ValueError):
    """Wire data (or a value) does not fit a space's structure, dtype or shape.

    The message starts with the path of the offending item inside the value, for example
    ``obs["pos"][2]: expected a number, got str 'x'``; the path alone is in :attr:`path`.
    """

    def __init__(self, message: str, path: str = "") -> None:
        super().__init__(message)
        self.path = path


class ActionParseError(OpenEnvGymError, ValueError):
    """A reply (a language model's, read by a text view of :mod:`openenv_gym.text`) names
    no legal action.

    The message says what was received and what is legal (the action names, the
    range, shape, bounds, charset or length), so it can go back to the model as it
    is. :attr:`received` holds the reply (or the part of it that was wrong) and
    :attr:`legal` the description of what would have been accepted.
    """

    def __init__(self, message: str, *, received: Any = None, legal: str | None = None) -> None:
        super().__init__(message)
        self.received = received
        self.legal = legal


class EnvCallTimeout(OpenEnvGymError, TimeoutError):
    """A server's env call ran past its step timeout."""


class EnvCallInterrupted(EnvCallTimeout):
    """An env call the server ran inline on its event loop ran past its deadline, and the
    server interrupted it (raised inside the env's code, as a signal handler raises; the
    session then gets a fresh env, see :class:`openenv_gym.server.latency.InlineDeadline`)."""


class EnvCrashed(OpenEnvGymError):
    """A session's environment process died (a crash, a signal, ``os._exit``, its memory
    cap): the server gives the session a fresh env, and the client must reset."""


class ToolCallError(OpenEnvGymError, ValueError):
    """An env's MCP tool refused a call or failed: an unknown tool, arguments it does
    not take, a tool that raised. ``error_type`` is OpenEnv's kind of tool error
    (``tool_not_found``, ``invalid_args``, ``execution_error``, ...); the message is
    the server's, which says what went wrong."""

    def __init__(self, message: str, *, error_type: str = "execution_error") -> None:
        super().__init__(f"{error_type}: {message}")
        self.error_type = error_type
        self.message = message


class ListenError(OpenEnvGymError, OSError):
    """A server could not listen on its address (a port in use, an address
    this machine does not have, a port that needs privileges)."""


class EmbeddedServerError(OpenEnvGymError, RuntimeError):
    """A catalog env's built-in server did not start."""


class PoolCapacityError(OpenEnvGymError):
    """A lease of a Ray server pool (:mod:`openenv_gym.ray`) asked for more session slots
    than the pool has free: release a lease, or launch the pool with more servers."""


class ProbeError(OpenEnvGymError, RuntimeError):
    """The kit could not measure an env (:func:`openenv_gym.kit.make_kit`); the message
    says why."""


_BY_CODE: dict[ErrorCode, type[RemoteError]] = {
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


def remote_error(data: dict[str, Any]) -> RemoteError:
    """Build the exception for the ``data`` of an OpenEnv error frame."""
    details = {k: v for k, v in data.items() if k not in ("message", "code")}
    message = str(data.get("message", "")) or "(no message)"
    try:
        code = ErrorCode(data.get("code"))
    except ValueError:
        return RemoteError(f"{message} (unknown error code {data.get('code')!r})", **details)
    if code is ErrorCode.EXECUTION_ERROR:
        return execution_error_type(details.get("exception"))(message, **details)
    return _BY_CODE[code](message, **details)
