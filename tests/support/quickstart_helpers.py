"""The README's quickstart blocks as files of a workspace, for tests/workspaces/test_quickstart.py and the
edit-loop benchmark (benchmarks/bench_edit_loop.py), which build the same workspace.

The code blocks that README.md marks with `<!-- quickstart: NAME -->` are written, unchanged
except for the path of this checkout in the WORKSPACE's local_repository, into a directory outside
the repository as the files NAME; `.venv` there links to this checkout's `.venv`, or to the venv of
$RULES_ATEN_PYTHON when that is set.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
README = REPO / "README.md"
# The venv that the workspace's `.venv` links to: this checkout's, or the one whose interpreter
# RULES_ATEN_PYTHON names (./dev test-releases: the venvs of other torch releases). Bazel itself
# runs without RULES_ATEN_PYTHON and finds `.venv`, as the quickstart says.
VENV = (
    Path(os.environ["RULES_ATEN_PYTHON"]).absolute().parent.parent
    if os.environ.get("RULES_ATEN_PYTHON")
    else REPO / ".venv"
)

# `<!-- quickstart: NAME -->`, then a fenced block: NAME and the block's text.
QUICKSTART_BLOCK = re.compile(
    r"^<!-- quickstart: (\S+) -->\n```[^\n]*\n(.*?)^```$", re.MULTILINE | re.DOTALL
)
WORKSPACE_FILES = ("WORKSPACE", ".bazelrc", "ops.yaml", "kernels.cpp", "BUILD.bazel")
# The Bzlmod quickstart: the same files with MODULE.bazel (and the README's local_path_override of
# a clone appended to it) instead of WORKSPACE (tests/slices/bazel7/test_bazel7.py builds it).
MODULE_FILES = ("MODULE.bazel", ".bazelrc", "ops.yaml", "kernels.cpp", "BUILD.bazel")
LOCAL_PATH_OVERRIDE = "local_path_override"
PYTHON_SNIPPET = "use_myops.py"
COMMANDS = "commands"
CHECKOUT_PLACEHOLDER = '"/path/to/rules_aten"'
# The README's alternative to the http_archive: a local_repository of a clone.
LOCAL_REPOSITORY = "local_repository"
# The http_archive of rules_aten in the WORKSPACE block, with the load of http_archive before it.
HTTP_ARCHIVE = re.compile(
    r'^load\("@bazel_tools//tools/build_defs/repo:http\.bzl", "http_archive"\)\n\n'
    r'http_archive\(\n    name = "rules_aten",\n.*?^\)\n',
    re.MULTILINE | re.DOTALL,
)
HTTP_ARCHIVE_SHA256 = re.compile(r'^    sha256 = "[^"]*",$', re.MULTILINE)
HTTP_ARCHIVE_URLS = re.compile(r'^    urls = \["[^"]*"\],$', re.MULTILINE)
HTTP_ARCHIVE_STRIP_PREFIX = re.compile(r'^    strip_prefix = "([^"]*)",$', re.MULTILINE)


def readme_blocks(readme: Path = README) -> dict[str, str]:
    """Every block README.md (or `readme`) marks `<!-- quickstart: NAME -->`, as written."""
    blocks: dict[str, str] = {}
    for name, text in QUICKSTART_BLOCK.findall(readme.read_text()):
        assert name not in blocks, f"README.md: two quickstart blocks named {name}"
        blocks[name] = text
    return blocks


def http_archive_of(workspace: str) -> str:
    """The WORKSPACE block's http_archive of rules_aten (with the load before it)."""
    matches = HTTP_ARCHIVE.findall(workspace)
    assert len(matches) == 1, (
        f"README.md's WORKSPACE block: {len(matches)} http_archive of rules_aten"
    )
    return matches[0]


def quickstart_blocks(readme: Path = README) -> dict[str, str]:
    """The quickstart's files, the WORKSPACE with the README's local_repository alternative in
    place of the http_archive (its path CHECKOUT_PLACEHOLDER)."""
    blocks = readme_blocks(readme)
    local = blocks.pop(LOCAL_REPOSITORY)
    assert local.count(CHECKOUT_PLACEHOLDER) == 1, local
    workspace = blocks["WORKSPACE"]
    blocks["WORKSPACE"] = workspace.replace(http_archive_of(workspace), local)
    override = blocks.pop(LOCAL_PATH_OVERRIDE)
    assert override.count(CHECKOUT_PLACEHOLDER) == 1, override
    blocks["MODULE.bazel"] += "\n" + override
    return blocks


def archive_workspace(url: str, sha256: str) -> str:
    """The README's WORKSPACE block as written, its http_archive given url and sha256."""
    workspace = readme_blocks()["WORKSPACE"]
    archive = http_archive_of(workspace)
    for pattern in (HTTP_ARCHIVE_SHA256, HTTP_ARCHIVE_URLS):
        assert len(pattern.findall(archive)) == 1, archive
    written = HTTP_ARCHIVE_SHA256.sub(f'    sha256 = "{sha256}",', archive)
    written = HTTP_ARCHIVE_URLS.sub(f'    urls = ["{url}"],', written)
    return workspace.replace(archive, written)


def quickstart_base() -> Path:
    """Where the quickstart workspace and its output base live: in the temporary directory, kept
    between runs and keyed by this checkout's path, so that a second run finds its build."""
    key = hashlib.sha256(str(REPO).encode()).hexdigest()[:12]
    if VENV != REPO / ".venv":  # one workspace and output base per venv
        key += "_" + hashlib.sha256(str(VENV).encode()).hexdigest()[:8]
    return Path(tempfile.gettempdir()) / f"rules_aten_quickstart_{key}"


def write_quickstart_workspace() -> Path:
    """The quickstart workspace, written afresh (its output base is kept); returns its root."""
    workspace = quickstart_base() / "workspace"
    assert not workspace.is_relative_to(REPO)
    return write_workspace(workspace, VENV, (*WORKSPACE_FILES, PYTHON_SNIPPET))


def write_workspace(root: Path, venv: Path, names=WORKSPACE_FILES, checkout: Path = REPO) -> Path:
    """``root`` made afresh with the README's blocks ``names`` (WORKSPACE pointing at this
    checkout, or at the README and code of ``checkout``) and a ``.venv`` link to ``venv``;
    returns ``root``."""
    shutil.rmtree(root, ignore_errors=True)
    root.mkdir(parents=True)
    blocks = quickstart_blocks(checkout / "README.md")
    for name in names:
        text = blocks[name]
        if name in ("WORKSPACE", "MODULE.bazel"):
            text = text.replace(CHECKOUT_PLACEHOLDER, f'"{checkout}"')
        (root / name).write_text(text)
    (root / ".venv").symlink_to(venv)
    return root


def run_snippet(workspace: Path) -> str:
    """The README's Python snippet, run with the workspace's .venv; the last line it prints."""
    result = subprocess.run(
        [str(workspace / ".venv" / "bin" / "python"), PYTHON_SNIPPET],
        cwd=workspace,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr[-4000:]
    return result.stdout.strip().splitlines()[-1]


def quickstart_startup() -> tuple[str, ...]:
    """Bazel startup options of the quickstart workspace: its own output base."""
    return (f"--output_base={quickstart_base() / 'output_base'}", "--max_idle_secs=120")
