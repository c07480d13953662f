"""TRL's ``GRPOTrainer`` on any OpenEnv server (or local Gymnasium env), with no code per env.

:func:`environment_factory` reads an env's tools once and returns a class that TRL's
``GRPOTrainer(environment_factory=...)`` takes as it is: one method per tool, typed and
documented from the tool's JSON Schema (TRL builds the tool list for the model from
them), ``reset(**row)`` starting an episode from a dataset row's ``seed`` (and
``options``), and ``get_reward()`` giving the episode's return, logged by TRL as
``rewards/<ClassName>/mean``. :func:`seed_dataset` makes the dataset: one prompt and a
``seed`` per row, so the ``num_generations`` rollouts of a GRPO group start from the
same state.

    >>> import openenv_gym
    >>> from openenv_gym.trl import environment_factory, seed_dataset
    >>> from trl import GRPOConfig, GRPOTrainer
    >>> with openenv_gym.local_server("FrozenLake-v1", env_kwargs={"is_slippery": False}) as url:  # doctest: +SKIP
    ...     FrozenLake = environment_factory(url)                   # class FrozenLake_v1, tool act(action)
    ...     trainer = GRPOTrainer(
    ...         model, args=GRPOConfig(max_tool_calling_iterations=12, ...),
    ...         train_dataset=seed_dataset(64, prompt="Walk to the goal G; call act to move."),
    ...         environment_factory=FrozenLake,
    ...     )
    ...     trainer.train()

Where the tools come from (:func:`~openenv_gym.client.tools.env_tools`):

- a server with MCP tools (openenv-gym's ``act`` / ``observe`` / ``legal_actions``, an
  upstream ``MCPEnvironment``'s own): each becomes a method, called as a ``call_tool``
  step on the instance's own ``/ws`` session, whose reply brings the env's reward and
  ``done``;
- a server without tools, or a local Gymnasium env: one ``act`` method, made from the
  env's :mod:`text view <openenv_gym.text>` (the enum of action names where there are
  names), which reads the model's action and refuses an illegal one with a message
  saying what is legal.

A refused call (an illegal action, bad arguments, an unknown tool, a call after the
episode ended) raises ``ValueError``: TRL shows its message to the model and counts it
in ``tools/failure_frequency``; the env is not stepped.

The server holds one session per instance, and TRL keeps one instance per rollout of a
generation batch: start the server with ``max_sessions`` at least the generation batch
size.
"""

from __future__ import annotations

import inspect
import keyword
import re
import weakref
from collections.abc import Callable, Mapping, Sequence
from typing import Any, ClassVar, Literal, Union

import gymnasium as gym

from ._extras import missing_extra

try:
    from datasets import Dataset
except ImportError as exc:  # pragma: no cover - depends on the install
    raise missing_extra(exc, "openenv_gym.trl", "trl") from exc

from .client.options import ConnectOptions
from .client.rollout import DEFAULT_PROMPT, Rollout, ScoreRule, scorer
from .client.tools import EnvTools, ToolSession, ToolsFrom, env_tools
from .protocol.tools import Tool

__all__ = [
    "environment_factory",
    "ToolEnvironment",
    "seed_dataset",
    "rollout_flags",
    "first_prompt_ids",
    "model_tools",
    "tool_function",
    "type_hint",
    "class_name",
    "tiny_chat_model",
]

#: Names TRL gives a meaning of its own: never tools.
RESERVED = frozenset({"reset", "get_reward"})

#: The JSON Schema keywords an argument's description spells out.
_CONSTRAINTS = (
    "minimum", "exclusiveMinimum", "maximum", "exclusiveMaximum", "minLength", "maxLength", "pattern",
    "minItems", "maxItems",
)
_JSON_TYPES: dict[str, Any] = {
    "string": str,
    "integer": int,
    "number": float,
    "boolean": bool,
    "null": type(None),
    "object": dict,
    "array": list,
}


class ToolEnvironment:
    """An env episode driven through tools, by a TRL ``GRPOTrainer`` (the base of the
    classes :func:`environment_factory` makes).

    Attributes:
        rollout: The episode so far (:class:`~openenv_gym.client.rollout.Rollout`: its
            return, last reward, steps, ``done`` and ``truncated``), what
            :meth:`get_reward` scores; ``reward``, ``done``, ``truncated`` and ``steps``
            read it.

    TRL takes every public function of the class but ``reset`` and ``get_reward`` for a
    tool: this class has no other, and the tools are added by :func:`environment_factory`.
    The connection is opened by the first :meth:`reset` (TRL makes an instance at
    start-up to read the tools, which needs none) and closed when the instance is
    garbage-collected or the interpreter exits.
    """

    #: The env's tools and how to open a session on it (set on each generated class).
    env_tools: ClassVar[EnvTools]
    #: What the model is told before the first observation of each episode (the env's
    #: :attr:`~openenv_gym.client.tools.EnvTools.instructions`; ``None``: nothing).
    instructions: ClassVar[str | None] = None
    #: What :meth:`get_reward` gives for a rollout (:func:`~openenv_gym.client.rollout.scorer`
    #: of :func:`environment_factory`'s ``score=`` and ``clip=``). Private, as TRL shows
    #: the model every public function of the class as a tool.
    _score: ClassVar[Callable[[Rollout], float]] = staticmethod(scorer())

    def __init__(self) -> None:
        self.rollout = Rollout()
        self._session: ToolSession | None = None

    @property
    def reward(self) -> float:
        """The episode's return so far (the sum of the rewards of its tool calls)."""
        return self.rollout.reward

    @property
    def done(self) -> bool:
        """Whether the episode is over; every tool then raises ``ValueError``."""
        return self.rollout.done

    @property
    def truncated(self) -> bool:
        """Whether the env's time limit ended the episode (``False`` where the server does not say)."""
        return self.rollout.truncated

    @property
    def steps(self) -> int:
        """The tool calls of the episode the env answered without an error."""
        return self.rollout.steps

    def reset(self, **row: Any) -> str:
        """Start an episode, from a dataset row: its ``seed`` (an int, else ``None``) and
        ``options`` (a dict, sent with the reset) are used, other columns ignored.

        Returns:
            The env's :attr:`instructions` and the first observation's text, each after
            a blank line: TRL appends them to the prompt's last message as they are.
        """
        seed, options = row.get("seed"), row.get("options")
        if self._session is None:
            self._session = self.env_tools.open()
            weakref.finalize(self, self._session.close)
        text = self._session.reset(
            seed=int(seed) if isinstance(seed, int) else None,
            options=options if isinstance(options, Mapping) else None,
        )
        self.rollout = Rollout()
        return "".join(f"\n\n{part}" for part in (self.instructions, text) if part)

    def get_reward(self) -> float:
        """What TRL scores the rollout with: by default the episode's return, finished or
        not (an episode the model left unfinished, :attr:`done` false, scores its return so
        far); else what :func:`environment_factory`'s ``score=`` and ``clip=`` say of
        :attr:`rollout`."""
        return type(self)._score(self.rollout)

    def _call(self, name: str, arguments: dict[str, Any]) -> str:
        if self._session is None:
            raise ValueError("no episode is running: reset() starts one")
        if self.done:
            raise ValueError("the episode is over: no tool can act on it any more")
        result = self._session.call(name, arguments)
        self.rollout.record(result)
        return result.text


def environment_factory(
    url_or_env: str | Callable[..., gym.Env],
    *,
    name: str | None = None,
    tools: ToolsFrom = "auto",
    view: Any = None,
    env_kwargs: Mapping[str, Any] | None = None,
    instructions: bool = True,
    score: ScoreRule = "return",
    clip: tuple[float, float] | None = None,
    options: ConnectOptions | None = None,
    **connect: Any,
) -> type[ToolEnvironment]:
    """A class for TRL's ``GRPOTrainer(environment_factory=...)``, with a method per tool
    of the env.

    Args:
        url_or_env: An OpenEnv server's URL, or a local Gymnasium env (its id, or a
            function that makes one).
        name: The class's name; by default the env's id made an identifier
            (``FrozenLake_v1``), which TRL's reward log is named after.
        tools: ``"server"``: the server's MCP tools; ``"client"``: an ``act`` tool made
            here from the env's text view; ``"auto"`` (the default): the server's
            when it has any.
        view: For an ``act`` made here, the text view to use (see
            :func:`~openenv_gym.text.view_for`).
        env_kwargs: For a local env, the keyword arguments that make it.
        instructions: Whether each episode's first message tells the model the env's
            instructions (the task, the observations, the actions and how to answer,
            from the env's text view or the server's) before its first observation.
        score: The reward of a rollout (:data:`~openenv_gym.client.rollout.ScoreRule`):
            ``"return"`` (the default), the episode's return, finished or not;
            ``"terminal"``, the reward of its last step if it ended, else 0 (outcome
            only); or a function of its :class:`~openenv_gym.client.rollout.Rollout`
            (``reward``, ``last_reward``, ``steps``, ``done``, ``truncated``): reward
            shaping, or a penalty for an episode left unfinished
            (``score=lambda r: r.reward if r.done else r.reward - 1``).
        clip: ``(lo, hi)``: the score is clipped into it.
        options, connect: How to connect to a server
            (:class:`~openenv_gym.client.options.ConnectOptions`, or its fields as
            keywords).

    Raises:
        ValueError: a tool whose name or arguments cannot be a Python method (a
            reserved name, an argument that is no identifier); a ``score`` or ``clip``
            that is none.
    """
    score_rollout = scorer(score, clip)
    found = env_tools(url_or_env, tools=tools, view=view, env_kwargs=env_kwargs, options=options, **connect)
    namespace: dict[str, Any] = {
        "env_tools": found,
        "instructions": found.instructions if instructions else None,
        "_score": staticmethod(score_rollout),
        "__module__": __name__,
        "__doc__": f"{found.name} through its tools ({', '.join(t.name for t in found.tools)}), for TRL.",
    }
    for tool in found.tools:
        namespace[tool.name] = tool_function(tool)
    return type(name or class_name(found.name), (ToolEnvironment,), namespace)


def tool_function(tool: Tool) -> Callable[..., str]:
    """A method calling ``tool``, with the signature, type hints and Google-style
    docstring that ``transformers.utils.get_json_schema`` (which TRL uses) turns back
    into the tool's schema: the tool's description, one typed keyword argument per
    property (required ones without a default), each described in ``Args:``.

        >>> tool = Tool("act", "Take one action.", {
        ...     "type": "object", "required": ["action"],
        ...     "properties": {"action": {"type": "string", "enum": ["left", "right"], "description": "Where to go."}}})
        >>> act = tool_function(tool)
        >>> inspect.signature(act)
        <Signature (self, *, action: Literal['left', 'right']) -> str>
        >>> print(act.__doc__)
        Take one action.
        <BLANKLINE>
        Args:
            action: Where to go.
    """
    if tool.name in RESERVED or not tool.name.isidentifier() or tool.name.startswith("_"):
        raise ValueError(
            f"the tool {tool.name!r} cannot be a method TRL calls: its name must be an identifier, not start "
            f"with '_' and not be {' or '.join(sorted(RESERVED))}"
        )
    properties = tool.input_schema.get("properties") or {}
    required = set(tool.input_schema.get("required") or ())
    parameters = [inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD)]
    lines = []
    for argument, schema in properties.items():
        if not argument.isidentifier() or keyword.iskeyword(argument) or argument == "self":
            raise ValueError(f"the tool {tool.name!r} has an argument {argument!r}, which cannot be a Python parameter")
        default = inspect.Parameter.empty if argument in required else None
        hint = type_hint(schema)
        parameters.append(inspect.Parameter(argument, inspect.Parameter.KEYWORD_ONLY, default=default, annotation=hint))
        lines.append(f"    {argument}: {_describe(argument, schema)}")
    signature = inspect.Signature(parameters, return_annotation=str)
    name = tool.name

    def call(self: ToolEnvironment, /, **arguments: Any) -> str:
        try:
            signature.bind(self, **arguments)
        except TypeError as exc:
            raise ValueError(f"{name}: {exc}") from None
        return self._call(name, arguments)

    description = _docstring_safe(tool.description, lines=True) or f"Call the environment's tool {name}."
    call.__name__ = call.__qualname__ = name
    call.__doc__ = description + ("\n\nArgs:\n" + "\n".join(lines) if lines else "")
    call.__signature__ = signature  # type: ignore[attr-defined]
    call.__annotations__ = {p.name: p.annotation for p in parameters[1:]} | {"return": str}
    return call


def type_hint(schema: Any) -> Any:
    """The Python type hint of a JSON Schema, as ``get_json_schema`` reads hints back:
    an ``enum`` (or ``const``) of scalars is a ``Literal``, ``anyOf`` / ``oneOf`` and type
    lists are ``Union``, an array is a ``list`` of its items; what has no hint
    (``$ref``, no ``type``) is ``Any``. Bounds, patterns and lengths have no hint: the
    docstring says them.

        >>> type_hint({"type": "array", "items": {"type": "integer"}})
        list[int]
        >>> type_hint({"anyOf": [{"type": "string", "enum": ["a", "b"]}, {"type": "null"}]})
        typing.Optional[typing.Literal['a', 'b']]
    """
    if not isinstance(schema, Mapping):
        return Any
    values = schema.get("enum") if isinstance(schema.get("enum"), list) else None
    if values is None and "const" in schema:
        values = [schema["const"]]
    if values and all(isinstance(v, (str, int, float, bool)) or v is None for v in values):
        return Literal.__getitem__(tuple(values))
    alternatives = schema.get("anyOf") or schema.get("oneOf")
    if isinstance(alternatives, list) and alternatives:
        return Union.__getitem__(tuple(type_hint(s) for s in alternatives))
    kind = schema.get("type")
    if isinstance(kind, list) and kind:
        return Union.__getitem__(tuple(type_hint({**schema, "type": k}) for k in kind))
    if kind == "array":
        items = schema.get("items")
        return list[type_hint(items)] if isinstance(items, Mapping) else list  # type: ignore[misc]
    return _JSON_TYPES.get(kind, Any) if isinstance(kind, str) else Any


def class_name(env_id: str) -> str:
    """An identifier made of an env id, for the class :func:`environment_factory` makes.

        >>> class_name("FrozenLake-v1"), class_name("openenv/Chess-v0"), class_name("2048-v0")
        ('FrozenLake_v1', 'openenv_Chess_v0', 'Env_2048_v0')
    """
    identifier = re.sub(r"\W", "_", env_id)
    return identifier if identifier[:1].isalpha() else f"Env_{identifier}"


def seed_dataset(
    n: int,
    prompt: str | Sequence[Mapping[str, str]] = DEFAULT_PROMPT,
    *,
    start: int = 0,
    system: str | None = None,
) -> Dataset:
    """A dataset of ``n`` rows for GRPO on an env: a conversational ``prompt`` (the same
    in every row) and a ``seed`` (``start``, ``start + 1``, ...).

    TRL's :meth:`~ToolEnvironment.reset` gets each row and appends the first
    observation to the prompt's last message. Rows of one GRPO group are one row
    repeated, so its rollouts start from the same seed: their rewards compare actions,
    not luck.

        >>> rows = seed_dataset(3, prompt="Reach the goal.", system="Be brief.")
        >>> rows[2]["seed"], rows[2]["prompt"][1]
        (2, {'role': 'user', 'content': 'Reach the goal.'})

    Args:
        n: The number of rows.
        prompt: The user message, or the whole conversation (a list of
            ``{"role", "content"}`` messages, the last one the model answers).
        start: The first seed.
        system: A system message put before a string ``prompt``.
    """
    if isinstance(prompt, str):
        messages = ([{"role": "system", "content": system}] if system else []) + [{"role": "user", "content": prompt}]
    else:
        if system is not None:
            raise TypeError("system= goes with a string prompt; put the system message in the conversation")
        messages = [dict(message) for message in prompt]
    return Dataset.from_dict({"prompt": [messages] * n, "seed": list(range(start, start + n))})


def rollout_flags() -> list[Callable[..., list[float | None]]]:
    """Two reward functions that log how each rollout's episode ended:
    ``episode_done`` (1 when the episode is over, 0 when the model left it unfinished)
    and ``episode_truncated`` (1 when the env's time limit ended it), read from the
    rollout's :class:`ToolEnvironment` (``None``, not counted, for a rollout without one).

    Give them weight 0, so they are logged and leave the reward alone: TRL logs every
    reward function as ``rewards/<name>/mean`` (here the fraction of finished, of
    truncated episodes) and per rollout in its completions table::

        GRPOTrainer(model, reward_funcs=rollout_flags(),
                    args=GRPOConfig(reward_weights=[0.0, 0.0], ...), environment_factory=FrozenLake, ...)

    (TRL adds the environment's ``get_reward`` after them, with weight 1.)

        >>> done, truncated = rollout_flags()
        >>> done.__name__, done(environments=[None], completions=["Done."])
        ('episode_done', [None])
    """

    def flag(name: str) -> Callable[..., list[float | None]]:
        def read(environments: Sequence[Any] | None = None, **_: Any) -> list[float | None]:
            return [
                float(getattr(env, name)) if isinstance(env, ToolEnvironment) else None for env in environments or ()
            ]

        read.__name__ = read.__qualname__ = f"episode_{name}"
        return read

    return [flag("done"), flag("truncated")]


def model_tools(environment: Any) -> list[Callable[..., Any]]:
    """The tools ``GRPOTrainer`` shows the model for ``environment``, in its order: the
    public functions of its class but ``reset`` and ``get_reward``, by name, bound to it.

        >>> class Env:
        ...     def reset(self, **row): return ""
        ...     def walk(self, to: str) -> str: return to
        ...     def act(self, action: str) -> str: return action
        >>> [tool.__name__ for tool in model_tools(Env())]
        ['act', 'walk']
    """
    return [
        getattr(environment, name)
        for name, _ in inspect.getmembers(type(environment), predicate=inspect.isfunction)
        if name not in ("reset", "get_reward") and not name.startswith("_")
    ]


def first_prompt_ids(environment: Any, row: Mapping[str, Any], tokenizer: Any) -> list[int]:
    """The token ids of a rollout's first prompt as ``GRPOTrainer`` renders them, for a
    warm start (supervised steps before GRPO) that trains on what GRPO will show.

    ``environment.reset(**row)`` starts the episode (as TRL calls it); its text is
    appended to the last message of the row's ``prompt``; the conversation is rendered
    by ``tokenizer``'s chat template with :func:`model_tools` and the generation prompt.
    A prompt made by hand easily differs (another tool list, the observation elsewhere),
    and a model warm-started on it writes nothing useful under GRPO's.
    """
    messages = [dict(message) for message in row["prompt"]]
    observation = environment.reset(**row)
    if observation is not None:
        messages[-1] = {**messages[-1], "content": messages[-1]["content"] + observation}
    rendered = tokenizer.apply_chat_template(
        [messages], tools=model_tools(environment) or None, add_generation_prompt=True,
        tokenize=True, return_dict=True,
    )
    return list(rendered["input_ids"][0])


def tiny_chat_model(*, hidden_size: int = 32, layers: int = 2, seed: int = 0) -> tuple[Any, Any]:
    """A tiny random Qwen2 chat model and its tokenizer, built in code (no model hub): for
    smoke tests and CPU examples of a training pipeline, not for learning anything.

    The tokenizer is byte-level BPE without merges (one token per byte) plus Qwen's
    special tokens, with TRL's Qwen 2.5 chat template, which TRL knows how to render
    and parse tool calls for.

        >>> model, tokenizer = tiny_chat_model()
        >>> tokenizer.decode(tokenizer.encode("<tool_call>hi</tool_call><|im_end|>"))
        '<tool_call>hi</tool_call><|im_end|>'

    Returns:
        ``(model, tokenizer)``: a ``Qwen2ForCausalLM`` and a ``PreTrainedTokenizerFast``.
    """
    import torch
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast, Qwen2Config, Qwen2ForCausalLM
    from trl.chat_template_utils import qwen2_5_chat_template

    byte_level = pre_tokenizers.ByteLevel(add_prefix_space=False)
    alphabet = pre_tokenizers.ByteLevel.alphabet()
    vocab = {symbol: i for i, symbol in enumerate(sorted(alphabet))}
    core = Tokenizer(models.BPE(vocab=vocab, merges=[]))
    core.pre_tokenizer = byte_level
    core.decoder = decoders.ByteLevel()
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=core, eos_token="<|im_end|>", pad_token="<|endoftext|>", bos_token=None,
        additional_special_tokens=["<|im_start|>"],
    )
    tokenizer.add_tokens(["<tool_call>", "</tool_call>", "<tool_response>", "</tool_response>"])
    tokenizer.chat_template = qwen2_5_chat_template
    torch.manual_seed(seed)
    config = Qwen2Config(
        vocab_size=len(tokenizer), hidden_size=hidden_size, intermediate_size=2 * hidden_size,
        num_hidden_layers=layers, num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=8192,
        eos_token_id=tokenizer.eos_token_id, pad_token_id=tokenizer.pad_token_id, bos_token_id=None,
    )
    return Qwen2ForCausalLM(config), tokenizer


def _describe(argument: str, schema: Mapping[str, Any]) -> str:
    """One line saying what an argument is: its description (or title), then the JSON
    Schema constraints a type hint cannot carry (bounds, lengths, a pattern).

        >>> _describe("n", {"type": "integer", "minimum": 1, "maximum": 5})
        'The n. (minimum 1, maximum 5)'
    """
    text = _docstring_safe(str(schema.get("description") or schema.get("title") or "")) or f"The {argument}."
    limits = [f"{key} {schema[key]}" for key in _CONSTRAINTS if isinstance(schema.get(key), (int, float, str))]
    return f"{text} ({', '.join(limits)})" if limits else text


def _docstring_safe(text: str, *, lines: bool = False) -> str:
    """``text`` for a Google docstring: on one line (an argument's), or with its line
    breaks (a tool's description: Taxi's map stays a map), each line stripped; the words
    that would start a section (``Args:``) are defused.

        >>> print(_docstring_safe("  The map:\\n  +--+\\n  |R:|\\nArgs: none", lines=True))
        The map:
        +--+
        |R:|
        Args - none
    """
    kept = "\n".join(line.strip() for line in text.strip().splitlines()) if lines else " ".join(text.split())
    return re.sub(r"\b(Args|Returns|Raises):", r"\1 -", kept)
