"""Every (dispatch key, op) that torchgen's own gen.py registers for the wheel's op YAML, against
what `atengen generate` registers for the same YAML.

    .venv/bin/python conformance/aten_registrations.py [--write]

torchgen (the oracle, installed with the wheel) runs as `python -m torchgen.gen --generate
sources` over its packaged ATen; atengen as `atengen generate --ops=all --keys=auto` (CPU-side
and CUDA keys, and Functionalize). Each side's `m.impl("<op>", ...)` calls are read from its
Register*.cpp files, per `TORCH_LIBRARY_IMPL(aten, <Key>, m)` block (atengen's
`ATENGEN_LIBRARY_IMPL`, its equivalent). For every key the script
prints how many registrations each side has, the ones torchgen has and atengen lacks (missing)
and the reverse (extra). A registration atengen leaves out on purpose is listed as left out,
with its reason, not counted as missing: its kernel is an at::native function the wheel does
not export (torch_facts.NATIVE_KERNELS_NOT_EXPORTED; it could not be loaded), or it is the no-op
Meta kernel of an in-place op that torch serves a Python meta kernel instead
(torch_facts.INPLACE_OPS_WITH_PYTHON_META). A key for which atengen registers nothing, and leaves out on purpose
(it needs a torch built for that device: torch_facts.UNSERVABLE_KEYS), is reported as such,
with its count, not as missing.

Prints `RESULT ok` when nothing is missing or extra outside those keys, else
`RESULT differences`, and exits 1. `--write` appends the counts to conformance/RESULTS.md.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
from collections import defaultdict
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tool"))
sys.path.insert(0, str(REPO / "conformance"))
from shared import append_result  # noqa: E402

BLOCK = re.compile(r"(?:TORCH|ATENGEN)_LIBRARY_IMPL\(\s*aten\s*,\s*(\w+)\s*,\s*m\s*\)\s*\{")
IMPL = re.compile(r'm\.impl\(\s*"([^"]+)"')


def registrations(directory: Path, *, skip_everything_shards: bool) -> dict[str, set[str]]:
    """{key: ops} from every Register*.cpp under ``directory``.

    torchgen writes each key twice, as shards and as one RegisterXEverything.cpp with the same
    content; only one of the two is read (they are checked to agree).
    """
    found: dict[str, set[str]] = defaultdict(set)
    for path in sorted(directory.rglob("Register*.cpp")):
        if skip_everything_shards and not path.name.endswith("Everything.cpp"):
            if path.name != "RegisterBackendSelect.cpp":
                continue
        text = path.read_text()
        starts = [(m.start(), m.group(1)) for m in BLOCK.finditer(text)]
        for i, (start, key) in enumerate(starts):
            end = starts[i + 1][0] if i + 1 < len(starts) else len(text)
            # torchgen names BackendSelect's ops `aten::arange`, the others `arange`.
            found[key].update(n.removeprefix("aten::") for n in IMPL.findall(text, start, end))
    return dict(found)


def run_torchgen(out: Path) -> dict[str, set[str]]:
    import torchgen

    aten = Path(torchgen.__file__).parent / "packaged" / "ATen"
    cmd = [sys.executable, "-m", "torchgen.gen", "-s", str(aten), "-d", str(out / "tg")]
    cmd += ["--aoti-install-dir", str(out / "aoti"), "--per-operator-headers"]
    subprocess.run([*cmd, "--generate", "sources"], check=True, capture_output=True)
    whole = registrations(out / "tg", skip_everything_shards=True)
    shards = registrations(out / "tg", skip_everything_shards=False)
    assert whole == shards, "torchgen's Everything files and shards disagree"
    return whole


def run_atengen(out: Path) -> dict[str, set[str]]:
    cmd = [sys.executable, "-m", "atengen", "generate", "--ops=all", "--keys=auto"]
    cmd += [f"--output_dir={out}/ag", f"--cuda_output_dir={out}/ag_cuda"]
    env = dict(os.environ, PYTHONPATH=str(REPO / "tool"))
    subprocess.run(cmd, check=True, env=env, capture_output=True)
    found: dict[str, set[str]] = defaultdict(set)
    for tree in ("ag", "ag_cuda"):
        for key, ops in registrations(out / tree, skip_everything_shards=False).items():
            found[key] |= ops
    return dict(found)


def left_out_reason(model, key: str, op: str) -> str | None:
    """Why atengen leaves a registration torchgen makes out on purpose, or None."""
    from atengen import torch_facts
    from atengen.aten.registration import calls_unexported_kernel

    f = model.by_name.get(f"aten::{op}")
    if f is None:
        return None
    if key == "Meta" and op in torch_facts.INPLACE_OPS_WITH_PYTHON_META:
        return "torch serves it a Python meta kernel, which a no-op Meta kernel would replace"
    kernel_key = "CompositeImplicitAutograd" if key == torch_facts.FUNCTIONALIZE_KEY else key
    if calls_unexported_kernel(f, kernel_key):  # (a decomposing op's Functionalize kernel too)
        return f"at::native::{f.dispatch[kernel_key].kernel} is not exported by the wheel"
    return None


def compare(theirs: dict[str, set[str]], ours: dict[str, set[str]]) -> tuple[list[str], int]:
    """Report lines, and the number of registrations missing from, or extra in, the keys
    atengen serves (those left out because the wheel does not export their kernel are listed,
    not counted)."""
    from atengen import torch_facts
    from atengen.cli.common import installed_torch_yaml_dir
    from atengen.model.operator_model import load_model

    native = installed_torch_yaml_dir()
    model = load_model(f"{native}/native_functions.yaml", f"{native}/tags.yaml")
    lines = [
        "| key | torchgen | atengen | missing | extra |",
        "|---|---|---|---|---|",
    ]
    missing_total = extra_total = 0
    details: list[str] = []
    left_out: list[str] = []
    for key in sorted(set(theirs) | set(ours)):
        t, o = theirs.get(key, set()), ours.get(key, set())
        if not o and key in torch_facts.UNSERVABLE_KEYS:
            lines.append(
                f"| {key} | {len(t)} | 0 | left out: needs a torch built for that device | |"
            )
            continue
        missing, extra = sorted(t - o), sorted(o - t)
        reasons = {n: left_out_reason(model, key, n) for n in missing}
        left_out += [f"- left out {key}: {n} ({why})" for n, why in reasons.items() if why]
        missing = [n for n in missing if not reasons[n]]
        missing_total += len(missing)
        extra_total += len(extra)
        lines.append(f"| {key} | {len(t)} | {len(o)} | {len(missing)} | {len(extra)} |")
        details += [f"- missing {key}: {name}" for name in missing]
        details += [f"- extra {key}: {name}" for name in extra]
    total_t = sum(len(v) for v in theirs.values())
    total_o = sum(len(v) for v in ours.values())
    lines.append(f"| all | {total_t} | {total_o} | {missing_total} | {extra_total} |")
    notes = details + left_out
    return lines + ([""] + notes if notes else []), missing_total + extra_total


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", action="store_true", help="append to conformance/RESULTS.md")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        theirs = run_torchgen(Path(tmp))
        ours = run_atengen(Path(tmp))
    lines, differences = compare(theirs, ours)
    print("\n".join(lines))
    verdict = "ok" if differences == 0 else "differences"
    print(f"RESULT {verdict}")
    if args.write:
        append_result(
            "Registrations against torchgen's gen.py",
            ".venv/bin/python conformance/aten_registrations.py --write",
            lines,
        )
    return 0 if differences == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
