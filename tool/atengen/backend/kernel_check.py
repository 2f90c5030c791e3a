"""The missing-kernel check: does the backend's C++ define every kernel its YAML promises?

Without it, a forgotten kernel shows up as an undefined symbol when torch loads
the library, far from its cause. The scan is textual, like gen_backend_stubs'
``--impl_path``: a definition is ``Class::name(`` (possibly namespace-qualified)
right after a return type (a word that is not ``return`` and the like, or
``&``, ``*``, ``>``), outside comments; calls follow ``return``, ``=``, ``(``
and so on. It counts definitions per kernel name, because overloads share a
name, and compares with the number of distinct declarations of that name.
"""

from __future__ import annotations

import re
from collections import Counter

from atengen.api.declarations import native_declaration
from atengen.backend.model import ExternalBackend
from atengen.errors import AtengenError, Location

_COMMENTS = re.compile(r"//[^\n]*|/\*.*?\*/", re.S)
_NOT_TYPES = frozenset({"return", "co_return", "throw", "case", "else", "do"})


def _definitions(class_name: str, text: str) -> Counter[str]:
    pattern = re.compile(rf"(?<![\w:])(?:\w+\s*::\s*)*{re.escape(class_name)}\s*::\s*(\w+)\s*\(")
    # Comments are blanked, not removed, so that the code keeps its shape.
    code = _COMMENTS.sub(lambda m: re.sub(r"[^\n]", " ", m.group()), text)
    names: Counter[str] = Counter()
    for m in pattern.finditer(code):
        before = code[: m.start()].rstrip()
        # A definition follows its return type (`Tensor`, `&`, `>`, `*`); a call follows
        # `return`, `=`, `(`, `,` and the like.
        word = re.search(r"(\w+)$", before)
        if (before.endswith(("&", "*", ">")) or word) and not (
            word and word.group(1) in _NOT_TYPES
        ):
            names[m.group(1)] += 1
    return names


def check_kernels(backend: ExternalBackend, sources: dict[str, str]) -> None:
    """Raise one error per kernel name whose definitions in ``sources`` (path -> text)
    are fewer or more than its declarations."""
    spec = backend.spec
    found: Counter[str] = Counter()
    for text in sources.values():
        found.update(_definitions(spec.class_name, text))
    expected: dict[str, list[str]] = {}
    first_loc: dict[str, Location] = {}
    for k in backend.kernels:
        decl = native_declaration(k.f, k.kernel, symint=k.symint)
        decls = expected.setdefault(k.kernel, [])
        if decl not in decls:
            decls.append(decl)
        first_loc.setdefault(k.kernel, k.entry.loc)
    where = ", ".join(sorted(sources)) or "(no sources)"
    errors = []
    for claim in backend.structured:
        impls = sum(_definitions(claim.impl_class, text)["impl"] for text in sources.values())
        if impls != 1:
            errors.append(
                AtengenError(
                    claim.entry.loc,
                    f"{spec.cpp_namespace}::{claim.impl_class}::impl is defined {impls} times in "
                    f"{where}; the structured op '{claim.entry.name}' needs exactly one definition",
                )
            )
    for name, decls in expected.items():
        if found[name] != len(decls):
            errors.append(
                AtengenError(
                    first_loc[name],
                    f"{spec.class_name} is missing a kernel definition for {name}. We found "
                    f"{found[name]} kernel(s) with that name in {where}, but expected "
                    f"{len(decls)} kernel(s). The expected declarations are: {'; '.join(decls)}",
                )
            )
    if errors:
        raise AtengenError.combine(errors)
