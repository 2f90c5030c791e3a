"""`--python` of the conformance scripts (conformance/shared.py): the script runs again under the
named interpreter, with the same arguments less --python; a path that is not an interpreter is
one line."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]
SCRIPT = f"""
import argparse, json, sys
sys.path.insert(0, {str(REPO / "conformance")!r})
from shared import add_python_option, run_under
parser = argparse.ArgumentParser()
add_python_option(parser)
parser.add_argument("--ops")
args = parser.parse_args()
run_under(args.python)
print(json.dumps({{"executable": sys.executable, "argv": sys.argv[1:], "ops": args.ops}}))
"""


def _run(tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    script = tmp_path / "script.py"
    script.write_text(SCRIPT)
    return subprocess.run(
        [sys.executable, str(script), *args], capture_output=True, text=True, timeout=60
    )


def test_the_script_runs_again_under_the_named_interpreter(tmp_path: Path) -> None:
    # Another path to this interpreter: the child's sys.executable names it.
    other = tmp_path / "bin" / "python"
    other.parent.mkdir()
    os.symlink(sys.executable, other)
    for args in (["--python", str(other), "--ops=all"], ["--ops=all", f"--python={other}"]):
        proc = _run(tmp_path, *args)
        assert proc.returncode == 0, proc.stderr
        report = json.loads(proc.stdout)
        assert report == {"executable": str(other), "argv": ["--ops=all"], "ops": "all"}


def test_without_python_the_script_runs_where_it_is(tmp_path: Path) -> None:
    report = json.loads(_run(tmp_path, "--ops=abs").stdout)
    assert report == {"executable": sys.executable, "argv": ["--ops=abs"], "ops": "abs"}


def test_a_path_that_is_no_interpreter_is_one_line(tmp_path: Path) -> None:
    proc = _run(tmp_path, "--python", str(tmp_path / "nothing"))
    assert proc.returncode != 0
    assert (
        proc.stderr.strip() == f"--python: {tmp_path / 'nothing'} is not an executable interpreter"
    )


def test_aten_autograds_entry_names_the_interpreter_it_ran(monkeypatch) -> None:
    # A run with a release's venv (its torch is the one checked) is recorded under that venv's
    # interpreter, as the other scripts' entries are, not under the checkout's .venv.
    monkeypatch.syspath_prepend(str(REPO / "conformance"))
    import aten_autograd

    commands = []
    monkeypatch.setattr(
        aten_autograd, "append_result", lambda title, command, body: commands.append(command)
    )
    venv = Path.home() / ".cache" / "rules_aten" / "venv-torch-2.15.0" / "bin" / "python"
    monkeypatch.setattr(sys, "executable", str(venv))
    aten_autograd._append_results(["mismatches: 0"], ["--limit=60", "--max_samples=2"])
    assert commands == [
        "~/.cache/rules_aten/venv-torch-2.15.0/bin/python conformance/aten_autograd.py"
        " --limit=60 --max_samples=2"
    ]
