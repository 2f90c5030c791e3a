"""Programs with mutations and views on the functional hostdev backend, under functionalization.

    python functional_demo.py bazel-bin/libhost_functional.so

Each program runs under torch.func.functionalize(f, remove="mutations_and_views") on hostdev
tensors and is compared with f itself on the CPU. torch.ops.hostdev.calls() (kernels_functional.cpp)
logs every operator that reached PrivateUse1; a program passes only if all of them are listed in
backend_functional.yaml, none of them through the fallback. It also records what the same
mutations do without functionalize.

Prints one JSON object: {"checks": {name: true/false}, "details": {...}}; exits 1 if a check
failed. tests/workspaces/test_privateuse1_example.py runs it after building the example.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import torch
from demo import load_backend, same

YAML = Path(__file__).resolve().parent / "backend_functional.yaml"


def listed_ops() -> set[str]:
    """The operators under `supported:` in backend_functional.yaml."""
    text = YAML.read_text().split("supported:", 1)[1].split("device_guard:", 1)[0]
    return set(re.findall(r"^  - (\S+)", text, re.MULTILINE))


def inplace(x, y):
    x = x.clone()
    x.add_(y)
    x.mul_(y)
    x.abs_()
    return x


def factories(x, y):
    # composite factories: empty + fill_/zero_ inside (see decompose_functionalized)
    z = torch.zeros_like(x)
    z.copy_(y)
    return torch.ones(2, 3, device=x.device) + z, torch.full((3,), 2.0, device=x.device)


def out_variants(x, y):
    o = torch.empty_like(x)
    torch.add(x, y, alpha=2, out=o)
    p = x.new_empty(0)  # out= resizes it
    torch.mul(o, y, out=p)
    return o, p


def through_views(x, y):
    z = x.clone()
    z.transpose(0, 1)[1].mul_(10.0)  # select of a transpose: written back through both
    z[0].fill_(-1.0)
    z.view(-1)[2:4].add_(y.view(-1)[:2])  # view + slice
    return z, z.t().sum()


def inplace_view(x, y):
    z = x.clone()
    z.t_()  # transpose_: changes z's own view of its storage
    z.unsqueeze_(0)
    z.add_(y.t())
    return z


def mutates_input(x, y):
    x.mul_(y)  # functionalize copies the new value back into the caller's tensor
    return x.sum()


PROGRAMS = [inplace, factories, out_variants, through_views, inplace_view, mutates_input]


def run_functionalized(f, x_cpu: torch.Tensor, y_cpu: torch.Tensor, dev: torch.device):
    """f on the CPU, and f functionalized on hostdev: (cpu results, device results, calls, inputs)."""
    x, y = x_cpu.to(dev), y_cpu.to(dev)
    x_ref = x_cpu.clone()
    expected = f(x_ref, y_cpu.clone())
    torch.ops.hostdev.clear_calls()
    got = torch.func.functionalize(f, remove="mutations_and_views")(x, y)
    calls = list(torch.ops.hostdev.calls())
    expected = expected if isinstance(expected, tuple) else (expected,)
    got = got if isinstance(got, tuple) else (got,)
    return expected, got, calls, (x, x_ref)


def error_of(f) -> str:
    try:
        f()
    except RuntimeError as e:
        return str(e).splitlines()[0]
    return ""


def main(library: str) -> int:
    dev = load_backend(library)
    listed = listed_ops()
    checks: dict[str, bool] = {}
    details: dict[str, object] = {}
    x_cpu = torch.arange(6.0).reshape(2, 3) - 2.5
    y_cpu = torch.full((2, 3), 1.5)

    for f in PROGRAMS:
        expected, got, calls, (x, x_ref) = run_functionalized(f, x_cpu, y_cpu, dev)
        details[f.__name__] = sorted(set(calls))
        unlisted = sorted({c for c in calls if c not in listed})
        if unlisted:
            details[f.__name__ + ":unlisted"] = unlisted
        checks[f.__name__] = (
            all(same(g, e) for g, e in zip(got, expected, strict=True))
            and same(x, x_ref)  # inputs: mutated the same way, or not at all
            and bool(calls)
            and not unlisted
        )

    # Views under functionalize never reach the device as views: *_copy and *_scatter do.
    seen = {c for f in PROGRAMS for c in details[f.__name__]}
    checks["views_became_copies"] = {
        "view_copy",
        "transpose_copy.int",
        "t_copy",
        "select_copy.int",
        "slice_copy.Tensor",
        "select_scatter",
        "slice_scatter",
        "unsqueeze_copy",
    } <= seen

    # Without functionalize the same operations reach PrivateUse1 as they are. No kernel is
    # registered for them (functional = True generates no out=/inplace wrappers), so they reach
    # the fallback, which refuses them; functional operators without a kernel run on the CPU.
    a, b = x_cpu.to(dev), y_cpu.to(dev)
    torch.ops.hostdev.clear_calls()
    errors = {
        "add_": error_of(lambda: a.add_(b)),
        "add.out": error_of(lambda: torch.add(a, b, out=torch.empty_like(a))),
        "view": error_of(lambda: a.view(6)),
        "ones": error_of(lambda: torch.ones(3, device=dev)),  # empty + fill_
    }
    details["without_functionalize"] = errors
    details["without_functionalize_calls"] = list(torch.ops.hostdev.calls())
    checks["without_functionalize_fails"] = all(
        "hostdev is a functional backend" in e for e in errors.values()
    ) and same(a, x_cpu)
    # transpose_ is CompositeExplicitAutograd and changes only a's sizes and strides: it never
    # reaches the backend, so it works.
    a.t_()
    checks["without_functionalize_t_"] = same(a, x_cpu.t())
    a.t_()
    torch.ops.hostdev.clear_calls()
    # flip: no kernel here and no composite one in torch, so the CPU fallback runs it
    checks["functional_ops_run_eagerly"] = same(a + b, x_cpu + y_cpu) and same(
        a.flip(0), x_cpu.flip(0)
    )
    details["eager_calls"] = list(torch.ops.hostdev.calls())

    print(json.dumps({"checks": checks, "details": details}, sort_keys=True))
    return 0 if all(checks.values()) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
