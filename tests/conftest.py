"""Shared fixtures. Keep this minimal: fixtures that only one test file needs live there."""

from __future__ import annotations

import pytest

from tests.fakeserver import ScriptedServer


@pytest.fixture(autouse=True)
def _fresh_secrets():
    """The process-wide masking secrets (dashfloat.masking.register) do not leak between
    tests: a key one test registered would mask another test's text."""
    from dashfloat import masking

    masking._registered = ()
    yield
    masking._registered = ()


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
