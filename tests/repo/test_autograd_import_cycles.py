"""No import circle in the atengen package: no module reaches itself through the modules it
imports (read from the source by tests/support/import_graph.py; imports under TYPE_CHECKING count, as
they tie the modules together just the same). A circle makes the import order matter and hides
which of two modules is the lower one."""

from __future__ import annotations

from pathlib import Path

from tests.support.import_graph import import_edges

TOOL = Path(__file__).resolve().parents[2] / "tool"


def import_circles(edges: dict[str, dict[str, set[str]]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm), each
    sorted, plus any module importing itself."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    circles: list[list[str]] = []

    def visit(module: str) -> None:
        index[module] = low[module] = len(index)
        stack.append(module)
        on_stack.add(module)
        for target in edges.get(module, {}):
            if target not in edges:
                continue
            if target not in index:
                visit(target)
                low[module] = min(low[module], low[target])
            elif target in on_stack:
                low[module] = min(low[module], index[target])
        if low[module] == index[module]:
            component = []
            while True:
                m = stack.pop()
                on_stack.discard(m)
                component.append(m)
                if m == module:
                    break
            if len(component) > 1 or module in edges[module]:
                circles.append(sorted(component))

    for module in sorted(edges):
        if module not in index:
            visit(module)
    return sorted(circles)


def test_finds_a_circle_of_two_and_of_three_modules():
    edges = {
        "a": {"b": set()},
        "b": {"a": set(), "c": set()},
        "c": {"d": set()},
        "d": {"e": set()},
        "e": {"c": set()},
        "f": {"a": set()},
    }
    assert import_circles(edges) == [["a", "b"], ["c", "d", "e"]]


def test_no_import_circles_in_atengen():
    circles = import_circles(import_edges(TOOL))
    assert not circles, "import circles:\n" + "\n".join(" <-> ".join(c) for c in circles)
