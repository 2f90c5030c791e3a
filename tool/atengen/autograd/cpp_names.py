"""C++ API names and types of a function's arguments and returns, as formulas see them."""

from __future__ import annotations

from atengen.api.cpp_types import TypeOptions, argument_type, return_type
from atengen.autograd.model import DiffArgument
from atengen.cached import cached_on_first_argument
from atengen.model.native_function import NativeFunction
from atengen.model.schema import Argument


def api_options(f: NativeFunction) -> TypeOptions:
    return TypeOptions(
        symint=True,
        const_ref_for_mutable_tensors=f.use_const_ref_for_mutable_tensors,
        ilistref_for_tensor_lists=f.part_of_structured_group,
    )


@cached_on_first_argument  # several entries and variants ask for one function's
def api_arguments(f: NativeFunction) -> tuple[DiffArgument, ...]:
    """The C++ API's arguments (SymInt kept): non-out arguments, with the four
    TensorOptions kwargs of a factory function packed into one `options`."""
    opts = api_options(f)
    args = f.func.arguments

    def one(a: Argument) -> DiffArgument:
        return DiffArgument(a.name, argument_type(a.type, mutable=a.is_write, opts=opts), a)

    packed = (DiffArgument("options", "at::TensorOptions", None),) if args.tensor_options else ()
    return (
        tuple(one(a) for a in args.flat_positional + args.pre_tensor_options_kwarg_only)
        + packed
        + tuple(one(a) for a in args.post_tensor_options_kwarg_only)
    )


def value_type(cpp_type: str) -> str:
    """`const at::Tensor &` -> `at::Tensor`: the type a node stores a value as."""
    t = cpp_type.removeprefix("const ").removesuffix("&").rstrip()
    return t


def return_names(f: NativeFunction) -> tuple[str, ...]:
    """Names the C++ API gives the returns: `self` for in-place ops, the out
    argument's name for out= ops, the schema's name (plus `_return` when an
    argument has it), else `result` or `result<i>`."""
    func = f.func
    arg_names = {a.name for a in func.arguments.flat_all}
    names = []
    for i, r in enumerate(func.returns):
        if func.name.name.inplace:
            name = "self"
        elif func.arguments.out:
            name = func.arguments.out[i].name
        elif r.name:
            name = f"{r.name}_return" if r.name in arg_names else r.name
        else:
            name = "result" if len(func.returns) == 1 else f"result{i}"
        names.append(name)
    return tuple(names)


def formula_outputs(f: NativeFunction) -> tuple[tuple[str, str], ...]:
    """(name, value type) of each return as backward formulas name it (`self` is `result`)."""
    opts = api_options(f)
    return tuple(
        ("result" if n == "self" else n, value_type(return_type(r, opts)))
        for n, r in zip(return_names(f), f.func.returns, strict=True)
    )
