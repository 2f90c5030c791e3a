"""Running the real `bazel` from tests, reading what it ran, and the shared builds of
//:aten_generated and other libraries.

Every test that runs Bazel does it through bazel() here, and carries the `bazel` marker (see
tests/conftest.py for how it is added).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
# The interpreter (with torch) that workspaces built by tests name in RULES_ATEN_PYTHON.
VENV_PYTHON = REPO / ".venv" / "bin" / "python3"
# The disk cache of `./dev build` and of the tests' builds of //:aten_generated (in this checkout
# and in the remote-cache test's copies of it): a copy finds what the checkout's build ran, and the
# tests do not compile the default selection twice.
DISK_CACHE = (
    Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "rules_aten" / "disk_cache"
)
# Set by tests/conftest.py to the node id of a running test that is not marked `bazel`.
UNMARKED_TEST_ENV = "RULES_ATEN_TEST_NOT_MARKED_BAZEL"
# `["bazel", ...]` or `("bazel", ...)`: a command that runs Bazel without bazel() below.
BAZEL_COMMAND = re.compile(r"""[\[(]\s*["']bazel["']""")


def module_may_run_bazel(source: str, bazel_fixtures: frozenset[str]) -> bool:
    """Whether a test module's text shows any way it could run Bazel: it names this module, the
    `bazel` marker, one of bazel_fixtures (tests/conftest.py's shared builds) or a `["bazel", ...]`
    command. A superset of the tests conftest marks `bazel`, for pytest-xdist's controller, which
    sees node ids only (tests/xdist_bazel_group.py)."""
    if "bazel_helpers" in source or "mark.bazel" in source or BAZEL_COMMAND.search(source):
        return True
    return any(re.search(rf"\b{re.escape(name)}\b", source) for name in bazel_fixtures)


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
            "tier would run it: mark it (see tests/conftest.py)",
            pytrace=False,
        )
    result = subprocess.run(
        ["bazel", *startup, *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
    )
    if check and result.returncode != 0:
        pytest.fail(f"bazel {' '.join(args)} exited {result.returncode}:\n{result.stderr[-8000:]}")
    return result


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
    library: Path
    seconds: float


def own_output_base(output_base: Path, max_idle_secs: int = 120) -> tuple[str, ...]:
    """Startup options of a Bazel server for a workspace a test builds: its own output base, and
    a server that exits by itself soon after the test (the test also runs `bazel shutdown`)."""
    return (f"--output_base={output_base}", f"--max_idle_secs={max_idle_secs}")


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
