"""Caches owned by the model objects they describe: they live in the object and die with it.

A long-running process that loads many models (a test session, an IDE, a fuzzing campaign)
keeps no result of a model it has dropped. The one kind of module-level cache left is
``interned``: the parser's memo of values read from text (a type, an argument list), which hold
no model object, are immutable, and are bounded.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

# Type checkers read this as True; at run time `typing` (~2 ms to import) stays unimported.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from functools import cached_property as cached_property
    from typing import ParamSpec, TypeVar

    P = ParamSpec("P")
    R = TypeVar("R")
else:

    class cached_property:  # noqa: N801 - a drop-in for functools.cached_property
        """Computes an attribute on first access and stores it in the instance.

        Python 3.11's functools.cached_property takes a class-wide lock on every
        first access; the model makes ~20,000 such accesses while loading torch's
        YAML, and the locking was a tenth of the time. Nothing here is shared
        between threads, so the lock buys nothing. Works on frozen dataclasses
        (without slots), as functools' does: it sets the attribute with object.__setattr__.

        Type checkers see functools.cached_property instead (above), whose behaviour this
        class has, so that each property has its function's return type.
        """

        def __init__(self, func):
            self.func = func
            self.name = func.__name__
            self.__doc__ = func.__doc__

        def __set_name__(self, owner, name):
            self.name = name

        def __get__(self, obj, objtype=None):
            if obj is None:
                return self
            value = self.func(obj)
            # Not obj.__dict__[...]: that makes Python 3.11 build the instance's dict, which it
            # otherwise keeps as an inline array of values (one object less for the collector).
            _set_attribute(obj, self.name, value)
            return value


_set_attribute = object.__setattr__  # also past a frozen dataclass's __setattr__


# Torch's op YAML has ~2,600 schemas of ~5,000 distinct argument strings; a bound far above that
# keeps every hit of one file while a process that reads many stays bounded.
_INTERNED_PER_FUNCTION = 32768


def interned(func: Callable[P, R]) -> Callable[P, R]:
    """A bounded memo for a pure function of text (or of other interned values) whose results
    are immutable: one object per distinct input, shared by every model that reads it."""
    # lru_cache's wrapper is typed as taking any hashable arguments; it passes on exactly the
    # ones it is given, so it has func's signature.
    return functools.lru_cache(maxsize=_INTERNED_PER_FUNCTION)(func)  # type: ignore[return-value]


def cached_on_first_argument(func: Callable[..., R]) -> Callable[..., R]:
    """Caches ``func(obj, *args)`` in ``obj``'s instance dict, keyed by ``args`` (hashable).

    For a layer above the model that derives facts from a model object (a NativeFunction's C++
    arguments, its operator reference): the facts are computed once per object, as with
    ``cached_property``, without the model knowing of the layer. ``obj`` must have a
    ``__dict__`` (the model's frozen dataclasses do).
    """
    slot = f"_cached_{func.__module__}.{func.__qualname__}"
    if func.__code__.co_argcount == 1:
        # The common case, as cheap as cached_property: the value itself in the slot.
        @functools.wraps(func)
        def one_argument(obj: object) -> R:
            try:
                cached: R = obj.__dict__[slot]
                return cached
            except KeyError:
                value = obj.__dict__[slot] = func(obj)
                return value

        return one_argument

    @functools.wraps(func)
    def wrapper(obj: object, *args: object) -> R:
        memo: dict[tuple[object, ...], R] | None = obj.__dict__.get(slot)
        if memo is None:
            memo = obj.__dict__[slot] = {}
        try:
            return memo[args]
        except KeyError:
            value = memo[args] = func(obj, *args)
            return value

    return wrapper
