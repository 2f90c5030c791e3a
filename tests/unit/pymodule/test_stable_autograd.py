"""Stable mode's Python module (`atengen stable --python_module`): a derivatives YAML turned into
torch.library.register_autograd, and the fake kernels stable mode derives, checked against torch.

The operators are defined in this process with torch.library (schema from the op YAML, kernels
in Python for the keys the op YAML names), as a stable-ABI library's loaded `.so` would define
them; the generated module is then imported over them. Every formula's gradient is checked by
torch.autograd.gradcheck and gradgradcheck (numerical against analytical), and each operator by
torch.library.opcheck. examples/stable_ops (tests/workspaces/test_stable_example.py, tests/workspaces/test_wheel.py)
does the same with a real library in every supported torch release.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

from tests.support.model_helpers import run_cli

torch = pytest.importorskip("torch")

NS = "pyag"
OPS = """
- func: pyag::scaled_add(Tensor self, Tensor other, float alpha) -> Tensor
  dispatch:
    CPU: scaled_add_cpu
- func: pyag::smooth(Tensor self, float beta) -> Tensor
  dispatch:
    CPU: smooth_cpu
- func: pyag::sumsq(Tensor self) -> Tensor
  dispatch:
    CPU: sumsq_cpu
- func: pyag::two(Tensor self) -> (Tensor, Tensor)
  dispatch:
    CPU: two_cpu
- func: pyag::named(Tensor self) -> (Tensor doubled, Tensor halved)
  dispatch:
    CPU: named_cpu
- func: pyag::square_scaled(Tensor self, float alpha) -> Tensor
  dispatch:
    CPU: square_scaled_cpu
- func: pyag::rowscale(Tensor self, Tensor w) -> Tensor
  dispatch:
    CPU: rowscale_cpu
- func: pyag::masked_scale(Tensor self, Tensor mask, float s) -> Tensor
  dispatch:
    CPU: masked_scale_cpu
- func: pyag::with_sign(Tensor self) -> (Tensor values, Tensor signs)
  dispatch:
    CPU: with_sign_cpu
- func: pyag::lerp_to(Tensor self, Tensor end, *, float weight=0.5) -> Tensor
  dispatch:
    CPU: lerp_to_cpu
- func: pyag::mulcat(Tensor a, Tensor b, int dim=0) -> Tensor
  dispatch:
    CompositeExplicitAutograd: mulcat
- func: pyag::zero_(Tensor(a!) self) -> ()
  dispatch:
    CPU: zero_cpu
"""
DERIVATIVES = """
- name: pyag::scaled_add(Tensor self, Tensor other, float alpha) -> Tensor
  self: grad
  other: grad * alpha

- name: pyag::smooth(Tensor self, float beta) -> Tensor
  self: "beta > 0 && beta < 100 ? grad * where(self.abs() < beta, self / beta, self.sign()) : grad * self / beta"

- name: pyag::sumsq(Tensor self) -> Tensor
  self: grad.expand(self.sym_sizes()) * 2 * self

- name: pyag::two(Tensor self) -> (Tensor, Tensor)
  self: grads[0] * 3 + grads[1] * result1

- name: pyag::named(Tensor self) -> (Tensor doubled, Tensor halved)
  self: grad_doubled * 2 + grad_halved * 0.5

- name: pyag::square_scaled(Tensor self, float alpha) -> Tensor
  self: pyag::scaled_add(grad * self * alpha, grad * self, alpha)

- name: pyag::rowscale(Tensor self, Tensor w) -> Tensor
  self: grad * w.expand({w.sym_size(0), self.sym_size(-1)})
  w: at::sum(grad * self, 1, true)

- name: pyag::masked_scale(Tensor self, Tensor mask, float s) -> Tensor
  self: grad * mask * s
  mask: non_differentiable

- name: pyag::with_sign(Tensor self) -> (Tensor values, Tensor signs)
  output_differentiability: [True, False]
  self: grad_values * 2

- name: pyag::lerp_to(Tensor self, Tensor end, *, float weight=0.5) -> Tensor
  self: grad * (1 - weight)
  end: grad * weight
"""
KERNELS = {
    "scaled_add": lambda self, other, alpha: self + alpha * other,
    "smooth": lambda self, beta: torch.where(
        self.abs() < beta, 0.5 * self * self / beta, self.abs() - 0.5 * beta
    ),
    "sumsq": lambda self: (self * self).sum(),
    "two": lambda self: (self * 3, self.exp()),
    "named": lambda self: (self * 2, self * 0.5),
    "square_scaled": lambda self, alpha: alpha * self * self,
    "rowscale": lambda self, w: self * w,
    "masked_scale": lambda self, mask, s: self * mask * s,
    "with_sign": lambda self: (self * 2, self.sign()),
    "lerp_to": lambda self, end, *, weight=0.5: self + weight * (end - self),
    "mulcat": lambda a, b, dim=0: torch.cat([a * b, a], dim),
}


def _zero(self: torch.Tensor) -> None:
    self.zero_()


def _generate(tmp_path: Path, derivatives: str, installed_yaml) -> tuple[object, Path]:
    native, tags = installed_yaml
    (tmp_path / "ops.yaml").write_text(OPS)
    (tmp_path / "derivatives.yaml").write_text(derivatives)
    module = tmp_path / "pyag_registrations.py"
    proc = run_cli(
        "stable",
        f"--op_yaml={tmp_path / 'ops.yaml'}",
        f"--tags_yaml={tags}",
        f"--python_module={module}",
        f"--derivatives_yaml={tmp_path / 'derivatives.yaml'}",
        f"--aten_op_yaml={native}",
    )
    return proc, module


@pytest.fixture(scope="module")
def generated(tmp_path_factory, installed_yaml):
    """The ops defined in this process, the generated module imported over them."""
    tmp = tmp_path_factory.mktemp("pyag")
    proc, module = _generate(tmp, DERIVATIVES, installed_yaml)
    assert proc.returncode == 0, proc.stderr
    lib = torch.library.Library(NS, "DEF")
    for line in OPS.splitlines():
        if line.startswith("- func: "):
            lib.define(line.removeprefix("- func: pyag::"))
    for name, kernel in KERNELS.items():
        key = "CompositeExplicitAutograd" if name == "mulcat" else "CPU"
        lib.impl(name, kernel, key)
    lib.impl("zero_", _zero, "CPU")
    for name in KERNELS:  # the fakes stable mode leaves to the author: the kernels run on meta
        if name != "mulcat":
            torch.library.register_fake(f"{NS}::{name}", KERNELS[name], lib=lib)
    spec = importlib.util.spec_from_file_location("pyag_registrations", module)
    assert spec is not None and spec.loader is not None
    registrations = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(registrations)
    yield registrations, proc, module.read_text()
    lib._destroy()
    sys.modules.pop("pyag_registrations", None)


def _x(*shape: int) -> torch.Tensor:
    return torch.randn(*shape, dtype=torch.float64, requires_grad=True)


CASES = {
    "scaled_add": lambda: ((_x(3, 4), _x(3, 4), 0.7), {}),
    "smooth": lambda: ((_x(3, 4), 0.5), {}),
    "smooth_large_beta": lambda: ((_x(3, 4), 500.0), {}),
    "sumsq": lambda: ((_x(3, 4),), {}),
    "two": lambda: ((_x(5),), {}),
    "named": lambda: ((_x(2, 3),), {}),
    "square_scaled": lambda: ((_x(4), -1.5), {}),
    "rowscale": lambda: ((_x(3, 4), _x(3, 1)), {}),
    "masked_scale": lambda: (
        (_x(3, 4), (torch.rand(3, 4, dtype=torch.float64) > 0.5).double(), 2.5),
        {},
    ),
    "with_sign": lambda: ((_x(6),), {}),
    "lerp_to": lambda: ((_x(3), _x(3)), {"weight": 0.25}),
    # No formula: its composite kernel has no autograd, so no input requires grad.
    "mulcat": lambda: ((torch.randn(2, 3), torch.randn(2, 3), 1), {}),
}


def _op(case: str):
    return getattr(torch.ops.pyag, case.removesuffix("_large_beta"))


@pytest.mark.parametrize("case", sorted(set(CASES) - {"mulcat"}))
def test_gradcheck_and_gradgradcheck(generated, case: str) -> None:
    op = _op(case)
    args, kwargs = CASES[case]()

    def f(*tensors):
        it = iter(tensors)
        full = [next(it) if isinstance(a, torch.Tensor) and a.requires_grad else a for a in args]
        out = op(*full, **kwargs)
        return out[0] if case == "with_sign" else out

    inputs = tuple(a for a in args if isinstance(a, torch.Tensor) and a.requires_grad)
    assert torch.autograd.gradcheck(f, inputs)
    assert torch.autograd.gradgradcheck(f, inputs)


def test_gradients_equal_torchs_own(generated) -> None:
    """The same functions written with torch's operators: torch's autograd gives the same."""
    x, y = _x(3, 4), _x(3, 4)
    for ours, theirs in (
        (lambda: torch.ops.pyag.smooth(x, 0.8), lambda: KERNELS["smooth"](x, 0.8)),
        (lambda: torch.ops.pyag.rowscale(x, y[:, :1]), lambda: x * y[:, :1]),
        (lambda: torch.ops.pyag.sumsq(x), lambda: (x * x).sum()),
    ):
        a = torch.autograd.grad(ours().sum(), (x, y), allow_unused=True)
        b = torch.autograd.grad(theirs().sum(), (x, y), allow_unused=True)
        for g, h in zip(a, b, strict=True):
            assert (g is None and h is None) or torch.allclose(g, h)


def test_non_differentiable_parts(generated) -> None:
    x = _x(4)
    mask = torch.ones(4, dtype=torch.float64, requires_grad=True)
    out = torch.ops.pyag.masked_scale(x, mask, 2.0)
    (gx,) = torch.autograd.grad(out.sum(), (x,))
    assert torch.equal(gx, torch.full((4,), 2.0, dtype=torch.float64))
    values, signs = torch.ops.pyag.with_sign(x)
    assert values.requires_grad and not signs.requires_grad


# The first opcheck compiles (aot_dispatch): several seconds, too many for the fast tier.
@pytest.mark.slow
@pytest.mark.parametrize("case", sorted(CASES))
def test_opcheck(generated, case: str) -> None:
    args, kwargs = CASES[case]()
    result = torch.library.opcheck(_op(case), args, kwargs, raise_exception=False)
    assert all(v == "SUCCESS" for v in result.values()), result


@pytest.mark.slow
def test_derived_fake_of_an_op_returning_nothing(generated) -> None:
    registrations, _, _ = generated
    x = torch.randn(3, 4)
    result = torch.library.opcheck(torch.ops.pyag.zero_, (x,), raise_exception=False)
    assert all(v == "SUCCESS" for v in result.values()), result
    assert "pyag::mulcat" not in registrations.NEEDS_FAKE_KERNEL
    assert "pyag::zero_" not in registrations.NEEDS_FAKE_KERNEL


def test_ops_left_without_a_fake_are_named_in_one_line(generated) -> None:
    registrations, proc, _ = generated
    lines = [line for line in proc.stderr.splitlines() if "fake kernel" in line]
    assert len(lines) == 1 and ": note: no fake kernel derived for " in lines[0], proc.stderr
    left = sorted(f"pyag::{n}" for n in KERNELS if n != "mulcat")
    assert sorted(registrations.NEEDS_FAKE_KERNEL) == left
    for name in left:
        assert name in lines[0]
    assert "pyag::mulcat" not in lines[0] and "pyag::zero_" not in lines[0]
