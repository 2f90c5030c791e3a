"""C++ autograd for one operator namespace, one file per operator root.

Each file holds the backward Node subclasses of the root's derivative entries,
its Autograd-key kernels (record the graph, save what the formulas need,
redispatch below autograd through typed operator handles, compute forward-mode
tangents) and the ADInplaceOrView kernels of its mutating ops. Everything is
inside ``<cpp_namespace>::autograd_generated``, so node names never clash with
libtorch's own ``torch::autograd::generated`` classes, and only calls what the
torch wheel exports.

Not generated yet (an error names the entry): formulas for several inputs at
once (`x, y: ...`), saved tensor lists or optional tensors, view ops, and keys
other than Default.
"""

from __future__ import annotations

from dataclasses import dataclass

from atengen.autograd.cpp_names import formula_outputs, return_names
from atengen.autograd.model import DEFAULT_KEY, DerivativesModel, DifferentiabilityInfo
from atengen.emit.cpp_types import cpp_arguments, dispatcher_options, function_type, returns_type
from atengen.emit.output import GeneratedFile
from atengen.emit.shards import root_name
from atengen.emit.templates import render
from atengen.errors import AtengenError
from atengen.model.native_function import NativeFunction
from atengen.model.operator_model import OperatorModel
from atengen.model.schema import SchemaKind
from atengen.model.schema_types import TENSOR

# Non-owning C++ types a node must store as an owning copy.
_OWNING = {
    "c10::SymIntArrayRef": ("::std::vector<c10::SymInt>", ".vec()"),
    "at::IntArrayRef": ("::std::vector<int64_t>", ".vec()"),
    "c10::string_view": ("std::string", ""),
}


@dataclass
class _Handle:
    var: str
    name: str
    overload: str
    type: str


def _handle(f: NativeFunction) -> _Handle:
    return _Handle(
        f"op_{f.name.unambiguous_name()}",
        str(f.name.name),
        f.name.overload_name,
        function_type(f.func, dispatcher_options(f)),
    )


def _unsupported(info: DifferentiabilityInfo, what: str) -> AtengenError:
    return AtengenError(info.loc, f"autograd codegen does not support {what} yet ('{info.name}')")


def _node(info: DifferentiabilityInfo) -> dict:
    members, saved_variables, unpack = [], [], []
    inputs = [a.name for a in info.args_with_derivatives]
    for a in info.args_with_derivatives:
        if a.argument is None or a.argument.type != TENSOR:
            raise _unsupported(info, f"gradients of '{a.name}' ({a.cpp_type})")
    for attrs, is_output in ((info.all_saved_inputs, False), (info.all_saved_outputs, True)):
        for s in attrs:
            if s.cpp_type == "at::Tensor":
                members.append(f"torch::autograd::SavedVariable {s.name}_")
                saved_variables.append(s.name)
                owner = "getptr()" if is_output else "nullptr"
                unpack.append(f"auto {s.name} = {s.name}_.unpack({owner});")
            elif "Tensor" in s.cpp_type:
                raise _unsupported(info, f"saving '{s.name}' ({s.cpp_type})")
            else:
                members.append(f"{_OWNING.get(s.cpp_type, (s.cpp_type,))[0]} {s.name}")
    if any(d.formula and "grad" in d.formula for d in info.derivatives):
        unpack.append("const auto& grad = grads[0];")
    for i, g in enumerate(info.available_named_gradients):
        unpack.append(f"const auto& {g} = grads[{i}];")
    derivatives = []
    for d in info.derivatives:
        if len(d.var_names) != 1:
            raise _unsupported(info, f"one formula for several inputs ({', '.join(d.var_names)})")
        derivatives.append({"index": inputs.index(d.var_names[0]), "formula": d.formula})
    return {
        "cls": info.op,
        "entry": f"{info.func.namespace}::{info.func.func.name}",
        "location": str(info.loc),
        "members": members,
        "saved_variables": saved_variables,
        "unpack": unpack,
        "inputs": inputs,
        "derivatives": derivatives,
    }


def _kernel(fd, info: DifferentiabilityInfo, handle: _Handle) -> dict:
    f = fd.func
    inplace = f.kind is SchemaKind.inplace
    args = cpp_arguments(f.func, dispatcher_options(f))
    call_args = ", ".join(a.name for a in args)
    diff = [a.name for a in info.args_with_derivatives]
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
        for s in info.all_saved_inputs:
            if s.cpp_type == "at::Tensor":
                value = f"{s.expr}.clone()" if inplace and s.expr == "self" else s.expr
                body.append(
                    f"  grad_fn->{s.name}_ = torch::autograd::SavedVariable({value}, false);"
                )
            else:
                suffix = _OWNING.get(s.cpp_type, ("", ""))[1]
                body.append(f"  grad_fn->{s.name} = {s.expr}{suffix};")
        body.append("}")
    forward = (fd.forward_derivatives or {}).get(DEFAULT_KEY, ())
    tangent_inputs = sorted(
        {n for x in forward for n in (x.required_inputs_fw_grad or ()) if n in diff}
    )
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
        f"  return {handle.var}().redispatch(ks & c10::after_autograd_keyset, {call_args});",
        "}();",
    ]
    outputs = [n for n, _ in formula_outputs(info.func)]
    if inplace:
        body.append("auto& result = self;")
    elif len(outputs) == 1:
        body.append(f"auto& {outputs[0]} = _result;")
    else:
        body += [f"auto& {n} = std::get<{i}>(_result);" for i, n in enumerate(outputs)]
    if info.has_derivatives:
        body.append("if (grad_fn) {")
        differentiable = info.output_differentiability or (True,) * len(outputs)
        targets = (
            ["self"] if inplace else [n for n, d in zip(outputs, differentiable, strict=True) if d]
        )
        for t in targets:
            body.append(f"  auto {t}_nr = grad_fn->add_input_metadata({t});")
            edge = "rebase_history" if inplace else "set_gradient_edge"
            body.append(
                f"  torch::autograd::impl::{edge}({t}, torch::autograd::Edge(grad_fn, {t}_nr));"
            )
        body.append("}")
    if forward:
        body.append("if (_any_has_forward_grad) {")
        for n in tangent_inputs:
            body += [
                f"  auto {n}_t_raw = {n}._fw_grad(/*level=*/0);",
                f"  auto {n}_t = fw_grad_or_zeros({n});",
            ]
        primals = sorted({n for x in forward for n in (x.required_inputs_primal or ())})
        body += [f"  auto {n}_p = {n}._fw_primal(/*level=*/0);" for n in primals]
        if any(x.required_original_self_value for x in forward):
            body += [
                "  auto original_self_t = fw_grad_or_zeros(original_self);",
                "  auto original_self_p = original_self._fw_primal(/*level=*/0);",
            ]
        for x in forward:
            if len(x.var_names) != 1:
                raise _unsupported(info, "a forward formula for several outputs")
            out = x.var_names[0]
            body += [
                f"  auto {out}_new_fw_grad = {x.formula};",
                f"  if ({out}_new_fw_grad.defined() && {out}.defined()) {{",
                f"    {out}._set_fw_grad({out}_new_fw_grad, /*level=*/0, "
                f"/*is_inplace_op=*/{'true' if inplace else 'false'});",
                "  }",
            ]
        body.append("}")
    if info.all_saved_outputs:
        # Saved after the tangents are set, so that the saved outputs carry them
        # (forward-over-reverse differentiates the backward formulas).
        body.append("if (grad_fn) {")
        for s in info.all_saved_outputs:
            body.append(
                f"  grad_fn->{s.name}_ = torch::autograd::SavedVariable({s.name}, true, "
                f"{'self.is_view()' if inplace else 'false'});"
            )
        body.append("}")
    body.append("return self;" if inplace else "return _result;")
    return {
        "name": str(f.name),
        "fn": f"{f.name.unambiguous_name()}_autograd",
        "ret": returns_type(f.func.returns, dispatcher_options(f)),
        "params": [a.decl() for a in args],
        "body": body,
    }


def _inplace_or_view_kernel(f: NativeFunction, handle: _Handle) -> dict | None:
    args = cpp_arguments(f.func, dispatcher_options(f))
    mutated = [a.name for a in args if a.argument.is_write]
    names = return_names(f)
    if not mutated or len(f.func.returns) > 1 or f.is_view_op:
        return None
    return {
        "name": str(f.name),
        "fn": f"{f.name.unambiguous_name()}_inplace_or_view",
        "ret": returns_type(f.func.returns, dispatcher_options(f)),
        "params": [a.decl() for a in args],
        "handle": handle.var,
        "args": ", ".join(a.name for a in args),
        "mutated": mutated,
        "returned": names[0] if names else "",
    }


def _linear_call(f: NativeFunction, handle: _Handle) -> dict:
    args = cpp_arguments(f.func, dispatcher_options(f))
    ret = returns_type(f.func.returns, dispatcher_options(f))
    name = str(f.name.name) + ("_symint" if f.func.has_symint() else "")
    return {
        "name": name,
        "signature": f"{ret} {name}({', '.join(a.decl() for a in args)})",
        "handle": handle.var,
        "args": ", ".join(a.name for a in args),
    }


def autograd_files(
    model: OperatorModel,
    derivatives: DerivativesModel,
    namespace: str,
    cpp_namespace: str,
    derivatives_yaml: str = "the derivatives YAML",
) -> list[GeneratedFile]:
    shards: dict[str, dict] = {}

    def shard(f: NativeFunction) -> dict:
        return shards.setdefault(
            root_name(f),
            {"handles": {}, "nodes": {}, "kernels": [], "inplace": [], "linear": {}},
        )

    for fd in derivatives.functions:
        f = fd.func
        if f.namespace != namespace or f.is_view_op:
            continue
        if f.kind in (SchemaKind.inplace, SchemaKind.out):
            kernel = _inplace_or_view_kernel(f, _handle(f))
            if kernel is not None:
                s = shard(f)
                s["handles"][kernel["handle"]] = _handle(f)
                s["inplace"].append(kernel)
        info = (fd.infos or {}).get(DEFAULT_KEY)
        if info is None or f.kind not in (SchemaKind.functional, SchemaKind.inplace):
            continue
        if len(fd.infos) > 1:
            raise _unsupported(info, "dispatch keys other than Default")
        s = shard(f)
        handle = _handle(f)
        s["handles"][handle.var] = handle
        if info.has_derivatives and info.op not in s["nodes"]:
            s["nodes"][info.op] = _node(info)
        for x in info.forward_derivatives:
            if f"{namespace}::{info.func.name.name}" in x.formula:
                linear = _handle(info.func)
                s["handles"][linear.var] = linear
                s["linear"][linear.var] = _linear_call(info.func, linear)
        s["kernels"].append(_kernel(fd, info, handle))
    files = []
    for root, s in sorted(shards.items()):
        text = render(
            "autograd_shard.cpp.j2",
            derivatives_yaml=derivatives_yaml,
            roots=[root],
            namespace=namespace,
            cpp_namespace=cpp_namespace,
            handles=list(s["handles"].values()),
            linear_calls=list(s["linear"].values()),
            nodes=list(s["nodes"].values()),
            kernels=s["kernels"],
            inplace_kernels=s["inplace"],
        )
        files.append(GeneratedFile(f"autograd_{root}.cpp", text))
    return files
