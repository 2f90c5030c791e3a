"""Every (dispatch key, op) that torchgen's own gen.py registers for the wheel's op YAML, against
what `atengen generate` registers for the same YAML; with --library, which of them a built
library serves once loaded.

    .venv/bin/python conformance/aten_registrations.py [--python PY] [--library LIB] [--write]

`--python` runs the script under another interpreter, so against its torch and its op YAML
(`--python ~/.cache/rules_aten/venv-torch-cu130/bin/python`: the CUDA venv's torch).
`--torch_dir DIR` checks another release without a venv: DIR is the `torch` package directory of
an unpacked wheel (`./dev releases` unpacks each release under ~/.cache/rules_aten/releases/),
whose `torchgen` beside it is the oracle (pure Python: it runs in a subprocess with that
directory first on PYTHONPATH), and whose facts tool/torch_probe.py reads without importing it.

torchgen (the oracle, installed with the wheel) runs as `python -m torchgen.gen --generate
sources` over its packaged ATen; atengen as `atengen generate --ops=all --keys=auto` (CPU-side and
CUDA keys, and Functionalize) with the facts tool/torch_probe.py reads of the wheel
(`--torch_facts`, as the @torch repository passes them). Each side's `m.impl("<op>", ...)` calls
are read from its Register*.cpp files, per `TORCH_LIBRARY_IMPL(aten, <Key>, m)` block (atengen's
`ATENGEN_LIBRARY_IMPL` or `ATENGEN_TYPED_LIBRARY_IMPL`, its equivalents). For every key the script
prints how many registrations each side has, the ones torchgen has and atengen lacks (missing) and
the reverse (extra). A registration atengen leaves out on purpose is listed as left out, with its
reason, not counted as missing: its kernel is an at::native function the wheel does not export
(read from the wheel's libraries by the probe; it could not be loaded), or it is the no-op Meta
kernel of an in-place op that torch serves a Python meta kernel instead
(torch_facts.INPLACE_OPS_WITH_PYTHON_META). A key for which atengen registers nothing, and leaves
out on purpose (it needs a torch built for that device: torch_facts.UNSERVABLE_KEYS), is reported
as such, with its count, not as missing.

`--library` (a `lib<name>.so` of every op: `bazel build //:libaten_generated.so
--//:aten_ops=all`, with that interpreter as RULES_ATEN_PYTHON) is then loaded into a fresh
process of the interpreter, and for each (key, op) torchgen registers under the library's CUDA
keys (torch_facts.CUDA_KEYS; all keys with --served_keys=all) the dispatcher's kernel for the
key (`torch._C._dispatch_dump`; an alias key's `<key>[alias]` line) is looked up before and
after: it counts as served when it is registered in a file whose path holds --served_marker
(the generated tree). The "Overriding a previously registered kernel" warnings the load prints
are counted too. Not served and not
left out is a difference.

Prints `RESULT ok` when nothing is missing, extra or unserved outside those keys, else
`RESULT differences`, and exits 1. `--write` appends the counts to conformance/RESULTS.md.
"""

from __future__ import annotations

import argparse
import json
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
from shared import (  # noqa: E402
    add_python_option,
    append_result,
    interpreter,
    run_under,
    wheel_facts_file,
)

BLOCK = re.compile(
    r"(?:TORCH|ATENGEN|ATENGEN_TYPED)_LIBRARY_IMPL\(\s*aten\s*,\s*(\w+)\s*,\s*m\s*\)\s*\{"
)
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


def torchgen_dir(torch_dir: str | None) -> Path:
    """The torchgen package of the release checked: beside --torch_dir, or the installed one."""
    if torch_dir:
        return Path(torch_dir).resolve().parent / "torchgen"
    import torchgen

    return Path(torchgen.__file__).parent


def run_torchgen(out: Path, torch_dir: str | None) -> dict[str, set[str]]:
    package = torchgen_dir(torch_dir)
    aten = package / "packaged" / "ATen"
    env = dict(os.environ, PYTHONPATH=str(package.parent)) if torch_dir else None
    cmd = [sys.executable, "-m", "torchgen.gen", "-s", str(aten), "-d", str(out / "tg")]
    cmd += ["--aoti-install-dir", str(out / "aoti"), "--per-operator-headers"]
    subprocess.run([*cmd, "--generate", "sources"], check=True, capture_output=True, env=env)
    whole = registrations(out / "tg", skip_everything_shards=True)
    shards = registrations(out / "tg", skip_everything_shards=False)
    assert whole == shards, "torchgen's Everything files and shards disagree"
    return whole


def run_atengen(out: Path, facts: Path, native: Path) -> dict[str, set[str]]:
    cmd = [sys.executable, "-m", "atengen", "generate", "--ops=all", "--keys=auto"]
    cmd += [f"--output_dir={out}/ag", f"--cuda_output_dir={out}/ag_cuda"]
    cmd += [f"--torch_facts={facts}", f"--op_yaml={native}/native_functions.yaml"]
    cmd += [f"--tags_yaml={native}/tags.yaml"]
    env = dict(os.environ, PYTHONPATH=str(REPO / "tool"))
    subprocess.run(cmd, check=True, env=env, capture_output=True)
    found: dict[str, set[str]] = defaultdict(set)
    for tree in ("ag", "ag_cuda"):
        for key, ops in registrations(out / tree, skip_everything_shards=False).items():
            found[key] |= ops
    return dict(found)


def left_out_reason(model, wheel, key: str, op: str) -> str | None:
    """Why atengen leaves a registration torchgen makes out on purpose, or None."""
    from atengen.aten.registration import unexported_kernel_reason
    from atengen.facts import torch_facts

    f = model.by_name.get(f"aten::{op}")
    if f is None:
        return None
    if key == "Meta" and op in torch_facts.INPLACE_OPS_WITH_PYTHON_META:
        return "torch serves it a Python meta kernel, which a no-op Meta kernel would replace"
    kernel_key = "CompositeImplicitAutograd" if key == torch_facts.FUNCTIONALIZE_KEY else key
    # (a decomposing op's Functionalize kernel too)
    return unexported_kernel_reason(f, kernel_key, wheel)


def compare(
    theirs: dict[str, set[str]], ours: dict[str, set[str]], wheel, native: Path
) -> tuple[list[str], int]:
    """Report lines, and the number of registrations missing from, or extra in, the keys
    atengen serves (those left out because the wheel does not export their kernel are listed,
    not counted)."""
    from atengen.facts import torch_facts
    from atengen.model.operator_model import load_model

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
        reasons = {n: left_out_reason(model, wheel, key, n) for n in missing}
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


# Runs in a fresh interpreter: for each (key, op), the file the dispatcher names for the key's
# kernel before and after loading the library, and the "Overriding" warnings the load printed.
_SERVED_SCRIPT = """
import json, os, sys, tempfile, torch
pairs = json.loads(open(sys.argv[2]).read())
def kernel_file(key, op):
    # (an alias key, CompositeImplicitAutograd and the like, is listed as "<key>[alias]")
    for line in torch._C._dispatch_dump("aten::" + op).splitlines():
        for head in (key + ": registered at ", key + "[alias]: registered at "):
            if line.startswith(head):
                return line[len(head):].split(" :: ")[0]
    return None
before = [kernel_file(k, o) for k, o in pairs]
with tempfile.TemporaryFile("w+") as err:
    saved = os.dup(2)
    os.dup2(err.fileno(), 2)
    try:
        torch.ops.load_library(sys.argv[1])
    finally:
        os.dup2(saved, 2)
    err.seek(0)
    overriding = err.read().count("Overriding a previously registered kernel")
after = [kernel_file(k, o) for k, o in pairs]
print(json.dumps({"torch": torch.__version__, "before": before, "after": after,
                  "overriding": overriding}))
"""


def served(
    library: Path, marker: str, pairs: list[tuple[str, str]]
) -> tuple[str, list[bool], list[bool], int]:
    """(torch's version, whether torch registers each (key, op) before the load, whether the
    library serves it after, the number of "Overriding" warnings)."""
    with tempfile.NamedTemporaryFile("w", suffix=".json") as f:
        json.dump(pairs, f)
        f.flush()
        proc = subprocess.run(
            [sys.executable, "-c", _SERVED_SCRIPT, str(library), f.name],
            capture_output=True,
            text=True,
            timeout=900,
        )
    if proc.returncode != 0:
        sys.exit(f"loading {library} failed:\n{proc.stderr[-4000:]}")
    report = json.loads(proc.stdout.strip().splitlines()[-1])
    torch_has = [b is not None for b in report["before"]]
    ours = [a is not None and marker in a for a in report["after"]]
    return report["torch"], torch_has, ours, report["overriding"]


def check_served(
    library: Path, marker: str, keys: set[str], theirs: dict[str, set[str]], wheel
) -> tuple[list[str], int]:
    """Report lines on which of torchgen's registrations under `keys` the loaded library
    serves, and the number of those neither served nor left out on purpose."""
    from atengen.cli.common import installed_torch_yaml_dir
    from atengen.model.operator_model import load_model

    native = installed_torch_yaml_dir()
    model = load_model(f"{native}/native_functions.yaml", f"{native}/tags.yaml")
    pairs = sorted((key, op) for key in keys for op in theirs.get(key, ()))
    version, torch_has, ours, overriding = served(library, marker, pairs)
    lines = [
        f"Loaded `{library.name}` into torch {version} (`torch.ops.load_library`); "
        f'{overriding} "Overriding a previously registered kernel" warnings.',
        "",
        "| key | torchgen registers | torch's dispatcher has | served by the library | "
        "left out | not served |",
        "|---|---|---|---|---|---|",
    ]
    unserved_total = 0
    notes: list[str] = []
    for key in sorted(keys):
        rows = [
            (op, t, o) for (k, op), t, o in zip(pairs, torch_has, ours, strict=True) if k == key
        ]
        reasons = {op: left_out_reason(model, wheel, key, op) for op, _, o in rows if not o}
        unserved = sorted(op for op, why in reasons.items() if not why)
        unserved_total += len(unserved)
        lines.append(
            f"| {key} | {len(rows)} | {sum(t for _, t, _ in rows)} | "
            f"{sum(o for _, _, o in rows)} | {sum(1 for w in reasons.values() if w)} | "
            f"{len(unserved)} |"
        )
        notes += [f"- not served {key}: {op}" for op in unserved]
        notes += [f"- left out {key}: {op} ({why})" for op, why in sorted(reasons.items()) if why]
    return lines + ([""] + notes if notes else []), unserved_total


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_python_option(parser)
    parser.add_argument("--library", help="a built lib<name>.so of every op, to load")
    parser.add_argument(
        "--served_marker",
        default="aten_generated_codegen/",
        help="a part of the generated files' paths, as the dispatcher names them",
    )
    parser.add_argument(
        "--served_keys",
        default="cuda",
        choices=("cuda", "all"),
        help="the keys whose kernels --library must serve: the CUDA keys, or every key",
    )
    parser.add_argument(
        "--torch_dir",
        help="the torch package directory of an unpacked wheel of another release, to check "
        "instead of the installed one (not with --library)",
    )
    parser.add_argument("--write", action="store_true", help="append to conformance/RESULTS.md")
    args = parser.parse_args()
    run_under(args.python)
    from atengen.facts import torch_facts
    from atengen.facts.wheel_facts import parse_wheel_facts

    if args.library and not Path(args.library).is_file():
        parser.error(f"--library: no such file: {args.library}")
    if args.torch_dir and args.library:
        parser.error("--library loads into the running torch: not with --torch_dir")
    if args.torch_dir and not (torchgen_dir(args.torch_dir) / "packaged").is_dir():
        parser.error(f"--torch_dir: no torchgen/packaged beside {args.torch_dir}")
    native = torchgen_dir(args.torch_dir) / "packaged" / "ATen" / "native"
    with tempfile.TemporaryDirectory() as tmp:
        facts = wheel_facts_file(Path(tmp), args.torch_dir or "")
        wheel = parse_wheel_facts(facts.read_text())
        theirs = run_torchgen(Path(tmp), args.torch_dir)
        ours = run_atengen(Path(tmp), facts, native)
    lines, differences = compare(theirs, ours, wheel, native)
    lines = [f"torch {wheel.version} (facts of {wheel.facts_release})", "", *lines]
    if args.library:
        keys = set(torch_facts.CUDA_KEYS) if args.served_keys == "cuda" else set(theirs)
        keys -= torch_facts.UNSERVABLE_KEYS
        served_lines, unserved = check_served(
            Path(args.library), args.served_marker, keys, theirs, wheel
        )
        lines += ["", *served_lines]
        differences += unserved
    print("\n".join(lines))
    verdict = "ok" if differences == 0 else "differences"
    print(f"RESULT {verdict}")
    if args.write:
        library = f" --library={args.library}" if args.library else ""
        library += f" --served_keys={args.served_keys}" if args.library else ""
        library += f" --torch_dir={args.torch_dir}" if args.torch_dir else ""
        append_result(
            "Registrations against torchgen's gen.py",
            f"{interpreter()} conformance/aten_registrations.py{library} --write",
            lines,
            torch_version=wheel.version,
        )
    return 0 if differences == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
