"""benchmarks/bench_remote.py refuses a bad choice in one line, before it starts an engine or a
build (the remote slice runs its tiny mode)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.support.model_helpers import REPO


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--scheduling=fast"], "--scheduling: 'fast': give tests, defaults, or both"),
        (
            ["--scheduling=tests,tests"],
            "--scheduling: 'tests,tests': give tests, defaults, or both",
        ),
        (["--staging=overlay"], "--staging: 'overlay': give copy-or-link, fuse, or both"),
        (["--build=everything"], "argument --build: invalid choice: 'everything'"),
        (["--tiny", "--write"], "--tiny never writes RESULTS.md"),
        (["--tiny", "--build=core"], "--tiny builds a one-source cc_binary; drop --build core"),
    ],
)
def test_a_bad_choice_is_one_line(args: list[str], message: str) -> None:
    done = subprocess.run(
        [sys.executable, "benchmarks/bench_remote.py", *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2, done.stderr
    assert message in done.stderr.splitlines()[-1], done.stderr
    assert done.stdout == ""
