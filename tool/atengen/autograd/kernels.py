"""Autograd-key kernels (and ADInplaceOrView kernels) of one function, as template data.

- functional and in-place ops: record the backward node, save what the formulas need,
  redispatch below autograd, then attach the outputs to the node and set forward-mode tangents;
- out= ops: refuse inputs or outputs that require grad and tangents, as torch's own out= ops do
  (autograd does not differentiate through out=), then redispatch;
- ADInplaceOrView: bump the version counters of what a mutating op wrote.

Kernels call the operator below them through `api/calls.py`'s OpRef: aten ops through
`at::_ops::<op>::redispatch`, custom ops through a typed handle.
"""

from __future__ import annotations

from atengen.api.calls import OpRef
from atengen.api.cpp_types import cpp_arguments, dispatcher_options, returns_type
from atengen.autograd.cpp_names import formula_outputs, return_names
from atengen.autograd.formulas import uses
from atengen.autograd.model import DEFAULT_KEY, DifferentiabilityInfo, FunctionDerivatives
from atengen.autograd.nodes import OWNING, saved_kind, unsupported
from atengen.model.native_function import NativeFunction
from atengen.model.schema import SchemaKind

_OPTIONAL_TENSOR = "const ::std::optional<at::Tensor> &"


def handle_var(op: OpRef) -> str:
    """The C++ function returning op's typed handle (custom ops only)."""
    name = op.name.split("::", 1)[1]
    return f"op_{name}__{op.overload}" if op.overload else f"op_{name}"


def redispatch(op: OpRef, keys: str, args: str) -> str:
    if op.aten_call:
        return f"{op.aten_call.removesuffix('::call')}::redispatch({keys}, {args})"
    return f"{handle_var(op)}().redispatch({keys}, {args})"


def _signature(f: NativeFunction) -> tuple[str, list[str], str]:
    opts = dispatcher_options(f)
    args = cpp_arguments(f.func, opts)
    return (
        returns_type(f.func.returns, opts),
        [a.decl() for a in args],
        ", ".join(a.name for a in args),
    )


def _kernel_data(f: NativeFunction, suffix: str, body: list[str]) -> dict:
    ret, params, _ = _signature(f)
    return {
        "name": str(f.name),
        "fn": f"{f.name.unambiguous_name()}_{suffix}",
        "ret": ret,
        "params": params,
        "body": body,
    }


def autograd_kernel(fd: FunctionDerivatives, info: DifferentiabilityInfo, op: OpRef) -> dict:
    f = fd.func
    if info.output_differentiability_conditions:
        raise unsupported(info, "conditions in output_differentiability")
    inplace = f.kind is SchemaKind.inplace
    _, _, call_args = _signature(f)
    diff = [a.name for a in info.args_with_derivatives]
    types = {a.name: a.cpp_type for a in info.args_with_derivatives}
    body = []
    if info.has_derivatives:
        body += [
            f"bool _any_requires_grad = any_requires_grad({', '.join(diff)});",
            *(["check_inplace(self, _any_requires_grad);"] if inplace else []),
            f"c10::intrusive_ptr<{info.op}> grad_fn;",
            "if (_any_requires_grad) {",
            f"  grad_fn = c10::make_intrusive<{info.op}>();",
            f"  grad_fn->set_next_edges(torch::autograd::collect_next_edges({', '.join(diff)}));",
        ]
        body += [
            f"  grad_fn->{n}_size_ = {n}.size();" for n in diff if types[n] == "at::TensorList"
        ]
        for s in info.all_saved_inputs:
            kind = saved_kind(info, s)
            if kind == "tensor":
                value = f"{s.expr}.clone()" if inplace and s.expr == "self" else s.expr
                body.append(
                    f"  grad_fn->{s.name}_ = torch::autograd::SavedVariable({value}, false);"
                )
            elif kind == "list":
                body.append(f"  grad_fn->{s.name}_ = make_saved_list({s.expr}, false);")
            else:
                suffix = OWNING.get(s.cpp_type, ("", ""))[1]
                body.append(f"  grad_fn->{s.name} = {s.expr}{suffix};")
        body.append("}")
    forward = (fd.forward_derivatives or {}).get(DEFAULT_KEY, ())
    tangent_inputs = sorted(
        {n for x in forward for n in (x.required_inputs_fw_grad or ()) if n in diff}
    )
    for n in tangent_inputs:
        if types[n] not in ("const at::Tensor &", _OPTIONAL_TENSOR):
            raise unsupported(info, f"a forward formula reading the tangents of '{n}'")
    if not forward and diff:
        # As torch's kernels do: a tangent cannot silently get lost.
        body += [
            "TORCH_CHECK_NOT_IMPLEMENTED(",
            f"    !({' || '.join(f'has_fw_grad({n})' for n in diff)}),",
            f'    "Trying to use forward AD with {f.func.name.name} that does not support it '
            "because it has not been implemented yet (no forward formula in the derivatives "
            'YAML).");',
        ]
    if forward:
        checks = " || ".join(f"has_fw_grad({n})" for n in tangent_inputs) or "false"
        body.append(f"bool _any_has_forward_grad = {checks};")
        if any(x.required_original_self_value for x in forward):
            body += [
                "at::Tensor original_self;",
                "if (_any_has_forward_grad) original_self = self.clone();",
            ]
    body += [
        "auto _result = [&]() {",
        "  at::AutoDispatchBelowADInplaceOrView guard;",
        f"  return {redispatch(op, 'ks & c10::after_autograd_keyset', call_args)};",
        "}();",
    ]
    outputs = [n for n, _ in formula_outputs(info.func)]
    output_types = dict(formula_outputs(info.func))
    if inplace:
        body.append("auto& result = self;")
    elif len(outputs) == 1:
        body.append(f"auto& {outputs[0]} = _result;")
    else:
        body += [f"auto& {n} = std::get<{i}>(_result);" for i, n in enumerate(outputs)]
    if info.has_derivatives:
        body.append("if (grad_fn) {")
        targets = ["self"] if inplace else _differentiable_outputs(info, outputs, output_types)
        for t in targets:
            if not inplace and output_types[t] != "at::Tensor":
                raise unsupported(info, f"the output '{t}' ({output_types[t]}) in a graph")
            body.append(f"  auto {t}_nr = grad_fn->add_input_metadata({t});")
            edge = "rebase_history" if inplace else "set_gradient_edge"
            body.append(
                f"  torch::autograd::impl::{edge}({t}, torch::autograd::Edge(grad_fn, {t}_nr));"
            )
        body.append("}")
    if forward:
        body += _forward_lines(info, forward, tangent_inputs, types, inplace)
    if info.all_saved_outputs:
        # Saved after the tangents are set, so that the saved outputs carry them
        # (forward-over-reverse differentiates the backward formulas).
        body.append("if (grad_fn) {")
        for s in info.all_saved_outputs:
            kind = saved_kind(info, s)
            if kind == "list":
                body.append(f"  grad_fn->{s.name}_ = make_saved_list({s.name}, true);")
            elif kind == "value":  # a non-tensor output, such as a SymInt
                body.append(f"  grad_fn->{s.name} = {s.name};")
            else:
                body.append(
                    f"  grad_fn->{s.name}_ = torch::autograd::SavedVariable({s.name}, true, "
                    f"{'self.is_view()' if inplace else 'false'});"
                )
        body.append("}")
    body.append("return self;" if inplace else "return _result;")
    return _kernel_data(f, "autograd", body)


def _differentiable_outputs(
    info: DifferentiabilityInfo, outputs: list[str], types: dict[str, str]
) -> list[str]:
    """The outputs the node gets gradients for. Without output_differentiability: the tensor
    outputs, and of those only the first when the formulas read the single `grad` (as in
    torch, where `cummax`'s indices or `frexp`'s exponent never require grad)."""
    if info.output_differentiability:
        return [n for n, d in zip(outputs, info.output_differentiability, strict=True) if d]
    tensors = [n for n in outputs if types[n] == "at::Tensor"]
    if any(uses(d.formula, "grad") for d in info.derivatives):
        return tensors[:1]
    return tensors


def _forward_lines(info, forward, tangent_inputs, types, inplace) -> list[str]:
    body = ["if (_any_has_forward_grad) {"]
    for n in tangent_inputs:
        body += [f"  auto {n}_t_raw = fw_grad_of({n});", f"  auto {n}_t = fw_grad_or_zeros({n});"]
    primals = sorted({n for x in forward for n in (x.required_inputs_primal or ())})
    body += [f"  auto {n}_p = primal_of({n});" for n in primals]
    if any(x.required_original_self_value for x in forward):
        body += [
            "  auto original_self_t = fw_grad_or_zeros(original_self);",
            "  auto original_self_p = original_self._fw_primal(/*level=*/0);",
        ]
    for x in forward:
        if len(x.var_names) != 1:
            raise unsupported(info, "a forward formula for several outputs")
        out = x.var_names[0]
        body += [
            f"  auto {out}_new_fw_grad = {x.formula};",
            f"  if ({out}_new_fw_grad.defined() && {out}.defined()) {{",
            f"    {out}._set_fw_grad({out}_new_fw_grad, /*level=*/0, "
            f"/*is_inplace_op=*/{'true' if inplace else 'false'});",
            "  }",
        ]
    body.append("}")
    return body


def out_kernel(f: NativeFunction, info: DifferentiabilityInfo, op: OpRef) -> dict:
    """An out= op: autograd does not differentiate through it, so inputs that would need
    gradients, outputs that require grad, and tangents are errors, with torch's messages."""
    _, _, call_args = _signature(f)
    outs = [a.name for a in f.func.arguments.out]
    diff = [a.name for a in info.args_with_derivatives]
    name = str(f.func.name.name)
    message = (
        f"\"{name}(): functions with out=... arguments don't support automatic "
        'differentiation, but one of the arguments requires grad."'
    )
    body = []
    if diff:
        body.append(f"TORCH_CHECK(!any_requires_grad({', '.join(diff)}), {message});")
    body += [
        f"TORCH_CHECK(!any_requires_grad({', '.join(outs)}), {message});",
        "TORCH_CHECK_NOT_IMPLEMENTED(",
        f"    !({' || '.join(f'has_fw_grad({n})' for n in diff + outs)}),",
        f'    "Trying to use forward AD with {f.name.unambiguous_name()} that does not support '
        'it because it is an out= function");',
        "at::AutoDispatchBelowADInplaceOrView guard;",
        f"return {redispatch(op, 'ks & c10::after_autograd_keyset', call_args)};",
    ]
    return _kernel_data(f, "autograd", body)


def inplace_or_view_kernel(f: NativeFunction, op: OpRef) -> dict | None:
    """Bumps the version counter of every argument f writes (in-place and out= ops)."""
    args = cpp_arguments(f.func, dispatcher_options(f))
    mutated = [a.name for a in args if a.argument.is_write]
    names = return_names(f)
    if not mutated or f.is_view_op:
        return None
    _, _, call_args = _signature(f)
    body = [
        "{",
        "  at::AutoDispatchBelowADInplaceOrView guard;",
        f"  {redispatch(op, 'ks & c10::after_ADInplaceOrView_keyset', call_args)};",
        "}",
        *(f"torch::autograd::impl::bump_version({m});" for m in mutated),
        _return_of(names),
    ]
    why = "bump the version counters of what it mutates, so that saved tensors can tell"
    return {**_kernel_data(f, "inplace_or_view", body), "why": why + " they were overwritten"}


def view_kernel(f: NativeFunction, info: DifferentiabilityInfo, op: OpRef) -> dict:
    """ADInplaceOrView kernel of a view op (`Tensor(a) self -> Tensor(a)`): its output becomes
    a differentiable view of the aliased input, so that autograd sees in-place updates through
    either of them and replays the view (as_strided) where it must."""
    returns = f.func.returns
    if len(returns) != 1 or returns[0].annotation is None or str(returns[0].type) != "Tensor":
        raise unsupported(info, "view ops that do not return exactly one Tensor")
    aliases = returns[0].annotation.alias_set
    bases = [
        a
        for a in f.func.arguments.flat_non_out
        if a.annotation is not None and a.annotation.alias_set == aliases
    ]
    if len(bases) != 1 or str(bases[0].type) != "Tensor":
        raise unsupported(info, "view ops whose output aliases no single Tensor input")
    _, _, call_args = _signature(f)
    body = [
        "auto _tmp = ([&]() {",
        "  at::AutoDispatchBelowADInplaceOrView guard;",
        f"  return {redispatch(op, 'ks & c10::after_ADInplaceOrView_keyset', call_args)};",
        "})();",
        "return torch::autograd::as_view(",
        f"    /*base=*/{bases[0].name}, /*tensor=*/_tmp, /*is_bw_differentiable=*/true,",
        "    /*is_fw_differentiable=*/true, /*view_func=*/nullptr, /*rev_view_func=*/nullptr,",
        "    at::GradMode::is_enabled() ? torch::autograd::CreationMeta::DEFAULT",
        "                               : torch::autograd::CreationMeta::NO_GRAD_MODE);",
    ]
    why = "make its output a differentiable view of its base"
    return {**_kernel_data(f, "inplace_or_view", body), "why": why}


def _return_of(names: tuple[str, ...]) -> str:
    if not names:
        return "return;"
    if len(names) == 1:
        return f"return {names[0]};"
    return f"return ::std::forward_as_tuple({', '.join(names)});"
