"""The id by which verifiers loads openenv-gym's taskset and harness (``vf-eval
openenv_gym_verifiers ...``): verifiers imports a plugin by its id as a top-level
module and takes the classes its ``__all__`` exports. They live in
:mod:`openenv_gym.verifiers` (needs ``pip install 'openenv-gym[verifiers]'``)."""

from openenv_gym.verifiers import OpenEnvHarness, OpenEnvTaskset

__all__ = ["OpenEnvTaskset", "OpenEnvHarness"]
