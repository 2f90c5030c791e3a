"""Runs small programs on device="lazy" with the regenerated TorchScript lazy backend.

    python demo.py path/to/libts_lazy.so    # our kernels serve the Lazy key
    python demo.py --builtin                # torch's built-in TS backend alone (the reference)

torch._lazy.ts_backend.init() registers the wheel's TorchScript backend and its Lazy kernels;
loading libts_lazy.so afterwards overrides the Lazy kernels of every full_codegen op of
ts_lazy.yaml with the generated ones (torch warns once per op that a kernel was overridden).

With a library, prints one JSON line: {"checks": {name: bool}, "details": {...}} where the
checks are, for each program: the result equals CPU, every listed op reached the Lazy key (its
LTC counter), the Lazy kernel of each listed op is ours (torch._C._dispatch_dump names our
generated file), the IR's aten:: nodes are our generated classes, and the program's lazy IR text
equals the built-in backend's (computed by this script with --builtin in a separate process,
where our library was never loaded) but for those class names. With --builtin, prints
{program: IR text}.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys

import torch
import torch._lazy
import torch._lazy.metrics
import torch._lazy.ts_backend


def elementwise(dev):
    a, b = _inputs(dev, (4, 5), (4, 5))
    return [(a * b + a.abs()).tanh() - b.exp() / 2]


def reduction(dev):
    (a,) = _inputs(dev, (6, 7))
    return [a.sum(dim=1), a.mean(), a.max(dim=0).values]


def matmul(dev):
    a, b, c = _inputs(dev, (3, 4), (4, 5), (3, 5))
    return [a.mm(b), torch.addmm(c, a, b, beta=0.5)]


def views_inplace(dev):
    (a,) = _inputs(dev, (4, 6))
    x = a * 1.0
    x[1:3].mul_(2)  # a slice written in place
    x.t().add_(1)  # every element, through a transposed view
    y = x.view(2, 12)
    y[:, 0].neg_()
    return [x, y.sum(dim=1)]


def mlp_train_step(dev):
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 3)).to(
        dev
    )
    opt = torch.optim.SGD(model.parameters(), lr=0.1, foreach=False)
    x, target = _inputs(dev, (5, 8), (5, 3))
    loss = ((model(x) - target) ** 2).mean()
    loss.backward()
    opt.step()
    return [loss.detach(), *(p.detach() for p in model.parameters())]


# program -> the ops it must run through the generated Lazy kernels (all full_codegen ops of
# ts_lazy.yaml): read off the programs above, not off the generated code.
PROGRAMS = {
    "elementwise": (elementwise, ["abs", "add.Tensor", "div.Tensor", "exp", "mul.Tensor",
                                  "sub.Tensor", "tanh"]),
    "reduction": (reduction, ["max.dim", "mean", "sum.dim_IntList"]),
    "matmul": (matmul, ["addmm", "mm"]),
    "views_inplace": (views_inplace, ["mul.Tensor", "neg", "slice_copy.Tensor", "slice_scatter",
                                      "sum.dim_IntList", "view_copy"]),
    "mlp_train_step": (mlp_train_step, ["addmm", "mean", "mm", "pow.Tensor_Scalar", "relu",
                                        "sub.Tensor", "sum.dim_IntList", "t_copy",
                                        "threshold_backward"]),
}  # fmt: skip


# Mangled-name prefixes of the IR node classes: ts_lazy.yaml's cpp_namespace, LTC's.
OUR_NODES, BUILTIN_NODES = "N12lazy_example", "N5torch4lazy"


def _inputs(dev, *shapes):
    gen = torch.Generator().manual_seed(sum(s[0] * 31 + s[-1] for s in shapes))
    return [torch.randn(*s, generator=gen).to(dev) for s in shapes]


def ir_texts() -> dict[str, str]:
    texts = {}
    for name, (program, _) in PROGRAMS.items():
        outs = program("lazy")
        texts[name] = torch._C._lazy._get_tensors_text(outs)
        torch._lazy.mark_step()
    return texts


def lazy_kernel_file(op: str) -> str:
    """The file that registered op's Lazy kernel, from the dispatcher's own dump."""
    name, _, overload = op.partition(".")
    dump = torch._C._dispatch_dump(f"aten::{name}" + (f".{overload}" if overload else ""))
    m = re.search(r"^Lazy: registered at (\S+?):\d+", dump, re.M)
    return m.group(1) if m else "(no Lazy kernel)"


def main() -> None:
    torch._lazy.ts_backend.init()
    if sys.argv[1:] == ["--builtin"]:
        print(json.dumps(ir_texts()))
        return
    builtin = subprocess.run(
        [sys.executable, __file__, "--builtin"], capture_output=True, text=True, check=True
    )
    reference = json.loads(builtin.stdout.strip().splitlines()[-1])
    torch.ops.load_library(sys.argv[1])
    checks, details = {}, {"dispatch": {}, "ir": {}}
    ours = ir_texts()
    for name, (program, ops) in PROGRAMS.items():
        expected = [t.detach() for t in program("cpu")]
        torch._lazy.metrics.reset()
        got = [t.cpu() for t in program("lazy")]
        torch._lazy.mark_step()
        checks[f"{name}: equals CPU"] = len(got) == len(expected) and all(
            torch.allclose(g, e, rtol=1e-5, atol=1e-5) for g, e in zip(got, expected, strict=True)
        )
        counters = set(torch._lazy.metrics.counter_names())
        # LTC counts each kernel call as lazy::<kernel name> (symint kernels end in _symint).
        reached = {
            op for op in ops if {f"lazy::{op.split('.')[0]}{s}" for s in ("", "_symint")} & counters
        }
        checks[f"{name}: ops reached the Lazy key"] = reached == set(ops)
        files = {op: lazy_kernel_file(op) for op in ops}
        details["dispatch"].update(files)
        checks[f"{name}: Lazy kernels are the generated ones"] = all(
            "/ts_lazy_codegen/srcs.cc/RegisterLazy_" in f for f in files.values()
        )
        details["ir"][name] = ours[name]
        # The IR names each node's C++ class (NodeType=<mangled name>): ours are in
        # lazy_example, the built-in ones in torch::lazy; apart from that, the same text.
        checks[f"{name}: IR equals the built-in backend's"] = (
            ours[name].replace(OUR_NODES, BUILTIN_NODES) == reference[name]
        )
        aten_nodes = [line for line in ours[name].splitlines() if "] aten::" in line]
        checks[f"{name}: IR nodes are the generated classes"] = bool(aten_nodes) and all(
            f"NodeType={OUR_NODES}" in line for line in aten_nodes
        )
        if not checks[f"{name}: IR equals the built-in backend's"]:
            details["ir"][name + " (built-in)"] = reference[name]
    print(json.dumps({"checks": checks, "details": details}))


if __name__ == "__main__":
    main()
