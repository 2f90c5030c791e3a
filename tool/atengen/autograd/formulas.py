"""Formula text: identifiers, gradient references and saved-attribute substitution.

Formulas are C++ expressions. The generator never parses them as C++; it finds
whole identifiers (`self` but not `self_t` or `myself`) and a fixed set of
property calls on inputs and outputs that can be evaluated when the backward
node is built, so the node saves a small value instead of a tensor.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from atengen.autograd.model import SavedAttribute
from atengen.cached import interned

GRADS_INDEX_RE = re.compile(r"(?<!\w)grads\[(\d+)\]")
RESULT_INDEX_RE = re.compile(r"^result(\d+)$")


class FormulaError(ValueError):
    """A formula breaks a rule; the loader adds the location."""


@interned
def ident_re(name: str) -> re.Pattern[str]:
    """`name` as a whole identifier: not part of a longer word."""
    return re.compile(rf"(?<!\w){re.escape(name)}(?!\w)")


def uses(formula: str, name: str) -> bool:
    return name in formula and ident_re(name).search(formula) is not None


def replace_ident(formula: str, name: str, replacement: str) -> str:
    if name not in formula:
        return formula
    return ident_re(name).sub(replacement.replace("\\", "\\\\"), formula)


def used_gradient_indices(formula: str) -> list[int]:
    return [int(i) for i in GRADS_INDEX_RE.findall(formula)]


@dataclass(frozen=True, slots=True)
class _Property:
    """A property call `<var><call>` replaced by the saved member `<var><suffix>`."""

    call: str  # regex of what follows the variable name
    suffix: str | Callable[[re.Match[str]], str]
    cpp_type: str
    prefix: str = ""  # for calls written as `f(<var>)`: the regex before the name
    save_expr: Callable[[str], str] | None = None  # default: the matched text
    use_expr: Callable[[str], str] | None = None  # default: the member's name
    trigger: str = ""  # a substring the formula must contain for the regex to match


_SYM_INT_ARRAY = "c10::SymIntArrayRef"
_OPT_SYM_INT_ARRAY = "::std::optional<c10::SymIntArrayRef>"

# Checked per variable in this order; the order decides the order of the saved members.
_PROPERTIES = (
    _Property(r"\.sym_sizes\(\)", "_sym_sizes", _SYM_INT_ARRAY, trigger=".sym_sizes()"),
    _Property(
        r"->sym_sizes\(\)",
        "_sym_sizes_opt",
        _OPT_SYM_INT_ARRAY,
        save_expr=lambda n: (
            f"{n}.has_value() ? std::optional<c10::SymIntArrayRef>({n}->sym_sizes()) : std::nullopt"
        ),
        trigger="->sym_sizes()",
    ),
    _Property(
        r"\.sym_blocksize\(\)",
        "_self_sym_blocksize_opt",
        _OPT_SYM_INT_ARRAY,
        save_expr=lambda n: f"at::sparse_csr::getSymIntBlockSize({n})",
        trigger=".sym_blocksize()",
    ),
    _Property(r"\.options\(\)", "_options", "at::TensorOptions", trigger=".options()"),
    _Property(
        r"\)",
        "_info",
        "torch::autograd::generated::TypeAndSize",
        prefix=r"zeros_like\(",
        save_expr=lambda n: n,
        use_expr=lambda n: f"{n}_info.zeros()",
        trigger="zeros_like(",
    ),
    _Property(
        r"\.sym_size\((-?\w+)\)",
        lambda m: "_sym_argsize_" + m.group(1).replace("-", "minus_"),
        "c10::SymInt",
        trigger=".sym_size(",
    ),
    _Property(r"\.numel\(\)", "_numel", "int64_t", trigger=".numel()"),
    _Property(r"\.sym_numel\(\)", "_sym_numel", "c10::SymInt", trigger=".sym_numel()"),
    _Property(
        r"\)",
        "_args_sizes",
        "::std::vector<::std::vector<int64_t>>",
        prefix=r"to_args_sizes\(",
        trigger="to_args_sizes(",
    ),
    _Property(
        r"\)",
        "_args_sizes_symint",
        "::std::vector<::std::vector<c10::SymInt>>",
        prefix=r"to_args_sizes_symint\(",
        trigger="to_args_sizes_symint(",
    ),
    _Property(
        r"\)",
        "_args_scalartypes",
        "::std::vector<at::ScalarType>",
        prefix=r"to_args_scalartypes\(",
        trigger="to_args_scalartypes(",
    ),
    _Property(
        r"\)", "_geometry", "at::TensorGeometry", prefix=r"TensorGeometry\(", trigger="Geometry("
    ),
    _Property(r"\.scalar_type\(\)", "_scalar_type", "at::ScalarType", trigger=".scalar_type()"),
    _Property(r"\.dim\(\)", "_dim", "int64_t", trigger=".dim()"),
    _Property(r"\.sym_strides\(\)", "_sym_strides", _SYM_INT_ARRAY, trigger=".sym_strides()"),
    _Property(r"\.layout\(\)", "_layout", "at::Layout", trigger=".layout()"),
    _Property(r"\.is_conj\(\)", "_conjugate", "bool", trigger=".is_conj()"),
)
_STRIDES = _PROPERTIES[14]

_FORBIDDEN = (
    (re.compile(r"(\.|->)sizes\(\)"), ".sizes()", ".sym_sizes(), which is a c10::SymIntArrayRef"),
    (re.compile(r"(\.|->)size\(-?\d+\)"), ".size(int)", ".sym_size(int), which is a c10::SymInt"),
    (
        re.compile(r"(\.|->)strides\(\)"),
        ".strides()",
        ".sym_strides(), which is a c10::SymIntArrayRef",
    ),
)


@interned
def _property_re(p: _Property, name: str) -> re.Pattern[str]:
    # `at::zeros_like(x)` is a qualified call, not the property `zeros_like(x)`.
    before = r"(?<![\w:.])" if p.prefix else ""
    return re.compile(rf"{before}{p.prefix}(?<![\w.]){re.escape(name)}{p.call}")


# A free name: not a member (`x.f`, `p->f`) nor qualified (`at::f`), except by the helpers' own
# namespace; `(` after it makes it a call.
_FREE_NAME_RE = re.compile(r"(?:(?<![\w.:>])|(?<=details::))([A-Za-z_]\w*)(\s*\()?")
_STRING_RE = re.compile(r'"(?:[^"\\]|\\.)*"')


def free_names(formula: str) -> dict[str, bool]:
    """The free names a formula uses (string literals aside), each with whether it calls it."""
    names: dict[str, bool] = {}
    for name, call in _FREE_NAME_RE.findall(_STRING_RE.sub('""', formula)):
        names[name] = names.get(name, False) or bool(call)
    return names


def check_forbidden_calls(formula: str) -> None:
    for pattern, what, instead in _FORBIDDEN:
        if pattern.search(formula):
            raise FormulaError(
                f"{what} is not supported in derivative formulas (it breaks with symbolic "
                f"shapes); use {instead}"
            )


def save_variables(
    formula: str, variables: Iterable[tuple[str, str]], var_names: tuple[str, ...]
) -> tuple[str, tuple[SavedAttribute, ...]]:
    """Substitute saved properties of `variables` ((name, C++ value type) pairs)
    into `formula`, and list every member the backward node must save."""
    saved: list[SavedAttribute] = []
    for name, cpp_type in variables:
        if name not in formula:
            continue
        for p in _PROPERTIES:
            if p.trigger not in formula:
                continue

            def substitute(m: re.Match[str], p: _Property = p, name: str = name) -> str:
                suffix = p.suffix(m) if callable(p.suffix) else p.suffix
                if p is _STRIDES:
                    if var_names != (name,):
                        raise FormulaError(
                            "'.sym_strides()' may only be used in the formula of that same "
                            f"tensor alone ('{name}'), not of {', '.join(var_names)}"
                        )
                    expr = f'strides_or_error({name}, "{name}")'
                else:
                    expr = p.save_expr(name) if p.save_expr else m.group(0)
                saved.append(SavedAttribute(name + suffix, p.cpp_type, expr))
                return p.use_expr(name) if p.use_expr else name + suffix

            formula = _property_re(p, name).sub(substitute, formula)
        if cpp_type == "::std::optional<c10::string_view>" and uses(formula, name):
            # Nodes store std::optional<std::string>; formulas take string views.
            formula = replace_ident(
                formula,
                name,
                f"{name}.has_value() ? std::optional<std::string_view>({name}.value()) "
                ": std::nullopt",
            )
        if uses(formula, name):
            saved.append(SavedAttribute(name, cpp_type, name))
    return formula, tuple(saved)


def check_grad_usage(entry: str, formulas: list[str], uses_named_gradients: bool) -> None:
    """Mistakes that compile but break double backward."""
    uses_grad = any(uses(f, "grad") for f in formulas)
    grads_uses = sum(len(ident_re("grads").findall(f)) for f in formulas if "grads" in f)
    indices = [i for f in formulas for i in used_gradient_indices(f)]
    if uses_grad and grads_uses:
        raise FormulaError(
            f"the formulas of {entry} mix 'grad' and 'grads'; write 'grads[0]' instead of 'grad'"
        )
    if grads_uses == len(indices) and set(indices) == {0}:
        raise FormulaError(
            f"the formulas of {entry} use only 'grads[0]'; if the first output is the only "
            "differentiable one, write 'grad' instead"
        )
    if uses_named_gradients and (uses_grad or grads_uses):
        raise FormulaError(
            f"the formulas of {entry} mix 'grad_<output name>' with 'grad' or 'grads[i]'; use one"
        )


def dedup_saved(saved: Iterable[SavedAttribute]) -> tuple[SavedAttribute, ...]:
    """The first attribute of each name, in order."""
    seen: dict[str, SavedAttribute] = {}
    for s in saved:
        seen.setdefault(s.name, s)
    return tuple(seen.values())


def op_class_prefix(name: str) -> str:
    """`add_` -> `AddBackward`, `conv2d` -> `Conv2DBackward` (title case of each `_` part)."""
    camel = "".join(part.title() for part in name.split("_"))
    return (camel + "Backward").replace("ForwardBackward", "Backward")
