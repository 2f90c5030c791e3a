"""Building a frozen dataclass's instance from a dict of its field values, in one step."""

from __future__ import annotations

from atengen.cached import TYPE_CHECKING

if TYPE_CHECKING:
    from typing import TypeVar

    T = TypeVar("T")


def frozen_instance(cls: type[T], attributes: dict[str, object]) -> T:
    """``cls(**attributes)`` for a frozen dataclass without slots, ``attributes`` naming every
    field (and any cached properties to fill in ahead); the caller checks the values.

    Why: the frozen __init__ sets each field with its own object.__setattr__ call (a frozen
    class's __setattr__ raises), which is a tenth of the time parsing an op entry takes; here
    ``attributes`` becomes the instance's __dict__ as it is, nothing copied, so the caller must
    not use the dict afterwards. __post_init__ does not run: ``cls`` must not need it.
    """
    instance = object.__new__(cls)
    object.__setattr__(instance, "__dict__", attributes)
    return instance
