"""The OpenEnv catalog: ``openenv/<Name>-v0`` ids for OpenEnv hub environments.

    >>> import gymnasium as gym
    >>> import openenv_gym
    >>> env = gym.make("openenv/Chess-v0")                       # doctest: +SKIP
    >>> env = gym.make("openenv/Chess-v0", codec="raw")          # doctest: +SKIP
    >>> env = gym.make("openenv/Chess-v0", base_url="http://127.0.0.1:8000")  # doctest: +SKIP
    >>> [entry.id for entry in openenv_gym.list_envs()][:2]
    ['openenv/Chess-v0', 'openenv/Connect4-v0']

Where the server comes from, first match wins:

1. the ``base_url=`` keyword of ``gym.make``;
2. the entry's environment variable (``OPENENV_CHESS_URL`` for Chess, see
   :func:`list_envs` or ``openenv-gym list``);
3. an embedded server started on 127.0.0.1 in a child process from the
   built-in implementation (entries that have one), which lives exactly as
   long as the env: ``close()`` stops it, and so do interpreter exit and the
   death of the owning process (see :mod:`~openenv_gym.catalog.embedded`).
   ``server_kwargs=`` configures it (Chess: ``{"opponent": None}`` for
   self-play).

The other keywords of ``gym.make`` go to :class:`~openenv_gym.RemoteEnv`;
``codec=`` picks how the env looks to the agent (``"raw"``: the server's JSON
fields as Gymnasium ``Dict``/``Text`` spaces, inferred from its schema).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

import gymnasium as gym
from gymnasium.envs.registration import load_env_creator
from gymnasium.vector import AutoresetMode, SyncVectorEnv, VectorEnv, VectorWrapper

from ..client.remote_env import RemoteEnv
from ..client.vector import RemoteVectorEnv
from ..errors import OpenEnvGymError


def import_path(path: str) -> Any:
    """The object at ``"module:attribute"`` (a server factory or a codec wrapper)."""
    return load_env_creator(path)


__all__ = ["CatalogEntry", "CATALOG", "list_envs", "get", "make", "register_catalog"]


@dataclass(frozen=True)
class CatalogEntry:
    """One catalog id and everything needed to make it.

    ``server`` is the ``"module:Class"`` path of the built-in server env
    (``None`` when the env needs a server you run); ``requires`` the
    modules it imports; ``codecs`` maps codec names to ``"module:Wrapper"``
    paths (``"raw"`` is always there and means the plain
    :class:`~openenv_gym.RemoteEnv`).
    """

    name: str
    upstream: str
    description: str
    server: str | None = None
    requires: tuple[str, ...] = ()
    codecs: dict[str, str] = field(default_factory=dict)
    default_codec: str = "raw"

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
        return f"none built in: pass base_url= or set ${self.env_var}"

    def builtin_server(self) -> Any:
        """The built-in server env class (raises if the entry has none)."""
        if self.server is None:
            raise OpenEnvGymError(
                f"{self.id} has no built-in server: run an OpenEnv {self.upstream} server and pass "
                f"base_url= or set ${self.env_var}"
            )
        return import_path(self.server)

    def schema(self) -> dict | None:
        """The built-in server's ``/schema`` document (``None`` without a built-in server)."""
        return None if self.server is None else self.builtin_server().schema_document()


CATALOG: tuple[CatalogEntry, ...] = (
    CatalogEntry(
        "Chess", "chess_env",
        "Chess against a random (default), moonfish or no opponent; UCI moves",
        server="openenv_gym.catalog.chess_env:ChessEnvironment",
        requires=("chess",),
        codecs={"alphazero": "openenv_gym.chess_codec:AlphaZeroChess"},
        default_codec="alphazero",
    ),
    CatalogEntry(
        "Connect4", "connect4_env",
        "Connect Four on a 6x7 board; drop a piece in a column",
        server="openenv_gym.catalog.connect4_env:Connect4Environment",
    ),
    CatalogEntry(
        "GridWorld", "grid_world_env",
        "A 5x5 grid: walk from [0, 0] to [4, 4] with UP / DOWN / LEFT / RIGHT",
        server="openenv_gym.catalog.grid_world_env:GridWorldEnvironment",
    ),
    CatalogEntry(
        "Echo", "echo_env", "MCP tools echo_message and echo_with_length",
        server="openenv_gym.catalog.echo_env:EchoEnvironment",
    ),
    CatalogEntry("Maze", "maze_env", "A maze on a grid; integer actions with legal_actions"),
    CatalogEntry("Snake", "snake_env", "Snake (marlenv); integer actions, grid observations"),
)

_BY_NAME = {entry.name.lower(): entry for entry in CATALOG}


def list_envs() -> list[CatalogEntry]:
    """Every catalog entry: ``id``, ``upstream`` env, ``server_source()``, codecs."""
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


def _codec(entry: CatalogEntry, codec: str | None) -> str:
    codec = codec or entry.default_codec
    if codec != "raw" and codec not in entry.codecs:
        choices = ", ".join(["raw", *entry.codecs])
        raise OpenEnvGymError(f"{entry.id} has no codec {codec!r}; choose one of {choices}")
    return codec


def _server(
    entry: CatalogEntry, base_url: str | None, server_kwargs: dict[str, Any] | None, sessions: int
) -> tuple[str, Any]:
    """``(url, embedded server or None)``: ``base_url``, else the env var, else a
    freshly started embedded server holding at least ``sessions`` sessions."""
    url = base_url or os.environ.get(entry.env_var)
    if url:
        if server_kwargs:
            raise OpenEnvGymError(
                f"server_kwargs configure the embedded server, but {entry.id} uses the server at "
                f"{url}: configure that server where it runs, or drop base_url / ${entry.env_var}"
            )
        return url, None
    from .embedded import EmbeddedServer

    entry.builtin_server()  # a clear error before any process starts
    server = EmbeddedServer.start(entry.name, env_kwargs=server_kwargs, max_sessions=max(sessions, 64))
    return server.url, server


def make(
    name: str,
    *,
    base_url: str | None = None,
    codec: str | None = None,
    server_kwargs: dict[str, Any] | None = None,
    **remote_kwargs: Any,
) -> gym.Env:
    """The entry point of every catalog id (see the module docstring)."""
    entry = get(name)
    codec = _codec(entry, codec)
    url, server = _server(entry, base_url, server_kwargs, 1)
    env: gym.Env = RemoteEnv(url, **remote_kwargs) if server is None else EmbeddedRemoteEnv(server, **remote_kwargs)
    if codec == "raw":
        return env
    try:
        return import_path(entry.codecs[codec])(env)
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
    codec: str | None = None,
    server_kwargs: dict[str, Any] | None = None,
    autoreset_mode: Any = AutoresetMode.NEXT_STEP,
    **remote_kwargs: Any,
) -> VectorEnv:
    """The vector entry point of every catalog id.

    ``gym.make_vec("openenv/Chess-v0", num_envs=8, vectorization_mode="vector_entry_point")``
    gives ``num_envs`` sessions on one server (resolved as for :func:`make`; an embedded
    server is shared by all of them and stops when the vector env closes). With
    ``codec="raw"`` it is a :class:`~openenv_gym.RemoteVectorEnv` (``remote_kwargs`` go
    to it); with a codec it is a ``SyncVectorEnv`` of codec-wrapped
    :class:`~openenv_gym.RemoteEnv` s (``remote_kwargs`` go to each).
    """
    entry = get(name)
    codec = _codec(entry, codec)
    url, server = _server(entry, base_url, server_kwargs, num_envs)
    try:
        if codec == "raw":
            vec: VectorEnv = RemoteVectorEnv(url, num_envs, autoreset_mode=autoreset_mode, **remote_kwargs)
        else:
            wrap = import_path(entry.codecs[codec])
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
