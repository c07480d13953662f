"""One catalog id and everything needed to make it: :class:`CatalogEntry`."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from gymnasium.envs.registration import load_env_creator

from ..errors import OpenEnvGymError

__all__ = ["CatalogEntry", "Setting", "import_path"]


def import_path(path: str) -> Any:
    """The object at ``"module:attribute"`` (a server factory or a view's wrapper)."""
    return load_env_creator(path)


class Setting(NamedTuple):
    """A ``gym.make`` keyword that configures the server: the built-in server's keyword
    argument it becomes, the environment variable upstream's ``server/app.py`` reads for it
    (set for an upstream package started with ``package=``), and the value a server this
    catalog starts gets when the keyword is not given (``None``: the server's own default)."""

    argument: str
    env_var: str
    default: Any = None


@dataclass(frozen=True)
class CatalogEntry:
    """One catalog id and everything needed to make it.

    ``upstream`` is the env's package in upstream OpenEnv's ``envs/``; ``server`` the
    ``"module:Class"`` path of the built-in server env (``None`` when the env needs a server
    you run); ``requires`` the modules it imports and ``extra`` the extra that installs them;
    ``views`` maps the names of the ways the env can look to the agent (``gym.make``'s
    ``view=``) to ``"module:Wrapper"`` paths (``"raw"`` is always there and means the plain
    :class:`~openenv_gym.RemoteEnv`); ``default_view`` is the one ``gym.make`` picks.

    ``observation_fields`` / ``action_fields`` are the exact view of upstream's schema the
    ``raw`` view uses: per-field overrides of what a client infers
    (:func:`~openenv_gym.spaces.infer_view`; JSON Schemas of the fields, ``...`` or
    ``None``), written from upstream's models and checked against captures of its servers.
    ``settings`` are the ``gym.make`` keywords that configure the server
    (``gym.make("openenv/Atari-v0", game="breakout")``).
    """

    name: str
    upstream: str
    description: str
    server: str | None = None
    requires: tuple[str, ...] = ()
    extra: str | None = None
    views: dict[str, str] = field(default_factory=dict)
    default_view: str = "raw"
    observation_fields: Mapping[str, Any] = field(default_factory=dict)
    action_fields: Mapping[str, Any] = field(default_factory=dict)
    settings: Mapping[str, Setting] = field(default_factory=dict)

    @property
    def id(self) -> str:
        return f"openenv/{self.name}-v0"

    @property
    def env_var(self) -> str:
        """The environment variable that points the id at a running server."""
        return f"OPENENV_{self.name.upper()}_URL"

    def server_source(self) -> str:
        """Where ``gym.make(self.id)`` (without ``base_url=``) gets its server now."""
        if url := os.environ.get(self.env_var):
            return f"${self.env_var} = {url}"
        if self.server is not None:
            return f"embedded: built-in server ({', '.join(self.requires) or 'no extra packages'})"
        return f"none built in: pass base_url=, package= or set ${self.env_var}"

    def builtin_server(self) -> Any:
        """The built-in server env class (raises if the entry has none)."""
        if self.server is None:
            raise OpenEnvGymError(
                f"{self.id} has no built-in server: run an OpenEnv {self.upstream} server and pass "
                f"base_url= (or set ${self.env_var}), or pass package= the directory of upstream's "
                f"envs/{self.upstream} to start it here"
            )
        try:
            return import_path(self.server)
        except ImportError as exc:
            if self.extra is None:
                raise
            raise ImportError(
                f"{self.id}'s built-in server needs {exc.name or exc}: pip install 'openenv-gym[{self.extra}]'"
            ) from exc

    def schema(self) -> dict | None:
        """The built-in server's ``/schema`` document (``None`` without a built-in server)."""
        return None if self.server is None else self.builtin_server().schema_document()

    def view(self) -> dict[str, Any]:
        """The :class:`~openenv_gym.RemoteEnv` keywords of the exact view (the ``raw`` view)."""
        return {"observation_fields": dict(self.observation_fields), "action_fields": dict(self.action_fields)}
