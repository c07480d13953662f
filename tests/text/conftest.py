"""Fixtures for every test of openenv_gym.text."""

from __future__ import annotations

import warnings

import pytest


@pytest.fixture(autouse=True)
def _quiet():
    with warnings.catch_warnings():
        # Sequence(Box(shape=()), stack=True).contains makes Box.contains warn about casting scalars.
        warnings.filterwarnings("ignore", message=".*Casting input x to numpy array.*")
        # PettingZoo's classic modules warn on import about its registry API.
        warnings.filterwarnings("ignore", category=DeprecationWarning, module="pettingzoo")
        yield
