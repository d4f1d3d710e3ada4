"""Modules that start-up would load for nothing, put off until something uses them.

Memory at rest and the time to the first request are figures (issues 11 and 16), and
three modules cost much of both while DashFloat rarely or never uses them:
- asyncio: urwid imports it for an event loop DashFloat does not run (its loop is urwid's
  select loop); with its C part and what it imports, 1.5-6 MiB of RSS.
- ssl: http.client imports it at the top for HTTPSConnection, which a plain `http://`
  endpoint never builds; it maps libssl and libcrypto (~4 MiB of RSS) and costs ~5 ms.
  An https endpoint goes through requests, whose urllib3 loads it on its first use.
- secrets: wcwidth (urwid's width tables) imports it for one random id in a text wrapper
  DashFloat does not use; it pulls in hmac, hashlib and libcrypto.

A stand-in takes the module's place in sys.modules: `import name` binds it without loading
anything; the first attribute asked of it (a function, a class, a submodule, __path__)
imports the real module, which then takes its place.
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


STARTUP = ("asyncio", "ssl", "secrets")


def defer_startup() -> None:
    """Stand-ins for the modules of STARTUP that are not loaded yet (cli.py, before
    either front end imports anything heavy)."""
    for name in STARTUP:
        defer(name)
