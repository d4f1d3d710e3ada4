"""Fixtures for the end-to-end tests: a scripted server, and dashfloat processes in a pty
that are always closed when the test ends (pass or fail)."""

from __future__ import annotations

import pytest

from tests.e2e.harness import Term, clean_env, dashfloat_bin
from tests.fakeserver import ScriptedServer


@pytest.fixture
def server():
    """A started ScriptedServer, stopped after the test (after every Term is closed)."""
    srv = ScriptedServer().start()
    try:
        yield srv
    finally:
        srv.stop()


@pytest.fixture
def spawn(server, tmp_path):
    """spawn(argv, env=None, rows=24, cols=80, utf8=True) -> Term; every Term is closed in
    the finalizer. Depends on `server` so the processes end before the server stops."""
    terms: list[Term] = []

    def _spawn(argv: list[str], *, env: dict | None = None, rows: int = 24, cols: int = 80,
                 utf8: bool = True, cwd: str | None = None, modes: dict | None = None,
                 answers: bool = False, read_rate: float | None = None) -> Term:
        term = Term(argv, env if env is not None else clean_env(tmp_path), rows=rows, cols=cols,
                    utf8=utf8, cwd=cwd, modes=modes, answers=answers, read_rate=read_rate)
        terms.append(term)
        return term

    yield _spawn
    for term in terms:
        term.close()


def wait_ready(term: Term, model: str | None = "test-model", timeout: float = 15.0) -> None:
    """Until the full-screen UI runs: the status bar shows idle (and the model) and urwid
    has started (it turns bracketed paste on). The early frame painted before urwid loads
    shows the same status bar; keys typed on it are replayed, but tests that signal or
    inspect the running UI must wait for the real one."""
    def ready(t: Term) -> bool:
        status = t.status()
        return (
            " idle " in status
            and (model is None or f" {model} " in status)
            and bool(t.prompt_lines())
            and b"\x1b[?2004h" in t.raw
        )

    term.wait_for(ready, timeout, f"the first frame (idle, model {model!r})")


@pytest.fixture
def dash(server, spawn, tmp_path):
    """dash(*extra_args, model="test-model", base_url=server.url, env=None, wait=True,
    rows=24, cols=80, utf8=True) -> Term running dashfloat against the scripted server,
    past its first frame unless wait=False."""

    def _dash(*args: str, model: str | None = "test-model", base_url: str | None = None,
              env: dict | None = None, wait: bool = True, **kw) -> Term:
        argv = [dashfloat_bin(), "--base-url", base_url or server.url]
        if model:
            argv += ["--model", model]
        argv += list(args)
        term = spawn(argv, env=env if env is not None else clean_env(tmp_path), **kw)
        if wait:
            wait_ready(term, model)
        return term

    return _dash
