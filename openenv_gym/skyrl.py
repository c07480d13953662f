"""SkyRL's text envs on any OpenEnv server (or local Gymnasium env), with no code per env.

:class:`TextEnv` is a ``skyrl_gym`` ``BaseTextEnv``: each turn the model's whole reply
is read as an action by the env's :mod:`text view <openenv_gym.text>` (a bare value,
JSON, fenced JSON or ``<action>...</action>`` in free text), the env steps, and the next
user message is the new observation as text with the step's reward. A reply with no
action the view can read, or an illegal one, does not step the env: the next message
says what was wrong and what is legal, and the turn scores 0.

SkyRL makes envs from its registry with ``env_config`` (the run's config for the env)
and ``extras`` (the dataset row's): the server's URL comes from ``url=`` (registered
``kwargs``) or ``env_config["url"]``, the episode's seed from ``extras["seed"]``.

    >>> import skyrl_gym
    >>> skyrl_gym.register("frozen_lake", entry_point="openenv_gym.skyrl:TextEnv",
    ...                    kwargs={"url": "http://127.0.0.1:8000", "max_turns": 20})  # doctest: +SKIP
    >>> env = TextEnv(url="FrozenLake-v1", env_kwargs={"is_slippery": False}, extras={"seed": 0})
    >>> prompt, _ = env.init([{"role": "user", "content": "Reach G."}])
    >>> print(prompt[-1]["content"])  # doctest: +ELLIPSIS
    Reach G.
    <BLANKLINE>
    FrozenLake: walk from the start S to the goal G over a frozen lake without falling into a hole H. ...
    Actions: left (move left), down (move down), right (move right), up (move up) (or their numbers 0 to 3)
    Answer with one action, ...
    <BLANKLINE>
    position: row 0, column 0 (cell 0)
    map (* = you):
    *FFF
    FHFH
    FFFH
    HFFG
    >>> out = env.step("I will go <action>right</action>")
    >>> out["reward"], out["done"], out["observations"][0]["content"].splitlines()[0]
    (0.0, False, 'position: row 0, column 1 (cell 1)')
    >>> print(env.step("fly")["observations"][0]["content"])  # doctest: +ELLIPSIS
    That is not an action here: cannot read an action from 'fly': ...
    >>> env.close()
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import gymnasium as gym

from ._extras import missing_extra

try:
    from skyrl_gym.envs.base_text_env import BaseTextEnv, BaseTextEnvStepOutput
except ImportError as exc:  # pragma: no cover - depends on the install
    raise missing_extra(exc, "openenv_gym.skyrl", "skyrl") from exc

from .client.rollout import Rollout, ScoreRule, scorer
from .client.tools import view_session
from .errors import ToolCallError

__all__ = ["TextEnv"]


class TextEnv(BaseTextEnv):
    """A served (or local) Gymnasium env as SkyRL's ``BaseTextEnv``.

    Args:
        env_config: SkyRL's config for the env; its ``url`` (and ``max_turns``) are
            used when not given as keywords.
        extras: The dataset row's extras; its ``seed`` seeds the episode.
        url: An OpenEnv server's URL, or a local Gymnasium env (its id, or a function
            making one).
        max_turns: The episode ends after this many turns, whatever the env says.
        view: The text view to use (see :func:`~openenv_gym.text.view_for`).
        env_kwargs: For a local env, the keyword arguments that make it.
        instructions: Whether the first message tells the model the env's instructions
            (the task, the observations, the actions and how to answer: a served env's
            own, as its server's view writes them and TRL's classes show them, else its
            text view's :meth:`~openenv_gym.text.TextView.describe`) before the first
            observation.
        score: What the rollout scores (:data:`~openenv_gym.client.rollout.ScoreRule`):
            ``"return"`` (the default) gives each turn the env's reward for it; any other
            rule (``"terminal"``: the last step's reward if the episode ended, else 0; a
            function of the :class:`~openenv_gym.client.rollout.Rollout`), or a ``clip``,
            gives every turn 0 and the last one the rollout's score.
        clip: ``(lo, hi)``: the rollout's score is clipped into it.
        connect: How to connect to a server (fields of
            :class:`~openenv_gym.client.options.ConnectOptions`).

    Each step's ``metadata`` says whether the reply was ``illegal`` and whether the episode
    is over (``done``, by the env, not by ``max_turns``) and ``truncated`` (by the env's
    time limit); :meth:`get_metrics` gives the same of the episode with its turns and
    return (SkyRL averages them: the fraction of finished, of truncated episodes).
    """

    def __init__(
        self,
        env_config: Mapping[str, Any] | None = None,
        extras: Mapping[str, Any] | None = None,
        *,
        url: str | Callable[..., gym.Env] | None = None,
        max_turns: int | None = None,
        view: Any = None,
        env_kwargs: Mapping[str, Any] | None = None,
        instructions: bool = True,
        score: ScoreRule = "return",
        clip: tuple[float, float] | None = None,
        **connect: Any,
    ) -> None:
        super().__init__()
        config = env_config or {}
        target = url if url is not None else config.get("url")
        if target is None:
            raise TypeError("TextEnv needs the env: url= (a server's URL or a Gymnasium env), or env_config['url']")
        self.max_turns = int(max_turns if max_turns is not None else config.get("max_turns", 100))
        seed = (extras or {}).get("seed")
        self.seed = int(seed) if isinstance(seed, int) else None
        self.session = view_session(target, view=view, env_kwargs=env_kwargs, **connect)
        self.instructions = instructions
        self._score = scorer(score, clip)
        self._per_turn = score == "return" and clip is None
        self.rollout = Rollout()

    def init(self, prompt: list[dict[str, str]]) -> tuple[list[dict[str, str]], dict[str, Any]]:
        """Reset the env; the env's instructions and the first observation's text end the
        prompt's last user message (or are a user message of their own)."""
        text = self.session.reset(seed=self.seed)
        if self.instructions and (instructions := self.session.instructions):
            text = f"{instructions}\n\n{text}"
        self.turns, self.rollout = 0, Rollout()
        messages = [dict(message) for message in prompt]
        if messages and messages[-1].get("role") == "user":
            messages[-1]["content"] = f"{messages[-1]['content']}\n\n{text}"
        else:
            messages.append({"role": "user", "content": text})
        return messages, {}

    def step(self, action: str) -> BaseTextEnvStepOutput:
        """One turn: ``action`` is the model's whole reply."""
        self.turns += 1
        out_of_turns = self.turns >= self.max_turns
        try:
            result = self.session.act(action)
        except ToolCallError as exc:
            reply = f"That is not an action here: {exc.message}"
            return self._turn([] if out_of_turns else [{"role": "user", "content": reply}], 0.0, out_of_turns, True)
        self.rollout.record(result)
        done = result.done or out_of_turns
        observations = [] if done else [{"role": "user", "content": result.text}]
        return self._turn(observations, result.reward or 0.0, done, False)

    def _turn(
        self, observations: list[dict[str, str]], reward: float, done: bool, illegal: bool
    ) -> BaseTextEnvStepOutput:
        """A turn's output: the env's ``reward`` for it, or under another score rule 0 and,
        on the last turn, the rollout's score."""
        if not self._per_turn:
            reward = self._score(self.rollout) if done else 0.0
        metadata = {"illegal": illegal, "done": self.rollout.done, "truncated": self.rollout.truncated}
        return BaseTextEnvStepOutput(observations=observations, reward=reward, done=done, metadata=metadata)

    def get_metrics(self) -> dict[str, Any]:
        """The episode's turns, return, and whether it is over and truncated (by the env)."""
        return {
            "turns": self.turns, "episode_return": self.rollout.reward,
            "done": self.rollout.done, "truncated": self.rollout.truncated,
        }

    def close(self) -> None:
        self.session.close()
