"""Fuzz inputs of the wheel tool (`atengen wheel`) and of the ELF readers, and the judge of
one run, for the CI slice (test_fuzz_wheel.py) and the long campaign (campaign.py: `--entry
wheel`, `--entry elf`).

The ELF readers are atengen/shipping/elf.py (the wheel's tag and RUNPATH check) and
atengen/facts/wheel_symbols.py (dynamic symbols, symbol versions, the hash table, the weak-reference
edit, the full symbol table). A mutated ELF file goes through every command that reads one:
`atengen wheel --library`, `atengen stable-link-check` and `atengen bound-link` (each with
`--kernel_headers`, which reads the library's defined symbols too), and the probe's
exported_names.
(linkcheck/kernels.py and linkcheck/stable.py read no file of their own: they judge the
symbols wheel_symbols.py read.)

The invariants, as harness.py's for atengen: no exception escapes `atengen`'s `main`; exit 0,
or a non-zero exit with lines that each start with `rules_aten: ` (`atengen: error: ` for a
flag it does not know, exit 2) and are printable (exactly
one, but for an op YAML of several problems and the stable link check's symbol groups); on
success exactly the declared outputs appear (one `.whl` whose Python parses, for the wheel); on
failure the file system is exactly as it was.
"""

from __future__ import annotations

import contextlib
import io
import os
import random
import shutil
import struct
import tempfile
import traceback
import zipfile
from collections.abc import Callable
from pathlib import Path

import torch
import torchgen
from hypothesis import strategies as st

from atengen.cli.main import main as atengen_main
from atengen.facts.wheel_symbols import exported_names
from tests.fuzz.harness import Verdict, _remove_tree, _snapshot

TORCH_LIB = Path(torch.__file__).parent / "lib"
# The smallest shared library of the wheel (8 KB, with .dynamic, .dynsym, .gnu.hash and
# .gnu.version_r): the good library of the wheel cases and the seed of the ELF mutations.
SEED_LIBRARY = TORCH_LIB / "libtorch_global_deps.so"
TAGS = Path(torchgen.__file__).parent / "packaged" / "ATen" / "native" / "tags.yaml"
LABEL = "//:w"

OP_YAMLS = {
    "custom": "- func: fz::scale(Tensor self, float factor=1.0) -> Tensor\n"
    "- func: fz::pair(Tensor a, Tensor b) -> (Tensor, Tensor)\n",
    "keyword_namespace": "- func: lambda::f(Tensor self) -> Tensor\n"
    "- func: lambda::class(Tensor self) -> Tensor\n  dispatch:\n    CPU: class_cpu\n",
    "stub_names": "- func: fz::Tensor(Tensor self) -> Tensor\n- func: fz::ok(Tensor x) -> Tensor\n",
    "aten_only": "- func: abs(Tensor self) -> Tensor\n",
    "two_namespaces": "- func: a::f(Tensor x) -> Tensor\n- func: b::g(Tensor x) -> Tensor\n",
    "empty": "",
    "garbage": "- func: [[[\n  :\n",
    "keyword_arguments": "- func: fz::f(Tensor self, float from, *, bool if=False) -> Tensor\n",
    "two_errors": "- func: fz::f(Tensor self, Foo x) -> Tensor\n"
    "- func: fz::g(Tensor self, Bar y) -> Tensor\n",
    "string_defaults": '- func: fz::f(Tensor a, str t=\'"""\', str u="x\\\\") -> Tensor\n',
}

_HOSTILE_TEXT = st.text(
    alphabet=st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=24
)
_DISTRIBUTIONS = st.one_of(
    st.sampled_from(["fuzzops", "my-ops", "My.Ops_2", "x"]),
    st.sampled_from(
        ["os", "sys", "typing", "site", "abc", "sympy", "typing_extensions", "Jinja2", "torch",
         "class", "9x", "", "a" * 300, "\ufb01x", "x\ny", "a b", "-x", "x-", "a..b", "setuptools"]
    ),
    st.from_regex(r"[A-Za-z][A-Za-z0-9._-]{0,60}[A-Za-z0-9]", fullmatch=True),
    _HOSTILE_TEXT,
)  # fmt: skip
_VERSIONS = st.one_of(
    st.sampled_from(["1.0", "2.3.1", "1.0rc1", "0.1+torch213", "1!2.0.post3.dev4"]),
    st.sampled_from(["", "1.0-beta_x", "x", "1" * 300, "1.0\n", "1.0 "]),
    st.from_regex(r"[0-9]{1,4}(\.[0-9]{1,4}){0,3}", fullmatch=True),
    _HOSTILE_TEXT,
)
_RELEASES = st.one_of(
    st.sampled_from(["2.11", "2.13", "2.15", "", "2", "2.11.0", "abc", "2.1\n1", "02.11"]),
    _HOSTILE_TEXT,
)
_REQUIRES = st.lists(
    st.one_of(
        st.sampled_from(
            ["numpy>=2", "bad req", "numpy; python_version<'3'", "", "x[y]>=1",
             "name @ https://example.org/x.whl", "a\nb", "torch<2", "numpy ==1.*"]
        ),
        _HOSTILE_TEXT,
    ),
    max_size=3,
)  # fmt: skip
_PY_NAMES = st.one_of(
    st.sampled_from(
        ["reg.py", "class.py", "\ufb01.py", "ops.py", "__init__.py", "helpers.py", "if.py",
         "_x.py", "\u00e9t\u00e9.py", "x.txt", "True.py", "a-b.py", "reg.py", "lib.so"]
    ),
    st.from_regex(r"[a-z_][a-z0-9_]{0,8}\.py", fullmatch=True),
    _HOSTILE_TEXT.filter(lambda s: "/" not in s and "\0" not in s and s not in ("", ".", "..")),
)  # fmt: skip
_PY_TEXTS = st.sampled_from(
    ["import torch\n", "import numpy\n", "from . import helpers\n", "def f(:\n", b"\xff\xfe\n",
     "", "from .. import x\n", "import json, os.path\n", "from . import ops\n"]
)  # fmt: skip
_PY_SRCS = st.lists(
    st.tuples(_PY_NAMES, _PY_TEXTS, st.sampled_from(["", "pkg/", "a=b/", "x=/y="])), max_size=3
)

# Each flag: values that work, and what may not.
_FLAGS = {
    "distribution": (st.sampled_from(["fuzzops", "my-ops", "My.Ops_2", "x"]), _DISTRIBUTIONS),
    "version": (st.sampled_from(["1.0", "2.3.1", "1.0rc1", "0.1+torch213"]), _VERSIONS),
    "abi": (st.just("stable"), st.sampled_from(["release", "", "Stable", "stable\n"])),
    "torch_target": (st.sampled_from(["2.11", "2.13"]), _RELEASES),
    "torch_release": (st.sampled_from(["2.13", ""]), _RELEASES),
    "cuda": (
        st.sampled_from(["", "13.0"]),
        st.one_of(st.sampled_from(["12", "x", "13.0\n"]), _HOSTILE_TEXT),
    ),
    "summary": (
        st.sampled_from(["", "Fuzzed ops", "x" * 500, "caf\u00e9 \"quoted\" \\ ops"]),
        st.one_of(st.sampled_from(["one\ntwo", "\r", "a\x00b"]), _HOSTILE_TEXT),
    ),
    "requires": (st.sampled_from([[], ["numpy>=2"], ["numpy; python_version<'4'"]]), _REQUIRES),
    "py_srcs": (
        st.sampled_from([[], [("reg.py", "import torch\n", "pkg/")]]),
        _PY_SRCS,
    ),
    "library": (
        st.just("good"),
        st.sampled_from(
            ["directory", "missing", "dotdot", "quote", "not_elf", "empty", "broken_dynamic",
             "fifo", "no_lib_prefix.so"]
        ),
    ),
    "op_yaml": (
        st.sampled_from(
            ["custom", "keyword_namespace", "stub_names", "string_defaults", "keyword_arguments"]
        ),
        st.sampled_from(sorted(OP_YAMLS) + ["missing"]),
    ),
    "output_dir": (st.sampled_from(["out", "deep/x/out", "full"]), st.sampled_from(["file"])),
    "extra": (st.just(()), st.sampled_from([("--bogus=1",), ("--py_src_label=x.py",)])),
}  # fmt: skip


@st.composite
def _wheel_args(draw: st.DrawFn) -> dict:
    """A working set of flags with up to three of them drawn from what may not work."""
    hostile = draw(st.sets(st.sampled_from(sorted(_FLAGS)), max_size=3))
    return {name: draw(_FLAGS[name][name in hostile]) for name in _FLAGS}


WHEEL_ARGS = _wheel_args()


def _command(name: str) -> Callable[[list[str]], int]:
    """`atengen NAME` in this process, as a ``main(argv)``."""
    return lambda argv: atengen_main(["atengen", name, *argv])


def _run_main(verdict: Verdict, main: Callable[[list[str]], int], argv: list[str]) -> str:
    """Runs ``main(argv)``, recording its exit code (argparse's SystemExit too) or the
    traceback; returns what it printed to stderr."""
    err = io.StringIO()
    try:
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
            verdict.rc = main(argv)
    except SystemExit as e:
        verdict.rc = e.code if isinstance(e.code, int) else 1
    except KeyboardInterrupt:
        raise
    except BaseException as e:  # noqa: BLE001 - exactly what the fuzzer looks for
        tb = traceback.format_exception(e)
        verdict.fail("traceback", f"{type(e).__name__}: {e} at {tb[-2].strip()[:200]}")
    return err.getvalue()


def _judge_lines(verdict: Verdict, stderr: str, *, single: bool) -> None:
    lines = stderr.splitlines()
    verdict.lines = len(lines)
    if verdict.rc == 0:
        return
    if not lines:
        verdict.fail("bad error lines", "a failure without a line")
    elif single and len(lines) != 1:
        verdict.fail("bad error lines", f"{len(lines)} lines: {stderr[:200]!r}")
    # A bad command line is atengen's usage line (`atengen: error: ...`, or `atengen wheel: ...`).
    starts = ("rules_aten: ", "atengen") if verdict.rc == 2 else ("rules_aten: ",)
    bad = [x for x in lines if not x.startswith(starts) or not x.isprintable()]
    if bad:
        verdict.fail("bad error lines", repr(bad[0])[:200])


def _judge_files(verdict: Verdict, before: dict, after: dict, allowed: list[str]) -> list[str]:
    """The paths the run created or changed; a failure must have none, and a success only
    under ``allowed``."""
    changed = sorted(p for p in set(before) | set(after) if before.get(p) != after.get(p))
    if verdict.rc not in (0, None) and changed:
        verdict.fail("partial output", ", ".join(changed[:3]))
    outside = [p for p in changed if not any(p == a or p.startswith(a + os.sep) for a in allowed)]
    # Parents of an output directory may be made (mkdir -p), nothing else.
    outside = [p for p in outside if not (after.get(p) == "dir" and p not in before and
                                          any(a.startswith(p + os.sep) for a in allowed))]  # fmt: skip
    if outside:
        verdict.fail("writes outside", ", ".join(outside[:3]))
    return changed


# --- the wheel tool's arguments ------------------------------------------------------------


def _library(ws: Path, kind: str) -> str:
    if kind in ("good", "quote", "no_lib_prefix.so", "broken_dynamic"):
        name = {"quote": 'lib"q.so', "no_lib_prefix.so": "fz.so"}.get(kind, "libfz.so")
        data = SEED_LIBRARY.read_bytes()
        if kind == "broken_dynamic":
            data = _with_section_field(data, 6, 6, 0xFFFF)  # .dynamic's sh_link
        (ws / name).write_bytes(data)
        return str(ws / name)
    if kind == "directory":
        (ws / "libdir.so").mkdir()
        return str(ws / "libdir.so")
    if kind == "dotdot":
        return str(ws / "file") + "/.."
    if kind == "not_elf":
        (ws / "libtext.so").write_text("not an ELF file\n")
        return str(ws / "libtext.so")
    if kind == "empty":
        (ws / "libempty.so").write_bytes(b"")
        return str(ws / "libempty.so")
    if kind == "fifo":
        os.mkfifo(ws / "libfifo.so")
        return str(ws / "libfifo.so")
    return str(ws / "libmissing.so")


def wheel_case(args: dict) -> Verdict:
    """One run of `atengen wheel` with the drawn flags in a fresh workspace."""
    root = tempfile.mkdtemp(prefix="aten-wheel-fuzz-")
    verdict = Verdict()
    try:
        ws = Path(root) / "ws"
        ws.mkdir()
        (ws / "file").write_text("a regular file\n")
        argv = [f"--label={LABEL}", f"--library={_library(ws, args['library'])}"]
        if args["op_yaml"] != "missing":
            (ws / "ops.yaml").write_text(OP_YAMLS[args["op_yaml"]])
        argv += [f"--op_yaml={ws / 'ops.yaml'}", f"--tags_yaml={TAGS}"]
        for flag in ("distribution", "version", "abi", "torch_target", "torch_release", "cuda"):
            argv.append(f"--{flag}={args[flag]}")
        if args["summary"]:
            argv.append(f"--summary={args['summary']}")
        argv += [f"--requires={r}" for r in args["requires"]]
        for i, (name, text, directory) in enumerate(args["py_srcs"]):
            path = ws / "src" / str(i) / directory / name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(text if isinstance(text, bytes) else text.encode())
            argv += [f"--py_src={path}", f"--py_src_label={directory}{name}"]
        out = ws / args["output_dir"]
        if args["output_dir"] == "full":
            out.mkdir()
            (out / "kept.txt").write_text("not the tool's\n")
        argv += [*args["extra"], f"--output_dir={out}"]
        before = _snapshot(root)
        stderr = _run_main(verdict, _command("wheel"), argv)
        if verdict.rc is None:
            return verdict
        after = _snapshot(root)
        # One line per problem: several only for an op YAML with several.
        _judge_lines(verdict, stderr, single=args["op_yaml"] != "two_errors")
        changed = _judge_files(verdict, before, after, [str(out)])
        if verdict.rc == 0:
            _judge_wheel(verdict, out, changed)
        return verdict
    finally:
        _remove_tree(root)


def _judge_wheel(verdict: Verdict, out: Path, changed: list[str]) -> None:
    """A success leaves one new file, a wheel whose Python modules all compile."""
    files = [p for p in changed if not os.path.isdir(p)]
    wheels = [p for p in files if p.endswith(".whl")]
    if len(wheels) != 1 or len(files) != 1:
        verdict.fail("partial output", f"a success left {[os.path.basename(p) for p in files]}")
        return
    with zipfile.ZipFile(wheels[0]) as wheel:
        for name in wheel.namelist():
            if name.endswith((".py", ".pyi")):
                try:
                    compile(wheel.read(name), name, "exec")
                except (SyntaxError, ValueError) as e:
                    verdict.fail("broken wheel", f"{name}: {e}")


# --- mutated ELF files ---------------------------------------------------------------------

_INTERESTING = (0, 1, 2, 3, 6, 8, 0x18, 0x40, 0x7F, 0xFF, 0xFFFF, 0xFFFFFFFF, 2**63, 2**64 - 1)


def _with_section_field(data: bytes, sh_type: int, field: int, value: int) -> bytes:
    """``data`` with field ``field`` (0 name .. 9 entsize) of every section of ``sh_type`` set
    to ``value`` (cut to the field's width)."""
    shoff = struct.unpack_from("<Q", data, 0x28)[0]
    shnum = struct.unpack_from("<H", data, 0x3C)[0]
    fields = struct.Struct("<IIQQQQIIQQ")
    edited = bytearray(data)
    for i in range(shnum):
        at = shoff + i * fields.size
        values = list(fields.unpack_from(data, at))
        if values[1] == sh_type:
            width = 4 if field in (0, 1, 6, 7) else 8
            values[field] = value % (1 << (8 * width))
            fields.pack_into(edited, at, *values)
    return bytes(edited)


def mutate(seed_value: int) -> bytes:
    """A mutation of SEED_LIBRARY drawn from ``seed_value``: section header fields set to
    boundary values, dynamic entries, header fields, flipped bytes, truncation, insertion."""
    rng = random.Random(seed_value)
    data = bytearray(SEED_LIBRARY.read_bytes())
    for _ in range(rng.randint(1, 4)):
        how = rng.randrange(7)
        try:
            if how == 0:  # a field of a section header
                shoff = struct.unpack_from("<Q", data, 0x28)[0]
                shnum = struct.unpack_from("<H", data, 0x3C)[0]
                if shoff + 64 * shnum <= len(data) and shnum:
                    sh_type = struct.unpack_from("<I", data, shoff + 64 * rng.randrange(shnum) + 4)[
                        0
                    ]
                    value = rng.choice(_INTERESTING + (len(data), len(data) - 1, rng.randrange(64)))
                    data = bytearray(
                        _with_section_field(bytes(data), sh_type, rng.randrange(10), value)
                    )
            elif how == 1:  # an 8-byte word (a .dynamic value, an offset) anywhere
                at = rng.randrange(0, len(data) - 8) & ~7
                struct.pack_into("<Q", data, at, rng.choice(_INTERESTING) % 2**64)
            elif how == 2:  # the ELF header's fields
                at = rng.choice([4, 5, 0x10, 0x12, 0x28, 0x3A, 0x3C, 0x3E])
                data[at] = rng.randrange(256)
            elif how == 3:  # random bytes
                for _ in range(rng.randint(1, 8)):
                    data[rng.randrange(len(data))] = rng.randrange(256)
            elif how == 4:  # truncated
                data = data[: rng.randrange(len(data) + 1)]
            elif how == 5:  # bytes inserted (every later offset off)
                at = rng.randrange(len(data) + 1)
                data[at:at] = bytes(rng.randrange(256) for _ in range(rng.randint(1, 16)))
            else:  # a 4-byte word (a name offset, a count, a link) anywhere
                at = rng.randrange(0, max(1, len(data) - 4)) & ~3
                if at + 4 <= len(data):
                    struct.pack_into("<I", data, at, rng.choice(_INTERESTING) % 2**32)
        except (ValueError, IndexError, struct.error):
            pass  # a mutation that does not fit what earlier ones left: the next one
    return bytes(data)


ELF_SEEDS = st.integers(min_value=0, max_value=2**32 - 1)
ELF_ENTRIES = ("wheel", "stable-link-check", "bound-link", "exported_names")


def elf_case(seed_value: int) -> Verdict:
    """One mutated library through every ELF-reading entry point; the problems of all four."""
    data = mutate(seed_value)
    verdict = Verdict()
    for entry in ELF_ENTRIES:
        one = _elf_entry(entry, data)
        verdict.rc = one.rc if verdict.rc in (None, 0) else verdict.rc
        for problem in one.problems:
            kind, _, detail = problem.partition(": ")
            verdict.fail(kind, f"{entry}: {detail}")
    return verdict


def _elf_entry(entry: str, data: bytes) -> Verdict:
    root = tempfile.mkdtemp(prefix="aten-elf-fuzz-")
    verdict = Verdict()
    try:
        ws = Path(root)
        library = ws / "libfz.so"
        library.write_bytes(data)
        output = ws / "out" / "libout.so"
        output.parent.mkdir()
        (ws / "ops.yaml").write_text(OP_YAMLS["custom"])
        (ws / "headers").mkdir()
        before = _snapshot(root)
        single = True
        if entry == "wheel":
            argv = [f"--label={LABEL}", f"--library={library}", f"--op_yaml={ws / 'ops.yaml'}"]
            argv += [f"--tags_yaml={TAGS}", "--distribution=fuzzops", "--version=1.0"]
            argv += ["--abi=stable", "--torch_target=2.11", f"--output_dir={output.parent}"]
            stderr = _run_main(verdict, _command(entry), argv)
        elif entry == "stable-link-check":
            single = False  # one line per offending symbol group
            # With a header directory: the kernel check reads .symtab as well (it declares no
            # kernel, so none can be missing).
            argv = [f"--kernel_headers={ws / 'headers'}", f"--label={LABEL}", f"--linked={library}"]
            argv.append(f"--output={output}")
            stderr = _run_main(verdict, _command(entry), argv)
        elif entry == "bound-link":
            # With a header directory: the missing-kernel check reads the library's defined
            # symbols too (the directory declares no kernel, so none can be missing).
            argv = [f"--kernel_headers={ws / 'headers'}", f"--label={LABEL}", f"--linked={library}"]
            argv += [f"--output={output}", f"--torch_library={SEED_LIBRARY}"]
            stderr = _run_main(verdict, _command(entry), argv)
        else:

            def probe(argv: list[str]) -> int:
                try:
                    exported_names(argv[0])
                except ValueError as e:
                    print(f"rules_aten: {e}", file=__import__("sys").stderr)
                    return 1
                return 0

            stderr = _run_main(verdict, probe, [str(library)])
        if verdict.rc is None:
            return verdict
        _judge_lines(verdict, stderr, single=single)
        _judge_files(verdict, before, _snapshot(root), [str(output.parent)])
        return verdict
    finally:
        shutil.rmtree(root, ignore_errors=True)
