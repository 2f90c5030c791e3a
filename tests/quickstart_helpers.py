"""The README's quickstart blocks as files of a workspace, for tests/test_quickstart.py and the
edit-loop benchmark (benchmarks/bench_edit_loop.py), which build the same workspace.

The code blocks that README.md marks with `<!-- quickstart: NAME -->` are written, unchanged
except for the path of this checkout in the WORKSPACE's local_repository, into a directory outside
the repository as the files NAME; `.venv` there links to this checkout's `.venv`.
"""

from __future__ import annotations

import hashlib
import re
import shutil
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
README = REPO / "README.md"
VENV = REPO / ".venv"

# `<!-- quickstart: NAME -->`, then a fenced block: NAME and the block's text.
QUICKSTART_BLOCK = re.compile(
    r"^<!-- quickstart: (\S+) -->\n```[^\n]*\n(.*?)^```$", re.MULTILINE | re.DOTALL
)
WORKSPACE_FILES = ("WORKSPACE", ".bazelrc", "ops.yaml", "kernels.cpp", "BUILD.bazel")
PYTHON_SNIPPET = "use_myops.py"
COMMANDS = "commands"
CHECKOUT_PLACEHOLDER = '"/path/to/rules_aten"'


def quickstart_blocks() -> dict[str, str]:
    blocks: dict[str, str] = {}
    for name, text in QUICKSTART_BLOCK.findall(README.read_text()):
        assert name not in blocks, f"README.md: two quickstart blocks named {name}"
        blocks[name] = text
    return blocks


def quickstart_base() -> Path:
    """Where the quickstart workspace and its output base live: in the temporary directory, kept
    between runs and keyed by this checkout's path, so that a second run finds its build."""
    key = hashlib.sha256(str(REPO).encode()).hexdigest()[:12]
    return Path(tempfile.gettempdir()) / f"rules_aten_quickstart_{key}"


def write_quickstart_workspace() -> Path:
    """The quickstart workspace, written afresh (its output base is kept); returns its root."""
    workspace = quickstart_base() / "workspace"
    shutil.rmtree(workspace, ignore_errors=True)
    workspace.mkdir(parents=True)
    assert not workspace.is_relative_to(REPO)
    blocks = quickstart_blocks()
    for name in (*WORKSPACE_FILES, PYTHON_SNIPPET):
        text = blocks[name]
        if name == "WORKSPACE":
            text = text.replace(CHECKOUT_PLACEHOLDER, f'"{REPO}"')
        (workspace / name).write_text(text)
    (workspace / ".venv").symlink_to(VENV)
    return workspace


def quickstart_startup() -> tuple[str, ...]:
    """Bazel startup options of the quickstart workspace: its own output base."""
    return (f"--output_base={quickstart_base() / 'output_base'}", "--max_idle_secs=120")
