"""A pytest plugin for the mutation runner: leave out exactly the tests a file names.

Loaded with ``-p tests.mutation.deselect --mutation-deselect=FILE`` (one node id a line). The
confirming run of a mutant leaves out the tests its first run has already passed. Unlike
pytest's --deselect, which takes node id *prefixes* (``test_a`` would drop ``test_ab`` and
``test_a[10]`` with ``test_a[1]``), only the very node ids listed are left out; the others run
in the order pytest collects them.
"""

from __future__ import annotations


def pytest_addoption(parser):
    parser.addoption("--mutation-deselect", metavar="FILE", help="a file of node ids not to run")


def pytest_collection_modifyitems(config, items):
    path = config.getoption("mutation_deselect")
    if not path:
        return
    with open(path, encoding="utf-8") as fh:
        names = set(fh.read().splitlines())
    keep = [item for item in items if item.nodeid not in names]
    if len(keep) != len(items):
        config.hook.pytest_deselected(items=[item for item in items if item.nodeid in names])
        items[:] = keep
