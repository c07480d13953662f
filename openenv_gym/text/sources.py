"""Where a view comes from: :func:`view_for` an env object (server side, or any local env),
:func:`view_for_spaces` its spaces and id (a remote client's knowledge).

Sources, first match wins, for each part of a view:

1. a view the user gives (``view=``);
2. the env's own methods: ``render_text()`` describes its state (the observation
   text), ALE-style ``get_action_meanings()`` names its actions;
3. the built-in table (:mod:`openenv_gym.text.table`), found by the env's id (its
   ``spec.id``, a :class:`~openenv_gym.RemoteEnv`'s ``contract.env_id``, PettingZoo's
   ``metadata["name"]``) or its class;
4. an ``ansi`` render (escape codes stripped) as the observation text;
5. the defaults of its spaces (:mod:`openenv_gym.text.values`).

A ``RemoteEnv(url, text=True)`` receives each observation's text from its server, whose
view has the env itself: its view (:class:`~openenv_gym.text.view.ServedTextView`) shows
that text, and takes the rest (actions, names, legality, ``describe``) from the sources
above.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Any

from gymnasium import spaces as gs
from gymnasium.envs.registration import parse_env_id

from .table import UNKNOWN, BuiltinView, builtin_view
from .view import ServedTextView, TextView

__all__ = ["view_for", "view_for_spaces", "env_key", "strip_ansi"]

_ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]")
_BLANK_START = re.compile(r"\A(?:[ \t]*\n)+")


def env_key(env_id: str) -> str:
    """The table key of an env id: without its version (Gymnasium's ``-v1``, PettingZoo's
    ``_v3``), with its namespace.

        >>> env_key("FrozenLake-v1"), env_key("openenv/Chess-v0"), env_key("connect_four_v3")
        ('FrozenLake', 'openenv/Chess', 'connect_four')
    """
    key = env_id
    try:
        namespace, name, _ = parse_env_id(env_id)
        key = f"{namespace}/{name}" if namespace else name
    except Exception:  # not a Gymnasium id (PettingZoo names, free-form ids): keep it as it is
        pass
    return re.sub(r"_v\d+$", "", key)


def strip_ansi(text: str) -> str:
    """``text`` without terminal escape codes (FrozenLake marks its agent with colours).

        >>> strip_ansi("\\x1b[41mS\\x1b[0mFFF")
        'SFFF'
    """
    return _ANSI.sub("", text)


def view_for_spaces(
    observation_space: gs.Space,
    action_space: gs.Space,
    *,
    env_id: str | None = None,
    names: Sequence[str] | None = None,
) -> TextView:
    """The view of an env known by its spaces and id only, as a remote client knows it
    (:class:`~openenv_gym.RemoteEnv` has ``observation_space``, ``action_space`` and,
    for openenv-gym servers, ``contract.env_id``): the built-in table's entry for
    ``env_id`` where there is one, with ``names`` for the actions if given.

        >>> from gymnasium import spaces
        >>> view = view_for_spaces(spaces.Discrete(16), spaces.Discrete(4), env_id="FrozenLake-v1")
        >>> print(view.obs_to_text(6))
        position: row 1, column 2 (cell 6)
        >>> view.parse_action('{"action": "RIGHT"}')
        2
    """
    entry = builtin_view(env_key(env_id)) if env_id else None
    return (entry or UNKNOWN).view(observation_space, action_space, env_id=env_id, action_names=names)


def view_for(env: Any, view: Any = None, *, agent: str | None = None, env_id: str | None = None) -> Any:
    """The view of ``env``: a Gymnasium env (wrapped or not, a
    :class:`~openenv_gym.RemoteEnv` too) or a PettingZoo env (the view of ``agent``,
    the first possible agent by default). See the module docstring for the sources.

    ``env_id`` is the env's id where the env itself does not say it (a stock server's
    ``/metadata`` name, for a :class:`~openenv_gym.RemoteEnv` of it).

    ``view`` is a view to use as it is (a :class:`~openenv_gym.text.TextView`, or any
    object with its methods) or a function that makes one from ``env``; a server calls
    this once per session, so give a function where views must not be shared.

        >>> import gymnasium as gym
        >>> env = gym.make("CartPole-v1")
        >>> obs, info = env.reset(seed=0)
        >>> view = view_for(env)
        >>> print(view.obs_to_text(obs))
        cart position: 0.0137
        cart velocity: -0.02302
        pole angle: -0.0459 rad
        pole angular velocity: -0.04835 rad/s
        >>> view.parse_action("push left")  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        openenv_gym.errors.ActionParseError: ... 'push left': ..., not an action name; legal: one of left, right ...
    """
    if view is not None:
        return view if callable(getattr(view, "parse_action", None)) and not isinstance(view, type) else view(env)
    observation_space, action_space = _spaces(env, agent)
    core = getattr(env, "unwrapped", env)
    ids = _ids(env, core) + ([env_id] if env_id else [])
    entry = _entry([*(env_key(i) for i in ids), f"{type(core).__module__}.{type(core).__qualname__}"])
    meanings = getattr(core, "get_action_meanings", None)
    render_text = getattr(core, "render_text", None)
    served_text = getattr(core, "served_text", None)
    view = entry.view(
        observation_space,
        action_space,
        env=env,
        env_id=ids[0] if ids else None,
        action_names=list(meanings()) if callable(meanings) else None,
        render=render_text if callable(render_text) else None,
        ansi=_ansi(env) if getattr(env, "render_mode", None) == "ansi" else None,
    )
    asked = getattr(core, "text", False) is True  # a RemoteEnv(text=True): the server writes the text
    return ServedTextView(view, served_text) if asked and callable(served_text) else view


def _spaces(env: Any, agent: str | None) -> tuple[gs.Space, gs.Space]:
    if callable(getattr(env, "observation_space", None)):  # PettingZoo: spaces per agent
        agent = agent if agent is not None else env.possible_agents[0]
        return env.observation_space(agent), env.action_space(agent)
    return env.observation_space, env.action_space


def _ids(env: Any, core: Any) -> list[str]:
    spec = getattr(env, "spec", None)
    candidates = [
        getattr(spec, "id", None),
        getattr(getattr(core, "contract", None), "env_id", None),  # a RemoteEnv of an openenv-gym server
        (getattr(env, "metadata", None) or {}).get("name"),  # PettingZoo, and its served seats
    ]
    return [c for c in candidates if isinstance(c, str) and c]


def _entry(keys: list[str]) -> BuiltinView:
    for key in keys:
        entry = builtin_view(key)
        if entry is not None:
            return entry
    return UNKNOWN


def _ansi(env: Any) -> Callable[[], str | None]:
    def render() -> str | None:
        out = env.render()
        text = out.getvalue() if hasattr(out, "getvalue") else out
        return _BLANK_START.sub("", strip_ansi(text).rstrip()) if isinstance(text, str) else None

    return render
