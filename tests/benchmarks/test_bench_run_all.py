"""benchmarks/run_all.py: a tiny run of two cheap benchmarks assembles one row per target with
the ratio each script printed, and a RESULTS.md entry (written to a temporary file) has the
date, command, commit, machine, versions and table."""

from __future__ import annotations

import datetime
import importlib
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.model_helpers import REPO, run_benchmark_tiny

SCRIPT = Path(REPO) / "benchmarks" / "run_all.py"
ROW = re.compile(r"^\| ([^|]+) \| ([\d.]+)x \| ([^|]+) \| ([^|]+) \| `([^`]+)` \|$", re.M)


def load_run_all(monkeypatch: pytest.MonkeyPatch):
    # run_all.py imports benchmarks/common.py as a sibling, as it does when run as a script.
    monkeypatch.syspath_prepend(str(SCRIPT.parent))
    return importlib.import_module("run_all")


@pytest.mark.slow  # runs two benchmarks' tiny modes in fresh processes
def test_run_all_tiny_subset(summary: list[str]) -> None:
    stdout = run_benchmark_tiny("run_all.py", "--only", "bench_backend,bench_model")
    printed = dict(re.findall(r"^RATIO (\w+) ([\d.]+)$", stdout, re.M))
    assert printed.keys() == {"model_load", "model_load_grouped", "P5"}, stdout
    table = stdout[stdout.rindex("| target | measured |") :]
    rows = ROW.findall(table)
    # In run order (bench_model before bench_backend), whatever order --only names them.
    assert [r[4] for r in rows] == [
        ".venv/bin/python benchmarks/bench_model.py --tiny",
        ".venv/bin/python benchmarks/bench_model.py --tiny",
        ".venv/bin/python benchmarks/bench_backend.py --tiny",
    ], table
    (_, model, model_target, model_met, _), (_, grouped, *_), (_, p5, p5_target, p5_met, _) = rows
    assert float(model) == pytest.approx(float(printed["model_load"]), abs=0.001)
    assert float(grouped) == pytest.approx(float(printed["model_load_grouped"]), abs=0.001)
    assert float(p5) == pytest.approx(float(printed["P5"]), abs=0.001)
    assert model_target == "<= 0.3x" and model_met in ("met", "not met"), table
    assert (p5_target, p5_met) == ("-", "-"), table
    summary.append(f"run_all --tiny (bench_model, bench_backend): {len(rows)} rows")


def test_run_all_refuses_tiny_write() -> None:
    proc = subprocess.run(
        [sys.executable, str(SCRIPT), "--tiny", "--write"],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 2 and "--tiny never writes" in proc.stderr, proc.stderr


def test_results_entry_format(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    run_all = load_run_all(monkeypatch)
    outcomes = [
        run_all.Outcome(
            "bench_codegen",
            ".venv/bin/python benchmarks/bench_codegen.py",
            0,
            {"P1": 0.05, "P1_cpu": 0.09},
        ),
        run_all.Outcome(
            "bench_incremental",
            ".venv/bin/python benchmarks/bench_incremental.py",
            0,
            {"P2_rename": 0.2, "P2_add": 0.04, "P2_rename_buckets": 0.3, "P3": 1.1, "P4": 1500.0},
        ),
        run_all.Outcome("bench_lazy", ".venv/bin/python benchmarks/bench_lazy.py", 1, {}),
    ]
    rows = run_all.table(outcomes, tiny=False)
    ctx = {
        "commit": "abc-dirty",
        "machine": "CPU X; os.cpu_count()=2; Linux 6",
        "software": "Python 3, torch 2",
        "load": "1.0",
    }
    results = tmp_path / "RESULTS.md"
    results.write_text("# Benchmark results\n")
    now = datetime.datetime(2026, 1, 2, 3, 4, tzinfo=datetime.UTC)
    run_all.write_entry(results, ".venv/bin/python benchmarks/run_all.py --write", rows, ctx, now)
    text = results.read_text()
    assert text.startswith(
        "# Benchmark results\n\n### All P-benchmarks (run_all.py), 2026-01-02 03:04 UTC\n"
    )
    for line in (
        "- Command: `.venv/bin/python benchmarks/run_all.py --write`",
        "- Commit: abc-dirty",
        "- Machine: CPU X; os.cpu_count()=2; Linux 6; load average at the end 1.0",
        "- Software: Python 3, torch 2",
        "| target | measured | target value | met | command |",
    ):
        assert f"\n{line}\n" in text, text
    cells = [r.split(" | ")[1:4] for r in rows[2:]]
    assert cells == [
        ["0.050x", "<= 0.1x", "met"],
        ["0.090x", "-", "-"],
        ["0.200x", "<= 0.1x", "not met"],
        ["0.040x", "<= 0.1x", "met"],
        ["0.300x", "<= 0.1x", "not met"],
        ["not printed", "<= 0.1x", "not measured"],
        ["1.100x", "<= 1.2x", "met"],
        ["1500 MB", "<= 1024 MB", "not met"],
        ["failed (exit 1)", "<= 0.2x", "not measured"],
    ], text
    assert text.endswith(rows[-1] + "\n")
