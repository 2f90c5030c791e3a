"""The stable call API (`atengen stable --call_api_dir`) checked two ways:

    .venv/bin/python conformance/stable_call_api.py --coverage [--write]
    .venv/bin/python conformance/stable_call_api.py [--ops=all|ROOTS | --tiny] [--target=2.11]
        [--max_samples=2] [--shards=4] [--workdir=DIR] [--json=FILE] [--write]
        [--python ~/.cache/rules_aten/venv-torch-2.11.0/bin/python]

`--coverage`: for the native_functions.yaml of every torch release found (the dev venv, the
release venvs under ~/.cache/rules_aten, the unpacked 2.12.1 wheel), the overloads the call API
covers when generated for that release as target and for target 2.11, and the reasons it leaves
the others out, by type (the `--report` of `atengen stable`).

Otherwise, values on PyTorch's OpInfo samples (CPU), against the running torch (`--python`
re-runs the script under another venv's). For every OpInfo of op_db whose names (its aten name,
the last part of its name) are aten roots with a call function, its samples over float32,
float64, int64 and bool (the first `--max_samples` per dtype) are matched to the aten overload
the sample's arguments select: `torch._C._jit_resolve_packet("aten::<name>", input, *args,
**kwargs)`, the dispatcher's own overload resolution of a Python call. A sample whose overload
has a call function is checked; the others are counted (matching no overload of that name: the
OpInfo's Python function takes other arguments than the aten op; an overload the call API
leaves out, mostly for a Scalar). Per overload checked, stable_call_build.py builds a
`stablecall::<name>_<overload>` custom op whose stable CPU kernel forwards to the call function;
then each sample is called as `torch.ops.stablecall.<name>_<overload>(input, *args, **kwargs)`
and `torch.ops.aten.<name>.<overload>(...)`, each on a fresh copy of the sample with the RNG
reseeded. Results are equal bit for bit (dtype, shape, strides, bytes), else close
(`torch.testing.assert_close`), else a mismatch; an error raised by both is equal when its type
is. Prints the counts, every mismatch and `RESULT ok` or `RESULT mismatches` (exit 1).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import re
import sys
import tempfile
import time
import warnings
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "conformance"))
from shared import (  # noqa: E402
    add_python_option,
    append_result,
    interpreter,
    load_library_quietly,
    run_under,
)
from stable_call_build import (  # noqa: E402
    CallFunction,
    build_library,
    read_call_api,
    run_atengen,
)

SEED = 20261127
DTYPES = ("float32", "float64", "int64", "bool")
# Their values are whatever the allocator returned: compared by dtype, shape and strides only,
# as opinfo_forward.py does.
UNINITIALIZED = frozenset(
    {"empty", "empty_like", "new_empty", "empty_strided", "new_empty_strided", "empty_permuted"}
)
# A handful of overloads with distinct stable types (view, Tensor[], int[], optional int[],
# bool, double, a tuple result, a random op, Scalars through a typed shim and a fill), for CI:
# one shard, well under a minute.
TINY_OPS = "neg,narrow,cat,sum,permute,max,clamp,bernoulli,split,add,mul,full_like"
VENVS_DIR = Path.home() / ".cache" / "rules_aten"
# Release -> where its native_functions.yaml and tags.yaml are, relative to VENVS_DIR or REPO.
YAML_SUBDIR = Path("torchgen/packaged/ATen/native")
RELEASE_DIRS = {
    "2.11.0": "venv-torch-2.11.0/lib/python3*/site-packages",
    "2.12.1": "releases/2.12.1",
    "2.13.0": "REPO/.venv/lib/python3*/site-packages",
    "2.14.1": "venv-torch-cu130/lib/python3*/site-packages",
    "2.15.0": "venv-torch-2.15.0/lib/python3*/site-packages",
}
_SUMMARY = re.compile(r"stable call API: (\d+) of (\d+) aten overloads covered")
_REASON = re.compile(r"^\s+(\d+)\s+type '([^']+)': (.+)$")


@contextlib.contextmanager
def quiet():
    with warnings.catch_warnings(), contextlib.redirect_stderr(io.StringIO()):
        warnings.simplefilter("ignore")
        yield


# ---------------------------------------------------------------------------
# Coverage per release.


def release_yaml_dirs() -> dict[str, Path]:
    found = {}
    for release, pattern in RELEASE_DIRS.items():
        base = REPO if pattern.startswith("REPO/") else VENVS_DIR
        for d in sorted(base.glob(pattern.removeprefix("REPO/"))):
            if (d / YAML_SUBDIR / "native_functions.yaml").is_file():
                found[release] = d / YAML_SUBDIR
    return found


def coverage(yaml_dir: Path, target: str, tmp: Path) -> dict:
    report = tmp / f"report_{target}.txt"
    r = run_atengen(
        f"--op_yaml={yaml_dir / 'native_functions.yaml'}",
        f"--tags_yaml={yaml_dir / 'tags.yaml'}",
        f"--target={target}",
        f"--call_api_dir={tmp / f'api_{target}'}",
        f"--report={report}",
    )
    text = report.read_text()
    covered, total = (int(x) for x in _SUMMARY.search(text).groups())
    # Reasons by type only: "the ABI has no C++ type" and "torch 2.13 carries it" alike.
    reasons = Counter()
    for line in text.split("\nleft out:\n")[0].splitlines():
        m = _REASON.match(line)
        if m:
            reasons[m[2]] += int(m[1])
    return {
        "covered": covered,
        "total": total,
        "reasons": dict(reasons.most_common()),
        # atengen warns for a target newer than the releases whose conversions it knows.
        "newer_than_known": "is newer than the releases" in r.stderr,
    }


def coverage_table() -> tuple[list[str], dict]:
    rows = {}
    with tempfile.TemporaryDirectory() as tmp:
        for release, yaml_dir in release_yaml_dirs().items():
            own = ".".join(release.split(".")[:2])
            for target in dict.fromkeys((own, "2.11")):
                d = Path(tmp) / f"{release}_{target}"
                d.mkdir()
                rows[f"{release} target {target}"] = coverage(yaml_dir, target, d)
    lines = [
        "| YAML of | --target | covered | of | % | left out, by type (top 5) |",
        "|---|---|---:|---:|---:|---|",
    ]
    for key, r in rows.items():
        release, _, target = key.partition(" target ")
        top = ", ".join(f"{t} {n}" for t, n in list(r["reasons"].items())[:5])
        share = 100 * r["covered"] / r["total"]
        mark = "*" if r["newer_than_known"] else ""
        lines.append(
            f"| {release} | {target}{mark} | {r['covered']} | {r['total']} | {share:.1f} | {top} |"
        )
    if any(r["newer_than_known"] for r in rows.values()):
        lines.append(
            "\n\\* newer than the releases whose conversions atengen knows: generated with "
            "those of the newest it knows (atengen warns; tool/atengen/stable/releases.py)"
        )
    missing = sorted(set(RELEASE_DIRS) - {k.split()[0] for k in rows})
    if missing:
        lines.append(f"\n(no YAML found for {', '.join(missing)})")
    return lines, rows


# ---------------------------------------------------------------------------
# Values on OpInfo samples.


def collect_samples(api: dict[str, CallFunction], roots: set[str] | None, max_samples: int):
    """(overload -> [(OpInfo name, dtype, sample)], counts of the samples not checked, the aten
    names some OpInfo names)."""
    import torch
    from opinfo_grads import names_of  # imports torch: here, not for --coverage
    from torch.testing._internal.common_methods_invocations import op_db

    names = {f.name for f in api.values()}
    chosen: dict[str, list] = {}
    skipped = Counter()
    named: set[str] = set()
    for op in op_db:
        candidates = sorted(n for n in names_of(op) if n in names)
        if roots is not None:
            candidates = [n for n in candidates if n in roots]
        if not candidates:
            continue
        named.update(candidates)
        supported = op.supported_dtypes("cpu")
        for dtype in (getattr(torch, d) for d in DTYPES):
            if dtype not in supported:
                continue
            torch.manual_seed(SEED)
            try:
                with quiet():
                    samples = list(op.sample_inputs("cpu", dtype))[:max_samples]
            except Exception:  # noqa: BLE001 - an OpInfo that cannot make samples is counted
                skipped["OpInfo sample_inputs raised"] += 1
                continue
            for sample in samples:
                key = _resolve(api, candidates, sample)
                if key in api:
                    chosen.setdefault(key, []).append((op.name, str(dtype), sample))
                else:
                    skipped[key] += 1
    return chosen, skipped, named


def _resolve(api: dict[str, CallFunction], candidates: list[str], sample) -> str:
    """The aten op (`narrow.Tensor`) the sample's arguments select, or why none is checked."""
    import torch

    left_out = None
    for name in candidates:
        try:
            with quiet():
                overload = torch._C._jit_resolve_packet(
                    f"aten::{name}", sample.input, *sample.args, **sample.kwargs
                )
        except Exception:  # noqa: BLE001 - no overload of this name takes the arguments
            continue
        key = name if overload == "default" else f"{name}.{overload}"
        if key in api:
            return key
        left_out = left_out or key
    if left_out:
        return "selects an overload the call API leaves out"
    return "selects no overload of the aten name"


def clone_sample(sample):
    import torch

    def copy(x):
        return x.detach().clone() if isinstance(x, torch.Tensor) else x

    return sample.transform(copy)


def call(fn, sample, shim_error=None):
    """("value", result) or ("error", exception, torch's message where the shim kept one)."""
    import torch

    torch.manual_seed(SEED)
    try:
        with quiet():
            return ("value", fn(sample.input, *sample.args, **sample.kwargs))
    except Exception as e:  # noqa: BLE001 - an error is a result to compare
        return ("error", e, shim_error() if shim_error else "")


def shim_error_reader(torch_dir: Path):
    """A function returning the message of the last error torch's stable shim caught in this
    thread: the call API's TORCH_ERROR_CODE_CHECK throws only "torch_call_dispatcher(...) API
    call failed at <file>, line <n>", so a mismatch would not say what went wrong."""
    import ctypes

    lib = ctypes.CDLL(str(torch_dir / "lib" / "libtorch_cpu.so"))
    what = getattr(lib, "torch_exception_get_what_without_backtrace", None)
    if what is None:
        return None
    what.restype = ctypes.c_char_p

    def read() -> str:
        message = what()
        return message.decode(errors="replace") if message else ""

    return read


def compare(ours, theirs, uninitialized: bool = False) -> tuple[str, str]:
    """("equal" | "close" | "error_equal" | "metadata_equal" | "mismatch", detail)."""
    if ours[0] == "error" or theirs[0] == "error":
        if ours[0] == theirs[0] and type(ours[1]) is type(theirs[1]):
            return "error_equal", type(ours[1]).__name__
        return "mismatch", f"stablecall {_short(ours)}; aten {_short(theirs)}"
    try:
        verdict = _same(ours[1], theirs[1], uninitialized)
    except AssertionError as e:
        return "mismatch", (str(e).strip().splitlines() or [""])[0][:300]
    except Exception as e:  # noqa: BLE001 - a result the comparison cannot read, reported
        return "mismatch", f"not comparable: {type(e).__name__}: {str(e)[:200]}"
    return verdict, ""


def _short(result) -> str:
    kind, value = result[:2]
    if kind == "error":
        first = (str(value).strip().splitlines() or [""])[0]
        shim = (result[2].strip().splitlines() or [""])[0] if result[2] else ""
        return f"raised {type(value).__name__}: {first[:200]}" + (
            f" (the shim: {shim[:200]})" if shim else ""
        )
    return f"returned {type(value).__name__}"


def _same(a, b, uninitialized: bool = False) -> str:
    """ "equal", "close" or (``uninitialized``) "metadata_equal"; AssertionError saying where
    they differ otherwise."""
    import torch

    if isinstance(a, torch.Tensor) or isinstance(b, torch.Tensor):
        assert isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor), "tensor vs not"
        assert (a.dtype, a.shape, a.layout) == (b.dtype, b.shape, b.layout), (
            f"{a.dtype}{list(a.shape)} {a.layout} vs {b.dtype}{list(b.shape)} {b.layout}"
        )
        if uninitialized:
            assert a.stride() == b.stride(), f"strides {a.stride()} vs {b.stride()}"
            return "metadata_equal"
        if a.layout != torch.strided:  # sparse results: their values, densified
            a, b = a.to_dense(), b.to_dense()
        if a.stride() == b.stride() and _bytes(a) == _bytes(b):
            return "equal"
        torch.testing.assert_close(a, b, equal_nan=True)
        return "close"
    if isinstance(a, list | tuple):
        assert isinstance(b, list | tuple) and len(a) == len(b), f"{a!r:.80} vs {b!r:.80}"
        verdicts = {_same(x, y, uninitialized) for x, y in zip(a, b, strict=True)}
        return next((v for v in ("close", "metadata_equal") if v in verdicts), "equal")
    if isinstance(a, float) and isinstance(b, float) and a != a and b != b:
        return "equal"  # both NaN
    assert type(a) is type(b) and a == b, f"{a!r:.80} vs {b!r:.80}"
    return "equal"


def _bytes(t) -> bytes:
    import torch

    t = t.detach().resolve_conj().resolve_neg()
    flat = torch.empty(t.numel(), dtype=t.dtype)
    flat.copy_(t.reshape(-1))
    return flat.view(torch.uint8).numpy().tobytes() if t.numel() else b""


def scalars_as_floats(f: CallFunction, sample):
    """(the sample with every integer or bool it gives a Scalar argument, and every Scalar it
    leaves to its default, as a float; whether that changed a value's type). The custom op
    forwarding to the call function takes a Scalar as a float (a stable kernel can receive no
    Scalar), so torch's op gets the same float: both sides see the value the call API carries
    (stable/scalar_routes.py)."""
    if not f.scalar_args:
        return sample, False
    from torch.testing._internal.opinfo.core import SampleInput

    def floated(name, value):
        if name in f.scalar_args and isinstance(value, bool | int):
            return float(value), True
        return value, False

    names = f.positional_args
    args, changed = [], False
    for i, value in enumerate(sample.args):
        name = names[i + 1] if i + 1 < len(names) else ""
        value, c = floated(name, value)
        args.append(value)
        changed |= c
    kwargs = {}
    for name, value in sample.kwargs.items():
        kwargs[name], c = floated(name, value)
        changed |= c
    # A Scalar left to its default: the custom op's default is that number as a float.
    given = set(names[: len(sample.args) + 1]) | set(sample.kwargs)
    for name, default in f.scalar_args.items():
        if name not in given and default not in (None, "None"):
            kwargs[name] = float(default)
            changed |= "." not in default
    if not changed:
        return sample, False
    return SampleInput(sample.input, args=tuple(args), kwargs=kwargs), True


def check_values(args) -> dict:
    if args.workdir is None:
        # Removed once the run ends: the library stays mapped after its file is gone.
        with tempfile.TemporaryDirectory(prefix="stable_call_api_") as tmp:
            args.workdir = tmp
            return check_values(args)
    import torch

    start = time.monotonic()
    torch_dir = Path(torch.__file__).parent
    yaml_dir = torch_dir.parent / YAML_SUBDIR
    target = args.target or ".".join(torch.__version__.split(".")[:2])
    roots = set(TINY_OPS.split(",")) if args.tiny else _roots(args.ops)
    workdir = Path(args.workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    api_dir = workdir / "api"
    generated = run_atengen(
        f"--op_yaml={yaml_dir / 'native_functions.yaml'}",
        f"--tags_yaml={yaml_dir / 'tags.yaml'}",
        f"--target={target}",
        f"--call_api_dir={api_dir}",
    )
    api = read_call_api(api_dir)
    chosen, skipped, named = collect_samples(api, roots, args.max_samples)
    functions = [api[k] for k in sorted(chosen)]
    if not functions:
        sys.exit("no OpInfo sample selects an overload of the call API")
    built = time.monotonic()
    lib, refused = build_library(
        functions,
        workdir=workdir,
        api_dir=api_dir,
        tags_yaml=yaml_dir / "tags.yaml",
        target=target,
        torch_dir=torch_dir,
        shards=1 if args.tiny else args.shards,
        jobs=args.jobs,
    )
    build_seconds = time.monotonic() - built
    load_library_quietly(str(lib))
    shim_error = shim_error_reader(torch_dir)
    verdicts = Counter()
    mismatches = []
    scalars_converted = 0
    for op, reason in refused.items():
        skipped[f"overload refused as a custom op by atengen: {reason}"] += len(chosen.pop(op))
    for key in sorted(chosen):
        f = api[key]
        ours_fn = getattr(torch.ops.stablecall, f.custom_name).default
        theirs_fn = getattr(getattr(torch.ops.aten, f.name), f.overload)
        for opinfo, dtype, sample in chosen[key]:
            sample, converted = scalars_as_floats(f, sample)
            scalars_converted += converted
            ours = call(ours_fn, clone_sample(sample), shim_error)
            theirs = call(theirs_fn, clone_sample(sample))
            verdict, detail = compare(ours, theirs, f.name in UNINITIALIZED)
            verdicts[verdict] += 1
            if verdict == "mismatch":
                if f.mixed_returns:
                    detail += " [returns of mixed types: see CallFunction.mixed_returns]"
                mismatches.append(f"aten::{key} ({opinfo}, {dtype}): {detail}")
    return {
        "torch": torch.__version__,
        "target": target,
        "call_api": generated.stdout.strip(),
        # Calls torch_call_dispatcher cannot return (CallFunction.mixed_returns), checked or not.
        "call_api_overloads_with_mixed_returns": sum(f.mixed_returns for f in api.values()),
        "overloads_checked": len(chosen),
        "roots_checked": len({api[k].root for k in chosen}),
        # Call functions of the names OpInfos name that no sample of theirs reaches (out=,
        # in-place and other overloads the function variant does not call).
        "overloads_of_opinfo_names_not_reached": sum(
            1 for k, f in api.items() if f.name in named and k not in chosen
        ),
        "samples_checked": sum(verdicts.values()),
        # Samples checked with an integer or bool Scalar given to both ops as a float.
        "samples_with_scalars_as_floats": scalars_converted,
        "scalar_overloads_checked": sorted(k for k in chosen if api[k].scalar_args),
        "verdicts": dict(sorted(verdicts.items())),
        "samples_not_checked": dict(skipped.most_common()),
        "mismatches": len(mismatches),
        "build_seconds": round(build_seconds),
        "seconds": round(time.monotonic() - start),
        "mismatch_list": mismatches,
    }


def _roots(ops: str) -> set[str] | None:
    return None if ops == "all" else {x.strip() for x in ops.split(",") if x.strip()}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--coverage", action="store_true", help="the per-release table only")
    parser.add_argument("--ops", default="all", help="`all`, or comma-separated aten names")
    parser.add_argument("--tiny", action="store_true", help=f"only {TINY_OPS} (CI)")
    parser.add_argument("--target", help="the stable ABI target (default: the running torch's)")
    parser.add_argument("--max_samples", type=int, default=2, help="per OpInfo and dtype")
    parser.add_argument("--shards", type=int, default=4, help="kernel and registration sources")
    parser.add_argument("--jobs", type=int, default=2, help="g++ processes at once")
    parser.add_argument("--workdir", help="keep the generated sources and library here")
    parser.add_argument("--json", help="write the counts and mismatches here")
    parser.add_argument("--write", action="store_true", help="append to conformance/RESULTS.md")
    add_python_option(parser)
    args = parser.parse_args()
    run_under(args.python)
    if args.coverage:
        lines, rows = coverage_table()
        print("\n".join(lines))
        if args.json:
            Path(args.json).write_text(json.dumps(rows, indent=1))
        if args.write:
            append_result(
                "Stable call API coverage per release",
                f"{interpreter()} conformance/stable_call_api.py --coverage --write",
                lines,
                torch_version="(not imported: atengen over each release's YAML)",
            )
        return 0
    result = check_values(args)
    for line in result["mismatch_list"]:
        print(line)
    print(json.dumps({k: v for k, v in result.items() if k != "mismatch_list"}, indent=1))
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=1))
    if args.write:
        selection = "--tiny" if args.tiny else f"--ops={args.ops}"
        counts = {k: v for k, v in result.items() if k != "mismatch_list"}
        append_result(
            "Stable call API on OpInfo samples",
            f"{interpreter()} conformance/stable_call_api.py {selection} "
            f"--target={result['target']} --max_samples={args.max_samples} --write",
            [f"- Counts: `{json.dumps(counts)}`"]
            + [f"- mismatch: {m}" for m in result["mismatch_list"]],
        )
    ok = result["mismatches"] == 0 and result["samples_checked"] > 0
    print("RESULT ok" if ok else "RESULT mismatches")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
