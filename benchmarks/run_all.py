#!/usr/bin/env python3
"""Runs every P-benchmark in turn and tabulates each target's measured ratio.

    .venv/bin/python benchmarks/run_all.py [--only bench_model,bench_backend] [--tiny]
        [--write] [--results benchmarks/RESULTS.md]

Each script runs as `python benchmarks/<script>.py` with its default settings (plus `--tiny`
when given), one after the other so that they do not compete for the cores; a full run takes
hours on 2 cores, most of it in bench_incremental's and bench_functionalization's compiles.
The numbers come from the `RATIO <name> <value>` lines the scripts print next to their own
tables. `--write` appends one dated section (command, commit, machine, versions, the table) to
RESULTS.md; `--tiny` (a smoke test of every script in well under a few minutes) never writes.
A script that fails is reported as such and makes the exit status 1.
"""

from __future__ import annotations

import argparse
import datetime
import importlib.metadata
import os
import platform
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from common import REPO, RESULTS, cpu_model

RATIO_LINE = re.compile(r"^RATIO (\w+) (\S+)$", re.M)


@dataclass(frozen=True)
class Target:
    label: str
    limit: float | None  # None: measured and shown, no target set
    unit: str = "x"


# What each target measures and its limit, as the scripts state them.
TARGETS = {
    "model_load": Target("model load: atengen/torchgen import+call", 0.3),
    "model_load_grouped": Target(
        "model load, groups on both sides: atengen/torchgen import+call+grouping", None
    ),
    "P1": Target("P1 full codegen: atengen/torchgen --generate sources, wall", 0.1),
    "P1_cpu": Target("P1 full codegen, CPU s (atengen forks per CPU, torchgen does not)", None),
    "P2_rename": Target("P2 one-op edit (rename a kernel): compile CPU s", 0.1),
    "P2_add": Target("P2 one-op edit (add an op): compile CPU s", 0.1),
    "P2_rename_buckets": Target("P2 rename a kernel, shards = auto (default): compile CPU s", 0.1),
    "P2_add_buckets": Target("P2 add an op, shards = auto (default): compile CPU s", 0.1),
    "P3": Target("P3 full compile: CPU s", 1.2),
    "P4": Target("P4 peak RSS of one atengen compile action", 1024, " MB"),
    "P5": Target("P5 backend codegen (4 buckets): wall", None),
    "P8": Target("P8 lazy codegen (4 buckets): CPU", 0.2),
    "derivatives": Target("derivatives load: import+call", 0.3),
    "functionalization_edit": Target("functionalization, add a mutating op: compile CPU s", None),
    "functionalization_full": Target("functionalization, full compile: CPU s", None),
    "P10": Target("P10 kernel edit to loadable library: Bazel/cpp_extension.load(), wall", 0.5),
    "P13": Target("P13 cold quickstart: Bazel/cpp_extension.load(), wall", 2.0),
    "release_call": Target(
        "release-bound custom op per call (boxed through the shim) / TORCH_LIBRARY typed", None
    ),
    "stable_call": Target("stable-ABI op per call (TORCH_BOX) / release-bound", None),
}

# In run order, with the targets each prints (the full-compile ones are left out by --tiny).
# Not bench_remote (P14): it needs the remote-execution engine and root, and the remote slice
# (`./dev test-remote`) runs its tiny mode.
BENCHMARKS = {
    "bench_model": ["model_load", "model_load_grouped"],
    "bench_codegen": ["P1", "P1_cpu"],
    "bench_incremental": ["P2_rename", "P2_add", "P2_rename_buckets", "P2_add_buckets", "P3", "P4"],
    "bench_backend": ["P5"],
    "bench_lazy": ["P8"],
    "bench_derivatives": ["derivatives"],
    "bench_functionalization": ["functionalization_edit", "functionalization_full"],
    "bench_edit_loop": ["P10"],
    "bench_cold_build": ["P13"],
    "bench_stable_call": ["release_call", "stable_call"],
}
NOT_IN_TINY = {
    "P2_add",
    "P2_rename_buckets",
    "P2_add_buckets",
    "P3",
    "P4",
    "functionalization_full",
}


@dataclass
class Outcome:
    script: str
    command: str
    returncode: int
    ratios: dict[str, float]


def parse_ratios(stdout: str) -> dict[str, float]:
    return {m.group(1): float(m.group(2)) for m in RATIO_LINE.finditer(stdout)}


def run_benchmark(script: str, tiny: bool) -> Outcome:
    """Runs one script, echoing its stdout as it comes (a full run takes a long while)."""
    argv = [f"benchmarks/{script}.py", *(["--tiny"] if tiny else [])]
    print(f"== {' '.join(argv)}", flush=True)
    with subprocess.Popen(
        [sys.executable, *argv], cwd=REPO, stdout=subprocess.PIPE, text=True
    ) as proc:
        lines = []
        for line in proc.stdout:
            print(line, end="", flush=True)
            lines.append(line)
    command = f".venv/bin/python {' '.join(argv)}"
    return Outcome(script, command, proc.returncode, parse_ratios("".join(lines)))


def table(outcomes: list[Outcome], tiny: bool) -> list[str]:
    rows = [
        "| target | measured | target value | met | command |",
        "|---|---|---|---|---|",
    ]
    for out in outcomes:
        for name in BENCHMARKS[out.script]:
            if tiny and name in NOT_IN_TINY:
                continue
            t = TARGETS[name]
            value = out.ratios.get(name)
            limit = "-" if t.limit is None else f"<= {t.limit:g}{t.unit}"
            if value is None:
                shown = f"failed (exit {out.returncode})" if out.returncode else "not printed"
                met = "not measured"
            else:
                shown = f"{value:.3f}{t.unit}" if t.unit == "x" else f"{value:.0f}{t.unit}"
                met = "-" if t.limit is None else ("met" if value <= t.limit else "not met")
            rows.append(f"| {t.label} | {shown} | {limit} | {met} | `{out.command}` |")
    return rows


def context() -> dict[str, str]:
    """Commit, machine and versions for a RESULTS.md entry, read when the run starts: edits made
    while it runs do not change what it measured."""
    git = ["git", "-C", str(REPO)]
    head = subprocess.run([*git, "rev-parse", "HEAD"], capture_output=True, text=True)
    dirty = subprocess.run([*git, "status", "--porcelain"], capture_output=True, text=True)
    return {
        "commit": head.stdout.strip() + ("-dirty" if dirty.stdout.strip() else ""),
        "machine": f"{cpu_model()}; os.cpu_count()={os.cpu_count()}; "
        f"{platform.system()} {platform.release()}",
        "software": f"Python {platform.python_version()}, "
        f"torch {importlib.metadata.version('torch')}",
    }


def write_entry(
    path: Path, command: str, rows: list[str], ctx: dict[str, str], now: datetime.datetime
) -> str:
    """Appends one dated section to `path`; returns it."""
    entry = "\n".join(
        [
            "",
            f"### All P-benchmarks (run_all.py), {now:%Y-%m-%d %H:%M} UTC",
            "",
            f"- Command: `{command}`",
            f"- Commit: {ctx['commit']}",
            f"- Machine: {ctx['machine']}; load average at the end {ctx['load']}",
            f"- Software: {ctx['software']}",
            "",
            *rows,
            "",
        ]
    )
    with path.open("a") as f:
        f.write(entry)
    return entry


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--only", help=f"comma-separated subset of {', '.join(BENCHMARKS)}")
    p.add_argument("--tiny", action="store_true", help="pass --tiny to every script; no --write")
    p.add_argument("--write", action="store_true", help="append the table to --results")
    p.add_argument("--results", type=Path, default=RESULTS, help="default: benchmarks/RESULTS.md")
    args = p.parse_args(argv)
    if args.tiny and args.write:
        p.error("--tiny never writes RESULTS.md; drop --write (or --tiny for a real run)")
    chosen = args.only.split(",") if args.only else list(BENCHMARKS)
    unknown = [s for s in chosen if s not in BENCHMARKS]
    if unknown:
        p.error(f"unknown benchmark(s) {unknown}; choose from {', '.join(BENCHMARKS)}")
    started = context()
    outcomes = [run_benchmark(s, args.tiny) for s in BENCHMARKS if s in chosen]
    rows = table(outcomes, args.tiny)
    print("\n".join(["", *rows]))
    if args.write:
        flags = " ".join(argv if argv is not None else sys.argv[1:])
        command = f".venv/bin/python benchmarks/run_all.py {flags}".strip()
        now = datetime.datetime.now(datetime.UTC)
        load = " ".join(f"{x:.1f}" for x in os.getloadavg())
        write_entry(args.results, command, rows, {**started, "load": load}, now)
        print(f"appended to {args.results}", file=sys.stderr)
    return 1 if any(o.returncode for o in outcomes) else 0


if __name__ == "__main__":
    sys.exit(main())
