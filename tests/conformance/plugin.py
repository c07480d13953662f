"""The pytest plugin of the adapted suites' runs (``-p tests.conformance.plugin``):
one :class:`~tests.conformance.hosting.AppHost` for the session and, after each
test, its vector envs closed and its servers drained."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from . import remote
from .hosting import AppHost, app_host


@pytest.fixture(scope="session", autouse=True)
def conformance_host() -> Iterator[AppHost]:
    with app_host() as host:
        remote.use_host(host)
        try:
            yield host
        finally:
            remote.use_host(None)


@pytest.fixture(autouse=True)
def _release_servers(conformance_host: AppHost) -> Iterator[None]:
    yield
    remote.close_made()
    conformance_host.release_all()
