"""Functionalize-key kernels: the model against torchgen, codegen errors, and
end to end in torch: `make_fx(torch.func.functionalize(f))` over //:aten_generated and the fzops
custom-namespace library (tests/data/fzops/).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.bazel_helpers import REPO
from tests.model_helpers import TAGS_YAML, generate_into

FZOPS = REPO / "tests" / "data" / "fzops"

# ---------------------------------------------------------------------------------------------
# The model: which ops get Functionalize kernels, and the functional op each mutation calls


def test_functionalized_ops_and_functional_variants_match_torchgen(summary: list[str]) -> None:
    from atengen.model.functionalization import MutationPlan, ViewPlan, functionalize_plan
    from atengen.model.operator_model import load_model
    from tests.oracle.torchgen_functionalization import torchgen_functionalize_kernels
    from tests.oracle.torchgen_model import packaged_yaml

    op_yaml, tags_yaml = packaged_yaml()
    theirs = torchgen_functionalize_kernels(op_yaml, tags_yaml)
    model = load_model(str(op_yaml), str(tags_yaml))
    ours = {}
    for f in model.functions:
        plan = functionalize_plan(model, f)
        if plan is None:
            continue
        if isinstance(plan, MutationPlan):
            ours[str(f.name)] = {"kind": "mutation", "functional": str(plan.functional.name)}
        else:
            kind = "view" if isinstance(plan, ViewPlan) else "decompose"
            ours[str(f.name)] = {"kind": kind, "functional": None}
    diff = sorted(
        (name, ours.get(name), theirs.get(name))
        for name in set(ours) | set(theirs)
        if ours.get(name) != theirs.get(name)
    )
    kinds = {
        k: sum(v["kind"] == k for v in ours.values()) for k in ("mutation", "view", "decompose")
    }
    summary.append(
        f"functionalization vs torchgen: {len(ours)} ops with Functionalize kernels "
        f"(torchgen {len(theirs)}), {kinds}, {len(diff)} differences"
    )
    assert len(ours) > 1000
    assert diff == [], diff[:20]


# ---------------------------------------------------------------------------------------------
# Codegen: errors and switches

NO_FUNCTIONAL = """\
- func: badops::grow_(Tensor(a!) self, Scalar amount) -> Tensor(a!)
  dispatch:
    CPU: grow_cpu_
"""


@pytest.fixture
def tags_yaml(tmp_path: Path) -> Path:
    path = tmp_path / "tags.yaml"
    path.write_text(TAGS_YAML)
    return path


def generate(op_yaml: Path, tags_yaml: Path, tmp_path: Path, *extra: str):
    return generate_into(tmp_path, op_yaml, tags_yaml, *extra)


def test_mutable_op_without_functional_variant_is_an_error(tmp_path: Path, tags_yaml) -> None:
    op_yaml = tmp_path / "ops.yaml"
    op_yaml.write_text(NO_FUNCTIONAL)
    out = tmp_path / "out"
    result = generate(op_yaml, tags_yaml, tmp_path)
    assert result.returncode == 1
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith(f"{op_yaml}:1: error: 'grow_' mutates its arguments"), lines[0]
    assert "autogen: grow, grow.out" in lines[0], lines[0]
    assert not out.exists() and not (tmp_path / "inc").exists()
    # Without functionalization the same YAML generates.
    ok = generate(op_yaml, tags_yaml, tmp_path, "--nofunctionalize")
    assert ok.returncode == 0, ok.stderr
    assert sorted(p.name for p in out.iterdir()) == [
        "RegisterCPU_badops_grow.cpp",
        "RegisterSchema_badops_grow.cpp",
    ]


CPU_ONLY_VIEW = """\
- func: badops::peek(Tensor(a) self) -> Tensor(a)
  dispatch:
    CPU: peek_cpu

- func: badops::peek_copy(Tensor self) -> Tensor
  tags: view_copy
  dispatch:
    CompositeExplicitAutogradNonFunctional: peek_copy
"""


def test_custom_view_needs_a_meta_capable_kernel(tmp_path: Path, tags_yaml) -> None:
    op_yaml = tmp_path / "ops.yaml"
    op_yaml.write_text(CPU_ONLY_VIEW)
    out = tmp_path / "out"
    result = generate(op_yaml, tags_yaml, tmp_path)
    assert result.returncode == 1
    assert result.stderr.strip() == (
        f"{op_yaml}:1: error: view op 'peek' needs a kernel that runs on meta tensors "
        "(CompositeExplicitAutograd or Meta) to be functionalized; or generate without "
        "functionalization"
    )
    assert not out.exists()


def test_functionalize_shards_are_per_operator(tmp_path: Path, tags_yaml) -> None:
    out = tmp_path / "out"
    result = generate(FZOPS / "ops.yaml", tags_yaml, tmp_path, "--shards=0")
    assert result.returncode == 0, result.stderr
    names = sorted(p.name for p in out.iterdir() if p.name.startswith("RegisterFunctionalize"))
    assert names == [
        f"RegisterFunctionalize_fzops_{r}.cpp"
        for r in ("axpy", "bump", "head", "head_copy", "track")
    ]
    # The view_copy kernel is generated (view, then clone), so authors are not asked for it.
    assert "head_copy" not in (tmp_path / "inc" / "fzops" / "ops" / "head_native.h").read_text()
    view_copy = (
        out / "RegisterCompositeExplicitAutogradNonFunctional_fzops_head_copy.cpp"
    ).read_text()
    assert "atengen::materialize(" in view_copy and '"fzops::head"' in view_copy


# ---------------------------------------------------------------------------------------------
# End to end in torch

# Runs in a fresh interpreter: argv[1] = the library, argv[2] = "aten" or "fzops".
# Prints one JSON object per program: the ops of its traced graph and what went wrong.
TRACE_PROGRAMS = r"""
import json, sys
import torch
from torch.fx.experimental.proxy_tensor import make_fx

lib, which = sys.argv[1], sys.argv[2]
torch.ops.load_library(lib)

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

def run(name, f, *args):
    eager = f(*[a.clone() for a in args])
    gm = make_fx(torch.func.functionalize(f, remove="mutations_and_views"))(*[a.clone() for a in args])
    traced = gm(*[a.clone() for a in args])
    flat = lambda v: list(v) if isinstance(v, (tuple, list)) else [v]
    equal = len(flat(eager)) == len(flat(traced)) and all(
        torch.equal(a, b) for a, b in zip(flat(eager), flat(traced)))
    ops = graph_ops(gm)
    print(json.dumps({
        "name": name,
        "ops": [str(op) for op in ops],
        "bad": [f"{op}: {p}" for op in ops for p in problems_of(op)],
        "equal": equal,
    }))

x = torch.arange(12.0).reshape(4, 3)

if which == "aten":
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
            x, torch.tensor([1]), torch.tensor([1]), running_min, running_max, scale, zero_point,
            0.01, 0, 255, -1, False, False)
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
    gm = make_fx(torch.func.functionalize(symbolic, remove="mutations_and_views"),
                 tracing_mode="symbolic")(x.clone())
    ops = graph_ops(gm)
    shapes = [(4, 3), (5, 6), (2, 7)]
    equal = all(torch.equal(gm(t.clone()), symbolic(t.clone()))
                for t in (torch.arange(float(a * b)).reshape(a, b) for a, b in shapes))
    print(json.dumps({"name": "symbolic shapes", "ops": [str(op) for op in ops],
                      "bad": [f"{op}: {p}" for op in ops for p in problems_of(op)],
                      "equal": equal}))
else:
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
"""


def trace(library: Path, which: str) -> dict[str, dict]:
    result = subprocess.run(
        [sys.executable, "-c", TRACE_PROGRAMS, str(library), which],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stderr[-6000:]
    reports = [json.loads(line) for line in result.stdout.splitlines() if line.startswith("{")]
    return {r["name"]: r for r in reports}


def assert_functional(report: dict, must_contain: list[str]) -> None:
    assert report["equal"], f"{report['name']}: traced result differs from eager"
    assert report["bad"] == [], f"{report['name']}: {report['bad']} in {report['ops']}"
    for op in must_contain:
        assert op in report["ops"], f"{report['name']}: {op} not in {report['ops']}"


def test_aten_programs_functionalize_through_our_kernels(aten_generated, summary) -> None:
    dump = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys, torch; torch.ops.load_library(sys.argv[1]); "
            "print('\\n'.join(torch._C._dispatch_dump('aten::' + n) for n in sys.argv[2:]))",
            str(aten_generated.library),
            "add_.Tensor",
            "add.out",
            "transpose_",
            "unsqueeze_",
            "transpose.int",
            "select.int",
            "_fused_moving_avg_obs_fq_helper",
        ],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    ours = [line for line in dump.splitlines() if line.startswith("Functionalize: ")]
    assert len(ours) == 7 and all("/RegisterFunctionalize_b" in line for line in ours), ours

    reports = trace(aten_generated.library, "aten")
    # Our view kernels undo a view by scattering it back with as_strided_scatter (torch's own
    # kernels use per-op inverses), so its presence shows that our kernels ran.
    assert_functional(reports["in-place chain"], ["aten.add.Tensor", "aten.mul.Tensor"])
    assert_functional(reports["out= calls"], ["aten.add.Tensor", "aten.mul.Tensor"])
    assert_functional(
        reports["mutation through a view"],
        ["aten.transpose_copy.int", "aten.select_copy.int", "aten.as_strided_scatter.default"],
    )
    assert_functional(
        reports["inplace_view ops"],
        ["aten.transpose_copy.int", "aten.unsqueeze_copy.default"],
    )
    assert_functional(
        reports["multi-output mutable op"],
        ["aten._fused_moving_avg_obs_fq_helper_functional.default"],
    )
    # Traced with symbolic sizes, the graph replays correctly on other shapes.
    assert_functional(reports["symbolic shapes"], ["aten.as_strided_scatter.default"])
    edges = reports["edges"]
    assert (
        "mutating a non-functional tensor with a functional tensor is not allowed"
        in (edges["mixed"])
    ), edges
    assert edges["plain"] == [2.0, 2.0, 2.0], edges
    summary.append(f"functionalization (aten): {len(reports) - 1} programs traced and compared")


@pytest.fixture(scope="module")
def fzops_library(custom_op_libraries: dict[str, Path]) -> Path:
    return custom_op_libraries["fzops"]


def test_custom_namespace_programs_functionalize(fzops_library: Path, summary) -> None:
    reports = trace(fzops_library, "fzops")
    assert_functional(reports["fzops inplace"], ["fzops.bump.default"])
    assert_functional(reports["fzops mutable"], ["fzops.track_functional.default"])
    assert_functional(reports["fzops out="], ["fzops.axpy.default"])
    assert_functional(
        reports["fzops view"], ["fzops.head_copy.default", "aten.as_strided_scatter.default"]
    )
    summary.append(f"functionalization (fzops): {len(reports)} programs traced and compared")
