"""docs/rules.md against the code it describes: its generated tables equal what
devtools/docs/gen_rules_md.py makes of the .bzl files' docstrings (`./dev docs` rewrites them), the
generator stops with one line on what it cannot read, and the numbers the prose gives for the
generator's limits are the constants the code uses."""

from __future__ import annotations

import importlib.util
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from atengen import errors, input_files
from atengen.facts import torch_facts
from atengen.pipelines import aten as aten_pipeline
from atengen.render import parallel, shards

REPO = Path(__file__).resolve().parents[2]
GENERATOR = REPO / "devtools" / "docs" / "gen_rules_md.py"
PROSE = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
BZL = sorted((REPO / "rules").glob("**/*.bzl"))


def load_generator():
    """devtools/docs/gen_rules_md.py, a script, imported (registered first: its dataclasses look
    their module up while they are made)."""
    if "gen_rules_md" not in sys.modules:
        spec = importlib.util.spec_from_file_location("gen_rules_md", GENERATOR)
        assert spec and spec.loader
        module = importlib.util.module_from_spec(spec)
        sys.modules["gen_rules_md"] = module
        spec.loader.exec_module(module)
    return sys.modules["gen_rules_md"]


def test_the_generated_tables_of_rules_md_are_current() -> None:
    generator = load_generator()
    text = (REPO / "docs" / "rules.md").read_text()
    new, stale = generator.regenerate(text)
    assert not stale, (
        f"docs/rules.md is stale: its generated blocks {stale} differ from the docstrings of "
        "the .bzl files; run ./dev docs"
    )
    assert new == text


def load_layers_generator():
    """devtools/docs/gen_layers.py, a script, imported."""
    spec = importlib.util.spec_from_file_location(
        "gen_layers", REPO / "devtools" / "docs" / "gen_layers.py"
    )
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_layer_graph_and_list_are_current() -> None:
    """docs/layers.dot and atengen's list of layers are what devtools/docs/gen_layers.py makes of
    ALLOWED and DESCRIPTIONS in tests/repo/test_layering.py: a change of those needs `./dev docs`."""
    generator = load_layers_generator()
    stale = [
        path for path, new in generator.outputs(REPO).items() if (REPO / path).read_text() != new
    ]
    assert stale == [], f"{stale} differ from tests/repo/test_layering.py's ALLOWED; run ./dev docs"


def test_the_layer_graph_follows_allowed(tmp_path: Path) -> None:
    """An edit of ALLOWED changes the generated graph (so the test above would fail)."""
    generator = load_layers_generator()
    for path in (generator.SOURCE, generator.PACKAGE):
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path).write_text((REPO / path).read_text())
    source = tmp_path / generator.SOURCE
    source.write_text(source.read_text().replace('"lazy": _BASE | {"backend"}', '"lazy": _BASE'))
    dot = generator.outputs(tmp_path)[generator.DOT]
    assert "  lazy -> api;" in dot and "  lazy -> backend;" not in dot
    assert dot != generator.outputs(REPO)[generator.DOT]


def test_every_public_symbol_has_a_row() -> None:
    """A new export of rules/defs.bzl shows up in the reference without an edit of it."""
    generator = load_generator()
    text = (REPO / "docs" / "rules.md").read_text()
    for name in generator.exported_symbols():
        assert f"| `{name}` |" in text, name


@pytest.fixture
def checkout(tmp_path: Path) -> Path:
    """What the generator reads (the .bzl files, the documents its links name) and the generator,
    copied: edits stay in the copy."""
    for path in [*BZL, *PROSE, GENERATOR]:
        copy = tmp_path / path.relative_to(REPO)
        copy.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, copy)
    return tmp_path


def run_generator(checkout: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(checkout / "devtools" / "docs" / "gen_rules_md.py"), *args],
        capture_output=True,
        text=True,
        timeout=60,
    )


def edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert text.count(old) == 1, old
    path.write_text(text.replace(old, new))


def test_an_edited_docstring_makes_rules_md_stale_until_regenerated(checkout: Path) -> None:
    edit(
        checkout / "rules/private/rules/codegen.bzl",
        "      cuda_copts: extra nvcc options for `cuda_srcs`.",
        "      cuda_copts: more nvcc options for `cuda_srcs`.",
    )
    stale = run_generator(checkout, "--check")
    assert stale.returncode == 1 and stale.stdout == "", stale
    assert stale.stderr.splitlines() == [
        "docs/rules.md is stale: its generated blocks ['aten_codegen args'] differ from the .bzl "
        "files' docstrings; run ./dev docs"
    ]
    written = run_generator(checkout)
    assert written.returncode == 0, written.stderr
    assert "| More nvcc options for `cuda_srcs`. |" in (checkout / "docs/rules.md").read_text()
    assert run_generator(checkout, "--check").returncode == 0


# (file, text, its replacement; the start of the one error line, and a part of its message)
BAD_INPUTS = {
    "undocumented argument": (
        "rules/private/rules/codegen.bzl",
        "      tags: tags of the targets.\n",
        "",
        "rules/private/rules/codegen.bzl:",
        "error: aten_codegen's docstring does not document ['tags']",
    ),
    "argument the signature lacks": (
        "rules/private/rules/backend.bzl",
        "      copts: extra compiler options.\n",
        "      copts: extra compiler options.\n      coptz: a typo.\n",
        "rules/private/rules/backend.bzl:",
        "error: external_backend_codegen's docstring documents ['coptz'], which its signature",
    ),
    "bare angle brackets": (
        "rules/private/common/providers.bzl",
        "`<ns>/ops/<root>_native.h`",
        "<ns>/ops/<root>_native.h",
        "rules/private/common/providers.bzl:",
        "error: AtenCodegenInfo.headers: '<ns>/ops/<root>_native.h of cu'... outside backticks",
    ),
    "unclosed code span": (
        "rules/private/rules/codegen.bzl",
        "extra nvcc options for `cuda_srcs`.",
        "extra nvcc options for `cuda_srcs.",
        "rules/private/rules/codegen.bzl:",
        "error: aten_codegen(cuda_copts): a code span is not closed",
    ),
    "broken link": (
        "rules/private/rules/codegen.bzl",
        "(docs/design.md#precompiled-headers)",
        "(docs/desing.md#precompiled-headers)",
        "rules/private/rules/codegen.bzl:",
        "error: aten_codegen(pch): the link (docs/desing.md#precompiled-headers) names no file",
    ),
    "Default: beside a signature default": (
        "rules/private/rules/codegen.bzl",
        "      cuda_copts: extra nvcc options for `cuda_srcs`.",
        "      cuda_copts: extra nvcc options for `cuda_srcs`. Default: none.",
        "rules/private/rules/codegen.bzl:",
        "error: aten_codegen(cuda_copts): `Default: none` in the docstring, but the signature's",
    ),
    "syntax error": (
        "rules/private/rules/model_check.bzl",
        "def _aten_model_check_impl(ctx):",
        "def _aten_model_check_impl(ctx)",
        "rules/private/rules/model_check.bzl:5:",
        "error: cannot parse it: expected ':'",
    ),
    "attrs beyond the evaluator": (
        "rules/private/rules/model_check.bzl",
        "attrs = generator_attrs(default_to_torch = True),",
        "attrs = {k: v for k, v in generator_attrs(True).items() if k},",
        "rules/private/rules/model_check.bzl:",
        "error: cannot evaluate",
    ),
    "loaded name that does not exist": (
        "rules/defs.bzl",
        '_aten_model_check = "aten_model_check"',
        '_aten_model_check = "aten_model_chek"',
        "rules/private/rules/model_check.bzl:",
        "error: 'aten_model_chek' is neither defined nor loaded here",
    ),
    "unknown block": (
        "docs/rules.md",
        "<!-- generated: providers -->",
        "<!-- generated: provider -->",
        "docs/rules.md:",
        "error: generated blocks: unknown ['provider'], repeated [], missing ['providers']",
    ),
    "unclosed block": (
        "docs/rules.md",
        "<!-- generated: providers -->\n",
        "<!-- generated: providers -->\n<!-- generated: more -->\n",
        "docs/rules.md:",
        "error: 10 `<!-- generated: ID -->` and 9 `<!-- end generated -->` lines",
    ),
}


@pytest.mark.parametrize("case", BAD_INPUTS, ids=list(BAD_INPUTS))
def test_what_the_generator_cannot_read_is_one_line(
    checkout: Path, case: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """In-process, on the copy: main() returns 1 after one line on stderr (so the script exits
    with it, without a traceback) and writes nothing."""
    generator = load_generator()
    monkeypatch.setattr(generator, "REPO", checkout)
    path, old, new, where, message = BAD_INPUTS[case]
    edit(checkout / path, old, new)
    before = (checkout / "docs/rules.md").read_text()
    for args in ([], ["--check"]):
        generator._MODULES.clear()  # the files read: the copy's, edited
        assert generator.main(args) == 1
        out, err = capsys.readouterr()
        lines = err.splitlines()
        assert out == "" and len(lines) == 1, (out, lines)
        assert lines[0].startswith(where) and message in lines[0], lines
    generator._MODULES.clear()
    assert (checkout / "docs/rules.md").read_text() == before


# A number the prose gives for one of the generator's limits: the pattern that finds it in the
# documents and the .bzl docstrings, and the constant it must equal. Each pattern must match
# somewhere, so that a rewording drops the check visibly rather than silently.
MIB = 1024 * 1024
NUMBERS_IN_PROSE = {
    "operators per auto shard": (
        r"at most (\d+) (?:operators|on average|of that key's operators)",
        shards.AUTO_OPERATORS_PER_BUCKET,
    ),
    "jobs of --jobs=auto": (r"one per CPU up to (\d+)", parallel.MAX_AUTO_JOBS),
    "functions before --jobs forks": (
        r"selections of ([\d,]+) functions or more",
        aten_pipeline.PARALLEL_MIN_FUNCTIONS,
    ),
    "errors shown": (r"past the first (\d+)", errors.MAX_SHOWN_ERRORS),
    "characters of a message": (r"longer than ([\d,]+) characters", errors.MAX_MESSAGE_CHARS),
    "MiB of an input file": (
        r"regular files of at most (\d+) MiB",
        input_files.MAX_INPUT_BYTES // MIB,
    ),
}


@pytest.mark.parametrize("fact", NUMBERS_IN_PROSE, ids=list(NUMBERS_IN_PROSE))
def test_numbers_in_the_prose_are_the_codes(fact: str) -> None:
    pattern, value = NUMBERS_IN_PROSE[fact]
    found = [
        (path.relative_to(REPO).as_posix(), int(match.replace(",", "")))
        for path in PROSE + BZL
        for match in re.findall(pattern, " ".join(path.read_text().split()))
    ]
    assert found, f"no {pattern!r} in the documents: reworded? update NUMBERS_IN_PROSE"
    assert all(number == value for _, number in found), (value, found)


def test_the_kernels_left_out_are_torch_facts_list() -> None:
    text = " ".join((REPO / "docs" / "rules.md").read_text().split())
    listed = re.search(r"the wheel does not export \(([^;]*); the list is", text)
    assert listed, "the sentence on NATIVE_KERNELS_NOT_EXPORTED was reworded: update this test"
    names = set(re.findall(r"`(\w+)`", listed[1]))
    assert names == set(torch_facts.NATIVE_KERNELS_NOT_EXPORTED), names
