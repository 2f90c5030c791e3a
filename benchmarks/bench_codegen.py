"""P1: full codegen wall time, atengen vs torchgen, side by side on the same YAML.

    .venv/bin/python benchmarks/bench_codegen.py [--reps 3] [--write] [--tiny]

Each rep runs, in fresh processes and alternating:
  torchgen (all):     python -m torchgen.gen -s <packaged ATen> -d OUT --aoti-install-dir AOTI
                      --per-operator-headers
  torchgen (sources): the same with --generate sources (registration and other .cpp files only;
                      headers are what the wheel already ships)
  atengen:            python -m atengen generate --shards=auto --output_dir=OUT
                      --cuda_output_dir=OUT_CUDA (every op, every key the installed torch can
                      serve, Functionalize included, sharded as aten_codegen and
                      //:aten_generated shard by default)
Reported: the median wall and CPU time (user + system, every process of the run) of each, and
atengen's ratios. The target (<= 0.1x, wall) is judged against torchgen (sources), the
like-for-like run: atengen writes no headers. atengen shares its keys out between processes
when the machine has more than one CPU (`generate --jobs`, automatic); torchgen runs in one. So
the CPU ratio is printed too: the work done, whatever the wall clock owes to the second CPU.
`--tiny` (what CI runs): one rep, and both sides read a copy of torch's YAML cut down to the few
op roots of TINY_OPS (torchgen has no op selection); nothing written to RESULTS.md.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from common import (
    REPO,
    TINY_HELP,
    append_results,
    child_env,
    package_dir,
    print_ratio,
    reject_tiny_write,
    tiny_aten,
)

# Structured, in-place, out= and plain kernels: every kind of registration code, small input.
TINY_OPS = ["abs", "mul", "_prelu_kernel", "_prelu_kernel_backward"]


def timed(cmd: list[str], env: dict | None = None) -> tuple[float, float]:
    """(wall seconds, CPU seconds: user + system of the command and of every process it ran)."""
    # The previous run's files are flushed first, so that no run pays for another's writeback
    # (torchgen's full run writes ~7,000 files just before the next one starts).
    os.sync()
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(cmd, check=True, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def count_files(path: str) -> int:
    return sum(len(files) for _, _, files in os.walk(path))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--write", action="store_true", help="append the result to RESULTS.md")
    parser.add_argument("--tiny", action="store_true", help=TINY_HELP)
    args = parser.parse_args()
    reject_tiny_write(parser, args)
    reps = 1 if args.tiny else args.reps
    aten = package_dir("torchgen") / "packaged" / "ATen"
    env = child_env(PYTHONPATH=str(REPO / "tool"))
    times: dict[str, list[float]] = {"torchgen (all)": [], "torchgen (sources)": [], "atengen": []}
    cpu_times: dict[str, list[float]] = {name: [] for name in times}
    files: dict[str, int] = {}
    for rep in range(reps):
        with tempfile.TemporaryDirectory() as tmp:
            yaml_flags = []
            if args.tiny:
                aten = tiny_aten(Path(tmp) / "aten", TINY_OPS)
                native = aten / "native"
                yaml_flags = [
                    f"--op_yaml={native}/native_functions.yaml",
                    f"--tags_yaml={native}/tags.yaml",
                ]
            runs = {
                "torchgen (all)": [
                    sys.executable, "-m", "torchgen.gen", "-s", str(aten), "-d", f"{tmp}/tg",
                    "--aoti-install-dir", f"{tmp}/aoti", "--per-operator-headers",
                ],
                "torchgen (sources)": [
                    sys.executable, "-m", "torchgen.gen", "-s", str(aten), "-d", f"{tmp}/tgs",
                    "--aoti-install-dir", f"{tmp}/aotis", "--per-operator-headers",
                    "--generate", "sources",
                ],
                "atengen": [
                    sys.executable, "-m", "atengen", "generate", "--shards=auto",
                    f"--output_dir={tmp}/ag", f"--cuda_output_dir={tmp}/ag_cuda", *yaml_flags,
                ],
            }  # fmt: skip
            for name, cmd in runs.items():
                t, cpu = timed(cmd, env)
                times[name].append(t)
                cpu_times[name].append(cpu)
                print(f"rep {rep + 1}/{reps} {name:20s} {t:7.2f}s wall {cpu:7.2f}s CPU", flush=True)
            files = {
                "torchgen (all)": count_files(f"{tmp}/tg") + count_files(f"{tmp}/aoti"),
                "torchgen (sources)": count_files(f"{tmp}/tgs"),
                "atengen": count_files(f"{tmp}/ag") + count_files(f"{tmp}/ag_cuda"),
            }
            shutil.rmtree(tmp, ignore_errors=True)
    med = {k: statistics.median(v) for k, v in times.items()}
    med_cpu = {k: statistics.median(v) for k, v in cpu_times.items()}
    lines = [
        "| run | median wall (s) | files written | median CPU (s) |",
        "|---|---|---|---|",
    ]
    lines += [f"| {k} | {med[k]:.2f} | {files[k]} | {med_cpu[k]:.2f} |" for k in med]
    ratio_all = med["atengen"] / med["torchgen (all)"]
    ratio_src = med["atengen"] / med["torchgen (sources)"]
    cpu_ratio_src = med_cpu["atengen"] / med_cpu["torchgen (sources)"]
    summary = (
        f"atengen / torchgen (all): {ratio_all:.3f}x; atengen / torchgen (sources): "
        f"{ratio_src:.3f}x (target <= 0.1x against sources: "
        f"{'met' if ratio_src <= 0.1 else 'NOT met'})"
    )
    # atengen forks a second process on a machine with two or more CPUs (`--jobs`), torchgen
    # runs in one: the CPU ratio says what the wall ratio owes to that.
    cpu_summary = f"CPU seconds, atengen / torchgen (sources): {cpu_ratio_src:.3f}x"
    print("\n".join(lines))
    print(summary)
    print(cpu_summary)
    print_ratio("P1", ratio_src)
    print_ratio("P1_cpu", cpu_ratio_src)
    if args.write:
        append_results(
            "P1 full codegen",
            "bench_codegen.py",
            [*lines, "", summary, cpu_summary],
            note=f"median of {reps} fresh-process reps",
        )


if __name__ == "__main__":
    main()
