"""verifiers' environments on any OpenEnv server, with no code per env.

verifiers 0.4 (its ``verifiers.v1`` stack) runs a rollout as a *harness* playing a
*task* of a *taskset*, every model call going through its interception server (which
records the turns into the rollout's trace). Here:

- :class:`OpenEnvTaskset`: one task per seed of an env served at ``url``; each task's
  system prompt is the env's :attr:`~openenv_gym.client.tools.EnvTools.instructions`
  (the task, the observations, the actions and how to answer), its user prompt a line
  the first observation follows.
- :class:`OpenEnvHarness`: the agent's loop, run in process: it resets the env (one
  session per rollout, over one connection of the event loop, so many rollouts play at
  once), shows the model the env's tools (the server's own, or the ``act`` tool made on
  the client from the env's :mod:`text view <openenv_gym.text>`), calls each tool the
  model asks for on the env and answers with its text, until the episode ends, the model
  calls no tool, or ``max_turns``. An illegal action, bad arguments or an unknown tool
  are answered with the env's message, and the env does not step.
- The rollout's reward is :class:`OpenEnvTask`'s ``episode_reward``: the episode scored by
  :func:`~openenv_gym.client.rollout.scorer` (``score="return"``, ``"terminal"`` or a
  function of the :class:`~openenv_gym.client.rollout.Rollout`, ``clip``), as TRL's and
  SkyRL's adapters score it; the trace's ``info["episode"]`` and metrics log its return,
  steps, ``done`` and ``truncated``.

:func:`load_environment` builds the env: ``SingleAgentEnv`` on the taskset, the harness
in a subprocess runtime (which runs nothing: the harness plays in process). A local
Gymnasium env's id works as well as a server's URL:

    >>> env = load_environment("FrozenLake-v1", env_kwargs={"is_slippery": False}, seeds=range(4), max_turns=20)
    >>> task = next(iter(env.taskset))
    >>> task.data.seed, task.data.system_prompt.splitlines()[0]  # doctest: +ELLIPSIS
    (0, 'FrozenLake: walk from the start S to the goal G over a frozen lake without falling into a hole H. ...')
    >>> type(env).__name__, type(env.taskset).__name__, len(list(env.taskset))
    ('SingleAgentEnv', 'OpenEnvTaskset', 4)

Its episodes run inside ``env.serving()``, each with the model's endpoint, many at once
on one event loop::

    import asyncio, verifiers.v1 as vf

    env = load_environment("http://127.0.0.1:8000", seeds=range(64), max_turns=30)
    ctx = vf.ModelContext(model="Qwen/Qwen3-4B", client=vf.EvalClientConfig(base_url="http://127.0.0.1:8001/v1"))

    async def evaluate():
        async with env.serving():
            return await asyncio.gather(*(env.run_episode(task, ctx) for task in env.taskset))

    episodes = asyncio.run(evaluate())   # each episode's trace: its turns, reward, info["episode"]

With verifiers' command line (and trainers that take its configs), the taskset and its
harness go by the id ``openenv_gym_verifiers``, a module of this distribution that
re-exports them::

    vf-eval openenv_gym_verifiers --env.taskset.url http://127.0.0.1:8000 \\
        --env.taskset.seeds '[0, 1, 2, 3]' --env.agent.runtime.type subprocess ...
"""

from __future__ import annotations

import asyncio
import dataclasses
import importlib
import json
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any, Literal

from ._extras import missing_extra

try:
    import verifiers.v1 as vf
    from openai import APIStatusError, AsyncOpenAI
    from pydantic import Field, model_validator
except ImportError as exc:  # pragma: no cover - depends on the install
    raise missing_extra(exc, "openenv_gym.verifiers", "verifiers") from exc

from .client.rollout import DEFAULT_PROMPT, SCORE_RULES, Rollout, scorer
from .client.tools import EnvTools, ToolsFrom, env_tools
from .errors import ToolCallError

__all__ = [
    "ID", "OpenEnvData", "OpenEnvConfig", "OpenEnvTask", "OpenEnvTaskset", "OpenEnvHarnessConfig", "OpenEnvHarness",
    "load_environment",
]

#: The id verifiers loads the taskset and its harness by (the module ``openenv_gym_verifiers``).
ID = "openenv_gym_verifiers"


class OpenEnvData(vf.TaskData):
    """One task: an episode of the env at ``url`` from ``seed`` (and reset ``options``),
    and how its rollout is played and scored (see :class:`OpenEnvConfig`)."""

    url: str
    env_kwargs: dict[str, Any] | None = None
    seed: int | None = None
    options: dict[str, Any] | None = None
    tools: ToolsFrom = "auto"
    max_turns: int = 100
    score: str = "return"
    clip: tuple[float, float] | None = None


class OpenEnvConfig(vf.TasksetConfig):
    """The taskset's config (``--env.taskset.*``).

    Attributes:
        url: The OpenEnv server's URL (an openenv-gym server, or any other), or a local
            Gymnasium env's id (its episodes then step in worker threads of this process).
        env_kwargs: For a local env, the keyword arguments that make it.
        seeds: One task per seed (``None``: an unseeded episode).
        options: The options of every reset.
        prompt: The user message; the first observation follows it, after a blank line.
        instructions: Whether the system prompt is the env's instructions.
        tools: Where the model's tools come from: ``"server"``, the server's MCP tools;
            ``"client"``, an ``act`` tool made here from the env's text view; ``"auto"``,
            the server's when it has any.
        max_turns: The model calls of one rollout, at most.
        score: ``"return"`` (the episode's return, finished or not), ``"terminal"`` (the
            last step's reward if the episode ended, else 0), or ``"module:function"``, a
            function of the :class:`~openenv_gym.client.rollout.Rollout` returning its score.
        clip: ``(lo, hi)``: the score is clipped into it.
    """

    id: str = ID
    url: str = ""
    env_kwargs: dict[str, Any] | None = None
    seeds: list[int | None] = [0]
    options: dict[str, Any] | None = None
    prompt: str = DEFAULT_PROMPT
    instructions: bool = True
    tools: ToolsFrom = "auto"
    max_turns: int = Field(100, ge=1)
    score: str = "return"
    clip: tuple[float, float] | None = None

    @model_validator(mode="after")
    def _known_score(self) -> OpenEnvConfig:
        scorer(score_rule(self.score), self.clip)
        return self


def score_rule(score: str) -> Literal["return", "terminal"] | Callable[[Rollout], float]:
    """The :data:`~openenv_gym.client.rollout.ScoreRule` a config's ``score`` names: a
    name of :data:`~openenv_gym.client.rollout.SCORE_RULES`, or the function at
    ``"module:function"``.

        >>> score_rule("terminal"), score_rule("math:fabs")
        ('terminal', <built-in function fabs>)
    """
    if score in SCORE_RULES:
        return score  # type: ignore[return-value]
    module, _, name = score.partition(":")
    function = getattr(importlib.import_module(module), name, None) if module and name else None
    if not callable(function):
        raise ValueError(f"score={score!r}: use {' or '.join(map(repr, SCORE_RULES))}, or 'module:function' naming "
                         "a function of the rollout (its reward, last_reward, steps, done, truncated)")
    return function


class OpenEnvTask(vf.Task[OpenEnvData]):
    """An episode of a served env; its reward is the episode's score."""

    @vf.reward
    async def episode_reward(self, trace: vf.Trace) -> float:
        """The episode :class:`OpenEnvHarness` logged in ``trace.info["episode"]``, scored
        by the task's ``score`` and ``clip``."""
        episode = trace.info.get("episode")
        if not isinstance(episode, Mapping):
            raise ValueError("the trace logs no episode: play the task with OpenEnvHarness (harness id "
                             f"{ID!r}), which logs it in trace.info['episode']")
        return scorer(score_rule(self.data.score), self.data.clip)(Rollout(**episode))


class OpenEnvTaskset(vf.Taskset[OpenEnvTask, OpenEnvConfig]):
    """One task per seed of the env at the config's ``url``; reading the tasks asks the
    server once for its name, tools and instructions."""

    def load(self) -> Iterator[OpenEnvTask]:
        config = self.config
        if not config.url:
            raise ValueError("the taskset has no env: set its url (--env.taskset.url: an OpenEnv server's URL, or a "
                             "local Gymnasium env's id)")
        found = env_tools(config.url, tools=config.tools, env_kwargs=config.env_kwargs)
        system = found.instructions if config.instructions else None
        for seed in config.seeds:
            data = OpenEnvData(
                name=f"{found.name}#{seed}", prompt=config.prompt, system_prompt=system, url=config.url,
                env_kwargs=config.env_kwargs, seed=seed, options=config.options, tools=config.tools,
                max_turns=config.max_turns, score=config.score, clip=config.clip,
            )
            yield OpenEnvTask(data, config.task)


class OpenEnvHarnessConfig(vf.HarnessConfig):
    """:class:`OpenEnvHarness`'s config (``--env.agent.harness.*``): nothing of its own."""

    id: str = ID


class OpenEnvHarness(vf.Harness[OpenEnvHarnessConfig]):
    """The agent's loop on an OpenEnv server's tools, run in process: model calls go to
    verifiers' interception endpoint, tool calls to the env, one session per rollout."""

    APPENDS_SYSTEM_PROMPT = True
    EXECUTES_CODE = False
    NEEDS_CONTAINER = False

    def __init__(self, config: OpenEnvHarnessConfig) -> None:
        super().__init__(config)
        self._found: dict[str, EnvTools] = {}

    async def launch(
        self,
        ctx: vf.ModelContext,
        trace: vf.Trace,
        runtime: vf.Runtime,
        endpoint: str,
        secret: str,
        mcp_urls: dict[str, str],
        data: vf.TaskData,
        tool_interception_url: str | None = None,
    ) -> vf.ProgramResult:
        """Play one episode of ``data`` (an :class:`OpenEnvData`), logging it in
        ``trace.info["episode"]`` and the trace's metrics."""
        if not isinstance(data, OpenEnvData):
            raise TypeError(f"{type(self).__name__} plays OpenEnvData tasks (taskset id {ID!r}), "
                            f"not {type(data).__name__}")
        system, prompt = self.resolve_prompt(data)
        if not isinstance(prompt, str):
            raise TypeError("the task's prompt must be a string: the first observation is appended to it")
        found = await self._tools(data)
        session = found.open_async() if found.server is not None else _InThread(found.open())
        model = AsyncOpenAI(base_url=endpoint, api_key=secret, max_retries=0)
        tools: list[Any] = [{"type": "function", "function": {"name": t.name, "description": t.description,
                                                              "parameters": t.input_schema}} for t in found.tools]
        rollout, refused = Rollout(), 0
        try:
            text = await session.reset(seed=data.seed, options=data.options)
            messages: list[Any] = [{"role": "system", "content": system}] if system else []
            messages.append({"role": "user", "content": f"{prompt}\n\n{text}" if prompt else text})
            for _ in range(data.max_turns):
                try:
                    completion = await model.chat.completions.create(model=ctx.model, messages=messages, tools=tools)
                except APIStatusError:
                    if trace.stop_condition is not None:  # verifiers refused the turn: a limit, a @stop
                        break
                    raise
                reply = completion.choices[0].message
                messages.append(reply.model_dump(exclude_none=True))
                for call in reply.tool_calls or ():
                    answer, ok = await _call(session, rollout, getattr(call, "function", None))
                    refused += not ok
                    messages.append({"role": "tool", "tool_call_id": call.id, "content": answer})
                if rollout.done or not reply.tool_calls:
                    break
        finally:
            trace.info["episode"] = dataclasses.asdict(rollout)
            trace.record_metrics({
                "episode_return": rollout.reward, "steps": rollout.steps, "refused_calls": refused,
                "done": rollout.done, "truncated": rollout.truncated,
            })
            await session.close()
            await model.close()
        return vf.ProgramResult(exit_code=0, stdout="", stderr="")

    async def _tools(self, data: OpenEnvData) -> EnvTools:
        """The env's tools, asked of the server once per harness (in a thread: it blocks)."""
        key = json.dumps([data.url, data.tools, data.env_kwargs], sort_keys=True, default=repr)
        if key not in self._found:
            found = await asyncio.to_thread(env_tools, data.url, tools=data.tools, env_kwargs=data.env_kwargs)
            self._found[key] = found
        return self._found[key]


async def _call(session: Any, rollout: Rollout, function: Any) -> tuple[str, bool]:
    """Call the tool the model's ``function`` call names on the env: the text for the
    model, and whether the env answered (a refused call, the env's message, leaves the
    env as it was)."""
    if function is None:
        return "Only the function tools you were given can be called.", False
    name, arguments = function.name, function.arguments
    if rollout.done:
        return "The episode is over: no tool can act on it any more.", False
    try:
        parsed = json.loads(arguments or "{}")
    except ValueError:
        parsed = None
    if not isinstance(parsed, dict):
        return f"{name}: the arguments must be a JSON object, not {arguments!r}", False
    try:
        result = await session.call(name, parsed)
    except ToolCallError as exc:
        return f"Error: {exc.message}", False
    rollout.record(result)
    return result.text, True


class _InThread:
    """A blocking tool session (an ``act`` tool made on the client) run in a worker
    thread, so that the event loop goes on with other rollouts."""

    def __init__(self, session: Any) -> None:
        self.session = session

    async def reset(self, seed: int | None = None, options: Mapping[str, Any] | None = None) -> str:
        return await asyncio.to_thread(self.session.reset, seed, options)

    async def call(self, name: str, arguments: Mapping[str, Any]) -> Any:
        return await asyncio.to_thread(self.session.call, name, arguments)

    async def close(self) -> None:
        await asyncio.to_thread(self.session.close)


def load_environment(
    url: str,
    *,
    env_kwargs: Mapping[str, Any] | None = None,
    seeds: Iterable[int | None] = (0,),
    options: Mapping[str, Any] | None = None,
    prompt: str = DEFAULT_PROMPT,
    instructions: bool = True,
    tools: ToolsFrom = "auto",
    max_turns: int = 100,
    score: str | Callable[[Rollout], float] = "return",
    clip: tuple[float, float] | None = None,
) -> vf.Env:
    """verifiers' ``SingleAgentEnv`` on the env served at ``url``: the tasks of
    :class:`OpenEnvTaskset` (the arguments are :class:`OpenEnvConfig`'s), played by
    :class:`OpenEnvHarness` in a subprocess runtime (nothing runs in it: the harness
    plays in process). Run its episodes with ``env.run_episode(task, ctx)`` inside
    ``async with env.serving():``, many at once with ``asyncio.gather``.

    ``score`` may be a module-level function of the
    :class:`~openenv_gym.client.rollout.Rollout` (verifiers' configs are data: it is
    kept as ``"module:function"``).

    Raises:
        ValueError: a ``score`` that is neither a rule's name nor a function importable
            by its name (a lambda, a nested function), or a ``clip`` that is no ``(lo, hi)``
            (pydantic's ``ValidationError`` where :class:`OpenEnvConfig` refuses it).
    """
    if callable(score):
        path = f"{score.__module__}:{score.__qualname__}"
        if "<" in path:
            raise ValueError(f"score={score!r} cannot be named for verifiers' config: define it at a module's top "
                             "level, or pass 'module:function'")
        score = path
    taskset = OpenEnvConfig(
        url=url, env_kwargs=dict(env_kwargs) if env_kwargs else None, seeds=list(seeds),
        options=dict(options) if options else None, prompt=prompt, instructions=instructions, tools=tools,
        max_turns=max_turns, score=score, clip=clip,
    )
    agent = vf.AgentConfig(harness=OpenEnvHarnessConfig(), runtime=vf.SubprocessConfig())
    return vf.load_environment(vf.SingleAgentEnvConfig(taskset=taskset, agent=agent))
