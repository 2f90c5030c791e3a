"""Every entry of the torch wheel's derivatives.yaml, alone, through `atengen autograd`.

An entry alone is a real input nobody here wrote, and a different one from the whole file: the
ops it leaves out change what the others match (with `mm` alone, `_foreach_mm` derives its
formulas from `mm`'s instead of using its own entry). Each must give a result or clean
``file:line: error:`` lines, exit status 1 and no output; never a traceback.
"""

from __future__ import annotations

import contextlib
import functools
import io
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from atengen.cli.main import main
from tests.support.oracle.torchgen_autograd import packaged_derivatives_yaml

# 687 entries, about 55 s here with the op model and the wheel's facts read once (105 s with the
# facts read from the wheel by every run): the full suite only.
SLOW = pytest.mark.slow
REPO = Path(__file__).resolve().parents[3]


def _entries() -> list[str]:
    """The entries' texts, split at the `- name:` lines that start each one."""
    lines = packaged_derivatives_yaml().read_text().split("\n")
    starts = [i for i, line in enumerate(lines) if line.startswith("- name:")]
    ends = starts[1:] + [len(lines)]
    return ["\n".join(lines[s:e]) + "\n" for s, e in zip(starts, ends, strict=True)]


@pytest.fixture
def model_loaded_once(monkeypatch):
    """The op model (the wheel's native_functions.yaml) is the same for every run, and loading
    it is most of a run's time: the pipelines' inputs load it through this cached function for
    the test's duration (patched where the pipelines look it up, and undone after the test)."""
    import atengen.pipelines.inputs as inputs

    monkeypatch.setattr(inputs, "load_model", functools.cache(inputs.load_model))


@pytest.fixture(scope="module")
def wheel_facts_file(tmp_path_factory) -> Path:
    """The installed torch described by tool/torch_probe.py, as the @torch repository rule
    writes it for the build's `atengen --torch_facts`: read once, instead of every run reading
    libtorch_cpu.so's symbol table again (most of a run's time)."""
    result = subprocess.run(
        [sys.executable, str(REPO / "tool" / "torch_probe.py")],
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "PYTHONPATH": str(REPO / "tool")},
    )
    assert result.returncode == 0, result.stderr[-4000:]
    path = tmp_path_factory.mktemp("facts") / "torch_facts.json"
    path.write_text(result.stdout)
    return path


def _run(tmp_path, name: str, text: str, *flags: str) -> tuple[int, str, list]:
    return _run_with_stdout(tmp_path, name, text, *flags)[:3]


def _run_with_stdout(tmp_path, name: str, text: str, *flags: str) -> tuple[int, str, list, str]:
    yaml_path = tmp_path / f"{name}.yaml"
    yaml_path.write_text(text)
    out = tmp_path / f"{name}_out"
    err, stdout = io.StringIO(), io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(stdout):
        rc = main(
            [
                "atengen",
                "autograd",
                f"--derivatives_yaml={yaml_path}",
                "--namespace=aten",
                "--shards=0",  # one file per operator: the tests name them
                f"--output_dir={out}",
                *flags,
            ]
        )
    written = sorted(out.rglob("*")) if out.exists() else []
    return rc, err.getvalue(), written, stdout.getvalue()


def _problem(yaml_path: str, rc: int, stderr: str, written: list) -> str | None:
    """What is wrong with a run's outcome, or None for a result or a clean error."""
    if rc == 0:
        return None  # a result (some entries, such as in-place views, generate no kernel)
    if rc != 1:
        return f"exit status {rc}"
    lines = stderr.splitlines()
    line_re = re.compile(rf"{re.escape(yaml_path)}:\d+: error: \S")
    if not lines or not all(line_re.match(line) for line in lines):
        return f"not file:line: error: lines: {stderr!r}"
    if written:
        return f"an error, but {len(written)} file(s) written"
    return None


@SLOW
def test_every_wheel_entry_alone_gives_a_result_or_a_clean_error(
    tmp_path, model_loaded_once, wheel_facts_file
):
    entries = _entries()
    assert len(entries) > 600, "the wheel's derivatives.yaml was not split into its entries"
    problems, outcomes = [], {0: 0, 1: 0}
    for i, text in enumerate(entries):
        name = f"entry{i}"
        try:
            rc, stderr, written = _run(tmp_path, name, text, f"--torch_facts={wheel_facts_file}")
        except Exception as e:  # a traceback: the bug this test is for
            problems.append(f"{text.splitlines()[0]}: {type(e).__name__}: {e}")
            continue
        problem = _problem(str(tmp_path / f"{name}.yaml"), rc, stderr, written)
        if problem is not None:
            problems.append(f"{text.splitlines()[0]}: {problem}")
        outcomes[rc] = outcomes.get(rc, 0) + 1
    assert not problems, f"{len(problems)} entries:\n" + "\n".join(problems[:20])
    # Most entries generate (functions calling helpers the wheel does not export left out).
    assert outcomes[0] > len(entries) // 2, outcomes


MM = (
    "- name: mm(Tensor self, Tensor mat2) -> Tensor\n"
    "  self: mm_mat1_backward(grad, mat2, self.sym_sizes(), self.sym_strides(), "
    "self.layout(), 1)\n"
    "  mat2: mm_mat2_backward(grad, self, mat2.sym_sizes(), mat2.sym_strides(), "
    "mat2.layout(), 1)\n"
    "  result: at::mm(self_t, mat2_p) + at::mm(self_p, mat2_t)\n"
)


def test_mm_alone_maps_a_saved_value_written_as_a_call(tmp_path, model_loaded_once):
    """`mm`'s saved `strides_or_error(mat2, "mat2")` is a call on the argument, not
    `mat2.<property>`; `_foreach_mm`, left without its own entry, derives from it. What
    remains is the wheel's own limit: the helpers are not exported, so mm is left out (only
    mm.out's kernel, which needs no formula, is written). (The command of the report:
    `--ops=mm`.)"""
    rc, stderr, written, stdout = _run_with_stdout(tmp_path, "mm", MM, "--ops=mm")
    assert (rc, stderr) == (0, "")
    tail = (
        ", which torch/csrc/autograd/FunctionsManual.h declares but the torch wheel does not export"
    )
    assert stdout.splitlines() == [
        "left out: 1 function of 1 entry whose formulas call mm_mat1_backward()" + tail,
        "left out: 1 function of 1 entry whose formulas call mm_mat2_backward()" + tail,
    ]
    (source,) = written
    assert " mm_out_autograd(" in source.read_text() and "MmBackward" not in source.read_text()


def test_foreach_mm_maps_mm_s_saved_strides_onto_the_list(tmp_path, model_loaded_once):
    """Formulas the wheel can link, for `mm`: its own kernel generates. `_foreach_mm`, derived
    from it, evaluates `strides_or_error(mat2[i], "mat2[i]")` in its backward formula, where the
    helper is not available (the mapping used to raise a KeyError before getting there)."""
    text = (
        "- name: mm(Tensor self, Tensor mat2) -> Tensor\n"
        "  self: grad.mm(mat2.t()).as_strided_symint(self.sym_sizes(), self.sym_strides())\n"
        "  mat2: self.t().mm(grad).as_strided_symint(mat2.sym_sizes(), mat2.sym_strides())\n"
    )
    rc, stderr, written = _run(tmp_path, "mm", text, "--ops=mm")
    assert (rc, stderr) == (0, "")
    assert [p.name for p in written] == ["Autograd_mm.cpp"]

    rc, stderr, written, stdout = _run_with_stdout(tmp_path, "all", text)
    assert (rc, stderr) == (0, "")
    assert stdout == (
        "left out: 1 function of 1 entry whose formulas call strides_or_error(), which "
        "torch/csrc/autograd/FunctionsManual.h declares but the torch wheel does not export\n"
    )
    assert [p.name for p in written] == ["Autograd_mm.cpp"]


def test_a_saved_argument_the_foreach_op_lacks_is_an_error(tmp_path, model_loaded_once):
    """`add.Scalar` takes `alpha`, `_foreach_add.Scalar` does not: a formula of `add` that
    saves alpha cannot be used for the foreach op."""
    text = (
        "- name: add.Scalar(Tensor self, Scalar other, Scalar alpha=1) -> Tensor\n"
        "  self: grad * alpha\n"
    )
    rc, stderr, written = _run(tmp_path, "add", text)
    assert rc == 1
    path = f"{tmp_path}/add.yaml"
    assert stderr.splitlines() == [
        f"{path}:1: error: '_foreach_add.{overload}' takes its formulas from 'add', which saves "
        f"'alpha', not an argument of '_foreach_add.{overload}'; give '_foreach_add.{overload}' "
        "its own entry"
        for overload in ("Scalar", "ScalarList")
    ]
    assert written == []


SELECT = (
    "- name: select.int(Tensor(a) self, int dim, SymInt index) -> Tensor(a)\n"
    "  dispatch:\n"
    "    Default:\n"
    "      self: select_backward_symint(grad, self.sym_sizes(), dim, index)\n"
    "      result: auto_linear\n"
    "    AutogradNestedTensor:\n"
    "      self: _nested_select_backward_symint(grad, self, dim, index)\n"
)


def test_aten_entry_with_formulas_per_key_gets_the_default_kernel(tmp_path, model_loaded_once):
    """torch's `select.int` entry (as in the wheel) has Default and AutogradNestedTensor
    formulas: the Autograd kernel differentiates by Default's, and nested tensors keep torch's
    own AutogradNestedTensor kernel (registered for that key, it wins over the alias)."""
    rc, stderr, written = _run(tmp_path, "select", SELECT, "--ops=select.int")
    assert (rc, stderr) == (0, ""), stderr
    text = "".join(p.read_text() for p in written)
    assert "select_backward_symint(grad, self_sym_sizes, dim, index)" in text
    assert "_nested_select_backward" not in text
    assert "TORCH_LIBRARY_IMPL(aten, Autograd, m)" in text
    assert 'm.impl("select.int"' in text
    assert "AutogradNestedTensor" not in text


RRELU_WITH_NOISE = (
    "- name: rrelu_with_noise(Tensor self, Tensor(b!) noise, Scalar lower=0.125, Scalar "
    "upper=0.3333333333333333, bool training=False, Generator? generator=None) -> Tensor\n"
    "  self: rrelu_with_noise_backward(grad, self, noise, lower, upper, training, false)\n"
    "  result: auto_element_wise\n"
    "- name: rrelu_with_noise_functional(Tensor self, Tensor noise, Scalar lower=0.125, Scalar "
    "upper=0.3333333333333333, bool training=False, Generator? generator=None) -> (Tensor, "
    "Tensor noise_out)\n"
    "  noise: non_differentiable\n"
    "  self: rrelu_with_noise_backward(grad, self, noise, lower, upper, training, false)\n"
)


def test_aten_mutable_op_gets_an_autograd_kernel(tmp_path, model_loaded_once):
    """torch's `rrelu_with_noise` entries (as in the wheel): a mutable op (it writes `noise`, not
    `self`) gets a functional op's Autograd kernel; torch's ADInplaceOrView kernel below it bumps
    the version of what it writes."""
    rc, stderr, written = _run(tmp_path, "rrelu", RRELU_WITH_NOISE, "--ops=rrelu_with_noise")
    assert (rc, stderr) == (0, ""), stderr
    text = "".join(p.read_text() for p in written)
    assert 'm.impl("rrelu_with_noise", TORCH_FN(' in text
    assert "rrelu_with_noise_backward(grad, self, noise, lower, upper, training, false)" in text
    assert "TORCH_LIBRARY_IMPL(aten, ADInplaceOrView" not in text


EXP = (
    "- name: exp(Tensor self) -> Tensor\n"
    "  self: grad * result.conj()\n"
    "  result: auto_element_wise\n"
)


def test_foreach_ops_differentiate_element_by_element(tmp_path, model_loaded_once):
    """torch's `exp` entry (as in the wheel) serves `_foreach_exp` and `_foreach_exp_`. The
    functional one records one node whose formula runs per element of the output list, and sets
    each output's tangent from its element's; the in-place one records an `ExpBackward0` per
    element, rebases each element's history on it, saves the element it wrote, and updates each
    element's tangent in place."""
    rc, stderr, written = _run(tmp_path, "exp", EXP, "--ops=_foreach_exp,_foreach_exp_")
    assert (rc, stderr) == (0, ""), stderr
    text = "".join(p.read_text() for p in written)
    functional, inplace = text.split("// Autograd kernel of aten::_foreach_exp_.")
    assert "struct ForeachExpBackward0 final" in functional
    assert (
        "grad_result.emplace_back(grads[i].defined() ? at::Tensor(grads[i] * result[i].conj()) "
        ": at::Tensor());" in functional
    )
    assert "grad_fn->result_ = make_saved_list(result, true);" in functional
    assert "result_new_fw_grads[i] = (self_t.conj() * result[i].conj()).conj();" in functional
    assert "_any_has_forward_grad[i] = has_fw_grad(self[i]);" in functional
    assert "struct ExpBackward0 final" in text
    assert "std::vector<NodePtr<ExpBackward0>> grad_fns;" in inplace
    assert "check_inplace(self[i], ith_requires_grad);" in inplace
    assert "rebase_history(self[i], torch::autograd::Edge(grad_fn, nr));" in inplace
    assert (
        "grad_fns[i]->result_ = torch::autograd::SavedVariable(self[i], true, "
        "self[i].is_view());" in inplace
    )
    assert "self[i]._set_fw_grad(self_new_fw_grads[i], /*level=*/0, /*is_inplace_op=*/true);" in (
        inplace
    )


CHUNK = (
    "- name: chunk(Tensor(a -> *) self, int chunks, int dim=0) -> Tensor(a)[]\n"
    "  dispatch:\n"
    "    Default:\n"
    '      self: not_implemented("chunk")\n'
    "    AutogradNestedTensor:\n"
    "      self: chunk_backward_nested(grads, self, chunks, dim)\n"
)


def test_a_view_op_returning_several_views_makes_each_an_output_of_its_node(
    tmp_path, model_loaded_once
):
    """torch's `chunk` entry (as in the wheel): each of the views (made by torch's own
    ADInplaceOrView kernel below) is an output of the node."""
    rc, stderr, written = _run(tmp_path, "chunk", CHUNK, "--ops=chunk")
    assert (rc, stderr) == (0, ""), stderr
    text = "".join(p.read_text() for p in written)
    assert "for (auto& element : result) {" in text
    assert (
        "torch::autograd::impl::set_gradient_edge(element, torch::autograd::Edge(grad_fn, nr));"
        in text
    )


NTONLY = (
    "- name: _test_autograd_multiple_dispatch.ntonly(Tensor self, bool b) -> Tensor\n"
    "  dispatch:\n"
    "    AutogradNestedTensor:\n"
    "      self: grad.mul(grad).add(grad)\n"
)


def test_an_entry_for_another_key_only_gets_a_kernel_of_that_key(tmp_path, installed_model):
    """torch's `ntonly` entry (as in the wheel) has formulas for AutogradNestedTensor only: an
    Autograd target generates nothing for it (torch registers no Autograd kernel either), an
    AutogradNestedTensor target its kernel."""
    from atengen.autograd.emit import AutogradTarget, autograd_files
    from atengen.autograd.load import load_derivatives
    from atengen.cli.common import autograd_helpers
    from atengen.render.shards import ShardSetting
    from atengen.render.templates import Templates

    path = tmp_path / "ntonly.yaml"
    path.write_text(NTONLY)
    derivatives = load_derivatives(str(path), installed_model, autograd_helpers(None, None))
    only = frozenset({"_test_autograd_multiple_dispatch.ntonly"})

    def files(key: str) -> list:
        target = AutogradTarget("aten", "ns", key, inplace_or_view=False, only=only)
        return autograd_files(installed_model, derivatives, target, ShardSetting(0), Templates())

    assert files("Autograd") == []
    (nested,) = files("AutogradNestedTensor")
    assert "struct TestAutogradMultipleDispatchBackwardAutogradNestedTensor0 final" in nested.text
    assert "TORCH_LIBRARY_IMPL(aten, AutogradNestedTensor, m)" in nested.text


@pytest.mark.slow
def test_aten_functions_are_refused_only_for_helpers_the_wheel_does_not_export(installed_model):
    """Every aten function the wheel's whole derivatives.yaml differentiates, alone: the only
    refusals left are formulas calling FunctionsManual helpers the wheel does not export (about
    4 s: one generator run per function, templates compiled once)."""
    from atengen.autograd.emit import AutogradTarget, autograd_files
    from atengen.autograd.load import load_derivatives
    from atengen.cli.common import autograd_helpers
    from atengen.errors import AtengenError
    from atengen.render.shards import ShardSetting
    from atengen.render.templates import Templates

    derivatives = load_derivatives(
        str(packaged_derivatives_yaml()), installed_model, autograd_helpers(None, None)
    )
    templates, generated, other_refusals = Templates(), 0, []
    for fd in derivatives.functions:
        if fd.func.namespace != "aten" or not fd.infos:
            continue
        key = "Autograd" if "Default" in fd.infos else sorted(fd.infos)[0]
        only = frozenset({str(fd.func.name)})
        target = AutogradTarget("aten", "ns", key, inplace_or_view=False, only=only)
        try:
            generated += bool(
                autograd_files(installed_model, derivatives, target, ShardSetting(0), templates)
            )
        except AtengenError as e:
            if "that the torch wheel does not export" not in e.message:
                other_refusals.append(f"{fd.func.name}: {e.message}")
    assert other_refusals == []
    assert generated >= 1048, generated
