"""@torch follows the torch it describes. The workspace's `.venv` pointed at another torch, or at
a venv without one, sets @torch up again at the next build (same Bazel server, no `bazel sync`);
a torch outside the workspace that changes in place stops the generator with one line.

@torch's headers and libraries are symlinks into the wheel, which a build follows by itself; its
facts (torch_facts.json, which the generator reads, and defs.bzl) come from the probe, which runs
when the repository is set up. rules/private/repositories/torch.bzl reads the venv's pyvenv.cfg and
torch/version.py by label, so Bazel 4 sets the repository up again when either changes, the
`.venv` link included; it cannot name a file outside the workspace so, and there the generator
compares @torch//:version.py, a link to the wheel's, with the facts. Each case builds the README
quickstart's workspace with a genrule that copies @torch//:torch_facts.json, and checks the
release it names against the one the venv's own interpreter imports.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from tests.support import slices
from tests.support.bazel_helpers import REPO, VENV_PYTHON, bazel, one_fail_message, own_output_base
from tests.support.quickstart_helpers import write_workspace
from tests.support.release_venvs import VENVS_DIR, installed_venv

pytestmark = pytest.mark.bazel

_KEY = hashlib.sha256(str(REPO).encode()).hexdigest()[:12]
BASE = Path(tempfile.gettempdir()) / f"rules_aten_torch_changes_{_KEY}"
STARTUP = own_output_base(BASE / "output_base")
# What the build copies of @torch: the facts the generator reads.
FACTS_RULE = """
genrule(
    name = "torch_facts",
    srcs = ["@torch//:torch_facts.json"],
    outs = ["torch_facts_copy.json"],
    cmd = "cp $< $@",
)
"""
TARGETS = ("//:torch_facts", "//:myops_codegen")


@pytest.fixture(scope="module")
def workspace() -> Path:
    root = write_workspace(BASE / "workspace", REPO / ".venv")
    with (root / "BUILD.bazel").open("a") as f:
        f.write(FACTS_RULE)
    yield root
    bazel("shutdown", cwd=root, startup=STARTUP, check=False)


def _env(**settings: str) -> dict[str, str]:
    # No RULES_ATEN_PYTHON unless given: the interpreter is the workspace's .venv, as in the
    # quickstart.
    env = {k: v for k, v in os.environ.items() if not k.startswith("RULES_ATEN_")}
    env["RULES_ATEN_CUDA_DIR"] = "none"
    # @local_cuda's line, which _builds_with counts to see the repository set up again, is
    # printed for a CPU torch only when asked.
    env["RULES_ATEN_VERBOSE"] = "1"
    env.update(settings)
    return env


def _point_venv(workspace: Path, venv: Path) -> None:
    link = workspace / ".venv"
    link.unlink()
    link.symlink_to(venv)


def _torch_version(venv: Path) -> str:
    """torch.__version__ as the venv's own interpreter imports it."""
    result = subprocess.run(
        [str(venv / "bin" / "python3"), "-c", "import torch; print(torch.__version__)"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    return result.stdout.strip()


def _build(workspace: Path, **settings: str) -> subprocess.CompletedProcess[str]:
    env = _env(**settings)
    return bazel("build", *TARGETS, cwd=workspace, startup=STARTUP, env=env, check=False)


def _builds_with(workspace: Path, venv: Path, repointed: bool = True, **settings: str) -> None:
    """The build succeeds with the facts of the venv's torch; after `.venv` was pointed at
    another venv, @local_cuda, which reads @torch's defs.bzl, is set up again too, and its line
    names the venv's torch."""
    version = _torch_version(venv)
    result = _build(workspace, **settings)
    assert result.returncode == 0, result.stderr[-6000:]
    facts = json.loads((workspace / "bazel-bin" / "torch_facts_copy.json").read_text())
    assert facts["version"] == version, (facts["version"], version)
    lines = [line for line in result.stderr.splitlines() if "rules_aten: no CUDA toolkit" in line]
    if repointed:
        assert len(lines) == 1, result.stderr[-4000:]
    assert all(f"for torch {version} (" in line for line in lines), lines


def _release_venv(version: str) -> Path:
    venv = installed_venv(version)
    if venv is None:
        slices.missing("releases", f"no venv of torch {version} under {VENVS_DIR}")
    return venv


@pytest.mark.parametrize("version", ["2.11.0", "2.15.0"])
def test_a_repointed_venv_is_built_with_its_own_torch(workspace: Path, version: str):
    other = _release_venv(version)
    default = VENV_PYTHON.parent.parent
    assert _torch_version(other) != _torch_version(default)
    _point_venv(workspace, default)
    _builds_with(workspace, default, repointed=False)
    _point_venv(workspace, other)
    _builds_with(workspace, other)
    _point_venv(workspace, default)
    _builds_with(workspace, default)


@pytest.fixture(scope="module")
def venv_without_torch() -> Path:
    venv = BASE / "venv_without_torch"
    if not (venv / "bin" / "python3").exists():
        subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    found = subprocess.run([str(venv / "bin" / "python3"), "-c", "import torch"], check=False)
    assert found.returncode != 0, f"{venv} imports torch"
    return venv


def test_a_venv_repointed_to_one_without_torch_is_one_message(
    workspace: Path, venv_without_torch: Path
):
    default = VENV_PYTHON.parent.parent
    _point_venv(workspace, default)
    _builds_with(workspace, default, repointed=False)
    _point_venv(workspace, venv_without_torch)
    result = _build(workspace)
    message = one_fail_message(
        result,
        f"rules_aten: cannot locate torch with {workspace}/.venv/bin/python3 (.venv): "
        "cannot import torch: ModuleNotFoundError",
    )
    assert message.endswith("then run `bazel sync --configure`"), message
    assert "missing input file" not in result.stderr, result.stderr[-4000:]
    # Pointed back, the next build finds torch again, still without a sync.
    _point_venv(workspace, default)
    _builds_with(workspace, default)


def test_a_torch_outside_the_workspace_changed_in_place_stops_the_generator(workspace: Path):
    """RULES_ATEN_PYTHON is the interpreter of a venv link outside the workspace, which Bazel 4
    does not watch: pointed at another torch, the build stops at the generator with one line,
    until `bazel sync --configure` sets @torch up again."""
    other = _release_venv("2.15.0")
    default = VENV_PYTHON.parent.parent
    link = BASE / "venv_link"
    link.unlink(missing_ok=True)
    link.symlink_to(default)
    python = str(link / "bin" / "python3")
    try:
        _builds_with(workspace, default, repointed=False, RULES_ATEN_PYTHON=python)
        link.unlink()
        link.symlink_to(other)
        result = _build(workspace, RULES_ATEN_PYTHON=python)
        assert result.returncode != 0, result.stderr[-4000:]
        (version_py,) = (other / "lib").glob("python3*/site-packages/torch/version.py")
        line = (
            f"{version_py.resolve()}:1: error: rules_aten: @torch describes torch "
            f"{_torch_version(default)}, but this torch/version.py now names torch "
            f"{_torch_version(other)}: torch changed after @torch was set up; run "
            "`bazel sync --configure` to set it up again"
        )
        lines = [x for x in result.stderr.splitlines() if "@torch describes torch" in x]
        assert lines == [line], result.stderr[-4000:]
        sync = bazel(
            "sync",
            "--configure",
            cwd=workspace,
            startup=STARTUP,
            env=_env(RULES_ATEN_PYTHON=python),
            check=False,
        )
        assert sync.returncode == 0, sync.stderr[-4000:]
        _builds_with(workspace, other, repointed=False, RULES_ATEN_PYTHON=python)
    finally:
        link.unlink(missing_ok=True)
