"""The templates' compiled code in atengen/emit/compiled_templates: current, used, never stale."""

from __future__ import annotations

import os

import jinja2
import pytest

from atengen.render import templates


def test_compiled_templates_are_current():
    want = templates.compiled_templates()
    have = {
        name: open(os.path.join(templates.COMPILED_DIR, name), encoding="utf-8").read()
        for name in os.listdir(templates.COMPILED_DIR)
        if name.endswith(".py")
    }
    assert sorted(have) == sorted(want), "compiled_templates/ is out of date: run ./dev fmt"
    stale = [name for name in want if have[name] != want[name]]
    assert not stale, f"compiled_templates/ is out of date ({stale}): run ./dev fmt"
    # One module per template, and the package.
    assert len(want) == 1 + len(
        [n for n in os.listdir(templates._TEMPLATE_DIR) if n.endswith(".j2")]
    )


def test_every_template_loads_without_compiling(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("a template was compiled although its module is current")

    env = templates._make_environment(templates._PrecompiledLoader(templates._TEMPLATE_DIR))
    monkeypatch.setattr(env, "compile", refuse)
    names = env.list_templates(filter_func=lambda n: n.endswith(".j2"))
    assert len(names) >= 10
    for name in names:
        assert env.get_template(name).render is not None


def test_a_template_without_a_current_module_is_compiled(tmp_path):
    (tmp_path / "x.h.j2").write_text("int {{ name }};\n")
    env = templates._make_environment(templates._PrecompiledLoader(str(tmp_path)))
    assert env.get_template("x.h.j2").render(name="edited") == "int edited;\n"
    with pytest.raises(jinja2.UndefinedError):
        env.get_template("x.h.j2").render()
