"""Functionalization compile cost: atengen's Functionalize shards vs torchgen's
RegisterFunctionalization_k.cpp, side by side on the same YAML.

    .venv/bin/python benchmarks/bench_functionalization.py [--shards 16] [-j 2] [--write]

- One-op edit: a new mutating op (`bench_scale_(Tensor(a!) self, Scalar s)` with
  `autogen: bench_scale, bench_scale.out`) is appended to a copy of torch's YAML; both
  generators run again and only the functionalization sources whose bytes changed are compiled.
- Full: every functionalization source of both sides (atengen with --shards buckets).

Both sides compile against torchgen's regenerated headers (its ATen/ops/*.h and
ViewMetaClasses.h first on the include path), with the same g++ flags as bench_incremental.py.
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
from pathlib import Path

from bench_incremental import compile_set, digests, run_atengen, run_torchgen
from common import REPO, package_dir, report_table

NEW_OP = """
- func: bench_scale_(Tensor(a!) self, Scalar s) -> Tensor(a!)
  dispatch:
    CPU: bench_scale_cpu_
  autogen: bench_scale, bench_scale.out
"""


def torchgen_functionalization(aten: Path) -> list[Path]:
    return sorted(aten.glob("RegisterFunctionalization_*.cpp"))


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--shards", type=int, default=16)
    p.add_argument("-j", "--jobs", type=int, default=2)
    p.add_argument("--write", action="store_true")
    args = p.parse_args()
    torch_inc = package_dir("torch") / "include"
    packaged = package_dir("torchgen") / "packaged" / "ATen"
    report: list[str] = []
    failed: tuple[list[str], list[str]] = ([], [])
    with tempfile.TemporaryDirectory() as tmp_s:
        tmp = Path(tmp_s)
        src0, src1 = tmp / "src0", tmp / "src1"
        shutil.copytree(packaged, src0)
        shutil.copytree(packaged, src1)
        yaml1 = src1 / "native" / "native_functions.yaml"
        yaml1.write_text(yaml1.read_text().rstrip("\n") + "\n" + NEW_OP)

        tg0, tg1 = run_torchgen(src0, tmp / "tg0"), run_torchgen(src1, tmp / "tg1")
        ag0 = run_atengen(src0, tmp / "ag0", "Functionalize", 0)
        ag1 = run_atengen(src1, tmp / "ag1", "Functionalize", 0)

        def flags(tg_aten: Path) -> list[str]:
            return [
                "-std=c++20", "-fPIC", "-D_GLIBCXX_USE_CXX11_ABI=1",
                f"-I{tg_aten.parent}", f"-I{torch_inc}", f"-I{torch_inc}/torch/csrc/api/include",
                f"-I{REPO}/rules/runtime",
            ]  # fmt: skip

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

        agb = run_atengen(src0, tmp / "ag_full", "Functionalize", args.shards)
        tg = compile_set(torchgen_functionalization(tg0), flags(tg0), args.jobs, "torchgen")
        ag = compile_set(sorted(agb.glob("*.cpp")), flags(tg0), args.jobs, "atengen")
        report.append(
            f"| full functionalization compile | {tg['files']} files, {tg['cpu_s']:.0f} CPU s, "
            f"peak {tg['max_rss_mb']:.0f} MB | {ag['files']} files (--shards={args.shards}), "
            f"{ag['cpu_s']:.0f} CPU s, peak {ag['max_rss_mb']:.0f} MB | {ag['cpu_s'] / tg['cpu_s']:.2f}x |"
        )
        failed = (tg["failed"], ag["failed"])
    report_table(
        report, failed, "Functionalization compile cost", "bench_functionalization.py", args.write
    )


if __name__ == "__main__":
    main()
