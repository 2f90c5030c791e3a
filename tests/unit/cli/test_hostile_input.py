"""Hostile input: every command fails with one ``file:line: error:`` line, exit 1, nothing written.

One test per defect a review found: tracebacks in `generate` after `check` passed,
YAML that exhausted time or memory, writes outside the output directories, partial
output after a disk error, inputs torch or torchgen reject that were accepted, and
messages that misled.
"""

from __future__ import annotations

import os
import re

import pytest

from atengen.errors import AtengenError
from atengen.render import output
from atengen.render.output import GeneratedFile, write_outputs
from tests.support.model_helpers import TAGS_YAML, run_cli

LINE_RE = re.compile(r"^(?P<path>[^:]+):(?P<line>\d+): error: (?P<msg>.+)$")
ENTRY = "- func: {schema}\n  dispatch:\n    CPU: k\n"

# name: (op YAML, line, message fragment). `check` may pass; `generate` must not crash.
BAD_OP_YAMLS = {
    "tag_int_scalar": (ENTRY.format(schema="f(Tensor self) -> Tensor") + "  variants: !!int x\n",
                       4, "YAML tags (!!int)"),
    "tag_binary": (ENTRY.format(schema="f(Tensor self) -> Tensor") + "  variants: !!binary aGk=\n",
                   4, "YAML tags (!!binary)"),
    "tag_unknown": (ENTRY.format(schema="f(Tensor self) -> Tensor") + "  variants: !foo x\n",
                    4, "YAML tags (!foo)"),
    "tag_on_list": (ENTRY.format(schema="f(Tensor self) -> Tensor") + "  tags: !foo [core]\n",
                    4, "YAML tags (!foo)"),
    "tag_on_mapping": ("- func: f(Tensor self) -> Tensor\n  dispatch: !!omap {CPU: k}\n",
                       2, "YAML tags (!!omap)"),
    "inverse_view": (ENTRY.format(schema="my_inverse(Tensor(a) self) -> Tensor(a)"),
                     1, "define 'my_scatter' (tagged view_copy)"),
    "return_optional_scalar": (ENTRY.format(schema="g(Tensor self) -> Scalar?"),
                               1, "return type 'Scalar?' has no C++ return type"),
    "return_optional_list": (ENTRY.format(schema="g(Tensor self) -> int[]?"),
                             1, "return type 'int[]?' has no C++ return type"),
    "return_optional_sized_list": (ENTRY.format(schema="g(Tensor self) -> int[1]?"),
                                   1, "return type 'int[1]?' has no C++ return type"),
    "return_sized_symint_list": (ENTRY.format(schema="g(Tensor self) -> SymInt[3]"),
                                 1, "return type 'SymInt[3]' has no C++ return type"),
    "return_sized_dimname_list": (ENTRY.format(schema="g(Tensor self) -> Dimname[1]"),
                                  1, "return type 'Dimname[1]' has no C++ return type"),
    # torch 2.11 and 2.12's own ops use Dimname; later releases' schema parser rejects it
    "dimname_argument": (ENTRY.format(schema="g(Tensor self, Dimname d) -> Tensor"),
                         1, "uses type 'Dimname', which only the schema parser of torch 2.11 "
                         "and 2.12 knows; without --torch_facts"),
    "recursive_alias": ("- &a [*a]\n", 1, "recursive YAML alias *a"),
    "alias_bomb": ('- &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]\n' + "".join(
        f"- &{c} [{','.join(['*' + p] * 9)}]\n" for p, c in zip("abcdef", "bcdefg", strict=True)
    ), 6, "YAML aliases expand to more than 100000 nodes"),
    "deep_flow": ("[" * 100_000 + "]" * 100_000 + "\n", 1, "nested more than 100 levels"),
    "deep_block": ("".join(f"{' ' * i}k{i}:\n" for i in range(5000)), 101,
                   "nested more than 100 levels"),
    "python_keyword_argument": (ENTRY.format(schema="f(Tensor self, int from) -> Tensor"),
                                1, "argument name 'from' in 'f' is a reserved Python keyword"),
    "inplace_view_without_view": (
        ENTRY.format(schema="f_(Tensor(a!) self) -> Tensor(a!)") + "  tags: inplace_view\n",
        1, "needs its out-of-place view op 'f'"),
    "mutable_without_tensor_return": (ENTRY.format(schema="f(Tensor(a!) x) -> ()"),
                                      1, "mutable op 'f' returns no tensors"),
    "default_does_not_parse": (ENTRY.format(schema="f(Tensor self, bool flag=Fp=False) -> Tensor"),
                               1, "default value 'Fp=False' is not True or False"),
    "positional_after_default": (ENTRY.format(schema="f(Tensor self, int a=1, int b) -> Tensor"),
                                 1, "positional argument 'b' has no default but follows 'a'"),
    "non_ascii_default": (ENTRY.format(schema='f(Tensor self, str a="\u00e9") -> Tensor'),
                          1, "is not a quoted ASCII string"),
}  # fmt: skip


def _assert_one_error(r, path: str, line: int, fragment: str) -> None:
    assert r.returncode == 1, (r.returncode, r.stderr)
    assert "Traceback" not in r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1, r.stderr
    m = LINE_RE.match(lines[0])
    assert m, lines[0]
    assert (m["path"], int(m["line"])) == (path, line), lines[0]
    assert fragment in m["msg"], (fragment, m["msg"])


def _outputs(tmp_path) -> list[str]:
    return [f"--output_dir={tmp_path / 'out'}", f"--header_output_dir={tmp_path / 'headers'}"]


def _tree(root) -> dict[str, str]:
    """Every file under ``root`` with its text (the whole scratch area of a test)."""
    found = {}
    for d, _, files in os.walk(root):
        for name in files:
            p = os.path.join(d, name)
            found[os.path.relpath(p, root)] = open(p, encoding="utf-8", errors="replace").read()
    return found


@pytest.mark.parametrize("case", sorted(BAD_OP_YAMLS))
def test_generate_rejects_with_one_line_and_writes_nothing(tmp_path, case):
    text, line, fragment = BAD_OP_YAMLS[case]
    op = tmp_path / "ops.yaml"
    op.write_text(text)
    (tmp_path / "tags.yaml").write_text(TAGS_YAML)
    before = _tree(tmp_path)
    r = run_cli("generate", f"--op_yaml={op}", *_outputs(tmp_path))
    _assert_one_error(r, str(op), line, fragment)
    assert _tree(tmp_path) == before
    assert sorted(os.listdir(tmp_path)) == ["ops.yaml", "tags.yaml"]


def test_binary_ops_file(tmp_path):
    op = tmp_path / "ops.yaml"
    op.write_text(ENTRY.format(schema="f(Tensor self) -> Tensor"))
    (tmp_path / "tags.yaml").write_text(TAGS_YAML)
    ops = tmp_path / "ops.bin"
    ops.write_bytes(bytes(range(256)))
    r = run_cli("generate", f"--op_yaml={op}", f"--ops_file={ops}", *_outputs(tmp_path))
    _assert_one_error(r, str(ops), 2, "not UTF-8")  # byte 0x80 follows the 0x0a newline
    assert not (tmp_path / "out").exists()


# --- backend ----------------------------------------------------------------------------------

HEAD = "cpp_namespace: my_backend\n"


def _backend(tmp_path, text: str, *flags: str):
    y = tmp_path / "backend.yaml"
    y.write_text(text)
    return str(y), run_cli("backend", f"--backend_yaml={y}", *flags)


@pytest.mark.parametrize("key", ["CPU", "CUDA", "Meta"])
def test_backend_key_with_in_tree_kernels_is_a_duplicate(tmp_path, key):
    y, r = _backend(
        tmp_path, f"backend: {key}\n{HEAD}supported:\n- abs\n", f"--output_dir={tmp_path}/o"
    )
    _assert_one_error(r, y, 1, f"Duplicate backend key: {key}")
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize(
    "name", ["../../x", "a/b", "my backend", "x y", "caf\u00e9", ".hidden", "1abc"]
)
def test_backend_name_must_be_a_key_name(tmp_path, name):
    # With nothing under "supported", the name is not checked as a dispatch key, but it
    # still names the header file.
    work = tmp_path / "a" / "b"
    work.mkdir(parents=True)
    y, r = _backend(work, f'backend: "{name}"\n{HEAD}', f"--output_dir={work}/o")
    _assert_one_error(r, y, 1, '"backend" must be a dispatch key name')
    assert _tree(tmp_path) == {"a/b/backend.yaml": f'backend: "{name}"\n{HEAD}'}


@pytest.mark.parametrize("prefix", ["../..", "/abs", "a/../../b", "a b", "./x"])
def test_include_prefix_must_stay_inside(tmp_path, prefix):
    work = tmp_path / "a" / "b"
    work.mkdir(parents=True)
    y, r = _backend(
        work,
        f"backend: PrivateUse1\n{HEAD}",
        f"--output_dir={work}/o",
        f"--include_prefix={prefix}",
    )
    assert r.returncode == 1 and "Traceback" not in r.stderr
    assert r.stderr.strip().splitlines() == [
        f"error: --include_prefix must be a relative path of plain names like 'my/backend', "
        f"got '{prefix}'"
    ]
    assert sorted(_tree(tmp_path)) == ["a/b/backend.yaml"]


@pytest.mark.parametrize("key, value", [("class_name", "../x"), ("cpp_namespace", "a/b")])
def test_names_that_reach_paths_or_code_are_checked(tmp_path, key, value):
    other = "" if key == "cpp_namespace" else "cpp_namespace: ns\n"
    text = f'backend: PrivateUse1\n{other}{key}: "{value}"\n'
    y, r = _backend(tmp_path, text, f"--output_dir={tmp_path}/o")
    line = text.splitlines().index(f'{key}: "{value}"') + 1
    _assert_one_error(r, y, line, key)
    assert not (tmp_path / "o").exists()


def test_op_listed_twice_is_a_warning(tmp_path):
    y, r = _backend(
        tmp_path,
        # The copy ops too: the generated abs.out/abs_ wrappers call them (else a warning).
        f"backend: PrivateUse1\n{HEAD}supported:\n- abs\n- neg\n- abs\n- _copy_from\n"
        "- _copy_from_and_resize\n",
        f"--output_dir={tmp_path}/o",
    )
    assert r.returncode == 0, r.stderr
    assert r.stderr.strip().splitlines() == [
        f"{y}:6: warning: operator 'abs' is listed twice under \"supported\" (first on line 4); "
        "the repeat is ignored"
    ]
    assert sorted(os.listdir(tmp_path / "o")) == [
        "PrivateUse1NativeFunctions.h",
        "RegisterPrivateUse1__copy_from.cpp",
        "RegisterPrivateUse1__copy_from_and_resize.cpp",
        "RegisterPrivateUse1_abs.cpp",
        "RegisterPrivateUse1_neg.cpp",
    ]


# --- disk errors: all or nothing --------------------------------------------------------------


def _custom_op_yaml(tmp_path) -> str:
    op = tmp_path / "ops.yaml"
    op.write_text(ENTRY.format(schema="myops::f(Tensor self) -> Tensor"))
    (tmp_path / "tags.yaml").write_text(TAGS_YAML)
    return str(op)


def test_unwritable_header_dir_leaves_other_outputs_as_they_were(tmp_path):
    op = _custom_op_yaml(tmp_path)
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "old.cpp").write_text("old")
    (tmp_path / "plain_file").write_text(
        "x"
    )  # a directory below a file cannot be made, even by root
    before = _tree(tmp_path)
    r = run_cli(
        "generate",
        f"--op_yaml={op}",
        f"--output_dir={tmp_path / 'out'}",
        f"--header_output_dir={tmp_path / 'plain_file' / 'sub'}",
    )
    assert r.returncode == 1 and "Traceback" not in r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: cannot write "), r.stderr
    assert _tree(tmp_path) == before
    assert sorted(os.listdir(tmp_path)) == ["ops.yaml", "out", "plain_file", "tags.yaml"]


def test_unwritable_stamp_leaves_no_backend_sources(tmp_path):
    (tmp_path / "plain_file").write_text("x")
    y, r = _backend(
        tmp_path,
        f"backend: PrivateUse1\n{HEAD}supported:\n- abs\n- _copy_from\n- _copy_from_and_resize\n",
        f"--output_dir={tmp_path}/o",
        f"--check_stamp={tmp_path}/plain_file/stamp",
    )
    assert r.returncode == 1 and "Traceback" not in r.stderr
    assert r.stderr.strip().splitlines()[0].startswith("error: cannot write ")
    assert len(r.stderr.strip().splitlines()) == 1
    assert sorted(os.listdir(tmp_path)) == ["backend.yaml", "plain_file"]


def test_a_file_too_large_for_the_disk_names_the_file(tmp_path):
    """A write the file system refuses (here RLIMIT_FSIZE: `File too large`, what a full quota
    gives) carries no file name of its own: the error names the output file, and nothing is
    left."""
    import resource
    import subprocess
    import sys

    from tests.support.model_helpers import REPO

    op = _custom_op_yaml(tmp_path)
    out, inc = tmp_path / "out", tmp_path / "inc"

    def limit_file_size():  # in the child: 100 bytes, less than any generated source
        resource.setrlimit(resource.RLIMIT_FSIZE, (100, 100))

    r = subprocess.run(
        [
            *(sys.executable, "-m", "atengen", "generate", f"--op_yaml={op}"),
            *(f"--output_dir={out}", f"--header_output_dir={inc}"),
        ],
        capture_output=True,
        text=True,
        env=dict(os.environ, PYTHONPATH=os.path.join(REPO, "tool"), PYTHONDONTWRITEBYTECODE="1"),
        preexec_fn=limit_file_size,
        check=False,
    )
    assert r.returncode == 1, r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1, r.stderr
    m = re.fullmatch(r"error: cannot write (\S+): File too large", lines[0])
    assert m, lines[0]
    assert os.path.dirname(m[1]) in (str(out), str(inc)), lines[0]
    assert m[1].endswith((".cpp", ".h")), lines[0]
    assert sorted(os.listdir(tmp_path)) == ["ops.yaml", "tags.yaml"]


def _scratch(tmp_path) -> tuple[list, list]:
    # What an earlier run wrote (atengen replaces only directories of files it wrote).
    for d, text in (
        ("a", "// @generated by atengen: old a"),
        ("b", "// @generated by atengen: old b"),
    ):
        (tmp_path / d).mkdir()
        (tmp_path / d / "old.txt").write_text(text)
    (tmp_path / "stamp").write_text("// @generated by atengen: old stamp")
    trees = [
        (str(tmp_path / "a"), [GeneratedFile("new.txt", "new a")]),
        (str(tmp_path / "b"), [GeneratedFile("sub/new.txt", "new b")]),
        (str(tmp_path / "c"), [GeneratedFile("new.txt", "new c")]),
    ]
    return trees, [(str(tmp_path / "stamp"), "new stamp")]


@pytest.mark.parametrize("fail_at", range(1, 9))
def test_failed_rename_restores_everything(tmp_path, monkeypatch, fail_at):
    """Whichever rename of the commit fails, the directories look as before and no
    temporary file is left behind."""
    trees, stamps = _scratch(tmp_path)
    before = _tree(tmp_path)
    real_rename = os.rename
    calls = []

    def failing_rename(src, dst):
        calls.append(src)
        if len(calls) == fail_at:
            raise OSError(28, "No space left on device", dst)
        real_rename(src, dst)

    monkeypatch.setattr(output.os, "rename", failing_rename)
    if fail_at > 7:  # 3 trees + 1 stamp: 7 renames (c is new); the 8th never happens
        write_outputs(trees, stamps)
        monkeypatch.undo()
        assert _tree(tmp_path) == {
            "a/new.txt": "new a",
            "b/sub/new.txt": "new b",
            "c/new.txt": "new c",
            "stamp": "new stamp",
        }
        return
    with pytest.raises(AtengenError) as info:
        write_outputs(trees, stamps)
    monkeypatch.undo()
    # The output whose rename failed, not the temporary name it was staged under.
    final = {1: "a", 2: "a", 3: "b", 4: "b", 5: "c", 6: "stamp", 7: "stamp"}[fail_at]
    assert info.value.format_all() == (
        f"error: cannot write {tmp_path / final}: No space left on device"
    )
    assert _tree(tmp_path) == before
    assert sorted(os.listdir(tmp_path)) == ["a", "b", "stamp"]


def test_failed_staging_writes_nothing(tmp_path, monkeypatch):
    trees, stamps = _scratch(tmp_path)
    before = _tree(tmp_path)
    real_mkdtemp = output.tempfile.mkdtemp
    made = []

    def failing_mkdtemp(**kwargs):
        if made:
            raise OSError(13, "Permission denied", kwargs.get("dir"))
        made.append(real_mkdtemp(**kwargs))
        return made[-1]

    monkeypatch.setattr(output.tempfile, "mkdtemp", failing_mkdtemp)
    with pytest.raises(AtengenError, match="cannot write .*: Permission denied"):
        write_outputs(trees, stamps)
    assert _tree(tmp_path) == before
    assert sorted(os.listdir(tmp_path)) == ["a", "b", "stamp"]


@pytest.mark.parametrize("path", ["../x.cpp", "../../x.cpp", "/tmp/x.cpp", "a/../../x.cpp"])
def test_writer_refuses_paths_outside_their_directory(tmp_path, path):
    out = tmp_path / "deep" / "out"
    with pytest.raises(AtengenError, match="would be written outside its output directory"):
        write_outputs([(str(out), [GeneratedFile("ok.cpp", ""), GeneratedFile(path, "")])])
    assert list(tmp_path.iterdir()) == []


def test_writer_refuses_a_symlink_out_of_the_directory(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    (out / "link").symlink_to(tmp_path)
    with pytest.raises(AtengenError, match="outside its output directory"):
        write_outputs([(str(out), [GeneratedFile("link/../../escape.cpp", "")])])
    assert sorted(os.listdir(tmp_path)) == ["out"]


@pytest.mark.parametrize("output_dir", [".", "..", "src/.."])
def test_generate_refuses_an_output_directory_that_holds_the_current_one(
    tmp_path, monkeypatch, output_dir
):
    # Output directories are replaced whole: by hand, `--output_dir=.` would delete the YAML.
    work = tmp_path / "src"
    work.mkdir()
    (work / "ops.yaml").write_text(
        "- func: myops::f(Tensor self) -> Tensor\n  dispatch:\n    CPU: f_cpu\n"
    )
    monkeypatch.chdir(work)
    before = _tree(tmp_path)
    r = run_cli(
        "generate", "--op_yaml=ops.yaml", f"--output_dir={output_dir}", "--header_output_dir=inc"
    )
    assert r.returncode == 1, r.stderr
    lines = r.stderr.splitlines()
    # It holds the op YAML too, which is named first.
    assert len(lines) == 1 and "holds the input ops.yaml (--op_yaml)" in lines[0], r.stderr
    assert _tree(tmp_path) == before
