"""Real projects' operator schemas, unchanged, through atengen in both modes.

Each schema of tests/data/real_schemas/corpus.jsonl (what a project registers with
TORCH_LIBRARY or torch.library, as its authors wrote it) becomes the `func:` of a one-op op YAML
with a CPU kernel, and goes through `atengen generate --keys=auto` (ABI-bound) and `atengen
stable --target=2.11`. For each accepted schema, the text the generated library defines is
registered with the running torch (torch.library, as the library's m.def does when it loads)
and compared with torch._C.parse_schema of the original: schema text and every argument's and
return's alias set and mutability.

    .venv/bin/python conformance/real_schemas.py [--tool_dir=DIR] [--json=PATH] [--write]

`--tool_dir`: the generator to run (another checkout's tool/, for a before-and-after table).
Prints the fraction accepted per mode and project, the refusals by message, and any mismatch.
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import dataclasses
import io
import json
import re
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
CORPUS = REPO / "tests" / "data" / "real_schemas" / "corpus.jsonl"
TAGS_YAML = "".join(
    f"- tag: {t}\n  desc: tag {t}\n" for t in ("nondeterministic_seeded", "pt2_compliant_tag")
)
MODES = {
    "bound": ("generate", "--keys=auto"),
    "stable": ("stable", "--target=2.11"),
}
_DEF_RE = re.compile(r'm\.def\(("(?:[^"\\]|\\.)*")')


def load_corpus(path: Path = CORPUS) -> list[dict]:
    with path.open(encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def op_yaml(schema: str, namespace: str) -> str:
    """A one-op YAML whose func: is the schema, unchanged (a literal block keeps its lines)."""
    body = "\n".join("    " + line for line in f"{namespace}::{schema}".split("\n"))
    return f"- func: |-\n{body}\n  dispatch:\n    CPU: corpus_kernel\n"


def run_mode(main, mode: str, schema: str, namespace: str, work: Path) -> tuple[str, list[str]]:
    """(first error line or '', the schemas the generated sources define)."""
    error = run_generator(main, mode, op_yaml(schema, namespace), work)
    if error:
        return error, []
    defined = [
        json.loads(m.group(1))
        for p in sorted((work / "out").rglob("*Schema*.cpp"))
        for m in _DEF_RE.finditer(p.read_text())
    ]
    return "", defined


def run_generator(main, mode: str, yaml_text: str, work: Path) -> str:
    """The mode's command over ``yaml_text`` into work/out and work/inc (emptied first): its
    first error, or ''."""
    command, flag = MODES[mode]
    for d in ("out", "inc"):
        if (work / d).exists():
            for p in sorted((work / d).rglob("*"), reverse=True):
                p.unlink() if p.is_file() else p.rmdir()
    (work / "ops.yaml").write_text(yaml_text, encoding="utf-8")
    (work / "tags.yaml").write_text(TAGS_YAML)
    args = [
        "atengen",
        command,
        f"--op_yaml={work / 'ops.yaml'}",
        f"--tags_yaml={work / 'tags.yaml'}",
        f"--output_dir={work / 'out'}",
        f"--header_output_dir={work / 'inc'}",
        flag,
    ]
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        try:
            code = main(args)
        except SystemExit as e:
            code = e.code if isinstance(e.code, int) else 1
    if code != 0:
        lines = [ln for ln in err.getvalue().splitlines() if ": error: " in ln] or [err.getvalue()]
        return lines[0].split(": error: ", 1)[-1]
    return ""


def compare_registered(defined: str, original: str, namespace: str, library) -> str:
    """'' when torch registers ``defined`` exactly as it parses ``original``; else why not."""
    import torch

    library.define(defined.split("::", 1)[1])
    theirs = torch._C.parse_schema(f"{namespace}::{original}")
    op = getattr(torch.ops, namespace)
    name = theirs.name.split("::", 1)[1]
    registered = getattr(getattr(op, name), theirs.overload_name or "default")._schema
    if str(registered) != str(theirs):
        return f"registered {registered} but torch parses the original as {theirs}"

    def aliasing(s) -> list:
        return [
            (a.alias_info.is_write, sorted(a.alias_info.before_set)) if a.alias_info else None
            for a in (*s.arguments, *s.returns)
        ]

    if aliasing(registered) != aliasing(theirs):
        return "alias sets differ"
    return ""


def normalised(message: str) -> str:
    """A refusal with its names left out, to count refusals of one kind together."""
    return re.sub(r"'[^']*'", "'…'", message)[:140]


@dataclasses.dataclass
class Verdicts:
    """What the corpus gave: per schema its verdict in each mode ('accepted' or the refusal),
    and every registered schema that differs from torch's parse of the original."""

    rows: list[dict]
    mismatches: list[str]

    def accepted(self, mode: str, project: str | None = None) -> int:
        return sum(
            r[mode] == "accepted" for r in self.rows if project is None or r["project"] == project
        )


def corpus_verdicts(records: list[dict], atengen_main) -> Verdicts:
    import torch

    rows: list[dict] = []
    mismatches: list[str] = []
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        for i, r in enumerate(records):
            row = {"project": r["project"], "path": r["path"], "line": r["line"]}
            for mode in MODES:
                namespace = f"rs_{mode}_{i}"
                error, defined = run_mode(atengen_main, mode, r["schema"], namespace, work)
                row[mode] = error or "accepted"
                if error:
                    continue
                library = torch.library.Library(namespace, "DEF")
                for text in defined:
                    problem = compare_registered(text, r["schema"], namespace, library)
                    if problem:
                        where = f"{r['project']} {r['path']}:{r['line']}"
                        mismatches.append(f"{mode} {where}: {problem}")
            rows.append(row)
    return Verdicts(rows, mismatches)


def summary(v: Verdicts) -> list[str]:
    projects = sorted({r["project"] for r in v.rows})
    lines = ["| project | schemas | ABI-bound accepted | stable accepted |", "|---|---|---|---|"]
    for project in projects:
        n = sum(r["project"] == project for r in v.rows)
        cells = [f"{v.accepted(m, project)} / {n}" for m in MODES]
        lines.append(f"| {project} | {n} | {cells[0]} | {cells[1]} |")
    n = len(v.rows)
    cells = [f"**{v.accepted(m)} / {n}**" for m in MODES]
    lines.append(f"| all | {n} | {cells[0]} | {cells[1]} |")
    refusals = collections.Counter(
        (m, normalised(r[m])) for r in v.rows for m in MODES if r[m] != "accepted"
    )
    lines += ["", "Refusals (mode, message with names left out, count):", ""]
    lines += [f"- {m}: {msg} ({c})" for (m, msg), c in refusals.most_common()]
    checked = sum(v.accepted(m) for m in MODES)
    lines += ["", f"Registered schemas compared with torch's parse: {checked}; mismatches: "
              f"{len(v.mismatches)}"]  # fmt: skip
    return lines + [f"- {m}" for m in v.mismatches[:20]]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tool_dir", default=str(REPO / "tool"))
    parser.add_argument("--corpus", default=str(CORPUS))
    parser.add_argument("--json", help="write each schema's verdicts here")
    parser.add_argument("--write", action="store_true", help="append to conformance/RESULTS.md")
    args = parser.parse_args()
    sys.path.insert(0, args.tool_dir)
    from atengen.cli.main import main as atengen_main

    v = corpus_verdicts(load_corpus(Path(args.corpus)), atengen_main)
    lines = summary(v)
    print("\n".join(lines))
    if args.json:
        Path(args.json).write_text(json.dumps(v.rows, indent=1, ensure_ascii=False) + "\n")
    if args.write:
        sys.path.insert(0, str(REPO / "conformance"))
        from shared import append_result

        command = "conformance/real_schemas.py " + " ".join(sys.argv[1:])
        append_result("Real schemas unchanged, both modes", command, lines)
    return 1 if v.mismatches else 0


if __name__ == "__main__":
    sys.exit(main())
