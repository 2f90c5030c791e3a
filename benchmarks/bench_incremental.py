"""P2/P3/P4: compile CPU seconds and peak RSS, atengen vs torchgen, on the same YAML.

    .venv/bin/python benchmarks/bench_incremental.py [--op _prelu_kernel] [--keys CPU,Meta,...]
        [--shards auto] [-j 2] [--skip-full | --skip-edits] [--cuda_dir /usr/local/cuda] [--write] [--tiny]

Both generators run on a copy of torch's packaged YAML. torchgen writes its own headers too,
so both sides compile against torchgen's freshly generated ATen/ops headers (put first on the
include path, before the wheel's), with the same g++ flags.

- P2 (one-op edit): rename the CPU kernel of --op, regenerate both, and compile only the
  registration sources whose bytes changed (torchgen: its Register<Key>*.cpp for the compared
  keys; atengen: its shards). Then the same for adding an op (a copy of --op under a new name).
  atengen's side twice: one source per operator and key (--shards=0; RATIO P2_rename, P2_add)
  and --shards (default auto, the default of aten_codegen() and //:aten_generated;
  P2_rename_buckets, P2_add_buckets).
- P3 (full compile): compile every registration source of the compared keys on both sides
  (atengen with --shards). Skipped with --skip-full; --skip-edits runs only this (and P4).
- P4: the peak RSS of each compile action (GNU time).

CUDA keys in --keys (`--keys CPU,...,CUDA`, run with a CUDA wheel's interpreter:
`~/.cache/rules_aten/venv-torch-cu130/bin/python benchmarks/bench_incremental.py`) are compared
too: atengen writes them to its CUDA tree (`--cuda_output_dir`), and both sides then compile with
the include path of the CUDA toolkit at --cuda_dir and of the nvidia-* wheels beside torch.

atengen's sources compile as aten_codegen compiles them (rules/private/rules/pch.bzl): each starts
with the GCC precompiled header it names (the light one of Tensor.h and the runtime, or the full
one that adds torch/library.h), both built once per set of flags. P3 counts those builds (their
CPU seconds, and their RSS in P4); P2 does not: an edit of the op YAML leaves the headers' inputs
(the wheel's headers) unchanged, so Bazel keeps them.
`-Werror=invalid-pch`: a header GCC cannot use fails the run instead of being parsed silently.

`--tiny` (what CI runs): both generators read a copy of torch's YAML cut down to --op's
entries, only the CPU key is compared, only the rename edit (adding an op touches every one of
torchgen's CPU shards: five compiles) and no full compile, so one compile per side; nothing is
written. With that reduced YAML torchgen's regenerated umbrella headers lack every
other op, so only its ATen/ops/ headers go before the wheel's on the include path, and
both sides compile with per-operator headers (TINY_DEFINES).
"""

from __future__ import annotations

import argparse
import hashlib
import os
import re
import shutil
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from common import (
    CUDA_KEYS,
    REPO,
    TINY_DEFINES,
    TINY_HELP,
    PrecompiledHeaders,
    child_env,
    cuda_include_flags,
    ops_include_root,
    package_dir,
    print_ratio,
    reject_tiny_write,
    report_table,
    tiny_aten,
    wheel_facts_file,
)

KEYS = "CPU,Meta,CompositeExplicitAutograd,CompositeExplicitAutogradNonFunctional,CompositeImplicitAutograd"


def run_torchgen(src: Path, out: Path) -> Path:
    """Generates into out/include/ATen so that <ATen/ops/x.h> resolves to torchgen's headers."""
    aten = out / "include" / "ATen"
    subprocess.run(
        [
            sys.executable, "-m", "torchgen.gen", "-s", str(src), "-d", str(aten),
            "--aoti-install-dir", str(out / "aoti"), "--per-operator-headers",
        ],
        check=True, stdout=subprocess.DEVNULL,
    )  # fmt: skip
    return aten


def run_atengen(
    src: Path, out: Path, keys: str, shards: int | str, facts: Path | None = None
) -> Path:
    """Generates into out/cpu and, for CUDA keys, out/cuda; with `facts` (the wheel's YAML
    only: an edited op's renamed kernel is one the wheel does not export), what the wheel does
    not export is left out, as under Bazel."""
    env = child_env(PYTHONPATH=str(REPO / "tool"))
    subprocess.run(
        [
            sys.executable, "-m", "atengen", "generate",
            f"--op_yaml={src}/native/native_functions.yaml", f"--tags_yaml={src}/native/tags.yaml",
            f"--keys={keys}", f"--shards={shards}", f"--output_dir={out}/cpu",
            f"--cuda_output_dir={out}/cuda",
            *([f"--torch_facts={facts}"] if facts else []),
        ],
        check=True, env=env,
    )  # fmt: skip
    return out


def compile_flags(
    tg_aten: Path,
    tiny_tmp: Path | None,
    names: tuple[str, ...] = ("ops",),
    cuda: list[str] | None = None,
) -> list[str]:
    """The g++ line of both sides: torchgen's regenerated headers first, then the wheel's.

    For a tiny run (`tiny_tmp`: where to put the include root) only torchgen's `names` under
    ATen/ go first, and sources use per-operator headers."""
    torch_inc = package_dir("torch") / "include"
    inc, defines = tg_aten.parent, []
    if tiny_tmp is not None:
        inc = ops_include_root(tg_aten, tiny_tmp / f"inc_{tg_aten.parent.parent.name}", names)
        defines = TINY_DEFINES
    return [
        "-std=c++20", "-fPIC", "-D_GLIBCXX_USE_CXX11_ABI=1", *defines,
        f"-I{inc}", f"-I{torch_inc}", f"-I{torch_inc}/torch/csrc/api/include",
        f"-I{REPO}/rules/runtime", *(cuda or []),
    ]  # fmt: skip


def digests(d: Path, pattern: str) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in d.glob(pattern)}


def atengen_sources(out: Path) -> dict[str, Path]:
    """atengen's sources by their path under out (its CPU and CUDA trees share file names)."""
    return {str(p.relative_to(out)): p for p in sorted(out.rglob("*.cpp"))}


def changed_sources(before: Path, after: Path) -> list[Path]:
    """atengen's sources under `after` whose bytes differ from (or are not in) `before`."""
    old = atengen_sources(before)
    return [
        p
        for name, p in atengen_sources(after).items()
        if name not in old or old[name].read_bytes() != p.read_bytes()
    ]


def torchgen_sources(aten: Path, keys: list[str]) -> list[Path]:
    rx = re.compile(rf"^Register({'|'.join(keys)})(_\d+)?\.cpp$")
    return sorted(p for p in aten.iterdir() if rx.match(p.name))


def compile_one(src: Path, flags: list[str]) -> tuple[str, float, float, bool, str]:
    with tempfile.NamedTemporaryFile(suffix=".o") as obj, tempfile.NamedTemporaryFile() as tf:
        cmd = ["/usr/bin/time", "-f", "%U %S %M", "-o", tf.name, "g++", *flags, "-c", str(src)]
        r = subprocess.run([*cmd, "-o", obj.name], capture_output=True, text=True)
        user, system, rss = Path(tf.name).read_text().split()[-3:]
    err = next((x for x in r.stderr.splitlines() if ": error:" in x), "")
    return src.name, float(user) + float(system), int(rss) / 1024, r.returncode == 0, err


def compile_set(files: list[Path], flags: list[str], jobs: int, label: str) -> dict:
    with ThreadPoolExecutor(jobs) as pool:
        results = list(pool.map(lambda f: compile_one(f, flags), files))
    for name, cpu, rss, ok, err in results:
        print(f"  {label}: {name} {cpu:.1f} CPU s {rss:.0f} MB {'ok' if ok else 'FAIL ' + err}")
    return {
        "files": len(results),
        "cpu_s": sum(r[1] for r in results),
        "max_rss_mb": max((r[2] for r in results), default=0.0),
        "failed": [r[0] for r in results if not r[3]],
    }


def edit_yaml(src: Path, op: str, mode: str) -> str:
    """Rename the first CPU kernel of `op`, or append a copy of `op` under a new name."""
    path = src / "native" / "native_functions.yaml"
    text = path.read_text()
    entries = text.split("\n- func: ")
    for i, e in enumerate(entries):
        if e.startswith(f"{op}(") and re.search(r"^    CPU[^:\n]*: (\w+)", e, re.M):
            kernel = re.search(r"^    CPU[^:\n]*: (\w+)", e, re.M).group(1)
            if mode == "rename":
                entries[i] = e.replace(f": {kernel}", f": {kernel}_renamed", 1)
                path.write_text("\n- func: ".join(entries))
                return f"renamed CPU kernel {kernel} of {op}"
            body = e.split("\n\n", 1)[0]
            new = re.sub(rf"^{op}\(", f"{op}_bench_copy(", body)
            path.write_text(text.rstrip("\n") + "\n\n- func: " + new + "\n")
            return f"added {op}_bench_copy (a copy of {op})"
    raise SystemExit(f"no entry for {op} with a CPU kernel")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--op", default="_prelu_kernel")
    p.add_argument("--keys", default=KEYS)
    p.add_argument("--shards", default="auto", help="auto (aten_codegen's default) or N")
    p.add_argument("-j", "--jobs", type=int, default=2)
    p.add_argument("--skip-full", action="store_true")
    p.add_argument("--skip-edits", action="store_true", help="no P2: only the full compile")
    p.add_argument("--write", action="store_true")
    p.add_argument("--cuda_dir", default=os.environ.get("CUDA_HOME", "/usr/local/cuda"))
    p.add_argument("--tiny", action="store_true", help=TINY_HELP)
    args = p.parse_args()
    reject_tiny_write(p, args)
    if args.skip_edits and (args.skip_full or args.tiny):
        p.error("--skip-edits leaves only the full compile: not with --skip-full or --tiny")
    if args.tiny:
        args.keys, args.skip_full = "CPU", True
    keys = args.keys.split(",")
    packaged = package_dir("torchgen") / "packaged" / "ATen"
    report: list[str] = []
    failed: tuple[list[str], list[str]] = ([], [])
    with tempfile.TemporaryDirectory() as tmp_s:
        tmp = Path(tmp_s)

        def source(dst: Path) -> Path:
            return tiny_aten(dst, [args.op]) if args.tiny else shutil.copytree(packaged, dst)

        base_src = source(tmp / "src0")
        tg0 = run_torchgen(base_src, tmp / "tg0")
        # P2 with one source per operator and key and, but for --tiny, with --shards (the
        # default sharding of aten_codegen() and //:aten_generated).
        p2_shards = () if args.skip_edits else (0,) if args.tiny else (0, args.shards)
        ag0 = {n: run_atengen(base_src, tmp / f"ag0_{n}", args.keys, n) for n in p2_shards}

        cuda = cuda_include_flags(tmp, args.cuda_dir) if CUDA_KEYS & set(keys) else []

        def flags(tg_aten: Path) -> list[str]:
            return compile_flags(tg_aten, tmp if args.tiny else None, cuda=cuda)

        pch = PrecompiledHeaders(tmp)

        modes = () if args.skip_edits else ("rename",) if args.tiny else ("rename", "add")
        for mode in modes:
            src = source(tmp / f"src_{mode}")
            what = edit_yaml(src, args.op, mode)
            tg1 = run_torchgen(src, tmp / f"tg_{mode}")
            tg_before = digests(tg0, "Register*.cpp")
            tg_changed = [
                f
                for f in torchgen_sources(tg1, keys)
                if tg_before.get(f.name) != digests(tg1, f.name).get(f.name)
            ]
            print(f"P2 {what}: torchgen changed {len(tg_changed)} sources")
            tg = compile_set(tg_changed, flags(tg1), args.jobs, "torchgen")
            for n in p2_shards:
                ag1 = run_atengen(src, tmp / f"ag_{mode}_{n}", args.keys, n)
                ag_changed = changed_sources(ag0[n], ag1)
                print(f"P2 {what}, --shards={n}: atengen changed {len(ag_changed)} sources")
                ag = compile_set(ag_changed, pch.flags(flags(tg1)), args.jobs, "atengen")
                ratio = ag["cpu_s"] / tg["cpu_s"] if tg["cpu_s"] else float("nan")
                report.append(
                    f"| P2: {what} (atengen --shards={n}) | {tg['files']} files, "
                    f"{tg['cpu_s']:.0f} CPU s | {ag['files']} files, {ag['cpu_s']:.0f} CPU s | "
                    f"{ratio:.3f}x (target <= 0.1x) |"
                )
                print_ratio(f"P2_{mode}" if n == 0 else f"P2_{mode}_buckets", ratio)
        if not args.skip_full:
            agb = run_atengen(
                base_src, tmp / "ag_full", args.keys, args.shards, wheel_facts_file(tmp)
            )
            tg = compile_set(torchgen_sources(tg0, keys), flags(tg0), args.jobs, "torchgen")
            ag_all = list(atengen_sources(agb).values())
            ag = compile_set(ag_all, pch.flags(flags(tg0)), args.jobs, "atengen")
            _, pch_cpu, pch_rss = pch.build(flags(tg0))
            ag["cpu_s"] += pch_cpu
            ag["max_rss_mb"] = p4_mb = max(ag["max_rss_mb"], pch_rss)
            ratio = p3_ratio = ag["cpu_s"] / tg["cpu_s"]
            report.append(
                f"| P3: full compile of {args.keys} | {tg['files']} files, {tg['cpu_s']:.0f} CPU s | "
                f"{ag['files']} files (--shards={args.shards}) + precompiled headers, "
                f"{ag['cpu_s']:.0f} CPU s | "
                f"{ratio:.2f}x (target <= 1.2x) |"
            )
            report.append(
                f"| P4: peak RSS of one compile | {tg['max_rss_mb']:.0f} MB | {ag['max_rss_mb']:.0f} MB "
                f"| target <= 1024 MB |"
            )
            failed = (tg["failed"], ag["failed"])
    report_table(report, failed, "P2/P3/P4 compile cost", "bench_incremental.py", args.write)
    # After the table: P3 and P4 come from the full compile, which --skip-full leaves out.
    if not args.skip_full:
        print_ratio("P3", p3_ratio)
        print_ratio("P4", p4_mb)


if __name__ == "__main__":
    main()
