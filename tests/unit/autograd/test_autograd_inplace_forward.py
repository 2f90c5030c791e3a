"""In-place ops whose forward formulas are out of place: an in-place entry's own formula
(`result: self_t * factor`) in a custom namespace, and aten's in-place ops reusing their
functional op's formula. The generated kernels are compiled with g++ against the wheel and
loaded; tests/scripts/check_autograd_inplace_forward.py compares their forward AD with torch's
(self with and without a tangent, a leaf or not, a view) and runs gradcheck and gradgradcheck
with forward AD."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.support.compile_helpers import CXXFLAGS, RUNTIME_SOURCES, TORCH_LIB
from tests.support.model_helpers import TAGS_YAML
from tests.support.oracle.torchgen_autograd import packaged_derivatives_yaml
from tests.support.script_helpers import run_script

pytestmark = pytest.mark.slow  # g++ over torch's headers, then gradcheck in a fresh interpreter

OPS = """\
- func: ipfw::scale_(Tensor(a!) self, float factor) -> Tensor(a!)
- func: ipfw::scale_inplace_formula_(Tensor(a!) self, float factor) -> Tensor(a!)
- func: ipfw::axpy_(Tensor(a!) self, Tensor other, float alpha) -> Tensor(a!)
- func: ipfw::mulby_(Tensor(a!) self, Tensor other) -> Tensor(a!)
"""
# Only scale_inplace_formula_'s forward formula updates self_t in place; the others compute
# the tangent out of place. mulby_'s reads self_t, which reverse over forward saves.
DERIVATIVES = """\
- name: ipfw::scale_(Tensor(a!) self, float factor) -> Tensor(a!)
  self: grad * factor
  result: self_t * factor
- name: ipfw::scale_inplace_formula_(Tensor(a!) self, float factor) -> Tensor(a!)
  self: grad * factor
  result: self_t.mul_(factor)
- name: ipfw::axpy_(Tensor(a!) self, Tensor other, float alpha) -> Tensor(a!)
  self: grad
  other: grad * alpha
  result: self_t + other_t * alpha
- name: ipfw::mulby_(Tensor(a!) self, Tensor other) -> Tensor(a!)
  self: grad * other
  other: grad * self
  result: self_t * other_p + other_t * original_self_p
"""
# aten's in-place ops whose forward formulas are their functional op's, out of place.
ATEN_OPS = (
    "lerp_.Scalar",
    "hypot_",
    "xlogy_.Tensor",
    "sin_",
    "tanh_",
    "masked_fill_.Scalar",
)


def _build(sources: list[Path], lib: Path) -> None:
    objects = []
    for source in [*sources, *RUNTIME_SOURCES]:
        obj = lib.parent / f"{source.stem}.o"
        proc = subprocess.run(
            ["g++", *CXXFLAGS, "-c", str(source), "-o", str(obj)], capture_output=True, text=True
        )
        assert proc.returncode == 0, f"{source}:\n{proc.stderr[-4000:]}"
        objects.append(str(obj))
    link = subprocess.run(
        ["g++", "-shared", "-o", str(lib), *objects, f"-L{TORCH_LIB}", "-lc10", "-ltorch_cpu"]
        + ["-Wl,--no-undefined", f"-Wl,-rpath,{TORCH_LIB}"],
        capture_output=True,
        text=True,
    )
    assert link.returncode == 0, link.stderr[-4000:]


def _check(mode: str, lib: Path, names: list[str], cases: dict[str, int]) -> None:
    run = run_script("check_autograd_inplace_forward.py", mode, str(lib))
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    lines = run.stdout.splitlines()
    for name in names:
        equal = [ln for ln in lines if ln.startswith(f"equals torch's: {name}, ")]
        assert len(equal) == cases[name] + 1, (name, lines)  # + reverse over forward
        assert f"gradcheck and gradgradcheck, forward AD too: {name}" in lines, lines
    assert lines[-1] == (
        "leaf: a leaf Variable that requires grad is being used in an in-place operation."
    ), lines


def test_inplace_entries_with_out_of_place_forward_formulas(tmp_path) -> None:
    from atengen.cli.main import main

    for name, text in (("ops", OPS), ("tags", TAGS_YAML), ("derivatives", DERIVATIVES)):
        (tmp_path / f"{name}.yaml").write_text(text)
    out = tmp_path / "generated"
    argv = ["atengen", "autograd", f"--op_yaml={tmp_path / 'ops.yaml'}"]
    argv += [f"--tags_yaml={tmp_path / 'tags.yaml'}"]
    argv += [f"--derivatives_yaml={tmp_path / 'derivatives.yaml'}", "--namespace=ipfw"]
    argv += ["--shards=1", f"--output_dir={out}"]
    assert main(argv) == 0
    lib = tmp_path / "libipfw.so"
    _build(sorted(out.glob("*.cpp")), lib)
    # Every situation of the script's (5 with another tensor input, 3 without).
    cases = {"scale_": 3, "scale_inplace_formula_": 3, "axpy_": 5, "mulby_": 5}
    _check("custom", lib, list(cases), cases)


def test_aten_inplace_ops_reusing_out_of_place_forward_formulas(tmp_path, installed_yaml) -> None:
    from atengen.cli.main import main

    op_yaml, tags_yaml = installed_yaml
    derivatives = packaged_derivatives_yaml()
    out = tmp_path / "generated"
    argv = ["atengen", "autograd", f"--op_yaml={op_yaml}", f"--tags_yaml={tags_yaml}"]
    argv += [f"--derivatives_yaml={derivatives}", "--namespace=aten"]
    argv += ["--cpp_namespace=atengen_aten", f"--ops={','.join(ATEN_OPS)}", "--shards=1"]
    argv += [f"--output_dir={out}"]
    assert main(argv) == 0
    sources = sorted(out.glob("*.cpp"))
    text = "".join(s.read_text() for s in sources)
    # Each kernel is the reused formula's: the tangent self has is updated in place.
    assert text.count("self_t_raw.defined() ? self_t_raw.") == len(ATEN_OPS), text
    lib = tmp_path / "libaten_inplace.so"
    _build(sources, lib)
    cases = {n: 5 if n in ATEN_OPS[:3] else 3 for n in ATEN_OPS}
    _check("aten", lib, list(ATEN_OPS), cases)


def test_in_place_calls_on_self_t_are_left_as_torch_writes_them(tmp_path, installed_yaml):
    """torch's own in-place entries update self_t in place, some changing its shape (`t_`):
    they are neither copied into self's tangent nor run on a copy of it."""
    from atengen.cli.main import main

    op_yaml, tags_yaml = installed_yaml
    out = tmp_path / "generated"
    argv = ["atengen", "autograd", f"--op_yaml={op_yaml}", f"--tags_yaml={tags_yaml}"]
    argv += [f"--derivatives_yaml={packaged_derivatives_yaml()}", "--namespace=aten"]
    argv += ["--ops=t_,_index_put_impl_,threshold_", "--shards=1", f"--output_dir={out}"]
    assert main(argv) == 0
    (source,) = out.glob("*.cpp")
    text = source.read_text()
    assert "auto self_new_fw_grad = self_t.t_();" in text
    assert "auto self_new_fw_grad = at::_index_put_impl_(self_t, indices, values_t, " in text
    assert "auto self_new_fw_grad = self_t.copy_(threshold_backward(self_t.conj()" in text
    assert "self_t_raw.copy_(" not in text and "self_t.clone()" not in text
