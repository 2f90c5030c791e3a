"""The C++ expressions of derivative formulas, parsed for translation into Python.

Only the expression subset custom-operator formulas use is parsed: names (qualified by `::`),
numbers, string literals, calls, member calls (`.`), subscripts, braced lists, the unary `- + ! ~`,
the binary arithmetic, comparison, bitwise and logical operators, and `?:`. Anything else (a
lambda, a statement, a cast, `->`, a template argument list) is an ExprError naming the construct;
so is nesting deeper than MAX_DEPTH, so that no input reaches Python's recursion limit.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

MAX_DEPTH = 64


class ExprError(ValueError):
    """A formula outside the subset: the message names the construct and what to do instead."""


@dataclass(frozen=True, slots=True)
class Token:
    kind: str  # name, number, string, op, end
    text: str


@dataclass(frozen=True, slots=True)
class Name:
    parts: tuple[str, ...]  # ("at", "mul"), ("grad",); a leading "" for `::std::...`


@dataclass(frozen=True, slots=True)
class Number:
    text: str  # as written, suffix included


@dataclass(frozen=True, slots=True)
class String:
    value: str


@dataclass(frozen=True, slots=True)
class Call:
    func: Expr
    args: tuple[Expr, ...]


@dataclass(frozen=True, slots=True)
class Member:
    obj: Expr
    name: str


@dataclass(frozen=True, slots=True)
class Index:
    obj: Expr
    index: Expr


@dataclass(frozen=True, slots=True)
class Unary:
    op: str
    operand: Expr


@dataclass(frozen=True, slots=True)
class Binary:
    op: str
    left: Expr
    right: Expr


@dataclass(frozen=True, slots=True)
class Conditional:
    cond: Expr
    then: Expr
    other: Expr


@dataclass(frozen=True, slots=True)
class Braced:
    items: tuple[Expr, ...]


Expr = Name | Number | String | Call | Member | Index | Unary | Binary | Conditional | Braced

_TOKEN_RE = re.compile(
    r"""
    (?P<space>\s+)
  | (?P<number>(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?\w*)
  | (?P<name>[A-Za-z_]\w*)
  | (?P<string>"(?:[^"\\\n]|\\.)*")
  | (?P<op>::|->|&&|\|\||<<|>>|<=|>=|==|!=|[-+*/%<>!~&|^?:.,()\[\]{};=#'@$`\\])
    """,
    re.VERBOSE,
)
# Binary operators by C++ precedence, loosest first.
_BINARY_LEVELS: tuple[frozenset[str], ...] = (
    frozenset({"||"}),
    frozenset({"&&"}),
    frozenset({"|"}),
    frozenset({"^"}),
    frozenset({"&"}),
    frozenset({"==", "!="}),
    frozenset({"<", ">", "<=", ">="}),
    frozenset({"<<", ">>"}),
    frozenset({"+", "-"}),
    frozenset({"*", "/", "%"}),
)
# What a token that cannot start or continue an expression here means, and what to do instead.
_CONSTRUCTS = {
    "[": "a lambda ('[...](...) {...}')",
    "{": "a braced list in this place",
    ";": "a statement (';')",
    "=": "an assignment ('=')",
    "->": "'->' (a pointer or optional access)",
    "#": "a preprocessor directive",
    "'": "a character literal",
    "::": "a misplaced '::'",
}


def tokenize(text: str) -> list[Token]:
    tokens: list[Token] = []
    pos = 0
    while pos < len(text):
        m = _TOKEN_RE.match(text, pos)
        if m is None:
            raise ExprError(f"the character {text[pos]!r} is not part of the formula subset")
        pos = m.end()
        kind = m.lastgroup
        assert kind is not None
        if kind == "space":
            continue
        tokens.append(Token(kind, m.group()))
    tokens.append(Token("end", ""))
    return tokens


def parse(text: str) -> Expr:
    """The expression ``text`` is, or an ExprError naming what is outside the subset."""
    if "//" in text or "/*" in text:
        raise ExprError("a comment in the formula; remove it")
    parser = _Parser(tokenize(text))
    expr = parser.expression(0)
    parser.expect_end()
    return expr


class _Parser:
    def __init__(self, tokens: list[Token]):
        self.tokens = tokens
        self.pos = 0

    def peek(self) -> Token:
        return self.tokens[self.pos]

    def take(self) -> Token:
        token = self.tokens[self.pos]
        if token.kind != "end":
            self.pos += 1
        return token

    def accept(self, op: str) -> bool:
        token = self.peek()
        if token.kind == "op" and token.text == op:
            self.pos += 1
            return True
        return False

    def expect(self, op: str, context: str) -> None:
        if not self.accept(op):
            raise self.unexpected(f"expected '{op}' {context}")

    def expect_end(self) -> None:
        if self.peek().kind != "end":
            raise self.unexpected("expected the end of the formula")

    def unexpected(self, what: str) -> ExprError:
        token = self.peek()
        if token.kind == "end":
            return ExprError(f"the formula ends early: {what}")
        construct = _CONSTRUCTS.get(token.text) if token.kind == "op" else None
        if construct is not None:
            return ExprError(f"{construct} is outside the subset stable mode translates")
        return ExprError(f"unexpected '{token.text}': {what}")

    def nest(self, depth: int) -> int:
        if depth >= MAX_DEPTH:
            raise ExprError(f"the formula nests deeper than {MAX_DEPTH} levels; split it")
        return depth + 1

    def expression(self, depth: int) -> Expr:
        depth = self.nest(depth)
        cond = self.binary(0, depth)
        if self.accept("?"):
            then = self.expression(depth)
            self.expect(":", "in 'cond ? a : b'")
            return Conditional(cond, then, self.expression(depth))
        return cond

    def binary(self, level: int, depth: int) -> Expr:
        if level == len(_BINARY_LEVELS):
            return self.unary(depth)
        left = self.binary(level + 1, depth)
        ops = _BINARY_LEVELS[level]
        while self.peek().kind == "op" and self.peek().text in ops:
            op = self.take().text
            left = Binary(op, left, self.binary(level + 1, depth))
        return left

    def unary(self, depth: int) -> Expr:
        token = self.peek()
        if token.kind == "op" and token.text in ("-", "+", "!", "~"):
            self.take()
            return Unary(token.text, self.unary(self.nest(depth)))
        if token.kind == "op" and token.text in ("*", "&"):
            raise ExprError(f"unary '{token.text}' (a pointer) is outside the subset")
        return self.postfix(self.primary(depth), depth)

    def primary(self, depth: int) -> Expr:
        token = self.take()
        if token.kind == "number":
            return Number(token.text)
        if token.kind == "string":
            return String(token.text[1:-1])
        if token.kind == "name" or (token.kind == "op" and token.text == "::"):
            parts = [token.text] if token.kind == "name" else ["", self.name_after("::")]
            while self.accept("::"):
                parts.append(self.name_after("::"))
            if self.peek().kind == "op" and self.peek().text == "<" and _looks_templated(parts):
                raise ExprError(f"a template argument list ('{'::'.join(parts)}<...>')")
            return Name(tuple(parts))
        if token.kind == "op" and token.text == "(":
            inner = self.expression(depth)
            self.expect(")", "to close '('")
            if self.peek().kind in ("name", "number") or (
                self.peek().kind == "op" and self.peek().text == "("
            ):
                raise ExprError("a C-style cast ('(type) value') is outside the subset")
            return inner
        if token.kind == "op" and token.text == "{":
            return Braced(self.items("}", depth))
        self.pos -= 1 if token.kind != "end" else 0
        raise self.unexpected("expected a name, a number or '('")

    def name_after(self, what: str) -> str:
        token = self.take()
        if token.kind != "name":
            self.pos -= 1 if token.kind != "end" else 0
            raise self.unexpected(f"expected a name after '{what}'")
        return token.text

    def postfix(self, expr: Expr, depth: int) -> Expr:
        while True:
            depth = self.nest(depth)
            if self.accept("("):
                expr = Call(expr, self.items(")", depth))
            elif self.accept("."):
                expr = Member(expr, self.name_after("."))
            elif self.accept("["):
                index = self.expression(depth)
                self.expect("]", "to close '['")
                expr = Index(expr, index)
            else:
                return expr

    def items(self, close: str, depth: int) -> tuple[Expr, ...]:
        items: list[Expr] = []
        if self.accept(close):
            return ()
        while True:
            items.append(self.expression(depth))
            if self.accept(close):
                return tuple(items)
            self.expect(",", f"or '{close}' between arguments")


_TEMPLATES = frozenset({"static_cast", "reinterpret_cast", "const_cast", "dynamic_cast"})


def _looks_templated(parts: list[str]) -> bool:
    """`std::vector<...>`, `static_cast<...>`: a name C++ code follows with `<` for templates."""
    return parts[-1] in _TEMPLATES or (len(parts) > 1 and parts[0] in ("std", "c10", ""))
