"""What the kernel-hub tests run beside torch: Hugging Face's `kernels` and the ABI auditors
`kernel-abi-check` and `torch-abi-audit`, from third_party/requirements_hub_tools.lock.

`./dev setup` installs the lock with `pip install --target` into one directory
($RULES_ATEN_HUB_TOOLS, default ~/.cache/rules_aten/hub-tools) and stamps it. It is no venv: a
test runs .venv's or a release venv's interpreter with the directory last on sys.path
(tests/scripts/hub_load.py, abi_audit.py), so that venv's torch and torch's dependencies are the
ones imported and no venv's own lock changes. Missing, a test fails with one line.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
LOCK = REPO / "third_party" / "requirements_hub_tools.lock"
DIR = Path(
    os.environ.get("RULES_ATEN_HUB_TOOLS") or Path.home() / ".cache" / "rules_aten" / "hub-tools"
)
# What ./dev writes once the install has finished (setup_hub_tools): the lock's SHA-256.
STAMP = ".rules_aten_hub_tools_lock.sha256"
SCRIPTS = REPO / "tests" / "scripts"


def tools_dir() -> Path:
    """The installed directory; fails the caller with one line when it is not there."""
    __tracebackhide__ = True
    if not (DIR / STAMP).is_file():
        pytest.fail(
            f"rules_aten: {DIR} has no {STAMP}: `./dev setup` installs {LOCK.name} there",
            pytrace=False,
        )
    return DIR


def _json_run(python: str | Path, *args: str) -> dict:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    # Offline, and no cache of Hugging Face's under the home directory.
    env.update(
        HF_HUB_OFFLINE="1", HF_HOME=str(Path(os.environ.get("TMPDIR", "/tmp")) / "rules_aten_hf")
    )
    result = subprocess.run(
        [str(python), *args], capture_output=True, text=True, env=env, timeout=600
    )
    assert result.returncode == 0 and result.stdout.strip(), result.stderr[-6000:]
    return json.loads(result.stdout.strip().splitlines()[-1])


def load_kernel(python: str | Path, hub: Path, which: str) -> dict:
    """tests/scripts/hub_load.py's report for the kernel at ``hub`` in that interpreter."""
    return _json_run(python, str(SCRIPTS / "hub_load.py"), str(tools_dir()), str(hub), which)


def audit(library: Path, policy: str) -> dict:
    """tests/scripts/abi_audit.py's report for ``library`` (run with .venv's interpreter)."""
    venv_python = REPO / ".venv" / "bin" / "python"
    return _json_run(
        venv_python, str(SCRIPTS / "abi_audit.py"), str(tools_dir()), str(library), policy
    )


def stable_wheel_policy(library: Path) -> str:
    """The manylinux policy of the wheel tag aten_wheel would give ``library``
    (atengen/shipping), as kernel-abi-check names it."""
    from atengen.shipping.elf import read_library_facts
    from atengen.shipping.wheel_file import wheel_tag

    return wheel_tag(read_library_facts(library)[0]).platform.removesuffix("_x86_64")


def assert_stable(library: Path, policy: str) -> str:
    """torch-abi-audit's verdict STABLE with no unstable symbol, and no violation
    kernel-abi-check finds; returns the oldest torch torch-abi-audit names."""
    report = audit(library, policy)
    text = report["audit"]
    assert report["audit_rc"] == 0, report
    assert re.search(r"^\s*Torch ABI:\s+STABLE$", text, re.M), text
    assert re.search(rf"\[STABLE\s*\].* {re.escape(library.name)} .*\bunstable=0\)", text), text
    assert report["manylinux"] == [] and report["python_abi"] == [], report
    found = re.search(r"^\s*Min torch:\s+(\S+)$", text, re.M)
    assert found, text
    return found[1]
