"""The missing-kernel check of an ABI-bound lib<name>.so (`atengen bound-link`).

The generated headers declare the kernels the registrations call (`<ns>/ops/<root>_native.h`:
free functions in at::native or the namespace a dispatch entry names, and the impl() of
structured kernels; `<ns>/ops/<root>_meta.h`: the meta() of structured meta classes; a
backend's `<Backend>NativeFunctions.h`: the static members of its class). A kernel left
undefined, or defined with other parameter types (`float` for `double`), is not a link error:
a shared library may leave symbols to the process it loads into. It would surface only when
torch.ops.load_library fails with a mangled `undefined symbol`. So the last link step reads the
linked library's strong undefined references, and one that names a kernel of those headers and
that neither torch's libraries nor the user's shared libraries define fails the build, one line
per kernel, pointing at the declaration it must match.

Only names the generated headers declare are judged: whatever else stays undefined (a user
dependency's shared library, the C++ runtime) is the loader's business, as before.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from atengen.facts.wheel_symbols import UndefinedSymbol

_LENGTH = re.compile(r"[1-9][0-9]*")
# Comments and preprocessor lines: kept as newlines, so that offsets still give line numbers.
_NOISE = re.compile(r"//[^\n]*|/\*.*?\*/|^[ \t]*#[^\n]*", re.S | re.M)
_NAMESPACE = re.compile(r"\s*namespace\s+([\w:]+)\s*$")
_CLASS = re.compile(r"\s*(?:template\s*<[^{;]*>\s*)?(?:struct|class)\s+(?:[A-Z_]+\s+)?(\w+)\b")
_NAME_BEFORE_PAREN = re.compile(r"(\w+)\s*\($")
_NOT_DECLARATIONS = ("using", "typedef", "static_assert", "return", "friend")


@dataclass(frozen=True)
class Declaration:
    """A function a generated header declares."""

    qualified: str  # `at::native::scale_cpu`, `myops::meta::structured_foo::meta`
    path: str
    line: int


def header_declarations(text: str, path: str) -> list[Declaration]:
    """The functions the header declares (no body) in namespaces and classes: what the
    generated headers hold. A function with a body, and anything inside one, is skipped."""
    text = _NOISE.sub(lambda m: "\n" * m.group().count("\n"), text)
    found = []
    # One entry per open brace: the scope's name parts, or None for a body (function, lambda).
    scopes: list[list[str] | None] = []
    start = parens = 0
    for m in re.finditer(r"[{};()]", text):
        char = m.group()
        if char in "()":
            parens = max(0, parens + (1 if char == "(" else -1))
            continue
        if parens:  # a default argument's braces
            continue
        statement = text[start : m.start()]
        start = m.end()
        if char == "{":
            namespace = _NAMESPACE.match(statement)
            named = _CLASS.match(statement)
            if namespace:
                scopes.append(namespace.group(1).split("::"))
            elif named:
                scopes.append([named.group(1)])
            else:
                scopes.append(None)
        elif char == "}":
            if scopes:
                scopes.pop()
        elif "(" in statement and None not in scopes:
            head = statement[: statement.index("(") + 1]
            name = _NAME_BEFORE_PAREN.search(head)
            words = statement.split()
            if name is None or not words or words[0] in _NOT_DECLARATIONS:
                continue
            parts = [part for scope in scopes if scope for part in scope]
            line = text.count("\n", 0, m.start() - len(statement) + name.start()) + 1
            found.append(Declaration("::".join([*parts, name.group(1)]), path, line))
    return found


def declared_kernels(header_dirs: Iterable[str]) -> dict[str, Declaration]:
    """The first declaration of each qualified name in the `.h` files under ``header_dirs``
    (tree artifacts of the generator), walked in a fixed order."""
    kernels: dict[str, Declaration] = {}
    for top in header_dirs:
        for root, dirs, files in os.walk(top):
            dirs.sort()
            for file in sorted(files):
                if not file.endswith(".h"):
                    continue
                path = os.path.join(root, file)
                try:
                    with open(path, encoding="utf-8", errors="replace") as f:
                        text = f.read()
                except OSError as e:
                    raise ValueError(f"{path}: cannot read: {e.strerror}") from None
                for d in header_declarations(text, path):
                    kernels.setdefault(d.qualified, d)
    return kernels


def qualified_name(symbol: str) -> str | None:
    """The qualified name of a mangled (Itanium ABI) function in a namespace or class:
    `_ZN2at6native9scale_cpuERKNS_6TensorEd` is `at::native::scale_cpu`. None for what the
    generated headers never declare (templates, operators, constructors, global functions)."""
    m = re.match(r"_ZN[rVKRO]*", symbol)
    if m is None:
        return None
    at, parts = m.end(), []
    while at < len(symbol) and symbol[at] != "E":
        length = _LENGTH.match(symbol, at)
        if length is None:
            return None
        end = length.end() + int(length.group())
        if end > len(symbol):
            return None
        parts.append(symbol[length.end() : end])
        at = end
        while symbol.startswith("B", at):  # an ABI tag ([abi:cxx11]): not part of the name
            tag = _LENGTH.match(symbol, at + 1)
            if tag is None:
                return None
            at = tag.end() + int(tag.group())
    if at >= len(symbol) or not parts:
        return None
    return "::".join(parts)


@dataclass(frozen=True)
class MissingKernel:
    symbol: str  # the undefined reference, mangled
    declaration: Declaration
    defined_as: tuple[str, ...]  # the library's own definitions of that name, mangled


def missing_kernels(
    undefined: list[UndefinedSymbol],
    defined_elsewhere: frozenset[bytes],
    defined_here: list[bytes],
    declared: dict[str, Declaration],
) -> list[MissingKernel]:
    """The strong undefined references to declared kernels that no other library defines."""
    own: dict[str, list[str]] = {}
    for raw in defined_here:
        name = raw.decode("utf-8", "replace")
        q = qualified_name(name)
        if q is not None:
            own.setdefault(q, []).append(name)
    missing = []
    for s in undefined:
        if s.weak or s.name.encode() in defined_elsewhere:
            continue
        q = qualified_name(s.name)
        if q is not None and q in declared:
            missing.append(MissingKernel(s.name, declared[q], tuple(own.get(q, ()))))
    # In the headers' order, whatever the order of the symbol table.
    return sorted(missing, key=lambda k: (k.declaration.path, k.declaration.line, k.symbol))


def demangler() -> Callable[[list[str]], list[str]]:
    """`c++filt` over a list of names when it is on PATH, else the names as they are."""
    tool = shutil.which("c++filt")

    def demangle(names: list[str]) -> list[str]:
        if tool is None or not names:
            return names
        try:
            out = subprocess.run(
                [tool], input="\n".join(names) + "\n", capture_output=True, text=True, timeout=60
            ).stdout.splitlines()
        except (OSError, subprocess.SubprocessError):
            return names
        return out if len(out) == len(names) else names

    return demangle


def messages(
    label: str, missing: list[MissingKernel], demangle: Callable[[list[str]], list[str]]
) -> list[str]:
    """One `header:line: error:` line per missing kernel."""
    names = demangle([n for k in missing for n in (k.symbol, *k.defined_as)])
    # A control character in a name (a damaged string table) escaped: each kernel one line.
    names = ["".join(c if c.isprintable() else ascii(c)[1:-1] for c in n) for n in names]
    lines = []
    for k in missing:
        wanted, *others = names[: 1 + len(k.defined_as)]
        names = names[1 + len(k.defined_as) :]
        if others:
            hint = (
                "defined as "
                + " and as ".join(others)
                + " instead: make its parameters match this declaration"
            )
        else:
            hint = "define it in the library's srcs or deps"
        lines.append(
            f"{k.declaration.path}:{k.declaration.line}: error: {label}: kernel {wanted} is "
            f"defined neither by the library nor by torch; {hint}"
        )
    return lines
