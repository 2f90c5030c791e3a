"""The README's quickstart against the release archive, as a user of a release runs it.

`./dev dist` (devtools/dist/make_dist.py, from the working tree) makes
rules_aten-VERSION.tar.gz; the quickstart blocks of README.md are written into a fresh directory
outside the repository, the WORKSPACE block as written (the http_archive, not the clone's
local_repository) with only its `urls` and `sha256` given: the archive's `file://` URL and its
sha256. `bazel build //:libmyops.so` fetches rules_aten from the archive, and the README's Python
snippet runs against the library.

As in tests/workspaces/test_quickstart.py, the workspace and its output base live at a path kept in the
temporary directory (keyed by this checkout's path): a second run refetches rules_aten only if the
archive changed.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

import pytest

from tests.support import bazel_helpers
from tests.support.quickstart_helpers import (
    COMMANDS,
    HTTP_ARCHIVE_STRIP_PREFIX,
    PYTHON_SNIPPET,
    VENV,
    WORKSPACE_FILES,
    archive_workspace,
    http_archive_of,
    readme_blocks,
    run_snippet,
)
from tests.unit.devtools.test_dist_contents import module_version

pytestmark = pytest.mark.bazel

REPO = bazel_helpers.REPO
SCRIPT = REPO / "devtools" / "dist" / "make_dist.py"
# scale(arange(3), 2.0), computed by hand.
EXPECTED_OUTPUT = "tensor([0., 2., 4.])"


def base() -> Path:
    key = hashlib.sha256(str(REPO).encode()).hexdigest()[:12]
    return Path(tempfile.gettempdir()) / f"rules_aten_release_quickstart_{key}"


def startup() -> tuple[str, ...]:
    return bazel_helpers.own_output_base(base() / "output_base")


def release_bazel(workspace: Path, *args: str) -> subprocess.CompletedProcess[str]:
    # Without PYTHONDONTWRITEBYTECODE, as a user's shell has it: the repository rules must not
    # write bytecode into the unpacked archive (checked below: exactly the archive's files).
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith("RULES_ATEN_") and k != "PYTHONDONTWRITEBYTECODE"
    }
    return bazel_helpers.bazel(*args, cwd=workspace, startup=startup(), env=env)


def test_the_readme_pins_the_module_s_version() -> None:
    """The README's http_archive strips rules_aten-VERSION, VERSION being MODULE.bazel's."""
    archive = http_archive_of(readme_blocks()["WORKSPACE"])
    assert HTTP_ARCHIVE_STRIP_PREFIX.findall(archive) == [f"rules_aten-{module_version()}"]


def test_the_quickstart_builds_and_runs_from_the_release_archive(summary: list[str]) -> None:
    if shutil.which("bazel") is None:
        pytest.fail("bazel is not on PATH; run ./dev setup")
    if not (VENV / "bin" / "python3").exists():
        pytest.fail(f"{VENV}/bin/python3 missing; run ./dev setup")
    version = module_version()
    dist = base() / "dist"
    shutil.rmtree(dist, ignore_errors=True)
    made = subprocess.run(
        [sys.executable, str(SCRIPT), version, "--worktree", f"--out={dist}"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert made.returncode == 0, made.stderr
    archive = dist / f"rules_aten-{version}.tar.gz"
    sha256 = hashlib.sha256(archive.read_bytes()).hexdigest()

    workspace = base() / "workspace"
    shutil.rmtree(workspace, ignore_errors=True)
    workspace.mkdir(parents=True)
    blocks = readme_blocks()
    assert blocks[COMMANDS].splitlines() == [
        "bazel build //:libmyops.so",
        f".venv/bin/python {PYTHON_SNIPPET}",
    ], blocks[COMMANDS]
    for name in (*WORKSPACE_FILES, PYTHON_SNIPPET):
        text = blocks[name]
        if name == "WORKSPACE":
            text = archive_workspace(archive.as_uri(), sha256)
            assert "local_repository" not in text and str(REPO) not in text, text
        (workspace / name).write_text(text)
    (workspace / ".venv").symlink_to(VENV)

    try:
        release_bazel(workspace, "build", "//:libmyops.so")
        output_base = Path(release_bazel(workspace, "info", "output_base").stdout.strip())
    finally:
        release_bazel(workspace, "shutdown")
    assert (workspace / "bazel-bin" / "libmyops.so").is_file()
    # @rules_aten is the archive, unpacked: exactly its files, with their bytes.
    external = output_base / "external" / "rules_aten"
    assert not external.is_symlink(), external
    unpacked = {
        str(p.relative_to(external)): p.read_bytes()
        for p in external.rglob("*")
        if p.is_file() or p.is_symlink()
    }
    prefix = f"rules_aten-{version}/"
    with tarfile.open(archive, "r:gz") as tar:
        packed = {m.name.removeprefix(prefix): tar.extractfile(m).read() for m in tar.getmembers()}
    # http_archive writes a WORKSPACE of its own over the archive's.
    assert unpacked.pop("WORKSPACE") == b'workspace(name = "rules_aten")\n'
    assert packed.pop("WORKSPACE").startswith(b'workspace(name = "rules_aten")\n')
    assert unpacked == packed, sorted(unpacked.keys() ^ packed.keys())
    assert "rules/defs.bzl" in unpacked and not any(p.startswith("tests/") for p in unpacked)

    assert run_snippet(workspace) == EXPECTED_OUTPUT
    size = archive.stat().st_size
    summary.append(
        f"release archive: the quickstart built libmyops.so from {archive.name} "
        f"({size} bytes, file://, sha256 {sha256[:12]}...) and printed {EXPECTED_OUTPUT}"
    )
