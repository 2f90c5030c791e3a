"""Hostile-input classes: real inputs taken apart, re-encoded, nested, pointed at special files or
at each other, and several writers on one directory. Each class draws cases from a seeded
``random.Random``; every case runs through the CLI in-process and is judged by harness.py (no
traceback, one-line errors, no write outside the outputs, inputs untouched, no partial output,
every error path under 2 s CPU and 100 lines).

    real_entries     each entry of torch's native_functions.yaml and derivatives.yaml alone
    backend_mutation structural mutations of real backend YAMLs (torch_xla's, TorchScript's, ...)
    encodings        real inputs in other encodings, line ends, BOMs and with invalid bytes
    special_files    every file flag pointed at a FIFO, a device, a directory, a link, a huge file
    deep_nesting     schema types, YAML, formulas and JSON nested thousands deep
    overlap          output paths over the inputs, the current directory and each other
    concurrency      several processes writing one output directory (tests/fuzz/concurrency.py)

The CI slice (test_fuzz_classes.py) runs a few cases of each; campaign.py runs them long.
"""

from __future__ import annotations

import math
import os
import random
import re
import socket
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from atengen.cli.common import installed_torch_yaml_dir
from tests.fuzz import harness

REPO = Path(__file__).resolve().parent.parent.parent
DATA = REPO / "tests" / "data"
PU1 = REPO / "examples" / "privateuse1_backend"


@dataclass(frozen=True)
class Case:
    label: str  # what the case is, for reports
    command: str
    files: dict  # name -> text or bytes, in the workspace
    flags: tuple[str, ...]
    declared: tuple[str, ...] = ()  # outputs it may write
    prepare: Callable | None = None  # adds special files to the workspace

    def run(self) -> harness.Verdict:
        return harness.run_cli_case(
            self.command, self.files, list(self.flags), list(self.declared), self.prepare
        )


# --- the real inputs --------------------------------------------------------------------------


class RealInputs:
    """Torch's YAMLs from the installed wheel and the repository's real backend YAMLs, read
    once per campaign (an explicit object: no module-level cache)."""

    def __init__(self, seed: int = 0):
        self.offset = seed  # where real_entries starts
        native = Path(installed_torch_yaml_dir())
        self.op_yaml = str(native / "native_functions.yaml")
        self.derivatives_yaml = str(native.parent.parent / "autograd" / "derivatives.yaml")
        self.op_entries = _top_level_items(Path(self.op_yaml).read_text())
        self.derivative_entries = _top_level_items(Path(self.derivatives_yaml).read_text())
        self.backends = {
            p.name: p.read_text()
            for p in [
                *sorted((DATA / "lazy").glob("*.yaml")),
                *sorted((DATA / "backends").glob("*.yaml")),
                PU1 / "backend.yaml",
                PU1 / "backend_functional.yaml",
                REPO / "examples" / "lazy_backend" / "ts_lazy.yaml",
            ]
        }
        self.custom_ops = (DATA / "custom_ops" / "ops.yaml").read_text()
        self.custom_derivatives = (DATA / "custom_ops" / "derivatives.yaml").read_text()


def _top_level_items(text: str) -> list[str]:
    """The text of each top-level `- ` item of a YAML list (comments before it included)."""
    items, current = [], []
    for line in text.splitlines(keepends=True):
        if line.startswith("- ") and any(x.startswith("- ") for x in current):
            items.append("".join(current))
            current = []
        current.append(line)
    if current:
        items.append("".join(current))
    return items


def _is_lazy(text: str) -> bool:
    return bool(re.search(r"^(full_codegen|ir_gen|non_native):", text, re.M))


def _backend_case(label: str, text: str | bytes, lazy: bool) -> Case:
    flags = ["--backend_yaml=be.yaml", "--output_dir=out"]
    return Case(
        label,
        "backend",
        {"be.yaml": text},
        (*flags, "--allow_lazy") if lazy else tuple(flags),
        ("out",),
    )


# --- the classes ------------------------------------------------------------------------------


def real_entries(real: RealInputs, rng: random.Random, index: int) -> Case:
    """One entry alone, each op entry through `check` and `generate`, each derivatives entry
    through `autograd`: ``index`` steps through all of them in a scattered order, every one
    once in as many runs as there are."""
    ops, derivatives = real.op_entries, real.derivative_entries
    total = 2 * len(ops) + len(derivatives)
    step = next(p for p in (7919, 7927, 7933) if math.gcd(p, total) == 1)
    i = (index * step + real.offset) % total
    if i < 2 * len(ops):
        entry = ops[i // 2]
        if i % 2 == 0:
            return Case(
                f"op entry {i // 2} check", "check", {"ops.yaml": entry}, ("--op_yaml=ops.yaml",)
            )
        flags = ("--op_yaml=ops.yaml", "--output_dir=out", "--header_output_dir=inc", "--jobs=1")
        return Case(
            f"op entry {i // 2} generate", "generate", {"ops.yaml": entry}, flags, ("out", "inc")
        )
    j = i - 2 * len(ops)
    flags = (
        "--derivatives_yaml=d.yaml",
        f"--op_yaml={real.op_yaml}",
        "--output_dir=out",
        "--shards=0",
    )
    return Case(f"derivatives entry {j}", "autograd", {"d.yaml": derivatives[j]}, flags, ("out",))


def backend_mutation(real: RealInputs, rng: random.Random, index: int) -> Case:
    name = rng.choice(sorted(real.backends))
    lines = real.backends[name].splitlines(keepends=True)
    done = []
    for _ in range(rng.choice([1, 1, 2, 3])):
        kind = rng.choice(_MUTATIONS)
        lines = kind(lines, rng) or lines
        done.append(kind.__name__.lstrip("_"))
    return _backend_case(
        f"{name}: {', '.join(done)}", "".join(lines), _is_lazy(real.backends[name])
    )


def _delete_line(lines, rng):
    if lines:
        del lines[rng.randrange(len(lines))]


def _duplicate_line(lines, rng):
    if lines:
        i = rng.randrange(len(lines))
        lines.insert(rng.randrange(len(lines) + 1), lines[i])


def _swap_lines(lines, rng):
    if len(lines) > 1:
        i, j = rng.randrange(len(lines)), rng.randrange(len(lines))
        lines[i], lines[j] = lines[j], lines[i]


def _reindent(lines, rng):
    if lines:
        i = rng.randrange(len(lines))
        lines[i] = " " * rng.choice([0, 1, 2, 3, 4, 8]) + lines[i].lstrip(" ")


def _retype_value(lines, rng):
    """A key's value becomes another kind of YAML value."""
    keyed = [i for i, x in enumerate(lines) if re.match(r"^\s*[\w.-]+:", x)]
    if keyed:
        i = rng.choice(keyed)
        key = lines[i].split(":", 1)[0]
        value = rng.choice(
            ["", " []", " {}", " 1", " true", " null", " [a, [b]]", " {a: b}", " x y"]
        )
        lines[i] = f"{key}:{value}\n"


def _new_key(lines, rng):
    key = rng.choice(["full_codegen", "supported", "autograd", "ir_gen", "non_native", "backend",
                      "cpp_namespace", "class_name", "symint", "extra_headers", "mystery"])  # fmt: skip
    value = rng.choice(["\n- abs\n", " x\n", "\n- func: f(Tensor self) -> Tensor\n", " []\n"])
    lines.insert(rng.randrange(len(lines) + 1), f"{key}:{value}")


def _truncate(lines, rng):
    text = "".join(lines)
    cut = rng.randrange(len(text) + 1)
    return [text[:cut]]


def _move_op(lines, rng):
    """An op line moves to another place (another section, often)."""
    ops = [i for i, x in enumerate(lines) if x.lstrip().startswith("- ")]
    if ops:
        line = lines.pop(rng.choice(ops))
        lines.insert(rng.randrange(len(lines) + 1), line)


def _rename_op(lines, rng):
    ops = [i for i, x in enumerate(lines) if re.match(r"^\s*- [\w.]+\s*$", x)]
    if ops:
        i = rng.choice(ops)
        name = lines[i].split("- ", 1)[1].strip()
        new = rng.choice(
            [name + "_", name + ".out", "_" + name, name.split(".")[0] + ".Tensor", name.upper()]
        )
        lines[i] = lines[i].replace(name, new)


_MUTATIONS = [_delete_line, _duplicate_line, _swap_lines, _reindent, _retype_value, _new_key,
              _truncate, _move_op, _rename_op]  # fmt: skip

ENCODINGS = ["utf-8-sig", "utf-16", "utf-16-le", "utf-16-be", "utf-32", "latin-1", "cp1252"]


def encodings(real: RealInputs, rng: random.Random, index: int) -> Case:
    kind = rng.choice(["ops", "backend", "derivatives"])
    text = {"ops": real.custom_ops, "backend": real.backends["privateuse1_small.yaml"],
            "derivatives": real.custom_derivatives}[kind]  # fmt: skip
    how = rng.choice(["encoding", "line ends", "invalid bytes", "unicode", "nul"])
    if how == "encoding":
        enc = rng.choice(ENCODINGS)
        data = ("# çà ü\n" + text).encode(enc, errors="replace")
        label = enc
    elif how == "line ends":
        end = rng.choice(["\r\n", "\r", "\n\r", "\u2028", "\x85", "\x0b", "\x0c"])
        data = text.replace("\n", end).encode("utf-8")
        label = f"line ends {end!r}"
    elif how == "invalid bytes":
        raw = bytearray(text.encode("utf-8"))
        bad = rng.choice(
            [b"\xff", b"\xc3", b"\xed\xa0\x80", b"\xc0\xaf", b"\xf4\x90\x80\x80", b"\x80"]
        )
        raw[rng.randrange(len(raw) + 1) : 0] = bad
        data, label = bytes(raw), f"invalid bytes {bad!r}"
    elif how == "unicode":
        char = rng.choice(["\u00a0", "\u200b", "\ufeff", "\u202e", "\t", "\U0001f600", "ａ"])
        chars = list(text)
        chars.insert(rng.randrange(len(chars) + 1), char)
        data, label = "".join(chars).encode("utf-8"), f"char {char!r}"
    else:
        chars = list(text)
        chars.insert(rng.randrange(len(chars) + 1), "\x00")
        data, label = "".join(chars).encode("utf-8"), "NUL"
    label = f"{kind} {label}"
    if kind == "ops":
        flags = ("--op_yaml=ops.yaml", "--output_dir=out", "--header_output_dir=inc")
        return Case(label, "generate", {"ops.yaml": data}, flags, ("out", "inc"))
    if kind == "backend":
        return _backend_case(label, data, lazy=False)
    flags = ("--op_yaml=ops.yaml", "--derivatives_yaml=d.yaml", "--output_dir=out")
    return Case(label, "autograd", {"ops.yaml": real.custom_ops, "d.yaml": data}, flags, ("out",))


def _special(kind: str) -> Callable[[str], None]:
    def prepare(ws: str) -> None:
        path = os.path.join(ws, "special")
        if kind == "fifo":
            os.mkfifo(path)
        elif kind == "directory":
            os.mkdir(path)
        elif kind == "socket":
            s = socket.socket(socket.AF_UNIX)
            s.bind(path)
            s.close()
        elif kind == "dangling link":
            os.symlink(os.path.join(ws, "nowhere"), path)
        elif kind == "link loop":
            os.symlink(path, path)
        elif kind == "empty":
            open(path, "w").close()
        elif kind == "huge":
            with open(path, "wb") as f:
                f.truncate(64 * 1024 * 1024)
        elif kind == "unreadable":
            with open(path, "w") as f:
                f.write("- func: f(Tensor self) -> Tensor\n")
            os.chmod(path, 0)
        else:
            os.symlink(kind, path)  # a device

    return prepare


SPECIAL_KINDS = ["fifo", "directory", "socket", "dangling link", "link loop", "empty", "huge",
                 "unreadable", "/dev/zero", "/dev/urandom", "/dev/null", "/dev/full"]  # fmt: skip
FILE_FLAGS = ["op_yaml", "tags_yaml", "ops_file", "torch_facts", "derivatives_yaml", "backend_yaml",
              "impl_path", "shape_inference_file"]  # fmt: skip


def special_files(real: RealInputs, rng: random.Random, index: int) -> Case:
    kind, flag = rng.choice(SPECIAL_KINDS), rng.choice(FILE_FLAGS)
    files = {"ops.yaml": real.custom_ops, "be.yaml": real.backends["privateuse1_small.yaml"],
             "lazy.yaml": real.backends["custom_lazy.yaml"], "d.yaml": real.custom_derivatives}  # fmt: skip
    given = {"op_yaml": "ops.yaml", "tags_yaml": "tags.yaml", flag: "special"}
    yamls = (f"--op_yaml={given['op_yaml']}", f"--tags_yaml={given['tags_yaml']}")
    if flag in ("op_yaml", "tags_yaml", "ops_file", "torch_facts"):
        extra = (f"--{flag}=special",) if flag in ("ops_file", "torch_facts") else ()
        command, flags = "generate", (*yamls, "--output_dir=out", "--header_output_dir=inc", *extra)
    elif flag == "derivatives_yaml":
        command, flags = "autograd", (*yamls, "--derivatives_yaml=special", "--output_dir=out")
    elif flag == "shape_inference_file":
        command, flags = (
            "lazy",
            ("--backend_yaml=lazy.yaml", "--output_dir=out", "--shape_inference_file=special"),
        )
    else:
        backend = "special" if flag == "backend_yaml" else "be.yaml"
        extra = ("--impl_path=special",) if flag == "impl_path" else ()
        command, flags = "backend", (f"--backend_yaml={backend}", "--output_dir=out", *extra)
    return Case(f"--{flag}={kind}", command, files, flags, ("out", "inc"), _special(kind))


def deep_nesting(real: RealInputs, rng: random.Random, index: int) -> Case:
    depth = rng.choice([50, 101, 200, 400, 1000, 5000, 100_000])
    kind = rng.choice(["optional lists", "list nesting", "flow yaml", "block yaml", "formula",
                       "json", "non_native", "schema parens"])  # fmt: skip
    label = f"{kind} {depth}"
    if kind in ("optional lists", "list nesting", "schema parens"):
        ty = {"optional lists": "Tensor" + "?[]" * depth, "list nesting": "int" + "[]" * depth,
              "schema parens": "(" * depth + "Tensor" + ")" * depth}[kind]  # fmt: skip
        text = f"- func: f({ty} self) -> Tensor\n  dispatch:\n    CPU: f\n"
        command = rng.choice(["check", "generate"])
        flags = ("--op_yaml=ops.yaml",) + (("--output_dir=out",) if command == "generate" else ())
        return Case(label, command, {"ops.yaml": text}, flags, ("out",))
    if kind == "flow yaml":
        text = "[" * depth + "]" * depth + "\n"
        return Case(label, "check", {"ops.yaml": text}, ("--op_yaml=ops.yaml",))
    if kind == "block yaml":
        text = "".join(f"{' ' * i}k{i}:\n" for i in range(min(depth, 20_000)))
        return _backend_case(label, text, lazy=False)
    if kind == "formula":
        formula = "(" * depth + "grad" + ")" * depth + " * factor"
        text = f"- name: myops::scale(Tensor self, float factor) -> Tensor\n  self: {formula}\n"
        flags = ("--op_yaml=ops.yaml", "--derivatives_yaml=d.yaml", "--output_dir=out")
        return Case(
            label, "autograd", {"ops.yaml": real.custom_ops, "d.yaml": text}, flags, ("out",)
        )
    if kind == "json":
        text = '{"release": ' + "[" * depth + "]" * depth + "}"
        flags = (
            "--op_yaml=ops.yaml",
            "--output_dir=out",
            "--header_output_dir=inc",
            "--torch_facts=f.json",
        )
        return Case(
            label, "generate", {"ops.yaml": real.custom_ops, "f.json": text}, flags, ("out", "inc")
        )
    ty = "Tensor" + "?[]" * depth
    text = (f"backend: Lazy\ncpp_namespace: torch::lazy\nnon_native:\n"
            f"  - func: deep({ty} self) -> Tensor\n    opkind: ltc_deep\n")  # fmt: skip
    return Case(
        label, "lazy", {"be.yaml": text}, ("--backend_yaml=be.yaml", "--output_dir=out"), ("out",)
    )


def overlap(real: RealInputs, rng: random.Random, index: int) -> Case:
    """Inputs live in in/; outputs are drawn among paths over them, the workspace and each
    other. Whatever is accepted, no input may change."""
    outs = [".", "..", "../..", "in", "in/ops.yaml", "in/..", "link", "link/sub", "out", "out/sub",
            "in/sub", "file", "./out/../in"]  # fmt: skip
    command = rng.choice(["generate", "backend", "lazy", "autograd"])
    out = rng.choice(outs)

    def prepare(ws: str) -> None:
        os.symlink(os.path.join(ws, "in"), os.path.join(ws, "link"))

    files = {"in/ops.yaml": real.custom_ops, "in/be.yaml": real.backends["privateuse1_small.yaml"],
             "in/lazy.yaml": real.backends["custom_lazy.yaml"], "in/d.yaml": real.custom_derivatives,
             "in/tags.yaml": harness.TAGS_YAML}  # fmt: skip
    if command == "generate":
        inc = rng.choice([*outs, "inc"])
        flags = ("--op_yaml=in/ops.yaml", f"--output_dir={out}", f"--header_output_dir={inc}")
        declared = (out, inc)
    elif command == "backend":
        stamp = rng.choice([None, *outs, "stamp", "out/stamp", "in/be.yaml"])
        flags = ("--backend_yaml=in/be.yaml", f"--output_dir={out}")
        flags += (f"--check_stamp={stamp}",) if stamp else ()
        declared = (out, stamp) if stamp else (out,)
    elif command == "lazy":
        flags, declared = ("--backend_yaml=in/lazy.yaml", f"--output_dir={out}"), (out,)
    else:
        flags = ("--op_yaml=in/ops.yaml", "--derivatives_yaml=in/d.yaml", f"--output_dir={out}")
        declared = (out,)
    return Case(f"{command} {' '.join(flags)}", command, files, flags, declared, prepare)


CLASSES = {
    "real_entries": real_entries,
    "backend_mutation": backend_mutation,
    "encodings": encodings,
    "special_files": special_files,
    "deep_nesting": deep_nesting,
    "overlap": overlap,
}
