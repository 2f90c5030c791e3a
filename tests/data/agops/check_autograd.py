"""Run by tests/test_autograd_codegen.py in a fresh interpreter: argv[1] is the
library built from kernels.cpp and the generated autograd sources."""

import sys

import torch
from torch.autograd import gradcheck, gradgradcheck

torch.ops.load_library(sys.argv[1])
ops = torch.ops.agops
torch.manual_seed(0)
x = torch.randn(4, 3, dtype=torch.float64, requires_grad=True)
y = torch.randn(4, 3, dtype=torch.float64, requires_grad=True)
index = torch.tensor([2, 0, 2])

cases = {
    "scaled_tanh (functional, non-differentiable float)": (lambda a: ops.scaled_tanh(a, 1.5), (x,)),
    "scaled_tanh_ (in-place)": (lambda a: ops.scaled_tanh_(a.clone(), 1.5), (x,)),
    "mul_add (two outputs)": (lambda a, b: ops.mul_add(a, b), (x, y)),
    "take_rows (non-differentiable tensor, auto_linear)": (lambda a: ops.take_rows(a, index), (x,)),
}
for name, (fn, inputs) in cases.items():
    assert gradcheck(fn, inputs, check_forward_ad=True), name
    assert gradgradcheck(fn, inputs, check_fwd_over_rev=True), name
    print("gradcheck+gradgradcheck ok:", name)


# The same math written with torch ops gives the same gradients.
def grads(outputs, inputs):
    total = sum(
        (o * torch.linspace(-1, 1, o.numel(), dtype=o.dtype).view_as(o)).sum() for o in outputs
    )
    return torch.autograd.grad(total, inputs)


pairs = [
    (lambda: [ops.scaled_tanh(x, 1.5)], lambda: [torch.tanh(x) * 1.5], (x,)),
    (lambda: [ops.scaled_tanh_(x.clone(), 1.5)], lambda: [x.clone().tanh_() * 1.5], (x,)),
    (lambda: list(ops.mul_add(x, y)), lambda: [x * y, x + y], (x, y)),
    (lambda: [ops.take_rows(x, index)], lambda: [x.index_select(0, index)], (x,)),
]
for ours, reference, inputs in pairs:
    for a, b in zip(grads(ours(), inputs), grads(reference(), inputs), strict=True):
        torch.testing.assert_close(a, b)
print("gradients equal the torch-op reference: 4 ops")

out = ops.scaled_tanh(x, 1.5)
assert out.grad_fn.name() == "agops::ScaledTanhBackward0", out.grad_fn.name()
leaf = torch.randn(3, dtype=torch.float64, requires_grad=True)
try:
    ops.scaled_tanh_(leaf, 2.0)
    raise AssertionError("in-place on a leaf that requires grad must fail")
except RuntimeError as e:
    assert "leaf Variable that requires grad" in str(e)
v = x.detach().clone()
before = v._version
ops.scaled_tanh_(v, 2.0)
assert v._version == before + 1, (before, v._version)
print("node name, leaf check and version counter ok")
