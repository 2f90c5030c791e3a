"""The README's quickstart, run as a user would run it.

The code blocks that README.md marks with `<!-- quickstart: NAME -->` are written, unchanged
except for the path of this checkout in the WORKSPACE's local_repository, into a fresh directory
outside the repository as the files NAME. `.venv` there is a link to this checkout's `.venv`, so
rules_aten finds the interpreter the way the quickstart says (no RULES_ATEN_PYTHON). Then
`bazel build //:lib<name>.so` builds the aten_codegen() library, and the README's Python snippet
runs with `.venv/bin/python` against it.

The workspace directory is removed and written again on every run, but at a path kept in the
temporary directory (keyed by this checkout's path), with its output base beside it: a second
run of the suite finds the build up to date instead of fetching and compiling again.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

from tests import bazel_helpers

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
LIBRARY_NAME = re.compile(r'aten_codegen\(\n\s+name = "(\w+)"')

# scale(arange(3), 2.0), computed by hand.
EXPECTED_OUTPUT = "tensor([0., 2., 4.])"


def quickstart_blocks() -> dict[str, str]:
    blocks: dict[str, str] = {}
    for name, text in QUICKSTART_BLOCK.findall(README.read_text()):
        assert name not in blocks, f"README.md: two quickstart blocks named {name}"
        blocks[name] = text
    return blocks


def test_readme_has_every_quickstart_block() -> None:
    blocks = quickstart_blocks()
    assert set(blocks) == {*WORKSPACE_FILES, PYTHON_SNIPPET, COMMANDS}, sorted(blocks)
    assert blocks["WORKSPACE"].count(CHECKOUT_PLACEHOLDER) == 1, blocks["WORKSPACE"]


@pytest.fixture(scope="module")
def quickstart_workspace() -> Path:
    if shutil.which("bazel") is None:
        pytest.fail("bazel is not on PATH; run ./dev setup")
    if not (VENV / "bin" / "python3").exists():
        pytest.fail(f"{VENV}/bin/python3 missing; run ./dev setup")
    key = hashlib.sha256(str(REPO).encode()).hexdigest()[:12]
    base = Path(tempfile.gettempdir()) / f"rules_aten_quickstart_{key}"
    workspace = base / "workspace"
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


def quickstart_bazel(workspace: Path, *args: str):
    env = {k: v for k, v in os.environ.items() if not k.startswith("RULES_ATEN_")}
    startup = (f"--output_base={workspace.parent / 'output_base'}", "--max_idle_secs=120")
    return bazel_helpers.bazel(*args, cwd=workspace, startup=startup, env=env)


def test_quickstart_builds_and_runs(quickstart_workspace: Path, summary: list[str]) -> None:
    blocks = quickstart_blocks()
    names = LIBRARY_NAME.findall(blocks["BUILD.bazel"])
    assert len(names) == 1, blocks["BUILD.bazel"]
    library = f"lib{names[0]}.so"
    commands = blocks[COMMANDS].splitlines()
    assert commands == [f"bazel build //:{library}", f".venv/bin/python {PYTHON_SNIPPET}"], commands

    try:
        quickstart_bazel(quickstart_workspace, "build", f"//:{library}")
        output_base = Path(
            quickstart_bazel(quickstart_workspace, "info", "output_base").stdout.strip()
        )
    finally:
        quickstart_bazel(quickstart_workspace, "shutdown")
    assert (quickstart_workspace / "bazel-bin" / library).is_file()
    # The interpreter came from the workspace's .venv, as the quickstart says.
    interpreter = output_base / "external" / "rules_aten_python" / "interpreter.txt"
    assert interpreter.read_text().split("\n")[2] == ".venv", interpreter.read_text()

    result = subprocess.run(
        [str(quickstart_workspace / ".venv" / "bin" / "python"), PYTHON_SNIPPET],
        cwd=quickstart_workspace,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr[-4000:]
    assert result.stdout.strip().splitlines()[-1] == EXPECTED_OUTPUT, result.stdout
    summary.append(f"quickstart: built {library} and printed {EXPECTED_OUTPUT}")
