"""Time loading + modelling the wheel's derivatives.yaml: upstream torchgen vs atengen.

Both sides parse native_functions.yaml, load derivatives.yaml against it and match
every NativeFunction to its differentiability info:

  torchgen: ``load_derivatives(d, op, tags)`` then ``match_differentiability_info``
            over ``parse_native_yaml(op, tags).native_functions``
  atengen:  ``load_derivatives(d, load_model(op, tags))`` (matching included)

Each repetition runs each side in a fresh Python process, the sides alternating
so that drifting machine load hits both alike. Inside the child the import and
the call are timed separately; "total" = import + call. Reported: the median of
each over ``--reps`` and the ratio atengen/torchgen of the total medians
(target <= 0.3).

    .venv/bin/python benchmarks/bench_derivatives.py [--reps 5] [--write]
    .venv/bin/python benchmarks/bench_derivatives.py --tiny   # one rep, no warm-up (CI)
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import (  # noqa: E402
    REPO,
    TINY_HELP,
    append_results,
    child_env,
    cpu_model,
    package_dir,
    print_ratio,
    reject_tiny_write,
)

TARGET_RATIO = 0.3

# Each child prints one JSON object: {"import_s", "call_s", "infos", "matched"}.
_CHILD = {
    "torchgen": """
import json, sys, time
t0 = time.perf_counter()
from torchgen.api.autograd import match_differentiability_info
from torchgen.gen import parse_native_yaml
from torchgen.packaged.autograd.load_derivatives import load_derivatives
t1 = time.perf_counter()
infos, _ = load_derivatives(sys.argv[1], sys.argv[2], sys.argv[3])
n = sum(len(v) for v in infos.values())  # before matching adds derived foreach infos
fns = parse_native_yaml(sys.argv[2], sys.argv[3]).native_functions
matched = match_differentiability_info(list(fns), infos)
t2 = time.perf_counter()
print(json.dumps({"import_s": t1 - t0, "call_s": t2 - t1, "infos": n,
                  "matched": sum(1 for m in matched if m.info)}))
""",
    "atengen": """
import json, sys, time
t0 = time.perf_counter()
from atengen.autograd.load import load_derivatives
from atengen.cli.common import autograd_helpers
from atengen.model.operator_model import load_model
t1 = time.perf_counter()
helpers = autograd_helpers(None, None)  # the installed torch's, as a run without --torch_facts
model = load_derivatives(sys.argv[1], load_model(sys.argv[2], sys.argv[3]), helpers)
t2 = time.perf_counter()
counts = model.counts()
print(json.dumps({"import_s": t1 - t0, "call_s": t2 - t1, "infos": counts["entries"],
                  "matched": counts["functions_matched"]}))
""",
}


def run_child(side: str, python: str, base_env: dict, yamls: tuple[Path, Path, Path]) -> dict:
    env = dict(base_env)
    if side == "atengen":
        tool = str(REPO / "tool")
        env["PYTHONPATH"] = os.pathsep.join(p for p in (tool, env.get("PYTHONPATH")) if p)
    cmd = [python, "-c", _CHILD[side], *map(str, yamls)]
    start = time.perf_counter()
    proc = subprocess.run(cmd, check=False, env=env, cwd=REPO, capture_output=True, text=True)
    wall = time.perf_counter() - start
    if proc.returncode != 0:
        sys.exit(f"{side} child failed (exit {proc.returncode}):\n{proc.stderr[-2000:]}")
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    result["total_s"] = result["import_s"] + result["call_s"]
    result["wall_s"] = wall
    return result


def machine_note() -> str:
    cpu = cpu_model()
    commit = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True, text=True
    ).stdout.strip()
    load = os.getloadavg()[0]
    return f"{cpu}, load average {load:.1f} at the end; commit {commit or '?'}"


def main(argv: list[str] | None = None) -> int:
    packaged = package_dir("torchgen") / "packaged"
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--reps", type=int, default=5, help="timed repetitions per side (default 5)")
    p.add_argument("--warmup", type=int, default=1, help="untimed runs per side first")
    p.add_argument("--tiny", action="store_true", help=TINY_HELP)
    p.add_argument("--python", default=sys.executable, help="interpreter for the children")
    p.add_argument("--write", action="store_true", help="append the result to RESULTS.md")
    args = p.parse_args(argv)
    reject_tiny_write(p, args)
    if args.tiny:
        args.reps, args.warmup = 1, 0
    yamls = (
        packaged / "autograd" / "derivatives.yaml",
        packaged / "ATen" / "native" / "native_functions.yaml",
        packaged / "ATen" / "native" / "tags.yaml",
    )

    sides = ("torchgen", "atengen")
    env = child_env(args.python)  # once: it compiles the generator's bytecode
    runs: dict[str, list[dict]] = {s: [] for s in sides}
    for _ in range(args.warmup):
        for side in sides:
            run_child(side, args.python, env, yamls)
    for rep in range(args.reps):
        for side in sides if rep % 2 == 0 else reversed(sides):
            r = run_child(side, args.python, env, yamls)
            runs[side].append(r)
            print(
                f"rep {rep + 1}/{args.reps} {side:8s} import {r['import_s']:.3f}s "
                f"call {r['call_s']:.3f}s total {r['total_s']:.3f}s "
                f"({r['infos']} infos, {r['matched']} functions matched)",
                file=sys.stderr,
            )
    med = {
        s: {k: statistics.median(r[k] for r in runs[s]) for k in ("import_s", "call_s", "total_s")}
        for s in sides
    }
    ratio = med["atengen"]["total_s"] / med["torchgen"]["total_s"]
    table = [
        f"Median of {args.reps} fresh-process repetitions per side, interleaved (seconds):",
        "",
        "| side | import | call | total (import+call) | infos | functions matched |",
        "|---|---|---|---|---|---|",
        *(
            f"| {s} | {med[s]['import_s']:.3f} | {med[s]['call_s']:.3f} | "
            f"{med[s]['total_s']:.3f} | {runs[s][0]['infos']} | {runs[s][0]['matched']} |"
            for s in sides
        ),
        "",
        f"Ratio atengen/torchgen: total {ratio:.3f}x (target <= {TARGET_RATIO}x: "
        f"{'met' if ratio <= TARGET_RATIO else 'NOT met'})",
    ]
    print("\n".join(table))
    print_ratio("derivatives", ratio)
    if args.write:
        append_results("bench_derivatives", "bench_derivatives.py", table, note=machine_note())
    return 0


if __name__ == "__main__":
    sys.exit(main())
