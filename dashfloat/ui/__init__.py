"""The front end (the only package that imports urwid).

What urwid imports and DashFloat never uses (asyncio, and through wcwidth secrets) is
put off until something uses it (dashfloat/deferred.py): cli.py does it for both front
ends, and importing this package does it too, for tests and tools that import the UI
directly.
"""

from __future__ import annotations

from dashfloat.deferred import Deferred, defer, defer_startup

__all__ = ["Deferred", "defer", "defer_startup"]

defer_startup()
