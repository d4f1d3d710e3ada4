"""Patch a module of the app right after it is executed, for the benches' sitecustomize
files (apptrace/, uiday/): the app imports its modules lazily, so a patch waits for the
import instead of forcing it."""

from __future__ import annotations

import importlib.abc
import importlib.util
import sys


class _Finder(importlib.abc.MetaPathFinder):
    """Runs the hook of a module right after the module is executed."""

    def __init__(self, hooks: dict):
        self.hooks = hooks

    def find_spec(self, name, path, target=None):
        if name not in self.hooks:
            return None
        sys.meta_path.remove(self)
        try:
            spec = importlib.util.find_spec(name)
        finally:
            sys.meta_path.insert(0, self)
        exec_module = spec.loader.exec_module

        def hooked_exec(module, _exec=exec_module, _name=name):
            _exec(module)
            self.hooks[_name](module)

        spec.loader.exec_module = hooked_exec
        return spec


def install(hooks: dict) -> None:
    """hooks: module name -> callable(module), run once that module has been executed."""
    sys.meta_path.insert(0, _Finder(hooks))
