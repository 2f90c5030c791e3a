"""P13: a new user's first build, the README quickstart cold, against cpp_extension.load().

    .venv/bin/python benchmarks/bench_cold_build.py [--reps 3] [--examples] [--write] [--tiny]
        [--baseline DIR] [--checkout DIR]

Both sides build the README quickstart's operator, `myops::scale`, with its CPU kernel:

- rules_aten: the README quickstart workspace as written (tests/support/quickstart_helpers.py), in a new
  directory with a fresh output base and no disk cache, `bazel build //:libmyops.so` timed from
  the command's start, Bazel's server start included. The parts come from Bazel's profile: the
  wall time before the first action (server, repositories, analysis), and the action time of the
  precompiled headers (AtenPch), of the compiles (CppCompile) and of the link (archive, link and
  the link check), summed over actions (two run at a time).
- torch.utils.cpp_extension.load(): one source with the same kernel and the operator's
  registration (TORCH_LIBRARY and TORCH_LIBRARY_IMPL), from an empty build directory, in a fresh
  interpreter; importing torch.utils.cpp_extension is timed with it.

The two sides alternate. After each quickstart build, with the server still up, a second library
of the same workspace (`myops2`, one op and one kernel) is built: what a user's next library
costs. `--examples` also builds examples/stable_ops and examples/cuda_ops (an ABI-bound library
with a derivatives YAML) cold, each in a fresh output base, without CUDA (RULES_ATEN_CUDA_DIR=none).
The machine's load average is printed before each build. RATIO P13 is the median quickstart time
over the median load() time; the goal is 2.0x or less.

`--baseline DIR` also builds the README, examples and rules of another checkout (a `git worktree`
of an older commit, for a before and after), alternating with this one in the same run, with this
checkout's .venv; `--checkout DIR` replaces this checkout. `--tiny` (what CI runs): one repetition
of the quickstart pair, nothing written.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from common import (
    REPO,
    TINY_HELP,
    append_results,
    print_ratio,
    reject_tiny_write,
    run_bazel,
    user_env,
)

sys.path.insert(0, str(REPO))
from tests.support.quickstart_helpers import VENV, write_workspace  # noqa: E402

LIBRARY = "libmyops.so"

# What the quickstart's kernel does, as one cpp_extension source (README.md's kernels.cpp body
# and includes, and the registration the generated sources make).
EXTENSION_SOURCE = """\
{includes}
#include <torch/library.h>

at::Tensor scale_cpu(const at::Tensor& self, double factor) {{
  {body}
}}

TORCH_LIBRARY(myops, m) {{ m.def("scale(Tensor self, float factor) -> Tensor"); }}
TORCH_LIBRARY_IMPL(myops, CPU, m) {{ m.impl("scale", &scale_cpu); }}
"""

EXTENSION_LOADER = """\
import json, sys, time
t0 = time.perf_counter()
import torch.utils.cpp_extension as ce
ce.load(name="myops_ext", sources=[sys.argv[1]], build_directory=sys.argv[2],
        is_python_module=False, verbose=False)
t1 = time.perf_counter()
import torch
assert torch.ops.myops.scale(torch.arange(3.0), 2.0).tolist() == [0.0, 2.0, 4.0]
print(json.dumps({"load": t1 - t0}))
"""

# A second library in the quickstart's workspace.
SECOND_LIBRARY = """
aten_codegen(
    name = "myops2",
    srcs = ["kernels2.cpp"],
    op_yaml = "ops2.yaml",
    tags_yaml = "@torch//:tags.yaml",
)
"""
SECOND_OPS = """\
- func: myops2::shift(Tensor self, float amount) -> Tensor
  dispatch:
    CPU: shift_cpu
"""
SECOND_KERNEL = """\
#include <ATen/core/Tensor.h>
#include "myops2/ops/shift_native.h"

namespace at::native {
at::Tensor shift_cpu(const at::Tensor& self, double amount) {
  return self.add(amount);
}
}  // namespace at::native
"""


@dataclass
class ColdBuild:
    wall: float
    before_first_action: float
    pch: float
    compile: float
    link: float
    load: float  # the machine's one-minute load average before the build


def profile_parts(path: Path) -> tuple[float, float, float, float]:
    """(before the first action, precompiled headers, compiles, link) seconds from a profile."""
    data = json.loads(gzip.decompress(path.read_bytes()))
    events = data["traceEvents"] if isinstance(data, dict) else data
    start = min(e["ts"] for e in events if "ts" in e)
    actions = [e for e in events if e.get("cat") == "action processing" and "dur" in e]
    first = min((e["ts"] for e in actions), default=start)
    sums = {"pch": 0.0, "compile": 0.0, "link": 0.0}
    for e in actions:
        name = e["name"]
        if name.startswith("Precompiling"):
            sums["pch"] += e["dur"] / 1e6
        elif name.startswith("Compiling"):
            sums["compile"] += e["dur"] / 1e6
        elif name.startswith(("Linking", "Creating", "Checking")):
            sums["link"] += e["dur"] / 1e6
    return (first - start) / 1e6, sums["pch"], sums["compile"], sums["link"]


def cold_build(workspace: Path, output_base: Path, target: str, env: dict[str, str]) -> ColdBuild:
    """`bazel build target` in a fresh output base, timed from the client's start; the server
    keeps running (the caller shuts it down)."""
    shutil.rmtree(output_base, ignore_errors=True)
    return warm_build(workspace, output_base, target, env)


def warm_build(workspace: Path, output_base: Path, target: str, env: dict[str, str]) -> ColdBuild:
    load = os.getloadavg()[0]
    profile = output_base.parent / f"{output_base.name}_{target.strip('/:')}.profile.gz"
    start = time.perf_counter()
    run_bazel(workspace, _startup(output_base), env, "build", f"--profile={profile}", target)
    wall = time.perf_counter() - start
    return ColdBuild(wall, *profile_parts(profile), load=load)


def shutdown(workspace: Path, output_base: Path, env: dict[str, str]) -> None:
    subprocess.run(
        ["bazel", *_startup(output_base), "shutdown"], cwd=workspace, env=env, capture_output=True
    )


def _startup(output_base: Path) -> tuple[str, ...]:
    return (f"--output_base={output_base}", "--max_idle_secs=60")


def extension_cold(source: Path, build_dir: Path) -> tuple[float, float]:
    """(load() and its import, the load average before) from an empty build directory."""
    shutil.rmtree(build_dir, ignore_errors=True)
    build_dir.mkdir()
    load = os.getloadavg()[0]
    result = subprocess.run(
        [sys.executable, "-c", EXTENSION_LOADER, str(source), str(build_dir)],
        capture_output=True,
        text=True,
    )
    if result.returncode != 0:
        raise SystemExit(f"cpp_extension.load failed:\n{result.stderr[-4000:]}")
    return json.loads(result.stdout.strip().splitlines()[-1])["load"], load


def extension_source(workspace: Path) -> str:
    """The quickstart kernel's includes and body, with the registration, as one source."""
    lines = (workspace / "kernels.cpp").read_text().splitlines()
    includes = "\n".join(line for line in lines if line.startswith("#include <"))
    body = next(line.strip() for line in lines if line.strip().startswith("return "))
    return EXTENSION_SOURCE.format(includes=includes, body=body)


def example_cold(checkout: Path, example: str, target: str, work: Path, env: dict[str, str]):
    """An example of `checkout`, copied with its local_repository pointing at `checkout`, built
    cold."""
    root = work / example
    shutil.rmtree(root, ignore_errors=True)
    shutil.copytree(checkout / "examples" / example, root, symlinks=True)
    ws = root / "WORKSPACE"
    ws.write_text(ws.read_text().replace('path = "../.."', f'path = "{checkout}"'))
    (root / ".venv").symlink_to(VENV)
    output_base = work / f"{example}_output_base"
    try:
        return cold_build(root, output_base, target, env)
    finally:
        shutdown(root, output_base, env)


# The examples built cold with --examples: directory, target, label.
EXAMPLES = (
    ("stable_ops", "//:libstableops.so", "examples/stable_ops cold"),
    ("cuda_ops", "//:libcudaops.so", "examples/cuda_ops (derivatives YAML) cold"),
)


def row(label: str, builds: list[ColdBuild]) -> list[str]:
    m = statistics.median
    return [
        f"| {label}, median of {len(builds)} (s) | {m(b.wall for b in builds):.1f} | "
        f"{m(b.before_first_action for b in builds):.1f} | {m(b.pch for b in builds):.1f} | "
        f"{m(b.compile for b in builds):.1f} | {m(b.link for b in builds):.1f} | "
        f"{', '.join(f'{b.load:.1f}' for b in builds)} |"
    ]


@dataclass
class Side:
    """The measurements of one checkout's quickstart and of load() of its kernel."""

    name: str
    checkout: Path
    ours: list[ColdBuild]
    second: list[ColdBuild]
    theirs: list[tuple[float, float]]
    examples: list[tuple[str, ColdBuild]]


def measure_side(side: Side, work: Path, env: dict[str, str]) -> None:
    """One cold quickstart build, then its second library, then the same kernel by load()."""
    workspace = write_workspace(work / "workspace", VENV, checkout=side.checkout)
    source = work / "myops_ext.cpp"
    source.write_text(extension_source(workspace))
    output_base = work / "output_base"
    try:
        side.ours.append(cold_build(workspace, output_base, f"//:{LIBRARY}", env))
        (workspace / "ops2.yaml").write_text(SECOND_OPS)
        (workspace / "kernels2.cpp").write_text(SECOND_KERNEL)
        build = workspace / "BUILD.bazel"
        build.write_text(build.read_text() + SECOND_LIBRARY)
        side.second.append(warm_build(workspace, output_base, "//:libmyops2.so", env))
    finally:
        shutdown(workspace, output_base, env)
    side.theirs.append(extension_cold(source, work / "extension_build"))
    print(
        f"{side.name}: rules_aten {side.ours[-1].wall:.1f} s, load() {side.theirs[-1][0]:.1f} s",
        file=sys.stderr,
    )


def side_table(side: Side) -> tuple[list[str], float]:
    m = statistics.median
    ratio = m(b.wall for b in side.ours) / m(t for t, _ in side.theirs)
    table = [
        *row(f"{side.name}: README quickstart //:libmyops.so", side.ours),
        f"| {side.name}: cpp_extension.load(), same kernel, median of {len(side.theirs)} (s) | "
        f"{m(t for t, _ in side.theirs):.1f} | | | | | "
        f"{', '.join(f'{lo:.1f}' for _, lo in side.theirs)} |",
        f"| {side.name}: ratio | {ratio:.2f}x | | | | | |",
        *row(f"{side.name}: second library of the workspace (warm server)", side.second),
        *[line for label, build in side.examples for line in row(f"{side.name}: {label}", [build])],
    ]
    return table, ratio


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--reps", type=int, default=3)
    p.add_argument("--examples", action="store_true", help="also examples/stable_ops, cuda_ops")
    p.add_argument("--checkout", type=Path, default=REPO, help="the rules_aten checkout to build")
    p.add_argument(
        "--baseline", type=Path, help="another checkout, measured alternately in the same run"
    )
    p.add_argument("--write", action="store_true", help="append the result to RESULTS.md")
    p.add_argument("--tiny", action="store_true", help=TINY_HELP)
    args = p.parse_args(argv)
    reject_tiny_write(p, args)
    reps = 1 if args.tiny else args.reps
    env = user_env(RULES_ATEN_CUDA_DIR="none")
    sides = [Side("this checkout", args.checkout.resolve(), [], [], [], [])]
    if args.baseline:
        sides.append(Side("baseline", args.baseline.resolve(), [], [], [], []))

    work = Path(tempfile.mkdtemp(prefix="rules_aten_cold_build_"))
    try:
        for i in range(reps):
            for side in sides[i % len(sides) :] + sides[: i % len(sides)]:
                measure_side(side, work, env)
        for side in sides if args.examples else []:
            for example, target, label in EXAMPLES:
                side.examples.append(
                    (label, example_cold(side.checkout, example, target, work, env))
                )
    finally:
        shutil.rmtree(work, ignore_errors=True)

    table = [
        "| cold build | wall | before first action | precompiled headers | compiles | link "
        "| load average before |",
        "|---|---|---|---|---|---|---|",
    ]
    ratios = []
    for side in sides:
        lines, ratio = side_table(side)
        table += lines
        ratios.append(ratio)
    print("\n".join(table))
    print(
        "(action times are sums over actions; "
        + "; ".join(f"{side.name}: {side.checkout}" for side in sides)
        + ")"
    )
    print_ratio("P13", ratios[0])
    if args.write:
        append_results(
            "P13 cold quickstart against torch.utils.cpp_extension.load()",
            "bench_cold_build.py",
            table,
            note="Bazel 4.2.3, fresh output base, no disk cache, no CUDA; each side's quickstart "
            "and load() of its kernel, alternating",
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
