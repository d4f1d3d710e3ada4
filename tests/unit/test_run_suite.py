"""tests/run_suite.py (`make test`): the two runs' statuses make the suite's."""

from __future__ import annotations

import pytest

from tests.run_suite import NO_TESTS, names_tests, overall


@pytest.mark.parametrize("statuses, expected", [
    ([0, 0], 0),
    ([0, 1], 1),
    ([1, 0], 1),
    ([2, 1], 2),  # the first to end that failed
    ([NO_TESTS, 0], 0),  # -k that matches only e2e tests: not a failure
    ([0, NO_TESTS], 0),
    ([NO_TESTS, NO_TESTS], NO_TESTS),
    ([NO_TESTS, 1], 1),
])
def test_the_suite_fails_when_a_run_failed(statuses, expected):
    assert overall(statuses) == expected


@pytest.mark.parametrize("arg, expected", [
    ("tests/unit/test_run_suite.py", True),
    ("tests/unit/test_run_suite.py::test_the_suite_fails_when_a_run_failed", True),
    ("tests/e2e", True),
    ("-k", False),
    ("--durations=10", False),
    ("priority", False),  # a -k expression, not a path
])
def test_arguments_that_name_tests_make_one_plain_run(arg, expected):
    assert names_tests(arg) is expected
