"""Running the real `bazel` from tests, reading what it ran, and the shared build of
//:aten_generated."""

from __future__ import annotations

import json
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent


def bazel(
    *args: str,
    cwd: Path = REPO,
    startup: tuple[str, ...] = (),
    env: dict[str, str] | None = None,
    check: bool = True,
) -> subprocess.CompletedProcess[str]:
    """`bazel [startup...] args...` in cwd; a failure fails the test with Bazel's stderr."""
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


def build_aten_generated(summary: list[str]) -> AtenGenerated:
    """`bazel build //:aten_generated //:libaten_generated.so` with the default selection."""
    start = time.monotonic()
    bazel("build", "//:aten_generated", "//:libaten_generated.so")
    seconds = time.monotonic() - start
    summary.append(f"bazel build //:aten_generated //:libaten_generated.so: {seconds:.0f} s")
    bin_dir = Path(bazel("info", "bazel-bin").stdout.strip())
    return AtenGenerated(
        bin=bin_dir,
        cpu_tree=bin_dir / "aten_generated_codegen" / "cpu.cc",
        library=bin_dir / "libaten_generated.so",
        seconds=seconds,
    )
