"""Traces programs with `make_fx(torch.func.functionalize(f))` after loading a library whose
Functionalize kernels they go through, and compares each traced graph with eager.

Run by tests/workspace/test_functionalization_traced.py in a fresh interpreter:
    python tests/scripts/trace_functionalized.py LIBRARY aten|fzops
aten: programs over torch's own ops (LIBRARY is //:libaten_generated.so); fzops: programs over
the custom namespace of tests/data/fzops (LIBRARY is its libfzops.so). Prints one JSON object
per program: the ops of its traced graph, those that still mutate or alias, and whether the
graph's result equals eager's.
"""

import json
import sys

import torch
from torch.fx.experimental.proxy_tensor import make_fx


def graph_ops(gm):
    return [n.target for n in gm.graph.nodes if n.op == "call_function"]


def problems_of(op):
    # Only functional and view_copy ops may remain: nothing that mutates or aliases.
    if not isinstance(op, torch._ops.OpOverload):
        return []  # operator.getitem on multi-output results
    schema = op._schema
    found = []
    if schema.is_mutable:
        found.append("mutates")
    if any(r.alias_info is not None for r in schema.returns):
        found.append("aliases")
    return found


def flat(v):
    return list(v) if isinstance(v, (tuple, list)) else [v]


def run(name, f, *args):
    eager = f(*[a.clone() for a in args])
    gm = make_fx(torch.func.functionalize(f, remove="mutations_and_views"))(
        *[a.clone() for a in args]
    )
    traced = gm(*[a.clone() for a in args])
    equal = len(flat(eager)) == len(flat(traced)) and all(
        torch.equal(a, b) for a, b in zip(flat(eager), flat(traced), strict=False)
    )
    ops = graph_ops(gm)
    print(
        json.dumps(
            {
                "name": name,
                "ops": [str(op) for op in ops],
                "bad": [f"{op}: {p}" for op in ops for p in problems_of(op)],
                "equal": equal,
            }
        )
    )


def trace_aten(x):
    def inplace_chain(x):
        y = x.clone()
        y.add_(1).mul_(2).sub_(x)
        return y

    def out_calls(x):
        o = torch.empty(0)
        torch.add(x, 1, out=o)
        p = torch.empty(0)
        torch.mul(o, x, out=p)
        return o, p

    def mutation_through_view(x):
        y = x.clone()
        y.transpose(0, 1).add_(1)
        y.select(0, 2).mul_(3)
        y.view(-1)[4:8].zero_()
        return y

    def inplace_views(x):
        y = x.clone()
        y.transpose_(0, 1)
        y.unsqueeze_(0)
        y.mul_(2)
        return y, x + 1

    def multi_output_mutable(x):
        running_min, running_max = torch.tensor([0.0]), torch.tensor([5.0])
        scale, zero_point = torch.tensor([0.1]), torch.tensor([0], dtype=torch.int32)
        out, mask = torch.ops.aten._fused_moving_avg_obs_fq_helper(
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
        return out, mask, running_min, running_max, scale, zero_point

    run("in-place chain", inplace_chain, x)
    run("out= calls", out_calls, x)
    run("mutation through a view", mutation_through_view, x)
    run("inplace_view ops", inplace_views, x)
    run("multi-output mutable op", multi_output_mutable, x)

    # Mutating a plain tensor with a functional one is an error; with plain ones it just runs.
    outside = torch.zeros(3)
    try:
        torch.func.functionalize(lambda t: outside.add_(t))(torch.ones(3))
        mixed = "no error"
    except RuntimeError as e:
        mixed = str(e)
    untouched = torch.zeros(3)

    def plain_only(t):
        untouched.fill_(2.0)  # only plain tensors (a factory's result would be functional)
        return t * 2

    torch.func.functionalize(plain_only)(torch.ones(3))
    print(json.dumps({"name": "edges", "mixed": mixed, "plain": untouched.tolist()}))

    # Symbolic shapes: one graph, replayed on inputs of other shapes.
    def symbolic(x):
        y = x.clone()
        y.transpose(0, 1).add_(1)
        y.view(-1)[2:5].mul_(2)
        y.unsqueeze_(0)
        return y

    gm = make_fx(
        torch.func.functionalize(symbolic, remove="mutations_and_views"), tracing_mode="symbolic"
    )(x.clone())
    ops = graph_ops(gm)
    shapes = [(4, 3), (5, 6), (2, 7)]
    equal = all(
        torch.equal(gm(t.clone()), symbolic(t.clone()))
        for t in (torch.arange(float(a * b)).reshape(a, b) for a, b in shapes)
    )
    print(
        json.dumps(
            {
                "name": "symbolic shapes",
                "ops": [str(op) for op in ops],
                "bad": [f"{op}: {p}" for op in ops for p in problems_of(op)],
                "equal": equal,
            }
        )
    )


def trace_fzops(x):
    fz = torch.ops.fzops

    def inplace_no_functional(x):
        y = x.clone()
        fz.bump_(y, 2)
        fz.bump_(y, 0.5)
        return y

    def several_mutated(x):
        total, count = torch.zeros(()), torch.zeros(())
        mean, scaled = fz.track(x, total, count, 0.5)
        mean2, _ = fz.track(scaled, total, count, 0.5)
        return mean, scaled, mean2, total, count

    def out_op(x):
        o = torch.empty(0)
        fz.axpy.out(x, x, 2.0, out=o)
        return o

    def view_op(x):
        y = x.clone()
        h = fz.head(y, 2)
        h.mul_(10)
        return y, fz.head(y, 3)

    run("fzops inplace", inplace_no_functional, x)
    run("fzops mutable", several_mutated, x)
    run("fzops out=", out_op, x)
    run("fzops view", view_op, x)


def main(library: str, which: str) -> None:
    torch.ops.load_library(library)
    x = torch.arange(12.0).reshape(4, 3)
    if which == "aten":
        trace_aten(x)
    else:
        trace_fzops(x)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
