"""`atengen autograd` over formulas that call FunctionsManual.h helpers the torch wheel does not
export: like `generate` with kernels the wheel does not export, it writes the rest and prints one
`left out:` line per helper (on stdout, exit 0), naming the helper and how many functions and
entries it left out."""

from __future__ import annotations

import re

import pytest

from tests.support.model_helpers import autograd_into, run_cli
from tests.support.oracle.torchgen_autograd import packaged_derivatives_yaml

OPS = """\
- func: lo::twice(Tensor self) -> Tensor
- func: lo::twice_(Tensor(a!) self) -> Tensor(a!)
- func: lo::halve(Tensor self) -> Tensor
- func: lo::blend(Tensor self, Tensor other) -> Tensor
- func: lo::plain(Tensor self) -> Tensor
"""
# handle_r_to_c() and maybe_multiply() are helpers FunctionsManual.h declares and no supported
# release's libtorch_cpu exports (read from the installed wheel, as a run without --torch_facts
# does); twice_ takes twice's formulas.
DERIVATIVES = """\
- name: lo::twice(Tensor self) -> Tensor
  self: handle_r_to_c(self.scalar_type(), grad * 2)
- name: lo::halve(Tensor self) -> Tensor
  self: handle_r_to_c(self.scalar_type(), grad / 2)
- name: lo::blend(Tensor self, Tensor other) -> Tensor
  self: maybe_multiply(grad, 0.5)
  other: handle_r_to_c(other.scalar_type(), grad / 2)
- name: lo::plain(Tensor self) -> Tensor
  self: grad
"""


def test_functions_calling_unexported_helpers_are_left_out_one_line_per_helper(tmp_path):
    proc, out = autograd_into(tmp_path, OPS, DERIVATIVES, "--shards=0")
    assert (proc.returncode, proc.stderr) == (0, "")
    tail = (
        ", which torch/csrc/autograd/FunctionsManual.h declares but the torch wheel does not export"
    )
    assert proc.stdout.splitlines() == [
        "left out: 4 functions of 3 entries whose formulas call handle_r_to_c()" + tail,
        "left out: 1 function of 1 entry whose formulas call maybe_multiply()" + tail,
    ]
    # plain is generated; the others have no Autograd kernel (twice_ keeps its version bump).
    assert sorted(p.name for p in out.iterdir()) == ["Autograd_plain.cpp", "Autograd_twice.cpp"]
    text = (out / "Autograd_twice.cpp").read_text()
    assert "_autograd(" not in text and "Backward" not in text
    assert 'm.impl("twice_", TORCH_FN(lo::autograd_generated::twice__inplace_or_view));' in text
    assert 'm.impl("plain", ' in (out / "Autograd_plain.cpp").read_text()


@pytest.mark.slow
def test_torchs_whole_derivatives_yaml_is_generated_but_for_the_helpers_it_names(tmp_path):
    from tests.support.oracle.torchgen_model import packaged_yaml

    op_yaml, tags_yaml = packaged_yaml()
    derivatives = packaged_derivatives_yaml()
    out = tmp_path / "out"
    proc = run_cli(
        "autograd",
        f"--op_yaml={op_yaml}",
        f"--tags_yaml={tags_yaml}",
        f"--derivatives_yaml={derivatives}",
        "--namespace=aten",
        f"--output_dir={out}",
    )
    assert (proc.returncode, proc.stderr) == (0, "")
    line = re.compile(
        r"left out: (\d+) functions? of (\d+) entr(?:y|ies) whose formulas "
        r"(?:call (\w+)\(\)|use (\w+)), which torch/csrc/autograd/FunctionsManual.h declares but "
        r"the torch wheel does not export"
    )
    matches = [line.fullmatch(x) for x in proc.stdout.splitlines()]
    assert matches and all(matches), proc.stdout
    helpers = [m.group(3) or m.group(4) for m in matches]
    assert len(set(helpers)) == len(helpers), "one line per helper"
    text = derivatives.read_text()
    for m, helper in zip(matches, helpers, strict=True):
        # Each is named in the YAML, by at least as many entries as the line counts.
        entries = re.findall(rf"^- name:(?:(?!^- name:).)*?\b{helper}\b", text, re.M | re.S)
        assert len(entries) >= int(m.group(2)) >= 1, (helper, len(entries))
        assert int(m.group(1)) >= int(m.group(2))
    assert "handle_r_to_c" in helpers and "maybe_multiply" in helpers
    written = "".join(p.read_text() for p in out.glob("*.cpp"))
    assert len(list(out.glob("*.cpp"))) > 10
    for helper in helpers:
        assert not re.search(rf"\b{helper}\b", written), helper


def _facts(tmp_path, **fields) -> str:
    import json

    path = tmp_path / "torch_facts.json"
    path.write_text(json.dumps({"release": "2.13", "version": "2.13.0", **fields}))
    return str(path)


def test_the_wheels_facts_say_which_helpers_are_exported(tmp_path):
    """With --torch_facts (what @torch read of the wheel), the helpers it says libtorch_cpu
    exports (or the header defines) are called, the other declared ones left out."""
    facts = _facts(
        tmp_path,
        autograd_helpers_exported=["handle_r_to_c", "some_other_symbol"],
        autograd_helpers_declared=["handle_r_to_c", "maybe_multiply", "wrap_opt_if"],
        autograd_helpers_defined=["wrap_opt_if"],
    )
    proc, out = autograd_into(tmp_path, OPS, DERIVATIVES, "--shards=0", f"--torch_facts={facts}")
    assert (proc.returncode, proc.stderr) == (0, "")
    assert proc.stdout.splitlines() == [
        "left out: 1 function of 1 entry whose formulas call maybe_multiply(), which "
        "torch/csrc/autograd/FunctionsManual.h declares but the torch wheel does not export"
    ]
    assert sorted(p.name for p in out.iterdir()) == [
        "Autograd_halve.cpp",
        "Autograd_plain.cpp",
        "Autograd_twice.cpp",
    ]
    text = (out / "Autograd_halve.cpp").read_text()
    assert "using torch::autograd::generated::details::handle_r_to_c;" in text


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        (
            {},
            "torch facts: no 'autograd_helpers_exported' (what libtorch_cpu exports of "
            "FunctionsManual.h); write them with tool/torch_probe.py",
        ),
        (
            {"autograd_helpers_exported": ["a"], "autograd_helpers_declared": ["a"]},
            "torch facts: 'autograd_helpers_defined' missing beside the other "
            "autograd_helpers_ fields",
        ),
        (
            {
                "autograd_helpers_exported": ["a"],
                "autograd_helpers_declared": "a",
                "autograd_helpers_defined": [],
            },
            "torch facts: 'autograd_helpers_declared' must be a list",
        ),
        (
            {
                "autograd_helpers_exported": [1],
                "autograd_helpers_declared": [],
                "autograd_helpers_defined": [],
            },
            "torch facts: 'autograd_helpers_exported' must be a list of strings",
        ),
    ],
)
def test_facts_without_the_helpers_are_one_error_line(tmp_path, fields, message):
    facts = _facts(tmp_path, **fields)
    proc, out = autograd_into(tmp_path, OPS, DERIVATIVES, f"--torch_facts={facts}")
    assert proc.returncode == 1 and not out.exists()
    assert proc.stderr.splitlines() == [f"{facts}:1: error: {message}"]


def test_without_facts_and_without_an_installed_torch_is_one_error_line(tmp_path, monkeypatch):
    """A run without --torch_facts reads the installed torch's helpers: with none installed, it
    says so in one line."""
    from atengen.cli import common

    monkeypatch.setattr(common, "installed_torch_dir", lambda: None)
    proc, out = autograd_into(tmp_path, OPS, DERIVATIVES)
    assert proc.returncode == 1 and not out.exists()
    assert proc.stderr.splitlines() == [
        "error: no --torch_facts given and no installed torch to read the FunctionsManual.h "
        "helpers from"
    ]
