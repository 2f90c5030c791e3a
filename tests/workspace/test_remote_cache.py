"""Remote-cache readiness: no action key depends on the checkout's path, the output
base, HOME or PATH.

//:aten_generated is built in a copy of this checkout, with a fresh output base and
`--disk_cache=D`, D being the disk cache that `./dev build` and the aten_generated fixture use in
this checkout (tests/bazel_helpers.DISK_CACHE): the first copy finds there what the checkout's
own build ran, and runs the rest. It is then built in a second copy at another path, of another
length, with a fresh output base and the same D, and with everything else that differs between two
machines changed at once: a fresh HOME, a directory first on PATH that holds a `python3` which
always fails, and the same interpreter by another path (RULES_ATEN_PYTHON in a symlink to this
checkout's .venv, so torch, too, is found at another path). There every action must be a cache
hit: Bazel's summary names no process that ran (only `internal` ones, which Bazel does in its own
process and never caches, and cache hits), and every spawn in the execution log has
`remoteCacheHit`. A miss names what differs from the first copy's spawn (why_missed), so one copy
with every change tells which change broke a key; each copy costs a Bazel server, the analysis
and the repositories' set-up (over a minute on a loaded machine).

Copies, not `git clone`: they hold the work tree as it is, committed or not (the tracked and the
untracked-but-not-ignored files, as `git ls-files -co --exclude-standard` lists them). Both use
the same interpreter (RULES_ATEN_PYTHON, this checkout's .venv; the second by another path), so
they see the same torch.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.support.bazel_helpers import (
    DISK_CACHE,
    REPO,
    VENV_PYTHON,
    AtenGenerated,
    bazel,
    own_output_base,
    read_execution_log,
)

pytestmark = pytest.mark.bazel

TARGETS = ("//:aten_generated",)

# "INFO: 62 processes: 8 internal, 54 remote cache hit." (Bazel 4 counts --disk_cache hits as
# remote cache hits; newer Bazel says "disk cache hit").
PROCESSES = re.compile(r"^INFO: (\d+) process(?:es)?(?:: (.*?))?\.?$", re.M)
NOT_RUN = {"internal", "remote cache hit", "disk cache hit"}

# Files larger than this are not searched for absolute paths.
SCAN_LIMIT = 64 << 20
# Inputs not searched: the wheel's own files, and Bazel's.
NOT_SCANNED = ("external/torch/", "external/bazel_tools/")

# Repositories written at fetch time from what the machine has, whose files actions read: their
# files must come out the same in every copy. Symlinks are not compared (their targets' contents
# are what keys see), nor interpreter.txt, which names the discovered path for people to read.
# @torch and @local_cuda hold only symlinks into the wheel and the toolkit, and their BUILD files.
COMPARED_REPOSITORIES = ("local_config_cc", "rules_aten_pip", "rules_aten_python")


def copy_checkout(dest: Path) -> None:
    """The work tree's files (tracked, and untracked but not ignored) into dest."""
    listed = subprocess.run(
        ["git", "ls-files", "-co", "--exclude-standard", "-z"],
        cwd=REPO,
        check=True,
        capture_output=True,
        text=True,
    ).stdout.split("\0")
    for rel in listed:
        src = REPO / rel
        # .venv and node_modules are symlinks in worktrees, so git lists them as files.
        if not rel or src.is_symlink() or not src.is_file():
            continue
        (dest / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(src, dest / rel)


@dataclass
class CloneBuild:
    root: Path
    output_base: Path
    home: str
    python: str
    spawns: list[dict]
    processes: dict[str, int]
    total: int
    seconds: float

    @property
    def hits(self) -> int:
        return sum(1 for s in self.spawns if s.get("remoteCacheHit"))

    @property
    def ran(self) -> dict[str, int]:
        """Processes Bazel's summary counts as run (not internal, not a cache hit)."""
        return {k: n for k, n in self.processes.items() if k not in NOT_RUN}

    def ratio(self) -> str:
        n = len(self.spawns)
        return f"{self.hits}/{n} = {100 * self.hits / n:.1f}%" if n else "0/0"


def parse_processes(stderr: str) -> tuple[int, dict[str, int]]:
    """Bazel's "INFO: N processes: a kind, b kind." line as (N, {kind: count})."""
    found = PROCESSES.findall(stderr)
    assert found, f"no 'INFO: N processes' line in Bazel's output:\n{stderr[-3000:]}"
    total, parts = found[-1]
    kinds = {}
    for part in filter(None, (p.strip() for p in parts.split(","))):
        count, kind = part.split(" ", 1)
        kinds[kind] = int(count)
    return int(total), kinds


def build_clone(
    base: Path, name: str, disk_cache: Path, env_changes: dict[str, str] | None = None
) -> CloneBuild:
    """Copies the checkout to base/name/rules_aten and builds TARGETS there, in a fresh output
    base with the shared disk cache."""
    root = base / name / "rules_aten"
    output_base = base / name / "output_base"
    log = base / name / "exec.json"
    root.mkdir(parents=True)
    copy_checkout(root)
    env = {**os.environ, "RULES_ATEN_PYTHON": str(VENV_PYTHON), **(env_changes or {})}
    startup = own_output_base(output_base)
    start = time.monotonic()
    try:
        result = bazel(
            "build",
            f"--disk_cache={disk_cache}",
            f"--execution_log_json_file={log}",
            *TARGETS,
            cwd=root,
            env=env,
            startup=startup,
        )
    finally:
        bazel("shutdown", cwd=root, env=env, startup=startup, check=False)
    total, processes = parse_processes(result.stderr)
    return CloneBuild(
        root=root,
        output_base=output_base,
        home=env.get("HOME", ""),
        python=env["RULES_ATEN_PYTHON"],
        spawns=read_execution_log(log),
        processes=processes,
        total=total,
        seconds=time.monotonic() - start,
    )


def spawn_key(spawn: dict) -> tuple[str, ...]:
    return tuple(sorted(spawn.get("listedOutputs", [])))


def why_missed(spawn: dict, first: dict[tuple[str, ...], dict]) -> str:
    """What differs between a spawn that missed the cache and the first clone's spawn for the
    same outputs: the first differing argument, environment variable or input."""
    what = f"{spawn.get('mnemonic')} {' '.join(spawn_key(spawn))[:200]}"
    other = first.get(spawn_key(spawn))
    if other is None:
        return f"{what}: the first clone has no action with these outputs"
    for field in ("commandArgs", "environmentVariables"):
        if spawn.get(field) != other.get(field):
            pairs = zip(spawn.get(field, []), other.get(field, []), strict=False)
            diff = [(a, b) for a, b in pairs if a != b]
            return f"{what}: {field} differ: {diff[:1] or 'in length'}"
    mine = {i["path"]: i.get("digest", {}).get("hash") for i in spawn.get("inputs", [])}
    theirs = {i["path"]: i.get("digest", {}).get("hash") for i in other.get("inputs", [])}
    diff = sorted(p for p in mine.keys() | theirs.keys() if mine.get(p) != theirs.get(p))
    return f"{what}: inputs differ: {diff[:5]}"


def check_all_hits(clone: CloneBuild, first: CloneBuild) -> None:
    assert clone.spawns, "the execution log lists no spawns"
    by_outputs = {spawn_key(s): s for s in first.spawns}
    missed = [why_missed(s, by_outputs) for s in clone.spawns if not s.get("remoteCacheHit")]
    assert missed == [], "\n".join(missed[:10])
    assert clone.ran == {}, clone.processes
    assert clone.total == clone.hits + clone.processes.get("internal", 0), clone.processes


@pytest.fixture(scope="module")
def clones(
    tmp_path_factory: pytest.TempPathFactory, aten_generated: AtenGenerated
) -> Iterator[dict[str, CloneBuild]]:
    # aten_generated: this checkout's build fills DISK_CACHE first (when it runs anything).
    base = tmp_path_factory.mktemp("remote_cache")
    disk_cache = DISK_CACHE
    built = {"first": build_clone(base, "a", disk_cache)}
    home = base / "home"
    decoys = base / "decoy-bin"
    for d in (home, decoys):
        d.mkdir()
    decoy = decoys / "python3"
    decoy.write_text("#!/bin/sh\necho 'decoy python3 on PATH was run' >&2\nexit 97\n")
    decoy.chmod(0o755)
    # The same venv (and its torch) by another path: a launcher that named the interpreter, or a
    # repository that copied torch's path into a file that actions read, would change keys.
    venv = base / "venv-elsewhere"
    venv.symlink_to(VENV_PYTHON.parent.parent, target_is_directory=True)
    # Another path, of another length.
    built["second"] = build_clone(
        base,
        "second-clone",
        disk_cache,
        {
            "HOME": str(home),
            "PATH": f"{decoys}{os.pathsep}{os.environ.get('PATH', '')}",
            "RULES_ATEN_PYTHON": str(venv / "bin" / "python3"),
        },
    )
    yield built
    # Bazel leaves read-only directories in output bases and install bases.
    subprocess.run(["chmod", "-R", "u+w", str(base)], check=False)
    shutil.rmtree(base, ignore_errors=True)


def test_first_clone_builds_every_action(clones: dict[str, CloneBuild], summary: list[str]) -> None:
    # Run, or found in the cache when this checkout built the same sources with it before.
    first = clones["first"]
    summary.append(
        f"remote cache: first clone built {' '.join(TARGETS)} in {first.seconds:.0f} s: "
        f"{first.total} processes {first.processes}, hit ratio {first.ratio()}"
    )
    assert first.spawns, first.processes
    assert any(s.get("mnemonic") == "AtenCodegen" for s in first.spawns)


def test_a_copy_elsewhere_hits_the_cache_for_every_action(
    clones: dict[str, CloneBuild], summary: list[str]
) -> None:
    clone = clones["second"]
    summary.append(
        "remote cache: second clone (other path, fresh output base, fresh HOME, decoy dir first "
        f"on PATH, the venv by another path): hit ratio {clone.ratio()} in {clone.seconds:.0f} s; "
        f"summary {clone.processes}"
    )
    check_all_hits(clone, clones["first"])


def machine_paths(clone: CloneBuild) -> list[str]:
    """Paths that differ between the copies: no action may see them."""
    paths = [str(clone.root), str(clone.output_base), str(REPO), clone.python]
    return paths + ([clone.home] if clone.home not in ("", "/", "/root") else [])


def test_command_lines_and_environments_hold_no_machine_path(
    clones: dict[str, CloneBuild],
) -> None:
    for clone in clones.values():
        local = machine_paths(clone)
        for spawn in clone.spawns:
            env = [f"{e['name']}={e['value']}" for e in spawn.get("environmentVariables", [])]
            for text in spawn.get("commandArgs", []) + env:
                assert not any(p in text for p in local), (spawn.get("mnemonic"), text)


def test_inputs_and_outputs_hold_no_machine_path(clones: dict[str, CloneBuild]) -> None:
    """The files actions read and write (the launcher, @rules_aten_pip, @rules_aten_python, the
    generated sources, objects and archives) hold no path that differs between the copies."""
    for name, clone in clones.items():
        execroot = clone.output_base / "execroot" / "rules_aten"
        needles = [p.encode() for p in machine_paths(clone)]
        files = {i["path"] for s in clone.spawns for i in s.get("inputs", [])}
        files |= {o["path"] for s in clone.spawns for o in s.get("actualOutputs", [])}
        scanned = 0
        for rel in sorted(files):
            path = execroot / rel
            if rel.startswith(NOT_SCANNED) or not path.is_file():
                continue
            if path.stat().st_size > SCAN_LIMIT:
                continue
            data = path.read_bytes()
            scanned += 1
            assert not any(n in data for n in needles), (name, rel)
        assert scanned > 100, (name, scanned)


def repository_files(output_base: Path, name: str) -> dict[str, bytes]:
    """The regular files of an external repository (os.walk follows no directory symlink)."""
    root = output_base / "external" / name
    found = {}
    for dirpath, _, filenames in os.walk(root):
        for filename in filenames:
            path = Path(dirpath) / filename
            if not path.is_symlink() and filename != "interpreter.txt":
                found[str(path.relative_to(root))] = path.read_bytes()
    return found


@pytest.mark.parametrize("name", COMPARED_REPOSITORIES)
def test_fetched_repositories_are_the_same_in_every_copy(
    clones: dict[str, CloneBuild], name: str
) -> None:
    first = repository_files(clones["first"].output_base, name)
    assert first, name
    files = repository_files(clones["second"].output_base, name)
    assert sorted(files) == sorted(first), name
    differ = sorted(rel for rel in first if files[rel] != first[rel])
    assert differ == [], (name, differ)
