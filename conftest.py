"""Collection for the whole checkout: the package's doctests of an optional feature run
only where its extra is installed (``openenv_gym.trl`` needs the ``trl`` extra, which
the ``test`` extra leaves out; ``.ci/trl`` runs them)."""

from __future__ import annotations

import importlib.util

collect_ignore = [] if importlib.util.find_spec("trl") else ["openenv_gym/trl.py"]
