"""Running the real `bazel` from tests, reading what it ran, and the shared builds of
//:aten_generated and other libraries.

Every test that runs Bazel does it through bazel() here, and carries the `bazel` marker, which
tests/conftest.py adds from the test module's folder (tests/support/tiers.py).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
# The interpreter (with torch) that workspaces built by tests name in RULES_ATEN_PYTHON.
VENV_PYTHON = REPO / ".venv" / "bin" / "python3"
# The disk cache of `./dev build` and of the tests' builds of //:aten_generated (in this checkout
# and in the remote-cache test's copies of it): a copy finds what the checkout's build ran, and the
# tests do not compile the default selection twice.
DISK_CACHE = (
    Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "rules_aten" / "disk_cache"
)
# The disk cache every Bazel build of one test session shares, named by this variable: one that
# tests/conftest.py makes for the session and removes after it, unless it is set already (to keep
# one between sessions). The workspaces the tests build each have an output base of their own, but
# actions that are the same in two of them have the same keys (tests/workspace/test_remote_cache.py shows
# that no key depends on the workspace's path): the whole quickstart library, which
# test_quickstart, test_dist_archive and test_bazel_generation_first each build, is compiled
# once. A cache hit is still a spawn of the execution log (with `remoteCacheHit`), so the tests
# that read which actions ran see the same spawns.
SESSION_DISK_CACHE_ENV = "RULES_ATEN_TEST_DISK_CACHE"
# The commands that run actions, and so take --disk_cache.
_EXECUTING_COMMANDS = frozenset({"build", "test", "run", "coverage"})
# Set by tests/conftest.py to the node id of a running test that is not marked `bazel`.
UNMARKED_TEST_ENV = "RULES_ATEN_TEST_NOT_MARKED_BAZEL"
# Set by tests/conftest.py to the node id of a running test whose folder's tier builds in output
# bases of its own only (tests/support/tiers.py's OWN_OUTPUT_BASES: `tests/workspaces/`, ...):
# pytest-xdist runs it beside the tests that build in the checkout, so bazel() fails such a test
# that names no --output_base.
OWN_OUTPUT_BASES_TEST_ENV = "RULES_ATEN_TEST_OWN_OUTPUT_BASES"


def bazel(
    *args: str,
    cwd: Path = REPO,
    startup: tuple[str, ...] = (),
    env: dict[str, str] | None = None,
    check: bool = True,
) -> subprocess.CompletedProcess[str]:
    """`bazel [startup...] args...` in cwd; a failure fails the test with Bazel's stderr."""
    unmarked = os.environ.get(UNMARKED_TEST_ENV)
    if unmarked:
        pytest.fail(
            f"{unmarked} runs `bazel {' '.join(args)}` but is not marked `bazel`, so the fast "
            "tier would run it: move its module to a folder whose tests run Bazel "
            "(tests/support/tiers.py)",
            pytrace=False,
        )
    own_only = os.environ.get(OWN_OUTPUT_BASES_TEST_ENV)
    if own_only and not any(option.startswith("--output_base=") for option in startup):
        pytest.fail(
            f"{own_only} runs `bazel {' '.join(args)}` with the checkout's output base, but its "
            "folder's tests build in output bases of their own (tests/support/tiers.py): name an "
            "output base of its own, or move the test under tests/workspace/",
            pytrace=False,
        )
    result = subprocess.run(
        ["bazel", *startup, *with_session_disk_cache(args)],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
    )
    if check and result.returncode != 0:
        pytest.fail(f"bazel {' '.join(args)} exited {result.returncode}:\n{result.stderr[-8000:]}")
    return result


def session_disk_cache_flags() -> list[str]:
    """`--disk_cache=<the session's>`, or nothing outside a test session that made one; for
    programs that run Bazel themselves (the benchmarks take it as their own flag)."""
    cache = os.environ.get(SESSION_DISK_CACHE_ENV)
    return [f"--disk_cache={cache}"] if cache else []


def with_session_disk_cache(args: tuple[str, ...]) -> tuple[str, ...]:
    """args with the session's disk cache after the command, if it runs actions and names no
    --disk_cache of its own (tests/workspace/test_remote_cache.py's builds choose theirs)."""
    flags = session_disk_cache_flags()
    if not flags or not args or args[0] not in _EXECUTING_COMMANDS:
        return args
    if any(arg.startswith("--disk_cache") for arg in args):
        return args
    return (args[0], *flags, *args[1:])


def one_fail_message(result: subprocess.CompletedProcess, start: str) -> str:
    """Asserts the build failed with one `Error in fail:` line whose message starts with `start`,
    and that `start` is printed once; returns the message."""
    assert result.returncode != 0, result.stderr[-4000:]
    fails = [line for line in result.stderr.splitlines() if "Error in fail:" in line]
    assert len(fails) == 1, result.stderr[-6000:]
    message = fails[0].split("Error in fail: ", 1)[1]
    assert message.startswith(start), message
    assert result.stderr.count(start) == 1, result.stderr[-6000:]
    return message


def read_execution_log(path: Path) -> list[dict]:
    """The spawns of --execution_log_json_file. Bazel 4 writes the log as concatenated JSON
    objects, not as a list."""
    text = path.read_text()
    decoder = json.JSONDecoder()
    spawns, pos = [], 0
    while True:
        while pos < len(text) and text[pos].isspace():
            pos += 1
        if pos >= len(text):
            return spawns
        obj, pos = decoder.raw_decode(text, pos)
        spawns.append(obj)


@dataclass(frozen=True)
class AtenGenerated:
    bin: Path
    cpu_tree: Path
    signature_tree: Path  # the KernelSignatures_*.cpp, apart from the other CPU-side sources
    library: Path
    seconds: float


# The JVM of a short-lived test server: the client JIT compiler only and the serial collector.
# A server starts in every new output base (about twenty per `.ci/run`), and with the JVM's
# defaults its JIT and collector threads use more than one core while it starts (a one-target
# build in a new output base: 29 CPU s in 18 s here). Building //:aten_generated from a full
# disk cache in a fresh output base took 44 to 52 CPU s of the server's, 33 to 35 with these
# (measured here, 2026-11-27). They change no action and no output. The quickstart's .bazelrc
# has the first; the benchmarks time its server with that file's options alone.
SHORT_LIVED_SERVER_JVM = (
    "--host_jvm_args=-XX:TieredStopAtLevel=1",
    "--host_jvm_args=-XX:+UseSerialGC",
)


def own_output_base(output_base: Path, max_idle_secs: int = 120) -> tuple[str, ...]:
    """Startup options of a Bazel server for a workspace a test builds: its own output base, a
    server that exits by itself soon after the test (the test also runs `bazel shutdown`), and
    the JVM options of a short-lived server."""
    return (
        f"--output_base={output_base}",
        f"--max_idle_secs={max_idle_secs}",
        *SHORT_LIVED_SERVER_JVM,
    )


def bazel_bin() -> Path:
    return Path(bazel("info", "bazel-bin").stdout.strip())


def build_library(target: str) -> Path:
    """`bazel build <target>` in this checkout: the path of its output, e.g. `//pkg:libx.so`."""
    bazel("build", target)
    package, name = target.removeprefix("//").split(":")
    return bazel_bin() / package / name


def build_aten_generated(summary: list[str]) -> AtenGenerated:
    """`bazel build //:aten_generated //:libaten_generated.so` with the default selection."""
    start = time.monotonic()
    bazel("build", f"--disk_cache={DISK_CACHE}", "//:aten_generated", "//:libaten_generated.so")
    seconds = time.monotonic() - start
    summary.append(f"bazel build //:aten_generated //:libaten_generated.so: {seconds:.0f} s")
    bin_dir = bazel_bin()
    return AtenGenerated(
        bin=bin_dir,
        cpu_tree=bin_dir / "aten_generated_codegen" / "cpu.cc",
        signature_tree=bin_dir / "aten_generated_codegen" / "signatures.cc",
        library=bin_dir / "libaten_generated.so",
        seconds=seconds,
    )


# The example workspaces' environment: the dev venv's Python, and no CUDA toolkit.
EXAMPLE_ENV = {**os.environ, "RULES_ATEN_PYTHON": str(VENV_PYTHON), "RULES_ATEN_CUDA_DIR": "none"}


def example_bazel(cwd: Path, output_base: Path, *args: str, check: bool = True):
    """Bazel in an example's workspace (or a copy of it), with its own output base."""
    return bazel(*args, cwd=cwd, startup=own_output_base(output_base), env=EXAMPLE_ENV, check=check)


def run_demo(script: Path | str, library: Path) -> dict:
    """Runs an example script (its path) on `library` in a fresh interpreter; its report, all checks passed."""
    result = subprocess.run(
        [sys.executable, str(script), str(library)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.stdout.strip(), result.stderr[-6000:]
    report = json.loads(result.stdout.strip().splitlines()[-1])
    failed = sorted(k for k, ok in report["checks"].items() if not ok)
    assert failed == [], (failed, report["details"], result.stderr[-4000:])
    assert result.returncode == 0
    return report
