"""The widget tests build Apps in the test process itself: an App's first idle phase freezes
every object alive (ui/app.py settle(): gc.freeze, for a real session's start-up objects).
Here that would be the objects of every earlier test, kept out of the collector for the
rest of the run (their cycles never freed; rows cached by one test frozen in the next):
each test gives the frozen objects back to the collector."""

from __future__ import annotations

import gc

import pytest


@pytest.fixture(autouse=True)
def _unfreeze_after_each_test():
    yield
    if gc.get_freeze_count():
        gc.unfreeze()
