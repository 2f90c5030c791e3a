"""Generated autograd of a custom namespace's `_foreach_` ops, loaded over CPU kernels written
in Python (torch.library): one node per call for the functional op, a per-tensor node per
element for the in-place one, gradcheck with forward AD, gradgradcheck, the version counters
of the written elements and the leaf check; prints one line per check.

    python check_custom_foreach.py LIBRARY
"""

from __future__ import annotations

import sys

import torch

LIB = torch.library.Library("myfe", "DEF")  # kept alive until exit
LIB.define("twice(Tensor self) -> Tensor")
LIB.define("twice_(Tensor(a!) self) -> Tensor(a!)")
LIB.define("_foreach_twice(Tensor[] self) -> Tensor[]")
LIB.define("_foreach_twice_(Tensor(a!)[] self) -> ()")


def _twice_(x: torch.Tensor) -> torch.Tensor:
    return x.mul_(2)


def _foreach_twice_(xs: list[torch.Tensor]) -> None:
    for x in xs:
        x.mul_(2)


LIB.impl("twice", lambda x: x * 2, "CPU")
LIB.impl("twice_", _twice_, "CPU")
LIB.impl("_foreach_twice", lambda xs: [x * 2 for x in xs], "CPU")
LIB.impl("_foreach_twice_", _foreach_twice_, "CPU")


def main() -> None:
    torch.ops.load_library(sys.argv[1])
    op = torch.ops.myfe
    xs = tuple(torch.randn(3, dtype=torch.float64, requires_grad=True) for _ in range(2))
    ys = op._foreach_twice(list(xs))
    print("functional nodes:", " ".join(y.grad_fn.name() for y in ys))

    def functional(*args):
        return tuple(op._foreach_twice(list(args)))

    def inplace(*args):
        copies = [a.clone() for a in args]
        op._foreach_twice_(copies)
        return tuple(copies)

    for name, f in (("functional", functional), ("in-place", inplace)):
        torch.autograd.gradcheck(f, xs, check_forward_ad=True)
        torch.autograd.gradgradcheck(f, xs)
        print(f"gradcheck (forward AD too) and gradgradcheck ok: {name}")
    copies = [x.clone() for x in xs]
    versions = [c._version for c in copies]
    op._foreach_twice_(copies)
    print("in-place nodes:", " ".join(c.grad_fn.name() for c in copies))
    print("versions bumped:", [c._version - v for c, v in zip(copies, versions, strict=True)])
    try:
        op._foreach_twice_(list(xs))
    except RuntimeError as e:
        print("leaf:", str(e).splitlines()[0])


if __name__ == "__main__":
    main()
