"""A one-op edit of the whole op YAML, end to end: codegen, compile and link of the library.

    .venv/bin/python benchmarks/bench_aten_edit.py [--op _prelu_kernel] [--write] [--tiny]

A workspace beside the checkout (its own output base, kept in the temporary directory between
runs) holds a copy of torch's native_functions.yaml and one aten_codegen() of every op in it,
as //:aten_generated builds with --//:aten_ops=all (CPU-side keys; CUDA off, as on a machine
without a toolkit). After one full build, --op's CPU kernel leaves its dispatch table in the
copy (its registration leaves one CPU shard; an edit that compiles against the wheel's headers,
which a renamed kernel would not) and `bazel build //:libaten_all.so` runs again. Reported: the wall time of that build, its
parts from Bazel's profile (analysis; the generator action; compiles; archive and link) and the
actions it ran, by kind. No ratio: there is no other tool to compare with here.

`--tiny` (what CI runs): the selection is --op alone instead of every op; nothing is written.
"""

from __future__ import annotations

import argparse
import collections
import hashlib
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench_edit_loop import profile_parts
from common import REPO, TINY_HELP, append_results, package_dir, reject_tiny_write, run_bazel

WORKSPACE = """\
workspace(name = "aten_edit")

local_repository(
    name = "rules_aten",
    path = "{repo}",
)

load(
    "@rules_aten//rules:repositories.bzl",
    "rules_aten_debian_dependencies",
    "rules_aten_dependencies",
    "rules_aten_register_toolchains",
)

rules_aten_debian_dependencies()

rules_aten_dependencies()

rules_aten_register_toolchains()
"""

BUILD = """\
load("@rules_aten//rules:defs.bzl", "aten_codegen")

aten_codegen(
    name = "aten_all",
    cuda = False,
    op_yaml = "native_functions.yaml",
    ops = {ops},
    tags_yaml = "@torch//:tags.yaml",
)
"""


def bazel(root: Path, base: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "RULES_ATEN_PYTHON": str(REPO / ".venv" / "bin" / "python3")}
    startup = (f"--output_base={base / 'output_base'}", "--max_idle_secs=300")
    return run_bazel(root, startup, env, *args)


def build(
    root: Path, base: Path, profile: Path, disk_cache: str | None
) -> tuple[float, float, float, float, list[str]]:
    cache = [f"--disk_cache={disk_cache}"] if disk_cache else []
    start = time.perf_counter()
    bazel(root, base, "build", *cache, f"--profile={profile}", "//:libaten_all.so")
    wall = time.perf_counter() - start
    analysis, compile_s, link_s, actions = profile_parts(profile)
    return wall, analysis, compile_s, link_s, actions


def kind(action: str) -> str:
    """`Compiling x.cpp` -> `Compiling`; `Generating ATen registrations //:x` -> its words."""
    first = action.split(" ", 1)[0]
    if first in ("Compiling", "Linking", "Precompiling", "Writing"):
        return first
    return action.split(" //", 1)[0]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--op", default="_prelu_kernel", help="the op the edit changes")
    p.add_argument("--write", action="store_true", help="append the result to RESULTS.md")
    p.add_argument("--tiny", action="store_true", help=TINY_HELP)
    p.add_argument(
        "--disk_cache",
        help="a Bazel disk cache for both builds: the tests give their session's, where the "
        "library's precompiled headers usually are already (the edit's own actions never hit it)",
    )
    args = p.parse_args(argv)
    reject_tiny_write(p, args)

    key = hashlib.sha256(f"{REPO}:{args.tiny}".encode()).hexdigest()[:12]
    base = Path(tempfile.gettempdir()) / f"rules_aten_aten_edit_{key}"
    root = base / "workspace"
    shutil.rmtree(root, ignore_errors=True)
    root.mkdir(parents=True)
    (root / "WORKSPACE").write_text(WORKSPACE.format(repo=REPO))
    (root / ".bazelrc").write_text("build --cxxopt=-std=c++20 --nosandbox_debug\n")
    ops = f'["{args.op}"]' if args.tiny else '["all"]'
    (root / "BUILD.bazel").write_text(BUILD.format(ops=ops))
    yaml = root / "native_functions.yaml"
    native = package_dir("torchgen") / "packaged" / "ATen" / "native" / "native_functions.yaml"
    text = native.read_text()
    start = text.index(f"- func: {args.op}(")
    end = text.find("\n- func: ", start)
    entry = text[start : end if end >= 0 else len(text)]
    # The edit: the op's CPU kernel leaves its dispatch table (`CPU, CUDA: k` becomes
    # `CUDA: k`), so its registration leaves the CPU shard that held it. An edit that compiles
    # against the wheel's headers, which a renamed kernel would not.
    line = next(
        m
        for m in re.finditer(r"^( +)([\w, ]+): (\w+)$", entry, re.M)
        if "CPU" in (k.strip() for k in m.group(2).split(","))
    )
    others = [k.strip() for k in line.group(2).split(",") if k.strip() != "CPU"]
    kernel = line.group(3)
    replacement = f"{line.group(1)}{', '.join(others)}: {kernel}" if others else ""
    edited_entry = entry.replace(line.group(0) + ("\n" if not others else ""), replacement, 1)
    yaml.write_text(text)

    try:
        first = build(root, base, base / "first.json", args.disk_cache)
        yaml.write_text(text.replace(entry, edited_entry, 1))
        edit = build(root, base, base / "edit.json", args.disk_cache)
    finally:
        bazel(root, base, "shutdown")

    wall, analysis, compile_s, link_s, actions = edit
    counts = collections.Counter(kind(a) for a in actions)
    selection = args.op if args.tiny else "every op"
    table = [
        "| measurement | value |",
        "|---|---|",
        f"| first build of libaten_all.so ({selection}), wall (s) | {first[0]:.1f} |",
        f"| after dropping the CPU kernel {kernel} of {args.op}: wall (s) | {wall:.1f} |",
        f"| of which analysis (s) | {analysis:.1f} |",
        f"| of which compile actions (s, summed) | {compile_s:.1f} |",
        f"| of which archive and link actions (s, summed) | {link_s:.1f} |",
        "| actions run | " + ", ".join(f"{k}: {n}" for k, n in sorted(counts.items())) + " |",
    ]
    print("\n".join(table))
    print("actions of the edit: " + "; ".join(actions))
    if args.write:
        append_results(
            "One-op edit at every op, end to end (codegen, compile, link)",
            "bench_aten_edit.py",
            table,
            note="Bazel 4.2.3, a warm server; CPU-side keys, shards = auto, the precompiled headers",
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
