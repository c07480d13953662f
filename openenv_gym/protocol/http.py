"""OpenEnv's HTTP routes, sans I/O: request bodies in, typed messages out, and errors back.

Bodies go through the same :class:`~openenv_gym.protocol.frames.Limits` as
WebSocket frames, checked in the same order: the size before anything is read
or parsed (:func:`check_declared_size`, then :func:`parse_body`), then the
nesting and lengths. What a route cannot serve becomes an HTTP answer with a
JSON ``detail``, in the shapes FastAPI gives OpenEnv's reference server:

    >>> from openenv_gym.protocol import Limits
    >>> reset_request(b'{"seed": 3}', Limits())
    Reset(seed=3, episode_id=None, options=None, injected_state=None)
    >>> try:
    ...     reset_request(b"[" * 100_000, Limits())
    ... except HttpError as exc:
    ...     exc.status, exc.payload["code"]
    (422, 'INVALID_JSON')
"""

from __future__ import annotations

from typing import Any

from ..errors import ErrorCode, HttpError, JsonRpcError, NoEpisodeError, ProtocolError
from .codecs import loads_json
from .frames import Limits, check_size
from .mcp import parse_error
from .messages import Reset, Step, error_entry

__all__ = [
    "HttpError",
    "check_declared_size",
    "check_body_size",
    "parse_body",
    "reset_request",
    "step_body",
    "step_request",
    "jsonrpc_request",
    "http_error",
]


def http_error(error: ProtocolError) -> HttpError:
    """The HTTP answer to a protocol error: 413 for a body over the size limit,
    422 for a body that does not decode or validate, 503 when the server is at
    capacity, 409 for a step before any reset, 500 for the rest (the env failed)."""
    if isinstance(error, NoEpisodeError):
        return HttpError(409, {"detail": error.message, "code": error.code.value})
    if error.code is ErrorCode.VALIDATION_ERROR:
        return HttpError(422, {"detail": error.extra.get("errors", error.message), "code": error.code.value})
    if error.code is ErrorCode.CAPACITY_REACHED:
        return HttpError(503, {"detail": error.message, "code": error.code.value, **error.extra})
    if error.code is ErrorCode.INVALID_JSON:
        status = 413 if error.extra.get("too_large") else 422
        detail = [{"type": "json_invalid", "loc": ["body"], "msg": error.message}]
        return HttpError(status, {"detail": detail, "code": error.code.value})
    return HttpError(500, {"detail": error.message, "code": error.code.value})


def check_declared_size(content_length: str | None, limits: Limits) -> None:
    """Refuse a body whose declared ``Content-Length`` is over the limit, before reading it."""
    if content_length is None:
        return
    try:
        size = int(content_length)
    except ValueError:
        raise http_error(ProtocolError(ErrorCode.INVALID_JSON, f"Invalid Content-Length {content_length!r}")) from None
    check_body_size(size, limits)


def check_body_size(size: int, limits: Limits) -> None:
    """Refuse (HTTP 413) a body of ``size`` bytes over the frame limit: a declared size, or
    the bytes of a body read so far, so that a server stops reading as soon as it knows."""
    try:
        check_size(size, limits)
    except ProtocolError as exc:
        raise http_error(ProtocolError(exc.code, exc.message, too_large=True)) from None


def parse_body(raw: bytes, limits: Limits) -> Any:
    """A JSON body within ``limits`` (an empty body is ``{}``)."""
    check_body_size(len(raw), limits)
    if not raw.strip():
        return {}
    try:
        return loads_json(raw, limits)
    except ProtocolError as exc:
        raise http_error(exc) from None


def reset_request(raw: bytes, limits: Limits) -> Reset:
    """``POST /reset``: the body is the reset data (``seed``, ``episode_id``, options)."""
    body = parse_body(raw, limits)
    if not isinstance(body, dict):
        raise HttpError(422, {"detail": "The request body must be a JSON object"})
    try:
        return Reset.from_data(body)
    except ProtocolError as exc:
        raise http_error(exc) from None


def step_request(raw: bytes, limits: Limits) -> tuple[Step, Reset]:
    """``POST /step``: ``{"action": {...fields}, "seed"?: int}``; the stateless
    route resets a fresh env (with the seed, if any) and then steps it."""
    return step_body(parse_body(raw, limits))


def step_body(body: Any) -> tuple[Step, Reset]:
    """:func:`step_request` of a body already decoded. What is wrong with a body that
    is not ``{"action": {...}}`` is said as FastAPI says it for the reference server:

        >>> try:
        ...     step_body({"action": 5})
        ... except HttpError as exc:
        ...     exc.payload["detail"][0]["type"], exc.payload["detail"][0]["loc"]
        ('dict_type', ['body', 'action'])
    """
    problem, wanted = None, "an object with the action fields"
    if not isinstance(body, dict):
        problem = error_entry(["body"], "Input should be a valid dictionary or object to extract fields from",
                              body, "model_attributes_type")
    elif "action" not in body:
        problem = error_entry(["body", "action"], f"Field required: {wanted}", body, "missing")
    elif not isinstance(body["action"], dict):
        action = body["action"]
        problem = error_entry(["body", "action"], f"Input should be a valid dictionary: {wanted}", action, "dict_type")
    if problem is not None:
        raise HttpError(422, {"detail": [problem]})
    seed = body.get("seed")
    try:
        reset = Reset.from_data({"seed": seed} if seed is not None else None)  # a seed that is not an int: 422
    except ProtocolError as exc:
        raise http_error(exc) from None
    return Step(body["action"]), reset


def jsonrpc_request(raw: bytes, limits: Limits) -> Any:
    """``POST /mcp``: the decoded JSON-RPC payload. A body over the size limit is
    an HTTP 413; one that is not JSON within the limits, a JSON-RPC parse error
    (HTTP 200, as JSON-RPC answers it)."""
    check_body_size(len(raw), limits)
    try:
        return loads_json(raw, limits)
    except ProtocolError as exc:
        raise JsonRpcError(parse_error(exc.message)) from None
