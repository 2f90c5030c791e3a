"""The last step of an ABI-bound library (aten_shared_library): lib<name>.so is the linked
library with its references to torch's libraries made weak, so that the dynamic loader never
refuses it for a symbol another torch release lacks. Its code then runs, and the release guard
(rules/runtime/atengen/torch_release_guard.cc) refuses it with one line that names both releases,
before anything of it is registered; in the release it was built for, the guard also checks that
every weak reference found its symbol.

    release_bound_link.py LABEL LINKED_LIBRARY OUTPUT TORCH_LIBRARY...
"""

from __future__ import annotations

import sys

from atengen.wheel_symbols import defined_among, undefined_dynamic_symbols, with_weak_references


def main(argv: list[str]) -> int:
    if len(argv) < 4:
        print(
            "usage: release_bound_link.py LABEL LINKED_LIBRARY OUTPUT TORCH_LIBRARY...",
            file=sys.stderr,
        )
        return 2
    label, library, output, *torch_libraries = argv
    try:
        strong = frozenset(
            s.name.encode() for s in undefined_dynamic_symbols(library) if not s.weak
        )
        torch_names = frozenset().union(*(defined_among(path, strong) for path in torch_libraries))
        edited, _ = with_weak_references(library, torch_names)
    except ValueError as e:
        print(f"rules_aten: {label}: {e}", file=sys.stderr)
        return 1
    with open(output, "wb") as f:
        f.write(edited)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
