"""P8: lazy-tensor (LTC) backend codegen for torch_xla's YAML, atengen vs gen_lazy_tensor.

    .venv/bin/python benchmarks/bench_lazy.py [--reps 5] [--write] [--tiny]

The input is tests/data/lazy/xla_native_functions.yaml (torch_xla's own: full_codegen, ir_gen,
supported, autograd, symint), with node base `XlaNode` and no TorchScript lowerings on both sides
and no shape-inference header check (torch_xla's headers are not here). Each rep runs, in fresh
processes and alternating:
  torchgen:            run_gen_lazy_tensor(<torchgen's packaged ATen>, Y, OUT, ...)
                       (`python -m torchgen.gen_lazy_tensor` looks for ATen in a source tree,
                       which the wheel does not have; this is the call its main() makes)
  atengen (per op):    python -m atengen lazy --backend_yaml=Y --output_dir=OUT ...
  atengen (4 buckets): the same with --shards=4
Both load and model the whole op YAML of the installed torch in every run. Reported: the median
wall time and the median CPU time (user+sys of the child, less sensitive to a loaded machine),
the files written, the ops registered, and atengen's ratios to torchgen (target: CPU ratio
<= 0.2x; the RATIO line is the 4-bucket run). `--tiny`: one rep, no warm-up, never written
(what the test suite runs).
"""

from __future__ import annotations

import argparse
import os
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from common import REPO, TINY_HELP, append_results, child_env, print_ratio, reject_tiny_write

XLA_YAML = REPO / "tests" / "data" / "lazy" / "xla_native_functions.yaml"
TORCHGEN_DRIVER = """
import sys, torchgen
from pathlib import Path
from torchgen.gen_lazy_tensor import run_gen_lazy_tensor
aten = Path(torchgen.__file__).parent / "packaged" / "ATen"
run_gen_lazy_tensor(str(aten), sys.argv[1], sys.argv[2], False, None,
                    node_base="XlaNode", shape_inference_hdr=None)
"""
IMPL = re.compile(r'm\.impl\("([^"]+)"')
NAMES = ("torchgen gen_lazy_tensor", "atengen lazy (per op)", "atengen lazy (4 buckets)")


def timed(cmd: list[str], env: dict) -> tuple[float, float]:
    """(wall, CPU user+sys) seconds of one child process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(cmd, check=True, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def commands(backend: str, outs: dict[str, str]) -> dict[str, list[str]]:
    atengen = [sys.executable, "-m", "atengen", "lazy", f"--backend_yaml={backend}",
               "--node_base=XlaNode", "--no_ts_lowerings"]  # fmt: skip
    return {
        NAMES[0]: [sys.executable, "-c", TORCHGEN_DRIVER, backend, outs[NAMES[0]]],
        NAMES[1]: [*atengen, f"--output_dir={outs[NAMES[1]]}"],
        NAMES[2]: [*atengen, f"--output_dir={outs[NAMES[2]]}", "--shards=4"],
    }


def registered_ops(out_dir: str) -> int:
    """Distinct ops registered by the Register*.cpp files of an output directory."""
    names = set()
    for path in Path(out_dir).rglob("Register*.cpp"):
        names.update(f"{path.name.split('_')[0]}:{n}" for n in IMPL.findall(path.read_text()))
    return len(names)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--write", action="store_true", help="append the result to RESULTS.md")
    parser.add_argument("--tiny", action="store_true", help=TINY_HELP)
    args = parser.parse_args()
    reject_tiny_write(parser, args)
    reps, warmup = (1, 0) if args.tiny else (args.reps, 1)
    env = child_env(PYTHONPATH=str(REPO / "tool"))
    walls: dict[str, list[float]] = {n: [] for n in NAMES}
    cpus: dict[str, list[float]] = {n: [] for n in NAMES}
    files: dict[str, int] = {}
    ops: dict[str, int] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for rep in range(reps + warmup):  # the warm-up reps fill the OS caches, are discarded
            outs = {n: os.path.join(tmp, f"out{i}_{rep}") for i, n in enumerate(NAMES)}
            os.makedirs(outs[NAMES[0]])
            for name, cmd in commands(str(XLA_YAML), outs).items():
                wall, cpu = timed(cmd, env)
                files[name] = sum(len(f) for _, _, f in os.walk(outs[name]))
                ops[name] = registered_ops(outs[name])
                if rep >= warmup:
                    walls[name].append(wall)
                    cpus[name].append(cpu)
                    print(f"rep {rep - warmup + 1}/{reps} {name:26s} {wall:6.2f}s wall "
                          f"{cpu:6.2f}s CPU", flush=True)  # fmt: skip
    wall = {k: statistics.median(v) for k, v in walls.items()}
    cpu = {k: statistics.median(v) for k, v in cpus.items()}
    base = NAMES[0]
    lines = [
        "| run | median wall (s) | median CPU (s) | files written | ops registered "
        "| wall ratio | CPU ratio |",
        "|---|---|---|---|---|---|---|",
    ]
    lines += [
        f"| {k} | {wall[k]:.2f} | {cpu[k]:.2f} | {files[k]} | {ops[k]} "
        f"| {wall[k] / wall[base]:.2f}x | {cpu[k] / cpu[base]:.2f}x |"
        for k in NAMES
    ]
    print("\n".join(lines))
    print_ratio("P8", cpu[NAMES[2]] / cpu[base])
    print(f"load average: {' '.join(f'{x:.1f}' for x in os.getloadavg())}")
    if args.write:
        append_results(
            "P8 lazy-tensor codegen (torch_xla's backend YAML)",
            "bench_lazy.py",
            lines,
            note=f"median of {reps} fresh-process reps per side, alternating, "
            "after one "
            f"discarded warm-up rep; load average at the end "
            f"{' '.join(f'{x:.1f}' for x in os.getloadavg())}\n- Input: "
            "tests/data/lazy/xla_native_functions.yaml, node base XlaNode, no TS lowerings, no "
            "shape-inference check, on both sides",
        )


if __name__ == "__main__":
    main()
