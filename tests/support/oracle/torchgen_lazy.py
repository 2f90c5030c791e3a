"""Reference lazy-tensor codegen facts computed with the installed upstream ``torchgen``.

``torchgen_lazy(backend_yaml, out_dir, ...)`` runs ``gen_lazy_tensor`` on the
packaged native_functions.yaml and returns, from torchgen's own data model and
the files it wrote: every IR node class with its operands and attributes (C++
types), the kernel declarations of ``<Backend>NativeFunctions.h``, the ops
registered in ``Register<Backend>.cpp`` (and the autograd key's), and the
compute_shape declarations it expects.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

import torchgen
import torchgen.gen
import yaml
from torchgen.api.lazy import LazyIrProperties, LazyIrSchema, setValueT
from torchgen.api.types import BaseCppType
from torchgen.dest.lazy_ir import GenLazyShapeInferenceDefinition, GenTSLazyIR
from torchgen.gen import get_grouped_native_functions, parse_native_yaml
from torchgen.gen_backend_stubs import parse_backend_yaml
from torchgen.gen_lazy_tensor import run_gen_lazy_tensor
from torchgen.model import FunctionSchema, OperatorName

ATEN = Path(torchgen.__file__).parent / "packaged" / "ATen"


@dataclass(frozen=True)
class NodeFacts:
    operands: tuple[tuple[str, str], ...]  # (name, C++ type), in order
    attributes: tuple[tuple[str, str], ...]


@dataclass(frozen=True)
class LazyFacts:
    nodes: dict[str, NodeFacts]  # class name -> facts (full_codegen + ir_gen)
    non_native_nodes: dict[str, NodeFacts]
    declarations: frozenset[str]  # lines of <Backend>NativeFunctions.h's class body
    registered: dict[str, frozenset[str]]  # dispatch key -> op names
    shape_declarations: frozenset[str]


def _facts(schema: LazyIrSchema) -> NodeFacts:
    def pairs(values: bool, scalars: bool):
        return tuple(
            (a.name, a.lazy_type.cpp_type())
            for a in schema.filtered_args(values=values, scalars=scalars)
        )

    return NodeFacts(pairs(True, False), pairs(False, True))


def torchgen_lazy(
    backend_yaml: str, out_dir: str, *, node_base: str, shape_inference_hdr: str | None
) -> LazyFacts:
    """torchgen's facts of one lazy backend YAML. The backend's entries that gen_lazy_tensor adds
    to parse_native_yaml's cached result are dropped before and after the run, so that the other
    oracles of the same process see torch's op YAML alone (the model's counts of dispatch keys and
    kernels would otherwise include the backend's)."""
    _forget_external_backends()
    try:
        return _torchgen_lazy(
            backend_yaml, out_dir, node_base=node_base, shape_inference_hdr=shape_inference_hdr
        )
    finally:
        _forget_external_backends()


def _torchgen_lazy(
    backend_yaml: str, out_dir: str, *, node_base: str, shape_inference_hdr: str | None
) -> LazyFacts:
    value_class = "torch::lazy::Value"
    run_gen_lazy_tensor(
        str(ATEN),
        backend_yaml,
        out_dir,
        False,
        None,
        node_base=node_base,
        shape_inference_hdr=shape_inference_hdr,
        lazy_ir_generator=GenTSLazyIR,
        lazy_value_class=value_class,
    )
    setValueT(BaseCppType("torch::lazy", "Value"))
    parsed = parse_native_yaml(
        str(ATEN / "native/native_functions.yaml"), str(ATEN / "native/tags.yaml")
    )
    grouped = get_grouped_native_functions(parsed.native_functions)
    indices = {k: v for k, v in parsed.backend_indices.items() if not v.external}
    backend = parse_backend_yaml(backend_yaml, grouped, indices)
    index = backend.backend_indices[backend.backend_key]
    with open(backend_yaml) as f:
        doc = yaml.safe_load(f)
    by_name = {f.func.name: f for f in parsed.native_functions}
    nodes = {}
    for name in doc.get("full_codegen", []) + doc.get("ir_gen", []):
        f = by_name[OperatorName.parse(name)]
        metadata = index.get_kernel(f)
        schema = LazyIrSchema(f.func, symint=metadata is not None and metadata.supports_symint())
        nodes[schema.node_name] = _facts(schema)
    non_native = {}
    for op in doc.get("non_native", []) or []:
        props = LazyIrProperties("ShapeCache", "CanBeReused", "LowerDeclOnly")
        for p in op.get("properties", []):
            setattr(props, p, True)
        schema = LazyIrSchema(FunctionSchema.parse(op["func"]), props, symint=True)
        non_native[schema.node_name] = _facts(schema)
    shape_decls = set()
    full = [by_name[OperatorName.parse(n)] for n in doc.get("full_codegen", [])]
    gen_shape = GenLazyShapeInferenceDefinition(index, "torch::lazy::LazyTensor")
    for f in full:
        shape_decls.update(gen_shape(f))
    key = backend.backend_key
    registered = {str(key): _registered(Path(out_dir) / f"Register{key}.cpp")}
    if backend.autograd_key is not None:
        ak = backend.autograd_key
        registered[str(ak)] = _registered(Path(out_dir) / f"Register{ak}.cpp")
    return LazyFacts(
        nodes=nodes,
        non_native_nodes=non_native,
        declarations=_declarations(Path(out_dir) / f"{key}NativeFunctions.h"),
        registered=registered,
        shape_declarations=frozenset(shape_decls),
    )


def _forget_external_backends() -> None:
    """gen_lazy_tensor adds the backend's index to parse_native_yaml's cached result, and
    refuses a second run for the same key ("Duplicate backend key"): drop those entries."""
    for parsed in torchgen.gen._GLOBAL_PARSE_NATIVE_YAML_CACHE.values():
        for key in [k for k, v in parsed.backend_indices.items() if v.external]:
            del parsed.backend_indices[key]


_IMPL = re.compile(r'm\.impl\("([^"]+)"')


def _registered(path: Path) -> frozenset[str]:
    names = frozenset(_IMPL.findall(path.read_text()))
    if not names:
        raise AssertionError(f"no registrations found in {path}: the oracle's format changed")
    return names


def declarations_of(header_text: str) -> frozenset[str]:
    """`static <decl>;` lines of a kernel class header, without `static ` and `;`."""
    decls = frozenset(
        line.strip().removeprefix("static ").removesuffix(";")
        for line in header_text.splitlines()
        if line.strip().startswith("static ")
    )
    return decls


def _declarations(path: Path) -> frozenset[str]:
    decls = declarations_of(path.read_text())
    if not decls:
        raise AssertionError(f"no declarations found in {path}: the oracle's format changed")
    return decls


def wheel_shape_inference_header() -> str:
    import torch

    return os.path.join(
        os.path.dirname(torch.__file__), "include/torch/csrc/lazy/core/shape_inference.h"
    )
