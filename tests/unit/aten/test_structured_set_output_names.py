"""Structured kernel wrappers on torch 2.11 and 2.12, whose base classes (at::impl::MetaBase,
TensorIteratorBase) declare `set_output_strided`/`set_output_raw_strided` with a trailing
`DimnameList names` (named tensors; 2.13 dropped it): the generated overrides take it, propagate
the names to the output and pass them on to the base class. With a newer release's facts the
text is the four-argument form. tests/workspaces/test_gpu_bundle_build.py compiles and loads them against
2.11.0+cu130.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support.model_helpers import run_cli

# What torch 2.11's ATen/TensorIterator.h declares (read from that wheel's header).
NAMED_SIGNATURE = "at::TensorOptions options, at::DimnameList names) override {"
PLAIN_SIGNATURE = "at::TensorOptions options) override {"


def registrations(tmp_path: Path, installed_yaml, release: str) -> str:
    native, tags = installed_yaml
    facts = tmp_path / f"facts_{release}.json"
    facts.write_text(json.dumps({"release": release, "version": f"{release}.0+cu130"}))
    out = tmp_path / f"out_{release}"
    result = run_cli(
        "generate",
        f"--op_yaml={native}",
        f"--tags_yaml={tags}",
        "--ops=abs,add",
        "--keys=CPU,Meta",
        f"--output_dir={out}",
        f"--header_output_dir={tmp_path / f'inc_{release}'}",
        f"--torch_facts={facts}",
    )
    assert result.returncode == 0, result.stderr
    return "\n".join(p.read_text() for p in sorted(out.rglob("Register*.cpp")))


@pytest.mark.parametrize("release", ["2.11", "2.12"])
def test_named_tensor_releases_get_the_names_parameter(tmp_path, installed_yaml, release):
    text = registrations(tmp_path, installed_yaml, release)
    assert PLAIN_SIGNATURE not in text
    # add.out (TensorIteratorBase) and abs's structured variants: two methods per class.
    assert text.count(NAMED_SIGNATURE) >= 4
    assert text.count(NAMED_SIGNATURE) == text.count("at::namedinference::propagate_names(")
    assert "#include <ATen/NamedTensorUtils.h>" in text
    assert "::set_output_raw_strided(output_idx, sizes, strides, options, names);" in text
    assert "propagate_names(*outputs_[output_idx], names);" in text  # functional
    assert "propagate_names(outputs_[output_idx].get(), names);" in text  # out=, in-place


def test_newer_releases_keep_the_four_argument_form(tmp_path, installed_yaml):
    text = registrations(tmp_path, installed_yaml, "2.13")
    assert text.count(PLAIN_SIGNATURE) >= 4
    assert "DimnameList" not in text and "NamedTensorUtils" not in text
    assert "::set_output_raw_strided(output_idx, sizes, strides, options);" in text


@pytest.mark.parametrize(("release", "named"), [("2.11", True), ("2.12", True), ("2.15", False)])
def test_a_backends_structured_op_takes_the_names_parameter_on_those_releases(
    tmp_path, release, named
):
    """An external backend's impl-only structured op derives from the same base classes, so its
    set_output overrides follow the release too."""
    backend = tmp_path / "backend.yaml"
    backend.write_text(
        "backend: PrivateUse1\ncpp_namespace: my_backend\nstructured:\n  - sub.out\n"
    )
    facts = tmp_path / "facts.json"
    facts.write_text(json.dumps({"release": release, "version": f"{release}.0+cu130"}))
    out = tmp_path / "out"
    result = run_cli(
        "backend", f"--backend_yaml={backend}", f"--output_dir={out}", f"--torch_facts={facts}"
    )
    assert result.returncode == 0, result.stderr
    text = "".join(p.read_text() for p in sorted(out.glob("Register*.cpp")))
    assert ("#include <ATen/NamedTensorUtils.h>" in text) == named
    if named:
        assert PLAIN_SIGNATURE not in text
        assert "my_backend::structured_sub_out::set_output_raw_strided(" in text
        assert ", options, names);" in text
        assert text.count(NAMED_SIGNATURE) == text.count("at::namedinference::propagate_names(")
    else:
        assert "DimnameList" not in text
        assert text.count(PLAIN_SIGNATURE) >= 2
