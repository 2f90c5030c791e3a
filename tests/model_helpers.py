"""Small op YAMLs for unit tests: build a model or capture its one error; and run_cli, the one
way tests start `python -m atengen` in a subprocess."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

from atengen.errors import AtengenError
from atengen.model.operator_model import OperatorModel, load_model

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

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


def run_cli(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    """`python -m atengen args...` with tool/ on PYTHONPATH (pytest's `pythonpath` setting
    reaches only this process) and os.environ updated with env."""
    full_env = dict(os.environ, PYTHONPATH=os.path.join(REPO, "tool"))
    full_env.update(env or {})
    return subprocess.run(
        [sys.executable, "-m", "atengen", *args],
        capture_output=True,
        text=True,
        env=full_env,
        check=False,
    )
