"""Fixtures for every test of openenv_gym.spaces."""

from __future__ import annotations

import warnings

import pytest


@pytest.fixture(autouse=True)
def _quiet_gymnasium():
    # Sequence(Box(shape=()), stack=True).contains makes Box.contains warn about casting scalars.
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*Casting input x to numpy array.*")
        yield
