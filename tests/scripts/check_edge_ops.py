"""A library of schemas at the edges of what aten_codegen reads (tests/data/edge_ops), loaded into
a fresh interpreter and called.

    python tests/scripts/check_edge_ops.py LIBRARY NAMESPACE SCHEMAS_JSON

Run by tests/workspace/test_schema_edge_libraries.py once per library: namespace edgeops (the build's torch
release: maybe_scale, opt_count) and edgestable (the stable ABI: f, g). SCHEMAS_JSON maps each op
name to its ops.yaml schema text without the namespace. Prints one JSON line, {"checks": {name:
bool}, "details": {name: text}}: every registered schema equals torch._C.parse_schema(NAMESPACE +
"::" + text) (str equality), and every op's values, with its optional argument given and None.
Such calls once died with SIGSEGV: the script then prints nothing and exits with a signal.
"""

from __future__ import annotations

import json
import sys
import traceback

import torch


def fail_text() -> str:
    return traceback.format_exc(limit=3)[-1500:]


def check_schemas(namespace: str, schemas: dict[str, str], checks: dict, details: dict) -> None:
    for name, text in schemas.items():
        try:
            registered = getattr(getattr(torch.ops, namespace), name).default._schema
            expected = torch._C.parse_schema(f"{namespace}::{text}")
            same = str(registered) == str(expected)
            checks[f"schema_{name}"] = same
            if not same:
                details[f"schema_{name}"] = f"registered {registered}; torch parses {expected}"
        except Exception:
            checks[f"schema_{name}"] = False
            details[f"schema_{name}"] = fail_text()


def maybe_scale_values() -> bool:
    """x * 2 without a key; with one, x * 2 and the key tripled in place (the same tensor)."""
    op = torch.ops.edgeops.maybe_scale
    x = torch.arange(6, dtype=torch.float32).reshape(2, 3)
    x_before = x.clone()
    alone = op(x, None)
    if not (torch.equal(alone, x_before * 2) and torch.equal(x, x_before)):
        return False
    key = torch.randn(4, generator=torch.Generator().manual_seed(0))
    key_before = key.clone()
    key_ptr = key.data_ptr()
    out = op(x, key)
    return (
        torch.equal(out, x_before * 2)
        and torch.equal(x, x_before)
        and torch.equal(key, key_before * 3)
        and key.data_ptr() == key_ptr
    )


def maybe_self_values() -> bool:
    """maybe_self writes self either way; it returns self itself, or None."""
    x = torch.zeros(3)
    given = torch.ops.edgeops.maybe_self(x, True)
    none = torch.ops.edgeops.maybe_self(x, False)
    return (
        given is not None
        and given.data_ptr() == x.data_ptr()
        and none is None
        and torch.equal(x, torch.full((3,), 2.0))
    )


def value_checks(namespace: str) -> dict:
    """Each check's name and a function returning whether its values are right."""
    t = torch.zeros(2, 3)
    if namespace == "edgeops":
        ops = torch.ops.edgeops
        return {
            "maybe_scale": maybe_scale_values,
            "opt_count_5": lambda: ops.opt_count(t, 5) == 5,
            "opt_count_none": lambda: ops.opt_count(t, None) == -1,
            "count_keys": lambda: ops.count_keys(t, ["abcd", "e"], ["x", "y", "z"]) == 4203,
            "count_keys_none": lambda: ops.count_keys(t, [], None) == -1,
            "maybe_self": maybe_self_values,
        }
    ops = torch.ops.edgestable
    return {
        "f_5": lambda: ops.f(t, 5) == 5 + t.numel(),
        "f_none": lambda: ops.f(t, None) == -1 + t.numel(),
        "g_3": lambda: ops.g(t, [1, 2, 3]) == 3,
        "g_empty": lambda: ops.g(t, []) == 0,
        "g_none": lambda: ops.g(t, None) == -1,
    }


def check_values(namespace: str, checks: dict, details: dict) -> None:
    for name, fn in value_checks(namespace).items():
        try:
            checks[f"values_{name}"] = bool(fn())
        except Exception:
            checks[f"values_{name}"] = False
            details[f"values_{name}"] = fail_text()


def main(argv: list[str]) -> int:
    library, namespace, schemas = argv[0], argv[1], json.loads(argv[2])
    checks: dict[str, bool] = {}
    details: dict = {}
    torch.ops.load_library(library)
    check_schemas(namespace, schemas, checks, details)
    check_values(namespace, checks, details)
    print(json.dumps({"checks": checks, "details": details}, sort_keys=True))
    return 0 if all(checks.values()) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
