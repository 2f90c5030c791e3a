"""Gradients of PyTorch's own OpInfo samples, taken twice: with torch's Autograd kernels, then
with generated ones loaded over them, in one process (a loaded library cannot be unloaded, so
every reference value is taken first). aten_autograd.py runs it in worker processes, each over
a share of the OpInfos:

    .venv/bin/python conformance/opinfo_grads.py --library=LIB --opinfos=FILE --shard=I/N
        [--view_roots=A,B] [--max_samples=N] --json=OUT

The OpInfos are op_db's and the foreach ones (`foreach_unary_op_db` and the other
`foreach_*_op_db` lists). Every sample of an OpInfo (or its first N) is run through three variants, as torch's own
gradient tests run them:

- `function`: `op(sample.input, *sample.args, **sample.kwargs)`, then
  `sample.output_process_fn_grad`;
- `inplace`: the OpInfo's in-place variant on a clone of the input (a non-leaf, as torch's
  TestGradients does; a foreach op's list is cloned element by element, and the elements it
  wrote are its outputs), where the OpInfo has one and supports in-place autograd; samples that
  broadcast the input are left out, as there;
- `view`: for a view op, the op on a non-leaf clone of the input, then an in-place `mul_(2)`
  through the view (the first of several, which autograd refuses), with view replay on (`torch.autograd._force_original_view_tracking`, as
  torch's test_view_replay): the outputs are the view and its base, so the gradients go through
  the view op replayed on the base, and through the base's CopySlices.

Each run reseeds the RNG, so random ops draw the same numbers on both sides; outputs and
gradients (for seeded random grad_outputs) must be equal bit for bit. Then gradcheck (with
forward AD where the OpInfo supports it for that variant) and gradgradcheck (forward-over-reverse
and reverse-over-reverse, as the OpInfo supports them), each in the OpInfo's fast or slow mode;
their verdicts must agree with torch's.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import sys
import time
import warnings
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import torch
from torch.utils._pytree import tree_flatten, tree_unflatten

SEED = 20261123
OUR_NODE_PREFIX = "aten::"  # generated nodes are named "aten::<Entry>Backward<N>"; torch's are not
# Numerical checks differentiate by finite differences. In fast mode (one random direction) the
# cost hardly grows with the size; in slow mode it is one forward call per input element. Above
# these many elements per sample they are left out (and counted).
GRADCHECK_MAX_NUMEL_FAST = 20000
GRADCHECK_MAX_NUMEL_SLOW = 2000
VARIANTS = ("function", "inplace", "view")
FOREACH_LIST_LENGTH = 5


@dataclass
class Sample:
    op: object  # the OpInfo
    index: int
    sample: object  # its SampleInput
    variant: str = "function"
    reference: tuple | str | None = None  # (outputs, grads, verdicts, nodes), an error, or None

    @property
    def where(self) -> str:
        suffix = "" if self.variant == "function" else f"({self.variant})"
        return f"{self.op.name}{suffix}[{self.index}]"


# Counted per variant and in total, in this order.
COUNTS = (
    "samples",
    "samples_without_gradient",
    "samples_reaching_generated_kernels",
    "outputs_equal",
    "gradients_equal",
    "gradcheck_both_pass",
    "gradcheck_both_pass_with_forward_ad",
    "gradcheck_both_fail",
    "gradcheck_skipped_large",
    "gradgradcheck_both_pass",
    "gradgradcheck_both_pass_with_fwd_over_rev",
    "gradgradcheck_both_fail",
    "gradgradcheck_not_supported",
    "gradgradcheck_skipped_large",
)


@dataclass
class Tally:
    opinfos: set[str] = field(default_factory=set)
    counts: Counter = field(default_factory=Counter)  # `<count>` and `<variant>:<count>`
    nodes_reached: set[str] = field(default_factory=set)
    # OpInfos (`name` or `name(variant)`) with a sample that reached generated kernels and passed
    # gradcheck with forward AD on both sides.
    forward_ad_opinfos: set[str] = field(default_factory=set)
    mismatches: list[str] = field(default_factory=list)
    torch_failures: Counter = field(default_factory=Counter)
    seconds: float = 0.0

    def add(self, variant: str, what: str) -> None:
        self.counts[what] += 1
        self.counts[f"{variant}:{what}"] += 1

    def as_dict(self) -> dict:
        return {
            "opinfos": len(self.opinfos),
            **{k: self.counts[k] for k in COUNTS},
            "generated_nodes_reached": len(self.nodes_reached),
            "mismatches": len(self.mismatches),
            "by_variant": {v: {k: self.counts[f"{v}:{k}"] for k in COUNTS} for v in VARIANTS},
            "opinfo_seconds": round(self.seconds, 1),
        }

    def to_json(self) -> dict:
        return {
            "opinfos": sorted(self.opinfos),
            "counts": dict(self.counts),
            "nodes_reached": sorted(self.nodes_reached),
            "forward_ad_opinfos": sorted(self.forward_ad_opinfos),
            "mismatches": self.mismatches,
            "torch_failures": dict(self.torch_failures),
            "seconds": self.seconds,
        }

    def merge(self, other: dict) -> None:
        """Adds a worker's to_json(); seconds are the slowest worker's (they run side by side)."""
        self.opinfos |= set(other["opinfos"])
        self.counts.update(other["counts"])
        self.nodes_reached |= set(other["nodes_reached"])
        self.forward_ad_opinfos |= set(other["forward_ad_opinfos"])
        self.mismatches += other["mismatches"]
        self.torch_failures.update(other["torch_failures"])
        self.seconds = max(self.seconds, other["seconds"])


def names_of(op) -> set[str]:
    """The aten op roots an OpInfo may call: its aten name, and the last part of its name
    (`nn.functional.gelu` calls aten::gelu)."""
    return {(op.aten_name or op.name).replace(".", "_"), op.name.split(".")[-1]}


def opinfo_key(op) -> str:
    return f"{op.name}|{op.variant_test_name}"


# The `_foreach_` ops' OpInfos are not in op_db but in these lists of the same module.
FOREACH_DBS = (
    "foreach_unary_op_db",
    "foreach_binary_op_db",
    "foreach_pointwise_op_db",
    "foreach_reduce_op_db",
    "foreach_other_op_db",
)


def all_opinfos() -> list:
    """op_db, then the foreach OpInfos."""
    from torch.testing._internal import common_methods_invocations as cmi

    return list(cmi.op_db) + [op for db in FOREACH_DBS for op in getattr(cmi, db)]


def opinfos_for(roots: set[str]) -> list:
    """The OpInfos (op_db's and the foreach ones) with autograd and float64 that may call an
    op of roots."""
    chosen = []
    for op in all_opinfos():
        names = names_of(op)
        if op.supports_autograd and names & roots and op.supports_dtype(torch.float64, "cpu"):
            chosen.append(op)
    return chosen


def has_inplace_grad(op) -> bool:
    return op.get_inplace() is not None and bool(op.supports_inplace_autograd)


def samples_of(ops: list, max_samples: int | None, view_roots: set[str]) -> list[Sample]:
    """Every sample (or the first max_samples) of each OpInfo, once per variant it has."""
    result = []
    for op in ops:
        variants = ["function"]
        if has_inplace_grad(op):
            variants.append("inplace")
        if names_of(op) & view_roots:
            variants.append("view")
        torch.manual_seed(SEED)
        with _quiet():
            inputs = op.sample_inputs("cpu", torch.float64, requires_grad=True, **_sizes(op))
            for i, s in enumerate(inputs):
                if max_samples is not None and i >= max_samples:
                    break
                for v in variants:
                    if v == "inplace" and (s.broadcasts_input or not _is_tensors(s.input)):
                        continue
                    if v == "view" and not _is_tensor(s.input):
                        continue
                    result.append(Sample(op, i, s, v))
    return result


def _sizes(op) -> dict:
    """A foreach OpInfo's samples hold lists of FOREACH_LIST_LENGTH tensors: by default lists
    of 20 to 23 tensors of up to 23x23, where one sample's gradcheck takes seconds."""
    return {"num_input_tensors": [FOREACH_LIST_LENGTH]} if op.name.startswith("_foreach_") else {}


def _is_tensor(x) -> bool:
    return isinstance(x, torch.Tensor)


def _is_tensors(x) -> bool:
    """A tensor, or a foreach op's list of them."""
    return _is_tensor(x) or (isinstance(x, list) and bool(x) and all(map(_is_tensor, x)))


def _clone(x):
    return [t.clone() for t in x] if isinstance(x, list) else x.clone()


@contextlib.contextmanager
def _quiet():
    with warnings.catch_warnings(), contextlib.redirect_stderr(io.StringIO()):
        warnings.simplefilter("ignore")
        yield


def _leaves(sample) -> tuple[list, object, list[int]]:
    leaves, spec = tree_flatten((sample.input, sample.args, sample.kwargs))
    diff = [i for i, x in enumerate(leaves) if isinstance(x, torch.Tensor) and x.requires_grad]
    return leaves, spec, diff


def _call(s: Sample, leaves, spec) -> list[torch.Tensor]:
    """The sample's tensors out of its variant (see the module's docstring)."""
    torch.manual_seed(SEED)
    op, process = s.op, s.sample.output_process_fn_grad
    inp, args, kwargs = tree_unflatten(leaves, spec)
    if s.variant == "function":
        out = process(op.gradcheck_wrapper(op.op, inp, *args, **kwargs))
    elif s.variant == "inplace":
        target = _clone(inp)
        out = op.gradcheck_wrapper(op.get_inplace(), target, *args, **kwargs)
        # An in-place foreach op returns nothing: its outputs are the elements it wrote.
        out = process(target if out is None else out)
    else:
        # Recording how to replay the view (torch otherwise replays a strided view with
        # as_strided), so the view's history after the write is the op's again.
        with torch.autograd._force_original_view_tracking(True):
            base = inp.clone()
            view = op.gradcheck_wrapper(op.op, base, *args, **kwargs)
            # Of several views (chunk's), the first: autograd refuses to write through it.
            (view[0] if isinstance(view, (tuple, list)) else view).mul_(2)
        out = (process(view), base)
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


def _error(e: BaseException) -> str:
    return f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"


def _run(s: Sample) -> tuple | str | None:
    """(outputs, gradients, (gradcheck, gradgradcheck) verdicts, node names) of one sample;
    None when it has nothing to differentiate; the error's first line when it raises."""
    leaves, spec, diff = _leaves(s.sample)
    if not diff:
        return None
    try:
        with _quiet():
            outputs = [t for t in _call(s, leaves, spec) if t.requires_grad]
            if not outputs:
                return None
            generator = torch.Generator().manual_seed(SEED)
            grad_outputs = [
                torch.randn(o.shape, dtype=o.dtype, generator=generator) for o in outputs
            ]
            inputs = [leaves[i] for i in diff]
            grads = torch.autograd.grad(outputs, inputs, grad_outputs, allow_unused=True)
            names = _node_names(outputs)
            verdicts = _checks(s, leaves, spec, diff)
    except Exception as e:  # noqa: BLE001 - a kernel's error is a result to compare
        return _error(e)
    detached = [o.detach().clone() for o in outputs]
    grads = [g.detach().clone() if g is not None else None for g in grads]
    return detached, grads, verdicts, names


def forward_ad(s: Sample) -> bool:
    """Whether torch's tests check forward AD for this variant of the OpInfo."""
    return bool(s.op.supports_forward_ad)


def _checks(s: Sample, leaves, spec, diff) -> tuple[str, str]:
    """The verdicts of gradcheck and gradgradcheck: `pass`, `fail: <error>`, `skipped` (too
    large) or `not supported` (the OpInfo supports no second-order check)."""
    op = s.op
    fast = op.gradcheck_fast_mode is not False
    limit = GRADCHECK_MAX_NUMEL_FAST if fast else GRADCHECK_MAX_NUMEL_SLOW
    if sum(leaves[i].numel() for i in diff) > limit:
        return "skipped", "skipped"

    def fn(*xs):
        filled = list(leaves)
        for i, x in zip(diff, xs, strict=True):
            filled[i] = x
        # By dtype, not requires_grad: forward-mode checks call this with dual tensors.
        return tuple(t for t in _call(s, filled, spec) if t.is_floating_point() or t.is_complex())

    inputs = tuple(leaves[i] for i in diff)
    common = {"nondet_tol": op.gradcheck_nondet_tol, "fast_mode": fast}
    try:
        torch.manual_seed(SEED)
        torch.autograd.gradcheck(
            fn, inputs, check_forward_ad=forward_ad(s), check_undefined_grad=False, **common
        )
        first = "pass"
    except Exception as e:  # noqa: BLE001
        first = f"fail: {_error(e)}"
    fwd_over_rev, rev_over_rev = bool(op.supports_fwgrad_bwgrad), bool(op.supports_gradgrad)
    if not (fwd_over_rev or rev_over_rev):
        return first, "not supported"
    try:
        torch.manual_seed(SEED)
        torch.autograd.gradgradcheck(
            fn,
            inputs,
            check_fwd_over_rev=fwd_over_rev,
            check_rev_over_rev=rev_over_rev,
            check_undefined_grad=False,
            **common,
        )
        second = "pass"
    except Exception as e:  # noqa: BLE001
        second = f"fail: {_error(e)}"
    return first, second


def take_references(samples: list[Sample]) -> None:
    for s in samples:
        s.reference = _run(s)


def _equal(a: list, b: list) -> bool:
    if len(a) != len(b):
        return False
    for x, y in zip(a, b, strict=True):
        if (x is None) != (y is None):
            return False
        if x is None:
            continue
        if (x.shape, x.dtype, x.layout) != (y.shape, y.dtype, y.layout):
            return False
        if x.layout is torch.strided:
            if x.stride() != y.stride():
                return False
        else:  # sparse gradients: no strides; their values, densely
            x, y = x.to_dense(), y.to_dense()
        if not (
            torch.equal(torch.nan_to_num(x), torch.nan_to_num(y))
            and torch.equal(x.isnan(), y.isnan())
        ):
            return False
    return True


def _brief(result: tuple | str | None) -> str:
    if result is None:
        return "nothing to differentiate"
    if isinstance(result, str):
        return result
    return f"ran (gradcheck: {result[2][0]}; gradgradcheck: {result[2][1]})"


def harness_nodes() -> set[str]:
    """The nodes the in-place and view variants add around the op (the input's clone, the
    `mul_` through the view): they are not the op under test."""
    x = torch.ones(2, dtype=torch.float64, requires_grad=True)
    return _node_names([x.clone().mul_(2)])


def compare(samples: list[Sample]) -> Tally:
    """Runs every sample again (with the generated kernels loaded) against its reference."""
    tally = Tally(opinfos={opinfo_key(s.op) for s in samples})
    harness = harness_nodes()
    for s in samples:
        try:
            _compare_one(tally, s, harness)
        except Exception as e:  # noqa: BLE001 - the comparison itself failed: say so, go on
            tally.mismatches.append(f"{s.where}: comparing raised {_error(e)}")
    return tally


def _compare_one(tally: Tally, s: Sample, harness: set[str]) -> None:
    v = s.variant
    tally.add(v, "samples")
    ours = _run(s)
    ref = s.reference
    if ref is None and ours is None:
        tally.add(v, "samples_without_gradient")
        return
    if isinstance(ref, str) or isinstance(ours, str) or ref is None or ours is None:
        if ref != ours:
            tally.mismatches.append(f"{s.where}: torch: {_brief(ref)}; ours: {_brief(ours)}")
        else:
            tally.torch_failures[ref] += 1
        return
    names = {n for n in ours[3] if n.startswith(OUR_NODE_PREFIX)}
    if v != "function":
        names -= harness
    if not names:
        return  # this sample never reached a generated kernel
    tally.add(v, "samples_reaching_generated_kernels")
    tally.nodes_reached |= names
    if _equal(ref[0], ours[0]):
        tally.add(v, "outputs_equal")
    else:
        tally.mismatches.append(f"{s.where}: outputs differ")
    if _equal(ref[1], ours[1]):
        tally.add(v, "gradients_equal")
    else:
        tally.mismatches.append(f"{s.where}: gradients differ ({sorted(names)})")
    _tally_check(tally, s, "gradcheck", ref[2][0], ours[2][0])
    _tally_check(tally, s, "gradgradcheck", ref[2][1], ours[2][1])


def _tally_check(tally: Tally, s: Sample, check: str, ref: str, ours: str) -> None:
    v = s.variant
    if (ref, ours) == ("pass", "pass"):
        tally.add(v, f"{check}_both_pass")
        if check == "gradcheck" and forward_ad(s):
            tally.add(v, "gradcheck_both_pass_with_forward_ad")
            suffix = "" if v == "function" else f"({v})"
            tally.forward_ad_opinfos.add(f"{s.op.name}{suffix}")
        if check == "gradgradcheck" and s.op.supports_fwgrad_bwgrad:
            tally.add(v, "gradgradcheck_both_pass_with_fwd_over_rev")
    elif ref == ours == "skipped":
        tally.add(v, f"{check}_skipped_large")
    elif ref == ours == "not supported":
        tally.add(v, f"{check}_not_supported")
    elif ref.startswith("fail") and ours.startswith("fail"):
        tally.add(v, f"{check}_both_fail")
    else:
        tally.mismatches.append(f"{s.where}: {check} torch: {ref}; ours: {ours}")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--library", required=True, help="the generated library loaded second")
    p.add_argument("--opinfos", required=True, type=Path, help="JSON list of opinfo_key()s")
    p.add_argument("--shard", default="0/1", help="I/N: every Nth OpInfo from the Ith")
    p.add_argument("--view_roots", default="", help="comma-separated roots of view ops")
    p.add_argument("--max_samples", type=int, help="samples per OpInfo (default: all)")
    p.add_argument("--json", required=True, type=Path, help="where the tally goes")
    args = p.parse_args(argv)
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from shared import load_library_quietly

    started = time.monotonic()
    index, count = (int(x) for x in args.shard.split("/"))
    wanted = json.loads(args.opinfos.read_text())
    by_key = {opinfo_key(op): op for op in all_opinfos()}
    ops = [by_key[k] for k in wanted[index::count]]
    torch.set_num_threads(1)
    samples = samples_of(ops, args.max_samples, set(filter(None, args.view_roots.split(","))))
    take_references(samples)
    load_library_quietly(args.library)
    tally = compare(samples)
    tally.seconds = time.monotonic() - started
    args.json.write_text(json.dumps(tally.to_json()) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
