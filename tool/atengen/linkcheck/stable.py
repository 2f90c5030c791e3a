"""The stable-ABI link check: which undefined symbols of a linked library fall outside torch's
stable ABI.

A library built with ``abi = "stable"`` must load into every torch release from its target on,
so it may need from torch only the C shim that libtorch_cpu exports for that purpose
(``aoti_torch_*``, ``torch_*``: unmangled C functions, kept from release to release). Anything
else it takes from torch (``at::``, ``c10::``, ``torch::`` C++ functions, which change between
releases) would load into the release it was built against and fail to load, or misbehave, in
another. What it may also need is the C, C++ and CUDA runtimes: their symbols carry a version
that names their library (``memcpy@GLIBC_2.14`` of ``libc.so.6``), which torch's never do.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from atengen.facts.wheel_symbols import (
    UndefinedSymbol,
    defined_symbols,
    undefined_dynamic_symbols,
)
from atengen.linkcheck.kernels import declared_kernels, demangler, missing_kernels
from atengen.linkcheck.kernels import messages as kernel_messages

# The C shim of libtorch_cpu (torch/csrc/inductor/aoti_torch/c/shim.h, torch/csrc/stable/c/).
SHIM_PREFIXES = ("aoti_torch_", "torch_")
# The runtimes a stable library may need, by the library a symbol's version names.
_RUNTIME_LIBRARY = re.compile(
    r"(libc|libm|libdl|libpthread|librt|ld-linux-x86-64|libstdc\+\+|libgcc_s|libcudart)\.so\b"
)
# Hooks every shared library the toolchain links refers to, weakly and unversioned; and
# libstdc++'s assertion handler, std::__glibcxx_assert_fail, which GCC 15 calls in unoptimized
# builds: libtorch_cpu exports a copy of it (torch is built with the assertions on), and the linker,
# which sees torch's libraries before libstdc++, binds the reference there, without a version.
_TOOLCHAIN_HOOKS = frozenset(
    {
        "__gmon_start__",
        "_ITM_deregisterTMCloneTable",
        "_ITM_registerTMCloneTable",
        "_ZSt21__glibcxx_assert_failPKciS0_S0_",
    }
)
# An Itanium-mangled name's first namespace: `_ZN2at6native...`, `_ZNK3c1010TensorImpl...`,
# `_ZTVN5torch...` (vtables, typeinfo), `_ZZN...` (local entities).
_FIRST_NAME = re.compile(r"_Z(?:T[VIS]|Z|TH)?N?[rVKRO]*([1-9][0-9]*)")
_TORCH_NAMESPACES = ("at", "c10", "torch", "caffe2")


@dataclass(frozen=True)
class Offense:
    group: str  # `c10::`, `mylib::`, or a C function's name
    symbols: tuple[str, ...]


def offenses(symbols: list[UndefinedSymbol]) -> list[Offense]:
    """The undefined symbols outside the stable ABI and the runtimes, grouped by their first
    namespace (a C name is its own group); groups in order of their first symbol."""
    groups: dict[str, list[str]] = {}
    for s in symbols:
        if _allowed(s):
            continue
        groups.setdefault(_group(s.name), []).append(s.name)
    return [Offense(g, tuple(names)) for g, names in groups.items()]


def _allowed(s: UndefinedSymbol) -> bool:
    if s.library is not None:
        return _RUNTIME_LIBRARY.match(s.library) is not None
    if s.name in _TOOLCHAIN_HOOKS:
        return True
    return s.name.startswith(SHIM_PREFIXES)


def _group(name: str) -> str:
    m = _FIRST_NAME.match(name)
    if m is None:
        return name
    length = int(m.group(1))
    return name[m.end() : m.end() + length] + "::"


def _shown(name: str) -> str:
    """A symbol name as a message shows it: a control character (a damaged or hostile string
    table) escaped, so that each group stays one line."""
    return "".join(c if c.isprintable() else ascii(c)[1:-1] for c in name)


def messages(label: str, symbols: list[UndefinedSymbol]) -> list[str]:
    """One line per offending group (empty when the library passes)."""
    lines = []
    for o in offenses(symbols):
        what = (
            "torch's unstable C++ API"
            if o.group.removesuffix("::") in _TORCH_NAMESPACES
            else "neither torch's C shim nor a C/C++/CUDA runtime"
        )
        more = f" and {len(o.symbols) - 1} more" if len(o.symbols) > 1 else ""
        lines.append(
            f'rules_aten: {label} (abi = "stable") needs {_shown(o.group)} symbols, {what}, so '
            f"it would not load into every torch release from its target on: "
            f"{_shown(o.symbols[0])}{more}"
        )
    return lines


def stable_link_problems(label: str, library: str, header_dirs: list[str]) -> list[str]:
    """The lines that refuse ``library`` (none: it passes): first its missing kernels, when
    ``header_dirs`` name the generated headers, then its symbols outside the stable ABI.

    A kernel that a generated header declares and the library leaves undefined is the user's
    mistake, not an ABI violation: the kernel is missing, or defined with other parameters
    (`float` for `double`). Its line points at the declaration and names what was defined
    instead, as the ABI-bound libraries' check does (kernels.py). Raises ValueError for a
    library that cannot be read.
    """
    symbols = undefined_dynamic_symbols(library)
    lines: list[str] = []
    if header_dirs:
        missing = missing_kernels(
            symbols,
            frozenset(),
            # Its own kernels are hidden (not in .dynsym): .symtab names them.
            defined_symbols(library, (b"_ZN",)),
            declared_kernels(header_dirs),
        )
        lines = kernel_messages(label, missing, demangler())
        reported = {k.symbol for k in missing}
        symbols = [s for s in symbols if s.name not in reported]
    return lines + messages(label, symbols)
