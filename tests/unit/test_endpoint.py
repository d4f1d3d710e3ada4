"""Tests for dashfloat.llm.endpoint: where requests go, a plain value."""

from __future__ import annotations

import dataclasses

import pytest

from dashfloat.config import Config
from dashfloat.llm.endpoint import Endpoint


def test_an_endpoint_is_a_value_that_keeps_its_key_out_of_its_text():
    """Endpoint crosses threads and lands in logs and tracebacks: it cannot change once
    built, its repr never shows the key, and one built without a configuration (another
    front end, a script) waits as long as the documented defaults and is not taken for the
    built-in default endpoint in error hints."""
    ep = Endpoint("http://127.0.0.1:8080/v1", api_key="sk-live-0123456789abcdef")
    assert "sk-live-0123456789abcdef" not in repr(ep) and "127.0.0.1:8080" in repr(ep)
    with pytest.raises(dataclasses.FrozenInstanceError):
        ep.read_timeout = 1.0  # type: ignore[misc]
    defaults = Config()
    assert (ep.connect_timeout, ep.read_timeout) == (defaults.connect_timeout, defaults.read_timeout) == (10.0, 120.0)
    assert ep.api_key_env == defaults.api_key_env and ep.headers == {}
    assert ep.is_default is False
