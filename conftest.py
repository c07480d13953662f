"""The package's doctests run with the suite; openenv_gym.ray's need Ray, which only the
``ray`` extra installs: without it they are not collected (tests/ray skip on their own)."""

import importlib.util

collect_ignore = [] if importlib.util.find_spec("ray") else ["openenv_gym/ray"]
