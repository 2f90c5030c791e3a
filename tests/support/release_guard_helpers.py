"""Loading one built library into the interpreters of other torch releases: what the torch release
guard (rules/runtime/atengen/torch_release_guard.h) and the link without RUNPATH promise.

`./dev test-releases` names the interpreters in $RULES_ATEN_GUARD_PYTHONS (colon-separated): the
default venv's (2.13.0), the CUDA venv's (2.14.1) and those of the release venvs (2.11.0, 2.15.0).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

GUARD_PYTHONS_ENV = "RULES_ATEN_GUARD_PYTHONS"

# The guard's line: the library, the release it was compiled against, the running torch.
GUARD_LINE = re.compile(
    r"^rules_aten: (?P<library>\S+) was compiled against torch (?P<built>\d+\.\d+) and cannot load "
    r"into torch (?P<running>\d+\.\d+)\S* \([^)]*\): nothing of it is registered; rebuild it "
    r'against torch (?P=running), or with aten_codegen\(abi = "stable"\) to load into every '
    r"release from 2\.11$"
)

# Run by each interpreter: load the library, call the op, report as JSON on the last line.
_LOAD = """
import json, sys, torch
library, op, ns_op = sys.argv[1], sys.argv[2], sys.argv[3]
report = {"torch": torch.__version__, "errors": []}
try:
    torch.ops.load_library(library)
    report["value"] = eval(op).tolist()
except Exception as e:
    while e is not None:
        report["errors"].append([type(e).__name__, str(e)])
        e = e.__cause__
report["dump"] = torch._C._dispatch_dump(ns_op)
print(json.dumps(report))
"""


@dataclass(frozen=True)
class LoadReport:
    torch: str  # the interpreter's torch.__version__
    value: list | None  # what the op returned, when the load succeeded
    errors: list[tuple[str, str]]  # the exception raised by the load, then its causes
    dump: str  # torch._C._dispatch_dump of the op after the attempt
    stderr: str

    @property
    def release(self) -> str:
        return ".".join(self.torch.split("+")[0].split(".")[:2])


def guard_pythons() -> list[Path]:
    return [Path(p) for p in os.environ.get(GUARD_PYTHONS_ENV, "").split(":") if p]


def release_of(python: Path) -> str:
    """The major.minor release of the torch `python` imports."""
    out = subprocess.run(
        [str(python), "-c", "import torch; print(torch.__version__)"],
        capture_output=True,
        text=True,
        check=True,
        timeout=300,
    ).stdout
    return ".".join(out.strip().split("+")[0].split(".")[:2])


def load_copy(python: Path, library: Path, op_call: str, op_name: str) -> LoadReport:
    """`library`, copied alone into a fresh directory, loaded by `python` with
    torch.ops.load_library, then `op_call` evaluated and `op_name`'s dispatch table read."""
    with tempfile.TemporaryDirectory(prefix="rules_aten_guard_") as tmp:
        copy = Path(tmp) / library.name
        shutil.copyfile(library, copy)
        proc = subprocess.run(
            [str(python), "-c", _LOAD, str(copy), op_call, op_name],
            capture_output=True,
            text=True,
            timeout=300,
            cwd=tmp,
        )
    assert proc.returncode == 0, proc.stderr[-4000:]
    report = json.loads(proc.stdout.strip().splitlines()[-1])
    return LoadReport(
        torch=report["torch"],
        value=report.get("value"),
        errors=[tuple(e) for e in report["errors"]],
        dump=report["dump"],
        stderr=proc.stderr,
    )


def refusal(report: LoadReport, built: str) -> str:
    """Checks that the load into another release was refused by the guard, with its one line as
    the loading call's error, and that nothing of the library is registered; returns "guard".

    The loader never refuses first: lib<name>.so's references to torch are weak
    (`atengen bound-link`), so a symbol `built` has and the running release lacks does not
    stop the guard from running."""
    assert report.value is None, report
    assert report.errors, report
    assert report.dump == "", report.dump
    root_type, root_message = report.errors[-1]
    assert root_type == "ImportError", report.errors
    assert "\n" not in root_message, root_message
    match = GUARD_LINE.match(root_message)
    assert match, root_message
    assert (match["built"], match["running"]) == (built, report.release), root_message
    # The line is the exception's; it is not printed a second time.
    assert "rules_aten:" not in report.stderr, report.stderr
    return "guard"


def needed_and_runpath(library: Path) -> tuple[list[str], list[str]]:
    """The NEEDED entries and the RUNPATH/RPATH entries of `library`'s dynamic section."""
    out = subprocess.run(
        ["readelf", "-d", str(library)], capture_output=True, text=True, check=True
    ).stdout
    needed = re.findall(r"\(NEEDED\)\s+Shared library: \[([^\]]+)\]", out)
    runpath = re.findall(r"\((?:RUNPATH|RPATH)\)\s+Library r(?:un)?path: \[([^\]]*)\]", out)
    return needed, runpath


CUDA_LIBRARIES = re.compile(r"^lib(torch_cuda|c10_cuda|cudart|cuda|cublas|cudnn)\b")
