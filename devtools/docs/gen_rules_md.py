#!/usr/bin/env python3
"""Writes the tables of docs/rules.md that describe the public API, from the .bzl files.

    ./dev docs            rewrite the generated blocks of docs/rules.md
    ./dev docs --check    change nothing; exit 1, naming the stale blocks, when they differ

The reference's list of public symbols, its argument and attribute tables and its providers are
made from what rules/defs.bzl exports: a macro's signature and the `Args:` section of its
docstring (Google style), a rule's `attrs` and their `doc`s, a provider's `fields`. So the
docstrings are the one source of those tables (Stardoc, which would render them, needs a newer
Bazel than this repository's 4.2.3). A block is the text between `<!-- generated: ID -->` and
`<!-- end generated -->`; BLOCKS below says what each ID holds, and the rest of the file is left
as it is.

The .bzl files are read with Python's own parser (what these files use of Starlark is Python's
syntax), and a rule's `attrs` by a small evaluator of the expressions they are built from
(literals, `attr.*()`, `Label()`, `dict()`, and calls of functions defined in the files, such as
generator_attrs()). Anything else is one `file:line: error: ...` line and exit status 1.

A docstring is Markdown: code in backticks (a bare `<name>` would be read as an HTML tag, so it
is refused), links relative to the repository root (made relative to docs/ here), and for an
argument whose signature default is None but whose effective default is another value, a last
sentence `Default: X.`, which fills the Default column.

Stdlib only: any Python 3.11 runs it.
"""

from __future__ import annotations

import argparse
import ast
import difflib
import posixpath
import re
import sys
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
RULES_MD = "docs/rules.md"
DEFS_BZL = "rules/defs.bzl"
REGENERATE = "./dev docs"


class DocError(Exception):
    """A problem in a .bzl file or in docs/rules.md: the one line printed for it."""


def fail(path: str, line: int, message: str) -> DocError:
    return DocError(f"{path}:{line}: error: {message}")


# --- Reading the .bzl files -----------------------------------------------------------------


@dataclass
class Module:
    path: str  # relative to the repository root
    text: str
    globals: dict[str, ast.AST]  # name -> its FunctionDef, or the value assigned to it
    loads: dict[str, tuple[str, str, int]]  # local name -> (label, name there, line)


@dataclass(frozen=True)
class Symbol:
    module: Module
    name: str  # the name in its own module
    node: ast.AST  # FunctionDef (a macro), or the Call that makes a rule or a provider


_MODULES: dict[str, Module] = {}


def bzl_path(label: str, module: Module, line: int) -> str:
    """The repository path of a `load`ed file of this repository."""
    if label.startswith("//") and ":" in label:
        package, _, name = label[2:].partition(":")
        return posixpath.join(package, name)
    if label.startswith(":"):
        return posixpath.join(posixpath.dirname(module.path), label[1:])
    raise fail(module.path, line, f"cannot follow load({label!r}): only this repository's files")


def read_module(path: str) -> Module:
    if path in _MODULES:
        return _MODULES[path]
    try:
        text = (REPO / path).read_text()
    except OSError as e:
        raise DocError(f"{path}: error: cannot read it: {e.strerror}") from None
    except UnicodeDecodeError as e:
        raise DocError(f"{path}: error: cannot read it: not UTF-8 ({e.reason})") from None
    try:
        tree = ast.parse(text, path)
    except SyntaxError as e:
        raise fail(path, e.lineno or 1, f"cannot parse it: {e.msg}") from None
    except ValueError as e:  # a NUL byte
        raise DocError(f"{path}: error: cannot parse it: {e}") from None
    module = Module(path, text, {}, {})
    for stmt in tree.body:
        if isinstance(stmt, ast.FunctionDef):
            module.globals[stmt.name] = stmt
        elif isinstance(stmt, ast.Assign) and len(stmt.targets) == 1:
            if isinstance(stmt.targets[0], ast.Name):
                module.globals[stmt.targets[0].id] = stmt.value
        elif (
            isinstance(stmt, ast.Expr)
            and isinstance(stmt.value, ast.Call)
            and isinstance(stmt.value.func, ast.Name)
            and stmt.value.func.id == "load"
        ):
            call = stmt.value
            strings = [
                a.value
                for a in call.args
                if isinstance(a, ast.Constant) and isinstance(a.value, str)
            ]
            if not strings or len(strings) != len(call.args):
                raise fail(path, stmt.lineno, "a load() of other than string literals")
            for name in strings[1:]:
                module.loads[name] = (strings[0], name, stmt.lineno)
            for keyword in call.keywords:
                value = keyword.value
                if (
                    keyword.arg is None
                    or not isinstance(value, ast.Constant)
                    or not isinstance(value.value, str)
                ):
                    raise fail(path, stmt.lineno, 'a load() alias that is not `name = "name"`')
                module.loads[keyword.arg] = (strings[0], value.value, stmt.lineno)
    _MODULES[path] = module
    return module


def resolve(module: Module, name: str, line: int) -> Symbol:
    """What `name` is in `module`: followed through loads and `a = b` aliases."""
    for _ in range(20):
        node = module.globals.get(name)
        if name in module.loads:
            label, name, load_line = module.loads[name]
            module = read_module(bzl_path(label, module, load_line))
        elif isinstance(node, ast.Name):
            name = node.id
        elif node is not None:
            return Symbol(module, name, node)
        else:
            raise fail(module.path, line, f"{name!r} is neither defined nor loaded here")
    raise fail(module.path, line, f"{name!r}: too many aliases")


def exported_symbols() -> dict[str, Symbol]:
    """The public names of rules/defs.bzl, in its order, and what each one is."""
    defs = read_module(DEFS_BZL)
    return {
        name: resolve(defs, name, getattr(node, "lineno", 1))
        for name, node in defs.globals.items()
        if not name.startswith("_")
    }


def call_name(node: ast.AST) -> str | None:
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
        return node.func.id
    return None


def kind(symbol: Symbol) -> str:
    if isinstance(symbol.node, ast.FunctionDef):
        return "macro"
    if call_name(symbol.node) == "rule":
        keywords = {k.arg for k in symbol.node.keywords}  # type: ignore[attr-defined]
        return "build setting" if "build_setting" in keywords else "rule"
    if call_name(symbol.node) == "provider":
        return "provider"
    line = getattr(symbol.node, "lineno", 1)
    raise fail(symbol.module.path, line, f"{symbol.name} is not a macro, a rule or a provider")


# --- Evaluating the expressions rules' attrs are made of -------------------------------------


@dataclass(frozen=True)
class Label:
    text: str


@dataclass(frozen=True)
class Attr:
    kind: str  # attr.<kind>(...)
    kwargs: dict[str, object]


@dataclass(frozen=True)
class Opaque:
    """The value of a Bazel built-in that no table shows (a provider named in `providers`)."""

    source: str


# Built-ins whose values are only passed along: evaluated to an Opaque, their arguments unread.
OPAQUE_CALLS = frozenset({"provider", "config", "depset", "select", "struct"})


@dataclass(frozen=True)
class Function:
    module: Module
    node: ast.FunctionDef


class _Return(Exception):
    def __init__(self, value: object) -> None:
        self.value = value


def iterable(value: object) -> Iterable[object]:
    """`value`, checked to be what a `for` or an unpacking can go over: otherwise Python's own
    TypeError, which expr() and run() report as the expression's error line."""
    if not isinstance(value, Iterable):
        raise TypeError(f"{type(value).__name__!r} object is not iterable")
    return value


class Evaluator:
    """Evaluates the Starlark expressions (and function bodies) that build `attrs` dicts."""

    def __init__(self, module: Module, scope: dict[str, object] | None = None) -> None:
        self.module = module
        self.scope = scope or {}

    def fail(self, node: ast.AST, what: str) -> DocError:
        return fail(
            self.module.path,
            getattr(node, "lineno", 1),
            f"cannot evaluate {what} (devtools/docs/gen_rules_md.py evaluates literals, attr.*(), "
            "Label(), dict() and the .bzl files' own functions)",
        )

    def name(self, node: ast.Name) -> object:
        if node.id in self.scope:
            return self.scope[node.id]
        symbol = resolve(self.module, node.id, node.lineno)
        if isinstance(symbol.node, ast.FunctionDef):
            return Function(symbol.module, symbol.node)
        return Evaluator(symbol.module).expr(symbol.node)

    def expr(self, node: ast.AST) -> object:
        try:
            return self.evaluate(node)
        except (TypeError, ValueError, KeyError, IndexError, AttributeError) as e:
            raise self.fail(node, f"`{ast.unparse(node)[:60]}`: {e}") from None

    def evaluate(self, node: ast.AST) -> object:
        match node:
            case ast.Constant(value=value):
                return value
            case ast.Name():
                return self.name(node)
            case ast.List(elts=elts) | ast.Tuple(elts=elts):
                return [self.expr(e) for e in elts]
            case ast.Dict(keys=keys, values=values):
                out: dict[object, object] = {}
                for key, value in zip(keys, values, strict=True):
                    if key is None:
                        out.update(self.mapping(value))
                    else:
                        out[self.expr(key)] = self.expr(value)
                return out
            case ast.BinOp(left=left, op=ast.Add(), right=right):
                return self.expr(left) + self.expr(right)  # type: ignore[operator]
            case ast.BinOp(left=left, op=ast.Mod(), right=right):
                return self.expr(left) % self.expr(right)  # type: ignore[operator]
            case ast.UnaryOp(op=ast.Not(), operand=operand):
                return not self.expr(operand)
            case ast.IfExp(test=test, body=body, orelse=orelse):
                return self.expr(body) if self.expr(test) else self.expr(orelse)
            case ast.Call():
                return self.call(node)
            case ast.DictComp(
                key=key, value=value, generators=[ast.comprehension(ifs=[]) as generator]
            ):
                return {
                    self.expr(key): self.expr(value)
                    for _ in self.bind_each(generator.target, self.expr(generator.iter))
                }
        raise self.fail(node, f"`{ast.unparse(node)}`")

    def mapping(self, node: ast.AST) -> dict[object, object]:
        value = self.expr(node)
        if not isinstance(value, dict):
            raise self.fail(node, f"`**{ast.unparse(node)}`: not a dict")
        return value

    def bind_each(self, target: ast.AST, values: object) -> Iterator[object]:
        for value in iterable(values):
            self.bind(target, value)
            yield value

    def bind(self, target: ast.AST, value: object) -> None:
        if isinstance(target, ast.Name):
            self.scope[target.id] = value
        elif isinstance(target, ast.Tuple) and all(isinstance(e, ast.Name) for e in target.elts):
            names = [e.id for e in target.elts if isinstance(e, ast.Name)]  # all (checked above)
            for name, item in zip(names, iterable(value), strict=True):
                self.scope[name] = item
        else:
            raise self.fail(target, f"an assignment to `{ast.unparse(target)}`")

    def call(self, node: ast.Call) -> object:
        func = node.func
        if isinstance(func, ast.Name) and func.id in OPAQUE_CALLS and func.id not in self.scope:
            return Opaque(ast.unparse(node))
        args = [self.expr(a) for a in node.args]
        kwargs: dict[str, object] = {}
        for keyword in node.keywords:
            if keyword.arg is None:
                for key, value in self.mapping(keyword.value).items():
                    if not isinstance(key, str):  # keywords are names, as in Python
                        raise self.fail(
                            node, f"`**{ast.unparse(keyword.value)}`: a key is not a string"
                        )
                    kwargs[key] = value
            else:
                kwargs[keyword.arg] = self.expr(keyword.value)
        if isinstance(func, ast.Attribute):
            if isinstance(func.value, ast.Name) and func.value.id == "attr" and not args:
                return Attr(func.attr, kwargs)
            owner = self.expr(func.value)
            if isinstance(owner, dict) and func.attr == "items" and not args and not kwargs:
                return list(owner.items())
            raise self.fail(node, f"`{ast.unparse(func)}()`")
        if isinstance(func, ast.Name) and func.id == "Label" and len(args) == 1:
            return Label(args[0])  # type: ignore[arg-type]
        if isinstance(func, ast.Name) and func.id == "dict":
            merged: dict[object, object] = {}
            for arg in args:
                merged.update(arg)  # type: ignore[call-overload]
            return merged | kwargs
        callee = self.expr(func)
        if isinstance(callee, Function):
            return self.run(callee, args, kwargs, node)
        raise self.fail(node, f"`{ast.unparse(func)}()`")

    def run(
        self, function: Function, args: list[object], kwargs: dict[str, object], at: ast.AST
    ) -> object:
        spec = function.node.args
        if spec.vararg or spec.kwarg or spec.posonlyargs or spec.kwonlyargs:
            raise self.fail(at, f"a call of {function.node.name}(): only plain parameters")
        names = [a.arg for a in spec.args]
        unknown = sorted(set(kwargs) - set(names))
        if len(args) > len(names) or unknown:
            raise self.fail(at, f"a call of {function.node.name}() with arguments it lacks")
        defaults = dict(zip(names[len(names) - len(spec.defaults) :], spec.defaults, strict=True))
        scope: dict[str, object] = dict(zip(names, args, strict=False)) | kwargs
        body = Evaluator(function.module, scope)
        for name in names:
            if name not in scope:
                if name not in defaults:
                    raise self.fail(at, f"a call of {function.node.name}() without `{name}`")
                scope[name] = body.expr(defaults[name])
        try:
            body.statements(function.node.body)
        except _Return as returned:
            return returned.value
        except (TypeError, ValueError, KeyError, IndexError, AttributeError) as e:
            raise self.fail(at, f"a call of {function.node.name}(): {e}") from None
        return None

    def statements(self, body: list[ast.stmt]) -> None:
        for stmt in body:
            match stmt:
                case ast.Expr(value=ast.Constant(value=str())):
                    pass  # a docstring
                case ast.Return(value=value):
                    raise _Return(None if value is None else self.expr(value))
                case ast.Assign(targets=[ast.Subscript(value=container, slice=key)], value=value):
                    self.expr(container)[self.expr(key)] = self.expr(value)  # type: ignore[index]
                case ast.Assign(targets=[target], value=value):
                    self.bind(target, self.expr(value))
                case ast.For(target=target, iter=iterable, body=loop, orelse=[]):
                    for _ in self.bind_each(target, self.expr(iterable)):
                        self.statements(loop)
                case ast.If(test=test, body=then, orelse=otherwise):
                    self.statements(then if self.expr(test) else otherwise)
                case _:
                    raise self.fail(stmt, f"the statement `{ast.unparse(stmt).splitlines()[0]}`")


# --- Docstrings --------------------------------------------------------------------------------


def docstring(symbol: Symbol) -> tuple[str, int]:
    """The symbol's documentation (a macro's docstring, a rule's or provider's `doc`), and
    its line."""
    node = symbol.node
    text: object  # a rule's or provider's `doc` may evaluate to anything: checked below
    if isinstance(node, ast.FunctionDef):
        text = ast.get_docstring(node)
        line = node.body[0].lineno if node.body else node.lineno
    else:
        doc = [k.value for k in node.keywords if k.arg == "doc"]  # type: ignore[attr-defined]
        text = Evaluator(symbol.module).expr(doc[0]) if doc else None
        line = doc[0].lineno if doc else node.lineno  # type: ignore[attr-defined]
    if not isinstance(text, str) or not text.strip():
        raise fail(symbol.module.path, line, f"{symbol.name} has no documentation")
    return text, line


def summary(text: str) -> str:
    """The first paragraph, on one line."""
    return " ".join(text.strip().split("\n\n")[0].split())


ARG_LINE = re.compile(r"(\w+):\s*(.*)")


def args_section(text: str, path: str, line: int) -> dict[str, tuple[str, int]]:
    """The `Args:` section of a cleaned docstring that starts on `line`: argument -> its text,
    on one line, and the line it starts on."""
    lines = text.splitlines()
    if "Args:" not in (s.strip() for s in lines):
        raise fail(path, line, "the docstring has no `Args:` section")
    start = next(i for i, s in enumerate(lines) if s.strip() == "Args:")
    section_indent = len(lines[start]) - len(lines[start].lstrip())
    out: dict[str, tuple[str, int]] = {}
    current = None
    item_indent = None
    for i, text_line in enumerate(lines[start + 1 :], start + 1):
        if not text_line.strip():
            continue
        indent = len(text_line) - len(text_line.lstrip())
        if indent <= section_indent:
            break
        if item_indent is None:
            item_indent = indent
        if indent == item_indent:
            match = ARG_LINE.fullmatch(text_line.strip())
            if not match:
                raise fail(path, line + i, f"`{text_line.strip()}` is not `name: text` in `Args:`")
            current = match[1]
            if current in out:
                raise fail(path, line + i, f"`{current}` is documented twice")
            out[current] = (match[2], line + i)
        elif indent > item_indent and current is not None:
            out[current] = (out[current][0] + " " + text_line.strip(), out[current][1])
        else:
            raise fail(path, line + i, f"`{text_line.strip()}` is indented less than its argument")
    return out


# --- Markdown -----------------------------------------------------------------------------------

CODE_SPAN = re.compile(r"`[^`]*`")
LINK = re.compile(r"\]\(([^)\s]+)\)")


def markdown(text: str, where: str, subject: str) -> str:
    """A docstring's text as one table cell: checked, links made relative to docs/, `|` escaped.
    `where` (file:line) and `subject` (what the text documents) go into an error's line."""
    if text.count("`") % 2:
        raise DocError(f"{where}: error: {subject}: a code span is not closed: {text[:60]}...")
    bare = CODE_SPAN.sub("", text)
    if "<" in bare:
        tag = bare[bare.index("<") :][:30]
        raise DocError(
            f"{where}: error: {subject}: {tag!r}... outside backticks would be read as an HTML "
            "tag: put the code in backticks"
        )
    text = text[:1].upper() + text[1:]  # a docstring's `name: text` starts in lower case
    text = LINK.sub(lambda m: "](" + link_from_docs(m[1], where, subject) + ")", text)
    return text.replace("|", r"\|")


def link_from_docs(target: str, where: str, subject: str) -> str:
    """A link target relative to the repository root, made relative to docs/."""
    if target.startswith("#") or re.match(r"[a-z][a-z0-9+.-]*:", target):
        return target
    path, hash_, anchor = target.partition("#")
    if not (REPO / path).exists():
        raise DocError(
            f"{where}: error: {subject}: the link ({target}) names no file of the repository "
            "(links in docstrings are relative to its root)"
        )
    if path == RULES_MD:
        return hash_ + anchor or "#"
    return posixpath.relpath(path, "docs") + hash_ + anchor


def table(header: tuple[str, ...], rows: Sequence[tuple[str, ...]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


def starlark(value: object) -> str:
    """A value as Starlark spells it."""
    if isinstance(value, Label):
        text = value.text
        return repr_string("@rules_aten" + text if text.startswith("//") else text)
    if isinstance(value, str):
        return repr_string(value)
    if isinstance(value, list):
        return "[" + ", ".join(starlark(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{starlark(k)}: {starlark(v)}" for k, v in value.items()) + "}"
    return repr(value)  # True, False, None, numbers: as in Python


def repr_string(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def code(text: str) -> str:
    """Text as a Markdown code span (a table cell: `|` escaped)."""
    return ("`` " + text + " ``" if "`" in text else "`" + text + "`").replace("|", r"\|")


# --- The tables ------------------------------------------------------------------------------

DEFAULT_SENTENCE = re.compile(r"\s*\bDefault: (.+?)\.?$")

# What an attribute without `default` defaults to, by attr.<kind>.
IMPLICIT_DEFAULTS = {"bool": False, "int": 0, "string": "", "label": None, "string_dict": {}}


def public(name: str) -> Symbol:
    symbols = exported_symbols()
    if name not in symbols:
        raise DocError(f"{DEFS_BZL}: error: it exports no {name!r}, which {RULES_MD} documents")
    return symbols[name]


def macro_rows(name: str, keep: Callable[[str], bool] = lambda doc: True, strip: str = "") -> str:
    """The argument table of a public macro: its signature's defaults, its docstring's texts
    (those `keep` accepts, `strip` taken off their start)."""
    symbol = public(name)
    function = symbol.node
    path = symbol.module.path
    if not isinstance(function, ast.FunctionDef):
        raise fail(path, getattr(function, "lineno", 1), f"{name} is not a macro")
    text, line = docstring(symbol)
    documented = args_section(text, path, line)
    spec = function.args
    if spec.vararg or spec.kwarg or spec.posonlyargs:
        raise fail(path, function.lineno, f"{name}'s *args, **kwargs or / are not documented")
    params = spec.args + spec.kwonlyargs
    defaults: list[ast.expr | None] = [None] * (len(spec.args) - len(spec.defaults))
    defaults += list(spec.defaults) + list(spec.kw_defaults)
    missing = [p.arg for p in params if p.arg not in documented]
    extra = sorted(set(documented) - {p.arg for p in params})
    if missing or extra:
        raise fail(
            path,
            line,
            f"{name}'s docstring documents no {missing} and documents {extra}, "
            "which its signature lacks"
            if missing and extra
            else f"{name}'s docstring does not document {missing}"
            if missing
            else f"{name}'s docstring documents {extra}, which its signature lacks",
        )
    rows = []
    for param, default in zip(params, defaults, strict=True):
        doc, doc_line = documented[param.arg]
        if not keep(doc):
            continue
        doc = doc.removeprefix(strip)
        where, subject = f"{path}:{doc_line}", f"{name}({param.arg})"
        given = (
            "(required)" if default is None else ast.get_source_segment(symbol.module.text, default)
        )
        sentence = DEFAULT_SENTENCE.search(doc)
        if sentence:
            if given != "None":
                raise DocError(
                    f"{where}: error: {subject}: `Default: {sentence[1]}` in the docstring, but "
                    f"the signature's default is {given}: keep one"
                )
            doc = doc[: sentence.start()]
            shown = markdown(sentence[1], where, subject)
        else:
            shown = code(" ".join((given or "").split())) if default is not None else "(required)"
        rows.append((code(param.arg), shown, markdown(doc, where, subject)))
    return table(("Argument", "Default", "Meaning"), rows)


def rule_rows(name: str) -> str:
    """The attribute table of a public rule: `name`, then its public `attrs`."""
    symbol = public(name)
    node = symbol.node
    path = symbol.module.path
    if kind(symbol) != "rule":
        raise fail(path, getattr(node, "lineno", 1), f"{name} is not a rule")
    attrs_node = [k.value for k in node.keywords if k.arg == "attrs"]  # type: ignore[attr-defined]
    attrs = Evaluator(symbol.module).expr(attrs_node[0]) if attrs_node else {}
    if not isinstance(attrs, dict):
        raise fail(path, node.lineno, f"{name}'s attrs is not a dict")  # type: ignore[attr-defined]
    rows = [("`name`", "(required)", "A unique name for this target.")]
    for attr_name, spec in attrs.items():
        if attr_name.startswith("_"):
            continue  # private: not settable
        where, subject = f"{path}:{node.lineno}", f"{name}.{attr_name}"  # type: ignore[attr-defined]
        if not isinstance(spec, Attr):
            raise DocError(f"{where}: error: {subject}: not an attr.*() value")
        doc = spec.kwargs.get("doc")
        if not isinstance(doc, str) or not doc.strip():
            raise DocError(f"{where}: error: {subject}: the attribute has no doc")
        if spec.kwargs.get("mandatory"):
            shown = "(required)"
        elif "default" in spec.kwargs:
            shown = code(starlark(spec.kwargs["default"]))
        else:
            shown = code(starlark(IMPLICIT_DEFAULTS.get(spec.kind, [])))
        rows.append((code(attr_name), shown, markdown(" ".join(doc.split()), where, subject)))
    return table(("Attribute", "Default", "Meaning"), rows)


def provider_rows() -> str:
    """The fields of every provider rules/defs.bzl exports (the symbols' table has its doc)."""
    rows = []
    for public_name, symbol in exported_symbols().items():
        if kind(symbol) != "provider":
            continue
        node = symbol.node
        line = getattr(node, "lineno", 1)
        fields_node = [k.value for k in node.keywords if k.arg == "fields"]  # type: ignore[attr-defined]
        fields = Evaluator(symbol.module).expr(fields_node[0]) if fields_node else None
        if not isinstance(fields, dict) or not fields:
            raise fail(symbol.module.path, line, f"{public_name} has no `fields` dict with docs")
        for i, (field, doc) in enumerate(sorted(fields.items())):
            where, subject = f"{symbol.module.path}:{line}", f"{public_name}.{field}"
            if not isinstance(doc, str) or not doc.strip():
                raise DocError(f"{where}: error: {subject}: the field has no doc")
            shown = code(public_name) if i == 0 else ""
            rows.append((shown, code(field), markdown(" ".join(doc.split()), where, subject)))
    return table(("Provider", "Field", "Meaning"), rows)


def symbol_rows() -> str:
    """Every public symbol of rules/defs.bzl: its kind and its documentation's first paragraph."""
    order = ["macro", "rule", "build setting", "provider"]
    rows = []
    for public_name, symbol in exported_symbols().items():
        text, line = docstring(symbol)
        where = f"{symbol.module.path}:{line}"
        rows.append((code(public_name), kind(symbol), markdown(summary(text), where, public_name)))
    rows.sort(key=lambda row: order.index(row[1]))
    return table(("Symbol", "Kind", "What"), rows)


def is_lazy(doc: str) -> bool:
    return doc.startswith("LTC: ")


# Block ID -> its text. Every ID is in docs/rules.md once, and nothing else is.
BLOCKS: dict[str, Callable[[], str]] = {
    "public symbols": symbol_rows,
    "aten_codegen args": lambda: macro_rows("aten_codegen"),
    "aten_codegen_sources attrs": lambda: rule_rows("aten_codegen_sources"),
    "external_backend_codegen args": lambda: macro_rows(
        "external_backend_codegen", lambda doc: not is_lazy(doc)
    ),
    "external_backend_codegen lazy args": lambda: macro_rows(
        "external_backend_codegen", is_lazy, strip="LTC: "
    ),
    "aten_model_check attrs": lambda: rule_rows("aten_model_check"),
    "aten_wheel attrs": lambda: rule_rows("aten_wheel"),
    "aten_kernel_hub attrs": lambda: rule_rows("aten_kernel_hub"),
    "providers": provider_rows,
}

BLOCK = re.compile(r"^<!-- generated: (.+?) -->\n(.*?)^<!-- end generated -->$", re.M | re.S)


def regenerate(text: str) -> tuple[str, list[str]]:
    """docs/rules.md with every block written anew, and the IDs of the blocks that changed."""
    opening = re.findall(r"^<!-- generated: (.+?) -->$", text, re.M)
    closing = len(re.findall(r"^<!-- end generated -->$", text, re.M))
    found = BLOCK.findall(text)
    if len(found) != len(opening) or closing != len(opening):
        raise DocError(
            f"{RULES_MD}: error: {len(opening)} `<!-- generated: ID -->` and {closing} "
            "`<!-- end generated -->` lines do not pair up"
        )
    ids = [block_id for block_id, _ in found]
    unknown = [i for i in ids if i not in BLOCKS]
    twice = sorted({i for i in ids if ids.count(i) > 1})
    absent = [i for i in BLOCKS if i not in ids]
    if unknown or twice or absent:
        raise DocError(
            f"{RULES_MD}: error: generated blocks: unknown {unknown}, repeated {twice}, "
            f"missing {absent} (devtools/docs/gen_rules_md.py's BLOCKS lists the IDs)"
        )
    changed = []

    def write(match: re.Match[str]) -> str:
        block = "\n" + BLOCKS[match[1]]() + "\n\n"
        if block != match[2]:
            changed.append(match[1])
        return f"<!-- generated: {match[1]} -->\n{block}<!-- end generated -->"

    return BLOCK.sub(write, text), changed


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="gen_rules_md.py", description=__doc__.split("\n")[0])
    parser.add_argument("--check", action="store_true", help="change nothing; exit 1 if stale")
    parser.add_argument("--diff", action="store_true", help="with --check: print the diff")
    options = parser.parse_args(argv)
    path = REPO / RULES_MD
    try:
        text = path.read_text()
        new, changed = regenerate(text)
    except DocError as e:
        print(e, file=sys.stderr)
        return 1
    except RecursionError:
        print(f"{DEFS_BZL}: error: the .bzl files nest too deeply to read", file=sys.stderr)
        return 1
    except OSError as e:
        print(f"{RULES_MD}: error: {e.strerror}", file=sys.stderr)
        return 1
    except UnicodeDecodeError as e:
        print(f"{RULES_MD}: error: not UTF-8 ({e.reason})", file=sys.stderr)
        return 1
    if options.check:
        if not changed:
            return 0
        print(
            f"{RULES_MD} is stale: its generated blocks {changed} differ from the .bzl files' "
            f"docstrings; run {REGENERATE}",
            file=sys.stderr,
        )
        if options.diff:
            sys.stderr.writelines(
                difflib.unified_diff(
                    text.splitlines(True), new.splitlines(True), RULES_MD, RULES_MD + " (new)"
                )
            )
        return 1
    if changed:
        path.write_text(new)
        print(f"{RULES_MD}: wrote {', '.join(changed)}")
    else:
        print(f"{RULES_MD}: up to date")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
