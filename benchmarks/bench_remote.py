"""P14: a cold build on a remote-execution engine against the same build local, on one machine.

    .venv/bin/python benchmarks/bench_remote.py [--reps 3] [--build quickstart|core]
        [--staging MODES] [--scheduling WAYS] [--write] [--tiny]

The README quickstart (`//:libmyops.so`, Bazel 4.2.3), or with `--build core` this checkout's
core build (`//:aten_generated`, its sixty operators, and `//:libaten_generated.so`), each build
from a fresh output base with no disk cache, three ways in turn:

- local: Bazel's own sandboxes and worker, as a user builds;
- remote, fresh engine: a new engine (tests/remote/engine.py: BuildGrid, buildbox's stock
  worker in its own network namespace and root file system), so the build uploads every input,
  torch's headers included, and the worker fetches them: a first build against an engine;
- remote, warm engine: the same engine again, its CAS holding every input but its action cache
  missing each action (a property `salt` of the run's own in --remote_default_exec_properties
  changes every action's key): what each new commit costs on a cluster.

The engine, its worker and Bazel share this machine's cores, so the remote builds measure what
remote execution adds, not what more machines give. Per action (Bazel's profile, medians over the
remote actions of each kind): the client's set-up of the action's input tree, its upload of
missing inputs, the time the action was remote (queued, its inputs staged by the worker, run, its
outputs stored), and the download of its outputs; beside it the same action's local run. RATIO
P14 is the median warm-engine build over the median local one; the goal is 1.2x or less.

`--staging copy-or-link,fuse` measures the remote builds with each of buildbox-casd's ways of
making an action's input root (hard links, or a FUSE view of the tree), in turn in each rep.
`--scheduling tests,defaults` does the same for how actions reach the worker: the tests' engine
(the scheduler looks for queued actions every ASSIGNMENT_INTERVAL_S, a buildbox-worker per job)
against BuildGrid's and buildbox's defaults (every 1 to 2 s, one buildbox-worker for both jobs).

`--tiny` (what CI runs): a one-source cc_binary instead of the quickstart, one rep, nothing
written.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from dataclasses import dataclass, field
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
from tests.remote.engine import ASSIGNMENT_INTERVAL_S, JOBS, TOOLCHAINS, Engine, default_staging  # noqa: E402
from tests.support.quickstart_helpers import VENV, write_workspace  # noqa: E402

# Bazel's profile events of a remote spawn, client side, and what the table calls them.
REMOTE_PHASES = {
    "MerkleTree.build(ActionInput)": "set-up",
    "upload missing inputs": "upload",
    "execute remotely": "remote",
    "download outputs": "download",
}
# The local run of a spawn (its process, in Bazel's sandbox or worker).
LOCAL_PHASES = ("subprocess.run", "Worker working")
KINDS = (
    ("Compiling", "compile"),
    ("Precompiling", "precompiled header"),
    ("Linking", "link"),
    ("Generating", "generate"),
)
# --scheduling: each way actions reach the worker, as Engine's (assignment_interval, bots).
SCHEDULING = {"tests": (ASSIGNMENT_INTERVAL_S, JOBS), "defaults": (1.0, 1)}
# --build core: a PyTorch-style core build of this checkout (its default sixty operators).
CORE_BUILD = ("//:aten_generated", "//:libaten_generated.so")
TINY_BUILD = 'cc_binary(name = "hello", srcs = ["hello.cc"])\n'
TINY_SOURCE = '#include <cstdio>\nint main() { std::puts("hello"); }\n'


@dataclass
class Build:
    wall: float
    load: float
    # {kind: {phase: [seconds per action]}}
    phases: dict[str, dict[str, list[float]]] = field(default_factory=dict)


def kind_of(action: str) -> str:
    for prefix, kind in KINDS:
        if action.startswith(prefix):
            return kind
    return "other"


def action_phases(profile: Path) -> dict[str, dict[str, list[float]]]:
    """Per kind of action, the seconds of each phase of each action, from Bazel's profile: a
    phase event belongs to the action event on the same thread that encloses it."""
    data = json.loads(gzip.decompress(profile.read_bytes()))
    events = [e for e in (data["traceEvents"] if isinstance(data, dict) else data) if "dur" in e]
    actions = [e for e in events if e.get("cat") == "action processing"]
    phases: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for action in actions:
        end = action["ts"] + action["dur"]
        inside = [
            e
            for e in events
            if e.get("tid") == action.get("tid") and action["ts"] <= e["ts"] and e["ts"] < end
        ]
        kind = kind_of(action["name"])
        for e in inside:
            name = REMOTE_PHASES.get(e["name"]) or ("local" if e["name"] in LOCAL_PHASES else "")
            if name:
                phases[kind][name].append(e["dur"] / 1e6)
    return {k: dict(v) for k, v in phases.items()}


def build(
    workspace: Path, target: tuple[str, ...], output_base: Path, env: dict[str, str], *flags: str
) -> Build:
    """`bazel build` of the workspace's target from a fresh output base, then a shutdown."""
    shutil.rmtree(output_base, ignore_errors=True)
    startup = (f"--output_base={output_base}", "--max_idle_secs=60")
    profile = output_base.parent / f"{output_base.name}.profile.gz"
    load = os.getloadavg()[0]
    start = time.perf_counter()
    run_bazel(
        workspace, startup, env, "build", "--disk_cache=", f"--profile={profile}", *flags, *target
    )
    wall = time.perf_counter() - start
    run_bazel(workspace, startup, env, "shutdown")
    return Build(wall, load, action_phases(profile))


def remote_flags(engine: Engine, salt: str) -> tuple[str, ...]:
    return (
        f"--remote_executor={engine.url}",
        "--spawn_strategy=remote",
        "--noremote_local_fallback",
        "--remote_max_connections=4",
        "--remote_timeout=600",
        f"--remote_default_exec_properties={TOOLCHAINS['bookworm']}",
        f"--remote_default_exec_properties=salt={salt}",
    )


def workspace_for(root: Path, tiny: bool, what: str) -> tuple[Path, tuple[str, ...]]:
    """The workspace built, and the arguments of `bazel build` there (`what`: --build)."""
    if what == "core":
        # This checkout, as its own workspace; no bazel-* links into the output bases.
        return REPO, ("--symlink_prefix=/", *CORE_BUILD)
    if tiny:
        root.mkdir(parents=True)
        # (Debian's Bazel has rules_cc only through rules_aten's Debian dependencies.)
        (root / "WORKSPACE").write_text(
            f'local_repository(name = "rules_aten", path = "{REPO}")\n'
            'load("@rules_aten//rules:repositories.bzl", "rules_aten_debian_dependencies")\n'
            "rules_aten_debian_dependencies()\n"
        )
        (root / "BUILD.bazel").write_text(TINY_BUILD)
        (root / "hello.cc").write_text(TINY_SOURCE)
        return root, ("//:hello",)
    ws = write_workspace(root, VENV)
    return ws, ("//:libmyops.so",)


def row(label: str, builds: list[Build], local: list[Build]) -> str:
    m = statistics.median
    ratio = m(b.wall for b in builds) / m(b.wall for b in local)
    loads = ", ".join(f"{b.load:.1f}" for b in builds)
    return f"| {label}, median of {len(builds)} (s) | {m(b.wall for b in builds):.1f} | {ratio:.2f}x | {loads} |"


def phase_rows(local: list[Build], remote: list[Build], label: str) -> list[str]:
    """Per kind of action: the median local run, and the median of each remote phase."""
    rows = []
    kinds = sorted({k for b in remote for k in b.phases})
    for kind in kinds:
        local_runs = [s for b in local for s in b.phases.get(kind, {}).get("local", [])]
        cells = []
        for phase in REMOTE_PHASES.values():
            values = [s for b in remote for s in b.phases.get(kind, {}).get(phase, [])]
            cells.append(f"{statistics.median(values):.2f}" if values else "")
        count = len([s for b in remote for s in b.phases.get(kind, {}).get("remote", [])])
        local_cell = f"{statistics.median(local_runs):.2f}" if local_runs else ""
        rows.append(f"| {label}: {kind} ({count} actions) | {local_cell} | {' | '.join(cells)} |")
    return rows


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--reps", type=int, default=3)
    p.add_argument("--write", action="store_true", help="append the result to RESULTS.md")
    p.add_argument("--tiny", action="store_true", help=TINY_HELP)
    p.add_argument(
        "--staging",
        default=default_staging(),
        help="how the worker stages input roots (buildbox-casd's staging mode): copy-or-link, "
        "fuse, or both comma-separated, each on an engine of its own in turn (the first one's "
        "warm build gives RATIO P14); default: the remote tests' (fuse where /dev/fuse opens)",
    )
    p.add_argument(
        "--scheduling",
        default="tests",
        help="how actions reach the worker: tests (the tests' engine), defaults (BuildGrid's and "
        "buildbox's), or both comma-separated, each on an engine of its own in turn",
    )
    p.add_argument(
        "--build",
        choices=("quickstart", "core"),
        default="quickstart",
        help="what is built: the README quickstart (RATIO P14), or this checkout's "
        f"{' '.join(CORE_BUILD)} (a larger build, its ratio in the table only)",
    )
    args = p.parse_args(argv)
    reject_tiny_write(p, args)
    if args.tiny and args.build != "quickstart":
        p.error(f"--tiny builds a one-source cc_binary; drop --build {args.build} (or --tiny)")
    staging = args.staging.split(",")
    if not set(staging) <= {"copy-or-link", "fuse"} or len(set(staging)) != len(staging):
        p.error(f"--staging: {args.staging!r}: give copy-or-link, fuse, or both")
    scheduling = args.scheduling.split(",")
    if not set(scheduling) <= set(SCHEDULING) or len(set(scheduling)) != len(scheduling):
        p.error(f"--scheduling: {args.scheduling!r}: give tests, defaults, or both")
    # Each engine configuration: (staging, scheduling).
    modes = [(mode, way) for mode in staging for way in scheduling]
    reps = 1 if args.tiny else args.reps

    def label(mode: tuple[str, str]) -> str:
        parts = [f"{mode[0]} staging"] if len(staging) > 1 else []
        parts += [f"{mode[1]}' scheduling"] if len(scheduling) > 1 else []
        return f"remote ({', '.join(parts)})" if parts else "remote"

    env = user_env(RULES_ATEN_CUDA_DIR="none")
    local: list[Build] = []
    # {((staging, scheduling), "fresh" or "warm"): builds}
    remote: dict[tuple[tuple[str, str], str], list[Build]] = defaultdict(list)
    work = Path(tempfile.mkdtemp(prefix="rules_aten_bench_remote_"))
    try:
        ws, target = workspace_for(work / "workspace", args.tiny, args.build)
        for i in range(reps):
            local.append(build(ws, target, work / "ob_local", env))
            print(f"local: {local[-1].wall:.1f} s", file=sys.stderr)
            for mode in modes:
                staging_mode, way = mode
                interval, bots = SCHEDULING[way]
                with Engine(
                    staging=staging_mode, assignment_interval=interval, bots=bots
                ) as engine:
                    for engine_state in ("fresh", "warm"):
                        salt = f"{i}-{staging_mode}-{way}-{engine_state}"
                        flags = remote_flags(engine, salt)
                        done = build(ws, target, work / f"ob_{engine_state}", env, *flags)
                        remote[mode, engine_state].append(done)
                        print(f"{label(mode)}, {engine_state}: {done.wall:.1f} s", file=sys.stderr)
    finally:
        shutil.rmtree(work, ignore_errors=True)

    m = statistics.median
    table = [
        "| cold build | wall | against local | load average before |",
        "|---|---|---|---|",
        f"| local, median of {len(local)} (s) | {m(b.wall for b in local):.1f} | 1.00x | "
        f"{', '.join(f'{b.load:.1f}' for b in local)} |",
        *[
            row(f"{label(mode)}, {state} engine", remote[mode, state], local)
            for mode in modes
            for state in ("fresh", "warm")
        ],
        "",
        "| per action, median (s) | local run | set-up | upload | remote | download |",
        "|---|---|---|---|---|---|",
        *[
            line
            for mode in modes
            for state in ("fresh", "warm")
            for line in phase_rows(local, remote[mode, state], f"{label(mode)}, {state} engine")
        ],
    ]
    print("\n".join(table))
    if args.build == "quickstart":
        print_ratio("P14", m(b.wall for b in remote[modes[0], "warm"]) / m(b.wall for b in local))
    built = {"quickstart": "the README quickstart", "core": " ".join(CORE_BUILD)}[args.build]
    if args.write:
        append_results(
            "P14 cold build on a remote-execution engine against local"
            + ("" if args.build == "quickstart" else f", {built}"),
            "bench_remote.py",
            table,
            note=f"Bazel 4.2.3, {built}, fresh output bases, no disk cache; "
            "BuildGrid 0.4.4 and one buildbox 1.4.30 worker host (2 jobs, staging "
            f"{' and '.join(staging)}; {' and '.join(scheduling)}' scheduling) on the same 2 cores",
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
