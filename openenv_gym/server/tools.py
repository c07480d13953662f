"""The MCP tools of a served environment: ``act``, ``observe``, ``legal_actions``,
``new_episode``, ``episode_state``, and an env author's own.

Every Gymnasium env (and PettingZoo seat view) a server hosts gets these tools, built
from the session's text view (:mod:`openenv_gym.text`), so an LLM plays it through MCP
with no per-env code:

- ``act(action)``: take one action, named as the view reads it (``"left"``, ``2``,
  ``[0.5]``); its input schema is the enum of the action names where the view has
  names, else the JSON Schema of the action space;
- ``observe()``: the current observation as text, taking no action;
- ``legal_actions()``: the actions legal now (by the env's action mask where it has one);
- ``new_episode(seed=None, options=None)``: end the episode and start another, seeded
  and with reset options if given, so that a client speaking MCP alone plays many
  (reproducible) episodes in one session;
- ``episode_state()``: the episode's id, seed, steps and return so far, and whether it
  is over.

Their results carry the observation's text, the reward of the call (0 for the tools
that take no action) and ``terminated`` / ``truncated`` / ``done``, as structured
content (:data:`RESULT_SCHEMA`; ``episode_state``'s is :data:`EPISODE_STATE_SCHEMA`). A
session without an episode starts one (a reset without seed, as ``POST /step`` does) at
its first tool call. An action the view cannot read, or an ``act`` after the episode
ended, never reaches the env: it is a :class:`~openenv_gym.errors.ToolCallError`, which
the server answers as OpenEnv answers a tool that raised.

The episode tools are the agent's when MCP is all it speaks; a trainer starts episodes
itself (``reset``), so its adapters leave them out of what the model is shown
(:data:`~openenv_gym.protocol.tools.EPISODE_TOOL_NAMES`).

An env author adds tools with plain functions taking the session's env first
(``create_app(env, tools=[...])``, see :func:`function_tool`)::

    def peek(env, row: int) -> str:
        \"\"\"The tiles of one row of the map.\"\"\"
        return "".join(c.decode() for c in env.unwrapped.desc[row])
"""

from __future__ import annotations

import inspect
import types
import typing
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, Protocol

from ..errors import ProtocolError, ToolCallError
from ..fields import validate_action
from ..protocol.mcp import RESERVED_TOOL_NAMES, McpToolResult, ToolSpec
from ..protocol.messages import MAX_ERROR_CHARS, Reset
from ..protocol.tools import EPISODE_TOOL_NAMES
from ..spaces._common import clipped
from ..text import ActionParseError
from ..text.view import act_tool_text, episode_status, reward_text

__all__ = [
    "ServedTool",
    "ToolOutcome",
    "Position",
    "Episode",
    "RESULT_SCHEMA",
    "EPISODE_STATE_SCHEMA",
    "BUILTIN_TOOL_NAMES",
    "gym_tools",
    "function_tool",
    "env_tool",
    "check_tool_names",
]

#: The names of the tools every Gymnasium env gets.
BUILTIN_TOOL_NAMES = ("act", "observe", "legal_actions", *EPISODE_TOOL_NAMES)

#: The JSON Schema of the structured content of the built-in tools' results.
RESULT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "text": {"type": "string", "description": "The observation, as text"},
        "reward": {"type": "number", "description": "The reward this call earned (0 when it took no action)"},
        "terminated": {"type": "boolean", "description": "Gymnasium's terminated"},
        "truncated": {"type": "boolean", "description": "Gymnasium's truncated"},
        "done": {"type": "boolean", "description": "Whether the episode is over"},
        "legal_actions": {
            "anyOf": [{"type": "array", "items": {"type": "string"}}, {"type": "null"}],
            "description": "The actions legal now, as act takes them (null when they cannot be listed)",
        },
    },
    "required": ["text", "reward", "terminated", "truncated", "done", "legal_actions"],
}

#: The JSON Schema of ``episode_state``'s structured content.
EPISODE_STATE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "episode_id": {"type": ["string", "null"], "description": "The episode's id (null before the first)"},
        "seed": {"type": ["integer", "null"], "description": "The seed it began with (null: unseeded)"},
        "step_count": {"type": "integer", "description": "The actions taken in it"},
        "return": {"type": "number", "description": "The sum of its rewards so far"},
        "terminated": {"type": "boolean", "description": "Gymnasium's terminated"},
        "truncated": {"type": "boolean", "description": "Gymnasium's truncated"},
        "done": {"type": "boolean", "description": "Whether it is over"},
    },
    "required": ["episode_id", "seed", "step_count", "return", "terminated", "truncated", "done"],
}

_NO_ARGUMENTS: dict[str, Any] = {"type": "object", "properties": {}, "additionalProperties": False}

_NEW_EPISODE_ARGUMENTS: dict[str, Any] = {
    "type": "object",
    "properties": {
        "seed": {
            "anyOf": [{"type": "integer", "minimum": 0}, {"type": "null"}], "default": None,
            "description": "Seeds the environment's reset: the same seed, the same episode (null: unseeded)",
        },
        "options": {
            "anyOf": [{"type": "object"}, {"type": "null"}], "default": None,
            "description": "The environment's reset options (Gymnasium's reset(options=...))",
        },
    },
    "additionalProperties": False,
}


@dataclass
class Position:
    """Where the session's episode stands: its last observation, and how it ended."""

    obs: Any
    info: Any
    terminated: bool = False
    truncated: bool = False
    #: The observation's text, once computed.
    text: str | None = None

    @property
    def over(self) -> bool:
        return self.terminated or self.truncated


class Episode(Protocol):
    """What the built-in tools use of a session (:class:`~.session.Session` is one)."""

    #: The session's env.
    env: Any

    @property
    def view(self) -> Any: ...

    @property
    def position(self) -> Position | None: ...

    async def begin_if_needed(self) -> Position:
        """The episode's position, after a reset without seed if there is no episode."""

    async def new_episode(self, reset: Reset) -> Position:
        """End the episode, if any, and start another with ``reset``; its first position."""

    def episode_state(self) -> dict[str, Any]:
        """The episode's id, seed, steps and return so far (:data:`EPISODE_STATE_SCHEMA`
        but ``terminated``, ``truncated`` and ``done``)."""

    async def position_text(self) -> str:
        """The text of the current observation."""

    async def play(self, action: Any) -> float:
        """Step the env with ``action`` (already checked); the reward."""

    async def run(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        """Call ``fn`` where the session's env calls run."""

    async def frame_images(self) -> tuple[str, ...]:
        """The env's current frame as a base64 PNG, when the server shows frames in tool
        results (``tool_images``); none otherwise."""


@dataclass(frozen=True)
class ToolOutcome:
    """A tool call's result and the reward it earned (0 unless it stepped the env)."""

    result: McpToolResult
    reward: float = 0.0


@dataclass(frozen=True)
class ServedTool:
    """One tool of a session: what it says about itself, and what runs it."""

    spec: ToolSpec
    #: ``run(session, arguments)``; raises :class:`~openenv_gym.errors.ToolCallError`.
    run: Callable[[Any, dict[str, Any]], Awaitable[ToolOutcome]]

    @property
    def name(self) -> str:
        return self.spec.name


def _checked(
    spec: ToolSpec, rules: Mapping[str, Any], body: Callable[[Any, dict[str, Any]], Awaitable[ToolOutcome]]
) -> ServedTool:
    """A tool whose arguments are checked against ``rules`` (an object schema, checked as
    pydantic checks a model: unknown, missing and mistyped arguments are named) before
    ``body`` runs, and whose failures name it, as FastMCP names a tool that raised."""

    async def run(episode: Any, arguments: dict[str, Any]) -> ToolOutcome:
        try:
            checked = validate_action(rules, arguments)
        except ProtocolError as exc:
            raise ToolCallError(_refused(spec.name, exc), error_type="invalid_args") from None
        try:
            return await body(episode, checked)
        except ToolCallError as exc:
            message = f"Error calling tool {spec.name!r}: {exc.message}"
            raise ToolCallError(message, error_type=exc.error_type) from exc
        except ProtocolError as exc:  # the env raised, hung or crashed
            message = f"Error calling tool {spec.name!r}: {exc.message}"
            raise ToolCallError(message, error_type="execution_error") from exc

    return ServedTool(spec, run)


def _refused(tool: str, error: ProtocolError) -> str:
    """What is wrong with a tool call's arguments (``error``, a VALIDATION_ERROR listing
    the first few problems), in at most :data:`MAX_ERROR_CHARS` characters."""
    reasons = [f"{'.'.join(map(str, e['loc'])) or 'arguments'}: {e['msg']}" for e in error.extra.get("errors", [])]
    if more := error.extra.get("more_errors"):
        reasons.append(f"and {more} more")
    return clipped(f"Invalid arguments for tool {tool!r}: {'; '.join(reasons)}", MAX_ERROR_CHARS)


# -- act, observe, legal_actions ----------------------------------------------------------


def gym_tools(view: Any) -> list[ServedTool]:
    """The built-in tools of a Gymnasium env whose text view is ``view``."""
    description, action_schema = act_tool_text(view)
    act = ToolSpec(
        "act", description,
        {"type": "object", "properties": {"action": action_schema}, "required": ["action"],
         "additionalProperties": False},
        RESULT_SCHEMA,
    )
    observe = ToolSpec(
        "observe", "The current observation as text, and whether the episode is over (takes no action).",
        _NO_ARGUMENTS, RESULT_SCHEMA,
    )
    legal = ToolSpec("legal_actions", "The actions that are legal now.", _NO_ARGUMENTS, RESULT_SCHEMA)
    new_episode = ToolSpec(
        "new_episode",
        "End the current episode, if any, and start a new one: the same seed gives the same episode. "
        "Returns its first observation as text.",
        _NEW_EPISODE_ARGUMENTS, RESULT_SCHEMA,
    )
    state = ToolSpec(
        "episode_state",
        "The current episode's id, seed, number of steps and return so far, and whether it is over "
        "(takes no action).",
        _NO_ARGUMENTS, EPISODE_STATE_SCHEMA,
    )
    return [
        _checked(act, {"properties": {"action": {}}, "required": ["action"]}, _act),
        _checked(observe, {}, _observe),
        _checked(legal, {}, _legal_actions),
        _checked(new_episode, {"properties": {"seed": {}, "options": {}}}, _new_episode),
        _checked(state, {}, _episode_state),
    ]


async def _act(episode: Episode, arguments: dict[str, Any]) -> ToolOutcome:
    position = await episode.begin_if_needed()
    if position.over:
        raise ToolCallError(
            f"the episode is over ({_ending(position)}): no action can be taken until the next reset "
            "(new_episode starts one)",
            error_type="execution_error",
        )
    try:
        action = episode.view.parse_action(arguments["action"], obs=position.obs, info=position.info)
    except ActionParseError as exc:
        raise ToolCallError(str(exc), error_type="invalid_args") from exc
    reward = await episode.play(action)
    return ToolOutcome(await _position_result(episode, reward, reward_text(reward)), reward)


async def _observe(episode: Episode, arguments: dict[str, Any]) -> ToolOutcome:
    await episode.begin_if_needed()
    return ToolOutcome(await _position_result(episode, 0.0, ""))


async def _legal_actions(episode: Episode, arguments: dict[str, Any]) -> ToolOutcome:
    position = await episode.begin_if_needed()
    result = await _position_result(episode, 0.0, "")
    legal = result.data["legal_actions"]
    if position.over:
        text = "No action is legal: the episode is over."
    elif legal is None:
        text = f"Any action: {episode.view.describe_actions()}"
    else:
        text = "Legal actions: " + (", ".join(legal) or "none")
    return ToolOutcome(McpToolResult(text, result.structured, result.data, images=result.images))


async def _new_episode(episode: Episode, arguments: dict[str, Any]) -> ToolOutcome:
    options = arguments.get("options")
    if options is not None and not isinstance(options, dict):
        raise ToolCallError("options: Input should be an object or null", error_type="invalid_args")
    try:
        seed = Reset.from_data({"seed": arguments.get("seed")}).seed
    except ProtocolError as exc:
        raise ToolCallError(f"seed: {exc.extra['errors'][0]['msg']}", error_type="invalid_args") from None
    await episode.new_episode(Reset(seed=seed, options=options or None))
    seeded = "unseeded" if seed is None else f"seed {seed}"
    return ToolOutcome(await _position_result(episode, 0.0, f"A new episode began ({seeded}). "))


async def _episode_state(episode: Episode, arguments: dict[str, Any]) -> ToolOutcome:
    position = episode.position
    over = {"terminated": False, "truncated": False, "done": False} if position is None else {
        "terminated": position.terminated, "truncated": position.truncated, "done": position.over}
    data = {**episode.episode_state(), **over}
    if data["episode_id"] is None:
        text = "No episode has begun: act, observe or new_episode starts one."
    else:
        seeded = "unseeded" if data["seed"] is None else f"seed {data['seed']}"
        status = f"over ({_ending(position)})" if position is not None and position.over else "going on"
        text = (f"Episode {data['episode_id']} ({seeded}): {data['step_count']} steps, "
                f"return {data['return']:.4g}, {status}.")
    return ToolOutcome(McpToolResult(text, data, data))


async def _position_result(episode: Episode, reward: float, prefix: str) -> McpToolResult:
    position = episode.position
    assert position is not None
    text = await episode.position_text()
    legal = [] if position.over else episode.view.legal_actions(position.info, obs=position.obs)
    status = episode_status(position.terminated, position.truncated)
    data = {
        "text": text, "reward": reward, "terminated": position.terminated, "truncated": position.truncated,
        "done": position.over, "legal_actions": legal,
    }
    return McpToolResult(f"{text}\n{prefix}{status}", data, data, images=await episode.frame_images())


def _ending(position: Position) -> str:
    return "terminated" if position.terminated else "truncated: out of time"


# -- an env author's tools ------------------------------------------------------------------


def function_tool(fn: Callable[..., Any]) -> ServedTool:
    """The tool of a function whose first parameter takes the session's env.

    Its name is the function's, its description the docstring, its input schema made
    from the other parameters' type hints (``int``, ``float``, ``str``, ``bool``,
    ``list[...]``, ``dict``, ``Literal[...]``, ``X | None``; a parameter with a default
    is optional). Arguments are checked against that schema (numbers in strings are
    accepted, as pydantic accepts them) and the function runs where the session's env
    calls run; it returns any JSON-able value (an object becomes the structured content,
    anything else ``{"result": value}``) and may raise
    :class:`~openenv_gym.errors.ToolCallError` to say why a call failed.
    """
    if not callable(fn) or inspect.iscoroutinefunction(fn):
        raise TypeError(f"a tool is a plain function taking the env first, not {fn!r}")
    name = getattr(fn, "__name__", "")
    signature = inspect.signature(fn, eval_str=True)
    parameters = list(signature.parameters.values())
    if not name.isidentifier() or not parameters:
        raise TypeError(f"the tool {fn!r} must be a named function taking the env as its first parameter")
    properties: dict[str, Any] = {}
    required: list[str] = []
    for parameter in parameters[1:]:
        if parameter.kind not in (parameter.POSITIONAL_OR_KEYWORD, parameter.KEYWORD_ONLY):
            raise TypeError(f"the tool {name!r} takes *args or **kwargs: give each argument a name")
        try:
            schema = _schema_of(parameter.annotation)
        except TypeError as exc:
            raise TypeError(f"the tool {name!r}: parameter {parameter.name!r}: {exc}") from None
        if parameter.default is parameter.empty:
            required.append(parameter.name)
        elif parameter.default is None or isinstance(parameter.default, (bool, int, float, str)):
            schema = {**schema, "default": parameter.default}
        properties[parameter.name] = schema
    input_schema: dict[str, Any] = {"type": "object", "properties": properties, "additionalProperties": False}
    if required:
        input_schema["required"] = required
    spec = ToolSpec(name, inspect.getdoc(fn) or f"The tool {name}.", input_schema)

    async def body(episode: Episode, arguments: dict[str, Any]) -> ToolOutcome:
        return ToolOutcome(McpToolResult.of_value(await episode.run(fn, episode.env, **arguments)))

    return _checked(spec, input_schema, body)


def _schema_of(annotation: Any) -> dict[str, Any]:
    """The JSON Schema of a parameter's type hint."""
    if annotation is inspect.Parameter.empty or annotation is Any:
        return {}
    for kind, schema in ((bool, "boolean"), (int, "integer"), (float, "number"), (str, "string")):
        if annotation is kind:
            return {"type": schema}
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if annotation is dict or origin in (dict, Mapping):
        return {"type": "object"}
    if annotation is list or origin in (list, Sequence):
        return {"type": "array", "items": _schema_of(args[0] if args else Any)}
    if annotation is tuple or origin is tuple:  # tuple[X, ...]; other tuples: items of any type
        homogeneous = len(args) == 2 and args[1] is Ellipsis
        return {"type": "array", "items": _schema_of(args[0] if homogeneous else Any)}
    if origin is Literal:
        return {"enum": list(args)}
    if origin in (typing.Union, types.UnionType):
        options = [_schema_of(a) for a in args if a is not type(None)]
        if type(None) in args:
            options.append({"type": "null"})
        return options[0] if len(options) == 1 else {"anyOf": options}
    raise TypeError(
        f"cannot describe the type {annotation!r} in JSON Schema: use int, float, str, bool, "
        f"list[...], dict, Literal[...] or X | None"
    )


def env_tool(spec: ToolSpec) -> ServedTool:
    """A tool the env runs itself (a :class:`~openenv_gym.fields.FieldsEnv`'s
    ``call_tool``), its failures worded by the env, as OpenEnv's own MCP envs word them."""

    async def run(episode: Episode, arguments: dict[str, Any]) -> ToolOutcome:
        try:
            return ToolOutcome(await episode.run(episode.env.call_tool, spec.name, arguments))
        except ProtocolError as exc:  # the env raised something else, hung or crashed
            raise ToolCallError(exc.message, error_type="execution_error") from exc

    return ServedTool(spec, run)


def check_tool_names(tools: Iterable[ServedTool], *, builtin: Sequence[str] = BUILTIN_TOOL_NAMES) -> None:
    """Refuse tools named as OpenEnv's own API or a built-in tool, and duplicates."""
    seen = set(builtin)
    for tool in tools:
        if tool.name in RESERVED_TOOL_NAMES:
            raise ValueError(
                f"a tool cannot be named {tool.name!r}: OpenEnv keeps {sorted(RESERVED_TOOL_NAMES)} "
                f"for its own API; rename the function"
            )
        if tool.name in seen:
            raise ValueError(f"two tools are named {tool.name!r} (the built-in ones are {', '.join(builtin)})")
        seen.add(tool.name)

