"""Time loading + modelling the full native_functions.yaml: upstream torchgen vs atengen.

Each repetition runs in a fresh Python subprocess (no warm caches, no shared imports),
once for each side, alternating so that drifting machine load hits both alike:

  torchgen: ``from torchgen.gen import parse_native_yaml; parse_native_yaml(op, tags)``
  atengen:  ``from atengen.model.operator_model import load_model; load_model(op, tags)``

Inside the child, the time of the import and of the call are measured separately with
``time.perf_counter``; "total" = import + call (what a build action pays beyond the
interpreter's own start-up). The parent also records each child's wall time.
Reported: the median over ``--reps`` of each, and the ratio atengen/torchgen of the
medians (target: total ratio <= 0.3).

The two calls do not build the same thing: ``load_model`` also groups the functions
(NativeFunctionsGroup) and the views (view groups), which torchgen's codegen does after
parsing, with ``get_grouped_native_functions`` and ``get_grouped_by_view_native_functions``.
So the torchgen child then times those two as well ("group"), and a second ratio compares
like with like: atengen's total against torchgen's import + parse + group.

    .venv/bin/python benchmarks/bench_model.py [--reps 5] [--write] [--only torchgen] [--tiny]

``--write`` appends a dated entry to benchmarks/RESULTS.md. ``--tiny`` (what CI runs): one
rep, no warm-up, never written (the input is already small: a second or so per side).
"""

from __future__ import annotations

import argparse
import datetime
import importlib.util
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path

from common import (
    STARTED_AT_COMMIT,
    TINY_HELP,
    child_env,
    cpu_model,
    print_ratio,
    reject_tiny_write,
)

REPO = Path(__file__).resolve().parent.parent
TOOL = REPO / "tool"
RESULTS = Path(__file__).resolve().parent / "RESULTS.md"
TARGET_RATIO = 0.3

# The child prints one JSON object: {"import_s": ..., "call_s": ..., "size": ...}.
_CHILD = {
    "torchgen": """
import json, sys, time
t0 = time.perf_counter()
from torchgen.gen import parse_native_yaml
t1 = time.perf_counter()
parsed = parse_native_yaml(sys.argv[1], sys.argv[2])
t2 = time.perf_counter()
from torchgen.gen import get_grouped_by_view_native_functions, get_grouped_native_functions
get_grouped_native_functions(parsed.native_functions)
get_grouped_by_view_native_functions(parsed.native_functions)
t3 = time.perf_counter()
size = len(parsed.native_functions)
print(json.dumps({"import_s": t1 - t0, "call_s": t2 - t1, "group_s": t3 - t2, "size": size}))
""",
    "atengen": """
import json, sys, time
t0 = time.perf_counter()
try:
    from atengen.model.operator_model import load_model
except ImportError as e:
    sys.stderr.write(f"atengen.model.load_model is not available yet: {e}\\n")
    sys.exit(3)
t1 = time.perf_counter()
model = load_model(sys.argv[1], sys.argv[2])
t2 = time.perf_counter()
try:
    size = len(model)
except TypeError:
    size = None
# load_model has grouped already
print(json.dumps({"import_s": t1 - t0, "call_s": t2 - t1, "group_s": 0.0, "size": size}))
""",
}


def packaged_yaml() -> tuple[Path, Path]:
    """native_functions.yaml / tags.yaml inside the installed torchgen (not imported here)."""
    spec = importlib.util.find_spec("torchgen")
    if spec is None or spec.origin is None:
        sys.exit("torchgen is not installed in this interpreter; pass --op_yaml and --tags_yaml")
    native = Path(spec.origin).parent / "packaged" / "ATen" / "native"
    return native / "native_functions.yaml", native / "tags.yaml"


def run_child(side: str, python: str, base_env: dict, op_yaml: Path, tags_yaml: Path) -> dict:
    env = dict(base_env)
    if side == "atengen":
        env["PYTHONPATH"] = os.pathsep.join(p for p in (str(TOOL), env.get("PYTHONPATH")) if p)
    cmd = [python, "-c", _CHILD[side], str(op_yaml), str(tags_yaml)]
    start = time.perf_counter()
    proc = subprocess.run(cmd, check=False, env=env, cwd=REPO, capture_output=True, text=True)
    wall = time.perf_counter() - start
    if proc.returncode != 0:
        sys.exit(f"{side} child failed (exit {proc.returncode}):\n{proc.stderr[-2000:]}")
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    result["total_s"] = result["import_s"] + result["call_s"]
    result["wall_s"] = wall
    return result


def summarize(runs: list[dict]) -> dict[str, float]:
    keys = ("import_s", "call_s", "total_s", "group_s", "wall_s")
    return {k: statistics.median(r[k] for r in runs) for k in keys}


def machine() -> str:
    return f"nproc={os.cpu_count()}, {cpu_model()}, {platform.system()} {platform.release()}"


def versions(python: str) -> str:
    code = (
        "import platform; from importlib.metadata import version as v; "
        "print('Python', platform.python_version() + ', torch', v('torch') + ', pyyaml', "
        "v('pyyaml'))"
    )
    out = subprocess.run([python, "-c", code], check=False, capture_output=True, text=True)
    return out.stdout.strip() or "unknown"


def fmt_row(side: str, s: dict[str, float]) -> str:
    return (
        f"| {side} | {s['import_s']:.3f} | {s['call_s']:.3f} | "
        f"{s['total_s']:.3f} | {s['group_s']:.3f} | {s['wall_s']:.3f} |"
    )


def main(argv: list[str] | None = None) -> int:
    default_op, default_tags = packaged_yaml()
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--op_yaml", type=Path, default=default_op)
    p.add_argument("--tags_yaml", type=Path, default=default_tags)
    p.add_argument("--reps", type=int, default=5, help="timed repetitions per side (default 5)")
    p.add_argument("--warmup", type=int, default=1, help="untimed runs per side first (default 1)")
    p.add_argument("--python", default=sys.executable, help="interpreter for the children")
    p.add_argument("--only", choices=sorted(_CHILD), help="time one side alone")
    p.add_argument("--write", action="store_true", help=f"append the result to {RESULTS.name}")
    p.add_argument("--tiny", action="store_true", help=TINY_HELP)
    args = p.parse_args(argv)
    reject_tiny_write(p, args)
    if args.tiny:
        args.reps, args.warmup = 1, 0

    sides = [args.only] if args.only else ["torchgen", "atengen"]
    env = child_env(args.python)  # once: it compiles the generator's bytecode
    runs: dict[str, list[dict]] = {s: [] for s in sides}
    for _ in range(args.warmup):
        for side in sides:
            run_child(side, args.python, env, args.op_yaml, args.tags_yaml)
    for rep in range(args.reps):
        for side in sides:
            r = run_child(side, args.python, env, args.op_yaml, args.tags_yaml)
            runs[side].append(r)
            print(
                f"rep {rep + 1}/{args.reps} {side:8s} import {r['import_s']:.3f}s "
                f"call {r['call_s']:.3f}s total {r['total_s']:.3f}s wall {r['wall_s']:.3f}s",
                file=sys.stderr,
            )

    medians = {s: summarize(runs[s]) for s in sides}
    lines = [
        (
            f"Median of {args.reps} fresh-process reps (seconds; {args.warmup} warm-up run(s) "
            "per side discarded):"
        ),
        "",
        "| side | import | call | total (import+call) | group (after the call) | process wall |",
        "|---|---|---|---|---|---|",
    ]
    lines += [fmt_row(s, medians[s]) for s in sides]
    if len(sides) == 2:
        t, a = medians["torchgen"], medians["atengen"]
        ratio = a["total_s"] / t["total_s"]
        grouped_ratio = a["total_s"] / statistics.median(
            r["total_s"] + r["group_s"] for r in runs["torchgen"]
        )
        lines += [
            "",
            (
                f"Ratio atengen/torchgen: total {ratio:.3f}x (target <= {TARGET_RATIO}x: "
                f"{'met' if ratio <= TARGET_RATIO else 'NOT met'}), call "
                f"{a['call_s'] / t['call_s']:.3f}x, process wall {a['wall_s'] / t['wall_s']:.3f}x"
            ),
            (
                "Ratio with the groups on both sides, atengen total / torchgen total + group: "
                f"{grouped_ratio:.3f}x"
            ),
        ]
    else:
        lines += ["", f"{sides[0]} alone: no ratio."]
    report = "\n".join(lines)
    print(report)
    if len(sides) == 2:
        print_ratio("model_load", ratio)
        print_ratio("model_load_grouped", grouped_ratio)

    if args.write:
        rel = os.path.relpath(sys.argv[0], REPO) if sys.argv and sys.argv[0] else "bench_model.py"
        flags = " ".join(argv if argv is not None else sys.argv[1:])
        stamp = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")
        label = f" ({sides[0]} only)" if len(sides) == 1 else ""
        entry = "\n".join(
            [
                "",
                f"### {stamp}{label}",
                "",
                f"- Command: `{f'python {rel} {flags}'.strip()}`",
                f"- Machine: {machine()}; commit {STARTED_AT_COMMIT}",
                f"- Software: {versions(args.python)}",
                f"- YAML: `{args.op_yaml.name}` ({args.op_yaml.stat().st_size} bytes)",
                "",
                report,
                "",
            ]
        )
        with RESULTS.open("a") as f:
            f.write(entry)
        print(f"appended to {RESULTS}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
