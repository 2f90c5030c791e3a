"""Gradients of PyTorch's own OpInfo samples, taken twice: with torch's Autograd kernels, then
with generated ones loaded over them, in one process (a loaded library cannot be unloaded, so
every reference value is taken first).

Each sample is called as its OpInfo calls it (`op(sample.input, *sample.args,
**sample.kwargs)`, then `sample.output_process_fn_grad`), with the RNG reseeded before every
call, so random ops draw the same numbers on both sides.
"""

from __future__ import annotations

import contextlib
import io
import warnings
from collections import Counter
from dataclasses import dataclass, field

import torch
from torch.utils._pytree import tree_flatten, tree_unflatten

SEED = 20261123
OUR_NODE_PREFIX = "aten::"  # generated nodes are named "aten::<Entry>Backward<N>"; torch's are not
# gradcheck differentiates numerically, one forward call per input element: above this many
# elements per sample it would dominate the run, so it is left out (and counted).
GRADCHECK_MAX_NUMEL = 2000


@dataclass
class Sample:
    op: object  # the OpInfo
    index: int
    sample: object  # its SampleInput
    reference: tuple | str | None = None  # (outputs, grads, gradcheck), an error, or None


@dataclass
class Tally:
    opinfos: int = 0
    samples: int = 0
    without_gradient: int = 0  # no differentiable output, or no input requiring grad
    reached: int = 0  # samples whose graph holds a generated node
    nodes_reached: set[str] = field(default_factory=set)
    outputs_equal: int = 0
    grads_equal: int = 0
    gradcheck_both_pass: int = 0
    gradcheck_both_fail: int = 0  # torch's own kernels fail it too (random ops, ...)
    gradcheck_skipped: int = 0
    mismatches: list[str] = field(default_factory=list)
    torch_failures: Counter = field(default_factory=Counter)

    def as_dict(self) -> dict:
        return {
            "opinfos": self.opinfos,
            "samples": self.samples,
            "samples_without_gradient": self.without_gradient,
            "samples_reaching_generated_kernels": self.reached,
            "generated_nodes_reached": len(self.nodes_reached),
            "outputs_equal": self.outputs_equal,
            "gradients_equal": self.grads_equal,
            "gradcheck_both_pass": self.gradcheck_both_pass,
            "gradcheck_both_fail": self.gradcheck_both_fail,
            "gradcheck_skipped_large": self.gradcheck_skipped,
            "mismatches": len(self.mismatches),
        }


def names_of(op) -> set[str]:
    """The aten op roots an OpInfo may call: its aten name, and the last part of its name
    (`nn.functional.gelu` calls aten::gelu)."""
    return {(op.aten_name or op.name).replace(".", "_"), op.name.split(".")[-1]}


def opinfos_for(roots: set[str]) -> list:
    """The OpInfos of op_db with autograd and float64 that may call an op of roots."""
    from torch.testing._internal.common_methods_invocations import op_db

    chosen = []
    for op in op_db:
        names = names_of(op)
        if op.supports_autograd and names & roots and op.supports_dtype(torch.float64, "cpu"):
            chosen.append(op)
    return chosen


def samples_of(ops: list, max_samples: int | None) -> list[Sample]:
    result = []
    for op in ops:
        torch.manual_seed(SEED)
        with _quiet():
            inputs = op.sample_inputs("cpu", torch.float64, requires_grad=True)
            for i, s in enumerate(inputs):
                if max_samples is not None and i >= max_samples:
                    break
                result.append(Sample(op, i, s))
    return result


@contextlib.contextmanager
def _quiet():
    with warnings.catch_warnings(), contextlib.redirect_stderr(io.StringIO()):
        warnings.simplefilter("ignore")
        yield


def _leaves(sample) -> tuple[list, object, list[int]]:
    leaves, spec = tree_flatten((sample.input, sample.args, sample.kwargs))
    diff = [i for i, x in enumerate(leaves) if isinstance(x, torch.Tensor) and x.requires_grad]
    return leaves, spec, diff


def _call(op, sample, leaves, spec) -> list[torch.Tensor]:
    torch.manual_seed(SEED)
    inp, args, kwargs = tree_unflatten(leaves, spec)
    out = sample.output_process_fn_grad(op(inp, *args, **kwargs))
    flat, _ = tree_flatten(out)
    return [t for t in flat if isinstance(t, torch.Tensor)]


def _node_names(outputs: list[torch.Tensor]) -> set[str]:
    seen, todo, names = set(), [t.grad_fn for t in outputs if t.grad_fn is not None], set()
    while todo:
        fn = todo.pop()
        if fn is None or id(fn) in seen:
            continue
        seen.add(id(fn))
        names.add(fn.name())
        todo += [nxt for nxt, _ in fn.next_functions]
    return names


def _run(s: Sample) -> tuple | str | None:
    """(outputs, gradients, gradcheck verdict, node names) of one sample; None when it has
    nothing to differentiate; the error's first line when it raises."""
    leaves, spec, diff = _leaves(s.sample)
    if not diff:
        return None
    try:
        with _quiet():
            outputs = [t for t in _call(s.op, s.sample, leaves, spec) if t.requires_grad]
            if not outputs:
                return None
            generator = torch.Generator().manual_seed(SEED)
            grad_outputs = [
                torch.randn(o.shape, dtype=o.dtype, generator=generator) for o in outputs
            ]
            inputs = [leaves[i] for i in diff]
            grads = torch.autograd.grad(outputs, inputs, grad_outputs, allow_unused=True)
            names = _node_names(outputs)
            verdict = _gradcheck(s, leaves, spec, diff)
    except Exception as e:  # noqa: BLE001 - a kernel's error is a result to compare
        return f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"
    detached = [o.detach().clone() for o in outputs]
    return detached, [g.detach().clone() if g is not None else None for g in grads], verdict, names


def _gradcheck(s: Sample, leaves, spec, diff) -> str:
    if sum(leaves[i].numel() for i in diff) > GRADCHECK_MAX_NUMEL:
        return "skipped"

    def fn(*xs):
        filled = list(leaves)
        for i, x in zip(diff, xs, strict=True):
            filled[i] = x
        # By dtype, not requires_grad: forward-mode checks call this with dual tensors.
        outputs = _call(s.op, s.sample, filled, spec)
        return tuple(t for t in outputs if t.is_floating_point() or t.is_complex())

    try:
        torch.autograd.gradcheck(
            fn,
            tuple(leaves[i] for i in diff),
            check_forward_ad=s.op.supports_forward_ad,
            check_undefined_grad=False,
        )
    except Exception as e:  # noqa: BLE001
        return f"fail: {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"
    return "pass"


def take_references(samples: list[Sample]) -> None:
    for s in samples:
        s.reference = _run(s)


def _equal(a: list, b: list) -> bool:
    if len(a) != len(b):
        return False
    for x, y in zip(a, b, strict=True):
        if (x is None) != (y is None):
            return False
        if x is not None and not (
            x.shape == y.shape
            and x.dtype == y.dtype
            and x.stride() == y.stride()
            and torch.equal(torch.nan_to_num(x), torch.nan_to_num(y))
            and torch.equal(x.isnan(), y.isnan())
        ):
            return False
    return True


def _brief(result: tuple | str | None) -> str:
    if result is None:
        return "nothing to differentiate"
    if isinstance(result, str):
        return result
    return f"ran (gradcheck: {result[2]})"


def compare(samples: list[Sample]) -> Tally:
    """Runs every sample again (with the generated kernels loaded) against its reference."""
    tally = Tally(opinfos=len({id(s.op) for s in samples}), samples=len(samples))
    for s in samples:
        ours = _run(s)
        where = f"{s.op.name}[{s.index}]"
        ref = s.reference
        if ref is None and ours is None:
            tally.without_gradient += 1
            continue
        if isinstance(ref, str) or isinstance(ours, str) or ref is None or ours is None:
            if ref != ours:
                tally.mismatches.append(f"{where}: torch: {_brief(ref)}; generated: {_brief(ours)}")
            else:
                tally.torch_failures[ref] += 1
            continue
        names = {n for n in ours[3] if n.startswith(OUR_NODE_PREFIX)}
        if not names:
            continue  # this sample never reached a generated kernel
        tally.reached += 1
        tally.nodes_reached |= names
        if _equal(ref[0], ours[0]):
            tally.outputs_equal += 1
        else:
            tally.mismatches.append(f"{where}: outputs differ")
        if _equal(ref[1], ours[1]):
            tally.grads_equal += 1
        else:
            tally.mismatches.append(f"{where}: gradients differ ({sorted(names)})")
        verdicts = (ref[2], ours[2])
        if verdicts == ("pass", "pass"):
            tally.gradcheck_both_pass += 1
        elif "skipped" in verdicts:
            tally.gradcheck_skipped += 1
        elif verdicts[0] != "pass" and verdicts[1] != "pass":
            tally.gradcheck_both_fail += 1
        else:
            tally.mismatches.append(f"{where}: gradcheck torch: {verdicts[0]}; ours: {verdicts[1]}")
    return tally
