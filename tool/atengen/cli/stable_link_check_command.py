"""The stable-ABI link check of aten_codegen(abi = "stable"): reads the undefined dynamic
symbols of the linked library and, when none is outside torch's C shim and the C/C++/CUDA
runtimes (atengen/stable/link_check.py), copies it to lib<name>.so; else prints one line per
problem and fails, so that lib<name>.so is never built.

A kernel that a generated header under a `--kernel_headers` directory declares and the library
leaves undefined is the user's mistake, not an ABI violation: the kernel is missing, or defined
with other parameters (`float` for `double`). Its line points at the declaration and names what
was defined instead, as the ABI-bound libraries' check does (atengen/kernel_link_check.py).

    stable_link_check.py [--kernel_headers=DIR]... LABEL LINKED_LIBRARY OUTPUT
"""

from __future__ import annotations

import shutil
import sys

from atengen import kernel_link_check
from atengen.stable.link_check import messages
from atengen.wheel_symbols import defined_symbols, undefined_dynamic_symbols

_USAGE = "usage: stable_link_check.py [--kernel_headers=DIR]... LABEL LINKED_LIBRARY OUTPUT"


def main(argv: list[str]) -> int:
    header_dirs = []
    while argv and argv[0].startswith("--"):
        flag, _, value = argv[0].partition("=")
        if flag != "--kernel_headers":
            print(f"stable_link_check.py: unknown flag {flag}\n{_USAGE}", file=sys.stderr)
            return 2
        header_dirs.append(value)
        argv = argv[1:]
    if len(argv) != 3:
        print(_USAGE, file=sys.stderr)
        return 2
    label, library, output = argv
    try:
        symbols = undefined_dynamic_symbols(library)
        lines: list[str] = []
        if header_dirs:
            missing = kernel_link_check.missing_kernels(
                symbols,
                frozenset(),
                # Its own kernels are hidden (not in .dynsym): .symtab names them.
                defined_symbols(library, (b"_ZN",)),
                kernel_link_check.declared_kernels(header_dirs),
            )
            lines = kernel_link_check.messages(label, missing, kernel_link_check.demangler())
            reported = {k.symbol for k in missing}
            symbols = [s for s in symbols if s.name not in reported]
    except ValueError as e:
        print(f"rules_aten: {label}: {e}", file=sys.stderr)
        return 1
    lines += messages(label, symbols)
    if lines:
        print("\n".join(lines), file=sys.stderr)
        return 1
    shutil.copyfile(library, output)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
