"""openenv_gym._local: what tells either end of a connection that its peer is on this
machine (busy-poll for it) or in this very process (never busy-poll for it)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from openenv_gym._local import PROCESS_TOKEN, is_loopback, spin_turn
from openenv_gym.protocol import PROCESS_HEADER
from tests.conftest import subprocess_env


def test_the_process_token_is_sixteen_hex_digits_of_this_process_only():
    assert len(PROCESS_TOKEN) == 16 and int(PROCESS_TOKEN, 16) >= 0
    other = subprocess.run(
        [sys.executable, "-c", "from openenv_gym._local import PROCESS_TOKEN; print(PROCESS_TOKEN)"],
        capture_output=True, text=True, timeout=60, env=subprocess_env(), check=True,
    ).stdout.strip()
    assert len(other) == 16 and other != PROCESS_TOKEN
    assert PROCESS_HEADER == PROCESS_HEADER.lower()  # as HTTP/1.1 and ASGI spell headers


def test_a_spin_turn_gives_the_core_away_and_returns():
    assert [spin_turn() for _ in range(3)] == [None] * 3


@pytest.mark.parametrize(("host", "local"), [
    ("127.0.0.1", True), ("127.8.9.10", True), ("LOCALHOST", True), ("[::1]", True), ("::ffff:127.0.0.1", True),
    ("example.org", False), ("127.example.org", False), ("192.168.1.1", False), ("::", False), ("[::ffff:10.1.1.1]", False), ("", False),
])
def test_loopback_is_this_machine_by_name_or_address(host, local):
    assert is_loopback(host) is local
