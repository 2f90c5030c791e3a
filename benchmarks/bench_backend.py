"""P5: external-backend codegen for a 305-op backend YAML, atengen vs gen_backend_stubs.

    .venv/bin/python benchmarks/bench_backend.py [--reps 5] [--write] [--tiny]

The YAML is tests/data/backends/xla_shaped.yaml without its full_codegen/ir_gen blocks (which
atengen rejects and gen_backend_stubs ignores): 305 supported ops, 4 autograd ops, symint.
Each rep runs, in fresh processes and alternating:
  torchgen:            python -m torchgen.gen_backend_stubs --source-yaml=Y --output-dir=OUT
  atengen (per op):    python -m atengen backend --backend_yaml=Y --output_dir=OUT
  atengen (4 buckets): the same with --shards=4
Both load and model the whole op YAML of the installed torch in every run. Reported: the median
wall time, the files written, and atengen's ratio to torchgen (no target is set; the RATIO line
is the 4-bucket run). `--tiny` (what CI runs): one rep, no warm-up, never written; the input is
the same (a few seconds per run).
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

from common import REPO, TINY_HELP, append_results, child_env, print_ratio, reject_tiny_write

XLA_SHAPED = REPO / "tests" / "data" / "backends" / "xla_shaped.yaml"


def timed(cmd: list[str], env: dict) -> float:
    start = time.perf_counter()
    subprocess.run(cmd, check=True, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--write", action="store_true", help="append the result to RESULTS.md")
    parser.add_argument("--tiny", action="store_true", help=TINY_HELP)
    args = parser.parse_args()
    reject_tiny_write(parser, args)
    reps, warmup = (1, 0) if args.tiny else (args.reps, 1)
    env = child_env(PYTHONPATH=str(REPO / "tool"))
    text = re.sub(r"^(full_codegen|ir_gen):\n(  - .*\n)*", "", XLA_SHAPED.read_text(), flags=re.M)
    names = (
        "torchgen gen_backend_stubs",
        "atengen backend (per op)",
        "atengen backend (4 buckets)",
    )
    times: dict[str, list[float]] = {n: [] for n in names}
    files: dict[str, int] = {}
    with tempfile.TemporaryDirectory() as tmp:
        backend = os.path.join(tmp, "backend.yaml")
        with open(backend, "w") as f:
            f.write(text)
        for rep in range(1 - warmup, reps + 1):  # rep 0 warms the OS caches, is discarded
            outs = {n: os.path.join(tmp, f"out{i}_{rep}") for i, n in enumerate(names)}
            os.makedirs(outs[names[0]])
            cmds = {
                names[0]: [sys.executable, "-m", "torchgen.gen_backend_stubs",
                           f"--source-yaml={backend}", f"--output-dir={outs[names[0]]}"],
                names[1]: [sys.executable, "-m", "atengen", "backend", f"--backend_yaml={backend}",
                           f"--output_dir={outs[names[1]]}"],
                names[2]: [sys.executable, "-m", "atengen", "backend", f"--backend_yaml={backend}",
                           f"--output_dir={outs[names[2]]}", "--shards=4"],
            }  # fmt: skip
            for name, cmd in cmds.items():
                t = timed(cmd, env)
                if rep:
                    times[name].append(t)
                    print(f"rep {rep}/{reps} {name:28s} {t:6.2f}s", flush=True)
                files[name] = len(os.listdir(outs[name]))
    med = {k: statistics.median(v) for k, v in times.items()}
    lines = ["| run | median wall (s) | files written | ratio to torchgen |", "|---|---|---|---|"]
    lines += [f"| {k} | {med[k]:.2f} | {files[k]} | {med[k] / med[names[0]]:.2f}x |" for k in med]
    print("\n".join(lines))
    print_ratio("P5", med[names[2]] / med[names[0]])
    if args.write:
        append_results(
            "P5 external-backend codegen (305-op backend YAML)",
            "bench_backend.py",
            lines,
            note=f"median of {reps} fresh-process reps per side, alternating, after one "
            "discarded warm-up rep\n- Input: tests/data/backends/xla_shaped.yaml without "
            "full_codegen/ir_gen (305 supported, 4 autograd, 65 symint)",
        )


if __name__ == "__main__":
    main()
