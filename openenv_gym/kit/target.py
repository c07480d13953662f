"""What ``openenv-gym kit`` and ``openenv-gym check`` are pointed at: a TARGET.

A target is one of

* a Gymnasium id (``CartPole-v1``), a ``module:factory`` path or a PettingZoo
  module (``pettingzoo.classic.tictactoe_v3``): anything ``openenv-gym serve`` takes;
* a package directory (one holding ``openenv.yaml``, such as ``wrappers/cartpole``):
  its own app (``app: server.app:app`` in ``openenv.yaml``) is imported, and the
  env it serves is used, with the keyword arguments the package chose.

Either way the result is the server's :class:`~openenv_gym.server.source.EnvSource`,
so an episode played here builds exactly the env a ``/ws`` session of that server gets
(for a PettingZoo game: the seat view, with the server's seeded opponent).
"""

from __future__ import annotations

import os
import sys
from typing import Any

from ..server.child import import_app
from ..server.package import DEFAULT_APP, is_package, package_app

__all__ = ["is_package", "package_app", "load_source", "DEFAULT_APP"]


def load_source(target: str, env_kwargs: dict[str, Any] | None = None) -> Any:
    """The :class:`~openenv_gym.server.source.EnvSource` a server for ``target`` would serve.

    A package's app is imported as its server process imports it
    (:func:`~openenv_gym.server.child.import_app`: the directory first on ``sys.path``):
    call this in a process of its own (the kit's probe does) when loading several
    packages, since each has a top-level ``server`` package.
    """
    if is_package(target):
        if env_kwargs:
            raise ValueError(
                f"{target} is a package: its app chooses the env's keyword arguments "
                f"(drop --env-kwargs, or edit its server/app.py)"
            )
        app_name = package_app(target)
        app = import_app(app_name, target)
        server = getattr(getattr(app, "state", None), "openenv_gym", None)
        if server is None:
            raise TypeError(
                f"{target}: {app_name} is not an openenv-gym app; point the kit at "
                f"the env it serves instead (a Gymnasium id or module:factory)"
            )
        return server.source
    from ..server.resolve import resolve

    if "" not in sys.path and os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())  # module:factory of this directory, as `serve` allows
    return resolve(target, env_kwargs)
