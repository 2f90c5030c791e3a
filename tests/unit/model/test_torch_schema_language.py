"""Custom namespaces' schemas in torch's own language: what the generated sources register and
declare, and the one-line refusals of what C++ cannot carry.

The corpus of real projects' schemas is test_real_schemas.py's; the Bazel build of six vLLM
operators, test_vllm_schemas_unchanged.py's; the differential fuzzing against torch's parser,
tests/fuzz/test_torch_language_differential.py's.
"""

from __future__ import annotations

import json
import re
import subprocess
import textwrap

import pytest

from tests.support.model_helpers import TAGS_YAML, run_cli

TAGS = TAGS_YAML

VLLM_OPS = """\
- func: myllm::rms_norm(Tensor! result, Tensor input, Tensor weight, float epsilon) -> ()
  dispatch:
    CPU: rms_norm
- func: myllm::apply_repetition_penalties_(Tensor! logits, Tensor prompt_mask, Tensor output_mask, Tensor repetition_penalties) -> ()
  dispatch:
    CPU: apply_repetition_penalties_
- func: |-
    myllm::rotary_embedding(Tensor positions, Tensor! query,
                     Tensor!? key, int head_size,
                     Tensor cos_sin_cache, bool is_neox) -> ()
  dispatch:
    CPU: rotary_embedding
- func: myllm::maybe_scale(Tensor x, Tensor(a!)? key) -> Tensor
  dispatch:
    CPU: maybe_scale
- func: myllm::moe_sum(Tensor input, Tensor! output)->()
  dispatch:
    CPU: moe_sum
"""


def _run(tmp_path, command: str, op_yaml: str, *extra: str) -> subprocess.CompletedProcess:
    (tmp_path / "ops.yaml").write_text(op_yaml)
    (tmp_path / "tags.yaml").write_text(TAGS)
    return run_cli(
        command,
        f"--op_yaml={tmp_path / 'ops.yaml'}",
        f"--tags_yaml={tmp_path / 'tags.yaml'}",
        f"--output_dir={tmp_path / 'out'}",
        f"--header_output_dir={tmp_path / 'inc'}",
        *extra,
    )


def _declarations(tmp_path) -> dict[str, str]:
    """Kernel name -> its declaration, from every generated <root>_native.h."""
    found = {}
    for header in sorted((tmp_path / "inc").rglob("*_native.h")):
        for line in header.read_text().splitlines():
            m = re.match(r"\S.* (\w+)\((.*)\);$", line)
            if m:
                found[m.group(1)] = line
    return found


def _registered(tmp_path) -> list[str]:
    return sorted(
        json.loads(m.group(1))
        for p in (tmp_path / "out").rglob("*Schema*.cpp")
        for m in re.finditer(r'm\.def\(("(?:[^"\\]|\\.)*")', p.read_text())
    )


def test_bound_mode_registers_the_authors_text_and_declares_what_torch_calls(tmp_path):
    proc = _run(tmp_path, "generate", VLLM_OPS, "--keys=auto")
    assert proc.returncode == 0, proc.stderr
    assert _registered(tmp_path) == [
        "myllm::apply_repetition_penalties_(Tensor! logits, Tensor prompt_mask, Tensor "
        "output_mask, Tensor repetition_penalties) -> ()",
        "myllm::maybe_scale(Tensor x, Tensor(a!)? key) -> Tensor",
        "myllm::moe_sum(Tensor input, Tensor! output)->()",
        "myllm::rms_norm(Tensor! result, Tensor input, Tensor weight, float epsilon) -> ()",
        "myllm::rotary_embedding(Tensor positions, Tensor! query, Tensor!? key, int head_size, "
        "Tensor cos_sin_cache, bool is_neox) -> ()",
    ]
    declared = _declarations(tmp_path)
    assert declared["rms_norm"] == (
        "void rms_norm(at::Tensor & result, const at::Tensor & input, const at::Tensor & weight, "
        "double epsilon);"
    )
    # The kernel is named as dispatch: says, trailing `_` and all.
    assert declared["apply_repetition_penalties_"].startswith(
        "void apply_repetition_penalties_(at::Tensor & logits, "
    )
    # A mutable optional is what the dispatcher checks it against: an optional, not a Tensor &
    # (which aborted the interpreter when the library loaded).
    assert "const ::std::optional<at::Tensor> & key" in declared["rotary_embedding"]
    assert declared["maybe_scale"] == (
        "at::Tensor maybe_scale(const at::Tensor & x, const ::std::optional<at::Tensor> & key);"
    )
    # One note names the ops whose functionalization is torch's own.
    (note,) = proc.stderr.strip().splitlines()
    assert re.match(rf"{re.escape(str(tmp_path / 'ops.yaml'))}:1: note: no Functionalize", note)
    assert "auto_functionalize" in note


def test_stable_mode_registers_the_authors_text(tmp_path):
    proc = _run(tmp_path, "stable", VLLM_OPS)
    assert proc.returncode == 0, proc.stderr
    assert len(_registered(tmp_path)) == 5
    assert "moe_sum(Tensor input, Tensor! output)->()" in "".join(_registered(tmp_path))
    declared = _declarations(tmp_path)
    assert "std::optional<torch::stable::Tensor>& key" in declared["maybe_scale"]


def test_an_optional_of_an_optional_is_declared_as_torch_registers_it(tmp_path):
    # torch folds `int??` to `int?`: a kernel taking an optional of an optional crashed on call.
    op = "- func: myops::f(Tensor self, int?? x) -> int\n  dispatch:\n    CPU: f\n"
    for command in ("stable", "generate"):
        (tmp_path / command).mkdir()
        proc = _run(tmp_path / command, command, op)
        assert proc.returncode == 0, proc.stderr
        (line,) = _declarations(tmp_path / command).values()
        assert "optional<int64_t>" in line and "optional<std::optional" not in line, line
        assert "optional<::std::optional" not in line, line
    # aten's own YAML keeps one spelling per type.
    proc = _run(tmp_path, "generate", op.replace("myops::", ""))
    assert proc.returncode == 1
    assert "type 'int??' is an optional of an optional; write one '?'" in proc.stderr


@pytest.mark.parametrize(
    "op_yaml, line, fragment",
    [
        (
            "- func: class::f(Tensor x) -> Tensor\n  dispatch:\n    CPU: f\n",
            1,
            "namespace 'class' is a C++ keyword",
        ),
        (
            "- func: ns::f(Tensor x) -> Tensor\n  dispatch:\n    CPU: new\n",
            3,
            "kernel name 'new' is a C++ keyword",
        ),
        (
            "- func: ns::delete(Tensor x) -> Tensor\n",
            1,
            "'delete' without a dispatch table has a CompositeImplicitAutograd kernel of its own "
            "name, a C++ keyword",
        ),
        (
            "- func: ns::g(Tensor x, int new) -> Tensor\n  dispatch:\n    CPU: g\n",
            1,
            "argument 'new' of 'g' is a C++ keyword",
        ),
        (
            "- func: ns::offload_tensor(Tensor a, int id, int id) -> Tensor\n",
            1,
            "duplicate argument name 'id': torch keeps both, but a C++ kernel cannot",
        ),
        (
            "- func: |-\n    ns::f(Tensor x)\n    -> Tensor\n",
            1,
            "line break outside the parentheses",
        ),
        (
            "- func: ns::f(Tensor x, int k=0x2FF) -> Tensor\n",
            1,
            "(torch registers it as 0; write 767)",
        ),
        (
            "- func: ns::f(Tensor x) ->\n",
            1,
            "schema has nothing after '->'",
        ),
        (
            "- func: ns::f(Tensor x) -> None\n",
            1,
            "a kernel returning nothing is `-> ()`",
        ),
    ],
)
def test_what_cpp_cannot_carry_is_one_line_at_the_entry(tmp_path, op_yaml, line, fragment):
    proc = _run(tmp_path, "generate", op_yaml, "--keys=auto")
    assert proc.returncode == 1
    (error,) = proc.stderr.strip().splitlines()
    assert error.startswith(f"{tmp_path / 'ops.yaml'}:{line}: error: "), error
    assert fragment in error, error
    assert not (tmp_path / "out").exists() and not (tmp_path / "inc").exists()


def test_stable_mode_renames_a_keyword_argument(tmp_path):
    proc = _run(
        tmp_path, "stable", "- func: ns::g(Tensor x, int new) -> Tensor\n  dispatch:\n    CPU: g\n"
    )
    assert proc.returncode == 0, proc.stderr
    (line,) = _declarations(tmp_path).values()
    assert "int64_t new_)" in line, line


def test_a_random_looking_custom_op_is_a_warning(tmp_path):
    op = textwrap.dedent(
        """\
        - func: ns::rand_mask(Tensor x, float p) -> Tensor
          dispatch:
            CPU: rand_mask
        """
    )
    proc = _run(tmp_path, "generate", op)
    assert proc.returncode == 0, proc.stderr
    (warning,) = proc.stderr.strip().splitlines()
    assert warning.startswith(f"{tmp_path / 'ops.yaml'}:1: warning: 'ns::rand_mask' looks random")
    assert "nondeterministic_seeded" in warning
