"""Generated Autograd kernels for aten itself, checked against torch's own on PyTorch's OpInfo
samples.

    .venv/bin/python conformance/aten_autograd.py [--ops=opinfo|all] [--max_samples=N]
        [--limit=N [--limit_inplace=N] [--limit_view=N] [--also=A,B]] [--shards=N] [--jobs=N]
        [--opinfo_workers=N] [--workdir=DIR] [--json=FILE] [--write]

1. Selection. Every aten function matched to an entry of the wheel's derivatives.yaml
   (functional, in-place, out= and view variants) is offered to the generator on its own. It
   generates a kernel, or refuses with a reason: a formula calls a FunctionsManual helper the
   wheel does not export, or the entry needs something not generated yet. Counted per variant
   and per reason. The kernel is for the Autograd key, or, for an entry with formulas only for
   AutogradNestedTensor, for that key, as torch registers it.
2. Build. The kernels of the chosen ops (`opinfo`: those an OpInfo names; `all`: every one the
   generator takes) are compiled with g++ and linked with --no-undefined against the wheel, so
   an op "links" when the library holds its kernel and loads.
3. OpInfo. Each OpInfo of op_db (and the foreach OpInfo lists) for those ops, float64 samples with requires_grad, through
   its function variant, its in-place variant (on a non-leaf clone) and, for view ops, an
   in-place write through the view (see opinfo_grads.py): outputs and gradients (for seeded
   random grad_outputs) bit for bit, gradcheck (with forward AD where the OpInfo supports it)
   and gradgradcheck, first with torch's kernels, then with the library loaded over them. The
   OpInfos are shared among --opinfo_workers processes.

Prints counts, every mismatch, and `RESULT ok` or `RESULT mismatches`; exits 1 on a mismatch.
`--write` appends the run to conformance/RESULTS.md.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tool"))
sys.path.insert(0, str(REPO / "conformance"))
from shared import append_result, interpreter, load_library_quietly  # noqa: E402

CPP_NAMESPACE = "atengen_aten"


def _packaged() -> Path:
    import torchgen

    return Path(torchgen.__file__).parent / "packaged"


VARIANTS = ("functional", "in-place", "out=", "view", "mutable")


def variant(f) -> str:
    from atengen.model.schema import SchemaKind

    if f.is_view_op:
        return "view"
    return {
        SchemaKind.inplace: "in-place",
        SchemaKind.out: "out=",
        SchemaKind.mutable: "mutable",
    }.get(f.kind, "functional")


def select(model, derivatives) -> tuple[dict[str, str], Counter, Counter]:
    """Every aten function matched to a derivatives entry (functional, in-place, out=, view),
    offered to the generator on its own: the ones it takes (with the key of their kernel, see
    autograd_key), how many of each variant it takes, and why it refuses the others (per
    variant and reason)."""
    from atengen.autograd.emit import AutogradTarget, autograd_files
    from atengen.errors import AtengenError
    from atengen.render.shards import ShardSetting
    from atengen.render.templates import Templates

    taken, generated, refused = {}, Counter(), Counter()
    templates = Templates()
    for fd in derivatives.functions:
        f = fd.func
        if f.namespace != "aten" or not fd.infos:
            continue
        kind, key = variant(f), autograd_key(fd)
        target = AutogradTarget(
            "aten", CPP_NAMESPACE, key, inplace_or_view=False, only={str(f.name)}
        )
        try:
            if autograd_files(model, derivatives, target, ShardSetting(0), templates):
                taken[str(f.name)] = key
                generated[kind] += 1
            else:
                refused[(kind, "no kernel for this variant")] += 1
        except AtengenError as e:
            refused[(kind, _reason(e.message))] += 1
    return taken, generated, refused


def _reason(message: str) -> str:
    helper = re.search(r"(calls \w+\(\)|uses \w+), a (?:helper|name)", message)
    if helper:
        return f"{helper.group(1)} (not exported by the wheel)"
    feature = re.search(r"does not support (.*?) yet", message)
    what = feature.group(1) if feature else message
    return re.sub(r"'[^']*'", "'…'", what)


def autograd_key(fd) -> str:
    """The key a function's kernel is generated for: `Autograd`; for an entry with formulas only
    for other keys (`_test_autograd_multiple_dispatch.ntonly`: AutogradNestedTensor), the first
    of those, as torch registers only those."""
    from atengen.autograd.model import DEFAULT_KEY

    return "Autograd" if DEFAULT_KEY in fd.infos else sorted(fd.infos)[0]


def build(
    model, derivatives, ops: list[str], keys: dict[str, str], workdir: Path, shards: int, jobs: int
) -> Path:
    """The kernels of ops, each for its key in keys (see autograd_key), compiled and linked."""
    import torch

    from atengen.autograd.emit import AutogradTarget, autograd_files
    from atengen.render.output import write_trees
    from atengen.render.shards import ShardSetting
    from atengen.render.templates import Templates

    src = workdir / "generated"
    files, templates = [], Templates()
    for key in sorted({keys[n] for n in ops}):
        only = frozenset(n for n in ops if keys[n] == key)
        target = AutogradTarget("aten", CPP_NAMESPACE, key, inplace_or_view=False, only=only)
        files += autograd_files(
            model, derivatives, target, ShardSetting(shards), templates, "torch's derivatives.yaml"
        )
    write_trees([(str(src), files)])
    torch_dir = Path(torch.__file__).parent
    runtime = REPO / "rules" / "runtime"
    flags = ["-std=c++20", "-fPIC", "-D_GLIBCXX_USE_CXX11_ABI=1"]
    flags += [f"-I{torch_dir / 'include'}", f"-I{runtime}"]

    def compile_one(source: Path) -> Path:
        obj = src / f"{source.stem}.o"
        cmd = ["g++", *flags, "-c", str(source), "-o", str(obj)]
        proc = subprocess.run(cmd, capture_output=True, text=True)
        if proc.returncode:
            raise SystemExit(f"{source}: g++ failed:\n{proc.stderr[-4000:]}")
        return obj

    with ThreadPoolExecutor(max_workers=jobs) as pool:
        # With the torch release guard every generated registration calls first (as Bazel's
        # //rules/runtime links it into each library).
        sources = [*sorted(src.glob("*.cpp")), runtime / "atengen" / "torch_release_guard.cc"]
        objects = list(pool.map(compile_one, sources))
    lib = workdir / "libaten_autograd.so"
    link = [
        "g++",
        "-shared",
        "-o",
        str(lib),
        *map(str, objects),
        f"-L{torch_dir / 'lib'}",
        "-ltorch_cpu",
        "-ltorch",
        "-lc10",
        "-Wl,--no-undefined",
        f"-Wl,-rpath,{torch_dir / 'lib'}",
    ]
    proc = subprocess.run(link, capture_output=True, text=True)
    if proc.returncode:
        raise SystemExit(f"link failed:\n{proc.stderr[-4000:]}")
    return lib


def _dispatch_checks(ops: list[str], keys: dict[str, str]) -> list[str]:
    """Ops whose entry for their key (Autograd, or see autograd_key) in the dispatcher is not
    the generated file's."""
    import torch

    wrong = []
    for name in ops:
        op, _, overload = name.partition(".")
        dump = torch._C._dispatch_dump(f"aten::{op}" + (f".{overload}" if overload else ""))
        key = keys[name]
        entry = f"{key}[alias]:" if key == "Autograd" else f"{key}:"
        active = [ln for ln in dump.splitlines() if ln.startswith(entry)]
        if not active or not re.search(rf"registered at \S*/{key}_\w+\.cpp:", active[0]):
            wrong.append(name)
    return wrong


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--ops", choices=("opinfo", "all"), default="opinfo")
    p.add_argument("--max_samples", type=int, help="samples per OpInfo (default: all)")
    p.add_argument(
        "--limit",
        type=int,
        help="only the first N functional ops an OpInfo names, by name (CI's slice)",
    )
    p.add_argument("--limit_inplace", type=int, default=0, help="with --limit: N in-place ops too")
    p.add_argument("--limit_view", type=int, default=0, help="with --limit: N view ops too")
    p.add_argument("--also", default="", help="with --limit: these ops too (comma-separated)")
    p.add_argument("--shards", type=int, default=4)
    p.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="g++ processes")
    p.add_argument(
        "--opinfo_workers", type=int, default=min(2, os.cpu_count() or 1), help="OpInfo processes"
    )
    p.add_argument("--workdir", type=Path, help="build directory (default: a temporary one)")
    p.add_argument("--json", type=Path, help="also write the counts as JSON here")
    p.add_argument("--write", action="store_true", help="append the run to conformance/RESULTS.md")
    args = p.parse_args(argv)

    import opinfo_grads

    from atengen.autograd.load import load_derivatives
    from atengen.cli.common import autograd_helpers
    from atengen.model.operator_model import load_model

    started = time.monotonic()
    pk = _packaged()
    model = load_model(
        str(pk / "ATen/native/native_functions.yaml"), str(pk / "ATen/native/tags.yaml")
    )
    derivatives = load_derivatives(
        str(pk / "autograd/derivatives.yaml"), model, autograd_helpers(None, None)
    )
    taken, generated, refused = select(model, derivatives)
    kind = {str(f.name): variant(f) for f in model.functions if f.namespace == "aten"}
    opinfos = opinfo_grads.opinfos_for({_root(name) for name in taken})
    roots = set().union(*(opinfo_grads.names_of(op) for op in opinfos))
    chosen = sorted(n for n in taken if _root(n) in roots)
    if args.limit:
        chosen = _ci_slice(chosen, list(taken), kind, opinfos, args)
        opinfos = opinfo_grads.opinfos_for({_root(name) for name in chosen})
    if args.ops == "all":
        chosen = list(taken)
    view_roots = sorted({_root(n) for n in chosen if kind[n] == "view"})

    with tempfile.TemporaryDirectory() as tmp:
        workdir = args.workdir or Path(tmp)
        workdir.mkdir(parents=True, exist_ok=True)
        lib = build(model, derivatives, chosen, taken, workdir, args.shards, args.jobs)
        tally = _opinfo_step(opinfos, lib, view_roots, workdir, args)
        load_library_quietly(str(lib))
        not_ours = _dispatch_checks(chosen, taken)

    tallied = tally.as_dict()
    by_variant = tallied.pop("by_variant")
    counts = {
        "aten_functions_with_derivatives": len(taken) + sum(refused.values()),
        "generated": len(taken),
        **{f"generated_{v}": generated[v] for v in VARIANTS},
        "refused": sum(refused.values()),
        **{f"refused_{v}": sum(n for (k, _), n in refused.items() if k == v) for v in VARIANTS},
        "built_linked_loaded": len(chosen) - len(not_ours),
        **{f"built_{v}": sum(kind[n] == v for n in chosen) for v in VARIANTS},
        **tallied,
        "seconds": round(time.monotonic() - started, 1),
    }
    lines = [f"{k}: {v}" for k, v in counts.items()]
    lines.append("OpInfo samples, by variant:")
    lines += [
        f"  {v}: " + ", ".join(f"{k} {n}" for k, n in c.items()) for v, c in by_variant.items()
    ]
    by_reason = Counter()
    for (_, reason), n in refused.items():
        by_reason[reason] += n
    lines += ["refused, by reason:"] + [
        f"  {n} {r}" for r, n in sorted(by_reason.items(), key=_by_count)
    ]
    lines += ["refused, by variant and reason:"] + [
        f"  {n} {k}: {r}" for (k, r), n in sorted(refused.items(), key=_by_count)
    ]
    lines += ["torch's own kernels fail these samples too:"] + [
        f"  {n} {r}" for r, n in sorted(tally.torch_failures.items(), key=_by_count)
    ]
    mismatches = [f"not served by the generated kernel: {n}" for n in not_ours] + tally.mismatches
    lines += ["mismatches:"] + [f"  {m}" for m in mismatches]
    lines.append(f"generated nodes reached: {' '.join(sorted(tally.nodes_reached))}")
    lines.append("RESULT " + ("mismatches" if mismatches else "ok"))
    print("\n".join(lines))
    if args.json:
        report = {
            **counts,
            "by_variant": by_variant,
            "nodes_reached": sorted(tally.nodes_reached),
            "forward_ad_opinfos": sorted(tally.forward_ad_opinfos),
            "mismatch_list": mismatches,
        }
        args.json.write_text(json.dumps(report, indent=1) + "\n")
    if args.write:
        _append_results(lines, argv if argv is not None else sys.argv[1:])
    return 1 if mismatches else 0


def _ci_slice(
    chosen: list[str], taken: list[str], kind: dict[str, str], opinfos: list, args
) -> list[str]:
    """CI's slice: the first --limit functional ops by name (of chosen, those an OpInfo names),
    then the first --limit_inplace in-place ops whose OpInfos have an in-place variant, the
    first --limit_view view ops, and the --also ones (any that the generator takes)."""
    import opinfo_grads

    with_inplace = set().union(
        *(opinfo_grads.names_of(op) for op in opinfos if opinfo_grads.has_inplace_grad(op))
    )
    functional = [n for n in chosen if kind[n] == "functional"][: args.limit]
    inplace = [n for n in chosen if kind[n] == "in-place" and _root(n) in with_inplace]
    views = [n for n in chosen if kind[n] == "view"]
    also = [n for n in args.also.split(",") if n]
    unknown = sorted(set(also) - set(taken))
    if unknown:
        raise SystemExit(f"--also: not generated: {', '.join(unknown)}")
    return sorted(set(functional + inplace[: args.limit_inplace] + views[: args.limit_view] + also))


def _opinfo_step(opinfos: list, lib: Path, view_roots: list[str], workdir: Path, args):
    """The OpInfo comparison in --opinfo_workers processes, each over every Nth OpInfo."""
    import opinfo_grads

    listed = workdir / "opinfos.json"
    listed.write_text(json.dumps([opinfo_grads.opinfo_key(op) for op in opinfos]) + "\n")
    n = max(1, min(args.opinfo_workers, len(opinfos)))
    procs = []
    for i in range(n):
        cmd = [
            sys.executable,
            str(REPO / "conformance" / "opinfo_grads.py"),
            f"--library={lib}",
            f"--opinfos={listed}",
            f"--shard={i}/{n}",
            f"--view_roots={','.join(view_roots)}",
            f"--json={workdir / f'opinfo_{i}.json'}",
        ]
        if args.max_samples is not None:
            cmd.append(f"--max_samples={args.max_samples}")
        procs.append(subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT))
    tally = opinfo_grads.Tally()
    for i, proc in enumerate(procs):
        output = proc.communicate()[0].decode(errors="replace")
        if proc.returncode:
            raise SystemExit(f"OpInfo worker {i}/{n} failed:\n{output[-4000:]}")
        tally.merge(json.loads((workdir / f"opinfo_{i}.json").read_text()))
    return tally


def _root(name: str) -> str:
    """The name an OpInfo knows an overload by: `add_.Tensor` -> `add` (not `__and__`)."""
    base = name.split(".")[0]
    return base if base.endswith("__") else base.removesuffix("_")


def _by_count(item: tuple) -> tuple:
    return (-item[1], item[0])


def _append_results(lines: list[str], argv: list[str]) -> None:
    append_result(
        "aten Autograd kernels vs torch's",
        f"{interpreter()} conformance/aten_autograd.py {' '.join(argv)}",
        ["```", *lines, "```"],
    )


if __name__ == "__main__":
    sys.exit(main())
