"""external_backend_codegen: an out-of-tree backend's registrations from a backend YAML.

One action runs `atengen backend` and writes two tree artifacts under `<package>/<name>_codegen/`:

  srcs.cc/  Register<Key>_<shard>.cpp for the backend key and its autograd key, and with
            `derivatives`, Autograd<Backend>_<shard>.cpp: the generated autograd kernels of the
            `autograd:` operators that the derivatives YAML has formulas for;
  include/  <package>/<Backend>NativeFunctions.h, the class of static kernels to implement.

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

load(
    ":cc_targets.bzl",
    "aten_archive_library",
    "aten_shared_library",
    "codegen_outputs",
    "torch_deps",
)
load(":generator_attrs.bzl", "generator_attrs", "shards_attr")

def _common_args(ctx, args):
    args.add("backend")
    args.add("--backend_yaml=" + ctx.file.backend_yaml.path)
    args.add("--op_yaml=" + ctx.file.op_yaml.path)
    args.add("--tags_yaml=" + ctx.file.tags_yaml.path)
    if ctx.attr.functional:
        args.add("--functional_backend")
    if ctx.file.derivatives:
        args.add("--derivatives_yaml=" + ctx.file.derivatives.path)

def _yaml_inputs(ctx):
    return [ctx.file.backend_yaml, ctx.file.op_yaml, ctx.file.tags_yaml] + (
        [ctx.file.derivatives] if ctx.file.derivatives else []
    )

def _aten_backend_sources_impl(ctx):
    prefix = ctx.label.name + "/"

    # ".cc" in the name: Bazel 4 applies --cxxopt to a tree only when its name looks like C++.
    srcs = ctx.actions.declare_directory(prefix + "srcs.cc")
    headers = ctx.actions.declare_directory(prefix + "include")
    yaml_inputs = _yaml_inputs(ctx)

    args = ctx.actions.args()
    _common_args(ctx, args)
    args.add("--output_dir=" + srcs.path)
    args.add("--header_output_dir=" + headers.path)
    args.add("--include_prefix=" + ctx.label.package)
    args.add("--shards=%d" % ctx.attr.shards)
    ctx.actions.run(
        executable = ctx.executable.tool,
        arguments = [args],
        inputs = yaml_inputs,
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
        _common_args(ctx, check)
        check.add_joined(ctx.files.kernel_srcs, join_with = ",", format_joined = "--impl_path=%s")
        check.add("--check_stamp=" + stamp.path)
        ctx.actions.run(
            executable = ctx.executable.tool,
            arguments = [check],
            inputs = yaml_inputs + ctx.files.kernel_srcs,
            outputs = [stamp],
            mnemonic = "AtenBackendKernelCheck",
            progress_message = "Checking %s for missing kernels" % ctx.label,
        )
        validations.append(stamp)

    # buildifier: disable=native-cc-common
    compilation_context = cc_common.create_compilation_context(
        headers = depset([headers]),
        includes = depset([headers.path]),
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
    attrs = dict(generator_attrs(default_to_torch = True), **{
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
        "shards": shards_attr(),
    }),
)

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
        tags = []):
    """Generates and compiles the registrations of an out-of-tree backend.

    Targets (`name` = N):
      N_codegen: the generator action (aten_backend_sources), trees under N_codegen/.
      N_headers: cc_library that puts <package>/<Backend>NativeFunctions.h on the include path.
      N: C++ library (CcInfo, linked whole) of the registrations, `srcs` and `deps`.
      libN.so: shared library of N for torch.ops.load_library; links torch dynamically.

    Args:
      name: base name of the targets.
      backend_yaml: the backend YAML.
      derivatives: a derivatives YAML with formulas for operators that the backend YAML lists
        under `autograd:`. Their Autograd<Backend> kernels are generated from the formulas, and
        their kernel in `srcs` computes the forward pass only (it is registered for the backend
        key). `autograd:` operators without formulas keep their hand-written autograd kernel.
      srcs: kernel sources (they define the class's static methods), compiled into N.
      deps: more kernel cc_libraries, linked into N (give them alwayslink = True if they
        register anything themselves).
      op_yaml: the op YAML; default: the installed torch's native_functions.yaml.
      tags_yaml: its tags YAML; default: the installed torch's.
      shards: 0 = one source per operator and key; N > 0 = N hash buckets per key.
      functional: functional-backend mode (only functional and view_copy ops are listed;
        functionalization runs above the backend; no out=/inplace wrappers).
      check_kernels: scan `srcs` for every kernel definition (a validation action).
      copts: extra compiler options.
      visibility: visibility of the targets.
      tags: tags of the targets.
    """
    codegen = name + "_codegen"
    aten_backend_sources(
        name = codegen,
        backend_yaml = backend_yaml,
        derivatives = derivatives,
        op_yaml = op_yaml,
        tags_yaml = tags_yaml,
        shards = shards,
        functional = functional,
        kernel_srcs = srcs if check_kernels else [],
        visibility = visibility,
        tags = tags,
    )
    codegen_outputs(name, codegen, ["srcs", "kernel_check"], visibility, tags)
    aten_archive_library(
        name = name,
        # The check's stamp is a header of the library: its compiles wait for the check.
        srcs = [":{}_srcs".format(codegen), ":{}_kernel_check".format(codegen)] + srcs,
        deps = torch_deps() + [":" + name + "_headers"] + deps,
        copts = copts,
        visibility = visibility,
        tags = tags,
    )
    aten_shared_library(name, visibility, tags)
