"""The C++ templates of atengen/templates/, and a cache of their compiled code.

Jinja compiles a template to Python before it renders it, and that is most of what loading a
template costs: about 60 ms for the templates a whole ``generate`` run renders, paid by
every generator process. So outside Bazel a ``Templates`` object looks for each template's
compiled code (a marshalled Python code object) in ``TemplateOptions.code_dirs`` first, a user
cache directory that is filled on first use. Under Bazel there is none (an action writes only its
declared outputs): each generator action compiles what it renders, which costs less than a build
action that compiled every template would, a tool of its own that a cold build waited for.

A code file is used only when its key matches: the SHA-256 of the template's name and text, the
Jinja release, the environment's options and the Python release (a code object is specific to
it). Anything else (a missing, stale, corrupt or foreign file) is compiled as usual, so the cache
can make a run faster but never different. Nothing compiled lives in the source tree.
"""

from __future__ import annotations

import hashlib
import marshal
import os
import sys
import tempfile
from collections.abc import MutableMapping
from dataclasses import dataclass, field
from types import CodeType
from typing import TypedDict

import jinja2

TEMPLATE_DIR = os.path.join(os.path.dirname(os.path.dirname(__file__)), "templates")


# The environment every template is compiled and rendered in. Part of the cache key: code
# compiled under other options would render other text.
class _EnvironmentOptions(TypedDict):
    trim_blocks: bool
    lstrip_blocks: bool
    keep_trailing_newline: bool
    autoescape: bool


_ENVIRONMENT_OPTIONS: _EnvironmentOptions = {
    "trim_blocks": True,
    "lstrip_blocks": True,
    "keep_trailing_newline": True,
    "autoescape": False,  # C++, not HTML
}
# Bumped when the layout of a code file changes.
_CODE_FORMAT = "atengen-template-code/1"
CODE_SUFFIX = ".code"


@dataclass(frozen=True)
class TemplateOptions:
    """Where compiled template code is read from, and whether new code is written back."""

    code_dirs: tuple[str, ...] = ()  # searched in order
    write_dir: str | None = None  # where code compiled in this run is kept; None: nowhere


@dataclass
class TemplateStats:
    """Which templates this object compiled, and which it took from a code directory."""

    compiled: list[str] = field(default_factory=list)
    cached: list[str] = field(default_factory=list)


def _environment(loader: jinja2.BaseLoader) -> jinja2.Environment:
    return jinja2.Environment(
        loader=loader,
        undefined=jinja2.StrictUndefined,  # a typo in a template is an error, not ""
        **_ENVIRONMENT_OPTIONS,
    )


def code_key(name: str, source: str) -> str:
    """The key a template's compiled code is filed and checked under."""
    digest = hashlib.sha256()
    for part in (
        _CODE_FORMAT,
        jinja2.__version__,
        repr(sorted(_ENVIRONMENT_OPTIONS.items())),
        "StrictUndefined",
        sys.implementation.cache_tag or sys.version,
        name,
        source,
    ):
        digest.update(part.encode("utf-8") + b"\0")
    return digest.hexdigest()


def _code_filename(name: str) -> str:
    """The file name compiled code reports in tracebacks: relative to the package, never a path
    of this machine (the code of a Bazel action is an output, compared across machines)."""
    return f"atengen/templates/{name}"


def code_file_name(name: str) -> str:
    """The file a template's code is kept in: one per template name, checked by its key."""
    return name + CODE_SUFFIX


class _CodeCachingLoader(jinja2.FileSystemLoader):
    def __init__(self, directory: str, options: TemplateOptions, stats: TemplateStats):
        super().__init__(directory)
        self._options = options
        self._stats = stats

    def load(
        self,
        environment: jinja2.Environment,
        name: str,
        globals: MutableMapping[str, object] | None = None,
    ) -> jinja2.Template:
        source, _, uptodate = self.get_source(environment, name)
        key = code_key(name, source)
        code = self._cached_code(name, key)
        if code is None:
            code = environment.compile(source, name, _code_filename(name))
            self._stats.compiled.append(name)
            self._write(name, key, code)
        else:
            self._stats.cached.append(name)
        return environment.template_class.from_code(environment, code, globals or {}, uptodate)

    def _cached_code(self, name: str, key: str) -> CodeType | None:
        for directory in self._options.code_dirs:
            try:
                with open(os.path.join(directory, code_file_name(name)), "rb") as f:
                    # What write_code_file wrote; the key says whether it is this template's.
                    stored: tuple[str, CodeType] = marshal.load(f)
                    stored_key, code = stored
            except (OSError, EOFError, ValueError, TypeError):
                continue  # missing, unreadable, or not a code file of this Python
            if stored_key == key:
                return code
        return None

    def _write(self, name: str, key: str, code: CodeType) -> None:
        if self._options.write_dir is None:
            return
        write_code_file(self._options.write_dir, name, key, code)


def write_code_file(directory: str, name: str, key: str, code: CodeType) -> None:
    """Writes one code file atomically (a reader never sees half of one); a cache that cannot be
    written is no error."""
    try:
        os.makedirs(directory, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=directory, prefix=".tmp-")
        try:
            with os.fdopen(fd, "wb") as f:
                marshal.dump((key, code), f)
            os.replace(tmp, os.path.join(directory, code_file_name(name)))
        except BaseException:
            os.unlink(tmp)
            raise
    except OSError:
        pass


class Templates:
    """The templates, each compiled (or taken from a code directory) once per object.

    One object serves one generator run: the pipelines make it and pass it to the emitters.
    """

    def __init__(self, options: TemplateOptions = TemplateOptions(), directory: str = TEMPLATE_DIR):
        self.stats = TemplateStats()
        self._env = _environment(_CodeCachingLoader(directory, options, self.stats))

    def render(self, template: str, /, **values: object) -> str:
        return self._env.get_template(template).render(**values)

    def names(self) -> list[str]:
        return self._env.list_templates(filter_func=lambda n: n.endswith(".j2"))
