"""Stable-Baselines3 on remote envs: a :class:`~openenv_gym.RemoteVectorEnv` as an SB3 ``VecEnv``.

    >>> import openenv_gym
    >>> from openenv_gym.sb3 import RemoteVecEnv
    >>> from stable_baselines3 import PPO
    >>> with openenv_gym.local_server("CartPole-v1") as url:       # doctest: +SKIP
    ...     venv = RemoteVecEnv(url, num_envs=8)
    ...     PPO("MlpPolicy", venv).learn(10_000)
    ...     venv.close()

SB3 has its own vector API: ``reset()`` returns observations only (infos go
to ``reset_infos``; seeds and options are set beforehand with ``seed()`` and
``set_options()``), ``step`` returns ``(obs, rewards, dones, infos)`` with a
list of info dicts, and a finished env is reset in the same step, its last
observation in ``infos[i]["terminal_observation"]`` and
``infos[i]["TimeLimit.truncated"]`` telling a time limit from a true end.
:class:`RemoteVecEnv` runs the remote envs with Gymnasium's same-step
autoreset, which is exactly that, and converts the rest.

Single envs need no adapter: SB3 accepts a :class:`~openenv_gym.RemoteEnv`
(or ``gym.make("openenv/...")``) directly, and its ``check_env`` passes on one.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from gymnasium.vector import AutoresetMode

from ._extras import missing_extra

try:
    from stable_baselines3.common.vec_env.base_vec_env import VecEnv, VecEnvIndices
except ImportError as exc:  # pragma: no cover - depends on the install
    raise missing_extra(exc, "openenv_gym.sb3", "sb3") from exc

from .client.vector import RemoteVectorEnv

__all__ = ["RemoteVecEnv", "unbatch_infos"]


def unbatch_infos(infos: dict[str, Any], num_envs: int) -> list[dict[str, Any]]:
    """Gymnasium's vector info dict (arrays plus ``_key`` masks) as one dict per env.

        >>> unbatch_infos({"x": np.array([1, 2]), "_x": np.array([True, False])}, 2)
        [{'x': 1}, {}]
    """
    out: list[dict[str, Any]] = [{} for _ in range(num_envs)]
    for key, values in infos.items():
        if key.startswith("_") and key[1:] in infos:
            continue
        mask = infos.get(f"_{key}")
        per_env = unbatch_infos(values, num_envs) if isinstance(values, dict) else values
        for i in range(num_envs):
            if mask is None or mask[i]:
                value = per_env[i]
                out[i][key] = value.item() if isinstance(value, np.generic) else value
    return out


class RemoteVecEnv(VecEnv):
    """SB3's ``VecEnv`` over a :class:`~openenv_gym.RemoteVectorEnv`.

    Args:
        venv_or_url: a ``RemoteVectorEnv`` created with
            ``autoreset_mode="SameStep"``, or server URL(s) to create one with.
        **vector_kwargs: for the ``RemoteVectorEnv`` when given URLs
            (``num_envs``, ``mode``, ``encoding``, ...).

    ``env_method``, ``get_attr``, ``set_attr`` and ``env_is_wrapped`` go to the
    remote envs (openenv-gym servers, both modes: the stock ``/ws`` protocol has
    no such messages) and reach the envs ``indices`` names only;
    ``env_is_wrapped(Monitor)`` asks each env's server whether the env it serves
    is wrapped in ``Monitor`` (or a subclass), by the class's import path.
    """

    def __init__(self, venv_or_url: RemoteVectorEnv | str | Sequence[str], **vector_kwargs: Any) -> None:
        if isinstance(venv_or_url, RemoteVectorEnv):
            if vector_kwargs:
                raise TypeError("keyword arguments are for a RemoteVectorEnv this adapter creates")
            venv = venv_or_url
        else:
            venv = RemoteVectorEnv(venv_or_url, autoreset_mode=AutoresetMode.SAME_STEP, **vector_kwargs)
        mode = venv.metadata.get("autoreset_mode")
        if mode != AutoresetMode.SAME_STEP:
            raise ValueError(
                f"SB3 needs same-step autoreset, and this RemoteVectorEnv runs {mode}: create it "
                f"with RemoteVectorEnv(..., autoreset_mode='SameStep')"
            )
        self.venv = venv
        self._actions: Any = None
        super().__init__(venv.num_envs, venv.single_observation_space, venv.single_action_space)
        self.render_mode = venv.render_mode

    def reset(self) -> Any:
        """Reset every env with its seed and options (``seed()``, ``set_options()``).

        Envs of different options (``set_options([...])``) are reset in groups:
        all of them with the first env's options, then each other group again,
        with its own options and the same seeds, by a masked reset; a seeded env
        so ends exactly as one seeded reset with its options leaves it."""
        seeds = self._seeds if any(seed is not None for seed in self._seeds) else None
        groups: list[dict] = []
        for options in self._options:
            if (options or {}) not in groups:
                groups.append(options or {})
        obs, infos = self.venv.reset(seed=seeds, options=groups[0] or None)
        self.reset_infos = unbatch_infos(infos, self.num_envs)
        for options in groups[1:]:
            mask = np.array([(o or {}) == options for o in self._options])
            obs, infos = self.venv.reset(seed=seeds, options={**options, "reset_mask": mask})
            for i, info in enumerate(unbatch_infos(infos, self.num_envs)):
                if mask[i]:
                    self.reset_infos[i] = info
        self._reset_seeds()
        self._reset_options()
        return obs

    def step_async(self, actions: Any) -> None:
        self._actions = actions  # an array, or a list of one action per env (Dict, Tuple)

    def step_wait(self) -> tuple[Any, np.ndarray, np.ndarray, list[dict[str, Any]]]:
        obs, rewards, terminations, truncations, infos = self.venv.step(self._actions)
        dones = np.logical_or(terminations, truncations)
        per_env = unbatch_infos(infos, self.num_envs)
        for i in np.flatnonzero(dones):
            info = per_env[i]
            final_info = info.pop("final_info", {})
            info.update(final_info)
            info["terminal_observation"] = info.pop("final_obs")
            info["TimeLimit.truncated"] = bool(truncations[i] and not terminations[i])
        return obs, np.asarray(rewards, dtype=np.float32), dones, per_env

    def close(self) -> None:
        self.venv.close()

    def get_attr(self, attr_name: str, indices: VecEnvIndices = None) -> list[Any]:
        if attr_name == "render_mode":  # SB3 asks at start; the vector env knows it in every mode
            return [self.venv.render_mode for _ in self._get_indices(indices)]
        return list(self.venv.get_attr(attr_name, indices=self._indices(indices)))

    def set_attr(self, attr_name: str, value: Any, indices: VecEnvIndices = None) -> None:
        indices = self._indices(indices)
        count = self.num_envs if indices is None else len(indices)
        self.venv.set_attr(attr_name, [value] * count, indices=indices)

    def env_method(self, method_name: str, *method_args: Any, indices: VecEnvIndices = None,
                   **method_kwargs: Any) -> list[Any]:
        return list(self.venv.call_at(list(self._get_indices(indices)), method_name, *method_args, **method_kwargs))

    def env_is_wrapped(self, wrapper_class: type, indices: VecEnvIndices = None) -> list[bool]:
        return list(self.venv.is_wrapped(wrapper_class, indices=self._indices(indices)))

    def _indices(self, indices: VecEnvIndices) -> list[int] | None:
        """SB3's ``indices`` (``None``, an int, or a list) as the vector env's (``None``: every env)."""
        return None if indices is None else list(self._get_indices(indices))

    def get_images(self) -> Sequence[np.ndarray | None]:
        frames = self.venv.render()
        return list(frames) if frames is not None else [None] * self.num_envs
