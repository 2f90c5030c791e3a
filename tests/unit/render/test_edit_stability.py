"""Generated files change only when their content must: an edit of one operator changes the files
that register, declare or differentiate it, and no other file's bytes (a changed file is a
recompile in Bazel). With the rules' default, --shards=auto, on tests/data/custom_ops."""

from __future__ import annotations

import filecmp
import re
from pathlib import Path

from tests.support.model_helpers import run_cli

DATA = Path(__file__).resolve().parents[2] / "data" / "custom_ops"
NEW_OP = """
- func: myops::cube(Tensor self) -> Tensor
  dispatch:
    CPU: cube_cpu
"""


def _generate(tmp_path: Path, name: str, op_yaml: str) -> Path:
    root = tmp_path / name
    root.mkdir()
    (root / "ops.yaml").write_text(op_yaml)
    ops = f"--op_yaml={root / 'ops.yaml'}"
    r = run_cli(
        "generate", ops, "--shards=auto", f"--output_dir={root}/cpu",
        f"--cuda_output_dir={root}/cuda", f"--header_output_dir={root}/include",
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    derivatives = f"--derivatives_yaml={DATA / 'derivatives.yaml'}"
    r = run_cli("autograd", ops, derivatives, "--shards=auto", f"--output_dir={root}/autograd")
    assert r.returncode == 0, r.stderr
    return root


def _changed(a: Path, b: Path) -> set[str]:
    """Paths (relative) whose bytes differ, or that exist on one side only."""
    files_a = {str(p.relative_to(a)) for p in a.rglob("*") if p.is_file() and p.name != "ops.yaml"}
    files_b = {str(p.relative_to(b)) for p in b.rglob("*") if p.is_file() and p.name != "ops.yaml"}
    both = files_a & files_b
    return (files_a ^ files_b) | {f for f in both if not filecmp.cmp(a / f, b / f, shallow=False)}


def _registering(root: Path, pattern: str, op: str) -> set[str]:
    """The generated sources matching `pattern` (a glob under root) that mention `op`'s schema
    or registration."""
    return {
        str(p.relative_to(root))
        for p in root.glob(pattern)
        if re.search(rf'"(myops::)?{op}[".(]', p.read_text())
    }


def test_adding_an_op_without_formulas_changes_only_its_key_schema_and_signature(tmp_path):
    base_yaml = (DATA / "ops.yaml").read_text()
    base = _generate(tmp_path, "base", base_yaml)
    added = _generate(tmp_path, "added", base_yaml + NEW_OP)
    changed = _changed(base, added)
    shard = _registering(added, "cpu/RegisterCPU_*.cpp", "cube")
    schema = _registering(added, "cpu/RegisterSchema_*.cpp", "cube")
    assert len(shard) == 1 and len(schema) == 1, (shard, schema)
    signatures = {c for c in changed if Path(c).name.startswith("KernelSignatures_")}
    assert len(signatures) <= 1, signatures
    # No autograd source: cube has no derivatives entry.
    assert changed == shard | schema | signatures | {"include/myops/ops/cube_native.h"}, changed


def test_renaming_a_kernel_changes_only_the_shards_that_register_it(tmp_path):
    base_yaml = (DATA / "ops.yaml").read_text()
    assert base_yaml.count("CPU: scale_cpu\n") == 1
    base = _generate(tmp_path, "base", base_yaml)
    renamed = _generate(
        tmp_path, "renamed", base_yaml.replace("CPU: scale_cpu\n", "CPU: scale_v2\n")
    )
    changed = _changed(base, renamed)
    shard = _registering(renamed, "cpu/RegisterCPU_*.cpp", "scale")
    assert len(shard) == 1, shard
    # The registration that calls it, and the header that declares it for its author.
    assert changed == shard | {"include/myops/ops/scale_native.h"}, changed
