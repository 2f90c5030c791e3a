"""Formulas may call the operators of their own namespace by name (or as `<namespace>::<name>`),
as aten's formulas call aten's; a called name that is neither one of those, nor an aten operator,
nor a helper is an error at its line, with nothing written. Where the op YAML has no aten
operators (a custom library's), aten's names are the installed wheel's (its native_functions.yaml)
or those --torch_facts lists. (tests/workspace/test_autograd_own_ops.py builds and runs such a library.)"""

from __future__ import annotations

import json

import pytest

from tests.support.model_helpers import autograd_into

ROI_ALIGN = (
    "myvision::roi_align(Tensor input, Tensor rois, float spatial_scale, SymInt pooled_height, "
    "SymInt pooled_width, int sampling_ratio, bool aligned) -> Tensor"
)
BACKWARD = (
    "myvision::_roi_align_backward(Tensor grad, Tensor rois, float spatial_scale, SymInt "
    "pooled_height, SymInt pooled_width, SymInt batch_size, SymInt channels, SymInt height, "
    "SymInt width, int sampling_ratio, bool aligned) -> Tensor"
)
OPS = f"""\
- func: {ROI_ALIGN}
- func: {BACKWARD}
- func: myvision::pick.Tensor(Tensor self, Tensor other) -> Tensor
- func: myvision::pick.int(Tensor self, int other) -> Tensor
- func: other::thing(Tensor self) -> Tensor
"""
ARGS = (
    "rois, spatial_scale, pooled_height, pooled_width, input.sym_size(0), input.sym_size(1), "
    "input.sym_size(2), input.sym_size(3), sampling_ratio, aligned"
)


def _entry(formula: str) -> str:
    return f"- name: {ROI_ALIGN}\n  rois: non_differentiable\n  input: {formula}\n"


def _facts(tmp_path, **fields) -> str:
    """A --torch_facts file naming no exported helper (the formulas here call none)."""
    path = tmp_path / "torch_facts.json"
    helpers = {f"autograd_helpers_{k}": [] for k in ("exported", "declared", "defined")}
    path.write_text(json.dumps({"release": "2.13", "version": "2.13.0", **helpers, **fields}))
    return str(path)


# name: (formula, the C++ name it calls _roi_align_backward by, another line written)
GOOD = {
    "bare": (
        f"_roi_align_backward(grad, {ARGS})",
        "_roi_align_backward",
        "using ::myvision::_roi_align_backward;",
    ),
    "qualified": (
        f"myvision::_roi_align_backward(grad, {ARGS})",
        "_roi_align_backward",
        None,
    ),
    "symint": (
        f"_roi_align_backward_symint(grad, {ARGS})",
        "_roi_align_backward_symint",
        "using ::myvision::_roi_align_backward_symint;",
    ),
    # Overloads become C++ overloads; an aten call beside them stays aten's.
    "overloads": (
        f"myvision::pick(_roi_align_backward(grad, {ARGS}), 2) * exp(grad.sum())",
        "_roi_align_backward",
        "[[maybe_unused]] at::Tensor pick(const at::Tensor & self, int64_t other) {",
    ),
}


@pytest.mark.parametrize("case", sorted(GOOD))
def test_a_formula_calls_its_own_operators(tmp_path, case):
    formula, called, line = GOOD[case]
    proc, out = autograd_into(tmp_path, OPS, _entry(formula), "--namespace=myvision")
    assert (proc.returncode, proc.stderr) == (0, ""), proc.stderr
    (source,) = out.glob("*.cpp")
    text = source.read_text()
    # A function of the called name, with SymInts as c10::SymInt, over the op's typed handle.
    assert (
        f"[[maybe_unused]] at::Tensor {called}(const at::Tensor & grad, const at::Tensor & rois, "
        "double spatial_scale, c10::SymInt pooled_height, c10::SymInt pooled_width, c10::SymInt "
        "batch_size, c10::SymInt channels, c10::SymInt height, c10::SymInt width, int64_t "
        "sampling_ratio, bool aligned) {\n"
        "  return ::myvision::autograd_generated::op__roi_align_backward().call(" in text
    ), text
    assert '.findSchemaOrThrow("myvision::_roi_align_backward", "")' in text
    if line is not None:
        assert line in text, text
    assert "other::" not in text and "exp(" not in text.split("// Helpers the kernels")[0]


# name: (formula, flags beyond --namespace, the message after `error: the backward formula for
# 'input' `)
BAD = {
    "misspelled_own_op": (
        f"_roi_align_backwrd(grad, {ARGS})",
        (),
        "uses '_roi_align_backwrd', which is not declared there (did you mean "
        "'_roi_align_backward'?)",
    ),
    "unknown_name_with_facts": (
        f"roi_backward(grad, {ARGS})",
        ("facts",),
        "uses 'roi_backward', which is not declared there",
    ),
    "qualified_unknown": (
        f"myvision::roi_algn_backward(grad, {ARGS})",
        (),
        "calls 'myvision::roi_algn_backward', which is no operator of myvision (did you mean "
        "'_roi_align_backward'?); myvision has _roi_align_backward, pick, roi_align",
    ),
    "other_namespace": (
        "other::thing(grad)",
        (),
        "calls 'other::thing', an operator of another namespace; a formula of myvision may "
        "call myvision's operators and aten's",
    ),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_an_unknown_call_is_an_error_at_its_line(tmp_path, case):
    formula, flags, message = BAD[case]
    extra = [f"--torch_facts={_facts(tmp_path, aten_operators=['add', 'exp'])}"] if flags else []
    proc, out = autograd_into(tmp_path, OPS, _entry(formula), "--namespace=myvision", *extra)
    assert proc.returncode == 1 and not out.exists(), proc.stderr
    (err,) = proc.stderr.splitlines()
    assert err.startswith(
        f"{tmp_path / 'derivatives.yaml'}:3: error: the backward formula for 'input' {message}"
    ), err


def test_facts_without_aten_names_let_any_call_pass(tmp_path):
    """torch facts written before they listed aten's operators: which names argument-dependent
    lookup finds is unknown, so a call of an unknown name is left to the compiler."""
    proc, out = autograd_into(
        tmp_path,
        OPS,
        _entry(f"roi_backward(grad, {ARGS})"),
        "--namespace=myvision",
        f"--torch_facts={_facts(tmp_path)}",
    )
    assert (proc.returncode, proc.stderr) == (0, ""), proc.stderr
    assert "roi_backward(grad, rois" in next(out.glob("*.cpp")).read_text()


def test_overloads_taking_the_same_arguments_are_an_error(tmp_path):
    ops = OPS + "- func: myvision::pick.also(Tensor self, Tensor other2) -> Tensor\n"
    proc, out = autograd_into(
        tmp_path,
        ops,
        _entry(f"pick(_roi_align_backward(grad, {ARGS}), grad)"),
        "--namespace=myvision",
    )
    assert proc.returncode == 1 and not out.exists(), proc.stderr
    assert proc.stderr.splitlines() == [
        f"{tmp_path / 'derivatives.yaml'}:1: error: a formula calls 'pick', whose overloads "
        "'myvision::pick.Tensor(Tensor self, Tensor other) -> Tensor' and "
        "'myvision::pick.also(Tensor self, Tensor other2) -> Tensor' take the same C++ "
        "arguments; rename one of them"
    ]
