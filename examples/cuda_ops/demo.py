"""Loads libcudaops.so into torch and runs cudaops::mul_add_scalar on CPU, and on CUDA when a GPU
is there; prints one JSON line, {"checks": {name: bool}, "details": {...}}.

    python demo.py bazel-bin/libcudaops.so

details["cuda"] says what the CUDA half did: "ran" (a GPU ran kernels.cu, compared with the CPU
kernel and under gradcheck), "registered" (the library holds the CUDA registration, but there is
no GPU to run it) or "absent" (a CPU torch, or no toolkit: a CPU-only library).
"""

from __future__ import annotations

import json
import sys

import torch


def dispatch_files(op: str) -> dict[str, str]:
    """{key: registering file} of torch._C._dispatch_dump."""
    tables = {}
    for line in torch._C._dispatch_dump(op).splitlines():
        key, _, rest = line.partition(": ")
        if "registered at " in rest:
            tables[key] = rest.split("registered at ", 1)[1].split(":", 1)[0]
    return tables


def main(library: str) -> int:
    torch.ops.load_library(library)
    op = torch.ops.cudaops.mul_add_scalar
    checks: dict[str, bool] = {}
    details: dict = {}

    x = torch.randn(5, 3, dtype=torch.float64, requires_grad=True)
    y = torch.randn(5, 3, dtype=torch.float64, requires_grad=True)
    checks["cpu_forward"] = torch.allclose(op(x, y, 0.5), x * y + 0.5)
    checks["cpu_gradcheck"] = torch.autograd.gradcheck(lambda a, b: op(a, b, 0.5), (x, y))

    tables = dispatch_files("cudaops::mul_add_scalar")
    details["dispatch"] = tables
    checks["generated_autograd"] = "/cudaops_codegen/autograd.cc/" in tables.get(
        "AutogradCPU", tables.get("Autograd", "")
    ) or any("/autograd.cc/" in f for k, f in tables.items() if k.startswith("Autograd"))
    cuda_registered = "CUDA" in tables
    if not cuda_registered:
        details["cuda"] = "absent"
    elif not torch.cuda.is_available():
        details["cuda"] = "registered"
        checks["cuda_registration_is_generated"] = "/cudaops_codegen/cuda.cc/" in tables["CUDA"]
    else:
        details["cuda"] = "ran"
        xc = x.detach().cuda().requires_grad_()
        yc = y.detach().cuda().requires_grad_()
        checks["cuda_forward"] = torch.allclose(op(xc, yc, 0.5).cpu(), op(x, y, 0.5))
        checks["cuda_float32"] = torch.allclose(
            op(xc.float(), yc.float(), 2.0).cpu(), (x * y + 2.0).float(), atol=1e-6
        )
        checks["cuda_gradcheck"] = torch.autograd.gradcheck(lambda a, b: op(a, b, 0.5), (xc, yc))
    print(json.dumps({"checks": checks, "details": details}, sort_keys=True))
    return 0 if all(checks.values()) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
