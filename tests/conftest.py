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


@pytest.fixture(autouse=True)
def _fresh_storage_notices():
    """What could not be written is said once per process (dashfloat/storage.py): each test
    starts with nothing said and no sink."""
    from dashfloat import storage

    storage.reset()
    yield
    storage.reset()


@pytest.fixture
def fake_server():
    """A started ScriptedServer (tests/fakeserver.py), stopped after the test."""
    server = ScriptedServer().start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def git_home(tmp_path, monkeypatch):
    """For tests with real git repositories: git reads only a global config of the test's (no
    system file, not the user's ~/.gitconfig), HOME is the test's own (gpg creates ~/.gnupg),
    and no GIT_* variable of the caller's reaches it."""
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    (home / ".gitconfig").write_text("[user]\n\tname = t\n\temail = t@example.invalid\n"
                                     "[init]\n\tdefaultBranch = main\n")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(home / ".gitconfig"))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    for var in ("GIT_DIR", "GIT_WORK_TREE", "GIT_CONFIG_COUNT", "GIT_CONFIG_PARAMETERS",
                "GIT_EXTERNAL_DIFF", "GIT_SSH", "GIT_SSH_COMMAND", "LESSOPEN", "LESSCLOSE",
                "GIT_CEILING_DIRECTORIES"):
        monkeypatch.delenv(var, raising=False)
    return home


# the agent rig (a real Agent against the scripted server), shared by the agent test files
from tests.test_agent_tools import rig  # noqa: E402, F401
