"""Gymnasium's own checkers on every registered env that builds here, each
served by a real server on 127.0.0.1 and reached through a
:class:`~openenv_gym.RemoteEnv`:

- ``check_env`` (``gymnasium.utils.env_checker``) passes on the remote env;
- the passive checker (``PassiveEnvChecker``, which ``gym.make`` applies)
  says the same about the remote env as about the local one;
- ``check_environments_match`` (``gymnasium.utils.env_match``) finds the
  remote env and a local one of the same id step for step identical.

Ids whose env needs what is not installed here (MuJoCo, Box2D, jax, ...) are
skipped with Gymnasium's own message. Jax envs are served through
``JaxToNumpy``, and compared with a local env wrapped the same way.

ale-py registers 352 ids for its 104 games, each game in several flavours (``ALE/Pong-v5``,
``Pong-v0``, ``Pong-v4``, ``PongNoFrameskip-v0``, ``PongNoFrameskip-v4``), all served by the
one code path: by default every flavour of :data:`ATARI_GAMES` runs, and the other games are
marked ``atari_sweep`` (two thirds of this file's time; ``pytest -m atari_sweep`` runs them).
"""

from __future__ import annotations

import contextlib
import warnings
from collections.abc import Iterator

import gymnasium as gym
import pytest
from gymnasium.utils.env_checker import check_env
from gymnasium.utils.env_match import check_environments_match
from gymnasium.wrappers import PassiveEnvChecker

import openenv_gym

try:  # ale-py's ids, registered here whether or not another test module imported it first
    import ale_py
except ImportError:
    pass
else:
    gym.register_envs(ale_py)

#: Steps compared by ``check_environments_match`` (several episodes of the short envs).
MATCH_STEPS = 60
#: Ids not served: Shimmy's adapters of other ids, and this project's own
#: ``openenv/`` ids (clients of servers, tested in tests/catalog).
_NOT_SERVED = ("GymV21Environment-v0", "GymV26Environment-v0")
#: The Atari games whose every registered flavour runs by default (one with a two-action
#: paddle, one with a FIRE to launch the ball); the others are marked ``atari_sweep``.
ATARI_GAMES = ("Pong", "Breakout")


def registered_ids() -> list[str]:
    """Every id of Gymnasium's registry with an env entry point."""
    return sorted(
        env_id for env_id, spec in gym.registry.items()
        if spec.entry_point is not None and env_id not in _NOT_SERVED and spec.namespace != "openenv"
    )


def _atari_game(env_id: str) -> str | None:
    """The game of an ale-py id (``pong`` for ``ALE/Pong-v5`` or ``Pong-ramNoFrameskip-v4``),
    ``None`` for any other id."""
    spec = gym.registry[env_id]
    if "ale_py" not in str(spec.entry_point):
        return None
    return spec.kwargs.get("game")


def checked_ids() -> list:
    """:func:`registered_ids`, the Atari games outside :data:`ATARI_GAMES` marked ``atari_sweep``."""
    sweep = pytest.mark.atari_sweep
    return [
        pytest.param(env_id, marks=sweep) if _atari_game(env_id) not in (None, *map(str.lower, ATARI_GAMES))
        else env_id
        for env_id in registered_ids()
    ]


def _local(env_id: str) -> gym.Env:
    try:
        return gym.make(env_id, disable_env_checker=True)
    except (gym.error.DependencyNotInstalled, ImportError) as exc:
        pytest.skip(f"{env_id}: {exc}")


@contextlib.contextmanager
def served(env_id: str) -> Iterator[tuple[gym.Env, openenv_gym.RemoteEnv]]:
    """A local env of ``env_id`` and a remote one, served on 127.0.0.1."""
    local = _local(env_id)
    try:
        with openenv_gym.local_server(env_id) as url:
            remote = openenv_gym.RemoteEnv(url, encoding="msgpack")
            try:
                yield local, remote
            finally:
                remote.close()
    finally:
        local.close()


@pytest.mark.parametrize("env_id", checked_ids())
def test_gymnasium_checkers_on_the_remote_env(env_id):
    with served(env_id) as (local, remote):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # check_env's advice is about the env, local or not
            check_env(remote, skip_render_check=True)
        assert _passive_warnings(remote) == _passive_warnings(_as_served(local.unwrapped))
        check_environments_match(
            _as_served(local), remote, num_steps=MATCH_STEPS, seed=3, info_comparison="equivalence"
        )


def _as_served(env: gym.Env) -> gym.Env:
    """``env`` as a server serves it: a jax env (``phys2d/``, ``tabular/``) through ``JaxToNumpy``."""
    if not env.metadata.get("jax"):
        return env
    from gymnasium.wrappers import JaxToNumpy

    return JaxToNumpy(env)


def _passive_warnings(env: gym.Env) -> list[str]:
    """What the passive checker warns about ``env`` over a seeded reset and a few steps."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        checked = PassiveEnvChecker(env)
        checked.reset(seed=0)
        checked.action_space.seed(0)
        for _ in range(3):
            checked.step(checked.action_space.sample())
    return sorted({str(w.message) for w in caught})
