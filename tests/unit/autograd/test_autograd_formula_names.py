"""A formula that uses a name nothing declares (a misspelled argument) is an error at its line,
naming the name and listing what the formula may use, instead of C++ that does not compile;
and no real formula is refused: every one of the torch wheel's derivatives.yaml, and C++ that
formulas write (at:: calls, methods, FunctionsManual.h helpers, lambdas, comments)."""

from __future__ import annotations

import pytest

from tests.support.model_helpers import autograd_into, run_cli
from tests.support.oracle.torchgen_autograd import packaged_derivatives_yaml

OPS = """\
- func: nm::scale(Tensor self, float factor) -> Tensor
- func: nm::scale_(Tensor(a!) self, float factor) -> Tensor(a!)
- func: nm::split2(Tensor self) -> (Tensor low, Tensor high)
- func: nm::_foreach_scale(Tensor[] self, float factor) -> Tensor[]
  device_check: NoCheck
- func: where.self(Tensor condition, Tensor self, Tensor other) -> Tensor
"""
SCALE = "- name: nm::scale(Tensor self, float factor) -> Tensor\n"
SCALE_ = "- name: nm::scale_(Tensor(a!) self, float factor) -> Tensor(a!)\n"
SPLIT2 = "- name: nm::split2(Tensor self) -> (Tensor low, Tensor high)\n"


def _check(tmp_path, derivatives: str):
    proc, out = autograd_into(tmp_path, OPS, derivatives, "--namespace=nm")
    return proc, out.exists()


# name: (derivatives YAML, line, the unknown name, the names listed as the formula's own)
BAD = {
    "backward_argument": (
        SCALE + "  self: grad * factr\n",
        2,
        "the backward formula for 'self' uses 'factr', which is not declared there (did you "
        "mean 'factor'?)",
        "factor, grad, grad_input_mask, grads, result, result0, retain_variables, self",
    ),
    "forward_tangent": (
        SCALE + "  self: grad * factor\n  result: self_tt * factor\n",
        3,
        "the forward formula for 'result' uses 'self_tt', which is not declared there (did you "
        "mean 'self_t'?)",
        "factor, factor_p, factor_t, original_self_p, original_self_t, result, result0, self, "
        "self_p, self_t",
    ),
    "inplace_forward": (
        SCALE_ + "  self: grad * factor\n  result: self_t * fator\n",
        3,
        "the forward formula for 'result' uses 'fator', which is not declared there (did you "
        "mean 'factor'?)",
        None,
    ),
    "named_output_gradient": (
        SPLIT2 + "  self: grad_low + grad_hihg\n",
        2,
        "the backward formula for 'self' uses 'grad_hihg', which is not declared there (did "
        "you mean 'grad_high'?)",
        "grad, grad_high, grad_input_mask, grad_low, grads, high, low, result, result0, "
        "result1, retain_variables, self",
    ),
    "aten_op_misspelled": (
        SCALE + "  self: wheree(self > 0, grad * factor, grad)\n",
        2,
        "the backward formula for 'self' uses 'wheree', which is not declared there",
        None,
    ),
    "lambda_local_misspelled": (
        SCALE + '  self: "[&] { auto g = grad * factor; return gg; }()"\n',
        2,
        "the backward formula for 'self' uses 'gg', which is not declared there",
        None,
    ),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_an_undeclared_name_is_an_error_at_its_line(tmp_path, case):
    derivatives, line, message, own = BAD[case]
    proc, wrote = _check(tmp_path, derivatives)
    assert proc.returncode == 1 and not wrote
    (err,) = proc.stderr.splitlines()
    assert err.startswith(f"{tmp_path / 'derivatives.yaml'}:{line}: error: {message}; "), err
    assert err.endswith(
        ", and C++ keywords, at::, c10::, std:: and torch:: names, aten operators, its "
        "namespace's operators, torch's FunctionsManual.h helpers and names it declares itself"
    ), err
    if own is not None:
        assert f"; it may use {own}, and C++ keywords" in err, err


GOOD = (
    SCALE
    # A comment's and a string's words, at:: and std:: names, methods, a FunctionsManual.h
    # helper torch exports, an unqualified aten op (found through its arguments), M_PI.
    + '  self: "/* is_result */ true ? at::mul(grad, factor) * M_PI / M_PI : '
    + 'not_implemented(\\"scale backward\\")"\n'
    + "  result: where(self_p > 0, self_t, self_t) * factor\n"
    + SCALE_
    + '  self: "[&] { auto g = grad * factor; std::vector<at::Tensor> v{g}; '
    + "for (size_t i = 0; i < v.size(); ++i) { v[i] = v[i].sum_to_size(self.sym_sizes()); } "
    + 'return v[0]; }()"\n'
    + "  result: self_t.mul_(factor)\n"
    + SPLIT2
    + '  self: "(grad_low.defined() ? grad_low : at::zeros_like(self)) + grad_high * 0"\n'
    + "  low: self_t * 1\n"
    + "  high: self_t * 0 + low\n"
    + "- name: nm::_foreach_scale(Tensor[] self, float factor) -> Tensor[]\n"
    + "  self: grads[i] * factor\n"
)


def test_formulas_using_what_they_may_are_taken(tmp_path):
    proc, wrote = _check(tmp_path, GOOD)
    assert (proc.returncode, proc.stderr) == (0, ""), proc.stderr
    assert wrote


def test_every_formula_of_torchs_derivatives_yaml_is_taken(installed_yaml):
    op_yaml, tags_yaml = installed_yaml
    proc = run_cli(
        "autograd",
        f"--op_yaml={op_yaml}",
        f"--tags_yaml={tags_yaml}",
        f"--derivatives_yaml={packaged_derivatives_yaml()}",
    )
    assert (proc.returncode, proc.stderr) == (0, ""), proc.stderr
