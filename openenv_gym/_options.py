"""What the client's :class:`~openenv_gym.ConnectOptions` and the server's
:class:`~openenv_gym.ServeOptions` share: frozen dataclasses whose fields may also be
given by name, as keyword arguments that override them.

    >>> from dataclasses import dataclass
    >>> @dataclass(frozen=True)
    ... class Knobs(MergedByName):
    ...     kind = "knob"
    ...     size: int = 1
    >>> Knobs.merge(None, size=2)
    Knobs(size=2)
    >>> Knobs.merge(Knobs(), sise=2)
    Traceback (most recent call last):
    ...
    TypeError: unknown knob option 'sise'; the options are: size
"""

from __future__ import annotations

import dataclasses
from typing import Any, ClassVar, TypeVar

__all__ = ["MergedByName"]

_Options = TypeVar("_Options", bound="MergedByName")


class MergedByName:
    """A frozen dataclass of options that :meth:`merge` overrides by name."""

    #: What the options configure, in the error naming an unknown one.
    kind: ClassVar[str] = "an"

    @classmethod
    def merge(cls: type[_Options], options: _Options | None, **overrides: Any) -> _Options:
        """``options`` (or the defaults) with ``overrides`` applied, by name."""
        names = [f.name for f in dataclasses.fields(cls)]  # type: ignore[arg-type]  # (a dataclass subclass)
        for name in overrides:
            if name not in names:
                raise TypeError(f"unknown {cls.kind} option {name!r}; the options are: {', '.join(names)}")
        return dataclasses.replace(options or cls(), **overrides)  # type: ignore[type-var]
