"""Outputs never cost a user a file: no output path may replace an input, the current directory,
another output or a directory atengen did not write; output is all-or-nothing when several
processes write one directory; files and directories get the modes the umask asks for.

Each test names what went wrong before: inputs deleted by an output directory that held them,
a stamp that replaced the sources, two writers that left no output directory at all, and
directories made 0700 whatever the umask.
"""

from __future__ import annotations

import os
import stat
import subprocess
import sys

import pytest

from tests.support.model_helpers import REPO, TAGS_YAML, run_cli, tree

OPS = """\
- func: myops::scale(Tensor self, float factor) -> Tensor
  dispatch:
    CPU: scale_cpu
- func: myops::shift(Tensor self, float by) -> Tensor
  dispatch:
    CPU: shift_cpu
"""
BACKEND = "backend: PrivateUse1\ncpp_namespace: dev\nsupported:\n- abs\n- _copy_from\n- _copy_from_and_resize\n"


@pytest.fixture
def inputs(tmp_path):
    """tmp_path/in holding ops.yaml, tags.yaml and backend.yaml; cwd is tmp_path/work."""
    d = tmp_path / "in"
    d.mkdir()
    (d / "ops.yaml").write_text(OPS)
    (d / "tags.yaml").write_text(TAGS_YAML)
    (d / "backend.yaml").write_text(BACKEND)
    work = tmp_path / "work"
    work.mkdir()
    old = os.getcwd()
    os.chdir(work)
    yield d
    os.chdir(old)


def _generate(inputs, out, *extra):
    if not any(x.startswith("--header_output_dir=") for x in extra):
        extra = (*extra, f"--header_output_dir={out}_inc")
    return run_cli(
        "generate",
        f"--op_yaml={inputs / 'ops.yaml'}",
        f"--tags_yaml={inputs / 'tags.yaml'}",
        f"--output_dir={out}",
        *extra,
    )


def _one_error(proc, *fragments):
    assert proc.returncode == 1, proc
    lines = proc.stderr.splitlines()
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith("error: "), lines
    for fragment in fragments:
        assert fragment in lines[0], lines[0]


def _everything(root) -> dict[str, str]:
    """Every path under root with its bytes' hash (files), 'dir' or the link target."""
    out = {}
    for d, dirs, files in os.walk(root):
        for name in dirs + files:
            p = os.path.join(d, name)
            if os.path.islink(p):
                out[p] = "-> " + os.readlink(p)
            elif os.path.isdir(p):
                out[p] = "dir"
            else:
                with open(p, "rb") as f:
                    out[p] = f.read()
    return out


@pytest.mark.parametrize("where", ["inputs", "ancestor", "symlink", "input_file"])
def test_an_output_directory_over_the_inputs_is_refused(tmp_path, inputs, where):
    if where == "symlink":
        os.symlink(inputs, tmp_path / "link")
    out = {
        "inputs": inputs,
        "ancestor": tmp_path,
        "symlink": tmp_path / "link",
        "input_file": inputs / "ops.yaml",
    }[where]
    before = _everything(tmp_path)
    proc = _generate(inputs, out)
    _one_error(proc, "input", "ops.yaml" if where != "ancestor" else "in/")
    assert _everything(tmp_path) == before


def test_a_backend_output_directory_over_its_yaml_is_refused(tmp_path, inputs):
    before = _everything(tmp_path)
    proc = run_cli(
        "backend",
        f"--backend_yaml={inputs / 'backend.yaml'}",
        f"--output_dir={inputs}",
    )
    _one_error(proc, "--backend_yaml", "backend.yaml")
    assert _everything(tmp_path) == before


def test_every_input_flag_is_protected(tmp_path, inputs):
    """--ops_file, --torch_facts and the header output of generate, and backend's --impl_path,
    --derivatives_yaml and --shape_inference_file."""
    side = tmp_path / "side"
    side.mkdir()
    (side / "ops.txt").write_text("myops::scale\n")
    before = _everything(tmp_path)
    _one_error(
        _generate(inputs, tmp_path / "out", f"--ops_file={side / 'ops.txt'}",
                  f"--header_output_dir={side}"),
        "--ops_file",
    )  # fmt: skip
    (side / "k.cpp").write_text(
        "".join(
            f"at::Tensor PrivateUse1NativeFunctions::{name}(...) {{}}\n"
            for name in ("abs", "_copy_from", "_copy_from_and_resize")
        )
    )
    before = _everything(tmp_path)
    proc = run_cli(
        "backend",
        f"--backend_yaml={inputs / 'backend.yaml'}",
        f"--output_dir={tmp_path / 'out'}",
        f"--impl_path={side / 'k.cpp'}",
        f"--header_output_dir={side}",
    )
    _one_error(proc, "--impl_path", "k.cpp")
    assert _everything(tmp_path) == before


def test_a_directory_atengen_did_not_write_is_not_replaced(tmp_path, inputs):
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "notes.txt").write_text("a user's file\n")
    before = _everything(tmp_path)
    _one_error(_generate(inputs, mine), "notes.txt", "did not write")
    assert _everything(tmp_path) == before


def test_an_output_directory_can_be_written_again_and_an_empty_one_is_taken(tmp_path, inputs):
    out = tmp_path / "out"
    out.mkdir()
    assert _generate(inputs, out).returncode == 0
    first = tree(out)
    assert first
    (inputs / "ops.yaml").write_text(OPS.split("- func: myops::shift")[0])
    assert _generate(inputs, out).returncode == 0
    second = tree(out)
    assert second and second != first
    assert not [p for p in second if "shift" in p]  # nothing stale from the first run


def test_a_file_added_to_an_output_directory_stops_the_next_run(tmp_path, inputs):
    out = tmp_path / "out"
    assert _generate(inputs, out).returncode == 0
    (out / "my_kernel.cpp").write_text("// hand-written, in the wrong place\n")
    before = _everything(tmp_path)
    _one_error(_generate(inputs, out), "my_kernel.cpp")
    assert _everything(tmp_path) == before


def test_a_file_at_the_output_directory_path_is_refused(tmp_path, inputs):
    out = tmp_path / "out"
    out.write_text("a user's file\n")
    before = _everything(tmp_path)
    _one_error(_generate(inputs, out), f"cannot write {out}", "not a directory")
    assert _everything(tmp_path) == before


def test_a_file_put_at_the_output_path_while_staging_is_refused_under_the_lock(
    tmp_path, monkeypatch
):
    """Another process may put something at the path after the early check: the check under the
    lock refuses it, and neither that file nor a staged directory is lost or left."""
    from atengen.errors import AtengenError
    from atengen.render import output

    out = tmp_path / "out"
    real_locked = output._Transaction.locked

    def locked_after_a_file_appears(self):
        out.write_text("written meanwhile\n")
        return real_locked(self)

    monkeypatch.setattr(output._Transaction, "locked", locked_after_a_file_appears)
    files = [output.GeneratedFile("a.cpp", "// @generated by atengen\n")]
    with pytest.raises(AtengenError, match="not a directory"):
        output.write_outputs([(str(out), files)])
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]
    assert out.read_text() == "written meanwhile\n"


def test_outputs_that_nest_or_repeat_are_refused(tmp_path, inputs):
    before = _everything(tmp_path)
    _one_error(
        _generate(inputs, tmp_path / "out", f"--header_output_dir={tmp_path / 'out' / 'inc'}"),
        "inside",
    )
    assert _everything(tmp_path) == before


@pytest.mark.parametrize("stamp", ["same", "inside", "input", "ancestor"])
def test_a_check_stamp_that_overlaps_is_refused(tmp_path, inputs, stamp):
    out = tmp_path / "out"
    path = {
        "same": out,
        "inside": out / "stamp",
        "input": inputs / "backend.yaml",
        "ancestor": tmp_path,
    }[stamp]
    before = _everything(tmp_path)
    proc = run_cli(
        "backend",
        f"--backend_yaml={inputs / 'backend.yaml'}",
        f"--output_dir={out}",
        f"--check_stamp={path}",
    )
    _one_error(proc, "--check_stamp")
    assert _everything(tmp_path) == before


def test_a_check_stamp_over_a_file_atengen_did_not_write_is_refused(tmp_path, inputs):
    (tmp_path / "notes.txt").write_text("a user's file, not an input\n")
    before = _everything(tmp_path)
    proc = run_cli(
        "backend",
        f"--backend_yaml={inputs / 'backend.yaml'}",
        f"--output_dir={tmp_path / 'out'}",
        f"--check_stamp={tmp_path / 'notes.txt'}",
    )
    _one_error(proc, "--check_stamp", "notes.txt", "did not write")
    assert _everything(tmp_path) == before


def test_a_check_stamp_beside_the_output_is_written(tmp_path, inputs):
    proc = run_cli(
        "backend",
        f"--backend_yaml={inputs / 'backend.yaml'}",
        f"--output_dir={tmp_path / 'out'}",
        f"--check_stamp={tmp_path / 'stamp'}",
    )
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "stamp").is_file() and tree(tmp_path / "out")
    again = run_cli(*proc.args[1:])  # its own stamp and sources are replaced
    assert again.returncode == 0, again.stderr


def _modes(root) -> dict[str, int]:
    return {
        os.path.relpath(os.path.join(d, n), root): stat.S_IMODE(os.stat(os.path.join(d, n)).st_mode)
        for d, dirs, files in os.walk(root)
        for n in dirs + files
    }


@pytest.mark.parametrize("umask", [0o022, 0o077, 0o002])
def test_modes_follow_the_umask(tmp_path, inputs, umask):
    old = os.umask(umask)
    try:
        proc = run_cli(
            "backend",
            f"--backend_yaml={inputs / 'backend.yaml'}",
            f"--output_dir={tmp_path / 'gen' / 'out'}",
            f"--check_stamp={tmp_path / 'gen' / 'stamp'}",
        )
    finally:
        os.umask(old)
    assert proc.returncode == 0, proc.stderr
    modes = _modes(tmp_path / "gen")
    assert modes["out"] == 0o777 & ~umask
    assert modes["stamp"] == 0o666 & ~umask
    files = {p: m for p, m in modes.items() if os.path.isfile(tmp_path / "gen" / p)}
    dirs = {p: m for p, m in modes.items() if p not in files}
    assert set(files.values()) == {0o666 & ~umask}, files
    assert set(dirs.values()) == {0o777 & ~umask}, dirs


def test_an_existing_output_directory_keeps_its_mode(tmp_path, inputs):
    out = tmp_path / "out"
    out.mkdir()
    os.chmod(out, 0o750)
    assert _generate(inputs, out).returncode == 0
    assert stat.S_IMODE(os.stat(out).st_mode) == 0o750
    assert _generate(inputs, out).returncode == 0
    assert stat.S_IMODE(os.stat(out).st_mode) == 0o750


@pytest.mark.slow
def test_concurrent_writers_leave_one_complete_run(tmp_path):
    """4 processes write one output directory, each its own selection, 25 rounds (the fuzzing
    campaign runs 1,000: tests/fuzz/campaign.py --entry concurrency)."""
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "tests.fuzz.concurrency",
            "--rounds=25",
            "--writers=4",
            str(tmp_path),
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        env=dict(os.environ, PYTHONPATH=os.pathsep.join([os.path.join(REPO, "tool"), REPO])),
        check=False,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "rounds 25, complete 25, broken 0, failed writers 0" in proc.stdout, proc.stdout


def _snapshot_cases():
    sys.path.insert(0, os.path.join(REPO, "conformance"))
    try:
        import output_snapshot
    finally:
        sys.path.pop(0)
    return output_snapshot.cases()


SNAPSHOT_CASES = _snapshot_cases()
# The cases that must fail (each with one error line per problem, and nothing written); every
# other case must succeed, so that a case which starts failing is caught here and not taken for
# one of these. xla_shaped.yaml lists views and ops returning no Tensor under full_codegen,
# which a lazy-tensor backend (--allow_lazy) refuses; openreg_native_functions.yaml has torch main's
# per-operator options, which no release reads.
FAILING_CASES = {"backend_xla_shaped", "backend_openreg_native_functions"}


def test_the_failing_cases_are_snapshot_cases():
    assert FAILING_CASES <= set(SNAPSHOT_CASES), sorted(FAILING_CASES - set(SNAPSHOT_CASES))


@pytest.mark.parametrize(
    "case",
    [
        pytest.param(name, marks=pytest.mark.slow) if "_all_" in name or "_aten" in name else name
        for name in sorted(SNAPSHOT_CASES)
    ],
)
def test_every_generated_file_carries_the_header_that_marks_it(tmp_path, case):
    """An output directory is replaced only when each file in it starts with one of
    GENERATED_HEADERS: every product's every file must, or its second run would be refused."""
    from atengen.render.output import GENERATED_HEADERS

    out = tmp_path / "out"
    args = [a.replace("{out}", str(out)) for a in SNAPSHOT_CASES[case]]
    proc = run_cli(*args)
    files = [p for p in out.rglob("*") if p.is_file()] if out.exists() else []
    if case in FAILING_CASES:
        assert proc.returncode == 1, proc.stderr
        assert proc.stderr and all(": error: " in line for line in proc.stderr.splitlines())
        assert files == []  # a case that fails writes nothing
        return
    assert proc.returncode == 0, proc.stderr
    if not any(a.startswith("--output_dir") for a in args):
        assert files == [], proc.stderr  # a case that only checks writes nothing
        return
    assert files, proc.stderr
    unmarked = [
        str(p.relative_to(out)) for p in files if not p.read_bytes().startswith(GENERATED_HEADERS)
    ]
    assert unmarked == []
    again = run_cli(*args)  # the same outputs again: the directories are taken back
    assert again.returncode == 0, again.stderr
