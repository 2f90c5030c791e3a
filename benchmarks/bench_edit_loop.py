"""P10: a custom-op author's edit loop: edit the kernel's body, rebuild a loadable library.

    .venv/bin/python benchmarks/bench_edit_loop.py [--reps 5] [--write] [--tiny]

Both sides build the README quickstart's operator, `myops::scale` with its CPU kernel:

- rules_aten: the README quickstart workspace as written (tests/support/quickstart_helpers.py; the same
  workspace and output base as tests/workspaces/test_quickstart.py), rebuilt with
  `bazel build //:libmyops.so` by a warm Bazel server, as in a user's loop. The parts come from
  Bazel's JSON profile: analysis (from the command's start to the execution phase), compile
  (CppCompile actions), link (CppArchive and CppLink actions), all wall time.
- torch.utils.cpp_extension.load(): one source with the same kernel and the operator's
  registration (TORCH_LIBRARY and TORCH_LIBRARY_IMPL), rebuilt by ninja in its build directory
  and loaded, in a fresh interpreter each time (a user reruns their script). What is timed is the
  load() call; importing torch before it is reported apart.

Each repetition writes the same new body into both kernels (a new constant each time, so that no
cache answers), then rebuilds both, in alternating order. One build of each first, untimed; the
kernel compile's worker makes the kernel's precompiled header beside the first build, in the
background, and the repetitions start once it is ready (the time from the end of the first build
is printed). RATIO P10 is the median rules_aten time over the median load() time; the goal is
0.5x or less.

`--tiny` (what CI runs): one repetition, nothing written.
"""

from __future__ import annotations

import argparse
import gzip
import json
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
from tests.support.quickstart_helpers import (  # noqa: E402
    quickstart_base,
    quickstart_startup,
    write_quickstart_workspace,
)

KERNEL_BODY = "return self.mul(factor);"
LIBRARY = "libmyops.so"

EXTENSION_SOURCE = """\
#include <ATen/core/Tensor.h>
#include <torch/library.h>

at::Tensor scale_cpu(const at::Tensor& self, double factor) {
  %s
}

TORCH_LIBRARY(myops, m) { m.def("scale(Tensor self, float factor) -> Tensor"); }
TORCH_LIBRARY_IMPL(myops, CPU, m) { m.impl("scale", &scale_cpu); }
"""

# Run in a fresh interpreter: argv[1] the source, argv[2] the build directory.
EXTENSION_LOADER = """\
import json, sys, time
t0 = time.perf_counter()
import torch.utils.cpp_extension as ce
t1 = time.perf_counter()
ce.load(name="myops_ext", sources=[sys.argv[1]], build_directory=sys.argv[2],
        is_python_module=False, verbose=False)
t2 = time.perf_counter()
import torch
assert torch.ops.myops.scale(torch.ones(2), 2.0).tolist() == [2.0 + float(sys.argv[3])] * 2
print(json.dumps({"import": t1 - t0, "load": t2 - t1}))
"""


@dataclass
class BazelBuild:
    wall: float
    analysis: float
    compile: float
    link: float
    actions: list[str]


def body(i: int) -> str:
    return f"return self.mul(factor).add({i});"


def bazel(workspace: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return run_bazel(workspace, quickstart_startup(), user_env(), *args)


def profile_parts(path: Path) -> tuple[float, float, float, list[str]]:
    """(analysis, compile, link) seconds and the actions run, from a --profile JSON trace."""
    data = json.loads(
        gzip.decompress(path.read_bytes()) if path.suffix == ".gz" else path.read_text()
    )
    events = data["traceEvents"] if isinstance(data, dict) else data
    markers = {e["name"]: e["ts"] for e in events if e.get("cat") == "build phase marker"}
    # From the command's start (the server's clock) to the start of execution: loading,
    # analysis and the preparation of the action graph.
    analysis = (markers["Build artifacts"] - markers["Initialize command"]) / 1e6
    compile_s = link_s = 0.0
    actions = []
    for e in events:
        if e.get("cat") != "action processing" or "dur" not in e:
            continue
        name = e["name"]
        actions.append(name)
        if name.startswith("Compiling"):
            compile_s += e["dur"] / 1e6
        # "Checking ...'s kernels and making its references to torch weak": the last step of
        # lib<name>.so.
        elif name.startswith(("Linking", "Creating library", "Creating archive", "Checking")):
            link_s += e["dur"] / 1e6
    return analysis, compile_s, link_s, actions


def rules_aten_build(workspace: Path, profile: Path, *extra: str) -> BazelBuild:
    start = time.perf_counter()
    bazel(workspace, "build", *extra, f"--profile={profile}", f"//:{LIBRARY}")
    wall = time.perf_counter() - start
    analysis, compile_s, link_s, actions = profile_parts(profile)
    return BazelBuild(wall, analysis, compile_s, link_s, actions)


def extension_build(source: Path, build_dir: Path, constant: int) -> dict[str, float]:
    result = subprocess.run(
        [sys.executable, "-c", EXTENSION_LOADER, str(source), str(build_dir), str(constant)],
        capture_output=True,
        text=True,
    )
    if result.returncode != 0:
        raise SystemExit(f"cpp_extension.load failed:\n{result.stderr[-4000:]}")
    return json.loads(result.stdout.strip().splitlines()[-1])


def wait_for_precompiled_header(workspace: Path, since: float, timeout: float = 600) -> float:
    """Seconds from ``since`` until the worker's store holds a ready precompiled header
    (kernel_objects.bzl); negative for one made before ``since``."""
    output_base = Path(bazel(workspace, "info", "output_base").stdout.strip())
    store = output_base / "rules_aten_kernel_pch"
    while time.time() < since + timeout:
        ready = [p.stat().st_mtime for p in store.glob("*/ready.json")]
        if ready:
            return min(ready) - since  # negative: made before ``since``
        time.sleep(0.2)
    raise SystemExit(f"no precompiled header in {store} {timeout:.0f} s after the first build")


def edit(workspace: Path, source: Path, i: int, previous: str) -> str:
    kernels = workspace / "kernels.cpp"
    text = kernels.read_text()
    assert text.count(previous) == 1, (previous, text)
    kernels.write_text(text.replace(previous, body(i)))
    source.write_text(EXTENSION_SOURCE % body(i))
    return body(i)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--reps", type=int, default=5)
    p.add_argument("--write", action="store_true", help="append the result to RESULTS.md")
    p.add_argument("--tiny", action="store_true", help=TINY_HELP)
    p.add_argument(
        "--disk_cache",
        help="a Bazel disk cache for the first, untimed build of the workspace (the tests give "
        "their session's); the timed rebuilds run without one, as the quickstart's do",
    )
    args = p.parse_args(argv)
    reject_tiny_write(p, args)
    reps = 1 if args.tiny else args.reps

    workspace = write_quickstart_workspace()
    work = Path(tempfile.mkdtemp(prefix="edit_loop_", dir=quickstart_base()))
    source, build_dir = work / "myops_ext.cpp", work / "build"
    build_dir.mkdir()
    try:
        current = edit(workspace, source, 0, KERNEL_BODY)
        cache = [f"--disk_cache={args.disk_cache}"] if args.disk_cache else []
        first = rules_aten_build(workspace, work / "first.json", *cache)
        first_end = time.time()
        extension_build(source, build_dir, 0)
        ready = wait_for_precompiled_header(workspace, first_end)
        when = f"{ready:.1f} s after it" if ready > 0 else "before it (an earlier build made it)"
        print(
            f"first builds done (rules_aten {first.wall:.1f} s); the kernel's precompiled header "
            f"was ready {when}",
            file=sys.stderr,
        )
        ours: list[BazelBuild] = []
        theirs: list[dict[str, float]] = []
        for i in range(1, reps + 1):
            current = edit(workspace, source, i, current)
            order = ("ours", "theirs") if i % 2 else ("theirs", "ours")
            for side in order:
                if side == "ours":
                    ours.append(rules_aten_build(workspace, work / f"rep{i}.json"))
                else:
                    theirs.append(extension_build(source, build_dir, i))
    finally:
        bazel(workspace, "shutdown")

    def median(values) -> float:
        return statistics.median(values)

    ratio = median(b.wall for b in ours) / median(t["load"] for t in theirs)
    table = [
        "| measurement | rules_aten | cpp_extension.load() | ratio |",
        "|---|---|---|---|",
        f"| kernel edit to loadable library, median of {reps} (s) | "
        f"{median(b.wall for b in ours):.2f} | {median(t['load'] for t in theirs):.2f} | "
        f"{ratio:.3f}x |",
        f"| of which analysis (s) | {median(b.analysis for b in ours):.2f} | | |",
        f"| of which compile (s) | {median(b.compile for b in ours):.2f} | | |",
        f"| of which archive and link (s) | {median(b.link for b in ours):.2f} | | |",
        f"| importing torch before load() (s) | | {median(t['import'] for t in theirs):.2f} | |",
    ]
    print("\n".join(table))
    print("rules_aten actions of the last edit: " + "; ".join(ours[-1].actions))
    print_ratio("P10", ratio)
    if args.write:
        append_results(
            "P10 kernel-edit loop against torch.utils.cpp_extension.load()",
            "bench_edit_loop.py",
            table,
            note="the README quickstart workspace (Bazel 4.2.3, warm server) against "
            "cpp_extension.load() in a fresh interpreter (ninja, g++)",
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
