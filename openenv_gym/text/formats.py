"""Observation formats: how the built-in table (:mod:`openenv_gym.text.table`) turns an
env's observations into text when the bare space would say too little.

Each format is data (a frozen dataclass) with three methods: :meth:`fits` (does this
observation space look as the format expects? A wrapper may have changed it, and then
the format is not used), :meth:`for_env` (the same format completed from the env
object, when there is one: a FrozenLake's map and size) and :meth:`text`, plus
:meth:`describe` for a system prompt. :class:`~openenv_gym.text.TextView` takes any
object with ``text`` and ``describe`` as its ``observation`` format.

* :class:`Components`: a short vector or tuple of named quantities (CartPole's cart
  position, Blackjack's hand), optionally packed into one integer in mixed radix (Taxi);
* :class:`Grid`: a position on a grid of cells (FrozenLake, CliffWalking), with the
  map when it is known;
* :class:`Board`: a two-player board game seen as two planes, the player's pieces and the
  opponent's (PettingZoo's connect four and tic-tac-toe).

    >>> import numpy as np
    >>> from gymnasium import spaces
    >>> pole = Components((Field("cart position"), Field("pole angle", unit="rad")))
    >>> pole.fits(spaces.Box(-1.0, 1.0, shape=(2,)))
    True
    >>> print(pole.text(np.array([0.01234567, -0.05], dtype=np.float32)))
    cart position: 0.01235
    pole angle: -0.05 rad
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, runtime_checkable

import numpy as np
from gymnasium import spaces as gs

from .values import _short

__all__ = ["ObservationFormat", "Field", "Components", "Grid", "Board"]


@runtime_checkable
class ObservationFormat(Protocol):
    """What :class:`~openenv_gym.text.TextView` needs of an observation format."""

    def describe(self) -> str:
        """What an observation says, for a system prompt."""
        ...

    def text(self, obs: Any) -> str:
        """One observation as text."""
        ...


@dataclass(frozen=True)
class Field:
    """One named quantity of an observation: its ``name``, its ``unit`` and, for integer
    codes, ``labels`` for some of their values (Blackjack's usable ace: ``{0: "no", 1: "yes"}``)."""

    name: str
    unit: str = ""
    labels: Mapping[int, str] = field(default_factory=dict)

    def text(self, value: Any) -> str:
        if self.labels and float(value).is_integer() and int(value) in self.labels:
            return self.labels[int(value)]
        return _short(value) + (f" {self.unit}" if self.unit else "")

    def describe(self) -> str:
        extra = self.unit or ", ".join(f"{k} = {v}" for k, v in self.labels.items())
        return f"{self.name} ({extra})" if extra else self.name


def _digits(value: int, radices: Sequence[int]) -> list[int]:
    """``value`` written in mixed radix, most significant digit first."""
    digits = []
    for radix in reversed(radices):
        value, digit = divmod(value, radix)
        digits.append(digit)
    return digits[::-1]


@dataclass(frozen=True)
class Components:
    """Named quantities, one per line: the items of a 1-D ``Box`` or of a ``Tuple``, or
    the digits of a ``Discrete`` value in mixed radix ``radices`` (most significant first,
    as Taxi packs its row, column, passenger and destination)."""

    fields: tuple[Field, ...]
    radices: tuple[int, ...] | None = None

    def fits(self, space: gs.Space) -> bool:
        n = len(self.fields)
        if self.radices is not None:
            return isinstance(space, gs.Discrete) and int(space.n) == math.prod(self.radices) and len(self.radices) == n
        if isinstance(space, gs.Tuple):
            scalars = all(isinstance(s, gs.Discrete) or (isinstance(s, gs.Box) and s.shape == ()) for s in space.spaces)
            return len(space.spaces) == n and scalars
        return isinstance(space, gs.Box) and space.shape == (n,)

    def for_env(self, space: gs.Space, env: Any) -> Components:
        return self

    def values(self, obs: Any) -> list[Any]:
        if self.radices is not None:
            return _digits(int(obs), self.radices)
        return list(np.asarray(obs).reshape(-1)) if not isinstance(obs, tuple) else list(obs)

    def text(self, obs: Any) -> str:
        return "\n".join(f"{f.name}: {f.text(v)}" for f, v in zip(self.fields, self.values(obs)))

    def describe(self) -> str:
        return "one line for each of: " + "; ".join(f.describe() for f in self.fields)


@dataclass(frozen=True)
class Grid:
    """A ``Discrete`` position on a grid of ``rows`` x ``cols`` cells, numbered row by row
    from 0 at the top left, with the map (one string per row) when it is known; ``legend``
    says what the map's letters mean. Without a size, it is read from the env's
    ``nrow``/``ncol`` or ``shape``, else taken square."""

    rows: int | None = None
    cols: int | None = None
    map: tuple[str, ...] | None = None
    legend: str = ""
    marker: str = "*"

    def fits(self, space: gs.Space) -> bool:
        if not isinstance(space, gs.Discrete) or int(space.start) != 0:
            return False
        grid = self._size(int(space.n))
        return grid is not None and grid[0] * grid[1] == int(space.n)

    def for_env(self, space: gs.Space, env: Any) -> Grid:
        rows, cols, grid_map = self.rows, self.cols, self.map
        core = getattr(env, "unwrapped", env)
        if rows is None and hasattr(core, "nrow") and hasattr(core, "ncol"):
            rows, cols = int(core.nrow), int(core.ncol)
        elif rows is None and len(getattr(core, "shape", ())) == 2:
            rows, cols = (int(n) for n in core.shape)
        if (rows is None or cols is None) and isinstance(space, gs.Discrete):
            side = math.isqrt(int(space.n))
            rows, cols = side, side
        desc = getattr(core, "desc", None)
        if grid_map is None and desc is not None:
            grid_map = tuple("".join(c.decode() if isinstance(c, bytes) else str(c) for c in row) for row in desc)
        return dataclasses.replace(self, rows=rows, cols=cols, map=grid_map)

    def _size(self, n: int) -> tuple[int, int] | None:
        if self.rows is not None and self.cols is not None:
            return self.rows, self.cols
        side = math.isqrt(n)
        return (side, side) if side * side == n else None

    def text(self, obs: Any) -> str:
        cell = int(obs)
        if self.cols is None:
            return f"position: cell {cell}"
        row, col = divmod(cell, self.cols)
        lines = [f"position: row {row}, column {col} (cell {cell})"]
        if self.map is not None and row < len(self.map) and col < len(self.map[row]):
            marked = list(self.map)
            marked[row] = marked[row][:col] + self.marker + marked[row][col + 1 :]
            lines += [f"map ({self.marker} = you):", *marked]
        return "\n".join(lines)

    def describe(self) -> str:
        size = f"{self.rows} x {self.cols} " if self.rows is not None else ""
        text = f"your position on a {size}grid (row 0 is the top, column 0 the left; cell = row x columns + column)"
        if self.map is not None:
            text += f", and the map, one line per row, {self.marker} marking you"
        return text + (f"; map letters: {self.legend}" if self.legend else "")


@dataclass(frozen=True)
class Board:
    """A two-player board seen by the player to move: an observation of two planes,
    ``(rows, cols, 2)`` (the player's pieces, the opponent's), alone or under the key
    ``"observation"`` of a ``Dict`` (PettingZoo's classic games). ``transposed`` boards
    store columns first (PettingZoo's tic-tac-toe). Empty cells show their action number
    when ``numbers`` is ``"cells"``; with ``"columns"`` the column numbers head the board."""

    rows: int
    cols: int
    numbers: Literal["cells", "columns"] = "cells"
    transposed: bool = False

    def fits(self, space: gs.Space) -> bool:
        planes = space.spaces.get("observation") if isinstance(space, gs.Dict) else space
        shape = (self.cols, self.rows, 2) if self.transposed else (self.rows, self.cols, 2)
        return isinstance(planes, gs.Box) and planes.shape == shape

    def for_env(self, space: gs.Space, env: Any) -> Board:
        return self

    def text(self, obs: Any) -> str:
        lines = [" ".join(str(c) for c in range(self.cols))] if self.numbers == "columns" else []
        width = len(str(self.rows * self.cols - 1)) if self.numbers == "cells" else 1
        for r, row in enumerate(self.marks(obs)):
            cells = [mark or (str(self.action_at(r, c)) if self.numbers == "cells" else ".")
                     for c, mark in enumerate(row)]
            lines.append(" ".join(cell.rjust(width) for cell in cells))
        return "\n".join(lines)

    def marks(self, obs: Any) -> list[list[str]]:
        """The board by rows, as the player to move sees it: ``"X"`` for its pieces,
        ``"O"`` for the opponent's, ``""`` for an empty cell.

            >>> planes = np.zeros((3, 3, 2)); planes[0, 1, 0] = 1   # tic-tac-toe stores columns first
            >>> Board(3, 3, transposed=True).marks(planes)[1]
            ['X', '', '']
        """
        planes = np.asarray(obs["observation"] if isinstance(obs, Mapping) else obs)
        if self.transposed:
            planes = planes.transpose(1, 0, 2)
        return [
            ["X" if planes[r, c, 0] else "O" if planes[r, c, 1] else "" for c in range(self.cols)]
            for r in range(self.rows)
        ]

    def action_at(self, row: int, col: int) -> int:
        """The action that plays the cell at ``row``, ``col``: the cell's number, or its
        column's when ``numbers`` is ``"columns"`` (a piece dropped there)."""
        if self.numbers == "columns":
            return col
        return col * self.rows + row if self.transposed else row * self.cols + col

    def describe(self) -> str:
        numbers = "an empty cell shows its number" if self.numbers == "cells" else "the column numbers on top, . empty"
        return f"the {self.rows} x {self.cols} board, X your pieces, O your opponent's, {numbers}"
