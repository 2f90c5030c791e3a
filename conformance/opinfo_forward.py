"""PyTorch's own OpInfo samples run twice, each time in a fresh process: once with torch's
kernels, once with a generated aten library loaded over them; every result compared.

    .venv/bin/python conformance/opinfo_forward.py --library=bazel-bin/libaten_generated.so
        [--ops_file=aten_ops.txt | --ops=all] [--max_samples=N] [--json=FILE] [--write]
        [--python ~/.cache/rules_aten/venv-torch-cu130/bin/python]

`--python` runs everything under that interpreter, and so against its torch (the library must
have been built against the same wheel).

For every OpInfo of `torch.testing._internal.common_methods_invocations.op_db` that names a
selected op (its aten name, or the last part of its name), on CPU, over every dtype it supports:

- each sample through the function variant, the in-place variant and the out= variant: the
  results' values (bit for bit), dtype, shape and strides, and whether the in-place and out=
  results alias `self` and `out`; an error's type and first line instead, where one is raised;
- the same samples on `device="meta"`: dtype, shape and strides (or the error type);
- the OpInfo's `error_inputs`: the error's type and message.

Two processes, because a loaded library cannot be unloaded: the reference is taken without the
library, then the same run with it. The RNG is reseeded before every sample and every call, so
random ops draw the same numbers. Ops whose results are uninitialized memory (`empty` and its
kind) are compared without their values, and counted. Prints the counts, every mismatch, and
`RESULT ok` or `RESULT mismatches` (exit 1). `--write` appends to conformance/RESULTS.md.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import io
import json
import pickle
import subprocess
import sys
import tempfile
import time
import warnings
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "conformance"))
from opinfo_grads import names_of  # noqa: E402
from shared import (  # noqa: E402
    add_python_option,
    append_result,
    interpreter,
    load_library_quietly,
    run_under,
)

SEED = 20261123
# Their values are whatever the allocator returned; torch's own test suite skips comparing them.
# Samples per OpInfo traced through functionalization (each one is a make_fx trace).
FUNCTIONALIZE_SAMPLES = 2
UNINITIALIZED = frozenset(
    {"empty", "empty_like", "new_empty", "empty_strided", "new_empty_strided", "empty_permuted"}
)


def roots_of(ops: str, ops_file: str | None) -> set[str] | None:
    """The selected op roots (None: every OpInfo)."""
    if ops_file:
        words = Path(ops_file).read_text().split()
        names = [w for w in words if not w.startswith("#")]
    elif ops == "all":
        return None
    else:
        names = ops.split(",")
    return {n.split(".")[0].rstrip("_") for n in names if n}


@contextlib.contextmanager
def quiet():
    with warnings.catch_warnings(), contextlib.redirect_stderr(io.StringIO()):
        warnings.simplefilter("ignore")
        yield


# ---------------------------------------------------------------------------
# One side: run every sample, record what came out.


def describe(value, with_values: bool, with_strides: bool = True):
    """A comparable record of a result: tensors by metadata and a hash of their bytes."""
    import torch

    if isinstance(value, torch.Tensor):
        meta = (str(value.dtype), tuple(value.shape), str(value.layout), str(value.device))
        if value.layout == torch.strided and with_strides:
            meta += (tuple(value.stride()),)
        if not with_values or value.device.type == "meta":
            return ("tensor", meta)
        t = value.detach()
        if t.is_quantized:
            t = t.int_repr()
        elif t.layout != torch.strided:
            t = t.to_dense()
        t = t.resolve_conj().resolve_neg()
        # A fresh 1-D copy: stride 1 even where the result is expanded (stride 0).
        flat = torch.empty(t.numel(), dtype=t.dtype)
        flat.copy_(t.reshape(-1))
        data = flat.view(torch.uint8).numpy().tobytes() if t.numel() else b""
        return ("tensor", meta, hashlib.sha1(data).hexdigest())
    if isinstance(value, list | tuple):
        items = tuple(describe(v, with_values, with_strides) for v in value)
        # A named tuple (torch.return_types.sort) is a tuple: a traced graph returns a plain one.
        return ("tuple" if isinstance(value, tuple) else "list", items)
    if isinstance(
        value, torch.dtype | torch.device | torch.Size | bool | int | float | complex | str
    ):
        return ("value", repr(value))
    return ("other", type(value).__name__)


def error_of(e: BaseException) -> tuple:
    first = str(e).strip().splitlines()[0] if str(e).strip() else ""
    return ("error", type(e).__name__, first[:300])


def call(fn, sample, *, with_values: bool, out=None):
    import torch

    torch.manual_seed(SEED)
    try:
        with quiet():
            kwargs = dict(sample.kwargs) if out is None else {**sample.kwargs, "out": out}
            result = fn(sample.input, *sample.args, **kwargs)
    except Exception as e:  # noqa: BLE001 - a kernel's error is a result to compare
        return error_of(e), None
    try:
        return describe(result, with_values), result
    except Exception as e:  # noqa: BLE001 - recorded (both sides), not a crash of the run
        return ("undescribable", *error_of(e)[1:]), result


def clone_sample(sample, device: str | None = None):
    import torch
    from torch.utils._pytree import tree_map

    def copy(x):
        if not isinstance(x, torch.Tensor):
            return x
        return x.detach().to(device) if device else x.detach().clone()

    return sample.transform(copy) if hasattr(sample, "transform") else tree_map(copy, sample)


def out_like(result):
    """Fresh out= tensors shaped like a function result (None if it is not tensors)."""
    import torch

    if isinstance(result, torch.Tensor) and result.layout == torch.strided:
        return torch.empty(0, dtype=result.dtype)
    if isinstance(result, tuple) and result and all(isinstance(r, torch.Tensor) for r in result):
        return tuple(torch.empty(0, dtype=r.dtype) for r in result)
    return None


def run_side(
    roots: set[str] | None, max_samples: int, library: str | None, served_marker: str
) -> dict:
    import torch
    from torch.testing._internal.common_methods_invocations import op_db

    if library:
        load_library_quietly(library)
    records: dict[str, object] = {}
    chosen = [op for op in op_db if roots is None or names_of(op) & roots]
    served = sum(_served(op, served_marker) for op in chosen) if library else None
    for op in chosen:
        values = op.name not in UNINITIALIZED
        for dtype in sorted(op.supported_dtypes("cpu"), key=str):
            torch.manual_seed(SEED)
            try:
                with quiet():
                    samples = list(op.sample_inputs("cpu", dtype))[:max_samples]
            except Exception as e:  # noqa: BLE001
                records[f"{op.name}|{dtype}|samples"] = error_of(e)
                continue
            for i, sample in enumerate(samples):
                key = f"{op.name}|{dtype}|{i}"
                record, result = call(op, clone_sample(sample), with_values=values)
                records[f"{key}|function"] = record
                if op.inplace_variant is not None:
                    s = clone_sample(sample)
                    record, got = call(op.inplace_variant, s, with_values=values)
                    records[f"{key}|inplace"] = (record, got is s.input)
                out = out_like(result) if op.supports_out else None
                if out is not None:
                    record, got = call(op, clone_sample(sample), with_values=values, out=out)
                    same = got is out or (
                        isinstance(got, tuple)
                        and all(a is b for a, b in zip(got, out, strict=False))
                    )
                    records[f"{key}|out"] = (record, same)
                try:
                    meta_sample = clone_sample(sample, "meta")
                except Exception as e:  # noqa: BLE001
                    records[f"{key}|meta"] = error_of(e)
                else:
                    records[f"{key}|meta"] = call(op, meta_sample, with_values=False)[0]
        records.update(functionalize_records(op, values))
        try:
            with quiet():
                errors = list(op.error_inputs("cpu"))
        except Exception:  # noqa: BLE001 - OpInfos without error_inputs raise or return nothing
            errors = []
        for i, ei in enumerate(errors):
            records[f"{op.name}|error_input|{i}"] = call(op, ei.sample_input, with_values=True)[0]
    return {"opinfos": len(chosen), "served": served, "records": records}


def functionalize_records(op, with_values: bool) -> dict[str, object]:
    """`make_fx(functionalize(f))` of each of the first samples (the OpInfo's first float dtype):
    f calls the function variant, and the in-place variant on a clone of the input (so that
    the mutation is the graph's own, not an input's). Recorded: the graph's ops in order, the
    mutating ones among them, and the graph's result run again (replay)."""
    import torch

    dtypes = sorted(op.supported_dtypes("cpu"), key=str)
    floats = [d for d in dtypes if d.is_floating_point]
    dtype = torch.float32 if torch.float32 in dtypes else (floats or dtypes or [None])[0]
    if dtype is None:
        return {}
    torch.manual_seed(SEED)
    try:
        with quiet():
            samples = list(op.sample_inputs("cpu", dtype))[:FUNCTIONALIZE_SAMPLES]
    except Exception as e:  # noqa: BLE001
        return {f"{op.name}|{dtype}|functionalize|samples": error_of(e)}
    records = {}
    variants = {"function": op.op, "inplace": op.inplace_variant}
    for i, sample in enumerate(samples):
        for variant, fn in variants.items():
            if fn is not None and isinstance(sample.input, torch.Tensor):
                key = f"{op.name}|{dtype}|{i}|functionalize_{variant}"
                records[key] = _functionalized(fn, sample, variant == "inplace", with_values)
    return records


def _functionalized(fn, sample, mutate_a_clone: bool, with_values: bool):
    import torch
    from torch.fx.experimental.proxy_tensor import make_fx
    from torch.utils._pytree import tree_flatten, tree_unflatten

    leaves, spec = tree_flatten((sample.input, sample.args, sample.kwargs))
    where = [i for i, x in enumerate(leaves) if isinstance(x, torch.Tensor)]

    def f(*tensors):
        filled = list(leaves)
        for i, t in zip(where, tensors, strict=True):
            filled[i] = t
        inp, args, kwargs = tree_unflatten(filled, spec)
        if mutate_a_clone:
            inp = inp.clone()
        return fn(inp, *args, **kwargs)

    inputs = [leaves[i].detach().clone() for i in where]
    try:
        with quiet():
            torch.manual_seed(SEED)
            graph = make_fx(torch.func.functionalize(f, remove="mutations_and_views"))(*inputs)
            torch.manual_seed(SEED)
            # Without strides: the graph returns view_copy results where eager returns views.
            eager = describe(f(*[t.clone() for t in inputs]), with_values, with_strides=False)
            torch.manual_seed(SEED)
            replay = describe(graph(*[t.clone() for t in inputs]), with_values, with_strides=False)
    except Exception as e:  # noqa: BLE001
        return error_of(e)
    ops = [str(n.target) for n in graph.graph.nodes if n.op == "call_function"]
    mutating = [
        str(n.target)
        for n in graph.graph.nodes
        if n.op == "call_function"
        and getattr(n.target, "_schema", None) is not None
        and n.target._schema.is_mutable
    ]
    return ("graph", tuple(ops), tuple(mutating), replay == eager)


def _served(op, marker: str) -> bool:
    """Does the dispatcher name a generated file for a kernel of the OpInfo's op (any key,
    any overload)?"""
    import torch

    for name in sorted(names_of(op)):
        packet = getattr(torch.ops.aten, name, None)
        if packet is None:
            continue
        for overload in packet.overloads():
            qualified = f"aten::{name}" + ("" if overload == "default" else f".{overload}")
            dump = torch._C._dispatch_dump(qualified)
            if marker in dump:
                return True
    return False


# ---------------------------------------------------------------------------
# Both sides, compared.


def compare(reference: dict, ours: dict) -> dict:
    ref, got = reference["records"], ours["records"]
    kinds = Counter()
    mismatches = []
    for key in sorted(set(ref) | set(got)):
        kind = "error_input" if "|error_input|" in key else key.rsplit("|", 1)[1]
        kinds[kind] += 1
        if ref.get(key) != got.get(key):
            mismatches.append(
                f"{key}: torch {ref.get(key)!r:.300}; generated {got.get(key)!r:.300}"
            )
    graphs = {k: v for k, v in got.items() if "|functionalize_" in k and v[0] == "graph"}
    functionalization = {
        "graphs": len(graphs),
        "graphs_equal_to_torchs": sum(1 for k, v in graphs.items() if ref.get(k) == v),
        # Each with whether torch's own functionalization leaves the same mutation or mismatch.
        "graphs_with_mutating_ops": {
            k: {"ops": list(v[2]), "torch_too": ref.get(k) == v}
            for k, v in sorted(graphs.items())
            if v[2]
        },
        "graphs_replaying_unequal": {
            k: {"torch_too": ref.get(k) == v} for k, v in sorted(graphs.items()) if not v[3]
        },
    }
    errors_equal = sum(
        1 for k, v in ref.items() if "|error_input|" in k and v == got.get(k) and v[0] == "error"
    )
    return {
        "opinfos": reference["opinfos"],
        "opinfos_served_by_library": ours["served"],
        "records": len(ref),
        "by_kind": dict(sorted(kinds.items())),
        "error_inputs_raising_equal": errors_equal,
        "functionalization": functionalization,
        "mismatches": len(mismatches),
        "mismatch_list": mismatches,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--library", help="the generated library to load (the second run)")
    parser.add_argument("--ops", default="all", help="`all`, or comma-separated op roots")
    parser.add_argument("--ops_file", help="an op selection file (aten_ops.txt)")
    parser.add_argument("--max_samples", type=int, default=3, help="per OpInfo and dtype")
    parser.add_argument(
        "--served_marker",
        default="aten_generated_codegen/",
        help="a part of the generated files' paths, as the dispatcher names them",
    )
    parser.add_argument("--json", help="write the counts and mismatches here")
    parser.add_argument("--write", action="store_true", help="append to conformance/RESULTS.md")
    parser.add_argument("--side", help=argparse.SUPPRESS)  # internal: run one side
    parser.add_argument("--side_out", help=argparse.SUPPRESS)
    add_python_option(parser)
    args = parser.parse_args()
    run_under(args.python)
    roots = roots_of(args.ops, args.ops_file)
    if args.side:
        lib = args.library if args.side == "ours" else None
        side = run_side(roots, args.max_samples, lib, args.served_marker)
        Path(args.side_out).write_bytes(pickle.dumps(side))
        return 0
    if not args.library or not Path(args.library).is_file():
        parser.error(f"--library: no such file: {args.library}")
    start = time.monotonic()
    sides = {}
    with tempfile.TemporaryDirectory() as tmp:
        for side in ("reference", "ours"):
            out = Path(tmp) / f"{side}.pickle"
            cmd = [sys.executable, __file__, f"--side={side}", f"--side_out={out}"]
            cmd += [f"--library={args.library}", f"--ops={args.ops}"]
            cmd += [f"--max_samples={args.max_samples}", f"--served_marker={args.served_marker}"]
            cmd += [f"--ops_file={args.ops_file}"] if args.ops_file else []
            subprocess.run(cmd, check=True)
            sides[side] = pickle.loads(out.read_bytes())
    result = compare(sides["reference"], sides["ours"])
    result["seconds"] = round(time.monotonic() - start)
    for line in result["mismatch_list"]:
        print(line)
    print(json.dumps({k: v for k, v in result.items() if k != "mismatch_list"}, indent=1))
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=1))
    if args.write:
        _write(args, result)
    print("RESULT ok" if not result["mismatches"] else "RESULT mismatches")
    return 0 if not result["mismatches"] else 1


def _write(args, result: dict) -> None:
    selection = f"--ops_file={args.ops_file}" if args.ops_file else f"--ops={args.ops}"
    counts = {k: v for k, v in result.items() if k != "mismatch_list"}
    append_result(
        "OpInfo forward, meta and error inputs",
        f"{interpreter()} conformance/opinfo_forward.py --library={args.library} {selection} "
        f"--max_samples={args.max_samples} --write",
        [f"- Counts: `{json.dumps(counts)}`"]
        + [f"- mismatch: {m}" for m in result["mismatch_list"]],
    )


if __name__ == "__main__":
    sys.exit(main())
