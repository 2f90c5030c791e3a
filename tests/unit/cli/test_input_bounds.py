"""Every input is bounded: special files and huge files are refused at once, a malformed
--torch_facts is one line, and the output of a failing (or warning) run does not grow with the
input: at most MAX_SHOWN_ERRORS lines of each kind, each at most MAX_MESSAGE_CHARS long, and
the did-you-mean search runs only for the lines that are printed.

Before: /dev/zero or a FIFO given to any file flag never returned; --torch_facts gave an
AttributeError, a TypeError or a RecursionError; 20,000 unknown dispatch keys took 7.5 s CPU; an
8 MB unknown op name was one 8 MB line; a backend listing every op twice printed a warning each.
"""

from __future__ import annotations

import contextlib
import difflib
import os
import signal

import pytest

from atengen.cli.common import installed_torch_yaml_dir
from atengen.errors import MAX_MESSAGE_CHARS, MAX_SHOWN_ERRORS
from atengen.input_files import MAX_INPUT_BYTES
from tests.support.model_helpers import TAGS_YAML, run_cli

OPS = "- func: myops::scale(Tensor self, float factor) -> Tensor\n  dispatch:\n    CPU: scale_cpu\n"
BACKEND = "backend: PrivateUse1\ncpp_namespace: dev\nsupported:\n- abs\n"
LAZY = "backend: Lazy\ncpp_namespace: torch::lazy\nfull_codegen:\n- abs\n"
DERIVATIVES = "- name: myops::scale(Tensor self, float factor) -> Tensor\n  self: grad * factor\n"


@contextlib.contextmanager
def _within(seconds: int):
    """Fails the test instead of hanging it when the command does not return."""

    def expired(*_):
        raise TimeoutError(f"the command did not return within {seconds} s")

    old = signal.signal(signal.SIGALRM, expired)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


@pytest.fixture
def files(tmp_path):
    (tmp_path / "ops.yaml").write_text(OPS)
    (tmp_path / "tags.yaml").write_text(TAGS_YAML)
    (tmp_path / "backend.yaml").write_text(BACKEND)
    (tmp_path / "lazy.yaml").write_text(LAZY)
    (tmp_path / "derivatives.yaml").write_text(DERIVATIVES)
    (tmp_path / "k.cpp").write_text("// kernels\n")
    (tmp_path / "shapes.h").write_text("#pragma once\n")
    (tmp_path / "ops.txt").write_text("myops::scale\n")
    return tmp_path


def _command(d, flag: str, special: str) -> list[str]:
    """A command in which ``flag`` names ``special`` and every other input is a good file."""
    given = {
        "op_yaml": d / "ops.yaml",
        "tags_yaml": d / "tags.yaml",
    }
    given[flag] = special
    common = [f"--op_yaml={given['op_yaml']}", f"--tags_yaml={given['tags_yaml']}"]
    out = f"--output_dir={d / 'out'}"
    if flag in ("op_yaml", "tags_yaml", "ops_file", "torch_facts"):
        extra = [f"--{flag}={special}"] if flag in ("ops_file", "torch_facts") else []
        return ["generate", *common, out, f"--header_output_dir={d / 'inc'}", *extra]
    if flag == "derivatives_yaml":
        return ["autograd", *common, f"--derivatives_yaml={special}"]
    if flag == "shape_inference_file":
        return ["lazy", f"--backend_yaml={d / 'lazy.yaml'}", out, f"--{flag}={special}"]
    backend = special if flag == "backend_yaml" else d / "backend.yaml"
    extra = [f"--impl_path={special}"] if flag == "impl_path" else []
    return ["backend", f"--backend_yaml={backend}", out, *extra]


FILE_FLAGS = [
    "op_yaml",
    "tags_yaml",
    "ops_file",
    "torch_facts",
    "derivatives_yaml",
    "backend_yaml",
    "impl_path",
    "shape_inference_file",
]


@pytest.mark.parametrize("flag", FILE_FLAGS)
@pytest.mark.parametrize("special", ["/dev/zero", "/dev/urandom", "fifo", "directory", "huge"])
def test_special_and_huge_files_are_refused_at_once(files, flag, special):
    if special == "fifo":
        path = str(files / "fifo")
        os.mkfifo(path)  # no writer: reading it would wait for ever
        expected = "it is a FIFO, not a regular file"
    elif special == "directory":
        path = str(files / "a_dir")
        os.mkdir(path)
        expected = "it is a directory, not a regular file"
    elif special == "huge":
        path = str(files / "huge")
        with open(path, "wb") as f:  # sparse: no disk used
            f.truncate(MAX_INPUT_BYTES + 1)
        expected = f"more than the {MAX_INPUT_BYTES // 2**20} MiB atengen reads of one input"
    else:
        path = special
        expected = "it is a character device, not a regular file"
    with _within(20):
        proc = run_cli(*_command(files, flag, path))
    assert proc.returncode == 1, proc.stderr
    lines = proc.stderr.splitlines()
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith(f"{path}:1: error: cannot read "), lines[0]
    assert lines[0].endswith(expected), lines[0]
    assert not (files / "out").exists() and not (files / "inc").exists()


@pytest.mark.parametrize(
    "text, message",
    [
        ("[1, 2]", "expected a JSON object, got list"),
        ('"2.13"', "expected a JSON object, got str"),
        ('{"release": 2.13}', "'release' must be a string"),
        ('{"release": "2.13", "version": ["2.13.0"]}', "'version' must be a string"),
        ('{"release": "2.13", "arch_list": "sm_90"}', "'arch_list' must be a list"),
        ('{"release": "2.13", "arch_list": [90]}', "'arch_list' must be a list of strings"),
        ('{"release": "2.13", "native_kernels": ["abs"]}', "'native_kernels' must be an object"),
        (
            '{"release": "2.13", "native_kernels": {"libtorch_cpu": "abs"}}',
            "'native_kernels.libtorch_cpu' must be a list of strings",
        ),
        ('{"release": "2.13", "structured_meta_classes": 1}', "must be a list"),
        ("[" * 100_000 + "]" * 100_000, "JSON nested too deeply"),
        ("{", "not JSON"),
    ],
)
def test_a_malformed_torch_facts_is_one_line(files, text, message):
    facts = files / "facts.json"
    facts.write_text(text)
    proc = run_cli(*_command(files, "torch_facts", str(facts)))
    assert proc.returncode == 1, proc.stderr
    lines = proc.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"{facts}:1: error: torch facts: "), lines
    assert message in lines[0], lines[0]


def _counting_close_matches(monkeypatch) -> list:
    calls = []
    real = difflib.get_close_matches

    def counted(*args, **kwargs):
        calls.append(args[0])
        return real(*args, **kwargs)

    monkeypatch.setattr(difflib, "get_close_matches", counted)
    return calls


def test_many_unknown_dispatch_keys_search_only_for_the_printed_errors(tmp_path, monkeypatch):
    entries = "".join(
        f"- func: f{i}(Tensor self) -> Tensor\n  dispatch:\n    Key{i}: k\n" for i in range(2000)
    )
    (tmp_path / "ops.yaml").write_text(entries)
    (tmp_path / "tags.yaml").write_text(TAGS_YAML)
    calls = _counting_close_matches(monkeypatch)
    proc = run_cli("check", f"--op_yaml={tmp_path / 'ops.yaml'}")
    assert proc.returncode == 1
    lines = proc.stderr.splitlines()
    assert len(lines) == MAX_SHOWN_ERRORS + 1, lines[-3:]
    assert lines[-1] == f"error: ... and {2000 - MAX_SHOWN_ERRORS} more errors"
    assert len(calls) <= MAX_SHOWN_ERRORS, len(calls)


def test_a_huge_unknown_name_gives_a_bounded_line(files, monkeypatch):
    name = "x" * 8_000_000
    (files / "ops.txt").write_text(name + "\n")
    calls = _counting_close_matches(monkeypatch)
    proc = run_cli(*_command(files, "ops_file", str(files / "ops.txt")))
    assert proc.returncode == 1
    lines = proc.stderr.splitlines()
    assert len(lines) == 1 and len(lines[0]) <= MAX_MESSAGE_CHARS + 100, len(lines[0])
    assert (
        lines[0].startswith("error: unknown operator 'xxxx") and "characters left out" in lines[0]
    )
    assert calls == []  # no candidate is 8 MB long: not searched


def test_warnings_are_counted_past_the_first_ones(tmp_path):
    """Every op of torch's YAML listed twice: the repeats are warnings, printed 20 and counted."""
    ops = [
        line.split("(")[0].removeprefix("- func: ")
        for line in open(os.path.join(installed_torch_yaml_dir(), "native_functions.yaml"))
        if line.startswith("- func: ") and "." not in line.split("(")[0]
    ]
    y = tmp_path / "backend.yaml"
    y.write_text("backend: PrivateUse1\ncpp_namespace: dev\nsupported:\n" + "".join(
        f"- {op}\n" for op in ops + ops
    ))  # fmt: skip
    proc = run_cli("backend", f"--backend_yaml={y}", f"--output_dir={tmp_path / 'out'}")
    lines = proc.stderr.splitlines()
    warnings = [x for x in lines if ": warning: " in x]
    assert len(warnings) == MAX_SHOWN_ERRORS, lines[:3]
    assert "warning: ... and " in lines[MAX_SHOWN_ERRORS], lines[MAX_SHOWN_ERRORS]
    assert len(lines) <= MAX_SHOWN_ERRORS * 2 + 2, len(lines)  # and the errors, if any
