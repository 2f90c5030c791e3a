"""The CLI on bad input: one line per error with file:line, non-zero exit, no traceback."""

from __future__ import annotations

import re

import pytest

from tests.support.model_helpers import TAGS_YAML, run_cli, run_cli_process

GOOD_ENTRY = "- func: f(Tensor self) -> Tensor\n  dispatch:\n    CPU: f\n"

BAD_OP_YAMLS = {
    "malformed": (b"- func: f(Tensor self) -> Tensor\n  dispatch: [CPU: f\n", 3, "invalid YAML"),
    "tabs": (b"- func: f(Tensor self) -> Tensor\n\tdispatch:\n", 2, "tab character"),
    "duplicate_key": (
        b"- func: f(Tensor self) -> Tensor\n  variants: function\n  variants: method\n",
        3,
        "duplicate key 'variants' (first defined on line 2)",
    ),
    "unknown_key": (
        b"- func: f(Tensor self) -> Tensor\n  colour: red\n",
        2,
        "unknown key 'colour'",
    ),
    "bad_schema": (b"- func: f(Tensor self -> Tensor\n", 1, "bad schema"),
    "unknown_dispatch_key": (
        b"- func: f(Tensor self) -> Tensor\n  dispatch:\n    GPU: f\n",
        3,
        "dispatch key 'GPU' is unknown",
    ),
    "unknown_tag": (
        b"- func: f(Tensor self) -> Tensor\n  tags: [shiny]\n",
        2,
        "unknown tag 'shiny'",
    ),
    "empty": (b"", 1, "empty YAML file"),
    "only_comments": (b"# nothing here\n", 1, "empty YAML file"),
    # byte 0x80 (the first non-UTF-8 byte) comes after the 0x0a newline: line 2
    "binary": (bytes(range(256)) * 4, 2, "not UTF-8 text"),
    "nul_bytes": (b"- func: f(Tensor self) -> Tensor\n\x00\x01\n", 2, "NUL byte"),
    "not_a_list": (b"func: f(Tensor self) -> Tensor\n", 1, "must be a list"),
    "scalar_document": (b"42\n", 1, "must be a list"),
    "two_documents": (GOOD_ENTRY.encode() + b"---\n" + GOOD_ENTRY.encode(), 4, "invalid YAML"),
}

LINE_RE = re.compile(r"^(?P<path>[^:]+):(?P<line>\d+): error: (?P<msg>.+)$")


@pytest.mark.parametrize("command", ["check", "dump"])
@pytest.mark.parametrize("case", sorted(BAD_OP_YAMLS))
def test_bad_op_yaml(tmp_path, case, command):
    data, line, message = BAD_OP_YAMLS[case]
    op = tmp_path / "ops.yaml"
    op.write_bytes(data)
    (tmp_path / "tags.yaml").write_text(TAGS_YAML)
    r = run_cli(command, f"--op_yaml={op}")
    assert r.returncode == 1, r.stderr
    assert r.stdout == ""  # nothing partial on stdout
    assert "Traceback" not in r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1, r.stderr
    m = LINE_RE.match(lines[0])
    assert m, lines[0]
    assert (m["path"], int(m["line"])) == (str(op), line)
    assert message in m["msg"]


@pytest.mark.parametrize(
    "tags, line, message",
    [
        ("- tag: a\n", 1, "needs a non-empty 'desc'"),
        ("- tag: a\n  desc: x\n- tag: a\n  desc: y\n", 3, "tag 'a' is defined twice"),
        ("tag: a\n", 1, "must be a list"),
        ("- tag: a\n  desc: x\n  color: red\n", 1, "unknown key(s) in tag entry: color"),
    ],
)
def test_bad_tags_yaml(tmp_path, tags, line, message):
    op = tmp_path / "ops.yaml"
    op.write_text(GOOD_ENTRY)
    (tmp_path / "tags.yaml").write_text(tags)
    r = run_cli("check", f"--op_yaml={op}")
    assert r.returncode == 1
    assert (
        r.stderr.strip()
        == f"{tmp_path}/tags.yaml:{line}: error: " + r.stderr.split("error: ", 1)[1].strip()
    )
    assert message in r.stderr


def test_missing_file(tmp_path):
    r = run_cli("check", f"--op_yaml={tmp_path}/nope.yaml", f"--tags_yaml={tmp_path}/t.yaml")
    assert r.returncode == 1
    assert "Traceback" not in r.stderr
    assert r.stderr.startswith(f"{tmp_path}/t.yaml:1: error: cannot read file")


def test_unknown_command_is_one_line_with_the_commands():
    r = run_cli("explode")
    assert r.returncode == 2
    assert r.stderr == (
        "atengen: error: argument {check,dump,generate,backend,lazy,autograd,stable,"
        "compile-kernel,stable-link-check,bound-link,wheel}: invalid choice: 'explode' "
        "(choose from 'check', 'dump', 'generate', 'backend', 'lazy', 'autograd', 'stable', "
        "'compile-kernel', 'stable-link-check', 'bound-link', 'wheel') (see `atengen --help`)\n"
    )


@pytest.mark.parametrize(
    "args, message",
    [
        (("generate", "--shards=-1", "--output_dir=o"), "argument --shards: must be auto or 0 or"),
        (("generate", "--shards=two", "--output_dir=o"), "argument --shards: not auto or an int"),
        (("generate", "--shards=Auto", "--output_dir=o"), "argument --shards: not auto or an int"),
        (("lazy", "--backend_yaml=b", "--shards=x", "--output_dir=o"), "not auto or an integer"),
        (("backend", "--backend_yaml=b", "--shards=-2"), "must be auto or 0 or more, got -2"),
        (("generate",), "the following arguments are required: --output_dir"),
        (("generate", "--ops=add", "--ops_file=f", "--output_dir=o"), "not allowed with"),
        (("backend", "--output_dir=o"), "the following arguments are required: --backend_yaml"),
        (("check", "--out_dir=o"), "unrecognized arguments: --out_dir=o"),
        # absl's own process-wide flags are not the commands' flags.
        (("check", "--op_yaml=o", "--verbosity=1"), "unrecognized arguments: --verbosity=1"),
        (("lazy", "--backend_yaml=b", "--output_dir=o", "--pdb"), "unrecognized arguments: --pdb"),
        # The link steps and the wheel: flags only, never abbreviated for the link steps.
        (("bound-link", "--label=//:x", "--linked=a", "--output=b"), "required: --torch_library"),
        (("bound-link", "//:x", "a", "b", "c"), "required: --label, --linked, --output"),
        (("stable-link-check", "--label=//:x", "--linked=a", "--outpu=b"), "required: --output"),
        (("wheel", "--label=//:w", "--layout=hub"), "argument --layout: invalid choice: 'hub'"),
    ],
)
def test_bad_flags_are_one_line_and_exit_2(tmp_path, monkeypatch, args, message):
    monkeypatch.chdir(tmp_path)  # the relative output directories would land here
    r = run_cli(*args)
    assert r.returncode == 2
    assert r.stdout == ""
    lines = r.stderr.splitlines()
    assert len(lines) == 1 and message in lines[0], r.stderr
    assert not list(tmp_path.iterdir())


def test_the_process_entry_point_runs_the_same_main(tmp_path):
    """`python -m atengen` exits with main's code and output."""
    r = run_cli_process("explode")
    assert (r.returncode, r.stderr) == (2, run_cli("explode").stderr)
    op = tmp_path / "ops.yaml"
    op.write_text(GOOD_ENTRY)
    (tmp_path / "tags.yaml").write_text(TAGS_YAML)
    r = run_cli_process("check", f"--op_yaml={op}")
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("entries: 1\n")


def test_check_and_dump_on_a_small_yaml(tmp_path):
    op = tmp_path / "ops.yaml"
    op.write_text(
        "- func: f_(Tensor(a!) self) -> Tensor(a!)\n  dispatch:\n    CPU: f_\n  autogen: f, f.out\n"
    )
    (tmp_path / "tags.yaml").write_text(TAGS_YAML)
    r = run_cli("check", f"--op_yaml={op}")
    assert r.returncode == 0, r.stderr
    assert "entries: 1\nnative_functions: 3\ngenerated: 2\ngroups: 1\nview_groups: 0\n" in r.stdout
    d = run_cli("dump", f"--op_yaml={op}")
    names = [line.split('"name": "')[1].split('"')[0] for line in d.stdout.splitlines()]
    assert names == ["f", "f.out", "f_"]
