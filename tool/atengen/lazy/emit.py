"""Sources for a lazy-tensor backend, sharded by operator like the registrations.

- ``LazyIrCommon.h``: includes and helpers every node header shares;
- ``LazyIr_<shard>.h``: the node classes of the full_codegen and ir_gen ops of
  one shard; ``LazyIr.h`` includes them all (for backend code that wants every
  node);
- ``LazyNonNativeIr.h``: the non_native node classes;
- ``<Backend>NativeFunctions_<shard>.cpp``: the generated kernels of the
  full_codegen ops of one shard, each including only its own node header, so
  editing one op recompiles one kernel shard;
- the backend's ``<Backend>NativeFunctions.h`` and ``Register<Key>_<shard>.cpp``,
  by ``backend.emit`` (full_codegen ops are registered like supported ones).

Headers go under ``include_prefix`` and are included by that path, relative to
the include root.
"""

from __future__ import annotations

import os

from atengen.backend.emit import header_file, header_path, registration_files
from atengen.lazy.kernels import tracing_kernel
from atengen.lazy.model import IrNode, LazyBackend, LazyKernel
from atengen.lazy.nodes import node_class
from atengen.lazy.options import LazyOptions
from atengen.render.output import GeneratedFile
from atengen.render.shards import Sharding, ShardSetting
from atengen.render.templates import Templates

COMMON_HEADER = "LazyIrCommon.h"

# What a generated kernel uses from LTC core, besides the tensor class and shapes.
_KERNEL_CORE_HEADERS = (
    "<torch/csrc/lazy/core/ir_builder.h>",
    "<torch/csrc/lazy/core/lazy_graph_executor.h>",
    "<torch/csrc/lazy/core/metrics.h>",
    "<torch/csrc/lazy/core/shape.h>",
    "<torch/csrc/lazy/core/util.h>",
)


def lazy_files(
    lazy: LazyBackend, opts: LazyOptions, setting: ShardSetting, templates: Templates
) -> list[GeneratedFile]:
    source = os.path.basename(lazy.spec.path)
    files = [_common_header(lazy, opts, source, templates)]
    # One sharding for the node headers and the kernel sources: a kernel source includes the
    # node header of its own shard.
    sharding = setting.resolve(
        len({_root(n) for n in lazy.nodes} | {_root(k.node) for k in lazy.kernels})
    )
    shards = _by_shard(lazy.nodes, sharding)
    for shard, nodes in shards.items():
        files.append(_node_header(lazy, opts, source, f"LazyIr_{shard}.h", nodes, shard, templates))
    files.append(_umbrella(lazy, opts, source, [f"LazyIr_{s}.h" for s in shards], templates))
    files.append(
        _node_header(
            lazy,
            opts,
            source,
            "LazyNonNativeIr.h",
            lazy.non_native_nodes,
            "non-native ops",
            templates,
            # non-native opkinds are LTC's own symbols (ltc_cast, ...)
            extra=["<torch/csrc/lazy/core/internal_ops/ltc_ops.h>"],
        )
    )
    kernels_by_shard: dict[str, list[LazyKernel]] = {}
    for k in lazy.kernels:
        kernels_by_shard.setdefault(sharding.shard_of(_root(k.node)), []).append(k)
    for shard, kernels in sorted(kernels_by_shard.items()):
        files.append(_kernel_source(lazy, opts, source, shard, kernels, templates))
    files.append(header_file(lazy.backend, opts.include_prefix, templates))
    files += registration_files(lazy.backend, setting, opts.include_prefix, templates)
    return files


def _root(node: IrNode) -> str:
    return node.func.name.name.base


def _by_shard(nodes: tuple[IrNode, ...], sharding: Sharding) -> dict[str, list[IrNode]]:
    out: dict[str, list[IrNode]] = {}
    for n in nodes:
        out.setdefault(sharding.shard_of(_root(n)), []).append(n)
    return dict(sorted(out.items()))


def _quoted(path: str) -> str:
    return f'"{path}"'


def _common_header(
    lazy: LazyBackend, opts: LazyOptions, source: str, templates: Templates
) -> GeneratedFile:
    includes = [_quoted(opts.node_base_hdr)] if opts.node_base_hdr else []
    if opts.ts_lowerings:
        includes.append("<torch/csrc/lazy/ts_backend/ts_lowering_context.h>")
    text = templates.render(
        "lazy_ir_common.h.j2",
        source=source,
        includes=includes,
        cpp_namespace=lazy.spec.cpp_namespace,
    )
    return GeneratedFile(opts.generated_header(COMMON_HEADER), text)


def _node_header(
    lazy: LazyBackend,
    opts: LazyOptions,
    source: str,
    name: str,
    nodes: list[IrNode] | tuple[IrNode, ...],
    what: str,
    templates: Templates,
    extra: tuple[str, ...] | list[str] = (),
) -> GeneratedFile:
    includes = [_quoted(opts.generated_header(COMMON_HEADER)), *extra]
    if any(not n.properties.ShapePrecompute for n in nodes):
        includes.append(_quoted(opts.shape_inference_hdr))  # compute_shape_* in constructors
    text = templates.render(
        "lazy_ir.h.j2",
        source=source,
        what=f"lazy IR nodes ({what})",
        includes=includes,
        cpp_namespace=lazy.spec.cpp_namespace,
        classes=[node_class(n, opts) for n in nodes],
    )
    return GeneratedFile(opts.generated_header(name), text)


def _umbrella(
    lazy: LazyBackend,
    opts: LazyOptions,
    source: str,
    shard_headers: list[str],
    templates: Templates,
) -> GeneratedFile:
    text = templates.render(
        "lazy_ir.h.j2",
        source=source,
        what="every lazy IR node of the native ops",
        includes=[_quoted(opts.generated_header(h)) for h in shard_headers],
        cpp_namespace=lazy.spec.cpp_namespace,
        classes=[],
    )
    return GeneratedFile(opts.generated_header("LazyIr.h"), text)


def _kernel_source(
    lazy: LazyBackend,
    opts: LazyOptions,
    source: str,
    shard: str,
    kernels: list[LazyKernel],
    templates: Templates,
) -> GeneratedFile:
    tracing = [tracing_kernel(k, lazy.spec.class_name) for k in kernels]
    needs_meta = any(t.needs_meta for t in tracing)
    includes = [_quoted(opts.tensor_class_hdr), _quoted(opts.shape_inference_hdr)]
    includes += _KERNEL_CORE_HEADERS
    if needs_meta:
        includes.append("<ATen/ops/empty_strided_native.h>")
    for k in kernels:
        root = str(k.f.name.name.base)
        if k.shape_source == "meta":
            includes.append(f"<ATen/ops/{root}_meta_dispatch.h>")
        elif k.shape_source == "composite":
            includes.append(f"<ATen/ops/{root}_compositeexplicitautogradnonfunctional_dispatch.h>")
    includes.append(_quoted(header_path(lazy.backend, opts.include_prefix)))
    includes.append(_quoted(opts.generated_header(f"LazyIr_{shard}.h")))
    includes += lazy.spec.extra_headers
    text = templates.render(
        "lazy_native_functions.cpp.j2",
        source=source,
        backend=lazy.spec.backend,
        roots=sorted({str(k.f.name.name.base) for k in kernels}),
        includes=list(dict.fromkeys(includes)),
        cpp_namespace=lazy.spec.cpp_namespace,
        needs_meta=needs_meta,
        kernels=tracing,
        options=opts,
    )
    return GeneratedFile(f"{lazy.spec.backend}NativeFunctions_{shard}.cpp", text)
