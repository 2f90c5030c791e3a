"""Bad input of stable mode's Python module (`atengen stable --python_module`): a formula outside
the subset it translates, an entry torch.library.register_autograd cannot take, an operator whose
fake kernel it cannot derive. Each refusal is one `derivatives.yaml:LINE: error:` line naming the
construct and the fix, a non-zero exit and no module; each run's bytes are the same whatever the
hash seed.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.support.model_helpers import run_cli, run_cli_process

OPS = """\
- func: bi::scale(Tensor self, float alpha) -> Tensor
  dispatch:
    CPU: scale_cpu
- func: bi::scale_(Tensor(a!) self, float alpha) -> Tensor(a!)
  dispatch:
    CPU: scale_inplace_cpu
- func: bi::both(Tensor a, Tensor b) -> Tensor
  dispatch:
    CompositeExplicitAutograd: both
- func: bi::touch(Tensor(a!) self) -> ()
  dispatch:
    CPU: touch
"""
HEAD = "- name: bi::scale(Tensor self, float alpha) -> Tensor\n"


def _run(tmp_path: Path, installed_yaml, derivatives: str | None, *extra: str):
    native, tags = installed_yaml
    (tmp_path / "ops.yaml").write_text(OPS)
    module = tmp_path / "bi_registrations.py"
    flags = [
        "stable",
        f"--op_yaml={tmp_path / 'ops.yaml'}",
        f"--tags_yaml={tags}",
        f"--python_module={module}",
    ]
    if derivatives is not None:
        (tmp_path / "derivatives.yaml").write_text(derivatives)
        flags += [f"--derivatives_yaml={tmp_path / 'derivatives.yaml'}", f"--aten_op_yaml={native}"]
    return run_cli(*flags, *extra), module


@pytest.mark.parametrize(
    ("formula", "names"),
    [
        ("grad * std::pow(alpha, 2)", ["'std::pow(...)'", 'abi = "release"']),
        ("sum_to(grad, self.sym_sizes())", ["'sum_to(...)'", "FunctionsManual.h"]),
        ("[&]() { return grad; }()", ["a lambda"]),
        ("grad * static_cast<double>(alpha)", ["template argument list"]),
        ("grad * (double) alpha", ["C-style cast"]),
        ("grad.fancy_method()", ["'.fancy_method()'"]),
        ('grad * (alpha > 0 ? 1 : "x\\n")', ["string literal"]),
        ("grad << 2", ["shift"]),
        ("grad_input_mask[0] ? grad : grad", ["'grad_input_mask'", "needs_input_grad"]),
        ("grad * 0x10", ["'0x10'"]),
        ("(" * 200 + "grad" + ")" * 200, ["nests deeper"]),
    ],
)
def test_formula_outside_the_subset(tmp_path: Path, installed_yaml, formula: str, names) -> None:
    quoted = formula.replace("'", "''")
    derivatives = HEAD + "  alpha: non_differentiable\n" + f"  self: '{quoted}'\n"
    proc, module = _run(tmp_path, installed_yaml, derivatives)
    assert proc.returncode != 0
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith(f"{tmp_path / 'derivatives.yaml'}:3: error: backward formula "), (
        lines
    )
    assert "bi::scale in stable mode" in lines[0]
    for name in names:
        assert name in lines[0], lines[0]
    assert not module.exists()


@pytest.mark.parametrize(
    ("entry", "line", "says"),
    [
        (
            "- name: bi::scale_(Tensor(a!) self, float alpha) -> Tensor(a!)\n  self: grad * alpha\n",
            1,
            "functional operators only",
        ),
        (
            HEAD + "  dispatch:\n    AutogradCPU:\n      self: grad * alpha\n",
            1,
            "'dispatch: AutogradCPU' in stable mode",
        ),
        (
            "- name: bi::both(Tensor a, Tensor b) -> Tensor\n  output_differentiability: "
            "['a.defined()']\n  a: grad\n",
            1,
            "output_differentiability has no Python form",
        ),
    ],
)
def test_entry_register_autograd_cannot_take(tmp_path, installed_yaml, entry, line, says) -> None:
    proc, module = _run(tmp_path, installed_yaml, entry)
    assert proc.returncode != 0
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith(f"{tmp_path / 'derivatives.yaml'}:{line}: error: "), lines[0]
    assert says in lines[0]
    assert not module.exists()


def test_derivatives_need_torchs_op_yaml(tmp_path: Path, installed_yaml) -> None:
    (tmp_path / "derivatives.yaml").write_text(HEAD + "  self: grad * alpha\n")
    proc, _ = _run(tmp_path, installed_yaml, None, f"--derivatives_yaml={tmp_path / 'd.yaml'}")
    assert proc.returncode != 0
    assert proc.stderr.strip() == (
        "error: --derivatives_yaml needs --aten_op_yaml (torch's native_functions.yaml)"
    )


def test_ops_without_a_derivable_fake_kernel_are_one_line(tmp_path, installed_yaml) -> None:
    """scale and scale_ have CPU kernels only: named in one note line (stderr, which a Bazel
    build shows once per regeneration), at the first one's line, and in the module; both
    (composite) and touch (returns nothing) are not."""
    proc, module = _run(tmp_path, installed_yaml, None)
    assert proc.returncode == 0, proc.stderr
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, proc.stderr
    assert re.match(
        r"\S+ops\.yaml:\d+: note: no fake kernel derived for bi::scale, bi::scale_ ", lines[0]
    )
    assert "torch.library.register_fake" in lines[0]
    text = module.read_text()
    assert 'NEEDS_FAKE_KERNEL: tuple[str, ...] = ("bi::scale", "bi::scale_")' in text
    assert 'register_fake("bi::touch")' in text and 'register_fake("bi::both")' not in text
    compile(text, str(module), "exec")


@pytest.mark.slow  # three generator runs
def test_the_same_bytes_whatever_the_hash_seed(tmp_path: Path, installed_yaml) -> None:
    native, tags = installed_yaml
    (tmp_path / "ops.yaml").write_text(OPS)
    (tmp_path / "derivatives.yaml").write_text(
        HEAD + "  self: grad * alpha * where(self > 0, self.sign(), self.abs())\n"
        "- name: bi::both(Tensor a, Tensor b) -> Tensor\n  a: grad * b\n  b: grad * a\n"
    )
    texts = set()
    for seed in ("0", "12345"):
        out = tmp_path / f"m{seed}.py"
        proc = run_cli_process(
            "stable",
            f"--op_yaml={tmp_path / 'ops.yaml'}",
            f"--tags_yaml={tags}",
            f"--python_module={out}",
            f"--derivatives_yaml={tmp_path / 'derivatives.yaml'}",
            f"--aten_op_yaml={native}",
            env={"PYTHONHASHSEED": seed},
        )
        assert proc.returncode == 0, proc.stderr
        texts.add(out.read_bytes())
    assert len(texts) == 1
