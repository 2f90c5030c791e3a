"""rules_aten on Bazel 7.7.1, the path Bazel 8 and 9 users take: Bzlmod with WORKSPACE off
(`--noenable_workspace`), and WORKSPACE too. The slice `bazel7` (tests/support/slices.py): `./dev
test-bazel7` runs this module in the Debian sid chroot of devtools/bazel7/chroot.sh, where `bazel` is
Debian's 7.7.1 and its rule sets are Debian's packages (the chroot's /etc/bazel/bazelrc maps each
module to its package with --override_module). Elsewhere (`./dev test`, Bazel 4.2.3) it skips, or
fails with one line where the slice is required.

- the README's Bzlmod quickstart (MODULE.bazel, with its local_path_override of this checkout)
  built and run, and the README's WORKSPACE quickstart with WORKSPACE on and Bzlmod off;
- examples/ as the Bazel Central Registry's test module: .bcr/presubmit.yml's targets, with its
  flags, in a copy of this checkout (whose rules_aten is the module's local_path_override);
- rules_aten as the root module, in that copy: //:aten_model_check, //:aten_generated and
  //:libaten_generated.so (of two ops), no warning from its extension, and a MODULE.bazel.lock
  written the same by two runs; `bazel query //...` after the examples' build left its bazel-* links;
- a MODULE.bazel without `use_repo(rules_aten, "torch")`: one line saying what to add.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

import pytest
import yaml

from tests.support import slices
from tests.support.bazel_helpers import EXAMPLE_ENV, REPO, bazel, own_output_base, run_demo
from tests.support.quickstart_helpers import (
    MODULE_FILES,
    PYTHON_SNIPPET,
    run_snippet,
    write_workspace,
)

pytestmark = pytest.mark.bazel

BAZEL7_ENV = "RULES_ATEN_BAZEL7"
WANT_VERSION = "7.7.1"
if os.environ.get(BAZEL7_ENV) != "1":
    slices.missing("bazel7", f"not in the Bazel {WANT_VERSION} chroot (${BAZEL7_ENV} is not 1)")

# Bzlmod only: Bazel 8's default, and all Bazel 9 has.
BZLMOD = ("--noenable_workspace", "--enable_bzlmod")
WORKSPACE_ONLY = ("--enable_workspace", "--noenable_bzlmod")
# What Bazel prints when a module extension's result cannot go into MODULE.bazel.lock.
INVALID_LOCKFILE = "invalid lockfile entry"
# Output bases and workspaces in the chroot's /tmp, kept between runs of the slice.
BASE = Path(tempfile.gettempdir()) / "rules_aten_bazel7"
QUICKSTART_OUTPUT = "tensor([0., 2., 4.])"
# Never copied into the checkout's copy: build outputs, venvs, caches, version control.
COPY_IGNORE = shutil.ignore_patterns(
    ".git", ".venv", "node_modules", "bazel-*", "__pycache__", ".mypy_cache", ".ruff_cache",
    ".pytest_cache", "dist", "MODULE.bazel.lock",
)  # fmt: skip


def _bazel7(cwd: Path, name: str, *args: str, check: bool = True, env=None):
    return bazel(
        *args, cwd=cwd, startup=own_output_base(BASE / f"{name}_output_base"), env=env,
        check=check,
    )  # fmt: skip


def _shutdown(cwd: Path, name: str) -> None:
    _bazel7(cwd, name, "shutdown", check=False)


def _extension_warnings(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if INVALID_LOCKFILE in line]


def test_bazel_is_debians_7_7_1() -> None:
    result = subprocess.run(
        ["dpkg-query", "-W", "-f=${Version}", "bazel-bootstrap"], capture_output=True, text=True
    )
    assert result.stdout.startswith(WANT_VERSION + "+"), result


# --- The README's quickstart, both installs --------------------------------------------------


def _module_quickstart(root: Path) -> Path:
    return write_workspace(root, REPO / ".venv", (*MODULE_FILES, PYTHON_SNIPPET))


def test_readme_bzlmod_quickstart_builds_and_runs(summary: list[str]) -> None:
    ws = _module_quickstart(BASE / "quickstart_module")
    assert not (ws / "WORKSPACE").exists()
    env = {k: v for k, v in os.environ.items() if not k.startswith("RULES_ATEN_")}
    try:
        start = time.monotonic()
        result = _bazel7(ws, "quickstart_module", "build", *BZLMOD, "//:libmyops.so", env=env)
        summary.append(f"bazel7: Bzlmod quickstart build {time.monotonic() - start:.0f} s")
        assert _extension_warnings(result.stderr) == [], result.stderr[-4000:]
        assert run_snippet(ws) == QUICKSTART_OUTPUT
        assert (ws / "MODULE.bazel.lock").is_file()
    finally:
        _shutdown(ws, "quickstart_module")


def test_readme_workspace_quickstart_builds_and_runs(summary: list[str]) -> None:
    """The README's WORKSPACE block (rules_aten_debian_dependencies() and all) as written, with
    the local_repository of this checkout, on Bazel 7 with Bzlmod off."""
    ws = write_workspace(BASE / "quickstart_workspace", REPO / ".venv", (
        "WORKSPACE", ".bazelrc", "ops.yaml", "kernels.cpp", "BUILD.bazel", PYTHON_SNIPPET,
    ))  # fmt: skip
    env = {k: v for k, v in os.environ.items() if not k.startswith("RULES_ATEN_")}
    try:
        start = time.monotonic()
        _bazel7(ws, "quickstart_workspace", "build", *WORKSPACE_ONLY, "//:libmyops.so", env=env)
        summary.append(f"bazel7: WORKSPACE quickstart build {time.monotonic() - start:.0f} s")
        assert run_snippet(ws) == QUICKSTART_OUTPUT
    finally:
        _shutdown(ws, "quickstart_workspace")


def test_forgotten_use_repo_says_what_to_add() -> None:
    """A MODULE.bazel without `use_repo(rules_aten, "torch")`: the BUILD file's `@torch//:...`
    fails with one line naming what to add."""
    ws = _module_quickstart(BASE / "quickstart_no_use_repo")
    module = ws / "MODULE.bazel"
    text = module.read_text()
    assert 'use_repo(rules_aten, "torch")\n' in text
    module.write_text(text.replace('use_repo(rules_aten, "torch")\n', ""))
    try:
        result = _bazel7(
            ws, "quickstart_no_use_repo", "build", *BZLMOD, "//:libmyops.so", check=False,
            env={**EXAMPLE_ENV},
        )  # fmt: skip
        assert result.returncode != 0
        lines = [
            line for line in result.stderr.splitlines() if 'use_repo(rules_aten, "torch")' in line
        ]
        assert len(lines) == 1, result.stderr[-4000:]
        print(lines[0])  # what the user sees (pytest -s)
    finally:
        _shutdown(ws, "quickstart_no_use_repo")


# --- examples/ as the registry's test module, and rules_aten as the root module ---------------


@pytest.fixture(scope="module")
def checkout_copy() -> Path:
    """This checkout's files in the chroot's /tmp (Bazel writes bazel-* links and MODULE.bazel.lock
    into the workspace it builds, and this checkout is Bazel 4's)."""
    copy = BASE / "checkout"
    shutil.rmtree(copy, ignore_errors=True)
    shutil.copytree(REPO, copy, ignore=COPY_IGNORE, symlinks=True)
    (copy / ".venv").symlink_to(REPO / ".venv")
    return copy


def _presubmit_module_task() -> dict:
    presubmit = yaml.safe_load((REPO / ".bcr" / "presubmit.yml").read_text())
    module = presubmit["bcr_test_module"]
    assert module["module_path"] == "examples"
    (task,) = module["tasks"].values()
    return task


@pytest.fixture(scope="module")
def examples_built(checkout_copy: Path, summary: list[str]) -> Path:
    task = _presubmit_module_task()
    examples = checkout_copy / "examples"
    start = time.monotonic()
    try:
        result = _bazel7(
            examples, "examples", "build", *BZLMOD, *task["build_flags"], *task["build_targets"],
            env=EXAMPLE_ENV,
        )  # fmt: skip
    finally:
        _shutdown(examples, "examples")
    summary.append(
        f"bazel7: examples module, {len(task['build_targets'])} targets {time.monotonic() - start:.0f} s"
    )
    assert _extension_warnings(result.stderr) == [], result.stderr[-4000:]
    return examples


def test_examples_module_builds_the_presubmit_targets(examples_built: Path) -> None:
    bin_dir = examples_built / "bazel-bin"
    for target in _presubmit_module_task()["build_targets"]:
        package, name = target.removeprefix("//").split(":")
        assert (bin_dir / package / name).is_file(), target


def test_backend_outside_the_root_package_finds_its_headers(examples_built: Path) -> None:
    """//privateuse1_backend (not the root package): its kernels include the generated header
    as "PrivateUse1NativeFunctions.h" and the generated sources its YAML's extra_headers as
    "host_device.h", both found."""
    codegen = examples_built / "bazel-bin" / "privateuse1_backend" / "host_device_codegen"
    assert (codegen / "include" / "privateuse1_backend" / "PrivateUse1NativeFunctions.h").is_file()
    # And it loads and runs: the example's demo, every check passed, on the device.
    library = examples_built / "bazel-bin" / "privateuse1_backend" / "libhost_device.so"
    report = run_demo(examples_built / "privateuse1_backend" / "demo.py", library)
    assert (
        "privateuse1_backend/host_device_codegen/"
        in report["details"]["dispatch"]["add.out"]["PrivateUse1"]
    ), report["details"]["dispatch"]


@pytest.fixture(scope="module")
def root_module(checkout_copy: Path, examples_built: Path, summary: list[str]):
    targets = ("//:aten_model_check", "//:aten_generated", "//:libaten_generated.so")
    # Two ops, not the default sixty: the root module's extension, lockfile and generator are
    # what is checked here, not its compiles (which ./dev test runs on Bazel 4.2.3).
    ops = ("--//:aten_ops=add,abs",)
    lock = checkout_copy / "MODULE.bazel.lock"
    lock.unlink(missing_ok=True)
    try:
        start = time.monotonic()
        first = _bazel7(checkout_copy, "root", "build", *BZLMOD, *ops, *targets)
        summary.append(
            f"bazel7: root module, {' '.join((*ops, *targets))} {time.monotonic() - start:.0f} s"
        )
        first_lock = lock.read_bytes() if lock.exists() else b""
        release = _bazel7(checkout_copy, "root", "info", *BZLMOD, "release").stdout.strip()
        _shutdown(checkout_copy, "root")
        # A new server: the extension's result comes from the lockfile, which must be current. A
        # development build of Bazel (Debian's bazel-bootstrap says "development version") writes
        # an empty lockfile, `{}`, which --lockfile_mode=error then refuses as of no version.
        mode = ("--lockfile_mode=error",) if release.startswith("release ") else ()
        second = _bazel7(checkout_copy, "root", "build", *BZLMOD, *mode, *ops, *targets)
        query = _bazel7(checkout_copy, "root", "query", *BZLMOD, "//...", check=False)
        yield {
            "stderr": first.stderr + second.stderr,
            "locks": (first_lock, lock.read_bytes() if lock.exists() else b""),
            "release": release,
            "query": query,
        }
    finally:
        _shutdown(checkout_copy, "root")


def test_root_module_builds_without_extension_warnings(root_module: dict) -> None:
    assert _extension_warnings(root_module["stderr"]) == [], root_module["stderr"][-4000:]
    assert not re.search(r"WARNING: .*rules_aten", root_module["stderr"]), root_module["stderr"][
        -4000:
    ]


def test_root_module_lockfile_is_written_and_stable(root_module: dict) -> None:
    first, second = root_module["locks"]
    assert first and first == second, (first[:2000], second[:2000])
    if root_module["release"].startswith("release "):
        assert b"rules_aten" in first, first[:2000]
    else:
        # What a development build of Bazel writes (see the root_module fixture): the extension's
        # entry cannot be checked with it, only that nothing warns about it.
        assert root_module["release"] == "development version", root_module["release"]
        assert first.strip() == b"{}", first[:2000]


def test_root_query_after_the_examples_build(root_module: dict) -> None:
    """examples/ holds a module of its own, with bazel-* links after its build."""
    query = root_module["query"]
    assert query.returncode == 0, query.stderr[-4000:]
    assert "//:aten_generated" in query.stdout.split()
