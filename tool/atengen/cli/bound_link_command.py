"""The last step of an ABI-bound library (aten_shared_library): lib<name>.so is the linked
library with its references to torch's libraries made weak, so that the dynamic loader never
refuses it for a symbol another torch release lacks. Its code then runs, and the release guard
(rules/runtime/atengen/torch_release_guard.cc) refuses it with one line that names both releases,
before anything of it is registered; in the release it was built for, the guard also checks that
every weak reference found its symbol.

Before that, the missing-kernel check (atengen/kernel_link_check.py): a strong undefined
reference to a kernel the generated headers under a `--kernel_headers` directory declare, that
neither torch's libraries nor a `--shared_library` (the user's deps) define, fails the step with
one `header:line: error:` line per kernel, and no output is written.

    release_bound_link.py [--kernel_headers=DIR]... [--shared_library=PATH]...
        LABEL LINKED_LIBRARY OUTPUT TORCH_LIBRARY...
"""

from __future__ import annotations

import sys

from atengen.kernel_link_check import declared_kernels, demangler, messages, missing_kernels
from atengen.wheel_symbols import (
    defined_among,
    defined_dynamic_symbols,
    undefined_dynamic_symbols,
    with_weak_references,
)

_USAGE = (
    "usage: release_bound_link.py [--kernel_headers=DIR]... [--shared_library=PATH]... "
    "LABEL LINKED_LIBRARY OUTPUT TORCH_LIBRARY..."
)


def main(argv: list[str]) -> int:
    header_dirs, shared_libraries = [], []
    while argv and argv[0].startswith("--"):
        flag, _, value = argv[0].partition("=")
        if flag == "--kernel_headers":
            header_dirs.append(value)
        elif flag == "--shared_library":
            shared_libraries.append(value)
        else:
            print(f"release_bound_link.py: unknown flag {flag}\n{_USAGE}", file=sys.stderr)
            return 2
        argv = argv[1:]
    if len(argv) < 4:
        print(_USAGE, file=sys.stderr)
        return 2
    label, library, output, *torch_libraries = argv
    try:
        undefined = undefined_dynamic_symbols(library)
        strong = frozenset(s.name.encode() for s in undefined if not s.weak)
        # Only what the library refers to is looked up (through the libraries' hash tables).
        torch_names = frozenset().union(*(defined_among(path, strong) for path in torch_libraries))
        if header_dirs:
            declared = declared_kernels(header_dirs)
            elsewhere = torch_names.union(
                *(defined_among(path, strong) for path in shared_libraries)
            )
            missing = missing_kernels(
                undefined,
                elsewhere,
                defined_dynamic_symbols(library, (b"_ZN",)),
                declared,
            )
            if missing:
                print("\n".join(messages(label, missing, demangler())), file=sys.stderr)
                return 1
        edited, _ = with_weak_references(library, torch_names)
    except ValueError as e:
        print(f"rules_aten: {label}: {e}", file=sys.stderr)
        return 1
    with open(output, "wb") as f:
        f.write(edited)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
