"""A lock-free ``functools.cached_property`` for the model's frozen objects."""

from __future__ import annotations

from collections.abc import Callable


class cached_property:  # noqa: N801 - a drop-in for functools.cached_property
    """Computes an attribute on first access and stores it in the instance dict.

    Python 3.11's functools.cached_property takes a class-wide lock on every
    first access; the model makes ~20,000 such accesses while loading torch's
    YAML, and the locking was a tenth of the time. Nothing here is shared
    between threads, so the lock buys nothing. Works on frozen dataclasses
    (without slots), as functools' does: it writes ``__dict__`` directly.
    """

    def __init__(self, func: Callable[[object], object]):
        self.func = func
        self.name = func.__name__
        self.__doc__ = func.__doc__

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    def __get__(self, obj: object, objtype: type | None = None):
        if obj is None:
            return self
        value = obj.__dict__[self.name] = self.func(obj)
        return value
