"""A problem the repository rules find (no torch, an unsupported release, no usable Python or one
whose copy would still read its installation, a toolkit directory without headers, a failed pip
install) is one message, printed once.

Each case builds the README quickstart's workspace (`bazel build --nobuild`: loading and analysis,
where the message surfaces) with one bad setting, and counts the message in Bazel's output. The
repository rules write such a problem into the repository as a target whose analysis fails
(rules/private/repositories/repo_error.bzl), instead of calling fail(), which Bazel 4.2.3 prints four times
in two tracebacks. A fix by an environment variable is picked up by itself; one in place (torch
installed into the same interpreter) after `bazel sync --configure`, as the message says.
"""

from __future__ import annotations

import hashlib
import importlib
import os
import subprocess
import sys
import sysconfig
import tempfile
from pathlib import Path

import pytest

from atengen.facts import torch_facts as tf
from tests.support.bazel_helpers import REPO, VENV_PYTHON, bazel, one_fail_message, own_output_base
from tests.support.quickstart_helpers import write_workspace

pytestmark = pytest.mark.bazel

_KEY = hashlib.sha256(str(REPO).encode()).hexdigest()[:12]
BASE = Path(tempfile.gettempdir()) / f"rules_aten_repo_errors_{_KEY}"
TARGET = "//:libmyops.so"


@pytest.fixture(scope="module")
def workspace() -> Path:
    """The quickstart's workspace, with a .venv link to this checkout's (the good interpreter)."""
    root = write_workspace(BASE / "workspace", REPO / ".venv")
    yield root
    for output_base in ("output_base", "output_base_pip"):
        bazel("shutdown", cwd=root, startup=own_output_base(BASE / output_base), check=False)


@pytest.fixture(scope="module")
def python_without_torch() -> Path:
    """A venv of the same Python, with pip and without torch."""
    venv = BASE / "venv_without_torch"
    python = venv / "bin" / "python3"
    if not python.exists():
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    found = subprocess.run([str(python), "-c", "import torch"], capture_output=True, text=True)
    assert found.returncode != 0, f"{python} imports torch"
    return python


def _env(**settings: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("RULES_ATEN_")}
    env["RULES_ATEN_CUDA_DIR"] = "none"
    env.update(settings)
    return {k: v for k, v in env.items() if v}


def _build(workspace: Path, env: dict[str, str], output_base: str = "output_base", *extra: str):
    return bazel(
        "build",
        "--nobuild",
        *extra,
        TARGET,
        cwd=workspace,
        startup=own_output_base(BASE / output_base),
        env=env,
        check=False,
    )


def _the_one_message(result: subprocess.CompletedProcess, start: str) -> str:
    """Asserts the build failed with the message that starts with `start`, printed once; returns it."""
    message = one_fail_message(result, start)
    # Printed once: no other line repeats it (no "no such package ...: <message>" either).
    assert result.stderr.count(message) == 1, result.stderr[-6000:]
    assert result.stderr.count(start) == 1, result.stderr[-6000:]
    assert result.stderr.count("Traceback") == 1, result.stderr[-6000:]
    errors = [line for line in result.stderr.splitlines() if line.startswith("ERROR:")]
    assert len(errors) == 2, errors  # where it failed, and "Analysis of target ... failed"
    return message


def test_a_python_without_torch_is_one_message(workspace: Path, python_without_torch: Path):
    result = _build(workspace, _env(RULES_ATEN_PYTHON=str(python_without_torch)))
    message = _the_one_message(
        result,
        f"rules_aten: cannot locate torch with {python_without_torch} (RULES_ATEN_PYTHON): "
        "cannot import torch: ModuleNotFoundError",
    )
    assert message.endswith("then run `bazel sync --configure`"), message


def test_torch_installed_in_place_is_found_after_bazel_sync_configure(
    workspace: Path, python_without_torch: Path
):
    """The interpreter is a wrapper that runs the venv without torch until a file exists (torch
    "installed" in place): the error stays until `bazel sync --configure`, as the message says."""
    flag = BASE / "torch_installed"
    flag.unlink(missing_ok=True)
    wrapper = BASE / "wrapper_python3"
    wrapper.write_text(
        f'#!/bin/sh\nif [ -e "{flag}" ]; then exec "{VENV_PYTHON}" "$@"; fi\n'
        f'exec "{python_without_torch}" "$@"\n'
    )
    wrapper.chmod(0o755)
    env = _env(RULES_ATEN_PYTHON=str(wrapper))
    _the_one_message(_build(workspace, env), f"rules_aten: cannot locate torch with {wrapper}")
    flag.write_text("")
    try:
        # Without a new fetch the repository still holds the error.
        _the_one_message(_build(workspace, env), f"rules_aten: cannot locate torch with {wrapper}")
        sync = bazel(
            "sync",
            "--configure",
            cwd=workspace,
            startup=own_output_base(BASE / "output_base"),
            env=env,
            check=False,
        )
        assert sync.returncode == 0, sync.stderr[-4000:]
        result = _build(workspace, env)
        assert result.returncode == 0, result.stderr[-4000:]
    finally:
        flag.unlink(missing_ok=True)


def test_a_torch_release_below_the_floor_is_one_message(workspace: Path, tmp_path: Path):
    fake = tmp_path / "site-packages" / "torch"
    for sub in ("include", "lib"):
        (fake / sub).mkdir(parents=True)
    (fake / "version.py").write_text("__version__ = '2.10.0+cpu'\ncuda = None\n")
    result = _build(workspace, _env(RULES_ATEN_TORCH_DIR=str(fake)))
    message = _the_one_message(result, f"rules_aten: torch 2.10.0+cpu at {fake} is older than")
    assert message.endswith(
        "is older than torch 2.11, the oldest release rules_aten supports; install torch 2.11 "
        "or newer, or point RULES_ATEN_TORCH_DIR at one"
    ), message


def test_a_newer_torch_release_builds_after_one_warning(workspace: Path, tmp_path: Path):
    """A release newer than the newest known one: the installed wheel under another version
    (its headers, libraries and torchgen linked), built with the newest release's facts."""
    import torch

    real = Path(torch.__file__).parent
    site = tmp_path / "site-packages"
    fake = site / "torch"
    fake.mkdir(parents=True)
    for sub in ("include", "lib"):
        (fake / sub).symlink_to(real / sub)
    (site / "torchgen").symlink_to(real.parent / "torchgen")
    (fake / "version.py").write_text("__version__ = '2.99.0+cpu'\ncuda = None\n")
    env = _env(RULES_ATEN_TORCH_DIR=str(fake))
    result = bazel(
        "build",
        TARGET,
        cwd=workspace,
        startup=own_output_base(BASE / "output_base"),
        env=env,
        check=False,
    )
    assert result.returncode == 0, result.stderr[-6000:]
    warning = (
        f"rules_aten: warning: torch 2.99.0+cpu at {fake} is newer than the releases rules_aten "
        f"knows ({tf.OLDEST_RELEASE} to {tf.NEWEST_RELEASE}): building it with the facts of torch "
        f"{tf.NEWEST_RELEASE}"
    )
    assert result.stderr.count("is newer than the releases rules_aten knows") == 1, result.stderr[
        -6000:
    ]
    assert warning in result.stderr, result.stderr[-6000:]


def test_a_torch_under_a_non_ascii_directory_analyses(workspace: Path, tmp_path: Path):
    """The probes print paths as their bytes (tool/torch_probe.py's print_json), which is how
    Bazel reads them: a torch under `tëst/` is found, not reported as having no include/."""
    import torch

    real = Path(torch.__file__).parent
    fake = tmp_path / "tëst" / "site-packages" / "torch"
    fake.mkdir(parents=True)
    for sub in ("include", "lib", "version.py"):
        (fake / sub).symlink_to(real / sub)
    (fake.parent / "torchgen").symlink_to(real.parent / "torchgen")
    result = _build(workspace, _env(RULES_ATEN_TORCH_DIR=str(fake)))
    assert result.returncode == 0, result.stderr[-6000:]
    assert "Error in fail" not in result.stderr, result.stderr[-6000:]


def test_a_missing_interpreter_is_one_message(workspace: Path, tmp_path: Path):
    missing = tmp_path / "no" / "python3"
    result = _build(workspace, _env(RULES_ATEN_PYTHON=str(missing)))
    _the_one_message(
        result, f"rules_aten: RULES_ATEN_PYTHON={missing} does not name an existing interpreter"
    )


def test_too_old_a_python_is_one_message(workspace: Path, tmp_path: Path):
    old = tmp_path / "python3.9"
    old.write_text("#!/bin/sh\necho 3.9.1\n")
    old.chmod(0o755)
    result = _build(workspace, _env(RULES_ATEN_PYTHON=str(old)))
    _the_one_message(result, f"rules_aten: {old} (RULES_ATEN_PYTHON) is Python 3.9.1; need 3.11+")


def test_an_interpreter_whose_copy_reads_its_installation_is_one_message(
    workspace: Path, tmp_path: Path
):
    """The venv's interpreter with a build configuration whose LIBDIR has no libpython (as a
    relocated build's may say): @rules_aten_python copies no libpython, so its copy, started as
    the launcher starts it, still loads the installation's, which a sandbox or a remote worker
    does not have. The fetch names what the copy reads outside the repository."""
    name = sysconfig._get_sysconfigdata_name()  # type: ignore[attr-defined]
    build_vars = dict(importlib.import_module(name).build_time_vars)
    build_vars["LIBDIR"] = str(tmp_path / "no_lib")
    (tmp_path / "_sysconfigdata_relocated.py").write_text(f"build_time_vars = {build_vars!r}\n")
    python = tmp_path / "python3"
    python.write_text(
        "#!/bin/sh\n"
        f"_PYTHON_SYSCONFIGDATA_NAME=_sysconfigdata_relocated PYTHONPATH={tmp_path} "
        f'exec {VENV_PYTHON} "$@"\n'
    )
    python.chmod(0o755)
    libpython = Path(sysconfig.get_config_var("LIBDIR")) / sysconfig.get_config_var("INSTSONAME")
    assert libpython.is_file(), libpython
    message = _the_one_message(
        _build(workspace, _env(RULES_ATEN_PYTHON=str(python))),
        f"rules_aten: the copy of {python} (RULES_ATEN_PYTHON) does not run from ",
    )
    assert f"alone: it reads {os.path.realpath(libpython)}; set RULES_ATEN_PYTHON" in message


def test_a_cuda_dir_without_a_toolkit_is_one_message(workspace: Path, tmp_path: Path):
    result = _build(workspace, _env(RULES_ATEN_CUDA_DIR=str(tmp_path)))
    _the_one_message(
        result, f"rules_aten: RULES_ATEN_CUDA_DIR={tmp_path} has no include/cuda_runtime.h"
    )


def _venv_torch_version() -> str:
    """The version of the torch in this checkout's .venv (the workspace's), from its metadata."""
    return subprocess.run(
        [str(VENV_PYTHON), "-c", "import importlib.metadata as m; print(m.version('torch'))"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()


def test_pypi_nvcc_for_a_cpu_torch_is_one_message(workspace: Path):
    """RULES_ATEN_CUDA_DIR=pypi installs the nvcc of a CUDA wheel's version: a CPU wheel has none."""
    result = _build(workspace, _env(RULES_ATEN_CUDA_DIR="pypi"))
    message = _the_one_message(
        result,
        "rules_aten: RULES_ATEN_CUDA_DIR=pypi installs the nvcc of torch's CUDA version from PyPI, "
        f"but torch {_venv_torch_version()} is a CPU build",
    )
    assert message.endswith("unset it to use a local toolkit, or set it to none"), message


def test_a_failed_pip_install_is_one_message(workspace: Path):
    """pip with no index and no wheel directory (a fresh output base: @rules_aten_pip is fetched
    once, whatever the environment)."""
    if (BASE / "output_base_pip").exists():
        bazel(
            "clean",
            "--expunge",
            cwd=workspace,
            startup=own_output_base(BASE / "output_base_pip"),
            env=_env(),
        )
    env = _env(
        PIP_NO_INDEX="1", PIP_FIND_LINKS=str(BASE / "no_wheels"), PIP_CONFIG_FILE="/dev/null"
    )
    message = _the_one_message(
        _build(workspace, env, "output_base_pip"),
        "rules_aten: pip install -r @rules_aten//third_party:requirements_tool.lock failed",
    )
    assert message.endswith("then run `bazel sync --only=rules_aten_pip`"), message


def test_with_every_setting_fixed_the_workspace_analyses(workspace: Path):
    """After the bad settings above, the good ones: each repository is fetched again by itself."""
    result = _build(workspace, _env())
    assert result.returncode == 0, result.stderr[-4000:]
    assert "Error in fail" not in result.stderr
