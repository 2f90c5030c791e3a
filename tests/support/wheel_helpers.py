"""Installing a built wheel the way a user does, into a fresh venv of a given torch, without
downloading torch: the venv is made by that torch venv's interpreter, without pip, and a `.pth`
file puts the torch venv's site-packages (torch, its dependencies, pip) on its path, so that pip's
resolver sees the installed torch. pip runs without the machine's configuration (no local wheel
directory), from the wheel file alone, so a requirement that torch does not meet is refused
instead of satisfied by another torch."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

# None of this machine's pip settings, from its files or its PIP_* variables (which name a
# directory of wheels that holds a torch).
PIP_ENV = {
    **{k: v for k, v in os.environ.items() if not k.startswith("PIP_")},
    "PIP_CONFIG_FILE": os.devnull,
    "PIP_DISABLE_PIP_VERSION_CHECK": "1",
}


def _purelib(python: Path) -> str:
    code = "import sysconfig; print(sysconfig.get_paths()['purelib'])"
    return subprocess.run(
        [str(python), "-c", code], capture_output=True, text=True, check=True
    ).stdout.strip()


def venv_over(torch_python: Path, where: Path) -> Path:
    """A new venv at ``where`` that sees the torch of ``torch_python``; returns its python."""
    subprocess.run([str(torch_python), "-m", "venv", "--without-pip", str(where)], check=True)
    python = where / "bin" / "python"
    Path(_purelib(python), "torch_venv.pth").write_text(_purelib(torch_python) + "\n")
    return python


def pip_install(python: Path, wheel: Path, *options: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(python), "-m", "pip", "install", "--no-index", "-q", *options, str(wheel)],
        capture_output=True,
        text=True,
        env=PIP_ENV,
        timeout=300,
    )
