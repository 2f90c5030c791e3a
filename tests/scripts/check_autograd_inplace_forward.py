"""Forward AD of generated in-place kernels whose forward formulas are out of place, against
torch's own kernels computing the same; prints one line per check.

    python check_autograd_inplace_forward.py custom LIBRARY
    python check_autograd_inplace_forward.py aten LIBRARY

`custom`: the namespace ipfw (tests/unit/autograd/test_autograd_inplace_forward.py writes its YAML), whose
entries are the in-place ops' own (`result: self_t * factor`), over CPU kernels written in
Python; the reference is the torch op computing the same (`mul_`, `add_`). `aten`: aten's in-place
ops reusing their functional op's out-of-place formula; the reference is torch's kernels, run
before the library is loaded over them.

Each op runs in every forward-AD situation it takes (self with a tangent, a leaf or not; self
without one while the other input has one; self a view of a base with or without one), and the
primal values and tangents (of the result, of the tangent self had before, of a view's base)
must equal the reference's bit for bit; the gradients of a tangent computed under grad mode
(reverse over forward) must equal them too. Then gradcheck (forward and backward AD) and
gradgradcheck (forward over reverse, reverse over reverse).
"""

from __future__ import annotations

import sys

import torch
import torch.autograd.forward_ad as fwAD

MASK = torch.tensor([[True, False, True, False]] * 3)

# name -> (the op, in place on its first argument; the situations it is run in)
ONE = ("tangent, leaf", "tangent, non-leaf", "view of a base with a tangent")
TWO = (*ONE, "no tangent, other has one", "view of a base without a tangent")


def custom_ops():
    lib = torch.library.Library("ipfw", "DEF")
    lib.define("scale_(Tensor(a!) self, float factor) -> Tensor(a!)")
    lib.define("scale_inplace_formula_(Tensor(a!) self, float factor) -> Tensor(a!)")
    lib.define("axpy_(Tensor(a!) self, Tensor other, float alpha) -> Tensor(a!)")
    lib.define("mulby_(Tensor(a!) self, Tensor other) -> Tensor(a!)")
    lib.impl("scale_", lambda x, f: x.mul_(f), "CPU")
    lib.impl("scale_inplace_formula_", lambda x, f: x.mul_(f), "CPU")
    lib.impl("axpy_", lambda x, y, a: x.add_(y, alpha=a), "CPU")
    lib.impl("mulby_", lambda x, y: x.mul_(y), "CPU")
    ops = torch.ops.ipfw
    ours = {
        "scale_": (lambda x: ops.scale_(x, 1.5), ONE),
        "scale_inplace_formula_": (lambda x: ops.scale_inplace_formula_(x, 1.5), ONE),
        "axpy_": (lambda x, y: ops.axpy_(x, y, 2.0), TWO),
        "mulby_": (lambda x, y: ops.mulby_(x, y), TWO),
    }
    reference = {
        "scale_": lambda x: x.mul_(1.5),
        "scale_inplace_formula_": lambda x: x.mul_(1.5),
        "axpy_": lambda x, y: x.add_(y, alpha=2.0),
        "mulby_": lambda x, y: x.mul_(y),
    }
    return lib, ours, reference


ATEN = {
    "lerp_.Scalar": (lambda x, y: x.lerp_(y, 0.25), TWO),
    "hypot_": (lambda x, y: x.hypot_(y), TWO),
    "xlogy_.Tensor": (lambda x, y: x.xlogy_(y), TWO),
    "sin_": (lambda x: x.sin_(), ONE),
    "tanh_": (lambda x: x.tanh_(), ONE),
    "masked_fill_.Scalar": (lambda x: x.masked_fill_(MASK[: x.shape[0]], 0.5), ONE),
}


def _inputs(seed: int) -> list[torch.Tensor]:
    torch.manual_seed(seed)
    # The second input is kept away from zero: xlogy_ takes its log.
    return [torch.randn(3, 4, dtype=torch.float64) for _ in range(3)] + [
        torch.rand(3, 4, dtype=torch.float64) + 0.5
    ]


def _arity(op) -> int:
    return op.__code__.co_argcount


def forward_case(op, case: str, seed: int) -> dict[str, torch.Tensor]:
    """What op does in one forward-AD situation: the values the caller compares."""
    p, t, u, q = _inputs(seed)
    seen = {}

    def call(x, other):
        return op(x) if _arity(op) == 1 else op(x, other)

    with fwAD.dual_level():
        before = None
        if case == "tangent, leaf":
            x = fwAD.make_dual(p.clone(), t.clone())
            before = fwAD.unpack_dual(x).tangent
            out = call(x, q)
        elif case == "tangent, non-leaf":
            x = fwAD.make_dual(p.clone(), t.clone()).clone()
            before = fwAD.unpack_dual(x).tangent
            out = call(x, fwAD.make_dual(q, u))
        elif case == "no tangent, other has one":
            x = p.clone()
            out = call(x, fwAD.make_dual(q, u))
        elif case.startswith("view of a base"):
            base = p.clone()
            if case == "view of a base with a tangent":
                base = fwAD.make_dual(base, t.clone()).clone()
            x = base[1:]
            if fwAD.unpack_dual(x).tangent is not None:
                before = fwAD.unpack_dual(x).tangent
            out = call(x, fwAD.make_dual(q[1:], u[1:]))
            seen["base primal"] = fwAD.unpack_dual(base).primal.clone()
            seen["base tangent"] = fwAD.unpack_dual(base).tangent.clone()
        else:
            raise AssertionError(case)
        assert out is x, "an in-place op returns self"
        seen["primal"] = fwAD.unpack_dual(out).primal.clone()
        seen["tangent"] = fwAD.unpack_dual(out).tangent.clone()
        if before is not None:
            # The tangent self had is updated in place, as torch's in-place ops do.
            seen["tangent before"] = before.clone()
    return seen


def reverse_over_forward(op, seed: int) -> list[torch.Tensor]:
    """The gradients, with respect to primals and tangents, of a tangent computed under grad
    mode (a formula such as self_t * other_p saves self's old tangent, which the in-place op
    then overwrites)."""
    p, t, u, q = (x.requires_grad_() for x in _inputs(seed))
    with fwAD.dual_level():
        x = fwAD.make_dual(p.clone(), t.clone())
        out = op(x) if _arity(op) == 1 else op(x, fwAD.make_dual(q.clone(), u.clone()))
        tangent = fwAD.unpack_dual(out).tangent
    grads = torch.autograd.grad(
        tangent.sin().sum(), (p, t, q, u), allow_unused=True, materialize_grads=True
    )
    return list(grads)


def observe(ops: dict) -> dict:
    seen = {}
    for name, (op, cases) in ops.items():
        for i, case in enumerate(cases):
            seen[(name, case)] = forward_case(op, case, i)
        seen[(name, "reverse over forward")] = reverse_over_forward(op, 7)
    return seen


def node_name(op) -> str:
    p, _, _, q = _inputs(0)
    x = p.requires_grad_().clone()
    return (op(x) if _arity(op) == 1 else op(x, q)).grad_fn.name()


def main() -> None:
    mode, library = sys.argv[1:]
    if mode == "custom":
        _lib, ours, reference = custom_ops()
        torch.ops.load_library(library)
        want = observe({n: (reference[n], cases) for n, (_, cases) in ours.items()})
    else:
        ours = ATEN
        want = observe(ours)
        theirs = {name: node_name(op) for name, (op, _) in ours.items()}
        torch.ops.load_library(library)
        for name, (op, _) in ours.items():
            # The generated nodes are named in their namespace; torch's are not.
            assert node_name(op) == f"aten::{theirs[name]}", (name, node_name(op))
        print("served by the generated kernels:", ", ".join(ours))
    got = observe(ours)
    for (name, case), values in want.items():
        if case == "reverse over forward":
            torch.testing.assert_close(got[(name, case)], values)
        else:
            assert got[(name, case)].keys() == values.keys(), (name, case)
            for key, value in values.items():
                torch.testing.assert_close(got[(name, case)][key], value, rtol=0, atol=0, msg=key)
        print(f"equals torch's: {name}, {case}")

    for name, (op, _) in ours.items():
        p, _, _, q = _inputs(1)
        inputs = (
            (p.requires_grad_(),) if _arity(op) == 1 else (p.requires_grad_(), q.requires_grad_())
        )

        def fn(*xs, op=op):
            return op(xs[0].clone(), *xs[1:])

        torch.autograd.gradcheck(fn, inputs, check_forward_ad=True, check_backward_ad=True)
        torch.autograd.gradgradcheck(fn, inputs, check_fwd_over_rev=True, check_rev_over_rev=True)
        print(f"gradcheck and gradgradcheck, forward AD too: {name}")
    op = ours["scale_" if mode == "custom" else "sin_"][0]
    try:
        op(torch.ones(2, requires_grad=True))
    except RuntimeError as e:
        print("leaf:", str(e).splitlines()[0])


if __name__ == "__main__":
    main()
