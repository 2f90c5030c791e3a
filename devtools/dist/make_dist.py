"""Makes rules_aten's archive, its sha256 and the notes of its GitHub release (`./dev dist`).

    make_dist.py VERSION [--out DIR] [--worktree] [--url URL]

Writes into DIR (default dist/):

    rules_aten-VERSION.tar.gz          the files devtools/dist/MANIFEST names, under rules_aten-VERSION/
    rules_aten-VERSION.tar.gz.sha256   its sha256, as `sha256sum` prints it
    rules_aten-VERSION.release_notes.md
                                       CHANGELOG.md's entry for VERSION, the WORKSPACE snippet
                                       (http_archive with sha256 and strip_prefix) and the
                                       bazel_dep line

The files are the tracked files of the commit HEAD (--worktree: the working tree's files that git
tracks or does not ignore, uncommitted edits included, as the tests use it). VERSION must be
MODULE.bazel's version and have an entry `## VERSION` in CHANGELOG.md; README.md's
http_archive must strip `rules_aten-VERSION`.

The archive is the same bytes for the same files: entries sorted by path, no directory entries,
mtime fixed, uid and gid 0 without user or group names, mode 0644 (0755 for executables), gzip
without a file name and with mtime 0. --url is the download URL the notes name ({version} is
replaced; default: the GitHub release asset of tag v{version}).
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import io
import re
import subprocess
import sys
import tarfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent.parent
MANIFEST = "devtools/dist/MANIFEST"
NAME = "rules_aten"
# 1980-01-01 00:00:00 UTC, the earliest time a zip file can hold: a fixed mtime for every entry.
FIXED_MTIME = 315532800
DEFAULT_URL = (
    "https://github.com/OWNER/rules_aten/releases/download/v{version}/rules_aten-{version}.tar.gz"
)
VERSION = re.compile(r"^\d+\.\d+\.\d+(?:-[0-9A-Za-z.]+)?$")
MODULE_VERSION = re.compile(r'module\(\s*name = "rules_aten",\s*version = "([^"]+)"', re.DOTALL)
README_STRIP_PREFIX = re.compile(r'strip_prefix = "rules_aten-([^"]+)"')


class DistError(Exception):
    pass


def _git(*args: str) -> bytes:
    return subprocess.run(["git", *args], cwd=REPO, check=True, capture_output=True).stdout


class Source:
    """The tracked files of HEAD, or the working tree's files git does not ignore: their paths,
    bytes and modes."""

    def __init__(self, worktree: bool) -> None:
        self.worktree = worktree
        self.modes: dict[str, int] = {}
        if worktree:
            out = _git("ls-files", "--cached", "--others", "--exclude-standard", "-z").decode()
            for path in out.split("\0"):
                full = REPO / path
                if path and full.is_file() and not full.is_symlink():
                    self.modes[path] = 0o755 if full.stat().st_mode & 0o100 else 0o644
        else:
            for line in _git("ls-tree", "-r", "-z", "HEAD").decode().split("\0"):
                if not line:
                    continue
                meta, path = line.split("\t", 1)
                mode, kind, _ = meta.split()
                if kind == "blob" and mode in ("100644", "100755"):
                    self.modes[path] = 0o755 if mode == "100755" else 0o644

    def read(self, path: str) -> bytes:
        if path not in self.modes:
            raise DistError(f"{path} is not a tracked file")
        if self.worktree:
            return (REPO / path).read_bytes()
        return _git("show", f"HEAD:{path}")


def manifest_files(source: Source) -> list[str]:
    """The sorted paths devtools/dist/MANIFEST selects among the source's files."""
    selected: set[str] = set()
    for number, raw in enumerate(source.read(MANIFEST).decode().splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        exclude = line.startswith("!")
        entry = line[1:] if exclude else line
        if entry.endswith("/"):
            matched = {p for p in source.modes if p.startswith(entry)}
        else:
            matched = {entry} & source.modes.keys()
        if not matched:
            raise DistError(f"{MANIFEST}:{number}: {entry} names no tracked file")
        if exclude:
            selected -= matched
        else:
            selected |= matched
    return sorted(selected)


def make_archive(source: Source, files: list[str], version: str) -> bytes:
    prefix = f"{NAME}-{version}"
    tar_bytes = io.BytesIO()
    with tarfile.open(fileobj=tar_bytes, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for path in files:
            data = source.read(path)
            info = tarfile.TarInfo(f"{prefix}/{path}")
            info.size = len(data)
            info.mtime = FIXED_MTIME
            info.mode = source.modes[path]
            info.uid = info.gid = 0
            info.uname = info.gname = ""
            tar.addfile(info, io.BytesIO(data))
    out = io.BytesIO()
    with gzip.GzipFile(filename="", mode="wb", fileobj=out, compresslevel=9, mtime=0) as gz:
        gz.write(tar_bytes.getvalue())
    return out.getvalue()


def changelog_entry(source: Source, version: str) -> str:
    """The text of CHANGELOG.md under `## VERSION` (up to the next `## `), without the heading."""
    text = source.read("CHANGELOG.md").decode()
    match = re.search(
        rf"^## {re.escape(version)}(?: .*)?\n(.*?)(?=^## |\Z)", text, re.MULTILINE | re.DOTALL
    )
    if not match:
        raise DistError(f"CHANGELOG.md has no entry `## {version}`: add one")
    return match.group(1).strip()


def check_version(source: Source, version: str) -> None:
    if not VERSION.match(version):
        raise DistError(f"{version!r} is not a version (MAJOR.MINOR.PATCH[-SUFFIX])")
    match = MODULE_VERSION.search(source.read("MODULE.bazel").decode())
    if not match or match.group(1) != version:
        found = match.group(1) if match else "none"
        raise DistError(
            f"MODULE.bazel's version is {found}, not {version}: set it to {version} and commit"
        )
    prefixes = set(README_STRIP_PREFIX.findall(source.read("README.md").decode()))
    if prefixes != {version}:
        raise DistError(
            f"README.md's http_archive strips rules_aten-{', rules_aten-'.join(sorted(prefixes))}"
            f", not rules_aten-{version}: update the quickstart"
        )


def workspace_snippet(url: str, sha256: str, version: str) -> str:
    return f"""load("@bazel_tools//tools/build_defs/repo:http.bzl", "http_archive")

http_archive(
    name = "rules_aten",
    sha256 = "{sha256}",
    strip_prefix = "rules_aten-{version}",
    urls = ["{url}"],
)

load(
    "@rules_aten//rules:repositories.bzl",
    "rules_aten_debian_dependencies",
    "rules_aten_dependencies",
    "rules_aten_register_toolchains",
)

# Only on an offline machine with Debian's bazel-* packages; elsewhere declare
# platforms, bazel_skylib, rules_cc and rules_python yourself (see the README).
rules_aten_debian_dependencies()
rules_aten_dependencies()
rules_aten_register_toolchains()
"""


def release_notes(version: str, entry: str, url: str, sha256: str, size: int, count: int) -> str:
    return f"""# rules_aten {version}

{entry}

## Using it: Bzlmod

For Bazel 7 and newer (tested with 7.7.1 and `--noenable_workspace`), in `MODULE.bazel`:

```python
bazel_dep(name = "rules_aten", version = "{version}")
```

then `use_extension` and `use_repo(rules_aten, "torch")` as in the README's quickstart.

## Using it: WORKSPACE

Tested with Bazel 4.2.3 and 7.7.1. In `WORKSPACE`:

```python
{workspace_snippet(url, sha256, version).rstrip()}
```

`.bazelrc` needs `build --cxxopt=-std=c++20`; see the README's quickstart.

## The archive

`rules_aten-{version}.tar.gz`: {count} files, {size} bytes, sha256 `{sha256}`.
"""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="./dev dist", description=__doc__.split("\n")[0], allow_abbrev=False
    )
    parser.add_argument("version")
    parser.add_argument("--out", type=Path, default=REPO / "dist")
    parser.add_argument("--worktree", action="store_true", help="the working tree, not HEAD")
    parser.add_argument("--url", default=DEFAULT_URL)
    args = parser.parse_args(argv)
    try:
        source = Source(args.worktree)
        check_version(source, args.version)
        entry = changelog_entry(source, args.version)
        files = manifest_files(source)
        archive = make_archive(source, files, args.version)
    except DistError as e:
        print(f"dist: error: {e}", file=sys.stderr)
        return 1
    sha256 = hashlib.sha256(archive).hexdigest()
    url = args.url.replace("{version}", args.version)
    name = f"{NAME}-{args.version}.tar.gz"
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / name).write_bytes(archive)
    (args.out / f"{name}.sha256").write_text(f"{sha256}  {name}\n")
    notes = release_notes(args.version, entry, url, sha256, len(archive), len(files))
    (args.out / f"{NAME}-{args.version}.release_notes.md").write_text(notes)
    print(f"{args.out / name}: {len(files)} files, {len(archive)} bytes, sha256 {sha256}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
