"""Running the scripts of tests/scripts/: programs that load a built library into torch, each in
a fresh interpreter (a library loaded into torch cannot be unloaded, and a crash stays there)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

SCRIPTS = Path(__file__).resolve().parents[1] / "scripts"


def run_script(name: str, *args: str, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    """`python tests/scripts/<name> args...`; its exit status, stdout and stderr."""
    script = SCRIPTS / name
    assert script.is_file(), script
    return subprocess.run(
        [sys.executable, str(script), *args], capture_output=True, text=True, timeout=timeout
    )
