"""Run by tests/unit/autograd/test_autograd_codegen.py in a fresh interpreter: argv[1] is the
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
bias = torch.randn(4, 3, dtype=torch.float64, requires_grad=True)
z = torch.randn(4, 3, dtype=torch.float64, requires_grad=True)


def _through(update, a):
    """Update a view of a copy of a in place, and return the copy (the view's base)."""
    base = a.clone()
    update(base)
    return base


def _replayed(update, a):
    """_through with view replay on: autograd recreates the views by replaying their ops."""
    with torch.autograd._force_original_view_tracking(True):
        return _through(update, a)


cases = {
    "scaled_tanh (functional, non-differentiable float)": (lambda a: ops.scaled_tanh(a, 1.5), (x,)),
    "scaled_tanh_ (in-place)": (lambda a: ops.scaled_tanh_(a.clone(), 1.5), (x,)),
    "mul_add (two outputs)": (lambda a, b: ops.mul_add(a, b), (x, y)),
    "take_rows (non-differentiable tensor, auto_linear)": (lambda a: ops.take_rows(a, index), (x,)),
    "fused_mul (x, y: grad_input_mask; optional bias)": (ops.fused_mul, (x, y, bias)),
    "fused_mul (bias absent)": (lambda a, b: ops.fused_mul(a, b), (x, y)),
    "list_mul (tensor list input, saved list)": (
        lambda a, b, c: ops.list_mul([a, b, c]),
        (x, y, z),
    ),
    "sort_rows (output_differentiability: [True, False])": (
        lambda a: ops.sort_rows(a)[0],
        (x,),
    ),
    "diag_view (view op, auto_linear)": (ops.diag_view, (x,)),
    "diag_view_copy (its view_copy, matched to the view's entry)": (ops.diag_view_copy, (x,)),
    "diag_view, then in-place through the view": (
        lambda a: ops.diag_view(a.clone()).mul_(2),
        (x,),
    ),
    "row_block (view op with SymInt arguments)": (lambda a: ops.row_block(a, 1, 2), (x,)),
    "row_block, then in-place through the view, replayed (view replay on)": (
        lambda a: _replayed(lambda b: ops.row_block(b, 1, 2).mul_(2), a),
        (x,),
    ),
    "mean_std (two outputs; sigma's forward formula reads mu)": (ops.mean_std, (x,)),
    "square_ (in-place entry; its formulas read self before the update)": (
        lambda a: ops.square_(a.clone()),
        (x,),
    ),
    "exp_scale_ (in-place entry; its formulas read the result)": (
        lambda a: ops.exp_scale_(a.clone(), 0.5),
        (x,),
    ),
    "square_ through the custom view diag_view": (
        lambda a: _through(lambda b: ops.square_(ops.diag_view(b)), a),
        (x,),
    ),
    "exp_scale_ through a slice": (
        lambda a: _through(lambda b: ops.exp_scale_(b[1:], 0.5), a),
        (x,),
    ),
}
# list_mul has no forward formula: forward AD is refused (see below), not silently wrong.
NO_FORWARD = {"list_mul (tensor list input, saved list)"}
for name, (fn, inputs) in cases.items():
    forward = name not in NO_FORWARD
    assert gradcheck(fn, inputs, check_forward_ad=forward), name
    assert gradgradcheck(fn, inputs, check_fwd_over_rev=forward), name
    print("gradcheck+gradgradcheck ok:", name)

import torch.autograd.forward_ad as fwAD  # noqa: E402

with fwAD.dual_level():
    dual = fwAD.make_dual(x.detach(), torch.ones_like(x))
    try:
        ops.list_mul([dual, y.detach()])
        raise AssertionError("forward AD without a forward formula must fail")
    except NotImplementedError as e:
        assert "Trying to use forward AD with list_mul" in str(e), e
print("forward AD without a formula is refused")


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
    (lambda: [ops.fused_mul(x, y, bias)], lambda: [x * y + bias], (x, y, bias)),
    (lambda: [ops.list_mul([x, y, z])], lambda: [x * y * z], (x, y, z)),
    (lambda: [ops.diag_view(x)], lambda: [x.diagonal()], (x,)),
    (lambda: [ops.sort_rows(x)[0]], lambda: [x.sort(-1)[0]], (x,)),
    (lambda: list(ops.mean_std(x)), lambda: [x.mean(), x.std(correction=0)], (x,)),
    (lambda: [ops.square_(x.clone())], lambda: [x.clone().pow_(2)], (x,)),
    (lambda: [ops.exp_scale_(x.clone(), 0.5)], lambda: [x.clone().exp_() * 0.5], (x,)),
    (
        lambda: [_through(lambda b: ops.square_(ops.diag_view(b)), x)],
        lambda: [_through(lambda b: b.diagonal().pow_(2), x)],
        (x,),
    ),
]
for ours, reference, inputs in pairs:
    for a, b in zip(grads(ours(), inputs), grads(reference(), inputs), strict=True):
        torch.testing.assert_close(a, b)
print("gradients equal the torch-op reference: 12 ops")

# Forward mode: the tangents equal those of the same math written with torch ops.
with fwAD.dual_level():
    tangent = torch.linspace(-1, 1, x.numel(), dtype=x.dtype).view_as(x)

    def tangents(fn):
        return [fwAD.unpack_dual(o).tangent for o in fn(fwAD.make_dual(x.detach(), tangent))]

    for ours, reference in [
        (lambda d: ops.mean_std(d), lambda d: (d.mean(), d.std(correction=0))),
        (lambda d: [ops.square_(d.clone())], lambda d: [d.clone().pow_(2)]),
        (lambda d: [ops.exp_scale_(d.clone(), 0.5)], lambda d: [d.clone().exp_() * 0.5]),
        (
            lambda d: [_through(lambda b: ops.square_(ops.diag_view(b)), d)],
            lambda d: [_through(lambda b: b.diagonal().pow_(2), d)],
        ),
    ]:
        for mine, theirs in zip(tangents(ours), tangents(reference), strict=True):
            torch.testing.assert_close(mine, theirs)
print("tangents equal the torch-op reference: 4 ops")

# output_differentiability [True, False]: the indices never require grad, as torch.sort's.
values, indices = ops.sort_rows(x)
assert values.requires_grad and not indices.requires_grad
torch.testing.assert_close(indices, x.sort(-1)[1])

# A forward-only entry: forward AD is checked, and a backward pass raises torch's error.
assert gradcheck(ops.cube, (x,), check_forward_ad=True, check_backward_ad=False)
try:
    ops.cube(x).sum().backward()
    raise AssertionError("the backward of a forward-only op must fail")
except RuntimeError as e:
    assert "the derivative for 'agops::cube backward' is not implemented" in str(e), e
# A condition in output_differentiability ("factor != 0"): false, the output is not
# differentiable (no history, no tangent), as torch's _to_copy with an integer dtype.
assert not ops.scaled_tanh(x, 0.0).requires_grad
assert ops.scaled_tanh(x, 1.5).requires_grad
with fwAD.dual_level():
    dual = fwAD.make_dual(x.detach(), torch.ones_like(x))
    assert fwAD.unpack_dual(ops.scaled_tanh(dual, 0.0)).tangent is None
    assert fwAD.unpack_dual(ops.scaled_tanh(dual, 1.5)).tangent is not None
print("output_differentiability and a forward-only entry ok")

# The view op's output is a view of its input, as torch.diagonal's is: it shares the version
# counter, and an in-place update through it reaches the base's gradient (CopySlices).
base = x.detach().clone()
view = ops.diag_view(base)
assert view._is_view() and view._base is base, (view._is_view(), view._base)
view.mul_(3)
assert view._version == base._version == 1, (view._version, base._version)
torch.testing.assert_close(base.diagonal(), x.detach().diagonal() * 3)


def through_view(diag):
    a = x.clone()
    diag(a).mul_(2)
    return torch.autograd.grad((a * y.detach()).sum(), [x])[0]


torch.testing.assert_close(through_view(ops.diag_view), through_view(torch.diagonal))
print("view op: a view of its base; in-place through it reaches the base's gradient")

# View replay: torch recreates a view after an in-place update through it with as_strided, or,
# where as_strided cannot serve or view replay is on, by calling the view op again: its
# generated ViewFunc, which keeps the op's SymInt arguments.
for replay, node in ((False, "AsStridedBackward0"), (True, "agops::RowBlockBackward0")):
    with torch.autograd._force_original_view_tracking(replay):
        block = ops.row_block(x.clone(), 1, 2)
        block.mul_(2)
    assert block.grad_fn.name() == node, (replay, block.grad_fn.name())
    torch.testing.assert_close(
        torch.autograd.grad((block * y.detach()[1:3]).sum(), [x])[0],
        torch.zeros_like(x).index_fill(0, torch.tensor([1, 2]), 1) * y.detach() * 2,
    )
with torch.autograd._force_original_view_tracking(True):
    block = ops.row_block(x.detach().clone(), 1, 2)
other = torch.arange(12.0, dtype=torch.float64).view(4, 3)
torch.testing.assert_close(block._view_func(other), other[1:3])
assert block._view_func(other).data_ptr() == other[1:3].data_ptr()  # a view, not a copy
# Its SymInts are listed and can be replaced, as torch's own ViewFuncs allow (start 1 -> 2).
moved = block._view_func(other, symint_visitor_fn=lambda s: s + 1 if s == 1 else s)
torch.testing.assert_close(moved, other[2:4])
try:
    block._rev_view_func_unsafe(other[1:3])
    raise AssertionError("a custom view has no inverse")
except RuntimeError as e:
    assert "row_block has no inverse" in str(e), e
print("view replay: the custom view's ViewFunc replays it, with its SymInts")

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
# The same for an in-place op with its own entry.
assert ops.square_(x.clone()).grad_fn.name() == "agops::SquareBackward0"
try:
    ops.square_(leaf)
    raise AssertionError("in-place on a leaf that requires grad must fail")
except RuntimeError as e:
    assert "leaf Variable that requires grad" in str(e)
ops.exp_scale_(v, 2.0)
assert v._version == before + 2, (before, v._version)
# A saved tensor overwritten later is detected: square_ saved a copy of self, but mul saved self.
w = x.clone()
product = w * w
ops.square_(w)
try:
    product.sum().backward()
    raise AssertionError("backward through an overwritten saved tensor must fail")
except RuntimeError as e:
    assert "modified by an inplace operation" in str(e), e
print("node name, leaf check and version counter ok")

# Only the inputs that need a gradient get one (grad_input_mask).
(gx,) = torch.autograd.grad(ops.fused_mul(x, y.detach()).sum(), [x])
torch.testing.assert_close(gx, y.detach())
print("grad_input_mask ok")


# out=: no autograd through it; the same errors as torch's own out= ops.
def error_of(fn):
    try:
        fn()
    except RuntimeError as e:
        return str(e).split("\n")[0]
    return None


out = torch.empty(4, 3, dtype=torch.float64)
ours = error_of(lambda: ops.scaled_tanh.out(x, 1.5, out=out))
theirs = error_of(lambda: torch.tanh(x, out=out))
assert ours == theirs.replace("tanh()", "scaled_tanh()"), (ours, theirs)
with torch.no_grad():
    ops.scaled_tanh.out(x, 1.5, out=out)
torch.testing.assert_close(out, torch.tanh(x.detach()) * 1.5)
before = out._version
ops.scaled_tanh.out(x.detach(), 1.5, out=out)
assert out._version == before + 1
print("out= errors as torch and bumps the version counter:", ours)

# opcheck, all of it: schema, autograd registration, and the fake-tensor / AOT dispatch tests,
# with the fake kernels a library author registers from Python (agops has no Meta kernels).
torch.library.register_fake("agops::scaled_tanh")(lambda self, factor: torch.empty_like(self))
torch.library.register_fake("agops::mul_add")(
    lambda x, y: (torch.empty_like(x * y), torch.empty_like(x + y))
)
torch.library.register_fake("agops::fused_mul")(
    lambda x, y, bias=None: torch.empty_like(x * y if bias is None else x * y + bias)
)
torch.library.register_fake("agops::diag_view")(lambda self: self.diagonal())
opchecks = {
    "scaled_tanh": (ops.scaled_tanh.default, (x, 1.5)),
    "mul_add": (ops.mul_add.default, (x, y)),
    "fused_mul": (ops.fused_mul.default, (x, y, bias)),
}
for op, args in opchecks.values():
    torch.library.opcheck(op, args)
print("opcheck (every test) ok:", ", ".join(opchecks))
# A custom view op: torch's Python functionalization, which test_aot_dispatch_dynamic runs,
# refuses custom operators whose outputs alias ("Found a custom (non-ATen) operator whose output
# has alias annotations"), so that test is left out.
view_checks = ("test_schema", "test_autograd_registration", "test_faketensor")
torch.library.opcheck(ops.diag_view.default, (x,), test_utils=view_checks)
print("opcheck ok: diag_view (schema, autograd registration, fake tensor)")
