"""Is the block-subset YAML parser (atengen/yaml/block.py) worth keeping?

Times ``load_model`` on the wheel's native_functions.yaml + tags.yaml two ways:

  block:  as shipped: the line parser reads the file (PyYAML is never imported);
  pyyaml: the line parser is forced to hand over, so PyYAML's C parser reads it.

Each repetition runs in a fresh Python subprocess per side, the sides alternating
(after one discarded warm-up each) so drifting machine load hits both alike.
Inside the child, ``time.process_time`` (CPU time of the child, so that other jobs
on a shared machine inflate it far less than wall time) measures import + call:
PyYAML's own import is part of what the line parser saves. Reported: the median
over ``--reps`` per side and the gain = 1 - block/pyyaml.

    .venv/bin/python benchmarks/bench_yaml_loader.py [--reps 7] [--write]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys

from common import REPO, append_results, package_dir

_CHILD = """
import json, sys, time
sys.path.insert(0, {tool!r})
t0 = time.process_time()
from atengen.model.operator_model import load_model
if {force!r}:
    from atengen.yaml import block, loader
    def _hand_over(*args):
        raise block.Unsupported
    loader.parse_block_yaml = _hand_over
model = load_model({op!r}, {tags!r})
print(json.dumps({{"total_s": time.process_time() - t0, "functions": len(model.functions)}}))
"""


def _run(force_pyyaml: bool, op: str, tags: str) -> dict:
    code = _CHILD.format(tool=str(REPO / "tool"), force=force_pyyaml, op=op, tags=tags)
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True)
    return json.loads(out.stdout)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--reps", type=int, default=7)
    parser.add_argument("--write", action="store_true", help="append to benchmarks/RESULTS.md")
    args = parser.parse_args()
    native = package_dir("torchgen") / "packaged" / "ATen" / "native"
    op, tags = str(native / "native_functions.yaml"), str(native / "tags.yaml")
    times: dict[bool, list[float]] = {False: [], True: []}
    functions = set()
    for rep in range(args.reps + 1):
        for force in (False, True):
            r = _run(force, op, tags)
            functions.add(r["functions"])
            if rep:  # the first round warms the OS file cache and .pyc files
                times[force].append(r["total_s"])
    assert len(functions) == 1, f"the two paths built different models: {functions}"
    block, pyyaml = statistics.median(times[False]), statistics.median(times[True])
    gain = 1 - block / pyyaml
    table = [
        "| load_model (import + call), CPU time, median | block parser | PyYAML C parser | gain |",
        "|---|---|---|---|",
        f"| native_functions.yaml ({os.path.getsize(op)} bytes) | {block * 1000:.0f} ms "
        f"| {pyyaml * 1000:.0f} ms | {gain:.1%} |",
    ]
    print("\n".join(table))
    print("block:", " ".join(f"{t * 1000:.0f}" for t in times[False]), "ms")
    print("pyyaml:", " ".join(f"{t * 1000:.0f}" for t in times[True]), "ms")
    if args.write:
        commit = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True, text=True
        ).stdout.strip()
        note = (
            f"{platform.processor() or platform.machine()}, Python {platform.python_version()}; "
            f"commit {commit}; {args.reps} alternating fresh-process runs per side"
        )
        append_results("YAML loader: block parser vs PyYAML", "bench_yaml_loader.py", table, note)


if __name__ == "__main__":
    main()
