"""`./dev dist VERSION` (devtools/dist/make_dist.py): the archive is the same bytes every
time, holds what a user's build reads and nothing of the development tree, and the release notes
carry the README's http_archive with the archive's sha256 and the bazel_dep line.

The archive is made from the working tree (--worktree), so that these tests check the files as
they are being edited; a real release is made from HEAD. tests/workspaces/test_dist_archive.py builds the
quickstart against the archive.
"""

from __future__ import annotations

import hashlib
import io
import json
import re
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest
import yaml

from tests.support.quickstart_helpers import archive_workspace

REPO = Path(__file__).resolve().parents[3]
SCRIPT = REPO / "devtools" / "dist" / "make_dist.py"
MODULE_VERSION = re.compile(r'^    version = "([^"]+)",$', re.MULTILINE)
# 1980-01-01 00:00:00 UTC.
FIXED_MTIME = 315532800
# Trees of the repository that a user's build never reads.
DEVELOPMENT_ONLY = (
    ".bcr/",
    ".ci/",
    "benchmarks/",
    "conformance/",
    "docs/",
    "examples/",
    "tests/",
    "devtools/",
)


def module_version() -> str:
    (version,) = MODULE_VERSION.findall((REPO / "MODULE.bazel").read_text())
    return version


def make_dist(out: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(SCRIPT), *args, "--worktree", f"--out={out}"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.fixture(scope="module")
def release(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    out = tmp_path_factory.mktemp("release")
    version = module_version()
    result = make_dist(out, version)
    assert result.returncode == 0, result.stderr
    return out, version


def archive_members(data: bytes) -> list[tarfile.TarInfo]:
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as tar:
        return tar.getmembers()


def test_the_archive_is_the_same_bytes_twice(
    release: tuple[Path, str], tmp_path: Path, summary: list[str]
) -> None:
    out, version = release
    name = f"rules_aten-{version}.tar.gz"
    first = (out / name).read_bytes()
    result = make_dist(tmp_path, version)
    assert result.returncode == 0, result.stderr
    assert (tmp_path / name).read_bytes() == first
    # gzip: no file name (FLG's FNAME bit off), mtime 0.
    assert first[:3] == b"\x1f\x8b\x08" and first[3] & 0x08 == 0, first[:10]
    assert int.from_bytes(first[4:8], "little") == 0, first[:10]
    members = archive_members(first)
    names = [m.name for m in members]
    assert names == sorted(names) and len(set(names)) == len(names)
    for m in members:
        assert m.isfile(), m.name
        assert m.name.startswith(f"rules_aten-{version}/"), m.name
        assert (m.mtime, m.uid, m.gid, m.uname, m.gname) == (FIXED_MTIME, 0, 0, "", ""), m.name
        assert m.mode in (0o644, 0o755), (m.name, oct(m.mode))
    summary.append(f"release: {name}, {len(members)} files, {len(first)} bytes, the same twice")


def git_files() -> set[str]:
    out = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard", "-z"],
        cwd=REPO,
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    return {p for p in out.split("\0") if p and (REPO / p).is_file()}


# Label("//pkg:file") and Label("//pkg/sub:file") in the rules: files that repository rules read.
LABEL = re.compile(r'Label\("//([\w/]*):([\w./-]+)"\)')


def test_the_archive_holds_what_a_build_reads_and_nothing_else(release: tuple[Path, str]) -> None:
    out, version = release
    data = (out / f"rules_aten-{version}.tar.gz").read_bytes()
    prefix = f"rules_aten-{version}/"
    members = {m.name.removeprefix(prefix): m for m in archive_members(data)}
    tracked = git_files()
    for path in members:
        assert not path.startswith(DEVELOPMENT_ONLY), path
        assert path in tracked, path
    # Every file of the rules, the generator and their BUILD files.
    needed = {
        p
        for p in tracked
        if p.startswith(("rules/", "tool/atengen/"))
        or (p.split("/")[0] in ("rules", "tool", "third_party") and p.endswith("BUILD.bazel"))
    }
    needed |= {"BUILD.bazel", "WORKSPACE", "MODULE.bazel", "LICENSE", "NOTICE", "README.md"}
    needed |= {"aten_ops.txt", "tool/atengen_main.py"}
    # The files the .bzl files name by Label (the lock, the patch, torch_probe.py, ...).
    labelled = set()
    for bzl in (REPO / "rules").rglob("*.bzl"):
        for package, name in LABEL.findall(bzl.read_text()):
            path = f"{package}/{name}" if package else name
            if path in tracked:
                labelled.add(path)
    assert {
        "third_party/requirements_tool.lock",
        "third_party/rules_cc/use_cpp_toolchain.patch",
        "tool/torch_probe.py",
        "tool/atengen/facts/torch_facts.py",
    } <= labelled, labelled
    needed |= labelled
    assert needed <= members.keys(), sorted(needed - members.keys())
    assert any(p.startswith("tool/atengen/templates/") for p in members)
    for path, member in members.items():
        executable = (REPO / path).stat().st_mode & 0o100
        assert member.mode == (0o755 if executable else 0o644), path


def test_the_manifest_ships_tool_whole_and_no_developer_tooling(release: tuple[Path, str]) -> None:
    # tool/ holds only what ships, so the manifest names it in one line, and a script added there
    # ships without a manifest edit; developer tooling lives in devtools/, which never ships.
    lines = (REPO / "devtools" / "dist" / "MANIFEST").read_text().splitlines()
    entries = [line for line in lines if line and not line.startswith("#")]
    assert [e for e in entries if e.lstrip("!").startswith("tool")] == ["tool/"], entries
    out, version = release
    data = (out / f"rules_aten-{version}.tar.gz").read_bytes()
    prefix = f"rules_aten-{version}/"
    shipped = {m.name.removeprefix(prefix) for m in archive_members(data)}
    assert {p for p in shipped if p.startswith("tool/")} == {
        p for p in git_files() if p.startswith("tool/")
    }
    assert not [p for p in shipped if p.startswith("devtools/")]


def test_the_notes_carry_the_readme_http_archive_and_the_bazel_dep(
    release: tuple[Path, str],
) -> None:
    out, version = release
    name = f"rules_aten-{version}.tar.gz"
    sha256 = hashlib.sha256((out / name).read_bytes()).hexdigest()
    assert (out / f"{name}.sha256").read_text() == f"{sha256}  {name}\n"
    notes = (out / f"rules_aten-{version}.release_notes.md").read_text()
    url = f"https://github.com/OWNER/rules_aten/releases/download/v{version}/{name}"
    # The README's WORKSPACE block as written, without its workspace() line, given url and sha256.
    workspace = archive_workspace(url, sha256)
    first, rest = workspace.split("\n\n", 1)
    assert first == 'workspace(name = "my_ops")', first
    assert f"```python\n{rest}```" in notes, notes
    assert f'strip_prefix = "rules_aten-{version}",' in notes
    assert f'```python\nbazel_dep(name = "rules_aten", version = "{version}")\n```' in notes
    # CHANGELOG.md's entry for the version, as written.
    changelog = (REPO / "CHANGELOG.md").read_text()
    entry = changelog.split(f"\n## {version}\n", 1)[1].split("\n## ", 1)[0].strip()
    assert entry and entry in notes
    assert notes.startswith(f"# rules_aten {version}\n\n{entry}\n")
    # The URL and sha256 are in the notes alone, and CHANGELOG.md and the README say so.
    assert sha256 not in changelog and "sha256 are not here" in changelog.split("\n## ", 1)[0]
    readme = " ".join((REPO / "README.md").read_text().split())  # wrapped anywhere
    assert "take `urls` and `sha256` from the release notes" in readme


def test_a_url_of_its_own(tmp_path: Path) -> None:
    version = module_version()
    result = make_dist(tmp_path, version, "--url=https://example.org/r/{version}.tgz")
    assert result.returncode == 0, result.stderr
    notes = (tmp_path / f"rules_aten-{version}.release_notes.md").read_text()
    assert f'urls = ["https://example.org/r/{version}.tgz"],' in notes, notes


@pytest.mark.parametrize(
    ("version", "message"),
    [
        ("9.9.9", "MODULE.bazel's version is"),
        ("v1", "is not a version"),
    ],
)
def test_a_version_that_is_not_the_module_s_is_refused(
    tmp_path: Path, version: str, message: str
) -> None:
    result = make_dist(tmp_path, version)
    assert result.returncode == 1, result
    assert result.stderr.startswith("dist: error: ") and message in result.stderr, result.stderr
    assert len(result.stderr.splitlines()) == 1, result.stderr
    assert not any(tmp_path.iterdir())


BCR = REPO / ".bcr"
# `name = "..."` of the examples' aten_codegen and external_backend_codegen targets.
# The libraries' targets (not, say, an aten_wheel of one of them).
TARGET_NAME = re.compile(
    r'^(?:aten_codegen|external_backend_codegen)\(\n    name = "(\w+)",$', re.MULTILINE
)


def test_the_bcr_templates_are_in_the_registry_s_form() -> None:
    """.bcr/ as publish-to-bcr reads it: the metadata and source templates, and a presubmit whose
    test module (examples/, a module of its own) builds every example's library."""
    metadata = json.loads((BCR / "metadata.template.json").read_text())
    assert set(metadata) == {"homepage", "maintainers", "repository", "versions", "yanked_versions"}
    assert metadata["versions"] == [] and metadata["yanked_versions"] == {}
    assert all(r.startswith("github:") for r in metadata["repository"]), metadata
    source = json.loads((BCR / "source.template.json").read_text())
    assert set(source) == {"integrity", "strip_prefix", "url"}, source
    # The archive's top directory and name, as make_dist.py writes them, with REPO=rules_aten.
    version = module_version()
    assert (
        source["strip_prefix"].replace("{REPO}", "rules_aten").replace("{VERSION}", version)
        == f"rules_aten-{version}"
    )
    assert source["url"].endswith("/{REPO}-{VERSION}.tar.gz"), source

    presubmit = yaml.safe_load((BCR / "presubmit.yml").read_text())
    module = presubmit["bcr_test_module"]
    module_dir = REPO / module["module_path"]
    module_file = (module_dir / "MODULE.bazel").read_text()
    assert 'bazel_dep(name = "rules_aten", version = "0.0.0")' in module_file
    assert 'module_name = "rules_aten",\n    path = "..",' in module_file
    for task in (*presubmit["tasks"].values(), *module["tasks"].values()):
        assert {"platform", "bazel"} <= task.keys(), task
    (task,) = module["tasks"].values()
    built = set(task["build_targets"])
    examples = sorted(p.parent for p in module_dir.glob("*/BUILD.bazel"))
    assert [p.name for p in examples] == [
        "cuda_ops",
        "lazy_backend",
        "privateuse1_backend",
        "stable_ops",
    ]
    expected = {
        f"//{example.name}:lib{name}.so"
        for example in examples
        for name in TARGET_NAME.findall((example / "BUILD.bazel").read_text())
    }
    assert built == expected, (built, expected)
