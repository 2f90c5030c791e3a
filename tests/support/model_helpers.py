"""Small op YAMLs for unit tests: build a model or capture its one error; run_cli (atengen in
this process) and run_cli_process, the one way tests start `python -m atengen` in a child."""

from __future__ import annotations

import contextlib
import glob
import hashlib
import io
import os
import pathlib
import re
import subprocess
import sys
import sysconfig
import textwrap

import pytest

from atengen.cli.main import main
from atengen.errors import AtengenError
from atengen.model.operator_model import OperatorModel, load_model

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# Every YAML file the installed packages ship (torch's op, tags and derivatives YAMLs among them).
WHEEL_YAMLS = sorted(
    glob.glob(os.path.join(sysconfig.get_paths()["purelib"], "**", "*.yaml"), recursive=True)
)

TAGS_YAML = "".join(
    f"- tag: {t}\n  desc: test tag {t}\n"
    for t in (
        "core",
        "inplace_view",
        "view_copy",
        "generated",
        "nondeterministic_seeded",
        "pt2_compliant_tag",
        "pointwise",
    )
)


def write_yamls(tmp_path, op_yaml: str, tags_yaml: str = TAGS_YAML) -> tuple[str, str]:
    op = tmp_path / "ops.yaml"
    tags = tmp_path / "tags.yaml"
    op.write_text(textwrap.dedent(op_yaml))
    tags.write_text(tags_yaml)
    return str(op), str(tags)


def model_of(tmp_path, op_yaml: str) -> OperatorModel:
    return load_model(*write_yamls(tmp_path, op_yaml))


def error_of(tmp_path, op_yaml: str) -> str:
    """The formatted error(s) of a YAML that must fail to load."""
    with pytest.raises(AtengenError) as info:
        model_of(tmp_path, op_yaml)
    return info.value.format_all()


def schemas(model: OperatorModel) -> dict[str, str]:
    return {str(f.name): str(f.func) for f in model.functions}


def run_cli(*args: str) -> subprocess.CompletedProcess:
    """``atengen ARGS`` in this process (atengen.cli.main.main), with its output captured."""
    stdout, stderr = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
        code = main(["atengen", *args])
    return subprocess.CompletedProcess(
        ["atengen", *args], code, stdout.getvalue(), stderr.getvalue()
    )


def generate_into(tmp_path, op_yaml, tags_yaml, *extra: str) -> subprocess.CompletedProcess:
    """`atengen generate` of op_yaml into tmp_path/out (headers: tmp_path/inc), in this process."""
    return run_cli(
        "generate",
        f"--op_yaml={op_yaml}",
        f"--tags_yaml={tags_yaml}",
        f"--output_dir={tmp_path / 'out'}",
        f"--header_output_dir={tmp_path / 'inc'}",
        *extra,
    )


def autograd_into(tmp_path, op_yaml: str, derivatives: str, *flags: str):
    """`atengen autograd` of ``derivatives`` over ``op_yaml`` (written to tmp_path with the test
    tags) into tmp_path/out, in this process; (the process, the output directory)."""
    tmp_path.mkdir(parents=True, exist_ok=True)
    for name, text in (("ops", op_yaml), ("tags", TAGS_YAML), ("derivatives", derivatives)):
        (tmp_path / f"{name}.yaml").write_text(text)
    out = tmp_path / "out"
    proc = run_cli(
        "autograd",
        f"--op_yaml={tmp_path / 'ops.yaml'}",
        f"--tags_yaml={tmp_path / 'tags.yaml'}",
        f"--derivatives_yaml={tmp_path / 'derivatives.yaml'}",
        f"--output_dir={out}",
        *flags,
    )
    return proc, out


def run_cli_process(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    """``python -m atengen ARGS`` in a child process, for what only a real process shows: tool/
    on PYTHONPATH (pytest's `pythonpath` setting reaches only this process), os.environ updated
    with env."""
    full_env = dict(os.environ, PYTHONPATH=os.path.join(REPO, "tool"))
    full_env.update(env or {})
    return subprocess.run(
        [sys.executable, "-m", "atengen", *args],
        capture_output=True,
        text=True,
        env=full_env,
        check=False,
    )


def run_benchmark_tiny(script: str, *args: str, timeout: float = 300) -> str:
    """``python benchmarks/<script> --tiny [args]`` (one repetition, nothing written); its stdout."""
    proc = subprocess.run(
        [sys.executable, f"benchmarks/{script}", "--tiny", *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc.stdout


def printed_ratio(stdout: str, name: str) -> float:
    """The value of the one ``RATIO <name> <value>`` line a benchmark printed (for run_all.py)."""
    lines = re.findall(rf"^RATIO {re.escape(name)} (\d+(?:\.\d+)?)$", stdout, re.M)
    assert len(lines) == 1, stdout
    return float(lines[0])


def tree(path: pathlib.Path) -> dict[str, str]:
    return {
        str(p.relative_to(path)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(path.rglob("*"))
        if p.is_file()
    }
