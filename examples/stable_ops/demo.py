"""Loads libstableops.so into the running torch (any release from the library's torch_target on)
and checks its operators; prints one JSON line, {"checks": {name: bool}, "details": {...}}.

    python demo.py bazel-bin/libstableops.so bazel-bin/stableops_codegen/stableops_registrations.py
    python demo.py --package stableops    # the installed wheel (aten_wheel in BUILD.bazel)

What the library cannot carry in C++ under the stable ABI is registered in Python: the autograd
formulas of derivatives.yaml and the fake kernels stable mode derives by the generated module
(//:stableops_python), scaled_add's fake kernel by registrations.py beside this file (the wheel
imports its own copies of both). Gradients are checked by torch.autograd.gradcheck and
gradgradcheck, every op by torch.library.opcheck. details["cuda"] says what the CUDA half did: "ran" (a GPU ran
kernels.cu), "registered" (the CUDA registration loaded, no GPU to run it) or "absent" (built
without a CUDA toolkit).
"""

from __future__ import annotations

import importlib
import importlib.util
import json
import sys

import torch


def opcheck(op, args) -> str:
    """ "" when every default test of torch.library.opcheck passes, else the failures."""
    results = torch.library.opcheck(op, args, raise_exception=False)
    return "; ".join(f"{k}: {v}" for k, v in results.items() if v != "SUCCESS")


def main(argv: list[str]) -> int:
    checks: dict[str, bool] = {}
    details: dict = {"torch": torch.__version__}
    if argv[0] == "--package":
        package = importlib.import_module(argv[1])
        details["package"] = package.__file__
        # The package's ops module is torch.ops.stableops, typed (ops.pyi).
        checks["package_ops"] = package.ops.scaled_add is torch.ops.stableops.scaled_add
        # The generated module came with it, naming the ops with kernels for devices only:
        # scaled_add, whose fake kernel is registrations.py's, and scalar_calls, which this demo
        # calls eagerly only.
        generated = importlib.import_module(f"{argv[1]}.stableops_registrations")
        checks["package_registrations"] = generated.NEEDS_FAKE_KERNEL == (
            "stableops::scaled_add",
            "stableops::scalar_calls",
        )
    else:
        torch.ops.load_library(argv[0])
        spec = importlib.util.spec_from_file_location("stableops_registrations", argv[1])
        assert spec is not None and spec.loader is not None
        generated = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(generated)
        import registrations  # noqa: F401  (beside this file)
    ops = torch.ops.stableops

    x, y = torch.randn(4, 5), torch.randn(4, 5)
    checks["scaled_add"] = torch.equal(ops.scaled_add(x, y, 0.5), x + 0.5 * y)
    checks["scaled_add_strided"] = torch.equal(
        ops.scaled_add(x.t(), y.t(), -2.0), x.t() - 2 * y.t()
    )
    try:
        ops.scaled_add(x.double(), y.double(), 1.0)
        checks["scaled_add_refuses_float64"] = False
    except RuntimeError as e:
        checks["scaled_add_refuses_float64"] = "float32 tensors only" in str(e)
    a, b = torch.randn(2, 3), torch.randn(2, 3)
    checks["mulcat"] = torch.equal(ops.mulcat(a, b), torch.cat([a * b, a]))
    checks["mulcat_dim1"] = torch.equal(ops.mulcat(a, b, 1), torch.cat([a * b, a], 1))
    z = torch.randn(6, 4) * 3
    expected = z.clamp(-1.5, 1.5)
    ops.clamp_abs_inplace(z, 1.5)
    checks["clamp_abs_inplace"] = torch.equal(z, expected)
    w = torch.randn(6, 4) * 3
    view = w.t()[1:]  # strided: written through a contiguous copy
    expected = w.clone()
    expected.t()[1:].clamp_(-0.5, 0.5)
    ops.clamp_abs_inplace(view, 0.5)
    checks["clamp_abs_inplace_strided"] = torch.equal(w, expected)

    # aten ops with Scalar arguments, called by the kernel through the call API.
    sa, sb = torch.randn(3, 4), torch.randn(3, 4)
    expected = [
        torch.add(sa, sb, alpha=0.75),
        torch.sub(sa, sb, alpha=0.75),
        torch.mul(sa, 0.75),
        torch.full((3, 4), 0.75),
        torch.full((3, 4), 3),
        torch.full_like(sa, 7),
        torch.full_like(sa, True, dtype=torch.bool),
        torch.scalar_tensor(0.75),
        torch.scalar_tensor(-2, dtype=torch.long),
    ]
    got = ops.scalar_calls(sa, sb, 0.75)
    checks["scalar_calls"] = len(got) == len(expected) and all(
        g.dtype == e.dtype and torch.equal(g, e) for g, e in zip(got, expected, strict=True)
    )
    details["scalar_calls_dtypes"] = [str(g.dtype) for g in got]
    # add's shim takes a double: on integral tensors torch refuses that alpha, as it refuses
    # torch.add(ia, ia, alpha=2.0) (the stable shim reports only which call failed).
    ia = torch.arange(12).reshape(3, 4)
    refused = []
    for f in (lambda: ops.scalar_calls(ia, ia, 2.0), lambda: torch.add(ia, ia, alpha=2.0)):
        try:
            f()
        except RuntimeError as e:
            refused.append(str(e))
    checks["scalar_calls_integral_alpha"] = (
        len(refused) == 2
        and "aoti_torch_cpu_add_Tensor" in refused[0]
        and "alpha must not be a floating point" in refused[1]
    )

    xg, yg = torch.randn(3, 4, requires_grad=True), torch.randn(3, 4, requires_grad=True)
    ops.scaled_add(xg, yg, 3.0).sum().backward()
    checks["scaled_add_grad"] = torch.equal(xg.grad, torch.ones(3, 4)) and torch.equal(
        yg.grad, torch.full((3, 4), 3.0)
    )

    # float32 (the kernel's only dtype): a coarser step and tolerance than float64's defaults.
    xs, ys = torch.randn(3, 4, requires_grad=True), torch.randn(3, 4, requires_grad=True)
    tolerances = {"eps": 1e-2, "atol": 1e-2, "rtol": 1e-2}
    checks["scaled_add_gradcheck"] = torch.autograd.gradcheck(
        lambda a, b: ops.scaled_add(a, b, -1.5), (xs, ys), **tolerances
    )
    checks["scaled_add_gradgradcheck"] = torch.autograd.gradgradcheck(
        lambda a, b: ops.scaled_add(a, b, -1.5), (xs, ys), **tolerances
    )
    a64 = torch.randn(2, 3, dtype=torch.float64, requires_grad=True)
    b64 = torch.randn(2, 3, dtype=torch.float64, requires_grad=True)
    for dim in (0, 1):
        checks[f"mulcat_gradcheck_{dim}"] = torch.autograd.gradcheck(
            lambda a, b, dim=dim: ops.mulcat(a, b, dim), (a64, b64)
        )
        checks[f"mulcat_gradgradcheck_{dim}"] = torch.autograd.gradgradcheck(
            lambda a, b, dim=dim: ops.mulcat(a, b, dim), (a64, b64)
        )

    failures = {
        "scaled_add": opcheck(ops.scaled_add.default, (torch.randn(3, 4), torch.randn(3, 4), 2.0)),
        "scaled_add_grad": opcheck(
            ops.scaled_add.default,
            (torch.randn(3, 4, requires_grad=True), torch.randn(3, 4, requires_grad=True), 2.0),
        ),
        "mulcat": opcheck(ops.mulcat.default, (torch.randn(2, 3), torch.randn(2, 3), 1)),
        "mulcat_grad": opcheck(
            ops.mulcat.default,
            (torch.randn(2, 3, requires_grad=True), torch.randn(2, 3, requires_grad=True), 1),
        ),
        "clamp_abs_inplace": opcheck(ops.clamp_abs_inplace.default, (torch.randn(5, 3) * 3, 1.0)),
    }
    for name, failed in failures.items():
        checks[f"opcheck_{name}"] = not failed
    details["opcheck_failures"] = {k: v for k, v in failures.items() if v}

    def clamp_twice(t):
        u = t.clone()
        ops.clamp_abs_inplace(u, 1.0)
        return ops.scaled_add(u, t, 0.25)

    t = torch.randn(8, 3) * 3
    compiled = torch.compile(clamp_twice, fullgraph=True)
    checks["compile_inplace"] = torch.allclose(compiled(t), clamp_twice(t))

    tables = {}
    for line in torch._C._dispatch_dump("stableops::scaled_add").splitlines():
        key, _, rest = line.partition(": ")
        tables[key] = rest
    details["keys"] = sorted(k for k in tables if k in ("CPU", "CUDA", "Autograd"))
    if "CUDA" not in tables:
        details["cuda"] = "absent"
    elif not torch.cuda.is_available():
        details["cuda"] = "registered"
    else:
        details["cuda"] = "ran"
        xc, yc = x.cuda(), y.cuda()
        checks["cuda_scaled_add"] = torch.allclose(ops.scaled_add(xc, yc, 0.5).cpu(), x + 0.5 * y)
        checks["cuda_strided"] = torch.allclose(
            ops.scaled_add(xc.t(), yc.t(), 2.0).cpu(), x.t() + 2 * y.t()
        )
        checks["cuda_mulcat"] = torch.allclose(ops.mulcat(xc, yc).cpu(), torch.cat([x * y, x]))
        checks["cuda_opcheck"] = not opcheck(ops.scaled_add.default, (xc, yc, 2.0))
    print(json.dumps({"checks": checks, "details": details}, sort_keys=True))
    return 0 if all(checks.values()) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
