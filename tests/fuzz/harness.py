"""Run one fuzz input through an entry point and judge it against the invariants.

For every input of `check`, `generate` and `backend` (run in-process through
``atengen.cli.main.main``):

- no exception escapes ``main``;
- a non-zero exit comes with error lines only, each ``[file:line: ]error: <one line>``
  (warnings ``file:line: warning: ...`` may precede them), no line repeated;
- nothing is written outside the declared output directories and stamp;
- a failed command leaves the file system exactly as it was (no partial output).

The workspace of each input is ``<root>/a/b/ws`` and the whole ``<root>`` is compared
before and after, so a write through ``../..`` is seen.

For schema strings, ``schema_verdict`` compares atengen's parser with torch's runtime
parser (``torch._C.parse_schema``).
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import os
import re
import shutil
import tempfile
import time
import traceback
from dataclasses import dataclass, field

from atengen.cli.main import main
from atengen.errors import SchemaError
from atengen.facts import torch_facts
from atengen.model.schema import parse_schema
from atengen.model.torch_schema_text import read_torch_schema
from tests.support.model_helpers import TAGS_YAML

ERROR_LINE = re.compile(r"^(?:[^\n]+:\d+: )?error: \S[^\n]*$")
WARNING_LINE = re.compile(r"^[^\n]+:\d+: warning: \S[^\n]*$")
MORE_WARNINGS = re.compile(r"^warning: \.\.\. and \d+ more warnings?$")
USAGE_LINE = re.compile(r"^atengen(?: \w+)?: error: \S[^\n]*$")

# aten ops a fuzzed backend YAML can name (a small stand-in for torch's op YAML).
BACKEND_OP_YAML = """\
- func: abs(Tensor self) -> Tensor
  variants: function, method
  dispatch:
    CompositeExplicitAutograd: abs
- func: abs_(Tensor(a!) self) -> Tensor(a!)
  dispatch:
    CompositeExplicitAutograd: abs_
- func: abs.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)
  dispatch:
    CPU: abs_out
- func: neg(Tensor self) -> Tensor
  dispatch:
    CPU: neg
- func: add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor
  dispatch:
    CPU: add
- func: add_.Tensor(Tensor(a!) self, Tensor other, *, Scalar alpha=1) -> Tensor(a!)
  dispatch:
    CPU: add_
- func: add.out(Tensor self, Tensor other, *, Scalar alpha=1, Tensor(a!) out) -> Tensor(a!)
  dispatch:
    CPU: add_out
- func: mul.Tensor(Tensor self, Tensor other) -> Tensor
  dispatch:
    CompositeExplicitAutograd: mul
  autogen: mul.Tensor_out
- func: view(Tensor(a) self, SymInt[] size) -> Tensor(a)
  dispatch:
    CPU, Meta: view
- func: view_copy(Tensor self, SymInt[] size) -> Tensor
  tags: view_copy
  dispatch:
    CompositeExplicitAutogradNonFunctional: view_copy
  autogen: view_copy.out
"""


# An error path must take at most this much CPU and print at most this many lines, for any
# input under ERROR_PATH_INPUT_BYTES.
ERROR_PATH_CPU_S = 2.0
ERROR_PATH_LINES = 100
ERROR_PATH_INPUT_BYTES = 10 * 1024 * 1024


@dataclass
class Verdict:
    rc: int | None = None
    problems: list[str] = field(default_factory=list)  # broken invariants, one line each
    # "traceback", "writes outside", "input changed", "partial output", "bad error lines",
    # "slow error path"
    kind: str = ""
    cpu_s: float = 0.0  # CPU seconds of the command (this process)
    lines: int = 0  # lines it printed to stderr

    def fail(self, kind: str, detail: str) -> None:
        self.kind = self.kind or kind
        self.problems.append(f"{kind}: {detail}")


def _snapshot(root: str) -> dict[str, str]:
    out = {}
    for d, dirs, files in os.walk(root):
        for name in dirs:
            out[os.path.join(d, name)] = "dir"
        for name in files:
            p = os.path.join(d, name)
            if os.path.islink(p):
                out[p] = "link"
                continue
            if not os.path.isfile(p) or not os.access(p, os.R_OK):
                out[p] = "special"  # a FIFO, a socket, an unreadable file: not to be read
                continue
            with open(p, "rb") as f:
                out[p] = hashlib.sha1(f.read()).hexdigest()
    return out


def _under(path: str, roots: list[str]) -> bool:
    return any(path == r or path.startswith(r + os.sep) for r in roots)


def run_cli_case(
    command: str,
    files: dict[str, str | bytes],
    flags: list[str],
    declared: list[str],
    prepare=None,
):
    """Runs ``atengen <command> <flags>`` in a fresh workspace holding ``files`` (plus
    tags.yaml and a regular file named ``file``); ``declared`` are the output paths
    (relative to the workspace) the command may write, but never over one of ``files``.
    ``prepare(ws)`` may add what ``files`` cannot hold (FIFOs, links) before the run."""
    root = tempfile.mkdtemp(prefix="atengen-fuzz-")
    try:
        ws = os.path.join(root, "a", "b", "ws")
        os.makedirs(ws)
        files = {"tags.yaml": TAGS_YAML, "file": "a regular file\n", **files}
        for name, data in files.items():
            path = os.path.join(ws, name)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            mode = "wb" if isinstance(data, bytes) else "w"
            with open(path, mode) as f:
                f.write(data)
        if prepare is not None:
            prepare(ws)
        inputs = [os.path.join(ws, name) for name in files]
        return _judge(root, ws, command, flags, declared, inputs)
    finally:
        _remove_tree(root)


def _remove_tree(root: str) -> None:
    """Removes a workspace, whatever modes a case left in it."""
    for d, dirs, _ in os.walk(root):
        for name in dirs:
            with contextlib.suppress(OSError):
                os.chmod(os.path.join(d, name), 0o700)
    shutil.rmtree(root, ignore_errors=True)


def _judge(
    root: str, ws: str, command: str, flags: list[str], declared: list[str], inputs: list[str]
) -> Verdict:
    verdict = Verdict()
    before = _snapshot(root)
    out, err = io.StringIO(), io.StringIO()
    cwd = os.getcwd()
    os.chdir(ws)  # relative output paths resolve inside the workspace
    start = time.process_time()
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            verdict.rc = main(["atengen", command, *flags])
    except KeyboardInterrupt:  # the campaign was stopped (campaign.py), not a finding
        raise
    except BaseException as e:  # noqa: BLE001 - exactly what the fuzzer looks for
        tb = traceback.format_exception(e)
        verdict.fail("traceback", f"{type(e).__name__}: {e} at {tb[-2].strip()[:200]}")
        return verdict
    finally:
        verdict.cpu_s = time.process_time() - start
        os.chdir(cwd)
    after = _snapshot(root)
    changed_inputs = [p for p in inputs if before.get(p) != after.get(p)]
    if changed_inputs:
        verdict.fail(
            "input changed", ", ".join(os.path.relpath(p, root) for p in changed_inputs[:3])
        )
    allowed = [os.path.realpath(os.path.join(ws, d)) for d in declared]
    changed = sorted(p for p in set(before) | set(after) if before.get(p) != after.get(p))
    outside = [p for p in changed if not _under(os.path.realpath(p), allowed)]
    # Parents of an output directory may be created (mkdir -p), nothing else.
    outside = [p for p in outside if not (after.get(p) == "dir" and p not in before and
                                          any(a.startswith(p + os.sep) for a in allowed))]  # fmt: skip
    if outside:
        verdict.fail("writes outside", ", ".join(os.path.relpath(p, root) for p in outside[:3]))
    if verdict.rc != 0 and changed:
        verdict.fail("partial output", ", ".join(os.path.relpath(p, root) for p in changed[:3]))
    lines = err.getvalue().splitlines()
    verdict.lines = len(lines)
    if verdict.rc != 0 and _input_bytes(inputs) < ERROR_PATH_INPUT_BYTES:
        if verdict.cpu_s > ERROR_PATH_CPU_S or verdict.lines > ERROR_PATH_LINES:
            verdict.fail("slow error path", f"{verdict.cpu_s:.2f} s CPU, {verdict.lines} lines")
    if verdict.rc == 0:
        bad = [x for x in lines if not WARNING_LINE.match(x) and not MORE_WARNINGS.match(x)]
    elif verdict.rc == 2:
        bad = [] if len(lines) == 1 and USAGE_LINE.match(lines[0]) else lines or ["(none)"]
    else:
        errors = [x for x in lines if not WARNING_LINE.match(x) and not MORE_WARNINGS.match(x)]
        bad = [x for x in errors if not ERROR_LINE.match(x)] or ([] if errors else ["(none)"])
        if len(set(errors)) != len(errors):
            bad.append("a repeated error line")
    if bad:
        verdict.fail("bad error lines", repr(bad[0])[:200])
    return verdict


def _input_bytes(paths: list[str]) -> int:
    return sum(os.path.getsize(p) for p in paths if os.path.isfile(p))


def check_case(op_yaml: str | bytes) -> Verdict:
    return run_cli_case("check", {"ops.yaml": op_yaml}, ["--op_yaml=ops.yaml"], [])


def generate_case(op_yaml: str | bytes, flags: dict) -> Verdict:
    args = ["--op_yaml=ops.yaml", f"--ops={flags['ops']}", f"--keys={flags['keys']}"]
    args += [f"--shards={flags['shards']}", f"--output_dir={flags['output_dir']}"]
    declared = [flags["output_dir"]]
    for name in ("header_output_dir", "cuda_output_dir"):
        if flags[name] is not None:
            args.append(f"--{name}={flags[name]}")
            declared.append(flags[name])
    if not flags["functionalize"]:
        args.append("--nofunctionalize")
    return run_cli_case("generate", {"ops.yaml": op_yaml}, args, declared)


def backend_case(backend_yaml: str | bytes, flags: dict) -> Verdict:
    args = ["--op_yaml=ops.yaml", "--backend_yaml=backend.yaml"]
    args += [f"--output_dir={flags['output_dir']}", f"--shards={flags['shards']}"]
    args.append(f"--include_prefix={flags['include_prefix']}")
    declared = [flags["output_dir"]]
    for name in ("header_output_dir", "check_stamp"):
        if flags[name] is not None:
            args.append(f"--{name}={flags[name]}")
            declared.append(flags[name])
    if flags["functional_backend"]:
        args.append("--functional_backend")
    files = {"ops.yaml": BACKEND_OP_YAML, "backend.yaml": backend_yaml}
    return run_cli_case("backend", files, args, declared)


# The shape-inference header of fuzzed lazy backends (--shape_inference_file=shapes.h).
LAZY_SHAPES_H = """\
#pragma once
namespace torch::lazy {
std::vector<torch::lazy::Shape> compute_shape_abs(const at::Tensor & self);
std::vector<torch::lazy::Shape> compute_shape_neg(const at::Tensor & self);
}
"""

# Custom-namespace ops for fuzzed derivatives (beside the aten ops of BACKEND_OP_YAML).
AUTOGRAD_OP_YAML = (
    BACKEND_OP_YAML
    + """\
- func: myops::scale(Tensor self, float factor) -> Tensor
  dispatch:
    CPU: scale_cpu
"""
)


def lazy_case(lazy_yaml: str | bytes, flags: dict) -> Verdict:
    args = ["--op_yaml=ops.yaml", "--backend_yaml=backend.yaml"]
    args += [f"--output_dir={flags['output_dir']}", f"--shards={flags['shards']}"]
    args.append(f"--include_prefix={flags['include_prefix']}")
    for name in ("node_base", "shape_inference_file"):
        if flags[name] is not None:
            args.append(f"--{name}={flags[name]}")
    if flags["no_ts_lowerings"]:
        args.append("--no_ts_lowerings")
    files = {"ops.yaml": BACKEND_OP_YAML, "backend.yaml": lazy_yaml, "shapes.h": LAZY_SHAPES_H}
    return run_cli_case("lazy", files, args, [flags["output_dir"]])


def autograd_case(derivatives_yaml: str | bytes, flags: dict) -> Verdict:
    args = ["--op_yaml=ops.yaml", "--derivatives_yaml=derivatives.yaml"]
    args.append(f"--shards={flags['shards']}")
    declared = []
    for name in ("output_dir", "namespace", "cpp_namespace", "ops"):
        if flags[name] is not None:
            args.append(f"--{name}={flags[name]}")
    if flags["output_dir"] is not None:
        declared.append(flags["output_dir"])
    files = {"ops.yaml": AUTOGRAD_OP_YAML, "derivatives.yaml": derivatives_yaml}
    return run_cli_case("autograd", files, args, declared)


# --- schemas against torch ------------------------------------------------------------------


def torch_shape(s) -> tuple:
    """What both parsers must agree on: names, overload, each argument's name, kwarg-only,
    mutability and whether it has a default, and each return's mutability."""
    return (
        s.name,
        s.overload_name,
        tuple(
            (a.name, a.kwarg_only, bool(a.alias_info and a.alias_info.is_write),
             a.has_default_value())
            for a in s.arguments
        ),
        tuple(bool(r.alias_info and r.alias_info.is_write) for r in s.returns),
    )  # fmt: skip


def our_shape(f) -> tuple:
    positional = f.arguments.flat_positional
    return (
        str(f.name.name),
        f.name.overload_name,
        tuple(
            (a.name, a not in positional, a.is_write, a.default is not None)
            for a in f.arguments.flat_all
        ),
        tuple(r.is_write for r in f.returns),
    )


def _release_type_error(text: str) -> str:
    """The parser takes Dimname (torch 2.11 and 2.12's own ops use it); `generate` refuses a
    schema using it for other releases, as their parser does: that refusal, or ''."""
    import torch  # noqa: PLC0415 - only the schema fuzzing needs torch

    release = ".".join(torch.__version__.split("+")[0].split(".")[:2])
    for name, releases in torch_facts.SCHEMA_TYPES_OF_RELEASES.items():
        if release not in releases and re.search(rf"\b{name}\b", text):
            return f"type '{name}' is not known to torch {release}'s parser"
    return ""


def torch_parse(text: str):
    """torch._C.parse_schema(text), or None where torch refuses it."""
    import torch  # noqa: PLC0415 - only the schema fuzzing needs torch

    try:
        return torch._C.parse_schema(text)
    except Exception:  # noqa: BLE001 - torch raises RuntimeError and a few others
        return None


def schema_verdict(text: str):
    """(ours, theirs, detail): each 'accept' or 'reject'; detail is our error or a mismatch."""
    import torch  # noqa: PLC0415 - only the schema fuzzing needs torch

    try:
        ours = parse_schema(text)
        our_error = ""
    except SchemaError as e:
        ours, our_error = None, str(e)
    if ours is not None:
        our_error = _release_type_error(text)
        ours = None if our_error else ours
    theirs = torch_parse(text)
    if ours is None or theirs is None:
        return ("accept" if ours else "reject", "accept" if theirs else "reject", our_error)
    detail = ""
    if str(ours) != text:
        detail = f"not canonical: {ours}"
    elif str(torch._C.parse_schema(str(ours))) != str(theirs):
        detail = "torch prints our schema differently"
    elif our_shape(ours) != torch_shape(theirs):
        detail = f"shape differs: {our_shape(ours)} vs {torch_shape(theirs)}"
    return ("accept", "accept", detail)


def torch_language_verdict(text: str):
    """schema_verdict for a custom namespace's schema, which the op YAML takes in torch's own
    spelling: (ours, theirs, detail). Where both accept, the text the library registers must
    parse as the author's does, and our model must read each argument and return as torch
    does (name, kwarg-only, written to, default, type)."""
    import torch  # noqa: PLC0415 - only the schema fuzzing needs torch

    try:
        spelled = read_torch_schema(text)
        ours = parse_schema(spelled.canonical, custom=True)
        our_error = _release_type_error(text)
        ours = None if our_error else ours
    except SchemaError as e:
        ours, our_error = None, str(e)
    theirs = torch_parse(text)
    if ours is None or theirs is None:
        return ("accept" if ours else "reject", "accept" if theirs else "reject", our_error)
    detail = ""
    ours_in_torch = torch._C.parse_schema(ours.text)
    if str(torch._C.parse_schema(spelled.registered)) != str(theirs):
        detail = "the registered text parses otherwise"
    elif our_shape(ours) != torch_shape(theirs):
        detail = f"shape differs: {our_shape(ours)} vs {torch_shape(theirs)}"
    elif _types_and_defaults(ours_in_torch) != _types_and_defaults(theirs):
        detail = (
            f"types differ: {_types_and_defaults(ours_in_torch)} vs {_types_and_defaults(theirs)}"
        )
    return ("accept", "accept", detail)


def _types_and_defaults(s) -> tuple:
    return (
        tuple((str(a.type), repr(a.default_value) if a.has_default_value() else "") for a in s.arguments),
        tuple(str(r.type) for r in s.returns),
    )  # fmt: skip
