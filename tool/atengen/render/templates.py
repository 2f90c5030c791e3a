"""The Jinja environment for the C++ templates in atengen/templates/.

Compiling a template to Python is most of what loading it costs: ~30 ms for the eight a lazy
backend renders, paid by every generator process, i.e. every Bazel action. So the compiled code
of each template is kept in atengen/emit/compiled_templates/, one module per template named by
the SHA-1 of the template's text (`t_<sha1>.py`). A template whose text has no module (edited
since) is compiled as usual: a stale module can never be used, only go unused.
`write_compiled_templates()` rewrites the folder (`./dev fmt` runs it); a test checks it is
current.
"""

from __future__ import annotations

import hashlib
import importlib
import os
from functools import cache

import jinja2

_TEMPLATE_DIR = os.path.join(os.path.dirname(os.path.dirname(__file__)), "templates")
COMPILED_DIR = os.path.join(os.path.dirname(__file__), "compiled_templates")
_COMPILED_PACKAGE = "atengen.emit.compiled_templates"


def compiled_module_name(source: str) -> str:
    return "t_" + hashlib.sha1(source.encode("utf-8")).hexdigest()


class _PrecompiledLoader(jinja2.FileSystemLoader):
    """Templates from atengen/templates/, their code from compiled_templates/ where current."""

    def load(self, environment, name, globals=None):
        source, _, _ = self.get_source(environment, name)
        try:
            module = importlib.import_module(f"{_COMPILED_PACKAGE}.{compiled_module_name(source)}")
        except ModuleNotFoundError:
            return super().load(environment, name, globals)
        return environment.template_class.from_module_dict(
            environment, module.__dict__, globals or {}
        )


@cache
def _environment() -> jinja2.Environment:
    return _make_environment(_PrecompiledLoader(_TEMPLATE_DIR))


def _make_environment(loader: jinja2.BaseLoader) -> jinja2.Environment:
    return jinja2.Environment(
        loader=loader,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
        undefined=jinja2.StrictUndefined,  # a typo in a template is an error, not ""
        autoescape=False,  # C++, not HTML
    )


def render(name: str, **values) -> str:
    return _environment().get_template(name).render(**values)


def compiled_templates() -> dict[str, str]:
    """{file name: text} of compiled_templates/: each template's module, and the package."""
    env = _make_environment(jinja2.FileSystemLoader(_TEMPLATE_DIR))
    files = {"__init__.py": '"""Compiled templates: see atengen.render.templates."""\n'}
    for name in env.list_templates(filter_func=lambda n: n.endswith(".j2")):
        source, filename, _ = env.loader.get_source(env, name)
        # defer_init: the module form, as Jinja's own compile_templates writes it.
        code = env.compile(source, name, filename, raw=True, defer_init=True)
        files[compiled_module_name(source) + ".py"] = code + "\n"
    return files


def write_compiled_templates() -> None:
    """Rewrite compiled_templates/ from the templates (removing modules of old versions)."""
    files = compiled_templates()
    os.makedirs(COMPILED_DIR, exist_ok=True)
    for old in os.listdir(COMPILED_DIR):
        if old.endswith(".py") and old not in files:
            os.remove(os.path.join(COMPILED_DIR, old))
    for name, text in files.items():
        with open(os.path.join(COMPILED_DIR, name), "w", encoding="utf-8") as f:
            f.write(text)
