"""The ``/ws`` session of a :class:`~openenv_gym.fields.FieldsEnv`: OpenEnv's named
fields in and out, exactly as ``openenv``'s own server frames them."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from ..errors import ErrorCode, ProtocolError
from ..fields import FieldsEnv, FieldsObservation
from ..protocol import (
    ClientMessage,
    Observation,
    Render,
    Reset,
    ServerMessage,
    State,
    StateReply,
    Step,
    jsonable,
    validation_error,
)
from .session import Session, env_error
from .source import EnvSource
from .tools import ServedTool, env_tool

__all__ = ["FieldsSource", "FieldsSession"]


@dataclass(frozen=True, kw_only=True)
class FieldsSource(EnvSource):
    """The source of a :class:`~openenv_gym.fields.FieldsEnv`, which speaks OpenEnv's
    named fields and publishes its own schemas; its env runs in the server's process."""

    #: The env's class, whose class attributes say how its sessions reset, act and call tools.
    env_class: type[FieldsEnv]

    isolable: ClassVar[bool] = False


class FieldsSession(Session):
    """A ``/ws`` session of a :class:`~openenv_gym.fields.FieldsEnv`.

    The env keeps its own episode bookkeeping (``state()``), as OpenEnv
    environments do; this session only validates, calls and frames.
    """

    source: FieldsSource

    def __init__(self, source: FieldsSource, **kwargs: Any) -> None:
        super().__init__(source, **kwargs)
        self._options = source.env_class.reset_options()

    def state(self) -> dict:
        return jsonable(self._env().state())

    def toolbox(self) -> dict[str, ServedTool] | None:
        specs = self.source.env_class.tools
        if not specs:
            return None
        if self._tools is None:
            self._tools = {spec.name: env_tool(spec) for spec in specs}
        return self._tools

    async def handle(self, message: ClientMessage) -> ServerMessage | None:
        if isinstance(message, State):
            try:
                return StateReply(await self.call(self.state))
            except ProtocolError:
                raise
            except Exception as exc:  # noqa: BLE001 - env errors go back to the client
                raise env_error(exc) from exc
        if isinstance(message, Render):
            raise ProtocolError(ErrorCode.UNKNOWN_TYPE, "Unknown message type: render")
        return await super().handle(message)

    async def _reset(self, reset: Reset) -> ServerMessage:
        options = dict(reset.options or {})
        if reset.injected_state is not None:  # OpenEnv's set_state: the env's own reset argument
            options["injected_state"] = reset.injected_state
        for key in options:
            if key not in self._options:
                accepted = ", ".join(sorted({"seed", "episode_id", *self._options}))
                raise validation_error(
                    [key], f"Unknown reset option; {self.source.name} accepts {accepted}",
                    options[key], "extra_forbidden",
                )
        result = await self.run(self._env().reset, seed=reset.seed, episode_id=reset.episode_id, **options)
        self.begin_episode(reset)
        return _frame(result)

    async def _step(self, step: Step) -> ServerMessage:
        action = self.source.env_class.parse_action(step.fields)
        if self.source.env_class.reset_before_step:
            self.require_episode()
        result = await self.run(self._env().step, action)
        self.step_count += 1
        return _frame(result)


def _frame(result: FieldsObservation) -> Observation:
    """The observation frame OpenEnv 0.10 sends for ``result``."""
    metadata = jsonable(result.metadata)
    return Observation(
        {**jsonable(result.fields), "metadata": metadata},
        None if result.reward is None else float(result.reward),
        bool(result.done),
        metadata,
    )
