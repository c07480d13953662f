"""Collection for the whole checkout: the package's doctests of an optional feature run
only where its extra is installed. ``openenv_gym.trl`` and ``openenv_gym.skyrl`` need the
``trl`` and ``skyrl`` extras (``.ci/trl`` runs them), ``openenv_gym.ray`` the ``ray`` extra
(``.ci/ray``), ``openenv_gym.verifiers`` the ``verifiers`` extra (``.ci/verifiers``); the ``test``
extra leaves all four out (tests/trl, tests/ray and tests/verifiers skip on their own)."""

from __future__ import annotations

import importlib.util

#: The modules of those extras, and the module each needs.
OUTSIDE_TEST = {
    "openenv_gym/trl.py": "trl", "openenv_gym/skyrl.py": "skyrl_gym", "openenv_gym/ray": "ray",
    "openenv_gym/verifiers.py": "verifiers",
}

collect_ignore = [path for path, needs in OUTSIDE_TEST.items() if importlib.util.find_spec(needs) is None]
