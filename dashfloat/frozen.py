"""Frozen value classes without `dataclasses`, for the modules the first frame needs.

The early frame (ui/early.py) is what a person sees first, and the CPU spent before it is a
figure of issue 16 (<= 1.1 times the floor client's CPU to its request). `dataclasses`
imports `inspect` (and with it ast, dis and tokenize: ~6 ms of CPU on the bench machine, a
sixth of everything before that frame), and @dataclass compiles an __init__, __repr__,
__eq__ and, frozen, __setattr__, __delattr__ and __hash__ for every class (0.3-0.5 ms each
at start-up). The few value classes made before the early frame (the configuration, its key
table, the glyphs, the keymap's bindings, the confirmation gate's verdicts) derive from
`Frozen` instead and write their own __init__; every later module keeps @dataclass (urwid
imports dataclasses and inspect anyway, after the frame is on screen). CPU to the early frame,
median of 9 starts in the bench's pty: 40.2 ms before, 33.4 ms after (the floor client's to its
request: 33.3 ms). tests/e2e/test_early.py checks that neither module is loaded by then.

A Frozen class lists its fields as __slots__ and sets them once in __init__ with `_set`.
Instances are equal when of one class with equal fields, hash by their fields, print like a
dataclass (less `_repr_skip`), refuse assignment (`FrozenError`, an AttributeError like
dataclasses.FrozenInstanceError), copy and pickle, and `replace(**changes)` makes a new one
through __init__, as dataclasses.replace does.
"""

from __future__ import annotations


class FrozenError(AttributeError):
    """Assignment to a field of a Frozen instance."""


class Frozen:
    __slots__ = ()
    _repr_skip: tuple[str, ...] = ()  # fields repr leaves out (a secret, a function)

    def _set(self, **fields) -> None:
        for name, value in fields.items():
            object.__setattr__(self, name, value)

    def __setattr__(self, name, value):
        raise FrozenError(f"cannot assign to field {name!r}")

    def __delattr__(self, name):
        raise FrozenError(f"cannot delete field {name!r}")

    def __setstate__(self, state) -> None:
        """copy, deepcopy and pickle set the fields through here (a slotted object's state
        is (None, {field: value}))."""
        _none, fields = state
        for name, value in fields.items():
            object.__setattr__(self, name, value)

    def _fields(self) -> tuple:
        return tuple(getattr(self, name) for name in self.__slots__)

    def __eq__(self, other):
        if other.__class__ is self.__class__:
            return self._fields() == other._fields()
        return NotImplemented

    def __hash__(self):
        return hash(self._fields())

    def __repr__(self) -> str:
        shown = ", ".join(f"{name}={getattr(self, name)!r}" for name in self.__slots__
                          if name not in self._repr_skip)
        return f"{type(self).__qualname__}({shown})"

    def replace(self, **changes):
        """A copy with `changes` (field -> value) made through __init__; an unknown field
        is a TypeError."""
        unknown = set(changes) - set(self.__slots__)
        if unknown:
            raise TypeError(f"{type(self).__qualname__} has no field {sorted(unknown)[0]!r}")
        return type(self)(**{name: changes.get(name, getattr(self, name)) for name in self.__slots__})
