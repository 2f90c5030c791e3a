"""The import graph of the atengen package, read from the source with `ast` (nothing is imported).

    python tests/support/import_graph.py [TOOL_DIR]   prints one `module -> imported module` line per edge

tests/repo/test_layering.py checks the layering rules on it.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path


def module_name(tool_dir: Path, path: Path) -> str:
    parts = list(path.relative_to(tool_dir).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def import_edges(tool_dir: Path) -> dict[str, dict[str, set[str]]]:
    """module -> imported atengen module -> the names imported from it ('' for the module)."""
    modules = {module_name(tool_dir, p): p for p in sorted(tool_dir.glob("atengen/**/*.py"))}
    edges: dict[str, dict[str, set[str]]] = {}
    for mod, path in modules.items():
        out = edges.setdefault(mod, {})
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                for alias in node.names:
                    sub = f"{node.module}.{alias.name}"
                    if sub in modules:  # `from atengen.model import dispatch_keys`
                        out.setdefault(sub, set()).add("")
                    elif node.module.startswith("atengen"):
                        out.setdefault(node.module, set()).add(alias.name)
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.name.startswith("atengen"):
                        out.setdefault(alias.name, set()).add("")
    return edges


def main(argv: list[str]) -> int:
    tool_dir = Path(argv[1]) if len(argv) > 1 else Path(__file__).resolve().parents[2] / "tool"
    for mod, targets in sorted(import_edges(tool_dir).items()):
        for target in sorted(targets):
            print(f"{mod} -> {target}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
