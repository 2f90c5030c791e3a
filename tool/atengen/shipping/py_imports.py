"""The check that a wheel's Python modules (`py_srcs`) import only what the installed wheel has:
the standard library, torch (its requirement), the package's own modules and the distributions
named in `requires`. A module importing anything else would install cleanly and fail at
`import <package>`, on the user's machine; here it fails the build, one line."""

from __future__ import annotations

import ast
import sys
from dataclasses import dataclass


@dataclass(frozen=True)
class PySource:
    module: str  # the module's name inside the package (its file name without .py)
    label: str  # how the user names it (its path), for messages
    text: str


def _top(name: str) -> str:
    return name.split(".")[0]


def import_problems(
    sources: list[PySource], package: str, shipped: frozenset[str], required: frozenset[str]
) -> list[str]:
    """One message per import that the installed wheel could not satisfy, or a file that does
    not parse; ``shipped``: the package's module names, ``required``: the import names of the
    `requires` distributions (torch among them)."""
    problems = []
    allowed = set(sys.stdlib_module_names) | set(required) | {package}
    for source in sources:
        try:
            tree = ast.parse(source.text, filename=source.label)
        except SyntaxError as e:
            problems.append(f"{source.label}:{e.lineno}: not Python: {e.msg}")
            continue
        for node in ast.walk(tree):
            names: list[str] = []
            if not isinstance(node, (ast.Import, ast.ImportFrom)):
                continue
            if isinstance(node, ast.Import):
                names = [_top(a.name) for a in node.names if _top(a.name) not in allowed]
            elif node.level == 0:
                if node.module and _top(node.module) not in allowed:
                    names = [_top(node.module)]
            else:
                # Relative: `from .m import x` needs module m, `from . import m` each m.
                wanted = [_top(node.module)] if node.module else [a.name for a in node.names]
                names = [f".{m}" for m in wanted if node.level > 1 or m not in shipped]
            for name in names:
                if name in shipped:
                    problems.append(
                        f"{source.label}:{node.lineno} imports {name} by its bare name: in the "
                        f"wheel it is {package}.{name}; import it as `from . import {name}`"
                    )
                    continue
                problems.append(
                    f"{source.label}:{node.lineno} imports {name}, which the wheel neither "
                    "ships nor requires: add its module to py_srcs, or its distribution to "
                    "requires"
                )
    return problems
