"""The model of a torch release's op YAML against that release's own torchgen: every
NativeFunction after autogen (name, schema, kind, tags, groups, view groups, structured, kernels
per dispatch key), `atengen dump` against tests/support/oracle/torchgen_model.py.

    .venv/bin/python conformance/release_model.py [--torch_dir DIR] [--write]

DIR is the `torch` package directory of an installed or unpacked wheel (`./dev test-releases`
unpacks 2.11.0, 2.12.1 and 2.15.0 under ~/.cache/rules_aten/releases/<version>/); its `torchgen`
beside it runs in a subprocess with that directory first on PYTHONPATH (torchgen never imports
torch). Default: the installed torch. Prints the counts and `RESULT ok` when every record is equal,
else the first differences, `RESULT differences`, and exits 1. `--write` appends to
conformance/RESULTS.md.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "conformance"))
from shared import append_result, interpreter  # noqa: E402


def _run(args: list[str], pythonpath: str) -> str:
    proc = subprocess.run(
        [sys.executable, *args],
        capture_output=True,
        text=True,
        env=dict(os.environ, PYTHONPATH=pythonpath),
    )
    if proc.returncode != 0:
        sys.exit(f"{' '.join(args[:3])} failed:\n{proc.stderr[-3000:]}")
    return proc.stdout


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--torch_dir", help="the torch package directory (default: installed)")
    parser.add_argument("--write", action="store_true", help="append to conformance/RESULTS.md")
    args = parser.parse_args()
    if args.torch_dir:
        torch_dir = Path(args.torch_dir).resolve()
    else:
        import importlib.util

        torch_dir = Path(importlib.util.find_spec("torch").origin).parent
    site = torch_dir.parent
    native = site / "torchgen" / "packaged" / "ATen" / "native"
    if not (native / "native_functions.yaml").is_file():
        parser.error(f"--torch_dir: no torchgen/packaged beside {torch_dir}")
    text = (torch_dir / "version.py").read_text()
    version = re.search(r"^__version__\s*=\s*['\"]([^'\"]+)", text, re.M).group(1)
    yamls = [f"--op_yaml={native}/native_functions.yaml", f"--tags_yaml={native}/tags.yaml"]
    theirs_text = _run(["-m", "tests.support.oracle.torchgen_model", *yamls], f"{site}:{REPO}")
    ours_text = _run(["-m", "atengen", "dump", *yamls], str(REPO / "tool"))
    theirs = {r["name"]: r for r in map(json.loads, theirs_text.splitlines())}
    ours = {r["name"]: r for r in map(json.loads, ours_text.splitlines())}
    entries = sum(1 for r in theirs.values() if not r["generated"])
    equal = sum(1 for name, r in theirs.items() if ours.get(name) == r)
    kernels = sum(len(r["dispatch"]) for r in theirs.values())
    lines = [
        f"torch {version}: {len(theirs)} NativeFunctions after autogen ({entries} YAML entries, "
        f"{len(theirs) - entries} generated), {kernels} (function, key) kernels; atengen's "
        f"model has {len(ours)}; equal to torchgen's, field by field: {equal} of {len(theirs)}"
    ]
    differing = sorted(set(theirs) ^ set(ours)) + [
        n for n in sorted(set(theirs) & set(ours)) if theirs[n] != ours[n]
    ]
    lines += [f"- differs: {name}" for name in differing[:20]]
    print("\n".join(lines))
    verdict = "ok" if not differing else "differences"
    print(f"RESULT {verdict}")
    if args.write:
        torch_flag = f" --torch_dir={args.torch_dir}" if args.torch_dir else ""
        append_result(
            "The model against the release's torchgen",
            f"{interpreter()} conformance/release_model.py{torch_flag} --write",
            lines,
            torch_version=version,
        )
    return 0 if not differing else 1


if __name__ == "__main__":
    sys.exit(main())
