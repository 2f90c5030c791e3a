"""A small program on the hostdev device, checked against the same program on the CPU.

    python demo.py bazel-bin/libhost_device.so

Prints one JSON object: {"checks": {name: true/false}, "details": {...}}; exits 1 if a check
failed. tests/workspaces/test_privateuse1_example.py runs it after building the example.
"""

from __future__ import annotations

import json
import re
import sys
import types

import torch


def load_backend(library: str) -> torch.device:
    torch.ops.load_library(library)
    torch.utils.rename_privateuse1_backend("hostdev")
    # torch.hostdev: what torch asks of a device module (here: one device, always available).
    module = types.ModuleType("torch.hostdev")
    module.is_available = lambda: True
    module.device_count = lambda: 1
    module.current_device = lambda: 0
    module._is_in_bad_fork = lambda: False
    module.manual_seed_all = lambda seed: None
    torch._register_device_module("hostdev", module)
    # Tensor.hostdev(), Tensor.is_hostdev, ...
    torch.utils.generate_methods_for_privateuse1_backend()
    return torch.device("hostdev")


def same(device_result: torch.Tensor, cpu_result: torch.Tensor) -> bool:
    return (
        device_result.device.type == "hostdev"
        and device_result.dtype == cpu_result.dtype
        and torch.equal(device_result.cpu(), cpu_result)
    )


def dispatch_files(op: str) -> dict[str, str]:
    """The hostdev part of `op`'s dispatch table: key -> the file that registered the kernel."""
    files = {}
    for line in torch._C._dispatch_dump(f"aten::{op}").splitlines():
        m = re.match(r"(\w+): .*registered at (\S+):\d+", line)
        if m and m[1] in ("PrivateUse1", "AutogradPrivateUse1"):
            files[m[1]] = m[2]
    return files


def train(device) -> dict:
    """Three SGD steps of a one-layer tanh model on `device`; what they leave behind."""
    gen = torch.Generator().manual_seed(0)
    data, target = torch.randn(8, 3, generator=gen), torch.randn(8, 4, generator=gen)
    weight = (torch.randn(3, 4, generator=gen) * 0.5).to(device).requires_grad_()
    bias = torch.zeros(4).to(device).requires_grad_()
    optimizer = torch.optim.SGD([weight, bias], lr=0.1, momentum=0.9)
    losses = []
    for _ in range(3):
        optimizer.zero_grad()
        out = torch.tanh(data.to(device) @ weight + bias)
        loss = ((out - target.to(device)) ** 2).mean()
        with torch.autograd.set_multithreading_enabled(False):  # see the relu check below
            loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return {
        "weight": weight.detach(),
        "bias": bias.detach(),
        "out": out.detach(),
        "grad_fn": out.grad_fn.name(),
        "losses": losses,
    }


def main(library: str) -> int:
    dev = load_backend(library)
    a_cpu = torch.arange(6.0).reshape(2, 3) - 2.5
    b_cpu = torch.full((2, 3), 1.5)
    a = a_cpu.to(dev)
    b = b_cpu.hostdev()  # a generated method
    checks: dict[str, bool] = {}
    details: dict[str, object] = {}

    # creation, .to(), .cpu()
    e = torch.empty(2, 3, device=dev)
    checks["empty"] = e.device == torch.device("hostdev", 0) and e.shape == (2, 3)
    checks["to_and_cpu"] = torch.equal(a.cpu(), a_cpu) and a.is_hostdev
    checks["to_dtype"] = same(a_cpu.to(dev, dtype=torch.float64), a_cpu.double())
    checks["ones"] = same(torch.ones(3, device=dev), torch.ones(3))  # empty + fill_

    # arithmetic: kernels of our own
    checks["add"] = same(a + b, a_cpu + b_cpu) and same(torch.add(a, b, alpha=2), a_cpu + 2 * b_cpu)
    checks["mul"] = same(a * b, a_cpu * b_cpu)
    checks["abs"] = same(a.abs(), a_cpu.abs())
    checks["sum"] = same(a.sum(), a_cpu.sum()) and same(a.sum(1), a_cpu.sum(1))
    checks["item"] = a.sum().item() == a_cpu.sum().item()

    # generated wrappers: inplace via _copy_from, out= via _copy_from_and_resize
    c = a.clone()
    c.add_(b)
    c.mul_(b)
    checks["inplace_wrappers"] = same(c, (a_cpu + b_cpu) * b_cpu)
    d = a.clone()
    d.abs_()
    checks["inplace_abs"] = same(d, a_cpu.abs())
    out = torch.empty(0, device=dev)
    torch.add(a, b, out=out)
    out2 = torch.empty(0, device=dev)
    torch.abs(a, out=out2)
    checks["out_wrappers"] = same(out, a_cpu + b_cpu) and same(out2, a_cpu.abs())

    # a structured op implemented by impl() alone: functional, in-place and out= kernels are
    # generated around torch's meta(), with its broadcasting, type promotion and out= resizing
    row_cpu, ints_cpu = torch.tensor([1.0, -2.0, 0.5]), torch.tensor([[3], [4]])
    row, ints = row_cpu.to(dev), ints_cpu.to(dev)
    s = a.clone()
    s.sub_(row, alpha=2)
    sub_out = torch.empty(0, device=dev)
    torch.sub(ints, row, out=sub_out)
    checks["structured_functional"] = same(a - row, a_cpu - row_cpu) and same(
        torch.sub(ints, a, alpha=3), torch.sub(ints_cpu, a_cpu, alpha=3)
    )
    checks["structured_inplace"] = same(s, a_cpu - 2 * row_cpu)
    checks["structured_out"] = same(sub_out, ints_cpu - row_cpu) and sub_out.shape == (2, 3)
    # torch's meta() refuses what it refuses on the CPU, with the same words: a float result
    # into an int64 self, a self of another shape than the broadcast one
    errors = {}
    for name, (self_cpu, other_cpu) in {
        "cast": (torch.ones(2, 3, dtype=torch.long), a_cpu),
        "shape": (ints_cpu.clone(), row_cpu),
    }.items():
        for where, (x, y) in {"hostdev": (self_cpu.to(dev), other_cpu.to(dev)),
                              "cpu": (self_cpu, other_cpu)}.items():
            try:
                x.sub_(y)
                errors[f"{name}:{where}"] = None
            except RuntimeError as e:
                errors[f"{name}:{where}"] = str(e).splitlines()[0]
    details["structured_inplace_errors"] = errors
    checks["structured_meta_checks"] = all(
        errors[f"{name}:hostdev"] is not None and errors[f"{name}:hostdev"] == errors[f"{name}:cpu"]
        for name in ("cast", "shape")
    )

    # views alias the device memory
    base = a.clone()
    v = base.view(3, 2)
    v.fill_(7.0)
    checks["view"] = same(a.view(3, 2), a_cpu.view(3, 2)) and same(base, torch.full((2, 3), 7.0))
    t = a.t()  # as_strided
    checks["as_strided"] = same(t.contiguous(), a_cpu.t().contiguous())
    checks["reshape"] = same(a.reshape(6), a_cpu.reshape(6))

    # printing
    text = repr(a)
    details["repr"] = text
    checks["print"] = "device='hostdev:0'" in text and text.replace(
        ", device='hostdev:0'", ""
    ) == repr(a_cpu)

    # the autograd override: our own backward for relu
    x = a.detach().requires_grad_()
    y = torch.relu(x)
    # Run the backward pass on this thread. Otherwise autograd starts a worker thread for
    # hostdev:0, and at interpreter exit Python's finalization can kill that thread while it
    # unwinds C++ frames, which aborts the process ("terminate called without an active
    # exception") after the program has finished (seen in about 1 of 3 runs).
    with torch.autograd.set_multithreading_enabled(False):
        y.sum().backward()
    details["relu_grad_fn"] = y.grad_fn.name()
    checks["autograd_override"] = (
        "HostRelu" in y.grad_fn.name()
        and same(y.detach(), torch.relu(a_cpu))
        and same(x.grad, (a_cpu > 0).float())
    )

    # training with a generated autograd kernel: tanh's AutogradPrivateUse1 kernel comes from
    # derivatives.yaml; the same steps on the CPU give the same parameters
    trained = {d: train(d) for d in ("cpu", dev)}
    details["train_grad_fn"] = trained[dev]["grad_fn"]
    details["train_losses"] = {str(d): t["losses"] for d, t in trained.items()}
    checks["train_generated_autograd"] = trained[dev]["grad_fn"] == "aten::TanhBackward0" and all(
        torch.equal(trained[dev][k].cpu(), trained["cpu"][k]) for k in ("weight", "bias", "out")
    )

    # the dispatch table names our generated sources
    expected = {
        "add.Tensor": "RegisterPrivateUse1_",
        "add_.Tensor": "RegisterPrivateUse1_",
        "add.out": "RegisterPrivateUse1_",
        "sub.Tensor": "RegisterPrivateUse1_",
        "sub_.Tensor": "RegisterPrivateUse1_",
        "sub.out": "RegisterPrivateUse1_",
        "view": "RegisterPrivateUse1_",
        "empty.memory_format": "RegisterPrivateUse1_",
    }
    tables = {op: dispatch_files(op) for op in [*expected, "relu", "tanh"]}
    details["dispatch"] = tables
    checks["dispatch_dump"] = all(
        prefix in tables[op].get("PrivateUse1", "").rsplit("/", 1)[-1]
        for op, prefix in expected.items()
    ) and "RegisterAutogradPrivateUse1_" in tables["relu"].get("AutogradPrivateUse1", "")
    checks["dispatch_generated_autograd"] = tables["tanh"].get("AutogradPrivateUse1", "").rsplit(
        "/", 1
    )[-1].startswith("AutogradPrivateUse1_") and "RegisterPrivateUse1_" in tables["tanh"].get(
        "PrivateUse1", ""
    )

    print(json.dumps({"checks": checks, "details": details}, sort_keys=True))
    return 0 if all(checks.values()) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
