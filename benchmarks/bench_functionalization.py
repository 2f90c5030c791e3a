"""Functionalization compile cost: atengen's Functionalize shards vs torchgen's
RegisterFunctionalization_k.cpp, side by side on the same YAML.

    .venv/bin/python benchmarks/bench_functionalization.py [--shards 16] [-j 2] [--write] [--tiny]

- One-op edit: a new mutating op (`bench_scale_(Tensor(a!) self, Scalar s)` with
  `autogen: bench_scale, bench_scale.out`) is appended to a copy of torch's YAML; both
  generators run again and only the functionalization sources whose bytes changed are compiled.
- Full: every functionalization source of both sides (atengen with --shards buckets).

Both sides compile against torchgen's regenerated headers (its ATen/ops/*.h and
ViewMetaClasses.h first on the include path), with the same g++ flags as bench_incremental.py.
No target is set; the RATIO lines are the two atengen/torchgen CPU ratios.

`--tiny` (what CI runs): both sides read a copy of torch's YAML cut down to TINY_OPS (plus the
new op), only the one-op edit is compiled (no full compile), nothing is written. With that
reduced YAML torchgen's regenerated umbrella headers lack every other op, so only its ATen/ops/
headers go before the wheel's on the include path, and both sides compile with per-operator headers
(TINY_DEFINES).
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
from pathlib import Path

from bench_incremental import compile_flags, compile_set, digests, run_atengen, run_torchgen
from common import (
    TINY_HELP,
    package_dir,
    print_ratio,
    reject_tiny_write,
    report_table,
    tiny_aten,
)

NEW_OP = """
- func: bench_scale_(Tensor(a!) self, Scalar s) -> Tensor(a!)
  dispatch:
    CPU: bench_scale_cpu_
  autogen: bench_scale, bench_scale.out
"""
# A mutating op and a view op next to the new one, so the small YAML still has both kinds.
TINY_OPS = ["abs", "transpose", "transpose_copy"]


def torchgen_functionalization(aten: Path) -> list[Path]:
    return sorted(aten.glob("RegisterFunctionalization_*.cpp"))


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--shards", type=int, default=16)
    p.add_argument("-j", "--jobs", type=int, default=2)
    p.add_argument("--write", action="store_true")
    p.add_argument("--tiny", action="store_true", help=TINY_HELP)
    args = p.parse_args()
    reject_tiny_write(p, args)
    packaged = package_dir("torchgen") / "packaged" / "ATen"
    report: list[str] = []
    failed: tuple[list[str], list[str]] = ([], [])
    with tempfile.TemporaryDirectory() as tmp_s:
        tmp = Path(tmp_s)
        src0, src1 = tmp / "src0", tmp / "src1"
        if args.tiny:
            tiny_aten(src0, TINY_OPS)
            tiny_aten(src1, TINY_OPS, extra=NEW_OP)
        else:
            shutil.copytree(packaged, src0)
            shutil.copytree(packaged, src1)
            yaml1 = src1 / "native" / "native_functions.yaml"
            yaml1.write_text(yaml1.read_text().rstrip("\n") + "\n" + NEW_OP)

        tg0, tg1 = run_torchgen(src0, tmp / "tg0"), run_torchgen(src1, tmp / "tg1")
        # Functionalize is a CPU-side key: its sources are in the CPU-side tree.
        ag0 = run_atengen(src0, tmp / "ag0", "Functionalize", 0) / "cpu"
        ag1 = run_atengen(src1, tmp / "ag1", "Functionalize", 0) / "cpu"

        def flags(tg_aten: Path) -> list[str]:
            # The wheel ships no ViewMetaClasses.h: torchgen's functionalization needs its own.
            return compile_flags(tg_aten, tmp if args.tiny else None, ("ops", "ViewMetaClasses.h"))

        tg_before = digests(tg0, "RegisterFunctionalization_*.cpp")
        tg_changed = [
            f
            for f in torchgen_functionalization(tg1)
            if tg_before.get(f.name) != digests(tg1, f.name)[f.name]
        ]
        ag_before = digests(ag0, "*.cpp")
        ag_changed = [
            f
            for f in sorted(ag1.glob("*.cpp"))
            if ag_before.get(f.name) != digests(ag1, f.name)[f.name]
        ]
        print(f"one-op edit: torchgen changed {len(tg_changed)} sources, atengen {len(ag_changed)}")
        tg = compile_set(tg_changed, flags(tg1), args.jobs, "torchgen")
        ag = compile_set(ag_changed, flags(tg1), args.jobs, "atengen")
        ratio = ag["cpu_s"] / tg["cpu_s"] if tg["cpu_s"] else float("nan")
        report.append(
            f"| add a mutating op (bench_scale_ + autogen) | {tg['files']} files, "
            f"{tg['cpu_s']:.0f} CPU s | {ag['files']} files, {ag['cpu_s']:.0f} CPU s | {ratio:.3f}x |"
        )
        ratios = {"functionalization_edit": ratio}
        if args.tiny:
            failed = (tg["failed"], ag["failed"])
            report_table(report, failed, "", "", write=False)
            print_ratio("functionalization_edit", ratio)
            return

        agb = run_atengen(src0, tmp / "ag_full", "Functionalize", args.shards) / "cpu"
        tg = compile_set(torchgen_functionalization(tg0), flags(tg0), args.jobs, "torchgen")
        ag = compile_set(sorted(agb.glob("*.cpp")), flags(tg0), args.jobs, "atengen")
        report.append(
            f"| full functionalization compile | {tg['files']} files, {tg['cpu_s']:.0f} CPU s, "
            f"peak {tg['max_rss_mb']:.0f} MB | {ag['files']} files (--shards={args.shards}), "
            f"{ag['cpu_s']:.0f} CPU s, peak {ag['max_rss_mb']:.0f} MB | {ag['cpu_s'] / tg['cpu_s']:.2f}x |"
        )
        failed = (tg["failed"], ag["failed"])
        ratios["functionalization_full"] = ag["cpu_s"] / tg["cpu_s"]
    report_table(
        report, failed, "Functionalization compile cost", "bench_functionalization.py", args.write
    )
    for name, value in ratios.items():
        print_ratio(name, value)


if __name__ == "__main__":
    main()
