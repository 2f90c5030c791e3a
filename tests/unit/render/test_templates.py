"""The templates' compiled code: taken from a code directory when its key matches, compiled
otherwise, never stale, never in the source tree (atengen/render/templates.py)."""

from __future__ import annotations

import os
import subprocess
import sys

import jinja2
import pytest

from atengen.render import templates as t
from tests.support.bazel_helpers import REPO

TEMPLATE_NAMES = sorted(n for n in os.listdir(t.TEMPLATE_DIR) if n.endswith(".j2"))


def _render_all(tpl: t.Templates) -> dict[str, str]:
    """Every template's compiled code loaded (macro files are only imported, never rendered)."""
    return {name: tpl._env.get_template(name) for name in tpl.names()}


def _fill(cache) -> None:
    """A cache with every template's code, as a first run outside Bazel leaves it."""
    _render_all(t.Templates(t.TemplateOptions(write_dir=str(cache))))


def test_a_second_run_takes_every_template_from_the_cache(tmp_path):
    options = t.TemplateOptions(code_dirs=(str(tmp_path),), write_dir=str(tmp_path))
    first = t.Templates(options)
    _render_all(first)
    assert sorted(first.stats.compiled) == TEMPLATE_NAMES and first.stats.cached == []
    assert sorted(os.listdir(tmp_path)) == [n + t.CODE_SUFFIX for n in TEMPLATE_NAMES]
    second = t.Templates(options)
    _render_all(second)
    assert second.stats.compiled == [] and sorted(second.stats.cached) == TEMPLATE_NAMES


def test_cached_code_renders_what_compiled_code_renders(tmp_path):
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "x.h.j2").write_text("{% for n in names %}int {{ n }};\n{% endfor %}")
    options = t.TemplateOptions(
        code_dirs=(str(tmp_path / "code"),), write_dir=str(tmp_path / "code")
    )
    fresh = t.Templates(options, directory=str(tmp_path / "src"))
    cached = t.Templates(options, directory=str(tmp_path / "src"))
    assert fresh.render("x.h.j2", names=["a", "b"]) == "int a;\nint b;\n"
    assert cached.render("x.h.j2", names=["a", "b"]) == "int a;\nint b;\n"
    assert cached.stats.cached == ["x.h.j2"]
    with pytest.raises(jinja2.UndefinedError):  # StrictUndefined survives the cache
        cached.render("x.h.j2")


def test_an_edited_template_is_compiled_again(tmp_path):
    src = tmp_path / "src"
    src.mkdir()
    (src / "x.h.j2").write_text("int {{ name }};\n")
    options = t.TemplateOptions(
        code_dirs=(str(tmp_path / "code"),), write_dir=str(tmp_path / "code")
    )
    assert t.Templates(options, str(src)).render("x.h.j2", name="a") == "int a;\n"
    (src / "x.h.j2").write_text("long {{ name }};\n")
    edited = t.Templates(options, str(src))
    assert edited.render("x.h.j2", name="a") == "long a;\n"
    assert edited.stats.compiled == ["x.h.j2"]


def test_the_key_covers_text_name_jinja_release_and_python(monkeypatch):
    key = t.code_key("a.j2", "x")
    assert t.code_key("a.j2", "y") != key
    assert t.code_key("b.j2", "x") != key
    monkeypatch.setattr(jinja2, "__version__", "0.0.0")
    assert t.code_key("a.j2", "x") != key
    monkeypatch.undo()
    monkeypatch.setattr(sys.implementation, "cache_tag", "cpython-0")
    assert t.code_key("a.j2", "x") != key


def test_the_key_covers_the_environment_options(monkeypatch):
    key = t.code_key("a.j2", "x")
    monkeypatch.setitem(t._ENVIRONMENT_OPTIONS, "trim_blocks", False)
    assert t.code_key("a.j2", "x") != key


@pytest.mark.parametrize("content", [b"", b"garbage", b"\xe3\x01\x02"])
def test_a_corrupt_or_foreign_code_file_is_ignored(tmp_path, content):
    name = TEMPLATE_NAMES[0]
    (tmp_path / (name + t.CODE_SUFFIX)).write_bytes(content)
    tpl = t.Templates(t.TemplateOptions(code_dirs=(str(tmp_path),)))
    tpl._env.get_template(name)
    assert tpl.stats.compiled == [name]


def test_code_filed_under_another_key_is_ignored(tmp_path):
    # The code of one template, filed under another's name: a stale file, as after an edit.
    first, second = TEMPLATE_NAMES[:2]
    _fill(tmp_path)
    os.replace(tmp_path / (first + t.CODE_SUFFIX), tmp_path / (second + t.CODE_SUFFIX))
    tpl = t.Templates(t.TemplateOptions(code_dirs=(str(tmp_path),)))
    tpl._env.get_template(second)
    assert tpl.stats.compiled == [second]


def test_an_unwritable_cache_is_no_error(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("")
    tpl = t.Templates(t.TemplateOptions(write_dir=str(blocker / "code")))
    assert tpl.render(
        "kernel_signatures.cpp.j2", signatures=[], boxed=[], tagged=False, typed_library=False
    )
    assert not (blocker / "code").exists()


def test_no_compiled_code_in_the_source_tree():
    tracked = subprocess.run(
        ["git", "-C", str(REPO), "ls-files", "tool"], capture_output=True, text=True, check=True
    ).stdout.split()
    compiled = [
        path
        for path in tracked
        if path.endswith(".py")
        and "from jinja2.runtime import" in (REPO / path).read_text(encoding="utf-8")
    ]
    assert tracked and compiled == []


def test_compiled_code_names_no_path_of_this_machine(tmp_path):
    # A cache may be shared between checkouts and machines.
    _fill(tmp_path)
    for path in tmp_path.iterdir():
        data = path.read_bytes()
        assert str(REPO).encode() not in data and b"/tmp/" not in data, path.name
