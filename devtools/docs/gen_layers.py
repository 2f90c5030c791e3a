#!/usr/bin/env python3
"""Writes docs/layers.dot and the list of layers in tool/atengen/__init__.py's docstring from
ALLOWED and DESCRIPTIONS in tests/repo/test_layering.py, the one source of the generator's layering.

    ./dev docs            rewrite them (with docs/rules.md's tables)
    ./dev docs --check    change nothing; exit 1, naming the stale files, when they differ

tests/repo/test_layering.py is read with Python's parser, not imported: its assignments of SHARED,
ALLOWED and DESCRIPTIONS (and the names they use) are sets, dicts and strings built with `|`.
The drawing leaves out an edge that a longer path implies (its transitive reduction); ALLOWED
itself is not transitive, and the test checks ALLOWED. Stdlib only: any Python 3.11 runs it.
"""

from __future__ import annotations

import argparse
import ast
import difflib
import sys
import textwrap
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SOURCE = "tests/repo/test_layering.py"
DOT = "docs/layers.dot"
PACKAGE = "tool/atengen/__init__.py"
BEGIN = "Its layers (generated from tests/repo/test_layering.py by ./dev docs), lowest first:"
END = "(end of the generated list)"


def _value(node: ast.expr, names: dict[str, object]) -> object:
    """A set, dict or string literal, a name assigned before, `a | b`, or `set()`."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.Set):
        return {_value(e, names) for e in node.elts}
    if isinstance(node, ast.Dict) and None not in node.keys:
        pairs = zip(node.keys, node.values, strict=True)
        return {_value(k, names): _value(v, names) for k, v in pairs if k is not None}
    if isinstance(node, ast.Name) and node.id in names:
        return names[node.id]
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
        return _value(node.left, names) | _value(node.right, names)  # type: ignore[operator]
    if isinstance(node, ast.Call) and ast.unparse(node) == "set()":
        return set()
    raise SystemExit(f"{SOURCE}:{node.lineno}: error: cannot read {ast.unparse(node)!r}")


def read_layering(text: str) -> tuple[dict[str, set[str]], dict[str, str]]:
    """ALLOWED and DESCRIPTIONS of tests/repo/test_layering.py, in their order."""
    names: dict[str, object] = {}
    for node in ast.parse(text).body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            target = node.targets[0]
            if isinstance(target, ast.Name) and target.id in {"_BASE", "ALLOWED", "DESCRIPTIONS"}:
                names[target.id] = _value(node.value, names)
    allowed, described = names.get("ALLOWED"), names.get("DESCRIPTIONS")
    if not isinstance(allowed, dict) or not isinstance(described, dict):
        raise SystemExit(f"{SOURCE}: error: no ALLOWED or DESCRIPTIONS dict")
    if list(allowed) != list(described):
        raise SystemExit(
            f"{SOURCE}: error: DESCRIPTIONS must name the layers of ALLOWED in its order: "
            f"{list(allowed)} against {list(described)}"
        )
    return allowed, described


def reduced_edges(allowed: dict[str, set[str]]) -> list[tuple[str, str]]:
    """(layer, layer it may import), less those a longer path of ALLOWED implies."""

    def below(layer: str) -> set[str]:
        seen: set[str] = set()
        todo = list(allowed[layer])
        while todo:
            name = todo.pop()
            if name not in seen:
                seen.add(name)
                todo.extend(allowed[name])
        return seen

    order = list(allowed)
    edges = []
    for layer in reversed(order):
        for target in sorted(allowed[layer], key=order.index, reverse=True):
            if not any(target in below(other) for other in allowed[layer] - {target}):
                edges.append((layer, target))
    return edges


def render_dot(allowed: dict[str, set[str]], described: dict[str, str]) -> str:
    lines = [
        "// The layers of the generator package (tool/atengen), linked from docs/design.md.",
        "// Generated from ALLOWED and DESCRIPTIONS in tests/repo/test_layering.py by ./dev docs",
        "// (devtools/docs/gen_layers.py); do not edit. An edge points from a layer to one it may import;",
        "// an edge that a longer path implies is left out (ALLOWED itself, which the test checks,",
        "// is not transitive). To draw it, with Graphviz (apt-get install graphviz):",
        "//     dot -Tsvg docs/layers.dot -o layers.svg",
        "digraph layers {",
        '  graph [rankdir=TB, fontname="Helvetica", fontsize=11, nodesep=0.3, ranksep=0.3, '
        'bgcolor="white"];',
        '  node [shape=box, style="rounded,filled", fillcolor="#f4f6fa", color="#5b6b84", '
        'fontname="Helvetica", fontsize=10];',
        '  edge [color="#5b6b84"];',
        "",
    ]
    for layer in reversed(list(allowed)):
        label = "\\n".join([f"{layer}/", *textwrap.wrap(described[layer], 40)])
        label = label.replace('"', '\\"')
        lines.append(f'  {layer} [label="{label}"];')
    lines.append("")
    lines += [f"  {a} -> {b};" for a, b in reduced_edges(allowed)]
    lines.append("}")
    return "\n".join(lines) + "\n"


def render_list(allowed: dict[str, set[str]], described: dict[str, str]) -> str:
    out = [BEGIN, ""]
    for layer, imports in allowed.items():
        order = list(allowed)
        may = ", ".join(f"``{n}/``" for n in sorted(imports, key=order.index)) or "nothing"
        out += textwrap.wrap(
            f"- ``{layer}/``: {described[layer]}; imports {may}.",
            width=96,
            subsequent_indent="  ",
        )
    out += ["", END]
    return "\n".join(out)


def regenerate_package(text: str, listing: str) -> str:
    start, end = text.find(BEGIN), text.find(END)
    if start < 0 or end < start:
        raise SystemExit(f"{PACKAGE}: error: no {BEGIN!r} ... {END!r} in its docstring")
    return text[:start] + listing + text[end + len(END) :]


def outputs(root: Path = REPO) -> dict[str, str]:
    """Each generated file's path (relative to root) and what it should hold."""
    allowed, described = read_layering((root / SOURCE).read_text())
    package = (root / PACKAGE).read_text()
    return {
        DOT: render_dot(allowed, described),
        PACKAGE: regenerate_package(package, render_list(allowed, described)),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="change nothing; exit 1 if stale")
    parser.add_argument("--diff", action="store_true", help="with --check: print the diffs")
    args = parser.parse_args(argv)
    stale = []
    for path, new in outputs().items():
        old = (REPO / path).read_text() if (REPO / path).exists() else ""
        if old == new:
            continue
        if args.check:
            stale.append(path)
            if args.diff:
                sys.stdout.writelines(
                    difflib.unified_diff(
                        old.splitlines(True), new.splitlines(True), f"a/{path}", f"b/{path}"
                    )
                )
        else:
            (REPO / path).write_text(new)
            print(f"wrote {path}")
    if stale:
        print(f"stale: {', '.join(stale)}; run ./dev docs", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
