"""The real-schema corpus compiled: every schema conformance/real_schemas.py accepts, one op YAML
per project and mode, generated and then compiled with g++ (-fsyntax-only) against the installed
torch's headers, as aten_codegen compiles them.

    .venv/bin/python conformance/real_schemas_compile.py [--jobs=N] [--write]

Each project's accepted schemas (first of each operator name) go into one YAML, with a CPU kernel
each, in a namespace of their own. The ABI-bound sources compile with the runtime headers of
//rules/runtime; the stable ones with -DTORCH_TARGET_VERSION of torch 2.11. Prints, per project and
mode, the sources compiled and those that failed, with the first compiler error of each.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import os
import re
import subprocess
import sys
import sysconfig
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tool"))
sys.path.insert(0, str(REPO / "conformance"))

import real_schemas  # noqa: E402

from atengen.cli.main import main as atengen_main  # noqa: E402

TORCH_INCLUDE = Path(sysconfig.get_paths()["purelib"]) / "torch" / "include"
STABLE_2_11 = "0x020B000000000000"


def project_yaml(records: list[dict], namespace: str) -> str:
    seen: set[str] = set()
    entries = []
    for i, r in enumerate(records):
        name = r["schema"].split("(", 1)[0].strip()
        if name in seen:
            continue
        seen.add(name)
        body = "\n".join("    " + line for line in f"{namespace}::{r['schema']}".split("\n"))
        entries.append(f"- func: |-\n{body}\n  dispatch:\n    CPU: kernel_{i}\n")
    return "".join(entries)


def compile_one(source: Path, mode: str, work: Path) -> str:
    """'' when g++ takes it; else its first error line."""
    flags = ["-std=c++17", "-fsyntax-only", f"-I{work / 'inc'}", f"-I{TORCH_INCLUDE}"]
    if mode == "bound":
        flags += [
            f"-I{TORCH_INCLUDE / 'torch' / 'csrc' / 'api' / 'include'}",
            f"-I{REPO / 'rules' / 'runtime'}",
        ]
    else:
        flags += [f"-DTORCH_TARGET_VERSION={STABLE_2_11}"]
    result = subprocess.run(["g++", *flags, str(source)], capture_output=True, text=True)
    if result.returncode == 0:
        return ""
    errors = [line for line in result.stderr.splitlines() if ": error: " in line]
    return (errors or [result.stderr.strip()[:300]])[0]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--projects", help="comma-separated projects (default: all)")
    parser.add_argument("--write", action="store_true", help="append to conformance/RESULTS.md")
    args = parser.parse_args()
    records = real_schemas.load_corpus()
    if args.projects:
        records = [r for r in records if r["project"] in args.projects.split(",")]
    verdicts = real_schemas.corpus_verdicts(records, atengen_main)
    lines = ["| project | mode | ops | sources compiled | failed |", "|---|---|---|---|---|"]
    failures: list[str] = []
    total = failed_total = 0
    with tempfile.TemporaryDirectory() as tmp:
        for project in sorted({r["project"] for r in records}):
            for mode in real_schemas.MODES:
                chosen = [
                    r
                    for r, v in zip(records, verdicts.rows, strict=True)
                    if r["project"] == project and v[mode] == "accepted"
                ]
                work = Path(tmp) / f"{project}_{mode}"
                work.mkdir()
                namespace = re.sub(r"\W", "_", f"rs_{project}")
                yaml_text = project_yaml(chosen, namespace)
                error = real_schemas.run_generator(atengen_main, mode, yaml_text, work)
                if error:
                    failures.append(f"{project} {mode}: generate: {error.splitlines()[0]}")
                    lines.append(f"| {project} | {mode} | {len(chosen)} | generate failed | |")
                    continue
                sources = sorted((work / "out").glob("*.cpp"))
                with concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
                    results = list(
                        pool.map(compile_one, sources, [mode] * len(sources), [work] * len(sources))
                    )
                bad = [(s, e) for s, e in zip(sources, results, strict=True) if e]
                failures += [f"{project} {mode}: {s.name}: {e}" for s, e in bad]
                total += len(sources)
                failed_total += len(bad)
                ops = yaml_text.count("- func:")
                lines.append(f"| {project} | {mode} | {ops} | {len(sources)} | {len(bad)} |")
    lines.append(f"| all | | | {total} | {failed_total} |")
    lines += [f"- {f}" for f in failures[:30]]
    print("\n".join(lines))
    if args.write:
        from shared import append_result

        append_result(
            "Real schemas compiled, both modes",
            "conformance/real_schemas_compile.py " + " ".join(sys.argv[1:]),
            lines,
        )
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
