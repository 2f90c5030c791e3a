"""The generated-code goldens (tests/goldens): `bazel test //tests/goldens:goldens_test` passes on
the checked-in goldens, fails with a diff and the update command when a golden is edited or a
stray file appears, and `bazel run //tests/goldens:update` rewrites them.

The edits are made in this checkout's tests/goldens and undone afterwards, whatever happens.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.support.bazel_helpers import REPO, bazel

GOLDENS = REPO / "tests" / "goldens"
CASES = ("aten_cpu", "aten_functionalize", "myops", "privateuse1")
TEST = "//tests/goldens:goldens_test"
UPDATE_COMMAND = "bazel run //tests/goldens:update"
SCALE_HEADER = GOLDENS / "myops" / "include" / "myops" / "ops" / "scale_native.h"


def golden_files() -> dict[Path, bytes]:
    return {
        p.relative_to(GOLDENS): p.read_bytes()
        for case in CASES
        for p in sorted((GOLDENS / case).rglob("*"))
        if p.is_file()
    }


@pytest.fixture
def restore_goldens():
    """The golden files as they are now; put back byte for byte after the test."""
    saved = golden_files()
    yield saved
    for case in CASES:
        shutil.rmtree(GOLDENS / case, ignore_errors=True)
    for rel, data in saved.items():
        (GOLDENS / rel).parent.mkdir(parents=True, exist_ok=True)
        (GOLDENS / rel).write_bytes(data)


def test_goldens_cover_every_case() -> None:
    names = {str(p) for p in golden_files()}
    assert {
        "aten_cpu/cpu/RegisterCPU_b0.cpp",
        "aten_functionalize/cpu/RegisterFunctionalize_b0.cpp",
        "myops/cpu/RegisterSchema_myops_b0.cpp",
        "myops/cpu/RegisterCPU_myops_b0.cpp",
        "myops/include/myops/ops/scale_native.h",
        "privateuse1/include/tests/goldens/PrivateUse1NativeFunctions.h",
        "privateuse1/srcs/RegisterPrivateUse1_b0.cpp",
    } <= names, sorted(names)


def test_checked_in_goldens_match() -> None:
    result = bazel("test", TEST, check=False)
    assert result.returncode == 0, result.stdout[-6000:] + result.stderr[-6000:]


def test_edited_golden_fails_with_diff_then_update_restores(restore_goldens) -> None:
    original = SCALE_HEADER.read_text()
    assert "scale_cpu(" in original, original
    SCALE_HEADER.write_text(original.replace("scale_cpu(", "scale_cpu_renamed("))
    # One stray file in a generated tree's golden directory, one in no tree's.
    stray = GOLDENS / "myops" / "cpu" / "RegisterStray_b0.cpp"
    stray.write_text("// not generated\n")
    stale = GOLDENS / "myops" / "obsolete" / "RegisterOld_b0.cpp"
    stale.parent.mkdir()
    stale.write_text("// no longer generated\n")

    result = bazel("test", TEST, "--test_output=errors", check=False)
    output = result.stdout + result.stderr
    assert result.returncode != 0, output[-6000:]
    # A unified diff: the golden's line with -, the generated one with +.
    assert (
        "-"
        + next(
            line for line in SCALE_HEADER.read_text().splitlines() if "scale_cpu_renamed(" in line
        )
        in output
    ), output[-6000:]
    assert "+" + next(line for line in original.splitlines() if "scale_cpu(" in line) in output
    assert "Only in tests/goldens/myops/cpu: RegisterStray_b0.cpp" in output
    assert (
        "tests/goldens/myops/obsolete/RegisterOld_b0.cpp: a golden file that no generated" in output
    )
    assert UPDATE_COMMAND in output, output[-6000:]

    bazel("run", "//tests/goldens:update")
    assert SCALE_HEADER.read_text() == original
    assert not stray.exists()
    assert not stale.parent.exists()
    assert golden_files() == restore_goldens
    bazel("test", TEST)
