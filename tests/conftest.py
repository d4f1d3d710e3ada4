"""Shared fixtures. Keep this minimal: fixtures that only one test file needs live there."""

from __future__ import annotations

import pytest

from tests.fakeserver import ScriptedServer


@pytest.fixture
def fake_server():
    """A started ScriptedServer (tests/fakeserver.py), stopped after the test."""
    server = ScriptedServer().start()
    try:
        yield server
    finally:
        server.stop()

# the agent rig (a real Agent against the scripted server), shared by the agent test files
from tests.test_agent_tools import rig  # noqa: E402, F401
