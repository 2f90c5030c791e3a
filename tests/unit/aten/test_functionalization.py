"""Functionalize-key kernels: the model against torchgen and the codegen's errors and switches.
Traced end to end in torch over libraries Bazel builds: tests/workspace/test_functionalization_traced.py.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.model_helpers import TAGS_YAML, generate_into

FZOPS = Path(__file__).resolve().parents[2] / "data" / "fzops"

# ---------------------------------------------------------------------------------------------
# The model: which ops get Functionalize kernels, and the functional op each mutation calls


def test_functionalized_ops_and_functional_variants_match_torchgen(
    installed_yaml: tuple[Path, Path], installed_model, summary: list[str]
) -> None:
    from atengen.model.functionalization import MutationPlan, ViewPlan, functionalize_plan
    from tests.support.oracle.torchgen_functionalization import torchgen_functionalize_kernels

    theirs = torchgen_functionalize_kernels(*installed_yaml)
    model = installed_model
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


def test_mutable_op_without_functional_variant_is_left_to_torch(tmp_path: Path, tags_yaml) -> None:
    # A custom op registers as its author wrote it; with no functional variant to call, its
    # functionalization is torch's own (auto_functionalize), and one note says so.
    op_yaml = tmp_path / "ops.yaml"
    op_yaml.write_text(NO_FUNCTIONAL)
    out = tmp_path / "out"
    result = generate(op_yaml, tags_yaml, tmp_path, "--shards=0")
    assert result.returncode == 0, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith(f"{op_yaml}:1: note: no Functionalize kernel is generated for grow_")
    assert "auto_functionalize" in lines[0], lines[0]
    expected = [
        "KernelSignatures_b0.cpp",  # grow_'s one C++ signature, instantiated once
        "RegisterCPU_badops_grow.cpp",
        "RegisterMeta_badops_grow.cpp",  # the no-op Meta kernel of an in-place op
        "RegisterSchema_badops_grow.cpp",
    ]
    assert sorted(p.name for p in out.iterdir()) == expected
    # Asked for the functional variant, it gets a Functionalize kernel calling it.
    op_yaml.write_text(NO_FUNCTIONAL + "  autogen: grow, grow.out\n")
    result = generate(op_yaml, tags_yaml, tmp_path, "--shards=0")
    assert result.returncode == 0 and not result.stderr, result.stderr
    assert "RegisterFunctionalize_badops_grow.cpp" in {p.name for p in out.iterdir()}
    # aten's own ops keep torchgen's rule: functionalization must serve them.
    aten_yaml = tmp_path / "aten_ops.yaml"
    aten_yaml.write_text(NO_FUNCTIONAL.replace("badops::", ""))
    result = generate(aten_yaml, tags_yaml, tmp_path)
    assert result.returncode == 1
    assert "'grow_' mutates its arguments" in result.stderr
    assert "autogen: grow, grow.out" in result.stderr


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
