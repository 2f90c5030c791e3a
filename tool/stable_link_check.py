"""The stable-ABI link check of aten_codegen(abi = "stable"): reads the undefined dynamic
symbols of the linked library and, when none is outside torch's C shim and the C/C++/CUDA
runtimes (atengen/stable/link_check.py), copies it to lib<name>.so; else prints one line per
offending symbol group and fails, so that lib<name>.so is never built.

    stable_link_check.py LABEL LINKED_LIBRARY OUTPUT
"""

from __future__ import annotations

import shutil
import sys

from atengen.stable.link_check import messages
from atengen.wheel_symbols import undefined_dynamic_symbols


def main(argv: list[str]) -> int:
    label, library, output = argv
    try:
        symbols = undefined_dynamic_symbols(library)
    except ValueError as e:
        print(f"rules_aten: {label}: {e}", file=sys.stderr)
        return 1
    lines = messages(label, symbols)
    if lines:
        print("\n".join(lines), file=sys.stderr)
        return 1
    shutil.copyfile(library, output)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
