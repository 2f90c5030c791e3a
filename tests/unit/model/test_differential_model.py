"""Differential test: ``atengen dump`` versus the upstream ``torchgen`` oracle.

Both read the real native_functions.yaml / tags.yaml shipped in the installed
torch wheel; every NativeFunction record (after autogen) must agree field by field,
every raw ``func:`` string must round-trip through our parser and printer, and the
dump must be byte-identical whatever the hash seed.

Never skipped: without torchgen (the dev venv's torch wheel ships it) the module fails to
import with the reason, and any disagreement is a failure.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from pathlib import Path

import pytest

from tests.support.model_helpers import run_cli_process
from tests.support.oracle import torchgen_model

MAX_SHOWN = 20  # mismatches shown per field

FIELDS = [f for f in torchgen_model.RECORD_FIELDS if f != "name"]


# ---------------------------------------------------------------------------
# Running the CLI


def run_dump(op_yaml: Path, tags_yaml: Path, *, hashseed: str | None = None) -> str:
    args = ("dump", f"--op_yaml={op_yaml}", f"--tags_yaml={tags_yaml}")
    proc = run_cli_process(*args, env=None if hashseed is None else {"PYTHONHASHSEED": hashseed})
    if proc.returncode != 0:
        pytest.fail(
            f"`atengen {' '.join(args)}` exited {proc.returncode}; stderr tail:\n"
            + proc.stderr[-3000:],
            pytrace=False,
        )
    return proc.stdout


@pytest.fixture(scope="session")
def dump_text(installed_yaml) -> str:
    return run_dump(*installed_yaml)


@pytest.fixture(scope="session")
def ours(dump_text) -> dict[str, dict]:
    records: dict[str, dict] = {}
    for lineno, line in enumerate(dump_text.splitlines(), 1):
        try:
            rec = json.loads(line)
        except json.JSONDecodeError as e:
            pytest.fail(f"dump line {lineno} is not JSON ({e}): {line[:200]!r}", pytrace=False)
        name = rec.get("name")
        assert name not in records, f"dump line {lineno}: duplicate name {name!r}"
        records[name] = rec
    return records


@pytest.fixture(scope="session")
def oracle(installed_yaml) -> dict[str, dict]:
    return {r["name"]: r for r in torchgen_model.torchgen_records(*installed_yaml)}


# ---------------------------------------------------------------------------
# Compact diffs


def _short(value: object, limit: int = 160) -> str:
    s = json.dumps(value, sort_keys=True)
    return s if len(s) <= limit else s[: limit - 3] + "..."


def _describe(ours_v: object, oracle_v: object) -> str:
    if isinstance(ours_v, dict) and isinstance(oracle_v, dict):
        parts = []
        for k in sorted(set(ours_v) | set(oracle_v)):
            a, b = ours_v.get(k, "<absent>"), oracle_v.get(k, "<absent>")
            if a != b:
                parts.append(f"{k}: ours={_short(a, 60)} oracle={_short(b, 60)}")
        return "; ".join(parts)
    if isinstance(ours_v, list) and isinstance(oracle_v, list):
        extra = sorted(set(map(str, ours_v)) - set(map(str, oracle_v)))
        missing = sorted(set(map(str, oracle_v)) - set(map(str, ours_v)))
        if extra or missing:
            return f"extra={extra} missing={missing}"
        return f"order/duplicates: ours={_short(ours_v)} oracle={_short(oracle_v)}"
    if isinstance(ours_v, str) and isinstance(oracle_v, str):
        i = next(
            (i for i, (a, b) in enumerate(zip(ours_v, oracle_v, strict=False)) if a != b), None
        )
        i = min(len(ours_v), len(oracle_v)) if i is None else i
        lo = max(0, i - 30)
        return (
            f"first difference at char {i}:\n      ours  : ...{ours_v[lo : i + 50]!r}"
            f"\n      oracle: ...{oracle_v[lo : i + 50]!r}"
        )
    return f"ours={_short(ours_v)} oracle={_short(oracle_v)}"


def _fail_if(rows: list[tuple[str, str]], title: str, total: int) -> None:
    """Fail with a compact listing of the first MAX_SHOWN mismatches (no traceback)."""
    if not rows:
        return
    lines = [f"{title}: {len(rows)} of {total} differ (first {min(len(rows), MAX_SHOWN)}):"]
    lines += [f"  {name}: {detail}" for name, detail in rows[:MAX_SHOWN]]
    if len(rows) > MAX_SHOWN:
        lines.append(f"  ... and {len(rows) - MAX_SHOWN} more")
    pytest.fail("\n".join(lines), pytrace=False)


# ---------------------------------------------------------------------------
# Tests


def test_schema_roundtrip(installed_yaml, ours, summary):
    """Every raw ``func:`` string is reproduced exactly by our parser + printer."""
    raw = torchgen_model.torchgen_schema_roundtrip(installed_yaml[0])
    rows = []
    for line, func in raw:
        schema = torchgen_model.strip_namespace(func)
        name = schema.partition("(")[0]
        rec = ours.get(name)
        if rec is None:
            rows.append((f"line {line}", f"{name!r} missing from dump"))
        elif rec.get("generated"):
            rows.append((f"line {line}", f"{name!r} is marked generated but is in the YAML"))
        elif rec.get("schema") != schema:
            rows.append((f"line {line} {name}", _describe(rec.get("schema"), schema)))
    ok = len(raw) - len(rows)
    summary.append(f"schema round-trip: {ok}/{len(raw)} raw func strings reproduced exactly")
    _fail_if(rows, "schema round-trip", len(raw))

    non_generated = sum(1 for r in ours.values() if not r.get("generated"))
    assert non_generated == len(raw), (
        f"dump has {non_generated} non-generated records but the YAML has {len(raw)} entries"
    )


def test_names(ours, oracle, summary):
    ours_names, oracle_names = set(ours), set(oracle)
    summary.append(
        f"NativeFunctions: ours {len(ours_names)}, torchgen {len(oracle_names)}, "
        f"common {len(ours_names & oracle_names)}"
    )
    extra = sorted(ours_names - oracle_names)
    missing = sorted(oracle_names - ours_names)
    if extra or missing:
        pytest.fail(
            f"name sets differ: {len(extra)} extra (first {MAX_SHOWN}: {extra[:MAX_SHOWN]}), "
            f"{len(missing)} missing (first {MAX_SHOWN}: {missing[:MAX_SHOWN]})",
            pytrace=False,
        )


@pytest.mark.parametrize("field", FIELDS)
def test_field(field, ours, oracle):
    common = sorted(set(ours) & set(oracle))
    rows = []
    for name in common:
        if field not in ours[name]:
            rows.append((name, f"field {field!r} absent from our record"))
        elif ours[name][field] != oracle[name][field]:
            rows.append((name, _describe(ours[name][field], oracle[name][field])))
    _fail_if(rows, f"field {field!r}", len(common))


def test_record_keys(ours):
    expected = set(torchgen_model.RECORD_FIELDS)
    rows = [
        (name, f"unexpected {sorted(set(r) - expected)} absent {sorted(expected - set(r))}")
        for name, r in sorted(ours.items())
        if set(r) != expected
    ]
    _fail_if(rows, "record keys", len(ours))


def test_output_format(dump_text):
    """JSON Lines, keys sorted as json.dumps(..., sort_keys=True), lines sorted by name."""
    assert dump_text.endswith("\n"), "dump must end with a newline"
    lines = dump_text.splitlines()
    unformatted = [
        (str(i), repr(line[:120]))
        for i, line in enumerate(lines, 1)
        if json.dumps(json.loads(line), sort_keys=True) != line
    ]
    _fail_if(unformatted, "lines not printed as json.dumps(record, sort_keys=True)", len(lines))
    names = [json.loads(line)["name"] for line in lines]
    assert names == sorted(names), "records are not sorted by name"


def test_counts(ours, oracle, installed_yaml, summary):
    def derived(records: dict[str, dict]) -> dict[str, int]:
        keys = Counter(k for r in records.values() for k in r.get("dispatch", {}))
        return {
            "native_functions": len(records),
            "generated": sum(1 for r in records.values() if r.get("generated")),
            "groups": len({r["group"] for r in records.values() if r.get("group")}),
            "view_groups": len({r["view_group"] for r in records.values() if r.get("view_group")}),
            "dispatch_keys": len(keys),
            "kernels": sum(keys.values()),
            "structured": sum(1 for r in records.values() if r.get("structured")),
        }

    counts = torchgen_model.torchgen_counts(*installed_yaml)
    theirs = derived(oracle)
    # The oracle's records agree with torchgen's own objects.
    assert theirs["native_functions"] == counts.native_functions
    assert theirs["groups"] == counts.groups
    assert theirs["view_groups"] == counts.view_groups
    assert theirs["dispatch_keys"] == counts.dispatch_keys
    mine = derived(ours)
    summary.append(f"YAML entries: {counts.entries}")
    for key in theirs:
        summary.append(f"{key}: ours {mine[key]}, torchgen {theirs[key]}")
    rows = [(k, f"ours {mine[k]}, torchgen {theirs[k]}") for k in theirs if mine[k] != theirs[k]]
    _fail_if(rows, "counts", len(theirs))


@pytest.mark.slow
def test_dump_deterministic_across_hash_seeds(installed_yaml, summary):
    outputs = {seed: run_dump(*installed_yaml, hashseed=seed) for seed in ("0", "1", "123")}
    digests = {seed: hashlib.sha256(out.encode()).hexdigest()[:16] for seed, out in outputs.items()}
    summary.append(f"dump sha256 by PYTHONHASHSEED: {digests}")
    if len(set(outputs.values())) != 1:
        base = outputs["0"].splitlines()
        detail = ""
        for seed, out in outputs.items():
            lines = out.splitlines()
            i = next((i for i, (a, b) in enumerate(zip(base, lines, strict=False)) if a != b), None)
            if i is not None:
                detail = f"; seed 0 vs {seed} first differ at line {i + 1}: {lines[i][:200]!r}"
                break
        pytest.fail(f"dump differs across PYTHONHASHSEED: {digests}{detail}", pytrace=False)
