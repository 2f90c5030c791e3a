"""Bad derivatives YAMLs: one ``file:line: error: ...`` line each, exit status 1, no output.

The op YAML is tests/data/agops/ops.yaml (a custom namespace); every case is the
good tests/data/agops/derivatives.yaml with one mistake.
"""

from __future__ import annotations

import pytest

from tests.support.model_helpers import REPO, TAGS_YAML

AGOPS = f"{REPO}/tests/data/agops"

SCALED_TANH = "- name: agops::scaled_tanh(Tensor self, float factor) -> Tensor\n"
SCALED_TANH_ = "- name: agops::scaled_tanh_(Tensor(a!) self, float factor) -> Tensor(a!)\n"
MUL_ADD = "- name: agops::mul_add(Tensor x, Tensor y) -> (Tensor prod, Tensor total)\n"

# name: (derivatives YAML, line of the error, text the message must contain)
BAD_DERIVATIVES = {
    "unknown_op": (
        "- name: agops::scaled_tan(Tensor self, float factor) -> Tensor\n  self: grad\n",
        1,
        "unknown op 'agops::scaled_tan(Tensor self, float factor) -> Tensor'",
    ),
    "unknown_overload_lists_the_known_ones": (
        "- name: agops::scaled_tanh(Tensor self) -> Tensor\n  self: grad\n",
        1,
        "agops::scaled_tanh has: scaled_tanh(Tensor self, float factor) -> Tensor",
    ),
    "custom_op_without_its_namespace": (
        "- name: cube(Tensor self) -> Tensor\n  self: grad\n",
        1,
        "unknown op 'cube(Tensor self) -> Tensor': no such schema in the op YAML; did you mean "
        "'agops::cube(Tensor self) -> Tensor'? (a name without a namespace is aten's)",
    ),
    "custom_op_without_its_namespace_and_another_overload": (
        "- name: cube(Tensor self, int n) -> Tensor\n  self: grad\n",
        1,
        "no such schema in the op YAML; did you mean 'agops::cube(...)'?",
    ),
    "formula_for_unknown_variable": (
        SCALED_TANH + "  self: grad * factor\n  selff: grad\n",
        3,
        "'selff' is neither an argument nor an output of 'agops::scaled_tanh' (outputs: result)",
    ),
    "forward_formula_for_unknown_output": (
        MUL_ADD + "  x: grad_prod * y\n  y: grad_prod * x\n  result2: x_t\n",
        4,
        "'result2' is neither an argument nor an output",
    ),
    "output_differentiability_length": (
        MUL_ADD + "  output_differentiability: [True]\n  x: grad_prod * y\n",
        2,
        "output_differentiability has 1 value(s) but",
    ),
    "output_differentiability_false_on_inplace": (
        SCALED_TANH_ + "  output_differentiability: [False]\n  self: grad\n",
        2,
        "output_differentiability cannot be False for an in-place op",
    ),
    "inplace_entry_forward_formula_reads_overwritten_self": (
        SCALED_TANH_ + "  self: grad\n  result: self_t.mul_(self_p)\n",
        1,
        "the forward formula of the in-place op scaled_tanh_ reads self_p, the value it "
        "overwrites; use 'result' (or original_self_p)",
    ),
    "gradient_for_non_differentiable_argument": (
        SCALED_TANH + "  self: grad * factor\n  factor: grad.sum()\n",
        3,
        "gradient formula for 'factor', which is not differentiable (float)",
    ),
    "duplicate_entry": (
        SCALED_TANH + "  self: grad * factor\n" + SCALED_TANH + "  self: grad\n",
        3,
        "duplicate entry for 'agops::scaled_tanh(Tensor self, float factor) -> Tensor' "
        "(first on line 1)",
    ),
    "non_string_formula": (
        SCALED_TANH + "  self: 2\n",
        2,
        "the formula for 'self' must be a string, got 2 (int)",
    ),
    "list_formula": (
        SCALED_TANH + "  self: [grad, grad]\n",
        2,
        "the formula for 'self' must be a string, got a list",
    ),
    "grads_index_out_of_range": (
        MUL_ADD + "  x: grads[0] * y + grads[2]\n",
        2,
        "reads grads[2], but the op returns 2 output(s)",
    ),
    "sizes_instead_of_sym_sizes": (
        SCALED_TANH + "  self: grad.expand(self.sizes())\n",
        2,
        ".sizes() is not supported in derivative formulas",
    ),
    "ambiguous_input_in_forward_formula": (
        SCALED_TANH + "  self: grad * factor\n  result: self * factor\n",
        3,
        "uses 'self', which is ambiguous",
    ),
    "both_non_differentiable_and_formula": (
        MUL_ADD + "  x: grad_prod * y\n  'x, y': non_differentiable\n",
        1,
        "'x' is both non_differentiable and given a formula",
    ),
    "formulas_per_key_outside_aten": (
        SCALED_TANH
        + "  dispatch:\n    Default:\n      self: grad\n    AutogradNestedTensor:\n"
        + "      self: grad * 2\n",
        1,
        "autograd codegen does not support formulas for other autograd keys "
        "(AutogradNestedTensor) outside aten yet",
    ),
    "invalid_dispatch_key": (
        SCALED_TANH + "  dispatch:\n    AutogradGPU:\n      self: grad\n",
        3,
        "invalid dispatch key 'AutogradGPU'",
    ),
}


def _run(tmp_path, capsys, derivatives: str) -> tuple[int, str, str, list]:
    from atengen.cli.main import main

    deriv = tmp_path / "derivatives.yaml"
    deriv.write_text(derivatives)
    tags = tmp_path / "tags.yaml"
    tags.write_text(TAGS_YAML)
    out_dir = tmp_path / "out"
    argv = [
        "atengen",
        "autograd",
        f"--op_yaml={AGOPS}/ops.yaml",
        f"--tags_yaml={tags}",
        f"--derivatives_yaml={deriv}",
        "--namespace=agops",
        f"--output_dir={out_dir}",
    ]
    status = main(argv)
    captured = capsys.readouterr()
    written = sorted(out_dir.rglob("*")) if out_dir.exists() else []
    return status, captured.out, captured.err, written


@pytest.mark.parametrize("case", sorted(BAD_DERIVATIVES))
def test_bad_derivatives_yaml_is_one_error_line(case: str, tmp_path, capsys) -> None:
    text, line, message = BAD_DERIVATIVES[case]
    status, out, err, written = _run(tmp_path, capsys, text)
    assert status == 1
    assert out == ""
    assert written == []
    lines = err.splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith(f"{tmp_path / 'derivatives.yaml'}:{line}: error: "), err
    assert message in lines[0], err


def test_a_formula_calling_a_helper_the_wheel_does_not_export_is_left_out(tmp_path, capsys):
    # Not an error: like generate's kernels the wheel does not export, the function is left out
    # with a line on stdout (tests/unit/autograd/test_autograd_left_out.py).
    text = SCALED_TANH + "  self: handle_r_to_c(self.scalar_type(), grad * factor)\n"
    status, out, err, written = _run(tmp_path, capsys, text)
    assert (status, err) == (0, "")
    # Only what needs no formula: scaled_tanh_'s version bump, the out= op's refusal.
    (source,) = written
    text = source.read_text()
    assert "Backward" not in text and " scaled_tanh__autograd(" not in text
    assert " scaled_tanh_autograd(" not in text and " scaled_tanh_out_autograd(" in text
    assert " scaled_tanh__inplace_or_view(" in text
    assert out == (
        "left out: 2 functions of 1 entry whose formulas call handle_r_to_c(), which "
        "torch/csrc/autograd/FunctionsManual.h declares but the torch wheel does not export\n"
    )
