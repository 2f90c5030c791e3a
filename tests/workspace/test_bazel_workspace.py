"""The Bazel workspace: external repositories, the generator binary and the main target.

Runs the real `bazel` (Debian's 4.2.3 here) in this checkout with its default output base, so
repeated runs reuse Bazel's caches.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from tests.support.bazel_helpers import REPO, bazel
from tests.support.model_helpers import run_cli

pytestmark = pytest.mark.bazel

YAML_FILES = ("native_functions.yaml", "tags.yaml", "derivatives.yaml")
COUNT_LINE = re.compile(r"^(entries|native_functions|groups|operator_base_names): (\d+)$", re.M)


def counts(text: str) -> dict[str, int]:
    return {k: int(v) for k, v in COUNT_LINE.findall(text)}


@pytest.fixture(scope="session")
def output_base() -> Path:
    return Path(bazel("info", "output_base").stdout.strip())


@pytest.fixture(scope="session")
def bazel_bin() -> Path:
    return Path(bazel("info", "bazel-bin").stdout.strip())


@pytest.fixture(scope="session")
def model_check(bazel_bin: Path) -> str:
    """`bazel build //:aten_model_check`, once per session: the counts it wrote."""
    bazel("build", "//:aten_model_check")
    return (bazel_bin / "aten_model_check.txt").read_text()


@pytest.fixture(scope="session")
def torch_yaml(output_base: Path, model_check: str) -> dict[str, Path]:
    # model_check has fetched @torch; its files live in the output base.
    return {name: output_base / "external" / "torch" / name for name in YAML_FILES}


def test_model_check_writes_counts(model_check: str) -> None:
    got = counts(model_check)
    assert set(got) == {"entries", "native_functions", "groups", "operator_base_names"}, model_check
    assert all(n > 0 for n in got.values()), got
    assert got["native_functions"] >= got["entries"], got


def test_model_check_matches_direct_run(model_check: str, torch_yaml: dict[str, Path]) -> None:
    """The build action prints exactly what the CLI prints outside Bazel on the same YAML."""
    direct = run_cli(
        "check",
        f"--op_yaml={torch_yaml['native_functions.yaml']}",
        f"--tags_yaml={torch_yaml['tags.yaml']}",
    )
    assert direct.returncode == 0, direct.stderr
    assert direct.stdout == model_check


def test_bazel_run_atengen_check(model_check: str, torch_yaml: dict[str, Path]) -> None:
    result = bazel(
        "run",
        "//tool:atengen",
        "--",
        "check",
        f"--op_yaml={torch_yaml['native_functions.yaml']}",
        f"--tags_yaml={torch_yaml['tags.yaml']}",
    )
    assert result.stdout == model_check


def test_atengen_deps_come_from_the_pinned_repo(model_check: str, bazel_bin: Path) -> None:
    runfiles = bazel_bin / "tool" / "atengen_bin.runfiles"
    for module in ("yaml", "jinja2", "markupsafe", "absl"):
        assert (runfiles / "rules_aten_pip" / "site" / module / "__init__.py").exists(), module
    # Every pinned package is installed (the generator's runfiles hold only its own deps).
    lock = (REPO / "third_party" / "requirements_tool.lock").read_text()
    site = Path(bazel("info", "output_base").stdout.strip()) / "external/rules_aten_pip/site"
    dist_infos = [p.name for p in site.glob("*.dist-info")]
    for name, version in re.findall(r"^([A-Za-z0-9_.-]+)==(\S+)", lock, re.M):
        wanted = f"{name.replace('-', '_').lower()}-{version}.dist-info"
        assert wanted in [d.lower() for d in dist_infos], (wanted, dist_infos)


def test_atengen_launcher_names_no_interpreter_path(model_check: str, bazel_bin: Path) -> None:
    """The py_binary launcher starts the in-build interpreter by its runfiles path, from /bin/sh,
    so it holds no path of this machine and needs no python3 on the strict action PATH."""
    bazel("build", "//tool:atengen")
    launcher = (bazel_bin / "tool" / "atengen_bin").read_text()
    assert launcher.startswith("#!/bin/sh\n"), launcher[:200]
    assert "PYTHON_BINARY = 'rules_aten_python/bin/python3'" in launcher
    for local in (str(REPO), str(Path.home()), sys.executable, os.path.realpath(sys.executable)):
        assert local not in launcher, local
    runfiles = bazel_bin / "tool" / "atengen_bin.runfiles" / "rules_aten_python"
    assert (runfiles / "bin" / "python3").is_file()
    # The standard library where the interpreter looks under its PYTHONHOME: its modules
    # compiled in lib/python3X.zip, its extension modules in lib/python3.X/lib-dynload.
    zips = list((runfiles / "lib").glob("python3*.zip"))
    assert len(zips) == 1, zips
    with zipfile.ZipFile(zips[0]) as archive:
        names = set(archive.namelist())
    assert {"os.pyc", "json/__init__.pyc"} <= names
    assert not [n for n in names if n.startswith(("site-packages/", "test/"))]
    assert list((runfiles / "lib").glob("python3.*/lib-dynload/*.so"))


def test_torch_repository_targets() -> None:
    listed = bazel("query", "@torch//:*").stdout.split()
    for name in YAML_FILES:
        assert f"@torch//:{name}" in listed, listed
    for target in ("headers", "c10", "torch_cpu", "torch"):
        assert f"@torch//:{target}" in listed, listed
    rules = bazel("query", "@torch//:all").stdout.split()
    assert "@torch//:torch_cpu" in rules and "@torch//:op_yaml" in rules, rules


def test_torch_yaml_is_torchgens(torch_yaml: dict[str, Path]) -> None:
    for name, path in torch_yaml.items():
        assert path.is_symlink(), f"{path} should link into the wheel, not be a copy"
        assert "torchgen" in str(path.resolve()), path.resolve()
        assert path.stat().st_size > 0, name


def test_python_toolchain_is_311_or_newer(model_check: str, output_base: Path) -> None:
    path, version, source = (
        (output_base / "external" / "rules_aten_python" / "interpreter.txt")
        .read_text()
        .split("\n")[:3]
    )
    assert Path(path).is_absolute(), path
    assert tuple(int(p) for p in version.split(".")[:2]) >= (3, 11), version
    if not os.environ.get("RULES_ATEN_PYTHON") and (REPO / ".venv" / "bin" / "python3").exists():
        assert (source, path) == (".venv", str(REPO / ".venv" / "bin" / "python3"))


def test_patched_rules_cc_loads() -> None:
    # cc/BUILD loads cc/defs.bzl, which loads the two files third_party/rules_cc patches.
    listed = bazel("query", "@rules_cc//cc:all").stdout.split()
    assert "@rules_cc//cc:toolchain_type" in listed, listed


def test_torch_cc_targets_compile_link_and_run() -> None:
    result = bazel("test", "//tests/bazel:torch_link_test", "--test_output=all")
    assert "sum=15 abi=" in result.stdout + result.stderr


LOCAL_LOAD = re.compile(r'^load\(\s*"(//rules[^"]*|:[^"]+)"', re.M)


def _local_load_closure(start: Path) -> set[str]:
    """Repository-relative paths of `start` and every .bzl of this repository it loads, from
    the load statements themselves (external repositories' files left out)."""
    seen: set[str] = set()
    pending = [start]
    while pending:
        path = pending.pop()
        rel = str(path.relative_to(REPO))
        if rel in seen:
            continue
        seen.add(rel)
        for label in LOCAL_LOAD.findall(path.read_text()):
            if label.startswith(":"):
                pending.append(path.parent / label[1:])
            else:
                package, name = label[2:].split(":")
                pending.append(REPO / package / name)
    return seen


@pytest.mark.parametrize("name", ["defs", "repositories", "extensions"])
def test_bzl_library_holds_every_loaded_file(name: str) -> None:
    """//rules:<name> (a bzl_library, for stardoc) lists its .bzl and all that it loads."""
    files = bazel(
        "cquery",
        f"//rules:{name}",
        "--output=starlark",
        "--starlark:expr=' '.join([f.short_path for f in target.files.to_list()])",
    ).stdout.split()
    expected = _local_load_closure(REPO / "rules" / f"{name}.bzl")
    assert len(expected) > 1, expected
    assert expected <= set(files), sorted(expected - set(files))


def test_the_generator_in_its_runfiles_keeps_no_template_code(
    bazel_bin: Path, tmp_path: Path
) -> None:
    """Under Bazel the generator compiles the templates it renders and writes no cache: an
    action writes only its declared outputs (atengen/cli/common.py). Outside Bazel, with the
    same home, the user cache fills."""
    bazel("build", "//tool:atengen")
    runfiles = bazel_bin / "tool" / "atengen_bin.runfiles"
    code = (
        "from atengen.cli.common import template_options;"
        "from atengen.render.templates import Templates;"
        "o = template_options(); t = Templates(o);"
        "[t._env.get_template(n) for n in t.names()];"
        "print(o.write_dir, o.code_dirs, len(t.stats.compiled))"
    )
    templates = len(list((REPO / "tool" / "atengen" / "templates").glob("*.j2")))
    home = tmp_path / "home"
    cache = home / ".cache" / "atengen" / "template_code"
    for tree, expected in (
        (runfiles / "rules_aten" / "tool", ["None", "()", str(templates)]),
        (REPO / "tool", [str(cache), f"('{cache}',)", str(templates)]),
    ):
        result = subprocess.run(
            [str(runfiles / "rules_aten_python" / "bin" / "python3"), "-S", "-c", code],
            env={
                "HOME": str(home),
                "PYTHONPATH": f"{tree}:{runfiles / 'rules_aten_pip' / 'site'}",
            },
            capture_output=True,
            text=True,
            check=True,
        )
        assert result.stdout.split() == expected, result.stdout
        # Nothing written from the runfiles; the cache filled from the source tree.
        written = list(cache.iterdir()) if cache.exists() else []
        assert len(written) == (templates if tree == REPO / "tool" else 0), written
