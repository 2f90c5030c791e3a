"""Structured kernels: the meta and impl classes, their C++ names and declarations.

A structured op is written once as a ``meta`` function (shapes, dtypes, checks; it calls
``set_output_*``) and an ``impl`` per dispatch key (the math, into outputs that already have
the right shape). Its functional, in-place and out= kernels are generated wrappers that
subclass the impl class (see `wrappers.structured_wrapper`).

For ``aten`` the wheel declares both classes (``at::meta::structured_<op>`` in
``ATen/ops/<root>_meta.h``, ``at::native::structured_<kernel>`` in ``<root>_native.h``). A
custom namespace ``ns`` gets them from us, with the same shape:

- the meta class ``ns::meta::structured_<functional op>``, derived from
  ``at::<structured_inherits>`` (``at::impl::MetaBase`` by default), whose ``meta()`` returns
  a ``precompute_out`` struct when the op has ``precomputed:`` values;
- one impl class per structured dispatch entry, ``<kernel's C++ namespace>::structured_<kernel>``,
  derived from the meta class.
"""

from __future__ import annotations

import re

from atengen.api.cpp_types import TypeOptions, argument_type
from atengen.model.groups import NativeFunctionsGroup
from atengen.model.native_function import NativeFunction
from atengen.model.schema import Argument
from atengen.render.templates import Templates

# The structured kernel API: like the native API with plain ints, except for optional
# tensors and scalars (passed as references that may be empty) and tensor lists.
_STRUCTURED_OPTIONS = TypeOptions(symint=False, ilistref_for_tensor_lists=True)
_STRUCTURED_SPECIAL = {
    "Tensor?": "at::OptionalTensorRef",
    "Scalar?": "at::OptionalScalarRef",
    "Tensor?[]": "at::IOptTensorListRef",
}


def structured_argument_type(a: Argument) -> str:
    special = _STRUCTURED_SPECIAL.get(str(a.type))
    if special is not None:
        return special
    return argument_type(a.type, mutable=False, opts=_STRUCTURED_OPTIONS)


def meta_namespace(f: NativeFunction) -> str:
    return "at::meta" if f.namespace == "aten" else f"{f.namespace}::meta"


def meta_class(g: NativeFunctionsGroup) -> str:
    """The qualified meta class: `at::meta::structured_add_Tensor`."""
    return f"{meta_namespace(g.out)}::structured_{g.functional.name.unambiguous_name()}"


def impl_class(g: NativeFunctionsGroup, key: str) -> str:
    """The qualified impl class of key's kernel: `at::native::structured_ufunc_add_CPU`."""
    kernel = g.out.dispatch[key]
    return f"{kernel.cpp_namespace}::structured_{kernel.kernel}"


def macro_prefix(namespace: str) -> str:
    """`MY_OPS` for `my_ops`: the prefix of the helper macros of a custom namespace."""
    return re.sub(r"[^A-Za-z0-9]", "_", namespace).upper()


def _precomputed_elements(g: NativeFunctionsGroup) -> list[tuple[str, str]]:
    """(C++ type, name) of every precomputed value, in declaration order."""
    pre = g.out.precomputed
    if pre is None:
        return []
    args = [a for _, new in pre.replace for a in new] + list(pre.add)
    return [(_strip_ref(structured_argument_type(a)), a.name) for a in args]


def _strip_ref(cpp_type: str) -> str:
    t = cpp_type.removesuffix(" &")
    return t.removeprefix("const ") if t != cpp_type else t


def meta_params(g: NativeFunctionsGroup) -> list[str]:
    return [f"{structured_argument_type(a)} {a.name}" for a in g.out.func.arguments.flat_non_out]


def impl_params(g: NativeFunctionsGroup) -> list[str]:
    pre = g.out.precomputed
    replaced = dict(pre.replace) if pre is not None else {}
    params = []
    for a in g.out.func.arguments.flat_non_out:
        for new in replaced.get(a.name, (a,)):
            params.append(f"{structured_argument_type(new)} {new.name}")
    if pre is not None:
        params += [f"{structured_argument_type(a)} {a.name}" for a in pre.add]
    params += [f"const at::Tensor & {a.name}" for a in g.out.func.arguments.out]
    return params


def meta_base(g: NativeFunctionsGroup) -> str:
    inherits = g.out.structured_inherits
    return f"at::{inherits}" if inherits is not None else "at::impl::MetaBase"


def meta_class_declaration(g: NativeFunctionsGroup, templates: Templates) -> str:
    """`struct structured_<op> : <base> {...}`, without the closing semicolon."""
    elements = _precomputed_elements(g)
    return templates.render(
        "structured_meta_class.h.j2",
        class_name=meta_class(g).rpartition("::")[2],
        base=meta_base(g),
        elements=elements,
        flags=[name.upper() for _, name in elements],
        params=meta_params(g),
    ).rstrip()


def impl_class_declaration(g: NativeFunctionsGroup, key: str) -> str:
    return (
        f"struct {impl_class(g, key).rpartition('::')[2]} : public ::{meta_class(g)} {{\n"
        f"  void impl({', '.join(impl_params(g))});\n"
        "}"
    )


def class_declarations(
    g: NativeFunctionsGroup, key: str | None, templates: Templates
) -> tuple[tuple[str, str], ...]:
    """(C++ namespace, declaration) of a custom structured op's meta class and, for a key
    with a structured kernel, its impl class: what a wrapper for the key derives from."""
    decls = [(meta_namespace(g.out), meta_class_declaration(g, templates))]
    if key is not None:
        decls.append((impl_class(g, key).rpartition("::")[0], impl_class_declaration(g, key)))
    return tuple(decls)


def needs_tensor_iterator(g: NativeFunctionsGroup) -> bool:
    return g.out.structured_inherits is not None
