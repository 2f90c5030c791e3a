"""A mistake in the op YAML is reported before any compile starts: the precompiled headers wait
for the generator (pch.bzl's `after`: the generator's `generated` stamp, a file of fixed bytes).

The README quickstart's workspace with a misspelt type in ops.yaml, built with a fresh output base
(so nothing is cached): the build fails with the generator's `ops.yaml:1: error:` line, and the
execution log shows that no compile (precompiled header or source) ran. And with the YAML fixed,
the stamp's fixed bytes keep the precompiled headers from being rebuilt by a regeneration.
"""

from __future__ import annotations

import hashlib
import tempfile
from pathlib import Path

import pytest

from tests.bazel_helpers import REPO, bazel, own_output_base, read_execution_log
from tests.quickstart_helpers import write_workspace

pytestmark = pytest.mark.bazel
# Bazel only with output bases of its own: pytest-xdist may run it beside the checkout's builds
# (tests/bazel_helpers.py).
BAZEL_OWN_OUTPUT_BASES = True

_KEY = hashlib.sha256(str(REPO).encode()).hexdigest()[:12]
BASE = Path(tempfile.gettempdir()) / f"rules_aten_generation_first_{_KEY}"


@pytest.fixture(scope="module")
def workspace() -> Path:
    root = write_workspace(BASE / "workspace", REPO / ".venv")
    yield root
    bazel("shutdown", cwd=root, startup=own_output_base(BASE / "output_base"), check=False)


def _build(workspace: Path, log: Path, check: bool):
    return bazel(
        "build",
        f"--execution_log_json_file={log}",
        "//:libmyops.so",
        cwd=workspace,
        startup=own_output_base(BASE / "output_base"),
        check=check,
    )


def test_a_yaml_mistake_fails_before_any_compile(workspace: Path, tmp_path: Path) -> None:
    output_base = BASE / "output_base"
    if output_base.exists():
        bazel("clean", "--expunge", cwd=workspace, startup=own_output_base(output_base))
    ops = workspace / "ops.yaml"
    ops.write_text(ops.read_text().replace("float factor", "flaot factor"))
    log = tmp_path / "exec.json"
    result = _build(workspace, log, check=False)
    assert result.returncode != 0
    errors = [line for line in result.stderr.splitlines() if "ops.yaml:1: error:" in line]
    assert errors and "flaot" in errors[0], result.stderr[-4000:]
    mnemonics = sorted({s.get("mnemonic", "?") for s in read_execution_log(log)})
    assert "AtenCodegen" in mnemonics, mnemonics
    assert not {"AtenPch", "CppCompile"} & set(mnemonics), mnemonics


def test_a_regeneration_keeps_the_precompiled_headers(workspace: Path, tmp_path: Path) -> None:
    ops = workspace / "ops.yaml"
    ops.write_text(ops.read_text().replace("flaot factor", "float factor"))
    _build(workspace, tmp_path / "first.json", check=True)
    # An edit of the YAML (a comment): the generator runs again, its stamp is remade with the
    # same bytes, and nothing that waits for it runs again.
    ops.write_text(ops.read_text() + "# scale: x * factor\n")
    log = tmp_path / "second.json"
    _build(workspace, log, check=True)
    mnemonics = [s.get("mnemonic", "?") for s in read_execution_log(log)]
    assert "AtenCodegen" in mnemonics and "AtenPch" not in mnemonics, sorted(mnemonics)
