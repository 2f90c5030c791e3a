"""The missing-kernel check: does the backend's C++ define every kernel its YAML promises?

Without it, a forgotten kernel shows up as an undefined symbol when torch loads
the library, far from its cause. The scan is textual, like gen_backend_stubs'
``--impl_path``: a definition is ``Class::name(`` (possibly namespace-qualified)
right after a return type (a word that is not ``return`` and the like, or
``&``, ``*``, ``>``), outside comments; calls follow ``return``, ``=``, ``(``
and so on. It counts definitions per kernel name, because overloads share a
name, and compares with the number of distinct declarations of that name.

The scan is linear in the size of the sources (they may be megabytes, and written by anyone):
each source is read once for comments and once for qualified names, whatever the classes
asked about, and no step looks back further than the word before a name.
"""

from __future__ import annotations

import re
from collections import Counter

from atengen.api.declarations import native_declaration
from atengen.backend.model import ExternalBackend
from atengen.errors import AtengenError, Location

# A comment: `//` to the end of the line, or `/*` to the first `*/` after it; an unclosed `/*`
# is matched to the end of the text here, and _without_comments takes it back.
_COMMENT = re.compile(r"//[^\n]*|/\*.*?(?:\*/|\Z)", re.S)
_LINE_COMMENT = re.compile(r"//[^\n]*")
# A qualified name `a::b :: C::name` (two words or more), from its first word on: one that does
# not follow a word character or `:` (so `::C::f(` names nothing, as `xC::f(` names no `C`);
# the groups are its last two words, and `(` where one follows.
_QUALIFIED_NAME = re.compile(r"(?<![\w:])(?:\w+\s*::\s*)*(\w+)\s*::\s*(\w+)(\s*\()?")
_NOT_TYPES = frozenset({"return", "co_return", "throw", "case", "else", "do"})
# What comes before a name, read backwards in the reversed text: whitespace, then `&`, `*`, `>`
# or a word, of which only as much is read as tells whether it is one of _NOT_TYPES.
_BEFORE_REVERSED = re.compile(rf"\s*(?:[&*>]|(\w{{1,{max(map(len, _NOT_TYPES)) + 1}}}))")
_NOT_TYPES_REVERSED = frozenset(t[::-1] for t in _NOT_TYPES)


def _without_comments(text: str) -> str:
    """The text with each comment replaced by a space (the scan reads any run of whitespace as
    one). A `/*` that no `*/` closes starts no comment, and nor does any `/*` after it: from
    there on only line comments go."""
    last = None

    def space(m: re.Match[str]) -> str:
        nonlocal last
        last = m
        return " "

    code = _COMMENT.sub(space, text)
    if last is not None:
        comment = last.group()
        if comment[1] == "*" and not (len(comment) >= 4 and comment.endswith("*/")):
            # an unclosed `/*`, matched to the end of the text: its space is code's last
            start = last.start()
            code = code[:-1] + "/" + _LINE_COMMENT.sub(" ", text[start + 1 :])
    return code


def _definitions(code: str) -> Counter[tuple[str, str]]:
    """(class, name) of each ``Class::name(`` definition in ``code`` (without comments): one
    that follows a return type (``Tensor``, ``&``, ``>``, ``*``), not ``return``, ``=``,
    ``(``, ``,`` and the like, as a call does."""
    found: Counter[tuple[str, str]] = Counter()
    reversed_code = code[::-1]
    end = len(code)
    for m in _QUALIFIED_NAME.finditer(code):
        if m.group(3) is None:
            continue
        before = _BEFORE_REVERSED.match(reversed_code, end - m.start())
        if before is not None and before.group(1) not in _NOT_TYPES_REVERSED:
            found[m.group(1), m.group(2)] += 1
    return found


def check_kernels(backend: ExternalBackend, sources: dict[str, str]) -> None:
    """Raise one error per kernel name whose definitions in ``sources`` (path -> text)
    are fewer or more than its declarations."""
    spec = backend.spec
    definitions: Counter[tuple[str, str]] = Counter()
    for text in sources.values():
        definitions.update(_definitions(_without_comments(text)))
    found: Counter[str] = Counter()
    for (class_name, name), n in definitions.items():
        if class_name == spec.class_name:
            found[name] += n
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
        impls = definitions[claim.impl_class, "impl"]
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
