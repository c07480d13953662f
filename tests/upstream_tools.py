"""An env with MCP tools of its own, built on the official openenv package: a peer for
the client's tool sessions and the TRL adapter that does not depend on openenv-gym's
server.

``Corridor`` is an ``MCPEnvironment`` (FastMCP tools ``move(direction)`` and
``observe()``) on openenv's ``create_app``: a corridor of :data:`LENGTH` cells, the
agent starts at cell 0 (or at the reset's ``seed`` modulo 2), and reaching the last
cell ends the episode with reward 1. As upstream envs that score tool calls do, it sets
the reward and ``done`` of ``call_tool`` steps in ``step_async``.
"""

from __future__ import annotations

from typing import Any, Literal

LENGTH = 4


def corridor_app(max_sessions: int = 8) -> Any:
    """The ASGI app serving ``Corridor`` (skips the test when fastmcp is missing)."""
    import pytest

    pytest.importorskip("fastmcp")
    from fastmcp import FastMCP
    from openenv.core.env_server import create_app
    from openenv.core.env_server.mcp_environment import MCPEnvironment
    from openenv.core.env_server.mcp_types import CallToolAction, CallToolObservation
    from openenv.core.env_server.types import Observation, State

    class Corridor(MCPEnvironment):
        SUPPORTS_CONCURRENT_SESSIONS = True

        def __init__(self) -> None:
            server = FastMCP("corridor")
            self.position = 0
            self.steps_taken = 0

            @server.tool
            def move(direction: Literal["left", "right"]) -> str:
                """Move one cell along the corridor.

                Args:
                    direction: Where to go.
                """
                if self.position == LENGTH - 1:
                    raise ValueError("the walk is over")
                self.position = max(0, self.position + (1 if direction == "right" else -1))
                self.steps_taken += 1
                return self.describe()

            @server.tool
            def observe() -> str:
                """Where you are in the corridor."""
                return self.describe()

            super().__init__(server)
            self._state = State(episode_id="", step_count=0)

        def describe(self) -> str:
            return f"cell {self.position} of 0-{LENGTH - 1}; the exit is cell {LENGTH - 1}"

        def reset(self, seed: int | None = None, episode_id: str | None = None, **kwargs: Any) -> Observation:
            self.position = (seed or 0) % 2
            self.steps_taken = 0
            self._state = State(episode_id=episode_id or "", step_count=0)
            return Observation(reward=0.0, metadata={})

        def _step_impl(self, action: Any, timeout_s: float | None = None, **kwargs: Any) -> Observation:
            return Observation(reward=0.0)

        async def step_async(self, action: Any, timeout_s: float | None = None, **kwargs: Any) -> Observation:
            before = self.steps_taken
            observation = await super().step_async(action, timeout_s=timeout_s, **kwargs)
            if isinstance(action, CallToolAction):
                moved = self.steps_taken > before
                observation.done = self.position == LENGTH - 1
                observation.reward = 1.0 if moved and observation.done else 0.0
            return observation

        @property
        def state(self) -> State:
            return self._state

    return create_app(
        Corridor, CallToolAction, CallToolObservation, reset_observation_cls=Observation,
        env_name="corridor", max_concurrent_envs=max_sessions,
    )
