"""Built-in GridWorld server env: OpenEnv's ``grid_world_env``.

A 5x5 grid; the agent starts at ``[0, 0]`` and walks to the goal ``[4, 4]``
with the action ``UP`` / ``DOWN`` / ``LEFT`` / ``RIGHT`` (``x`` is the row,
``y`` the column, as upstream). Each step costs -0.1; reaching the goal gives
+1 and ends the episode. Moves into a wall leave the agent where it is.

    >>> env = GridWorldEnvironment()
    >>> env.reset().fields["x"], env.step({"action": "DOWN"}).fields["x"]
    (0, 1)
"""

from __future__ import annotations

import uuid
from typing import Any

from ..fields import BASE_STATE_DESCRIPTION, FieldsEnv, FieldsObservation, model_schema

__all__ = ["GridWorldEnvironment"]

_MOVES = {"UP": (-1, 0), "DOWN": (1, 0), "LEFT": (0, -1), "RIGHT": (0, 1)}


class GridWorldEnvironment(FieldsEnv):
    """A 5x5 grid world with a goal at [4, 4], as OpenEnv's grid_world_env."""

    name = "grid_world_env"
    description = "A 5x5 grid: walk from [0, 0] to [4, 4]"
    action_schema = model_schema(
        "GridWorldAction",
        {"action": {"$ref": "#/$defs/MoveAction", "description": "The direction to move the agent."}},
        kind="action",
        required=["action"],
        defs={"MoveAction": {"enum": list(_MOVES), "title": "MoveAction", "type": "string"}},
    )
    observation_schema = model_schema(
        "GridWorldObservation",
        {
            "done": {"default": False, "description": "Whether the episode has ended", "type": "boolean"},
            "reward": {"default": 0.0, "description": "Reward received from the last action", "type": "number"},
            "x": {"description": "Current X position", "type": "integer"},
            "y": {"description": "Current Y position", "type": "integer"},
            "message": {"default": "", "description": "Status message", "type": "string"},
        },
        kind="observation",
        required=["x", "y"],
    )
    state_schema = model_schema("State", {}, kind="state", description=BASE_STATE_DESCRIPTION)

    grid_size = 5
    goal = (4, 4)

    def __init__(self) -> None:
        self.x = self.y = 0
        self.episode_id: str | None = None
        self.step_count = 0

    def reset(self, *, seed: int | None = None, episode_id: str | None = None) -> FieldsObservation:
        self.x = self.y = 0
        self.step_count = 0
        self.episode_id = episode_id or str(uuid.uuid4())
        return FieldsObservation(
            {"x": 0, "y": 0, "message": f"Welcome to Grid World! Goal is at {list(self.goal)}."}
        )

    def step(self, action: dict[str, Any]) -> FieldsObservation:
        self.step_count += 1
        dx, dy = _MOVES[action["action"]]
        last = self.grid_size - 1
        self.x = max(0, min(self.x + dx, last))
        self.y = max(0, min(self.y + dy, last))
        if (self.x, self.y) == self.goal:
            return FieldsObservation({"x": self.x, "y": self.y, "message": "You found the goal!"}, 1.0, True)
        return FieldsObservation({"x": self.x, "y": self.y, "message": "Keep going..."}, -0.1, False)

    def state(self) -> dict[str, Any]:
        return {"episode_id": self.episode_id, "step_count": self.step_count}
