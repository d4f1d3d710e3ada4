"""The front end (the only package that imports urwid).

urwid imports asyncio for an event loop DashFloat does not use (its own loop is urwid's
select loop): asyncio, its C part and what they import (concurrent.futures, ssl's
protocols) are 1.5-6 MiB of RSS at rest, a fifth of the whole. Until something uses it,
`asyncio` is a stand-in that imports the real module on first use (defer()).
"""

from __future__ import annotations

import importlib
import sys
import types


class Deferred(types.ModuleType):
    """A module's stand-in in sys.modules: `import name` binds it without loading the
    module; the first attribute asked of it (a function, a submodule, __path__) imports
    the real one, which then takes its place in sys.modules."""

    def __getattr__(self, attr: str):
        real = self.__dict__.get("_real")
        if real is None:
            if attr == "__spec__":  # the import system's check on a module it finds loaded
                raise AttributeError(attr)
            name = self.__name__
            if sys.modules.get(name) is self:
                del sys.modules[name]
            real = self.__dict__["_real"] = importlib.import_module(name)
        return getattr(real, attr)


def defer(name: str) -> None:
    """Put a stand-in for module `name` in sys.modules, unless it is loaded already."""
    if name not in sys.modules:
        sys.modules[name] = Deferred(name)


defer("asyncio")
