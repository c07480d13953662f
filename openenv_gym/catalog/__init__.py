"""The OpenEnv catalog: ``openenv/<Name>-v0`` ids for OpenEnv hub environments.

    >>> import gymnasium as gym
    >>> import openenv_gym
    >>> env = gym.make("openenv/Chess-v0")                       # doctest: +SKIP
    >>> env = gym.make("openenv/Chess-v0", view="raw")           # doctest: +SKIP
    >>> env = gym.make("openenv/Chess-v0", base_url="http://127.0.0.1:8000")  # doctest: +SKIP
    >>> [entry.id for entry in openenv_gym.list_envs()][:2]
    ['openenv/Chess-v0', 'openenv/Connect4-v0']

Where the server comes from, first match wins:

1. the ``base_url=`` keyword of ``gym.make``, or ``package=``: the directory of upstream's
   own package (``OpenEnv/envs/maze_env``), started here by its app as its Dockerfile would,
   without Docker (``python=`` the interpreter with its dependencies; the entry's settings
   become the environment variables its app reads), stopped with the env;
2. the entry's environment variable (``OPENENV_CHESS_URL`` for Chess, see
   :func:`list_envs` or ``openenv-gym list``);
3. an embedded server started on 127.0.0.1 in a child process from the
   built-in implementation (entries that have one), which lives exactly as
   long as the env: ``close()`` stops it, and so do interpreter exit and the
   death of the owning process (see :mod:`~openenv_gym.catalog.embedded`).
   ``server_kwargs=`` configures it (Chess: ``{"opponent": None}`` for
   self-play), and so do the entry's settings, named as upstream's app names
   them (``gym.make("openenv/Atari-v0", game="breakout")``,
   ``gym.make("openenv/OpenSpiel-v0", game="tic_tac_toe")``).

``view=`` picks how the env looks to the agent. ``"raw"`` is the server's named
fields through the entry's exact view of upstream's schema
(:attr:`CatalogEntry.observation_fields` / ``action_fields`` over what
:func:`~openenv_gym.spaces.infer_view` infers: ``Discrete(4)`` for the maze's
moves with ``info["action_mask"]``, an ``(8, 2)`` board ...); other views wrap
it (Chess: ``"alphazero"``, its default, :mod:`~openenv_gym.catalog.alphazero`). The other keywords of ``gym.make`` go
to :class:`~openenv_gym.RemoteEnv` (``observation_fields=`` / ``action_fields=``
override the view field by field).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

import gymnasium as gym
from gymnasium.vector import AutoresetMode, SyncVectorEnv, VectorEnv, VectorWrapper

from ..client.remote_env import RemoteEnv
from ..client.vector import RemoteVectorEnv
from ..errors import OpenEnvGymError
from .entry import CatalogEntry, Setting, import_path
from .table import CATALOG

__all__ = ["CatalogEntry", "Setting", "CATALOG", "list_envs", "get", "make", "register_catalog"]

_BY_NAME = {entry.name.lower(): entry for entry in CATALOG}


def list_envs() -> list[CatalogEntry]:
    """Every catalog entry: ``id``, ``upstream`` env, ``server_source()``, views."""
    return list(CATALOG)


def get(name: str) -> CatalogEntry:
    """The entry for ``name`` (``"Chess"``, ``"chess"`` or ``"openenv/Chess-v0"``)."""
    key = name.removeprefix("openenv/").removesuffix("-v0").lower()
    try:
        return _BY_NAME[key]
    except KeyError:
        known = ", ".join(entry.id for entry in CATALOG)
        raise OpenEnvGymError(f"no catalog env {name!r}; known: {known}") from None


class EmbeddedRemoteEnv(RemoteEnv):
    """A :class:`~openenv_gym.RemoteEnv` that owns the embedded server it talks to."""

    def __init__(self, server: Any, **kwargs: Any) -> None:
        self.server = server
        try:
            super().__init__(server.url, **kwargs)
        except BaseException:
            server.stop()
            raise

    def close(self) -> None:
        """End the session, then stop the embedded server."""
        try:
            super().close()
        finally:
            self.server.stop()


def _view(entry: CatalogEntry, view: str | None) -> str:
    """The name of the view ``view=`` picks (the entry's default when not given)."""
    view = view or entry.default_view
    if view != "raw" and view not in entry.views:
        choices = ", ".join(["raw", *entry.views])
        raise OpenEnvGymError(f"{entry.id} has no view {view!r}; choose one of {choices}")
    return view


def _configure(entry: CatalogEntry, keywords: dict[str, Any]) -> dict[str, Any]:
    """The values of ``entry``'s settings among ``keywords`` (removed from them)."""
    return {key: keywords.pop(key) for key in list(keywords) if key in entry.settings}


#: Seconds an upstream package started by ``package=`` may take to answer (openenv's import alone takes a few).
PACKAGE_STARTUP_S = 120.0


def _server(
    entry: CatalogEntry,
    base_url: str | None,
    server_kwargs: dict[str, Any] | None,
    settings: Mapping[str, Any],
    sessions: int,
    package: str | os.PathLike[str] | None = None,
    python: str | None = None,
) -> tuple[str, Any]:
    """``(url, server we started or None)``: ``base_url``, else upstream's ``package`` started
    here, else the env var, else a freshly started embedded server holding at least
    ``sessions`` sessions, configured by ``server_kwargs`` and the entry's ``settings``."""
    if package is not None:
        if base_url or server_kwargs:
            raise OpenEnvGymError(
                f"package= starts upstream's {entry.upstream} here: drop base_url= (a server running elsewhere) and "
                f"server_kwargs= (the built-in server's); {', '.join(entry.settings) or 'its app'} configure it"
            )
        return _package_server(entry, package, python, settings, sessions)
    if python is not None:
        raise OpenEnvGymError("python= is the interpreter that runs upstream's package: pass package= too")
    url = base_url or os.environ.get(entry.env_var)
    if url:
        given = [*(["server_kwargs"] if server_kwargs else []), *settings]
        if given:
            raise OpenEnvGymError(
                f"{', '.join(given)} configure the embedded server, but {entry.id} uses the server at "
                f"{url}: configure that server where it runs, or drop base_url / ${entry.env_var}"
            )
        return url, None
    from .embedded import EmbeddedServer

    entry.builtin_server()  # a clear error before any process starts
    chosen = {key: setting.default for key, setting in entry.settings.items() if setting.default is not None}
    chosen.update(settings)
    env_kwargs = {**(server_kwargs or {}), **{entry.settings[k].argument: v for k, v in chosen.items()}}
    server = EmbeddedServer.start(entry.name, env_kwargs=env_kwargs, max_sessions=max(sessions, 64))
    return server.url, server


def _package_server(
    entry: CatalogEntry, package: str | os.PathLike[str], python: str | None, settings: Mapping[str, Any],
    sessions: int,
) -> tuple[str, Any]:
    """Upstream's own ``envs/<env>`` package, served here by its app (no Docker), with the
    environment variables its app reads for the entry's settings."""
    from ..server.package import PackageServer

    env = {"MAX_CONCURRENT_ENVS": str(max(sessions, 8))}  # the apps that read it (echo, openspiel, textarena)
    for key, value in settings.items():
        env[entry.settings[key].env_var] = str(value).lower() if isinstance(value, bool) else str(value)
    server = PackageServer(package, env=env, python=python, startup_timeout=PACKAGE_STARTUP_S)
    return server.url, server


def _viewed(entry: CatalogEntry, remote_kwargs: dict[str, Any]) -> dict[str, Any]:
    """``remote_kwargs`` with the entry's exact view under the user's own field overrides."""
    view = entry.view()
    for key in ("observation_fields", "action_fields"):
        view[key] = {**view[key], **(remote_kwargs.get(key) or {})}
        if remote_kwargs.get(key.replace("_fields", "_space")) is not None:
            view[key] = {}  # a whole side given: the fields of the view no longer apply
    return {**remote_kwargs, **view}


def make(
    name: str,
    *,
    base_url: str | None = None,
    view: str | None = None,
    server_kwargs: dict[str, Any] | None = None,
    package: str | os.PathLike[str] | None = None,
    python: str | None = None,
    **remote_kwargs: Any,
) -> gym.Env:
    """The entry point of every catalog id (see the module docstring)."""
    entry = get(name)
    view = _view(entry, view)
    settings = _configure(entry, remote_kwargs)
    url, server = _server(entry, base_url, server_kwargs, settings, 1, package, python)
    remote_kwargs = _viewed(entry, remote_kwargs)
    env: gym.Env = RemoteEnv(url, **remote_kwargs) if server is None else EmbeddedRemoteEnv(server, **remote_kwargs)
    if view == "raw":
        return env
    try:
        return import_path(entry.views[view])(env)
    except BaseException:
        env.close()
        raise


class _OwnsServer(VectorWrapper):
    """A vector env that stops the embedded server it talks to when it closes."""

    def __init__(self, env: VectorEnv, server: Any) -> None:
        super().__init__(env)
        self.server = server

    def close(self, **kwargs: Any) -> None:
        try:
            super().close(**kwargs)
        finally:
            self.server.stop()


def make_vec(
    name: str,
    *,
    num_envs: int,
    base_url: str | None = None,
    view: str | None = None,
    server_kwargs: dict[str, Any] | None = None,
    package: str | os.PathLike[str] | None = None,
    python: str | None = None,
    autoreset_mode: Any = AutoresetMode.NEXT_STEP,
    **remote_kwargs: Any,
) -> VectorEnv:
    """The vector entry point of every catalog id.

    ``gym.make_vec("openenv/Chess-v0", num_envs=8, vectorization_mode="vector_entry_point")``
    gives ``num_envs`` sessions on one server (resolved as for :func:`make`; an embedded
    server is shared by all of them and stops when the vector env closes). With
    ``view="raw"`` it is a :class:`~openenv_gym.RemoteVectorEnv` (``remote_kwargs`` go
    to it); with another view it is a ``SyncVectorEnv`` of view-wrapped
    :class:`~openenv_gym.RemoteEnv` s (``remote_kwargs`` go to each).
    """
    entry = get(name)
    view = _view(entry, view)
    settings = _configure(entry, remote_kwargs)
    url, server = _server(entry, base_url, server_kwargs, settings, num_envs, package, python)
    remote_kwargs = _viewed(entry, remote_kwargs)
    try:
        if view == "raw":
            vec: VectorEnv = RemoteVectorEnv(url, num_envs, autoreset_mode=autoreset_mode, **remote_kwargs)
        else:
            wrap = import_path(entry.views[view])
            vec = SyncVectorEnv(
                [lambda: wrap(RemoteEnv(url, **remote_kwargs))] * num_envs,
                autoreset_mode=autoreset_mode,
            )
    except BaseException:
        if server is not None:
            server.stop()
        raise
    return vec if server is None else _OwnsServer(vec, server)


def register_catalog() -> None:
    """Register every catalog id with Gymnasium (idempotent)."""
    for entry in CATALOG:
        if entry.id not in gym.registry:
            gym.register(
                id=entry.id,
                entry_point=make,  # type: ignore[arg-type]  # Gymnasium's creator types take no keywords
                vector_entry_point=make_vec,  # type: ignore[arg-type]
                kwargs={"name": entry.name},
            )
