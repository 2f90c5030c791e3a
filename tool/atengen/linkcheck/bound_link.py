"""The last step of an ABI-bound library (aten_shared_library): lib<name>.so is the linked
library with its references to torch's libraries made weak, so that the dynamic loader never
refuses it for a symbol another torch release lacks. Its code then runs, and the release guard
(rules/runtime/atengen/torch_release_guard.cc) refuses it with one line that names both releases,
before anything of it is registered; in the release it was built for, the guard also checks that
every weak reference found its symbol.

Before that, the missing-kernel check (kernels.py): a strong undefined reference to a kernel the
generated headers under the header directories declare, that neither torch's libraries nor a
shared library of the user's deps define, fails the step with one `header:line: error:` line per
kernel, and nothing is written.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from atengen.facts.wheel_symbols import (
    defined_among,
    defined_dynamic_symbols,
    undefined_dynamic_symbols,
    with_weak_references,
)
from atengen.linkcheck.kernels import declared_kernels, demangler, messages, missing_kernels


@dataclass(frozen=True)
class BoundLink:
    """The library to write, or the lines that refuse it (then ``library`` is empty)."""

    library: bytes
    problems: tuple[str, ...] = ()


def bound_link(
    label: str,
    library: str,
    torch_libraries: Sequence[str],
    header_dirs: Sequence[str] = (),
    shared_libraries: Sequence[str] = (),
) -> BoundLink:
    """``library`` with its references to ``torch_libraries``' symbols made weak, once no kernel
    the headers under ``header_dirs`` declare is missing. Raises ValueError for a library that
    cannot be read."""
    undefined = undefined_dynamic_symbols(library)
    strong = frozenset(s.name.encode() for s in undefined if not s.weak)
    # Only what the library refers to is looked up (through the libraries' hash tables).
    torch_names = frozenset().union(*(defined_among(path, strong) for path in torch_libraries))
    if header_dirs:
        elsewhere = torch_names.union(*(defined_among(path, strong) for path in shared_libraries))
        missing = missing_kernels(
            undefined,
            elsewhere,
            defined_dynamic_symbols(library, (b"_ZN",)),
            declared_kernels(header_dirs),
        )
        if missing:
            return BoundLink(b"", tuple(messages(label, missing, demangler())))
    edited, _ = with_weak_references(library, torch_names)
    return BoundLink(edited)
