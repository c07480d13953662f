"""Structured server logs.

Every server event is one log record on the ``openenv_gym.server`` logger
whose message is ``event key=value ...`` (``session_open id=... encoding=msgpack``),
so it greps well as text. ``configure_logging("json")`` writes one JSON
object per line instead (``{"time", "level", "logger", "event", ...fields}``)
for log pipelines.

    >>> configure_logging("text")                              # doctest: +SKIP
"""

from __future__ import annotations

import json
import logging
import sys
import time

__all__ = ["configure_logging", "JsonFormatter", "Throttled", "quiet_uvicorn", "uvicorn_log_level", "LOG_LEVELS"]

#: Level names ``configure_logging`` and ``openenv-gym serve --log-level`` take.
LOG_LEVELS = ("debug", "info", "warning", "error")


class JsonFormatter(logging.Formatter):
    """One JSON object per record; ``key=value`` pairs of the message become fields."""

    def format(self, record: logging.LogRecord) -> str:
        message = record.getMessage()
        event, _, rest = message.partition(" ")
        fields: dict = {
            "time": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created))
            + f".{int(record.msecs):03d}Z",
            "level": record.levelname.lower(),
            "logger": record.name,
            "event": event,
        }
        for pair in rest.split():
            key, sep, value = pair.partition("=")
            if sep:
                fields[key] = value
            else:
                fields.setdefault("message", "")
                fields["message"] = (fields["message"] + " " + pair).strip()
        if record.exc_info:
            fields["exception"] = self.formatException(record.exc_info)
        return json.dumps(fields, ensure_ascii=False)


def configure_logging(fmt: str = "text", level: int | str = logging.INFO) -> None:
    """Send ``openenv_gym`` logs to stderr as ``text`` or ``json`` lines, from ``level``
    (a :mod:`logging` level or one of :data:`LOG_LEVELS`) up.

    uvicorn's logs go the same way when uvicorn runs with ``log_config=None``
    (so that it keeps its hands off logging) and :func:`uvicorn_log_level`.
    """
    level = _level(level)
    handler = logging.StreamHandler(sys.stderr)
    if fmt == "json":
        handler.setFormatter(JsonFormatter())
    elif fmt == "text":
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s %(message)s"))
    else:
        raise ValueError(f"log format must be 'text' or 'json', not {fmt!r}")
    for name in ("openenv_gym", "uvicorn"):  # uvicorn's lines too (run it with log_config=None)
        logger = logging.getLogger(name)
        logger.handlers[:] = [handler]
        logger.propagate = False
    logging.getLogger("openenv_gym").setLevel(level)


def uvicorn_log_level(level: int | str) -> str:
    """uvicorn's ``log_level`` beside openenv-gym's ``level``: everything at
    ``debug``, else its warnings and errors (never below ``level``)."""
    level = _level(level)
    return logging.getLevelName(logging.DEBUG if level <= logging.DEBUG else max(level, logging.WARNING)).lower()


def _level(level: int | str) -> int:
    if isinstance(level, int):
        return level
    if level.lower() not in LOG_LEVELS:
        raise ValueError(f"log level must be one of {', '.join(LOG_LEVELS)}, not {level!r}")
    return getattr(logging, level.upper())


class Throttled:
    """One log event that may come in floods (refused tokens, say): the first one
    is logged, then at most one line per ``interval`` seconds, counting those left out.

        >>> refused = Throttled(logging.getLogger("openenv_gym.server"), "auth_refused")
        >>> refused.warning("path=%s", "/reset")      # logged
        >>> refused.warning("path=%s", "/reset")      # counted, logged with the next line
    """

    def __init__(self, logger: logging.Logger, event: str, interval: float = 60.0) -> None:
        self.logger, self.event, self.interval = logger, event, interval
        self._next = 0.0
        self._skipped = 0

    def warning(self, fields: str, *args: object) -> None:
        now = time.monotonic()
        if now < self._next:
            self._skipped += 1
            return
        self._next = now + self.interval
        skipped, self._skipped = self._skipped, 0
        self.logger.warning(f"{self.event} {fields} unlogged_since_last={skipped}", *args)


class _InvalidUtf8Frame(logging.Filter):
    """uvicorn logs a text frame that is not UTF-8 as an ERROR with a traceback;
    it is a misbehaving client, which uvicorn closes with 1007: one WARNING line."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno >= logging.ERROR and record.getMessage().startswith("Invalid UTF-8"):
            record.levelno, record.levelname = logging.WARNING, "WARNING"
            record.msg, record.args = "invalid_frame reason=text-frame-not-utf-8 closed=1007", ()
            record.exc_info = record.exc_text = None
        return True


_UVICORN_FILTER = _InvalidUtf8Frame()


def quiet_uvicorn() -> None:
    """Install the filters that keep uvicorn's log of client mistakes to one line each."""
    uvicorn_error = logging.getLogger("uvicorn.error")
    if _UVICORN_FILTER not in uvicorn_error.filters:
        uvicorn_error.addFilter(_UVICORN_FILTER)
