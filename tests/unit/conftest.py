"""Fixtures the configuration tests share (a file may define its own of the same name)."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture
def home(tmp_path: Path) -> Path:
    """An empty home directory: no user config file until a test writes one."""
    path = tmp_path / "home"
    path.mkdir()
    return path


@pytest.fixture
def root(tmp_path: Path) -> Path:
    """An empty project directory, beside the home."""
    path = tmp_path / "proj"
    path.mkdir()
    return path
