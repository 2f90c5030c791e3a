"""Loads //:libaten_generated.so into torch and checks what it changed: the selected ops give
the same results before and after, and torch's dispatch table names our files.

Run by tests/workspace/test_bazel_codegen.py in a fresh interpreter:
    python tests/scripts/load_and_compare.py LIBRARY EXPECTED ROOTS
EXPECTED is a JSON list of [dispatch key, op name, file name] that the library registers, ROOTS a
JSON list of the op roots to call (keys of CALLS). Prints one JSON object: the roots whose
results differ, and the expected registrations the dispatch table does not name our file for.
"""

import json
import sys

import torch
import torch.nn.functional as F

torch.manual_seed(0)
x = torch.arange(1.0, 7.0).reshape(2, 3)
y = torch.arange(6.0, 0.0, -1.0).reshape(2, 3) / 4
m = torch.arange(12.0).reshape(3, 4) / 8
b3 = torch.arange(24.0).reshape(2, 3, 4) / 16
b4 = torch.arange(16.0).reshape(2, 4, 2) / 8
img = torch.arange(32.0).reshape(1, 2, 4, 4)
idx = torch.tensor([1, 0, 1])
weight = torch.arange(15.0).reshape(5, 3)
cond = x > 3


def with_out(fn, *args, out_dtype=torch.float32, **kwargs):
    o = torch.empty(0, dtype=out_dtype)
    r = fn(*args, **kwargs, out=o)
    return (r, o)


def inplace(method, t, *args, **kwargs):
    c = t.clone()
    r = getattr(c, method)(*args, **kwargs)
    return (r, c)


def fq_state():
    return [
        torch.tensor([0.0]),
        torch.tensor([5.0]),
        torch.tensor([0.1]),
        torch.tensor([0], dtype=torch.int32),
    ]


def fused_moving_avg(functional):
    running_min, running_max, scale, zero_point = fq_state()
    args = (
        x,
        torch.tensor([1]),
        torch.tensor([1]),
        running_min,
        running_max,
        scale,
        zero_point,
        0.01,
        0,
        255,
        -1,
        False,
        False,
    )
    if functional:
        return torch.ops.aten._fused_moving_avg_obs_fq_helper_functional(*args)
    r = torch.ops.aten._fused_moving_avg_obs_fq_helper(*args)
    return (r, running_min, running_max, scale, zero_point)


def unary(name):
    fn = getattr(torch, name)
    return lambda: (fn(x), inplace(name + "_", x), with_out(fn, x))


CALLS = {
    "add": lambda: (
        x + y,
        torch.add(x, y, alpha=2),
        torch.add(x, 2),
        inplace("add_", x, y),
        with_out(torch.add, x, y),
    ),
    "sub": lambda: (
        x - y,
        torch.sub(x, y, alpha=3),
        inplace("sub_", x, 1.5),
        with_out(torch.sub, x, y),
    ),
    "mul": lambda: (x * y, x * 3, inplace("mul_", x, y), with_out(torch.mul, x, y)),
    "div": lambda: (
        x / y,
        torch.div(x, y, rounding_mode="floor"),
        x / 4,
        inplace("div_", x, y),
        with_out(torch.div, x, y),
    ),
    "abs": lambda: (torch.abs(-x), inplace("abs_", -x), with_out(torch.abs, -x)),
    "neg": unary("neg"),
    "exp": unary("exp"),
    "sqrt": unary("sqrt"),
    "relu": lambda: (
        torch.relu(x - 3),
        inplace("relu_", x - 3),
        torch.ops.aten.relu.out(x - 3, out=torch.empty(0)),
    ),
    "sigmoid": unary("sigmoid"),
    "tanh": unary("tanh"),
    "clamp": lambda: (
        torch.clamp(x, 2, 4),
        torch.clamp(x, min=y * 4),
        inplace("clamp_", x, max=3),
        with_out(torch.clamp, x, 2, 5),
    ),
    "where": lambda: (
        torch.where(cond, x, y),
        torch.where(cond, x, 0.5),
        torch.where(cond, 1.0, y),
        with_out(torch.where, cond, x, y),
    ),
    "sum": lambda: (x.sum(), x.sum(1), x.sum(0, keepdim=True), with_out(torch.sum, x, 1)),
    "mean": lambda: (x.mean(), x.mean(0), with_out(torch.mean, x, 1)),
    "max": lambda: (x.max(), tuple(x.max(1)), torch.max(x, y * 4)),
    "argmax": lambda: (
        x.argmax(),
        x.argmax(1),
        with_out(torch.argmax, x, 0, out_dtype=torch.int64),
    ),
    "cat": lambda: (torch.cat([x, y]), torch.cat([x, y], 1), with_out(torch.cat, [x, y])),
    "stack": lambda: (torch.stack([x, y]), with_out(torch.stack, [x, y], 1)),
    "mm": lambda: (torch.mm(x, m), with_out(torch.mm, x, m)),
    "bmm": lambda: (torch.bmm(b3, b4), with_out(torch.bmm, b3, b4)),
    "addmm": lambda: (torch.addmm(y[:, :2], x, m[:, :2]), inplace("addmm_", y[:, :2], x, m[:, :2])),
    "matmul": lambda: (torch.matmul(x, m), torch.matmul(b3, b4), x[0] @ m),
    # Uninitialized memory: compare what an empty tensor is, not its values.
    "empty": lambda: tuple(
        (t.shape, t.stride(), t.dtype)
        for t in (torch.empty(2, 3), torch.empty(4, dtype=torch.int64), torch.empty_like(x))
    ),
    "zeros": lambda: (torch.zeros(2, 3), torch.zeros(3, dtype=torch.int32), torch.zeros_like(x)),
    "ones": lambda: (torch.ones(2, 3), torch.ones_like(x)),
    "full": lambda: (torch.full((2, 2), 1.5), torch.full((3,), 7), torch.full_like(x, 2)),
    "arange": lambda: (torch.arange(5), torch.arange(1.0, 2.0, 0.25), with_out(torch.arange, 4)),
    "view": lambda: (x.view(3, 2), x.view(-1), x.view(torch.int32)),
    "reshape": lambda: (x.reshape(3, 2), x.t().reshape(6)),
    "transpose": lambda: (x.transpose(0, 1), b3.transpose(0, 2), inplace("transpose_", x, 0, 1)),
    "permute": lambda: (b3.permute(2, 0, 1),),
    "unsqueeze": lambda: (x.unsqueeze(0), x.unsqueeze(-1), inplace("unsqueeze_", x, 1)),
    "squeeze": lambda: (x.unsqueeze(0).squeeze(), x.unsqueeze(1).squeeze(1), x[:1].squeeze(0)),
    "select": lambda: (x.select(0, 1), x[:, 2]),
    "slice": lambda: (x[:, 1:3], x[::2], b3[:, :, 1::2]),
    "expand": lambda: (x[:1].expand(4, 3), x.unsqueeze(0).expand(2, 2, 3)),
    "t": lambda: (x.t(), inplace("t_", x)),
    "transpose_copy": lambda: (
        torch.transpose_copy(x, 0, 1),
        with_out(torch.transpose_copy, b3, 0, 2),
    ),
    "select_copy": lambda: (torch.select_copy(x, 1, 2), with_out(torch.select_copy, x, 0, 1)),
    "view_copy": lambda: (torch.view_copy(x, [3, 2]), torch.view_copy(x, torch.int32)),
    "zero": lambda: (inplace("zero_", x), torch.ops.aten.zero(x)),
    "fill": lambda: (
        inplace("fill_", x, 2.5),
        torch.fill(x, 3.0),
        inplace("fill_", x, torch.tensor(4.0)),
    ),
    "copy": lambda: (inplace("copy_", y, x), torch.ops.aten.copy(y, x)),
    "clone": lambda: (x.clone(), x.t().clone(), x.t().clone(memory_format=torch.contiguous_format)),
    "contiguous": lambda: (x.t().contiguous(), x.contiguous()),
    "_fused_moving_avg_obs_fq_helper": lambda: (fused_moving_avg(False), fused_moving_avg(True)),
    "index": lambda: (x[idx % 2], m[torch.tensor([2, 0])], x[cond]),
    "avg_pool2d": lambda: (F.avg_pool2d(img, 2), F.avg_pool2d(img, 3, stride=1, padding=1)),
    "softmax": lambda: (torch.softmax(x, 1), torch.softmax(x, 0)),
    "log_softmax": lambda: (torch.log_softmax(x, 1),),
    "embedding": lambda: (F.embedding(idx, weight), F.embedding(torch.tensor([[4, 0]]), weight)),
    "linear": lambda: (F.linear(x, m.t()[:2], y[0, :2]), F.linear(x, m.t())),
}


def flat(value):
    if isinstance(value, torch.Tensor):
        return [(str(value.dtype), tuple(value.shape), value.stride(), value.tolist())]
    if isinstance(value, (tuple, list)):
        return [item for v in value for item in flat(v)]
    return [repr(value)]


def main(so: str, expected: list[list[str]], roots: list[str]) -> None:
    before = {root: flat(CALLS[root]()) for root in roots}
    torch.ops.load_library(so)
    after = {root: flat(CALLS[root]()) for root in roots}
    differ = sorted(r for r in roots if before[r] != after[r])

    missing = []
    for key, name, file in expected:
        dump = torch._C._dispatch_dump("aten::" + name)
        # Alias keys (CompositeImplicitAutograd, ...) are listed as "<key>[alias]: ...".
        lines = [
            line for line in dump.splitlines() if line.startswith((key + ": ", key + "[alias]: "))
        ]
        if not any("/" + file + ":" in line for line in lines):
            missing.append([key, name, file, lines])
    print(
        json.dumps(
            {"differ": differ, "missing": missing, "checked": len(expected), "called": len(roots)}
        )
    )


if __name__ == "__main__":
    main(sys.argv[1], json.loads(sys.argv[2]), json.loads(sys.argv[3]))
