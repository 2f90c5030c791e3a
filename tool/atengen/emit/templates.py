"""The Jinja environment for the C++ templates in atengen/templates/."""

from __future__ import annotations

import os
from functools import cache

import jinja2

_TEMPLATE_DIR = os.path.join(os.path.dirname(os.path.dirname(__file__)), "templates")


@cache
def _environment() -> jinja2.Environment:
    return jinja2.Environment(
        loader=jinja2.FileSystemLoader(_TEMPLATE_DIR),
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
        undefined=jinja2.StrictUndefined,  # a typo in a template is an error, not ""
        autoescape=False,  # C++, not HTML
    )


def render(name: str, **values) -> str:
    return _environment().get_template(name).render(**values)
