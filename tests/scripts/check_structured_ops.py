"""Run by tests/workspace/test_structured_library.py in a fresh interpreter: argv[1] is the structured_ops library
(tests/data/structured_ops/). Prints one JSON report line per check."""

import json
import sys

import torch
from torch.fx.experimental.proxy_tensor import make_fx
from torch.library import opcheck

torch.ops.load_library(sys.argv[1])
so, aten = torch.ops.structured_ops, torch.ops.aten


def report(name, **values):
    print(json.dumps({"name": name, **values}), flush=True)


def error_of(fn):
    try:
        fn()
    except Exception as e:
        return f"{type(e).__name__}: {str(e).splitlines()[0]}"
    return None


a = torch.arange(6.0).reshape(2, 3)
b = torch.tensor([1, 2, 3])  # int64: promoted with float32 to float32
ref = a * b + 2

# functional: broadcasting and type promotion
r = so.muladd(a, b, 2)
report(
    "functional",
    equal=torch.equal(r, ref),
    dtype=str(r.dtype),
    shape=list(r.shape),
    int_dtype=str(so.muladd(b, b).dtype),
    int_equal=torch.equal(so.muladd(b, b), b * b + 1),
)

# in-place: self keeps its dtype and shape; the errors are aten's
x = a.clone()
so.muladd_(x, b, 2)
report(
    "inplace",
    equal=torch.equal(x, ref),
    cast_error=[
        error_of(lambda: so.muladd_(b.clone(), a)),
        error_of(lambda: aten.add_(b.clone(), a)),
    ],
    shape_error=[
        error_of(lambda: so.muladd_(torch.ones(3), a)),
        error_of(lambda: aten.add_(torch.ones(3), a)),
    ],
)

# out=: an empty out is resized silently, a wrong-shaped one with aten's warning (printed on
# stderr by torch's C++ warning handler, once per call: see the test); a transposed out keeps
# its strides; a narrower dtype is an error, as in aten.
sys.stderr.write("@@ empty out\n")
sys.stderr.flush()
ours, theirs = torch.empty(0), torch.empty(0)
so.muladd.out(a, b, 2, out=ours)
aten.add.out(a, b, out=theirs)
sys.stderr.write("@@ wrong-shaped out\n")
sys.stderr.flush()
ours5, theirs5 = torch.empty(5), torch.empty(5)
so.muladd.out(a, b, 2, out=ours5)
aten.add.out(a, b, out=theirs5)
sys.stderr.write("@@ done\n")
sys.stderr.flush()
ours_t, theirs_t = torch.empty(3, 2).t(), torch.empty(3, 2).t()
so.muladd.out(a, b, 2, out=ours_t)
aten.add.out(a, b, out=theirs_t)
report(
    "out",
    equal=torch.equal(ours, ref),
    shape=[list(ours.shape), list(theirs.shape)],
    resized=[list(ours5.shape), list(theirs5.shape)],
    resized_equal=torch.equal(ours5, ref),
    strides=[list(ours_t.stride()), list(theirs_t.stride())],
    strided_equal=torch.equal(ours_t, ref),
    dtype_error=[
        error_of(lambda: so.muladd.out(a, b, out=torch.empty(2, 3, dtype=torch.long))),
        error_of(lambda: aten.add.out(a, b, out=torch.empty(2, 3, dtype=torch.long))),
    ],
)

# meta tensors: shapes and dtypes only
m = so.muladd(a.to("meta"), b.to("meta"))
mo = torch.empty(0, device="meta")
so.muladd.out(a.to("meta"), b[None].to("meta"), out=mo)
report(
    "meta",
    device=str(m.device),
    shape=list(m.shape),
    dtype=str(m.dtype),
    out_shape=list(mo.shape),
    reduction=list(so.sumsq(a.to("meta"), -1, True).shape),
)

# the reduction: dim wrapped in meta(), keepdim, out= resizing, aten's dim error
t = torch.arange(24.0).reshape(2, 3, 4)
so_out, aten_out = torch.empty(7), torch.empty(7)
so.sumsq.dim_out(t, -2, out=so_out)
aten.sum.IntList_out(t * t, [-2], out=aten_out)
report(
    "reduction",
    equal=[torch.equal(so.sumsq(t, d), (t * t).sum(d)) for d in (-3, -2, -1, 0, 1, 2)],
    keepdim=torch.equal(so.sumsq(t, 1, True), (t * t).sum(1, keepdim=True)),
    out_equal=torch.equal(so_out, aten_out),
    out_shape=[list(so_out.shape), list(aten_out.shape)],
    dim_error=[error_of(lambda: so.sumsq(t, 3)), error_of(lambda: aten.sum(t, [3]))],
)


# opcheck: every variant
def check(op, *args, **kwargs):
    results = opcheck(op, args, kwargs, raise_exception=False)
    return {k: v if v == "SUCCESS" else str(v).splitlines()[0] for k, v in results.items()}


g = a.clone().requires_grad_()
report(
    "opcheck",
    results={
        "muladd": check(so.muladd.default, g, b, 2),
        "muladd_": check(so.muladd_.default, a.clone(), g, 2),
        "muladd.out": check(so.muladd.out, g, b, 2, out=torch.empty(2, 3)),
        "sumsq.dim": check(so.sumsq.dim, g, 1),
        "sumsq.dim_out": check(so.sumsq.dim_out, g, 1, out=torch.empty(2)),
    },
)


# functionalization: the mutating variants trace to the functional op
def mutating(x):
    y = x.clone()
    so.muladd_(y, x, 1)
    o = torch.empty(0)
    so.muladd.out(y, x, out=o)
    return y, o


gm = make_fx(torch.func.functionalize(mutating, remove="mutations_and_views"))(a.clone())
ops = [str(n.target) for n in gm.graph.nodes if n.op == "call_function"]
report(
    "functionalize",
    ops=ops,
    equal=all(torch.equal(p, q) for p, q in zip(gm(a.clone()), mutating(a.clone()), strict=True)),
)


# Dynamic shapes: TensorIterator's C++ meta needs concrete sizes, so a library author adds the
# SymInt-aware fake kernels torch.library asks of custom ops (after every check above, which ran
# on the generated Meta kernel). Then opcheck passes whole.
def muladd_fake(self, other, alpha=1):
    shape = torch.broadcast_shapes(self.shape, other.shape)
    return self.new_empty(shape, dtype=torch.result_type(self, other))


torch.library.register_fake("structured_ops::muladd")(muladd_fake)
torch.library.register_fake("structured_ops::muladd_")(lambda self, other, alpha=1: self)
torch.library.register_fake("structured_ops::muladd.out")(lambda self, other, alpha=1, *, out: out)
report(
    "opcheck_with_fakes",
    results={
        "muladd": check(so.muladd.default, g, b, 2),
        "muladd_": check(so.muladd_.default, a.clone(), g, 2),
        "muladd.out": check(so.muladd.out, g, b, 2, out=torch.empty(2, 3)),
    },
)
