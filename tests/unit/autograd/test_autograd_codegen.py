"""End to end: autograd generated for the custom namespace agops (tests/data/agops/),
compiled with g++ against the torch wheel together with the library's CPU kernels,
loaded with torch.ops.load_library, then gradcheck/gradgradcheck (float64, forward
AD and forward-over-reverse) on functional, in-place, two-output, multi-input (grad_input_mask),
an op with non-differentiable arguments, output_differentiability, a forward-only entry, a
view op (and its view_copy), a view op with SymInt arguments (replayed by its generated
ViewFunc under view replay), forward formulas reading other outputs, and in-place ops with
entries of their own (alone, through the custom view and through a slice); gradients and
tangents equal to the same math written with torch ops, and in-place updates through the view
reach the base. And a custom namespace's `_foreach_` ops (functional and in place), over CPU
kernels written in Python."""

from __future__ import annotations

import subprocess
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from tests.support.compile_helpers import CXXFLAGS, RUNTIME_SOURCES, TORCH_LIB
from tests.support.model_helpers import REPO, TAGS_YAML
from tests.support.script_helpers import run_script

pytestmark = pytest.mark.slow  # g++ over torch's headers, then gradcheck in a fresh interpreter

AGOPS = Path(REPO) / "tests" / "data" / "agops"


def _compile(source: Path, obj: Path) -> None:
    proc = subprocess.run(
        ["g++", *CXXFLAGS, "-c", str(source), "-o", str(obj)], capture_output=True, text=True
    )
    assert proc.returncode == 0, f"{source}:\n{proc.stderr[-4000:]}"


def test_generated_autograd_passes_gradcheck(tmp_path, summary: list[str]) -> None:
    from atengen.cli.main import main

    tags = tmp_path / "tags.yaml"
    tags.write_text(TAGS_YAML)
    out = tmp_path / "generated"
    argv = [
        "atengen",
        "autograd",
        f"--op_yaml={AGOPS / 'ops.yaml'}",
        f"--tags_yaml={tags}",
        f"--derivatives_yaml={AGOPS / 'derivatives.yaml'}",
        "--namespace=agops",
        "--shards=0",  # one source per operator: the test names them
        f"--output_dir={out}",
    ]
    assert main(argv) == 0
    sources = sorted(out.glob("*.cpp"))
    assert [s.name for s in sources] == [
        "Autograd_cube.cpp",
        "Autograd_diag_view.cpp",
        "Autograd_diag_view_copy.cpp",
        "Autograd_exp_scale.cpp",
        "Autograd_fused_mul.cpp",
        "Autograd_list_mul.cpp",
        "Autograd_mean_std.cpp",
        "Autograd_mul_add.cpp",
        "Autograd_row_block.cpp",
        "Autograd_row_block_copy.cpp",
        "Autograd_scaled_tanh.cpp",
        "Autograd_sort_rows.cpp",
        "Autograd_square.cpp",
        "Autograd_take_rows.cpp",
    ]
    text = "".join(s.read_text() for s in sources)
    assert "ATENGEN_TORCH_LIBRARY_IMPL(agops, Autograd, m)" in text
    assert "ATENGEN_TORCH_LIBRARY_IMPL(agops, ADInplaceOrView, m)" in text
    # Our nodes live in agops::autograd_generated; of libtorch's namespace only exported helpers.
    assert "namespace torch" not in text
    assert "torch::autograd::generated::" not in text.replace(
        "using torch::autograd::generated::details::not_implemented;", ""
    )

    # Compiled from two buckets of the same generated code (--shards=2), not the fourteen files
    # above: each file costs a parse of torch's headers (about 20 s), the code itself little.
    bucketed = tmp_path / "bucketed"
    assert main([*argv[:-2], "--shards=2", f"--output_dir={bucketed}"]) == 0
    buckets = sorted(bucketed.glob("*.cpp"))
    assert len(buckets) == 2, buckets
    all_sources = [AGOPS / "kernels.cpp", *buckets, *RUNTIME_SOURCES]
    objects = [tmp_path / f"{s.stem}.o" for s in all_sources]
    with ThreadPoolExecutor(max_workers=2) as pool:
        list(pool.map(_compile, all_sources, objects))
    lib = tmp_path / "libagops.so"
    link = subprocess.run(
        [
            "g++",
            "-shared",
            "-o",
            str(lib),
            *map(str, objects),
            f"-L{TORCH_LIB}",
            "-lc10",
            "-ltorch_cpu",
            f"-Wl,-rpath,{TORCH_LIB}",
        ],
        capture_output=True,
        text=True,
    )
    assert link.returncode == 0, link.stderr[-4000:]

    run = run_script("check_agops_autograd.py", str(lib))
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    assert run.stdout.count("gradcheck+gradgradcheck ok:") == 18, run.stdout
    assert "gradients equal the torch-op reference: 12 ops" in run.stdout
    assert "tangents equal the torch-op reference: 4 ops" in run.stdout
    assert "output_differentiability and a forward-only entry ok" in run.stdout
    assert "view op: a view of its base; in-place through it reaches" in run.stdout
    assert "view replay: the custom view's ViewFunc replays it, with its SymInts" in run.stdout
    assert "opcheck (every test) ok: scaled_tanh, mul_add, fused_mul" in run.stdout
    assert "opcheck ok: diag_view (schema, autograd registration, fake tensor)" in run.stdout
    assert "grad_input_mask ok" in run.stdout
    assert "forward AD without a formula is refused" in run.stdout
    assert "out= errors as torch and bumps the version counter" in run.stdout
    assert "node name, leaf check and version counter ok" in run.stdout
    summary.append(
        "autograd codegen: agops (16 ops, 14 generated files; compiled as 2 buckets) against "
        "the wheel; "
        "gradcheck+gradgradcheck (forward AD, fwd-over-rev) pass and gradients equal torch ops"
    )


FOREACH_OPS = """\
- func: myfe::twice(Tensor self) -> Tensor
  dispatch:
    CPU: twice_cpu
- func: myfe::twice_(Tensor(a!) self) -> Tensor(a!)
  dispatch:
    CPU: twice_cpu_
- func: myfe::_foreach_twice(Tensor[] self) -> Tensor[]
  device_check: NoCheck
  dispatch:
    CPU: foreach_twice_cpu
- func: myfe::_foreach_twice_(Tensor(a!)[] self) -> ()
  device_check: NoCheck
  dispatch:
    CPU: foreach_twice_cpu_
"""
FOREACH_DERIVATIVES = """\
- name: myfe::twice(Tensor self) -> Tensor
  self: grad * 2
  result: auto_linear
"""


def test_custom_foreach_ops_differentiate_element_by_element(tmp_path) -> None:
    """A custom namespace's `_foreach_` ops take their formulas from the per-tensor op's entry;
    their Autograd and ADInplaceOrView kernels (the latter bumps every written element's version)
    are compiled and loaded over CPU kernels written in Python."""
    from atengen.cli.main import main

    (tmp_path / "ops.yaml").write_text(FOREACH_OPS)
    (tmp_path / "tags.yaml").write_text(TAGS_YAML)
    (tmp_path / "derivatives.yaml").write_text(FOREACH_DERIVATIVES)
    out = tmp_path / "generated"
    argv = [
        "atengen",
        "autograd",
        f"--op_yaml={tmp_path / 'ops.yaml'}",
        f"--tags_yaml={tmp_path / 'tags.yaml'}",
        f"--derivatives_yaml={tmp_path / 'derivatives.yaml'}",
        "--namespace=myfe",
        "--shards=1",
        f"--output_dir={out}",
    ]
    assert main(argv) == 0
    (source,) = out.glob("*.cpp")
    assert "for (const auto& t : self) torch::autograd::impl::bump_version(t);" in (
        source.read_text()
    )
    _compile(source, tmp_path / "myfe.o")
    (guard,) = RUNTIME_SOURCES
    _compile(guard, tmp_path / "guard.o")
    lib = tmp_path / "libmyfe.so"
    link = subprocess.run(
        ["g++", "-shared", "-o", str(lib), str(tmp_path / "myfe.o"), str(tmp_path / "guard.o")]
        + [f"-L{TORCH_LIB}"]
        + ["-lc10", "-ltorch_cpu", f"-Wl,-rpath,{TORCH_LIB}"],
        capture_output=True,
        text=True,
    )
    assert link.returncode == 0, link.stderr[-4000:]
    run = run_script("check_custom_foreach.py", str(lib))
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    assert run.stdout.splitlines() == [
        "functional nodes: myfe::ForeachTwiceBackward0 myfe::ForeachTwiceBackward0",
        "gradcheck (forward AD too) and gradgradcheck ok: functional",
        "gradcheck (forward AD too) and gradgradcheck ok: in-place",
        "in-place nodes: myfe::TwiceBackward0 myfe::TwiceBackward0",
        "versions bumped: [1, 1]",
        "leaf: a leaf Variable that requires grad is being used in an in-place operation.",
    ], run.stdout
