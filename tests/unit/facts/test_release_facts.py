"""What differs between the supported torch releases, on small inputs: the release range
(`--torch_facts` of a release below the floor is one error line, a newer one builds with the
newest facts after one warning), the types only some releases' schema parser knows (Dimname),
the tags only some releases' at::Tag has (`out`, `inplace`), and torchgen rules that changed
(2.15's `_philox_*` ops need no nondeterministic_seeded tag), and facts of another torch than
the --torch_version_py beside them (one error line). tests/slices/releases/test_releases.py checks each
release's whole YAML against its own torchgen.
"""

from __future__ import annotations

import json
import re

import pytest

from atengen.facts import torch_facts as tf
from tests.support.model_helpers import TAGS_YAML, run_cli, write_yamls

CUSTOM_OP = """\
- func: myns::scale(Tensor self, float factor) -> Tensor
  autogen: scale.out
  dispatch:
    CPU: scale_cpu
"""
DIMNAME_OP = """\
- func: myns::named(Tensor self, Dimname d) -> Tensor
  dispatch:
    CPU: named_cpu
"""


def _facts(tmp_path, release: str, version: str, **extra: str) -> str:
    path = tmp_path / f"facts_{version}.json"
    path.write_text(json.dumps({"release": release, "version": version, **extra}))
    return str(path)


def _generate(tmp_path, op_yaml: str, *flags: str, tags_yaml: str = TAGS_YAML):
    op, tags = write_yamls(tmp_path, op_yaml, tags_yaml)
    out = tmp_path / "out"
    return run_cli(
        "generate",
        f"--op_yaml={op}",
        f"--tags_yaml={tags}",
        f"--output_dir={out}",
        f"--header_output_dir={tmp_path / 'inc'}",
        *flags,
    ), out


def test_a_release_below_the_floor_is_one_error_line(tmp_path):
    facts = _facts(tmp_path, "2.10", "2.10.0+cpu")
    r, out = _generate(tmp_path, CUSTOM_OP, f"--torch_facts={facts}")
    assert r.returncode == 1 and not out.exists()
    assert r.stderr.splitlines() == [
        f"{facts}:1: error: torch 2.10.0+cpu is older than torch 2.11, the oldest release "
        "rules_aten supports; install torch 2.11 or newer"
    ]


def test_a_newer_release_builds_with_the_newest_facts_after_one_warning(tmp_path):
    facts = _facts(tmp_path, "2.99", "2.99.0+cu140")
    r, out = _generate(tmp_path, CUSTOM_OP, f"--torch_facts={facts}")
    assert r.returncode == 0, r.stderr
    assert r.stderr.splitlines() == [
        f"{facts}:1: warning: torch 2.99.0+cu140 is newer than the releases rules_aten knows "
        f"(2.11 to {tf.NEWEST_RELEASE}): building it with the facts of torch "
        f"{tf.NEWEST_RELEASE} (tool/atengen/facts/torch_facts.py)"
    ]
    assert any(out.iterdir())
    # The @torch repository printed the warning when it was fetched, and says so.
    told = _facts(tmp_path, "2.99", "2.99.0+cu140", facts_release=tf.NEWEST_RELEASE)
    r, _ = _generate(tmp_path, CUSTOM_OP, f"--torch_facts={told}")
    assert r.returncode == 0 and r.stderr == "", r.stderr


@pytest.mark.parametrize(
    ("release", "tags"),
    [
        ("2.11", "at::Tag::generated"),
        ("2.12", "at::Tag::generated"),
        ("2.13", "at::Tag::generated, at::Tag::out"),
        ("2.15", "at::Tag::generated, at::Tag::out"),
    ],
)
def test_schema_definitions_pass_only_the_releases_tags(tmp_path, release, tags):
    """at::Tag::out exists from 2.13 on: a definition naming it would not compile on 2.11."""
    facts = _facts(tmp_path, release, f"{release}.0")
    r, out = _generate(tmp_path, CUSTOM_OP, f"--torch_facts={facts}")
    assert r.returncode == 0, r.stderr
    schemas = "".join(p.read_text() for p in out.glob("RegisterSchema_*.cpp"))
    assert (
        f'"myns::scale.out(Tensor self, float factor, *, Tensor(a!) out) -> Tensor(a!)", {{{tags}}});'
        in schemas
    )


def test_without_facts_only_the_tags_of_every_release_are_passed(tmp_path):
    r, out = _generate(tmp_path, CUSTOM_OP)
    assert r.returncode == 0, r.stderr
    schemas = "".join(p.read_text() for p in out.glob("RegisterSchema_*.cpp"))
    assert "scale.out(" in schemas and "at::Tag::out" not in schemas
    assert tf.C10_TAGS == tf.C10_TAGS_BY_RELEASE["2.13"] - {"out", "inplace"}


@pytest.mark.parametrize(("release", "ok"), [("2.11", True), ("2.12", True), ("2.13", False)])
def test_dimname_only_for_the_releases_whose_parser_knows_it(tmp_path, release, ok):
    facts = _facts(tmp_path, release, f"{release}.0")
    r, out = _generate(tmp_path, DIMNAME_OP, f"--torch_facts={facts}")
    if ok:
        assert r.returncode == 0, r.stderr
        assert "Dimname d" in "".join(p.read_text() for p in out.glob("RegisterSchema_*.cpp"))
    else:
        assert r.returncode == 1 and not out.exists()
        assert re.fullmatch(
            r"\S+:1: error: 'named' uses type 'Dimname', which only the schema parser of "
            rf"torch 2\.11 and 2\.12 knows, not torch {release}\.0's",
            r.stderr.strip(),
        ), r.stderr


def test_check_takes_dimname_as_torchgen_does(tmp_path):
    op, tags = write_yamls(tmp_path, DIMNAME_OP)
    r = run_cli("check", f"--op_yaml={op}", f"--tags_yaml={tags}")
    assert r.returncode == 0, r.stderr


def test_generated_out_ops_are_tagged_out_where_the_tags_yaml_says_the_release_does(tmp_path):
    """torch 2.11 and 2.12's tags YAML has `out_variant` and no `out`: their torchgen tags no
    generated op `out`; later releases' does."""
    old_tags = TAGS_YAML + "- tag: out_variant\n  desc: x\n"
    for tags_yaml, tagged in ((old_tags, False), (old_tags + "- tag: out\n  desc: x\n", True)):
        op, tags = write_yamls(tmp_path, CUSTOM_OP, tags_yaml)
        r = run_cli("dump", f"--op_yaml={op}", f"--tags_yaml={tags}")
        assert r.returncode == 0, r.stderr
        records = {json.loads(x)["name"]: json.loads(x) for x in r.stdout.splitlines()}
        assert ("out" in records["scale.out"]["tags"]) == tagged


@pytest.mark.parametrize(
    ("name", "ok"), [("_philox_randint_", True), ("my_randint_", False), ("_philox_x", True)]
)
def test_philox_ops_need_no_seeded_tag(tmp_path, name, ok):
    op, tags = write_yamls(
        tmp_path,
        f"- func: {name}(Tensor(a!) self, Tensor key, int high) -> Tensor(a!)\n"
        "  dispatch:\n    CPU: k\n",
    )
    r = run_cli("check", f"--op_yaml={op}", f"--tags_yaml={tags}")
    assert (r.returncode == 0) == ok, r.stderr
    if not ok:
        assert "looks random (rand/dropout/Generator) and needs the nondeterministic_seeded" in (
            r.stderr
        )


# torch/version.py as torch 2.14 writes it (a type annotation on `cuda`).
VERSION_PY = """\
from typing import Optional

__all__ = ['__version__', 'debug', 'cuda', 'git_version', 'hip', 'rocm', 'xpu']
__version__ = '{version}'
debug = False
cuda: Optional[str] = None
"""


def test_facts_of_another_torch_than_its_version_py_are_one_error_line(tmp_path):
    """--torch_version_py names a torch other than the facts' (torch changed after @torch read
    them): one line naming both and the real path of the file, and nothing written."""
    facts = _facts(tmp_path, "2.13", "2.13.0+cpu")
    version_py = tmp_path / "torch" / "version.py"
    version_py.parent.mkdir()
    version_py.write_text(VERSION_PY.format(version="2.15.0+cu132"))
    link = tmp_path / "version_link.py"
    link.symlink_to(version_py)
    r, out = _generate(tmp_path, CUSTOM_OP, f"--torch_facts={facts}", f"--torch_version_py={link}")
    assert r.returncode == 1 and not out.exists()
    assert r.stderr.splitlines() == [
        f"{version_py}:1: error: rules_aten: @torch describes torch 2.13.0+cpu, but this "
        "torch/version.py now names torch 2.15.0+cu132: torch changed after @torch was set up; "
        "run `bazel sync --configure` to set it up again"
    ]


@pytest.mark.parametrize(
    "text", [VERSION_PY.format(version="2.13.0+cpu"), "# no version.py in that directory\n"]
)
def test_a_version_py_of_the_facts_torch_or_without_a_version_generates(tmp_path, text: str):
    facts = _facts(tmp_path, "2.13", "2.13.0+cpu")
    version_py = tmp_path / "version.py"
    version_py.write_text(text)
    r, out = _generate(
        tmp_path, CUSTOM_OP, f"--torch_facts={facts}", f"--torch_version_py={version_py}"
    )
    assert r.returncode == 0, r.stderr
    assert out.is_dir()
