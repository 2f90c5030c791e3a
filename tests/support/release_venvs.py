"""The venvs of other torch releases that `./dev setup-torches` installs under
~/.cache/rules_aten (or $RULES_ATEN_RELEASE_VENVS_DIR): venv-torch-<version> and the CUDA one.

A venv counts as installed once `./dev` has written its lock stamp, the last step of its set-up.
`.ci/run` installs them while the main suite runs, so a venv whose interpreter is already there
may still be half installed: a test that took it would fail on a torch that pip is unpacking.
"""

from __future__ import annotations

import os
from pathlib import Path

VENVS_DIR = Path(
    os.environ.get("RULES_ATEN_RELEASE_VENVS_DIR") or Path.home() / ".cache" / "rules_aten"
)
# What ./dev writes once a venv's `pip install` has finished (setup_release_venv,
# setup_cuda_venv).
STAMPS = (".rules_aten_torch_lock.sha256", ".rules_aten_cuda_lock.sha256")


def is_installed(venv: Path) -> bool:
    return any((venv / stamp).is_file() for stamp in STAMPS)


def installed_venv(version: str) -> Path | None:
    """venv-torch-<version>, if it is installed."""
    venv = VENVS_DIR / f"venv-torch-{version}"
    return venv if is_installed(venv) else None


def installed_venvs() -> list[Path]:
    """Every installed venv-torch-*, in name order."""
    return [v for v in sorted(VENVS_DIR.glob("venv-torch-*")) if is_installed(v)]
