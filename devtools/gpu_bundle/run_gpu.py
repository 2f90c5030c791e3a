"""The GPU run of a rules_aten GPU bundle (`./dev gpu-bundle`): loads the bundle's two libraries
into torch and checks them on a GPU against torch's own kernels.

    python3 run_gpu.py --json SUMMARY.json [--max-samples N] [--dtypes LIST|all]
                       [--ops LIST] [--budget-s S] [--device cuda|cpu]

Standalone: Python 3.11+ and torch only (numpy, which torch's OpInfo samples import, too; when
`expecttest` is missing, a stand-in for its TestCase is installed, as op_db only subclasses it).
It reads manifest.json beside itself (written by devtools/gpu_bundle/make_gpu_bundle.py) and:

a. checks every file's sha256 and the torch version against the manifest, loads both libraries
   (torch.ops.load_library) and checks, in torch._C._dispatch_dump, that each (CUDA key, aten op)
   the aten library registers is now served by its generated file, and that the example's op has
   its generated CUDA and Autograd kernels;
b. with a GPU: runs PyTorch's OpInfo samples (op_db) of the selected ops on device="cuda", once in
   a process without the libraries (torch's kernels) and once in one with the aten library loaded
   (a loaded library cannot be unloaded): function, in-place and out= variants, and gradients
   where the OpInfo supports autograd. The RNG is reseeded before every call. Results are compared
   bit for bit, and else with torch.testing.assert_close's tolerances (counted apart). The
   mismatching records are run again by torch alone, twice, on memory filled with two other
   bytes: an output that changes with it is one torch leaves unwritten (the RNG state that the
   attention kernels return without dropout), compared as equal and listed apart;
c. runs the example's custom op (cudaops::mul_add_scalar) on CPU against a plain torch
   expression with gradcheck, and with a GPU on CUDA against its CPU kernel, with gradcheck; and
   the stable example's demo (stable_demo.py, in a process of its own) on its library, built
   against another torch release: values, opcheck, torch.compile, and with a GPU its CUDA
   kernel, which must have run;
d. prints the counts and `RESULT ok` or `RESULT mismatches`, writes the summary to --json.

`--device cpu` runs b. on the CPU instead (the CPU-side registrations against torch's): a check of
the kit itself where there is no GPU.

Exit status: 0 all equal; 1 a mismatch (or a check of a. or c. failed); 2 a bad bundle or
argument; 77 no GPU (torch.cuda.is_available() is False) after all that needs none passed.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import io
import json
import os
import subprocess
import sys
import tempfile
import time
import types
import warnings
from pathlib import Path

EXIT_MISMATCH, EXIT_BAD_INPUT, EXIT_NO_GPU = 1, 2, 77
SEED = 20261126
HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))  # opinfo_records.py, bundled beside this script
from opinfo_records import (  # noqa: E402
    compare,
    differing_leaves,
    error_of,
    record,
)

# The values of these ops are whatever the allocator returned: compared without them.
UNINITIALIZED = frozenset(
    {"empty", "empty_like", "new_empty", "empty_strided", "new_empty_strided", "empty_permuted"}
)
# --dtypes' default: one of each kind, so that a run fits a short lease of a GPU machine.
DEFAULT_DTYPES = ("float32", "float64", "bfloat16", "complex64", "int64", "bool")


class BundleError(Exception):
    """A bad bundle or argument: printed as one line, exit 2."""


def log(message: str) -> None:
    print(f"run_gpu: {message}", file=sys.stderr, flush=True)


# ---------------------------------------------------------------------------
# The bundle: manifest, files, torch version, libraries.


def read_manifest(bundle: Path) -> dict:
    path = bundle / "manifest.json"
    try:
        manifest = json.loads(path.read_text())
    except (OSError, ValueError) as e:
        raise BundleError(f"no readable manifest.json in {bundle}: {e}") from None
    for name, entry in sorted(manifest.get("files", {}).items()):
        data = (bundle / name).read_bytes() if (bundle / name).is_file() else None
        if data is None:
            raise BundleError(f"{bundle / name}: missing (the manifest lists it)")
        if hashlib.sha256(data).hexdigest() != entry["sha256"]:
            raise BundleError(f"{bundle / name}: sha256 differs from the manifest's")
    return manifest


def check_torch(manifest: dict) -> None:
    import torch

    if torch.__version__ != manifest["torch"]:
        raise BundleError(
            f"the bundle was built against torch {manifest['torch']}, this is torch "
            f"{torch.__version__} ({sys.executable}): its libraries would not load"
        )


def load_quietly(path: Path) -> int:
    """torch.ops.load_library; the C++ "Overriding a previously registered kernel" warnings go
    to file descriptor 2 past sys.stderr, so they are caught there and counted instead."""
    import torch

    sys.stderr.flush()
    saved = os.dup(2)
    with tempfile.TemporaryFile("w+") as err:
        os.dup2(err.fileno(), 2)
        try:
            torch.ops.load_library(str(path))
        finally:
            os.dup2(saved, 2)
            os.close(saved)
        err.seek(0)
        return err.read().count("Overriding a previously registered kernel")


def kernel_files(op: str) -> dict[str, str]:
    """{dispatch key: the file its kernel was registered at} of torch._C._dispatch_dump(op)."""
    import torch

    found = {}
    for line in torch._C._dispatch_dump(op).splitlines():
        key, sep, rest = line.partition(": registered at ")
        if sep:
            found[key.removesuffix("[alias]")] = rest.split(" :: ")[0]
    return found


def check_dispatch(manifest: dict) -> dict:
    """Which of the aten library's (CUDA key, op) registrations, and the example's kernels, the
    dispatcher now takes from the generated files."""
    markers = manifest["markers"]
    not_served = []
    for key, op in manifest["cuda_registrations"]:
        where = kernel_files(f"aten::{op}").get(key)
        if where is None or markers["aten_cuda"] not in where:
            not_served.append([key, op, where])
    tables = kernel_files(manifest["example_op"])
    autograd = {k: v for k, v in tables.items() if k.startswith("Autograd")}
    return {
        "cuda_registrations": len(manifest["cuda_registrations"]),
        "served": len(manifest["cuda_registrations"]) - len(not_served),
        "not_served": not_served,
        "example_cuda_generated": markers["example_cuda"] in tables.get("CUDA", ""),
        "example_autograd_generated": bool(autograd)
        and all(markers["example_autograd"] in v for v in autograd.values()),
        "example_dispatch": tables,
    }


# ---------------------------------------------------------------------------
# c. The example's custom op.


def example_checks(op_name: str, cuda: bool) -> dict[str, bool]:
    import torch

    namespace, name = op_name.split("::")
    op = getattr(getattr(torch.ops, namespace), name)
    gen = torch.Generator().manual_seed(SEED)
    x = torch.randn(5, 3, dtype=torch.float64, generator=gen).requires_grad_()
    y = torch.randn(5, 3, dtype=torch.float64, generator=gen).requires_grad_()
    checks = {
        "cpu_forward": torch.equal(op(x, y, 0.5), x * y + 0.5),
        "cpu_gradcheck": torch.autograd.gradcheck(
            lambda a, b: op(a, b, 0.5), (x, y), raise_exception=False
        ),
    }
    if not cuda:
        return checks
    xc, yc = (t.detach().cuda().requires_grad_() for t in (x, y))
    out = op(xc, yc, 0.5)
    checks["cuda_forward_vs_cpu_kernel"] = torch.allclose(out.cpu(), op(x, y, 0.5))
    checks["cuda_float32_vs_expression"] = torch.allclose(
        op(xc.float(), yc.float(), 2.0).cpu(), (x * y + 2.0).float(), atol=1e-6
    )
    grads_cuda = torch.autograd.grad(out.sum(), (xc, yc))
    grads_cpu = torch.autograd.grad(op(x, y, 0.5).sum(), (x, y))
    checks["cuda_grads_vs_cpu"] = all(
        torch.allclose(a.cpu(), b) for a, b in zip(grads_cuda, grads_cpu, strict=True)
    )
    checks["cuda_gradcheck"] = torch.autograd.gradcheck(
        lambda a, b: op(a, b, 0.5), (xc, yc), raise_exception=False
    )
    empty = torch.empty(0, 4, dtype=torch.float32, device="cuda")
    checks["cuda_empty_input"] = op(empty, empty, 1.0).shape == (0, 4)
    return checks


def stable_example(manifest: dict) -> dict:
    """The stable example's demo (examples/stable_ops/demo.py) on its library, in a process of
    its own: its checks, and what its CUDA half did ("ran" with a GPU)."""
    proc = subprocess.run(
        [
            sys.executable,
            str(HERE / manifest["stable_demo"]),
            str(HERE / manifest["stable_library"]),
            str(HERE / manifest["stable_registrations"]),
        ],
        capture_output=True,
        text=True,
    )
    lines = proc.stdout.strip().splitlines()
    try:
        report = json.loads(lines[-1])
    except (IndexError, ValueError):
        return {
            "checks": {"demo_ran": False},
            "details": {"log": (proc.stdout + proc.stderr)[-2000:]},
        }
    report["details"]["built_with"] = manifest["stable_built_with"]
    return report


# ---------------------------------------------------------------------------
# The OpInfo selection.


def import_op_db() -> tuple[list, bool]:
    """op_db, and whether a stand-in for `expecttest` was installed: torch's test helpers import
    it at module level (its TestCase is their base class), and a torch install need not have
    it; OpInfos never use it."""
    import unittest

    stubbed = False
    try:
        import expecttest  # noqa: F401
    except ImportError:
        stub = types.ModuleType("expecttest")
        stub.TestCase = unittest.TestCase
        stub.ACCEPT = False
        sys.modules["expecttest"] = stub
        stubbed = True
    with quiet():
        from torch.testing._internal.common_methods_invocations import op_db
    return list(op_db), stubbed


def names_of(op) -> set[str]:
    """The aten op roots an OpInfo may call: its aten name, and the last part of its name
    (`nn.functional.gelu` calls aten::gelu)."""
    return {(op.aten_name or op.name).replace(".", "_"), op.name.split(".")[-1]}


def opinfo_key(op) -> str:
    return f"{op.name}.{op.variant_test_name}" if op.variant_test_name else op.name


def chosen_opinfos(op_db: list, roots: set[str]) -> list:
    return [op for op in op_db if names_of(op) & roots and op.supported_dtypes("cuda")]


def cuda_roots() -> set[str]:
    """Op roots of the installed torch's native_functions.yaml with a CUDA kernel: a `CUDA` key
    in some overload's dispatch, or a `ufunc_inner_loop` (torch generates its CPU and CUDA
    kernels from the ufunc loops)."""
    import importlib.util

    import yaml

    spec = importlib.util.find_spec("torchgen")
    path = Path(spec.origin).parent / "packaged" / "ATen" / "native" / "native_functions.yaml"
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    roots = set()
    for entry in yaml.load(path.read_text(), Loader=loader):
        keys = {k.strip() for key in (entry.get("dispatch") or {}) for k in key.split(",")}
        if "CUDA" in keys or entry.get("ufunc_inner_loop"):
            roots.add(root_of(entry["func"].split("(")[0].split(".")[0]))
    return roots


def root_of(name: str) -> str:
    """`add` for add and add_; `and` for __and__ and __iand__ (torchgen's base name)."""
    if name.startswith("__") and name.endswith("__"):
        name = name[2:-2]
        return name[1:] if name.startswith("i") and name[1:] in _INPLACE_DUNDERS else name
    return name.removesuffix("_")


_INPLACE_DUNDERS = frozenset({"and", "or", "xor", "lshift", "rshift", "add", "sub", "mul", "div"})


def select(spec: str) -> dict:
    """The bundle's op selection: `auto` (every CUDA root with an OpInfo) or comma-separated
    roots, each of which must have both."""
    import torch

    if not torch.version.cuda:
        raise BundleError(
            f"torch {torch.__version__} at {sys.executable} is a CPU build: the bundle needs a "
            "CUDA build (the GPU machines have 2.11.0+cu130)"
        )
    op_db, stubbed = import_op_db()
    roots = cuda_roots()
    covered = set().union(*(names_of(op) & roots for op in chosen_opinfos(op_db, roots)))
    if spec == "auto":
        wanted = covered
    else:
        wanted = {w.strip() for w in spec.split(",") if w.strip()}
        if not wanted:
            raise BundleError("--ops: the selection is empty")
        bad = sorted(wanted - covered)
        if bad:
            raise BundleError(
                f"--ops: {', '.join(bad)}: not an op root of torch {torch.__version__} with a "
                "CUDA kernel and an OpInfo on cuda"
            )
    opinfos = [opinfo_key(op) for op in chosen_opinfos(op_db, wanted)]
    return {
        "torch": torch.__version__,
        "torch_cuda": torch.version.cuda,
        "ops": sorted(wanted),
        "opinfos": opinfos,
        "expecttest_stubbed": stubbed,
    }


# ---------------------------------------------------------------------------
# b. One side: every sample run, every result recorded (tensors moved to the CPU).


@contextlib.contextmanager
def quiet():
    with warnings.catch_warnings(), contextlib.redirect_stderr(io.StringIO()):
        warnings.simplefilter("ignore")
        yield


def clone_sample(sample):
    import torch

    def copy(x):
        return x.detach().clone() if isinstance(x, torch.Tensor) else x

    return sample.transform(copy)


def synchronize(device: str) -> None:
    """Waits for the device's kernels, so that an asynchronous error is the call's own."""
    import torch

    if device == "cuda":
        torch.cuda.synchronize()


def call(fn, sample, *, device: str, with_values: bool, out=None):
    """(record, result) of fn on a sample; a raised error is a result too."""
    import torch

    torch.manual_seed(SEED)
    try:
        with quiet():
            kwargs = dict(sample.kwargs) if out is None else {**sample.kwargs, "out": out}
            result = fn(sample.input, *sample.args, **kwargs)
            synchronize(device)
    except Exception as e:  # noqa: BLE001 - a kernel's error is a result to compare
        return error_of(e), None
    return record(result, with_values), result


def out_like(result):
    import torch

    if isinstance(result, torch.Tensor) and result.layout == torch.strided:
        return torch.empty(0, dtype=result.dtype, device=result.device)
    if isinstance(result, tuple) and result and all(isinstance(r, torch.Tensor) for r in result):
        return tuple(torch.empty(0, dtype=r.dtype, device=r.device) for r in result)
    return None


def gradients(op, sample, device: str, with_values: bool):
    """The sample's output and the gradients of its inputs that require grad, for a cotangent
    drawn from a seeded CPU generator."""
    import torch
    from torch.utils._pytree import tree_flatten

    torch.manual_seed(SEED)
    try:
        with quiet():
            result = op(sample.input, *sample.args, **sample.kwargs)
            outs = [
                t
                for t in tree_flatten(result)[0]
                if isinstance(t, torch.Tensor) and t.requires_grad
            ]
            leaves = tree_flatten((sample.input, sample.args, sample.kwargs))[0]
            ins = [t for t in leaves if isinstance(t, torch.Tensor) and t.requires_grad]
            if not outs or not ins:
                return ("no_grad",)
            gen = torch.Generator().manual_seed(SEED)
            cots = [torch.randn(o.shape, dtype=o.dtype, generator=gen).to(o.device) for o in outs]
            grads = torch.autograd.grad(outs, ins, cots, allow_unused=True)
            synchronize(device)
    except Exception as e:  # noqa: BLE001
        return error_of(e)
    return ("grad", record(result, with_values), tuple(record(g) for g in grads))


def run_side(
    keys: list[str], dtypes: set[str] | None, max_samples: int, budget_s: float, device: str
) -> dict:
    """Records of the OpInfos named by keys, in order, until budget_s has passed (0: no limit)."""
    import torch

    op_db, _ = import_op_db()
    by_key = {opinfo_key(op): op for op in op_db}
    records: dict[str, object] = {}
    done: list[str] = []
    start = time.monotonic()
    for n, key in enumerate(keys):
        if budget_s and time.monotonic() - start > budget_s:
            break
        op = by_key[key]
        values = op.name not in UNINITIALIZED
        for dtype in sorted(op.supported_dtypes(device), key=str):
            if dtypes is not None and str(dtype).removeprefix("torch.") not in dtypes:
                continue
            torch.manual_seed(SEED)
            try:
                with quiet():
                    samples = list(op.sample_inputs(device, dtype))[:max_samples]
            except Exception as e:  # noqa: BLE001
                records[f"{key}|{dtype}|samples"] = error_of(e)
                continue
            for i, sample in enumerate(samples):
                rec, result = call(op, clone_sample(sample), device=device, with_values=values)
                records[f"{key}|{dtype}|{i}|function"] = rec
                if op.inplace_variant is not None:
                    s = clone_sample(sample)
                    rec, got = call(op.inplace_variant, s, device=device, with_values=values)
                    records[f"{key}|{dtype}|{i}|inplace"] = (rec, got is s.input)
                out = out_like(result) if op.supports_out else None
                if out is not None:
                    rec, got = call(
                        op, clone_sample(sample), device=device, with_values=values, out=out
                    )
                    records[f"{key}|{dtype}|{i}|out"] = rec
        records.update(grad_records(op, key, values, max_samples, device))
        done.append(key)
        if n % 25 == 24:
            log(f"{n + 1} of {len(keys)} OpInfos in {time.monotonic() - start:.0f} s")
    return {"done": done, "records": records, "seconds": round(time.monotonic() - start, 1)}


def grad_records(op, key: str, values: bool, max_samples: int, device: str) -> dict[str, object]:
    import torch

    if not op.supports_autograd:
        return {}
    backward = op.supported_backward_dtypes(device)
    dtype = next((d for d in (torch.float64, torch.float32) if d in backward), None)
    if dtype is None:
        return {}
    torch.manual_seed(SEED)
    try:
        with quiet():
            samples = list(op.sample_inputs(device, dtype, requires_grad=True))[:max_samples]
    except Exception as e:  # noqa: BLE001
        return {f"{key}|{dtype}|grad_samples": error_of(e)}
    return {
        f"{key}|{dtype}|{i}|grad": gradients(op, sample, device, values)
        for i, sample in enumerate(samples)
    }


# ---------------------------------------------------------------------------
# c. The mismatching records run again by torch alone, twice, on memory filled with two other
# bytes: an output that changes with the memory is one torch leaves unwritten (the RNG state that
# the attention kernels return without dropout, say), and is no result to compare.

POISONS = (0x5A, 0xA5)


def poison_allocator(device: str, byte: int) -> None:
    """Hands the allocator memory filled with `byte`, so that the next allocations are likely to
    reuse it. On CUDA the caching allocator's free blocks are released first, then whole
    segments of its small pool (blocks up to 1 MiB, carved from 2 MiB segments) and blocks of
    the large one are filled and freed: an allocation finds no free block but poisoned ones. On
    the CPU it is malloc's choice."""
    import torch

    blocks = []
    if device == "cuda":
        torch.cuda.empty_cache()
        blocks += [torch.full((512,), byte, dtype=torch.uint8, device=device) for _ in range(8192)]
    blocks += [
        torch.full((1 << n,), byte, dtype=torch.uint8, device=device) for n in range(4, 25, 2)
    ]
    synchronize(device)
    del blocks


def sample_of(op, dtype, index: int, device: str, requires_grad: bool):
    import torch

    torch.manual_seed(SEED)
    with quiet():
        samples = list(op.sample_inputs(device, dtype, requires_grad=requires_grad))
    return samples[index]


def rerun(op, dtype, index: int, kind: str, device: str):
    """The record `kind` of sample `index`, as run_side made it, made again."""
    if kind == "grad":
        return gradients(op, sample_of(op, dtype, index, device, True), device, True)
    sample = sample_of(op, dtype, index, device, False)
    if kind == "inplace":
        s = clone_sample(sample)
        rec, got = call(op.inplace_variant, s, device=device, with_values=True)
        return (rec, got is s.input)
    rec, result = call(op, clone_sample(sample), device=device, with_values=True)
    if kind == "out":
        rec, _ = call(
            op, clone_sample(sample), device=device, with_values=True, out=out_like(result)
        )
    return rec


def unwritten_leaves(keys: list[str], device: str) -> dict[str, list[tuple]]:
    """{record key: the paths of its leaves that differ between two runs on poisoned memory}."""
    import torch

    op_db, _ = import_op_db()
    by_key = {opinfo_key(op): op for op in op_db}
    found = {}
    for key in keys:
        opinfo, dtype_name, index, kind = key.rsplit("|", 3)
        dtype = getattr(torch, dtype_name.removeprefix("torch."))
        runs = []
        for byte in POISONS:
            poison_allocator(device, byte)
            runs.append(rerun(by_key[opinfo], dtype, int(index), kind, device))
        differ = differing_leaves(*runs)
        if differ:
            found[key] = differ
    return found


# ---------------------------------------------------------------------------
# Both sides compared.


def run_sides(args, manifest: dict, keys: list[str], work: Path) -> dict:
    """The reference side (no library) first, within --budget-s; then the generated side over
    the OpInfos the reference got through."""
    import torch

    sides = {}
    for side in ("reference", "generated"):
        keys_file, out = work / f"{side}.keys.json", work / f"{side}.pt"
        keys_file.write_text(json.dumps(keys))
        cmd = [sys.executable, __file__, "--side", side, "--side-out", str(out)]
        cmd += ["--side-keys", str(keys_file), "--max-samples", str(args.max_samples)]
        cmd += ["--dtypes", args.dtypes, "--device", args.device]
        cmd += ["--budget-s", str(args.budget_s if side == "reference" else 0)]
        log(f"{side} side: {len(keys)} OpInfos")
        proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        if proc.returncode != 0:
            return {"failed_side": side, "returncode": proc.returncode, "log": proc.stdout[-4000:]}
        sides[side] = torch.load(out, weights_only=False)
        keys = sides[side]["done"]
    result = compare(sides["reference"], sides["generated"])
    if result["mismatches"]:
        # Run again by torch alone: which of the mismatching outputs torch leaves unwritten.
        mismatching = [line.split(": ", 1)[0] for line in result["mismatch_list"]]
        keys_file, out = work / "recheck.keys.json", work / "recheck.json"
        keys_file.write_text(json.dumps(mismatching))
        cmd = [sys.executable, __file__, "--side", "recheck", "--side-out", str(out)]
        cmd += ["--side-keys", str(keys_file), "--device", args.device]
        log(f"recheck: {len(mismatching)} mismatching records run again by torch alone")
        proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        if proc.returncode != 0:
            return {
                "failed_side": "recheck",
                "returncode": proc.returncode,
                "log": proc.stdout[-4000:],
            }
        unwritten = {k: [tuple(p) for p in v] for k, v in json.loads(out.read_text()).items()}
        result = compare(sides["reference"], sides["generated"], unwritten)
    result["opinfos_run"] = len(keys)
    result["seconds"] = {side: sides[side]["seconds"] for side in sides}
    return result


# ---------------------------------------------------------------------------


class OneLineParser(argparse.ArgumentParser):
    """A bad argument is one line, as every other error of the script (no usage block)."""

    def error(self, message: str):
        raise BundleError(message)


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = OneLineParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", help="write the summary here (required for a run)")
    parser.add_argument("--max-samples", type=int, default=2, help="per OpInfo and dtype")
    parser.add_argument(
        "--dtypes",
        default=",".join(DEFAULT_DTYPES),
        help="comma-separated dtypes (float32,...) to run, or `all` (default: %(default)s)",
    )
    parser.add_argument("--ops", help="run only these of the bundle's op roots (comma-separated)")
    parser.add_argument(
        "--budget-s",
        type=float,
        default=150,
        help="stop starting OpInfos on the reference side after this many seconds (0: never)",
    )
    parser.add_argument(
        "--device",
        choices=("cuda", "cpu"),
        default="cuda",
        help="where to run the OpInfo samples: cpu checks the kit itself on a machine without a "
        "GPU (the CPU-side registrations against torch's; the example's CUDA half is not run)",
    )
    # The bundler's op selection, run with the interpreter the bundle is built against.
    parser.add_argument("--select", help=argparse.SUPPRESS)
    # One side of the OpInfo run, in a child process.
    parser.add_argument(
        "--side", choices=("reference", "generated", "recheck"), help=argparse.SUPPRESS
    )
    parser.add_argument("--side-out", help=argparse.SUPPRESS)
    parser.add_argument("--side-keys", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.max_samples < 1:
        parser.error("--max-samples must be at least 1")
    if not (args.select or args.side or args.json):
        parser.error("--json PATH is required: where to write the summary")
    return args


def dtype_filter(spec: str) -> set[str] | None:
    if spec == "all":
        return None
    import torch

    names = {d.strip() for d in spec.split(",") if d.strip()}
    bad = sorted(n for n in names if not isinstance(getattr(torch, n, None), torch.dtype))
    if not names:
        raise BundleError("--dtypes: empty: name dtypes (float32,int64) or `all`")
    if bad:
        raise BundleError(f"--dtypes: not a torch dtype: {', '.join(bad)}")
    return names


def main(argv: list[str]) -> int:
    args = parse_args(argv)
    if args.select:
        print(json.dumps(select(args.select)))
        return 0
    if args.side:
        import torch

        manifest = json.loads((HERE / "manifest.json").read_text())
        if args.side == "generated":
            load_quietly(HERE / manifest["aten_library"])
        keys = json.loads(Path(args.side_keys).read_text())
        if args.side == "recheck":
            found = unwritten_leaves(keys, args.device)
            Path(args.side_out).write_text(json.dumps(found))
            return 0
        dtypes = dtype_filter(args.dtypes)
        side = run_side(keys, dtypes, args.max_samples, args.budget_s, args.device)
        torch.save(side, args.side_out)
        return 0
    return run(args)


def run(args: argparse.Namespace) -> int:
    summary_path = Path(args.json)
    summary: dict = {"bundle": str(HERE)}

    def write(status: str) -> None:
        summary["status"] = status
        summary_path.parent.mkdir(parents=True, exist_ok=True)
        summary_path.write_text(json.dumps(summary, indent=1, sort_keys=True) + "\n")

    manifest = read_manifest(HERE)
    dtypes = dtype_filter(args.dtypes)
    check_torch(manifest)
    import torch

    summary.update(torch=torch.__version__, python=sys.version.split()[0], ops=len(manifest["ops"]))
    summary["overriding_warnings"] = load_quietly(HERE / manifest["aten_library"])
    load_quietly(HERE / manifest["example_library"])
    dispatch = check_dispatch(manifest)
    summary["dispatch"] = dispatch
    print(
        f"dispatch: {dispatch['served']} of {dispatch['cuda_registrations']} CUDA-key "
        f"registrations of the aten library served by it; example CUDA kernel generated: "
        f"{dispatch['example_cuda_generated']}, Autograd: {dispatch['example_autograd_generated']}"
    )
    gpu = torch.cuda.is_available()
    summary["example"] = example_checks(manifest["example_op"], cuda=False)
    summary["stable_example"] = stable_example(manifest)
    roots = set(manifest["ops"])
    if args.ops:
        wanted = {w.strip() for w in args.ops.split(",") if w.strip()}
        if not wanted or wanted - roots:
            raise BundleError(f"--ops: not in the bundle: {', '.join(sorted(wanted - roots))}")
        roots = wanted
    op_db, summary["expecttest_stubbed"] = import_op_db()
    keys = [opinfo_key(op) for op in chosen_opinfos(op_db, roots)]
    summary["opinfos_selected"] = len(keys)
    summary["dtypes"] = sorted(dtypes) if dtypes else "all"
    print(f"OpInfos selected: {len(keys)} for {len(roots)} op roots")
    failed = failures(summary)
    if not gpu and args.device == "cuda":
        write("no_gpu")
        print(f"example on CPU: {summary['example']}")
        print(
            "no GPU: torch.cuda.is_available() is False; both libraries loaded and their dispatch "
            "tables checked, the example's CPU reference computed; no CUDA kernel was run"
        )
        if failed:
            print("RESULT mismatches")
            return EXIT_MISMATCH
        return EXIT_NO_GPU
    summary["device"] = torch.cuda.get_device_name() if args.device == "cuda" else "cpu"
    write("running")
    summary["example"] = example_checks(manifest["example_op"], cuda=gpu)
    print(f"example: {summary['example']}")
    stable = summary["stable_example"]
    print(f"stable example (built with torch {manifest['stable_built_with']}): {stable}")
    write("running")
    with tempfile.TemporaryDirectory() as work:
        summary["opinfo"] = run_sides(args, manifest, keys, Path(work))
    opinfo = summary["opinfo"]
    if "failed_side" in opinfo:
        print(f"the {opinfo['failed_side']} side failed:\n{opinfo['log']}")
    else:
        for line in opinfo["mismatch_list"]:
            print(f"mismatch: {line}")
        counts = {k: v for k, v in opinfo.items() if k != "mismatch_list"}
        print(f"OpInfo samples: {json.dumps(counts)}")
    failed = failures(summary)
    write("ok" if not failed else "mismatches")
    print("RESULT ok" if not failed else "RESULT mismatches")
    return EXIT_MISMATCH if failed else 0


def failures(summary: dict) -> list[str]:
    dispatch = summary["dispatch"]
    found = [f"not served: {k} {op}" for k, op, _ in dispatch["not_served"]]
    if not dispatch["example_cuda_generated"] or not dispatch["example_autograd_generated"]:
        found.append("the example's kernels are not the generated ones")
    found += [f"example check failed: {k}" for k, ok in summary["example"].items() if not ok]
    stable = summary["stable_example"]
    found += [f"stable example check failed: {k}" for k, ok in stable["checks"].items() if not ok]
    if summary.get("device", "cpu") != "cpu" and stable["details"].get("cuda") != "ran":
        found.append(
            f"the stable example's CUDA kernel did not run: {stable['details'].get('cuda')}"
        )
    opinfo = summary.get("opinfo", {})
    if "failed_side" in opinfo or opinfo.get("mismatches"):
        found.append("OpInfo samples differ")
    summary["failures"] = found
    return found


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1:]))
    except BundleError as e:
        print(f"run_gpu: error: {e}", file=sys.stderr)
        sys.exit(EXIT_BAD_INPUT)
