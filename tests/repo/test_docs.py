"""The Markdown documentation: every relative link points at a file that exists (and at a
heading that exists, for `file.md#anchor` links), docs/pipeline.svg was drawn from the current
docs/pipeline.dot, no paragraph is over 150 words and no document holds a path of one machine."""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
DOCS = [
    REPO / "README.md",
    REPO / "DEVELOPING.md",
    REPO / "RELEASING.md",
    *sorted((REPO / "docs").glob("*.md")),
    *sorted((REPO / "docs" / "developing").glob("*.md")),
]

FENCE = re.compile(r"^```.*?^```", re.MULTILINE | re.DOTALL)
INLINE_CODE = re.compile(r"`[^`\n]*`")
# [text](target) and ![alt](target); the target ends at whitespace or ')'.
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")
HEADING = re.compile(r"^#{1,6}\s+(.*?)\s*#*\s*$", re.MULTILINE)
SVG_SOURCE_SUM = re.compile(r"<!-- Generated from (\w+)\.dot \(sha256 ([0-9a-f]{64})\)")


def prose(text: str) -> str:
    """The text without code blocks, where link syntax is not a link."""
    return FENCE.sub("", text)


def github_anchor(heading: str) -> str:
    """The id GitHub gives a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = heading.replace("`", "").strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(path: Path) -> set[str]:
    found: set[str] = set()
    for heading in HEADING.findall(prose(path.read_text())):
        anchor = github_anchor(heading)
        # GitHub numbers repeated headings: x, x-1, x-2, ...
        n, unique = 0, anchor
        while unique in found:
            n += 1
            unique = f"{anchor}-{n}"
        found.add(unique)
    return found


def relative_links(path: Path) -> list[str]:
    text = INLINE_CODE.sub("", prose(path.read_text()))
    return [t for t in LINK.findall(text) if not re.match(r"[a-z][a-z0-9+.-]*:", t)]


def test_the_documents_exist() -> None:
    names = {p.relative_to(REPO).as_posix() for p in DOCS}
    assert {"README.md", "DEVELOPING.md", "docs/rules.md", "docs/design.md"} <= names, names
    license_text = (REPO / "LICENSE").read_text()
    assert "Apache License" in license_text and "Version 2.0, January 2004" in license_text
    assert "Copyright The rules_aten authors" in (REPO / "NOTICE").read_text()


def test_github_anchor() -> None:
    assert github_anchor("`aten_codegen`") == "aten_codegen"
    assert github_anchor("Repositories and environment variables") == (
        "repositories-and-environment-variables"
    )
    assert github_anchor("Worked example: `examples/privateuse1_backend/`") == (
        "worked-example-examplesprivateuse1_backend"
    )


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: p.relative_to(REPO).as_posix())
def test_relative_links_resolve(doc: Path) -> None:
    links = relative_links(doc)
    broken = []
    for link in links:
        target, _, anchor = link.partition("#")
        file = (doc.parent / target).resolve() if target else doc
        if not file.exists():
            broken.append(f"{link}: no file {file}")
        elif anchor and file.suffix == ".md" and anchor not in anchors(file):
            broken.append(f"{link}: no heading #{anchor} in {file.relative_to(REPO)}")
    assert not broken, f"{doc.relative_to(REPO)}:\n" + "\n".join(broken)


def test_readme_links_the_split_documents() -> None:
    links = {link.partition("#")[0] for link in relative_links(REPO / "README.md")}
    assert {"docs/rules.md", "docs/design.md", "DEVELOPING.md", "docs/pipeline.svg"} <= links


@pytest.mark.parametrize("name", ["pipeline"])
def test_each_svg_was_drawn_from_its_dot_file(name: str) -> None:
    source = (REPO / "docs" / f"{name}.dot").read_bytes()
    svg = (REPO / "docs" / f"{name}.svg").read_text()
    recorded = SVG_SOURCE_SUM.search(svg)
    assert recorded, f"docs/{name}.svg has no source checksum; run docs/render_pipeline.sh"
    assert recorded.groups() == (name, hashlib.sha256(source).hexdigest()), (
        f"docs/{name}.dot changed since docs/{name}.svg was drawn; run docs/render_pipeline.sh"
    )
    assert svg.rstrip().endswith("</svg>")


def test_developing_names_every_test_folder() -> None:
    """docs/developing/tests.md has a row for each folder that holds test modules, and no module
    lies in tests/ itself: its folder gives its tier (tests/support/tiers.py)."""
    text = (REPO / "docs" / "developing" / "tests.md").read_text()
    tests = REPO / "tests"
    assert sorted(p.name for p in tests.glob("test_*.py")) == []
    folders = sorted({p.parent.relative_to(REPO).as_posix() for p in tests.rglob("test_*.py")})
    assert len(folders) > 10, folders
    assert [f for f in folders if f"`{f}/`" not in text] == []


# `examples/<path>:<line>` (`<name>`): the line of the file that does what the text says, and
# the name that line holds.
EXAMPLE_POINTER = re.compile(r"`(examples/[^`\s:]+):(\d+)`(?:\s+\(`([^`]+)`\))?")


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: p.name)
def test_example_pointers_point_at_what_they_name(doc: Path) -> None:
    """Each `examples/...:LINE` in a document is followed by (`NAME`), and that line of the file
    holds NAME: an edit of the example that moves it fails here, not silently in the docs."""
    wrong = []
    for path, line, name in EXAMPLE_POINTER.findall(doc.read_text()):
        file = REPO / path
        if not name:
            wrong.append(f"{path}:{line}: no (`name`) after the pointer")
        elif not file.is_file():
            wrong.append(f"{path}:{line}: no such file")
        else:
            lines = file.read_text().splitlines()
            number = int(line)
            if not 1 <= number <= len(lines) or name not in lines[number - 1]:
                held = lines[number - 1].strip() if 1 <= number <= len(lines) else "(past the end)"
                wrong.append(f"{path}:{line}: `{name}` is not on that line, which holds {held!r}")
    assert wrong == [], "\n".join(wrong)


def test_the_privateuse1_checklist_points_into_the_example() -> None:
    text = (REPO / "docs" / "privateuse1.md").read_text()
    section = text[text.index("## What a PrivateUse1 backend must provide") :]
    section = section[: section.index("## Worked example")]
    pointed = {(p, n) for p, _, n in EXAMPLE_POINTER.findall(section)}
    for name in (
        "REGISTER_ALLOCATOR",
        "C10_REGISTER_GUARD_IMPL",
        "RegisterPrivateUse1HooksInterface",
        "empty_generic",
        "resize__symint",
        "at::native::view",
        "_register_device_module",
    ):
        assert any(n == name for _, n in pointed), (name, sorted(pointed))
    assert "{ ... }" not in section


# docs/rules.md's table of what a SymInt argument arrives as: a row per schema type, the kernel
# types without and with `_symint`.
_SYMINT_ROW = re.compile(r"^\| `(SymInt[^`]*)` \| `([^`]+)` \| `([^`]+)` \|$", re.M)


def test_the_symint_table_is_what_the_generator_declares() -> None:
    from atengen.api.cpp_types import TypeOptions, argument_type
    from atengen.model.schema_types import parse_type

    text = (Path(__file__).resolve().parents[2] / "docs" / "rules.md").read_text()
    rows = _SYMINT_ROW.findall(text.split("### Kernel signatures", 1)[1].split("\n### ", 1)[0])
    assert len(rows) == 4, rows
    for schema, plain, symint in rows:
        t = parse_type(schema)
        declared = [
            argument_type(t, mutable=False, opts=TypeOptions(symint=s)) for s in (False, True)
        ]
        assert declared == [plain, symint], (schema, declared)


# A paragraph of the developer documents is at most this many words: a longer one is split.
MAX_PARAGRAPH_WORDS = 150
LIST_ITEM = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+")
DEVELOPER_DOCS = [
    REPO / "DEVELOPING.md",
    REPO / "RELEASING.md",
    *sorted((REPO / "docs").rglob("*.md")),
]


def paragraphs(text: str) -> list[tuple[int, str]]:
    """(first line, text) of each paragraph: a run of non-blank lines outside fenced code, with
    headings, table rows and HTML comments left out, and each list item a paragraph of its own."""
    found: list[tuple[int, str]] = []
    lines: list[str] = []
    start, fenced = 0, False

    def end() -> None:
        if lines:
            found.append((start, " ".join(lines)))
            lines.clear()

    for number, line in enumerate(text.splitlines(), 1):
        stripped = line.strip()
        if stripped.startswith(("```", "~~~")):
            end()
            fenced = not fenced
        elif fenced or not stripped or stripped.startswith(("|", "#", "<!--")):
            end()
        else:
            if LIST_ITEM.match(line):
                end()
            if not lines:
                start = number
            lines.append(stripped)
    end()
    return found


def test_paragraphs_finds_paragraphs_and_list_items() -> None:
    text = "a b\nc\n\n```\nx y z\n```\n- one\n  two\n- three\n| t | u |\n\nd"
    assert paragraphs(text) == [(1, "a b c"), (7, "- one two"), (9, "- three"), (12, "d")]


def test_no_paragraph_is_over_the_word_limit() -> None:
    long = [
        f"{doc.relative_to(REPO).as_posix()}:{line}: {len(words.split())} words"
        for doc in DEVELOPER_DOCS
        for line, words in paragraphs(doc.read_text())
        if len(words.split()) > MAX_PARAGRAPH_WORDS
    ]
    assert long == [], f"over {MAX_PARAGRAPH_WORDS} words; split them:\n" + "\n".join(long)


# Paths that exist on one machine only: a checkout under /work/, a home directory (`~/` says it
# for every machine; /home/me/ is the documents' example user) and, in the recorded results,
# any scratch path under /tmp/ (`$TMPDIR/` there). The documents' own /tmp/ examples may stay.
MACHINE_PATH = re.compile(r"/work/|/root/|/Users/\w|/home/(?!me/)\w")
SCRATCH_PATH = re.compile(r"(?<![\w$}])/tmp/")
EVIDENCE = [
    REPO / d / name for d in ("benchmarks", "conformance") for name in ("RESULTS.md", "history.md")
]


def test_no_document_holds_a_path_of_one_machine() -> None:
    found = []
    for doc in [*DEVELOPER_DOCS, REPO / "README.md", REPO / "CHANGELOG.md", *EVIDENCE]:
        patterns = [MACHINE_PATH, SCRATCH_PATH] if doc in EVIDENCE else [MACHINE_PATH]
        for number, line in enumerate(doc.read_text().splitlines(), 1):
            for pattern in patterns:
                for match in pattern.finditer(line):
                    found.append(f"{doc.relative_to(REPO).as_posix()}:{number}: {match.group()}")
    assert found == [], "paths of one machine (use ~/, $TMPDIR/ or the repository's):\n" + (
        "\n".join(found)
    )


def test_the_machine_path_patterns_catch_what_they_are_for() -> None:
    text = "/work/main/x /root/.cache /home/alice/x /home/me/ws ~/.cache /usr/local/cuda"
    assert [m.group() for m in MACHINE_PATH.finditer(text)] == ["/work/", "/root/", "/home/a"]
    assert SCRATCH_PATH.findall("--workdir=/tmp/x $TMPDIR/y ${TMPDIR}/z") == ["/tmp/"]


def test_dev_help_lists_every_command_on_one_line() -> None:
    """`./dev help` prints dev's header, one line per command; the details are in
    docs/developing/commands.md, which names every command too."""
    import subprocess

    dev = (REPO / "dev").read_text()
    arms = re.findall(r"^  ([a-z][a-z0-9-]*)(?: \|[^)]*)?\) ", dev, re.M)
    assert {"setup", "test", "docs", "gpu-bundle"} <= set(arms), arms
    shown = subprocess.run(
        ["bash", str(REPO / "dev"), "--help"], capture_output=True, text=True, check=True
    ).stdout
    listed = {word for line in shown.splitlines() for word in line.split() if word.isascii()}
    details = (REPO / "docs" / "developing" / "commands.md").read_text()
    for arm in arms:
        assert arm in listed, f"./dev --help does not list {arm}"
        assert f"`./dev {arm}" in details, f"docs/developing/commands.md does not describe {arm}"
    assert len(shown.splitlines()) <= 30, shown


def test_developing_is_a_page_a_newcomer_reads_through() -> None:
    """DEVELOPING.md stays short (at most 150 lines and 8 kB, the size of the developer guides
    of the rule sets rules_aten sits beside) and says where each of the usual changes goes, on
    the Python side and the Bazel side."""
    text = (REPO / "DEVELOPING.md").read_text()
    assert len(text.splitlines()) <= 150, len(text.splitlines())
    assert len(text.encode()) <= 8 * 1024, len(text.encode())
    where = text.split("## Where things go", 1)
    assert len(where) == 2, "DEVELOPING.md has no 'Where things go' section"
    section = where[1].split("\n## ", 1)[0]
    for change in ("A new product", "A dispatch key", "A template", "A torch release"):
        assert f"**{change}.**" in section, f"'Where things go' says nothing of {change.lower()}"
    assert "Bazel" in section and "rules/private/" in section and "tool/atengen/" in section
