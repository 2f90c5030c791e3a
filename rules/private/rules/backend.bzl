"""external_backend_codegen: an out-of-tree backend's registrations from a backend YAML.

One action runs `atengen backend` and writes two tree artifacts under `<package>/<name>_codegen/`:

  srcs.cc/  Register<Key>_<shard>.cpp for the backend key and its autograd key, and with
            `derivatives`, Autograd<Backend>_<shard>.cpp: the generated autograd kernels of the
            `autograd:` operators that the derivatives YAML has formulas for;
  include/  <package>/<Backend>NativeFunctions.h, the class of static kernels to implement.

A lazy-tensor backend (a YAML with full_codegen, ir_gen or non_native ops; see lazy_attrs.bzl)
adds <Backend>NativeFunctions_<shard>.cpp, the generated kernels, to srcs.cc/, and the IR node
headers LazyIr.h, LazyIr_<shard>.h, LazyIrCommon.h and LazyNonNativeIr.h to include/<package>/.

The sources include the header by that workspace-relative path, never by an absolute one, so
they compile in any sandbox (torch_xla seds absolute paths out of torchgen's output instead).

A second action, the missing-kernel check, scans the kernel sources for a definition of every
kernel the header declares. Its output, a one-line header `kernels_checked.h`, is a source of the
library, so every compile of the library waits for the check, and a missing kernel fails the build
with the list of what is missing instead of an undefined symbol at load time. (Bazel 4.2.3 runs
`_validation` outputs only with --experimental_run_validations; the stamp is in that output group
too.) The stamp's bytes never change, so editing a kernel re-runs the check but recompiles only
that kernel's source.
"""

load("//rules/private:common/generator_attrs.bzl", "check_torch_visible", "generator_attrs", "shards_attr", "shards_flag", "target_name_error", "torch_facts_flags", "torch_version_py_attr")
load("//rules/private:common/lazy_attrs.bzl", "add_lazy_args", "lazy_attrs")
load(
    "//rules/private:macros/cc_targets.bzl",
    "aten_archive_library",
    "aten_shared_library",
    "codegen_outputs",
    "library_deps",
    "release_guard_srcs",
)

def _common_args(ctx, args):
    """Adds the flags both actions share; returns their input files."""
    args.add("backend")
    args.add("--backend_yaml=" + ctx.file.backend_yaml.path)
    args.add("--op_yaml=" + ctx.file.op_yaml.path)
    args.add("--tags_yaml=" + ctx.file.tags_yaml.path)
    args.add(shards_flag(ctx))
    if ctx.attr.functional:
        args.add("--functional_backend")
    if ctx.file.derivatives:
        args.add("--derivatives_yaml=" + ctx.file.derivatives.path)
    facts_inputs = torch_facts_flags(ctx, args)
    lazy_inputs = add_lazy_args(ctx, args)
    return [ctx.file.backend_yaml, ctx.file.op_yaml, ctx.file.tags_yaml] + facts_inputs + lazy_inputs + (
        [ctx.file.derivatives] if ctx.file.derivatives else []
    )

def _paths_join(*parts):
    """The non-empty parts joined with "/" (an external repository's workspace_root, a package)."""
    return "/".join([p for p in parts if p])

def _aten_backend_sources_impl(ctx):
    prefix = ctx.label.name + "/"

    # ".cc" in the name: Bazel 4 applies --cxxopt to a tree only when its name looks like C++.
    srcs = ctx.actions.declare_directory(prefix + "srcs.cc")
    headers = ctx.actions.declare_directory(prefix + "include")

    args = ctx.actions.args()
    inputs = _common_args(ctx, args)
    args.add("--output_dir=" + srcs.path)
    args.add("--header_output_dir=" + headers.path)
    args.add("--include_prefix=" + ctx.label.package)
    ctx.actions.run(
        executable = ctx.executable.tool,
        arguments = [args],
        inputs = inputs,
        outputs = [srcs, headers],
        mnemonic = "AtenBackendCodegen",
        progress_message = "Generating backend registrations %s" % ctx.label,
    )

    # The check reads the kernel sources, so it is its own action: editing a kernel re-runs
    # the check, not the generator (whose outputs would not change).
    validations = []
    if ctx.files.kernel_srcs:
        stamp = ctx.actions.declare_file(prefix + "kernels_checked.h")
        check = ctx.actions.args()
        check_inputs = _common_args(ctx, check)
        check.add_joined(ctx.files.kernel_srcs, join_with = ",", format_joined = "--impl_path=%s")
        check.add("--check_stamp=" + stamp.path)
        ctx.actions.run(
            executable = ctx.executable.tool,
            arguments = [check],
            inputs = check_inputs + ctx.files.kernel_srcs,
            outputs = [stamp],
            mnemonic = "AtenBackendKernelCheck",
            progress_message = "Checking %s for missing kernels" % ctx.label,
        )
        validations.append(stamp)

    # The header is found as "<package>/<Backend>NativeFunctions.h" (the path the sources use)
    # and as "<Backend>NativeFunctions.h" (what a kernel in the backend's own package writes,
    # as docs/privateuse1.md's do); and `extra_headers` relative to the package as well as to
    # the workspace. Both spellings so that one backend YAML and one set of kernels build in the
    # root package of a workspace of their own and in //some/pkg of a larger one (a module's).
    package = _paths_join(ctx.label.workspace_root, ctx.label.package)
    includes = [headers.path]
    quote_includes = []
    if ctx.label.package:
        includes.append(headers.path + "/" + ctx.label.package)
        quote_includes = [package, _paths_join(ctx.bin_dir.path, package)]

    # buildifier: disable=native-cc-common
    compilation_context = cc_common.create_compilation_context(
        headers = depset([headers]),
        includes = depset(includes),
        quote_includes = depset(quote_includes),
    )
    return [
        DefaultInfo(files = depset([srcs, headers])),
        OutputGroupInfo(
            srcs = depset([srcs]),
            headers = depset([headers]),
            kernel_check = depset(validations),
            _validation = depset(validations),
        ),
        CcInfo(compilation_context = compilation_context),  # buildifier: disable=native-cc-info
    ]

aten_backend_sources = rule(
    implementation = _aten_backend_sources_impl,
    doc = """Runs `atengen backend` once; see the file's doc for the trees it writes.

Returns DefaultInfo (both trees), output groups `srcs`, `headers` and `kernel_check` (the
check's stamp, also a validation output), and a CcInfo that puts the header tree on the include path. Use the
external_backend_codegen macro rather than this rule.""",
    attrs = dict(generator_attrs(default_to_torch = True), **dict(lazy_attrs(), **{
        "backend_yaml": attr.label(
            mandatory = True,
            allow_single_file = [".yaml"],
            doc = "The backend YAML (gen_backend_stubs format).",
        ),
        "derivatives": attr.label(
            allow_single_file = [".yaml"],
            doc = "Derivative formulas for operators of the backend YAML's `autograd:` list.",
        ),
        "functional": attr.bool(
            default = False,
            doc = "Functional-backend mode: only functional and view_copy ops may be listed.",
        ),
        "kernel_srcs": attr.label_list(
            allow_files = True,
            doc = "Sources to scan for the kernel definitions; empty: no check.",
        ),
        "shards": shards_attr(default = "0"),
        "_torch_version_py": torch_version_py_attr(),
        "torch_facts": attr.label(
            default = Label("@torch//:torch_facts.json"),
            allow_single_file = [".json"],
            doc = "The installed torch's facts (tool/torch_probe.py): the structured meta " +
                  "classes it exports, which ops listed under `structured:` reuse.",
        ),
    })),
)

# The docstring's first paragraph and Args are docs/rules.md's (Markdown, written there by
# `./dev docs`): edit them here.
def external_backend_codegen(
        name,
        backend_yaml,
        derivatives = None,
        srcs = [],
        deps = [],
        op_yaml = "@torch//:native_functions.yaml",
        tags_yaml = "@torch//:tags.yaml",
        shards = 0,
        functional = False,
        check_kernels = True,
        copts = [],
        visibility = None,
        tags = [],
        node_base = None,
        node_base_hdr = None,
        tensor_class = None,
        tensor_class_hdr = None,
        backend_namespace = None,
        get_device_fn = None,
        lazy_value_class = None,
        shape_inference_hdr = None,
        shape_inference_file = None,
        ts_lowerings = None):
    """An out-of-tree backend's kernel class header and registrations from a `gen_backend_stubs` YAML, compiled like `aten_codegen`'s.

    A backend YAML with `full_codegen`, `ir_gen` or `non_native` ops is a lazy-tensor (LTC)
    backend: N then also holds the generated kernels of the full_codegen ops, and N_headers
    the IR node classes (<package>/LazyIr.h, LazyIr_<shard>.h, LazyNonNativeIr.h), built on the
    TorchScript backend of the torch wheel unless the LTC attributes below say otherwise.

    Targets (`name` = N):
      N_codegen: the generator action (aten_backend_sources), trees under N_codegen/.
      N_headers: cc_library that puts <package>/<Backend>NativeFunctions.h on the include path.
      N: C++ library (CcInfo, linked whole) of the registrations, `srcs` and `deps`.
      libN.so: shared library of N for torch.ops.load_library; links torch dynamically.

    Args:
      name: base name of the targets (`N` above).
      backend_yaml: the backend YAML, in `gen_backend_stubs`' format
        ([The backend YAML](docs/rules.md#the-backend-yaml)).
      derivatives: a derivatives YAML with formulas for operators that the backend YAML lists
        under `autograd:`. Their `Autograd<Backend>` kernels are generated from the formulas,
        and their kernel in `srcs` computes the forward pass only (it is registered for the
        backend key). `autograd:` operators without formulas keep their hand-written autograd
        kernel ([Generated autograd kernels for a
        backend](docs/rules.md#generated-autograd-kernels-for-a-backend)).
      srcs: kernel sources (they define the class's static methods), compiled into `N`.
      deps: more kernel `cc_library`s, linked into `N` (give them `alwayslink = True` if they
        register anything themselves).
      op_yaml: the operators' YAML; by default the installed torch's `native_functions.yaml`.
      tags_yaml: its tags YAML; by default the installed torch's.
      shards: `"auto"` (as `aten_codegen`'s), or a bucket count: `0` (the default): one source
        per operator and key; `N > 0`: N crc32 buckets per key.
      functional: functional-backend mode: only functional and `view_copy` ops may be listed,
        functionalization runs above the backend, and no out= or in-place wrappers are
        generated ([Functional-backend mode](docs/rules.md#functional-backend-mode)).
      check_kernels: scan `srcs` for a definition of every kernel, in an action of its own
        ([The missing-kernel check](docs/rules.md#the-missing-kernel-check)).
      copts: extra compiler options.
      visibility: visibility of the targets.
      tags: tags of the targets.
      node_base: LTC: base class of the IR nodes. Default: `torch::lazy::TsNode`.
      node_base_hdr: LTC: its include path (put the `cc_library` of a custom one in `deps`).
        Default: `torch/csrc/lazy/ts_backend/ts_node.h`.
      tensor_class: LTC: the lazy tensor class. Default: `torch::lazy::LazyTensor`.
      tensor_class_hdr: LTC: its include path. Default: `torch/csrc/lazy/core/tensor.h`.
      backend_namespace: LTC: namespace of `GetTensorList`, `TryGetLtcTensor` and
        `GetLtcTensorOrCreateForWrappedNumber`. Default: `torch::lazy`.
      get_device_fn: LTC: the device getter of the kernels. Default:
        `torch::lazy::GetBackendDevice`.
      lazy_value_class: LTC: the IR value (operand) class. Default: `torch::lazy::Value`.
      shape_inference_hdr: LTC: the include path, in the kernels, of the header that declares
        the `compute_shape_*` functions. Default: `shape_inference_file`'s workspace-relative
        path.
      shape_inference_file: LTC: the label of the header every `compute_shape_*` that the
        `full_codegen` kernels call must be declared in: checked at generation time, so a
        missing one fails the generator action with the declaration to add, not the compile.
        Default: `@torch//:include/torch/csrc/lazy/core/shape_inference.h`, the wheel's.
      ts_lowerings: LTC: TorchScript `Lower()`/`CanBeReused()` in the node classes; `False` for
        backends with their own lowering (torch_xla). Default: `True`.
    """
    name_error = target_name_error("external_backend_codegen", name)
    if name_error:
        fail(name_error)
    check_torch_visible(op_yaml = op_yaml, tags_yaml = tags_yaml)
    given = {
        "backend_namespace": backend_namespace,
        "get_device_fn": get_device_fn,
        "lazy_value_class": lazy_value_class,
        "node_base": node_base,
        "node_base_hdr": node_base_hdr,
        "shape_inference_file": shape_inference_file,
        "shape_inference_hdr": shape_inference_hdr,
        "tensor_class": tensor_class,
        "tensor_class_hdr": tensor_class_hdr,
        "ts_lowerings": ts_lowerings,
    }
    lazy = {k: v for k, v in given.items() if v != None}  # None: the rule's default
    codegen = name + "_codegen"
    aten_backend_sources(
        name = codegen,
        backend_yaml = backend_yaml,
        derivatives = derivatives,
        op_yaml = op_yaml,
        tags_yaml = tags_yaml,
        shards = str(shards),
        functional = functional,
        kernel_srcs = srcs if check_kernels else [],
        visibility = visibility,
        tags = tags,
        **lazy
    )
    codegen_outputs(name, codegen, ["srcs", "kernel_check", "headers"], visibility, tags)

    # The check's stamp is a header of the library: its compiles wait for the check. (No srcs,
    # as in a lazy backend whose kernels are all generated: no check, no stamp.)
    stamp = [":{}_kernel_check".format(codegen)] if srcs and check_kernels else []
    aten_archive_library(
        name = name,
        srcs = [":{}_srcs".format(codegen)] + stamp + srcs,
        runtime_srcs = release_guard_srcs(),
        # The runtime: structured ops' generated wrappers (backend YAML `structured:`) use it.
        deps = library_deps() + [":" + name + "_headers"] + deps,
        copts = copts,
        visibility = visibility,
        tags = tags,
    )
    aten_shared_library(name, visibility, tags, kernel_headers = [":{}_headers".format(codegen)])
