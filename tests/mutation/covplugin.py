"""A pytest plugin for the mutation runner: which lines of the code under test each test runs.

Loaded with ``-p tests.mutation.covplugin``; the environment says what to trace and where to
write: DASHFLOAT_MUTCOV_PREFIX (a directory: only files under it are traced) and
DASHFLOAT_MUTCOV_OUT (a JSON file). It writes ``{"tests": {nodeid: {"seconds": s, "lines":
{path: [line, ...]}}}, "failed": [nodeid, ...]}``, paths relative to the prefix's parent. Lines run in threads the test
starts are the test's too (threading.settrace); lines run at import time belong to no test.
A plain line tracer (sys.settrace): slow, but run once per change of the code or the tests.
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time

import pytest

_PREFIX = os.path.realpath(os.environ.get("DASHFLOAT_MUTCOV_PREFIX", "dashfloat")) + os.sep
_ROOT = os.path.dirname(_PREFIX.rstrip(os.sep))
_results: dict[str, dict] = {}
_failed: set[str] = set()
_current: dict[str, set[int]] | None = None
_wanted: dict[str, str | None] = {}


def _relpath(filename: str) -> str | None:
    try:
        return _wanted[filename]
    except KeyError:
        real = os.path.realpath(filename)
        rel = os.path.relpath(real, _ROOT) if real.startswith(_PREFIX) else None
        _wanted[filename] = rel
        return rel


def _local(frame, event, arg):
    if event == "line" and _current is not None:
        rel = _relpath(frame.f_code.co_filename)
        _current.setdefault(rel, set()).add(frame.f_lineno)
    return _local


def _global(frame, event, arg):
    if _current is None or _relpath(frame.f_code.co_filename) is None:
        return None
    _current.setdefault(_relpath(frame.f_code.co_filename), set()).add(frame.f_lineno)
    return _local


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    global _current
    _current = {}
    threading.settrace(_global)
    sys.settrace(_global)
    start = time.monotonic()
    try:
        yield
    finally:
        sys.settrace(None)
        threading.settrace(None)
        lines, _current = _current, None
        _results[item.nodeid] = {
            "seconds": round(time.monotonic() - start, 4),
            "lines": {path: sorted(found) for path, found in lines.items()},
        }


def pytest_runtest_logreport(report):
    if report.failed:
        _failed.add(report.nodeid)


def pytest_sessionfinish(session, exitstatus):
    out = os.environ.get("DASHFLOAT_MUTCOV_OUT")
    if out:
        with open(out, "w", encoding="utf-8") as fh:
            json.dump({"exitstatus": int(exitstatus), "tests": _results, "failed": sorted(_failed)}, fh)
