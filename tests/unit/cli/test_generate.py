"""`atengen generate`: sharding stability, determinism, and bad input leaving no output."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from atengen.render.shards import AUTO_OPERATORS_PER_BUCKET
from tests.support.model_helpers import TAGS_YAML, run_cli, run_cli_process, tree

OPS = """\
- func: alpha(Tensor self) -> Tensor
  dispatch:
    CPU: alpha_cpu
    CompositeExplicitAutograd: alpha_ce
- func: beta(Tensor self, SymInt n) -> Tensor
  dispatch:
    CPU: beta_cpu_symint
- func: beta_(Tensor(a!) self, SymInt n) -> Tensor(a!)
  dispatch:
    CPU: beta_cpu_
  autogen: beta.out
- func: gamma(Tensor self, Scalar s) -> Tensor
  dispatch:
    CPU: gamma_cpu
    Meta: gamma_meta
- func: delta(Tensor self) -> Tensor
  dispatch:
    CPU: delta_cpu
"""


def generate(tmp_path: Path, ops_yaml: str, name: str, *extra: str):
    (tmp_path / "tags.yaml").write_text(TAGS_YAML)
    op = tmp_path / f"{name}.yaml"
    op.write_text(ops_yaml)
    out = tmp_path / f"{name}_out"
    r = run_cli(
        "generate",
        f"--op_yaml={op}",
        f"--tags_yaml={tmp_path / 'tags.yaml'}",
        f"--output_dir={out}",
        f"--header_output_dir={tmp_path / (name + '_hdrs')}",
        *extra,
    )
    return r, out


def changed(a: dict[str, str], b: dict[str, str]) -> set[str]:
    return {k for k in a.keys() | b.keys() if a.get(k) != b.get(k)}


@pytest.mark.parametrize("shards", ["0", "3", "auto"])
def test_one_op_edit_changes_only_its_shards(tmp_path, shards):
    r, out = generate(tmp_path, OPS, "base", f"--shards={shards}")
    assert r.returncode == 0, r.stderr
    base = tree(out)
    # one file per (key, shard): CPU for all four roots, CEA for alpha and the
    # generated beta.out, Meta for gamma and for the in-place beta_ (no Meta kernel of its
    # own: the no-op in-place Meta kernel), Functionalize for beta_ and beta.out; and the
    # kernel signatures' one file (the edits below bring no new signature)
    if shards == "0":
        assert set(base) == {
            "KernelSignatures_b0.cpp",
            "RegisterCPU_alpha.cpp",
            "RegisterCPU_beta.cpp",
            "RegisterCPU_gamma.cpp",
            "RegisterCPU_delta.cpp",
            "RegisterCompositeExplicitAutograd_alpha.cpp",
            "RegisterCompositeExplicitAutograd_beta.cpp",
            "RegisterMeta_gamma.cpp",
            "RegisterMeta_beta.cpp",
            "RegisterFunctionalize_beta.cpp",
        }

    # Rename one kernel: only gamma's CPU shard changes.
    r, out2 = generate(
        tmp_path, OPS.replace("gamma_cpu", "gamma_cpu2"), "renamed", f"--shards={shards}"
    )
    assert r.returncode == 0, r.stderr
    diff = changed(base, tree(out2))
    assert len(diff) == 1 and diff <= {f for f in base if f.startswith("RegisterCPU_")}
    assert "gamma_cpu2" in (out2 / diff.pop()).read_text()

    # Add an op: files of other ops stay byte-identical.
    added = OPS + "- func: epsilon(Tensor self) -> Tensor\n  dispatch:\n    CPU: eps_cpu\n"
    r, out3 = generate(tmp_path, added, "added", f"--shards={shards}")
    assert r.returncode == 0, r.stderr
    diff = changed(base, tree(out3))
    assert len(diff) == 1
    assert "epsilon" in (out3 / diff.pop()).read_text()

    # Remove an op: only its shards change (or disappear).
    removed = OPS.replace(
        "- func: delta(Tensor self) -> Tensor\n  dispatch:\n    CPU: delta_cpu\n", ""
    )
    r, out4 = generate(tmp_path, removed, "removed", f"--shards={shards}")
    assert r.returncode == 0, r.stderr
    diff = changed(base, tree(out4))
    assert len(diff) == 1
    if shards == "0":
        assert diff == {"RegisterCPU_delta.cpp"} and "RegisterCPU_delta.cpp" not in tree(out4)


def test_kernel_signatures_are_instantiated_once(tmp_path):
    """Registration sources only declare atengen::LibraryRef::impl<Signature>; the
    KernelSignatures files instantiate it, each signature once. An op that brings a new signature changes its
    own shard and one signature file; one that shares a signature changes only its shard."""
    r, out = generate(tmp_path, OPS, "base", "--shards=0")
    assert r.returncode == 0, r.stderr
    base = tree(out)
    delta = (out / "RegisterCPU_delta.cpp").read_text()
    assert 'ATENGEN_LIBRARY_IMPL(aten, CPU, m) {\n  m.impl("delta", &wrapper_CPU_delta);' in delta
    assert "TORCH_FN" not in "".join(p.read_text() for p in out.glob("*.cpp"))
    signatures = [
        line.split(" = ", 1)[1].rstrip(";")
        for p in out.glob("KernelSignatures_*.cpp")
        for line in p.read_text().splitlines()
        if line.startswith("using atg_signature_")
    ]
    # alpha, delta and CEA's alpha: Tensor(Tensor); gamma; beta (SymInt); beta_ (in place,
    # CPU and the no-op Meta kernel); beta.out (generated; Functionalize too).
    assert sorted(signatures) == [
        "at::Tensor & (at::Tensor &, c10::SymInt)",
        "at::Tensor & (const at::Tensor &, c10::SymInt, at::Tensor &)",
        "at::Tensor (const at::Tensor &)",
        "at::Tensor (const at::Tensor &, c10::SymInt)",
        "at::Tensor (const at::Tensor &, const at::Scalar &)",
    ]

    shared = OPS + "- func: zeta(Tensor self) -> Tensor\n  dispatch:\n    CPU: zeta_cpu\n"
    r, out2 = generate(tmp_path, shared, "shared", "--shards=0")
    assert r.returncode == 0, r.stderr
    assert changed(base, tree(out2)) == {"RegisterCPU_zeta.cpp"}

    new = (
        OPS
        + "- func: eta(Tensor self, float x, int[] y) -> Tensor\n  dispatch:\n    CPU: eta_cpu\n"
    )
    r, out3 = generate(tmp_path, new, "new", "--shards=0")
    assert r.returncode == 0, r.stderr
    diff = changed(base, tree(out3))
    assert len(diff) == 2 and "RegisterCPU_eta.cpp" in diff, diff
    (sig_file,) = diff - {"RegisterCPU_eta.cpp"}
    assert sig_file.startswith("KernelSignatures_b"), diff
    text = (out3 / sig_file).read_text()
    assert "= at::Tensor (const at::Tensor &, double, at::IntArrayRef);" in text, text


def cpu_ops(names: list[str]) -> str:
    return "".join(
        f"- func: {n}(Tensor self) -> Tensor\n  dispatch:\n    CPU: {n}_cpu\n" for n in names
    )


def bucket_files(out: Path, key: str) -> list[str]:
    return sorted(p.name for p in out.glob(f"Register{key}_*.cpp"))


# Operators of one key -> buckets: the fewest, a power of two, with at most K on average.
K = AUTO_OPERATORS_PER_BUCKET


@pytest.mark.parametrize(
    "count, buckets",
    [(1, 1), (K, 1), (K + 1, 2), (2 * K, 2), (2 * K + 1, 4), (4 * K, 4), (4 * K + 1, 8)],
)
def test_auto_sharding_sizes_each_key(tmp_path, count, buckets):
    names = [f"op{i:03d}" for i in range(count)]
    # Three of them also have a Meta kernel: that key gets its own, smaller count.
    yaml = cpu_ops(names).replace("CPU: op000_cpu", "CPU: op000_cpu\n    Meta: op000_meta")
    r, out = generate(tmp_path, yaml, "ops", "--shards=auto")
    assert r.returncode == 0, r.stderr
    cpu = bucket_files(out, "CPU")
    registered = {n for f in cpu for n in names if f'm.impl("{n}"' in (out / f).read_text()}
    assert registered == set(names)
    # Empty buckets are not written; with K/2 or more per bucket on average none is empty here.
    width = len(str(buckets - 1))
    expected = [f"RegisterCPU_b{i:0{width}d}.cpp" for i in range(buckets)]
    assert set(cpu) <= set(expected) and (count < K * buckets // 2 or set(cpu) == set(expected))
    assert max(int(f.split("_b")[1].split(".")[0]) for f in cpu) < buckets
    assert bucket_files(out, "Meta") == ["RegisterMeta_b0.cpp"]


def test_auto_sharding_redraws_a_key_only_when_it_doubles(tmp_path):
    """Adding an operator changes one file per key while the bucket count stays; the
    (2K+1)th operator of a key doubles its buckets, and that key's files are drawn anew."""
    names = [f"op{i:03d}" for i in range(2 * K + 1)]
    _, before = generate(tmp_path, cpu_ops(names[: 2 * K - 1]), "before", "--shards=auto")
    _, full = generate(tmp_path, cpu_ops(names[: 2 * K]), "full", "--shards=auto")
    _, doubled = generate(tmp_path, cpu_ops(names), "doubled", "--shards=auto")
    assert len(changed(tree(before), tree(full))) == 1
    assert len(bucket_files(full, "CPU")) == 2 and len(bucket_files(doubled, "CPU")) == 4


def test_shards_include_only_their_operators_headers(tmp_path):
    r = run_cli("generate", "--ops=add,abs", "--shards=0", f"--output_dir={tmp_path / 'o'}")
    assert r.returncode == 0, r.stderr
    text = (tmp_path / "o" / "RegisterCPU_add.cpp").read_text()
    native = [line for line in text.splitlines() if line.startswith("#include <ATen/ops/")]
    assert native == ["#include <ATen/ops/add_native.h>"]
    # workspace- or include-root-relative includes only
    for line in text.splitlines():
        if line.startswith("#include"):
            assert (
                "/tmp" not in line
                and "bazel-out" not in line
                and not line.split()[1][1:].startswith("/")
            )


@pytest.mark.slow
def test_output_is_identical_across_hash_seeds(tmp_path):
    trees = []
    for seed in ("0", "1", "123"):
        out = tmp_path / f"s{seed}"
        r = run_cli_process(
            "generate",
            "--ops=add,abs,_fused_moving_avg_obs_fq_helper,avg_pool2d,cat,zero,view",
            "--shards=2",
            f"--output_dir={out}",
            f"--cuda_output_dir={out}_cuda",
            env={"PYTHONHASHSEED": seed},
        )
        assert r.returncode == 0, r.stderr
        trees.append((tree(out), tree(Path(f"{out}_cuda"))))
    assert trees[0] == trees[1] == trees[2]
    assert trees[0][0] and trees[0][1]


@pytest.mark.slow  # every op of torch's YAML, every key
def test_full_real_yaml_generates_every_key(tmp_path):
    out = tmp_path / "all"
    r = run_cli("generate", f"--output_dir={out}", f"--cuda_output_dir={out}_cuda")
    assert r.returncode == 0, r.stderr
    cpu = os.listdir(out)
    cuda = os.listdir(f"{out}_cuda")
    keys = {name.split("_", 1)[0] for name in cpu + cuda}
    assert {
        "RegisterCPU",
        "RegisterMeta",
        "RegisterCUDA",
        "RegisterCompositeImplicitAutograd",
    } <= keys
    assert not any(k in keys for k in ("RegisterMPS", "RegisterXPU", "RegisterMTIA"))


@pytest.mark.parametrize(
    "args, message",
    [
        (["--ops=ad"], "unknown operator 'ad' in the op selection (did you mean"),
        (["--ops=add", "--keys=MPS"], "dispatch key 'MPS' cannot be generated"),
        (["--ops=,"], "the op selection is empty"),
        (["--ops_file=/nonexistent/ops.txt"], "cannot read --ops_file"),
    ],
)
def test_bad_generate_arguments_leave_no_output(tmp_path, args, message):
    out = tmp_path / "out"
    r = run_cli("generate", *args, f"--output_dir={out}")
    assert r.returncode == 1
    assert message in r.stderr
    assert "Traceback" not in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1
    assert not out.exists()


def test_failed_generation_keeps_the_previous_output_untouched(tmp_path):
    r, out = generate(tmp_path, OPS, "keep")
    assert r.returncode == 0
    before = tree(out)
    bad = OPS + "- func: broken(Tensor self -> Tensor\n"
    (tmp_path / "keep.yaml").write_text(bad)
    r = run_cli(
        "generate",
        f"--op_yaml={tmp_path / 'keep.yaml'}",
        f"--tags_yaml={tmp_path / 'tags.yaml'}",
        f"--output_dir={out}",
        f"--header_output_dir={tmp_path / 'keep_hdrs'}",
    )
    assert r.returncode == 1 and "keep.yaml:19: error: bad schema" in r.stderr
    assert tree(out) == before
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".atengen-")]


def test_custom_namespace_gets_schemas_and_headers(tmp_path):
    repo = Path(__file__).resolve().parents[2]
    r = run_cli(
        "generate",
        f"--op_yaml={repo / 'data/custom_ops/ops.yaml'}",
        "--shards=0",
        f"--output_dir={tmp_path / 'o'}",
        f"--header_output_dir={tmp_path / 'h'}",
    )
    assert r.returncode == 0, r.stderr
    assert set(tree(tmp_path / "h")) == {"myops/ops/scale_native.h", "myops/ops/shift_native.h"}
    header = (tmp_path / "h/myops/ops/shift_native.h").read_text()
    # `_symint` kernels take SymInt, the others plain ints
    assert (
        "shift_cpu_symint(const at::Tensor & self, const at::Scalar & amount, c10::SymInt repeat)"
        in header
    )
    assert (
        "shift_composite(const at::Tensor & self, const at::Scalar & amount, int64_t repeat)"
        in header
    )
    schema = (tmp_path / "o/RegisterSchema_myops_scale.cpp").read_text()
    assert (
        'm.def("myops::scale.out(Tensor self, float factor, *, Tensor(a!) out) -> Tensor(a!)"'
        in schema
    )
    r = run_cli(
        "generate",
        f"--op_yaml={repo / 'data/custom_ops/ops.yaml'}",
        f"--output_dir={tmp_path / 'x'}",
    )
    assert r.returncode == 1 and "need --header_output_dir" in r.stderr
    assert not (tmp_path / "x").exists()


def test_autograd_takes_auto_sharding(tmp_path):
    """aten_codegen passes its `shards` to the autograd action too: a two-operator library's
    autograd kernels fit one bucket."""
    data = Path(__file__).resolve().parents[2] / "data" / "custom_ops"
    r = run_cli(
        "autograd",
        f"--op_yaml={data / 'ops.yaml'}",
        f"--derivatives_yaml={data / 'derivatives.yaml'}",
        "--shards=auto",
        f"--output_dir={tmp_path / 'o'}",
    )
    assert r.returncode == 0, r.stderr
    assert sorted(p.name for p in (tmp_path / "o").iterdir()) == ["Autograd_b0.cpp"]
    text = (tmp_path / "o" / "Autograd_b0.cpp").read_text()
    assert "scale" in text and "shift" in text


def test_schemas_without_kernels_still_get_a_signature_source(tmp_path):
    """The schema sources' ATENGEN_LIBRARY_FRAGMENT is compiled in the KernelSignatures
    sources, so a library of schemas alone has one, with no signature."""
    # The op's one kernel is CompositeImplicitAutograd's, a key not generated here.
    ops = "- func: sops::only_schema(Tensor self) -> Tensor\n"
    r, out = generate(tmp_path, ops, "schemas", "--shards=0", "--keys=CPU")
    assert r.returncode == 0, r.stderr
    assert set(tree(out)) == {"KernelSignatures_b0.cpp", "RegisterSchema_sops_only_schema.cpp"}
    signatures = (out / "KernelSignatures_b0.cpp").read_text()
    assert "template class atengen::LibraryFragmentT<void>;" in signatures
    assert "atg_signature_" not in signatures
    schema = (out / "RegisterSchema_sops_only_schema.cpp").read_text()
    assert "ATENGEN_LIBRARY_FRAGMENT(sops, m)" in schema
