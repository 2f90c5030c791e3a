"""The generated autograd of libmyops.so (aten_codegen(derivatives = "derivatives.yaml")).

    python tests/scripts/check_myops_autograd.py bazel-bin/libmyops.so

Run by tests/workspace/test_bazel_codegen.py after building tests/incremental/. Prints one line per check
that passed; an assertion fails the run.
"""

import sys

import torch
from torch.autograd import gradcheck, gradgradcheck

torch.ops.load_library(sys.argv[1])
ops = torch.ops.myops
torch.manual_seed(0)
x = torch.randn(3, 4, dtype=torch.float64, requires_grad=True)

# float64, forward AD, forward-over-reverse, and batched gradients (vmap over the backward).
cases = {
    "scale": (lambda a: ops.scale(a, 1.5), lambda a: a * 1.5),
    "scale_": (lambda a: ops.scale_(a.clone(), 1.5), lambda a: a.clone().mul_(1.5)),
    "shift": (lambda a: ops.shift(a, 2.0, 3), lambda a: a + 6.0),
}
for name, (fn, _) in cases.items():
    assert gradcheck(fn, (x,), check_forward_ad=True, check_batched_grad=True), name
    assert gradgradcheck(fn, (x,), check_fwd_over_rev=True, check_batched_grad=True), name
    print(f"gradcheck+gradgradcheck ok: {name}")

# opcheck: the schema and the autograd registration. (Its fake-tensor tests need a Meta or fake
# kernel, which myops does not define.)
checks = ("test_schema", "test_autograd_registration")
torch.library.opcheck(ops.scale.default, (x, 1.5), test_utils=checks)
torch.library.opcheck(ops.scale_.default, (x * 1, 1.5), test_utils=checks)
torch.library.opcheck(ops.shift.default, (x, 2.0, 3), test_utils=checks)
print("opcheck ok: scale, scale_, shift")

weights = torch.linspace(-1, 1, x.numel(), dtype=x.dtype).view_as(x)
for fn, reference in cases.values():
    (ours,) = torch.autograd.grad((fn(x) * weights).sum(), [x])
    (theirs,) = torch.autograd.grad((reference(x) * weights).sum(), [x])
    torch.testing.assert_close(ours, theirs, rtol=0, atol=0)
print("gradients equal the torch-op reference")

assert ops.scale(x, 2.0).grad_fn.name() == "myops::ScaleBackward0"
v = x.detach().clone()
before = v._version
ops.scale_(v, 2.0)
assert v._version == before + 1
try:
    ops.scale_(torch.ones(2, requires_grad=True), 2.0)
    raise AssertionError("in-place on a leaf that requires grad must fail")
except RuntimeError as e:
    assert "a leaf Variable that requires grad is being used in an in-place operation." in str(e)
print("in-place: version counter and leaf check ok")


def first_line_of_error(fn):
    try:
        fn()
    except RuntimeError as e:
        return str(e).splitlines()[0]
    raise AssertionError("no error")


out = torch.empty(3, 4, dtype=torch.float64)
ours = first_line_of_error(lambda: ops.scale.out(x, 1.5, out=out))
theirs = first_line_of_error(lambda: torch.mul(x, 1.5, out=out))
assert ours == theirs.replace("mul()", "scale()"), (ours, theirs)
before = out._version
ops.scale.out(x.detach(), 1.5, out=out)
assert out._version > before and torch.equal(out, x.detach() * 1.5)
print("out=: refused with requires_grad as torch does; version counter bumped")
