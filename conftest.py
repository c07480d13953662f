"""Collection for the whole checkout: the package's doctests of an optional feature run
only where its extra is installed (``openenv_gym.trl`` and ``openenv_gym.skyrl`` need the
``trl`` and ``skyrl`` extras, which the ``test`` extra leaves out; ``.ci/trl`` runs them)."""

from __future__ import annotations

import importlib.util

#: The modules of those extras, and the module each needs.
OUTSIDE_TEST = {"openenv_gym/trl.py": "trl", "openenv_gym/skyrl.py": "skyrl_gym"}

collect_ignore = [path for path, needs in OUTSIDE_TEST.items() if importlib.util.find_spec(needs) is None]
