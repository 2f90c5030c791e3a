"""Loads a kernel laid out by aten_kernel_hub with Hugging Face's `kernels` and runs its
operators; prints one JSON line, {"variant": ..., "checks": {name: bool}, "details": {...}}.

    python hub_load.py HUB_TOOLS HUB_DIR stableops|myops

HUB_TOOLS is the directory of third_party/requirements_hub_tools.lock (tests/support/hub_tools.py): it
goes last on sys.path, so that this venv's torch and its dependencies are the ones imported. On
a CUDA build of torch the kernel's `cpu` variant is asked for by name (`backend="cpu"`), as
`kernels` picks the CUDA variants of a CUDA torch by default. A kernel `kernels` finds no variant
for prints {"refused": the first line of its message}.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.append(sys.argv[1])

import kernels  # noqa: E402
import torch  # noqa: E402


def main(hub: Path, which: str) -> dict:
    backend = "cpu" if torch.version.cuda else None
    try:
        kernel = kernels.get_local_kernel(hub, backend=backend)
    except FileNotFoundError as e:
        return {"refused": str(e).splitlines()[0], "message": str(e), "torch": torch.__version__}
    (loaded,) = [k for k in kernels.get_loaded_kernels() if k.module is kernel]
    checks: dict[str, bool] = {}
    details = {
        "torch": torch.__version__,
        "variant": Path(kernel.__file__).parent.parent.name,
        "module": kernel.__name__,
        "name": str(loaded.metadata.name),
        "version": loaded.metadata.version,
        "license": loaded.metadata.license,
    }
    if which == "stableops":
        x, y = torch.randn(4, 5), torch.randn(4, 5)
        checks["scaled_add"] = torch.equal(kernel.scaled_add(x, y, 0.5), x + 0.5 * y)
        checks["ops"] = kernel.ops.scaled_add is torch.ops.stableops.scaled_add
        a, b = torch.randn(2, 3), torch.randn(2, 3)
        checks["mulcat"] = torch.equal(kernel.mulcat(a, b, 1), torch.cat([a * b, a], 1))
        z = torch.randn(6, 4) * 3
        expected = z.clamp(-1.5, 1.5)
        kernel.clamp_abs_inplace(z, 1.5)
        checks["clamp_abs_inplace"] = torch.equal(z, expected)
        checks["prefix"] = kernel.add_op_namespace_prefix("mulcat") == "stableops::mulcat"
        # The py_srcs module (registrations.py): scaled_add's autograd formula.
        xg, yg = torch.randn(3, 4, requires_grad=True), torch.randn(3, 4, requires_grad=True)
        kernel.scaled_add(xg, yg, 3.0).sum().backward()
        checks["grad"] = torch.equal(yg.grad, torch.full((3, 4), 3.0))
    else:
        x = torch.arange(4.0)
        checks["scale"] = torch.equal(kernel.scale(x, 2.5), x * 2.5)
        checks["ops"] = kernel.ops.scale is torch.ops.myops.scale
    return {"checks": checks, "details": details}


if __name__ == "__main__":
    print(json.dumps(main(Path(sys.argv[2]), sys.argv[3])))
