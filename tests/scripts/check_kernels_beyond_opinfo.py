"""Generated aten kernels that no OpInfo sample reaches, run through torch's kernel and then
through the generated one loaded over it; prints what each did as one JSON object:

    python check_kernels_beyond_opinfo.py LIBRARY

- `chunk`, a view op returning several views. On a dense CPU tensor chunk runs its CompositeImplicitAutograd kernel (split) and no Autograd
kernel at all; with a kernel of its own for the CPU key, AutogradCPU takes the kernel
  registered for Autograd instead. This script registers one (split below autograd), so that
  torch's kernel and then the generated one run. Observed: the outputs, the node (its name
  without the `aten::` prefix of generated nodes), whether the outputs are views of the input,
  the error of an in-place write through one of them (several views of one op may not be written
  in place), the error of backward through them (derivatives.yaml's formula for dense tensors is
  `not_implemented("chunk")`), and the error of forward AD (no forward formula).
- `_test_autograd_multiple_dispatch.ntonly`, whose formulas are only for AutogradNestedTensor:
  its kernel is for that key, and runs on nested tensors. Observed: the output, the node and the
  gradient for a seeded grad_output (strided nested tensors have no forward AD).

Values are lists of floats (float64, so bit for bit when equal).
"""

from __future__ import annotations

import json
import sys
import warnings
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "conformance"))
from shared import load_library_quietly  # noqa: E402


def _chunk_cpu(self: torch.Tensor, chunks: int, dim: int = 0) -> list[torch.Tensor]:
    size = -(-self.size(dim) // chunks)
    return list(torch.ops.aten.split.Tensor(self, size, dim))


def _error(f) -> str:
    try:
        f()
    except Exception as e:  # noqa: BLE001 - the error is the observation
        return str(e).splitlines()[0]
    return "no error"


def observe_chunk() -> dict:
    torch.manual_seed(0)
    x = torch.randn(7, 3, dtype=torch.float64, requires_grad=True)
    base = x.clone()
    views = base.chunk(3)
    with torch.autograd.forward_ad.dual_level():
        dual = torch.autograd.forward_ad.make_dual(x.detach(), torch.ones_like(x))
        forward_error = _error(lambda: dual.chunk(3))
    return {
        "values": [v.detach().tolist() for v in views],
        "nodes": sorted({v.grad_fn.name().removeprefix("aten::") for v in views}),
        "generated": all(v.grad_fn.name().startswith("aten::") for v in views),
        "views": all(v._base is base for v in views),
        "next": [str(type(f).__name__) for v in views for f, _ in v.grad_fn.next_functions],
        "inplace_error": _error(lambda: views[1].mul_(2)),
        "backward_error": _error(lambda: views[0].sum().backward()),
        "forward_error": forward_error,
    }


def _nested(*shapes: tuple[int, ...], requires_grad: bool = False) -> torch.Tensor:
    parts = [torch.randn(*s, dtype=torch.float64) for s in shapes]
    return torch.nested.nested_tensor(parts, requires_grad=requires_grad)


def observe_ntonly() -> dict:
    torch.manual_seed(0)
    op = torch.ops.aten._test_autograd_multiple_dispatch.ntonly
    x = _nested((2, 3), (4, 3), requires_grad=True)
    out = op(x, True)
    (grad,) = torch.autograd.grad(out, x, _nested((2, 3), (4, 3)))
    return {
        "values": [t.tolist() for t in out.detach().unbind()],
        "node": out.grad_fn.name().removeprefix("aten::"),
        "generated": out.grad_fn.name().startswith("aten::"),
        "grad": [t.tolist() for t in grad.unbind()],
    }


def observe() -> dict:
    return {"chunk": observe_chunk(), "ntonly": observe_ntonly()}


def main() -> None:
    lib = torch.library.Library("aten", "IMPL")  # noqa: F841 - kept alive until exit
    lib.impl("chunk", _chunk_cpu, "CPU")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # nested tensors are a prototype
        torch_kernels = observe()
        load_library_quietly(sys.argv[1])
        print(json.dumps({"torch": torch_kernels, "generated": observe()}))


if __name__ == "__main__":
    main()
