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

__all__ = ["configure_logging", "JsonFormatter"]


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


def configure_logging(fmt: str = "text", level: int = logging.INFO) -> None:
    """Send ``openenv_gym`` logs to stderr as ``text`` or ``json`` lines."""
    handler = logging.StreamHandler(sys.stderr)
    if fmt == "json":
        handler.setFormatter(JsonFormatter())
    elif fmt == "text":
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s %(message)s"))
    else:
        raise ValueError(f"log format must be 'text' or 'json', not {fmt!r}")
    logger = logging.getLogger("openenv_gym")
    logger.handlers[:] = [handler]
    logger.setLevel(level)
    logger.propagate = False
