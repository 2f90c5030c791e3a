"""aten_codegen(abi = "stable"): an operator library that uses only LibTorch's stable ABI.

Such a library is built once, against the installed torch, and loads into every torch release
from `torch_target` on. Two actions run `atengen stable` and write, under `<package>/<name>_codegen/`:

  cpu.cc/    StableSchema_<ns>_<shard>.cpp (STABLE_TORCH_LIBRARY_FRAGMENT) and
             RegisterStable<Key>_<ns>_<shard>.cpp (STABLE_TORCH_LIBRARY_IMPL, TORCH_BOX) of the
             CPU-side keys;
  cuda.cc/   the same for the CUDA keys (plain C++: only compiled when there are CUDA kernels);
  include/   <ns>/ops/<root>_native.h, the kernels' declarations in stable types;
  call_api/  atengen/stable/ops/<root>.h, atengen::stable::<op>(...) for every aten operator of
             @torch//:native_functions.yaml the target's stable ABI can carry (through
             torch_call_dispatcher), and call_api_coverage.txt beside it, what it left out;
  <name>_registrations.py
             the library's Python module (a third action): torch.library.register_autograd of
             each entry of `derivatives`, translated from C++ to Python, and the fake kernels
             stable mode derives (`N_python`; aten_wheel ships and imports it).

Every C++ source is compiled with -DTORCH_TARGET_VERSION of the target (carried by the headers'
CcInfo), under which torch's headers hide, or refuse with an #error, what is not stable. The
library links libtorch_cpu alone (the C shim), and for CUDA kernels the static CUDA runtime;
lib<name>.so is the linked library copied once the link check (`atengen stable-link-check`) finds
no undefined symbol outside the shim and the C/C++/CUDA runtimes.
"""

load("@local_cuda//:defs.bzl", "CUDA_VERSION", "HAS_CUDA")
load("@rules_cc//cc:defs.bzl", "cc_binary", "cc_library")
load("@torch//:defs.bzl", "TORCH_RELEASE", "TORCH_VERSION")
load("//rules/private:common/generator_attrs.bzl", "generator_attrs", "selection_args", "selection_attrs", "shards_attr", "shards_flag")
load("//rules/private:common/providers.bzl", "AtenCodegenInfo", "AtenLibraryInfo")
load("//rules/private:common/releases.bzl", "torch_target_version")
load("//rules/private:macros/cc_targets.bzl", "aten_archive_library", "aten_cuda_library", "codegen_outputs", "labels", "torch_deps")
load("//rules/private:rules/cuda_objects.bzl", "aten_cuda_unavailable")

def check_torch_target(torch_target):
    """Fails with one line unless torch_target is a release from 2.11 to the build's torch.

    Args:
      torch_target: aten_codegen's torch_target.

    Returns:
      The value of -DTORCH_TARGET_VERSION: 0x020B000000000000 for "2.11".
    """
    value, error = torch_target_version(torch_target, TORCH_RELEASE, TORCH_VERSION)
    if error:
        fail(error)
    return value

def _run_quietly(ctx, op_yaml, flags, inputs, outputs, mnemonic, progress_message):
    """Runs `atengen stable` of `op_yaml` and `flags`, its stdout dropped.

    The tags YAML is the rule's; what stdout would say (a report) is kept in the outputs.

    Args:
      ctx: the rule's context.
      op_yaml: the op YAML (File).
      flags: the other flags (strings).
      inputs: inputs besides the op and tags YAML.
      outputs: the outputs.
      mnemonic: the action's mnemonic.
      progress_message: its progress message.
    """
    args = ctx.actions.args()
    args.add("stable")
    args.add("--op_yaml=" + op_yaml.path)
    args.add("--tags_yaml=" + ctx.file.tags_yaml.path)
    args.add_all(flags)
    ctx.actions.run_shell(
        command = '"$@" >/dev/null',
        arguments = [ctx.executable.tool.path, args],
        tools = [ctx.attr.tool[DefaultInfo].files_to_run],
        inputs = [op_yaml, ctx.file.tags_yaml] + inputs,
        outputs = outputs,
        mnemonic = mnemonic,
        progress_message = progress_message,
    )

def _aten_stable_sources_impl(ctx):
    prefix = ctx.label.name + "/"
    cpu = ctx.actions.declare_directory(prefix + "cpu.cc")
    cuda = ctx.actions.declare_directory(prefix + "cuda.cc")
    headers = ctx.actions.declare_directory(prefix + "include")
    call_api = ctx.actions.declare_directory(prefix + "call_api")
    coverage = ctx.actions.declare_file(prefix + "call_api_coverage.txt")
    target = "--target=" + ctx.attr.torch_target

    selection, selection_inputs = selection_args(ctx)
    args = ctx.actions.args()
    args.add("stable")
    args.add("--op_yaml=" + ctx.file.op_yaml.path)
    args.add("--tags_yaml=" + ctx.file.tags_yaml.path)
    args.add_all(selection)
    args.add(target)
    args.add(shards_flag(ctx))
    args.add("--output_dir=" + cpu.path)
    args.add("--cuda_output_dir=" + cuda.path)
    args.add("--header_output_dir=" + headers.path)
    ctx.actions.run(
        executable = ctx.executable.tool,
        arguments = [args],
        inputs = [ctx.file.op_yaml, ctx.file.tags_yaml] + selection_inputs,
        outputs = [cpu, cuda, headers],
        mnemonic = "AtenStableCodegen",
        progress_message = "Generating stable-ABI registrations %s" % ctx.label,
    )

    # Its own action: it reads only torch's YAML, so an edit of the op YAML does not re-run it,
    # and its headers, unchanged, recompile nothing. Its one-line coverage summary goes to the
    # file with the rest rather than into every build's output.
    _run_quietly(
        ctx,
        ctx.file.torch_op_yaml,
        [target, "--call_api_dir=" + call_api.path, "--report=" + coverage.path],
        [],
        [call_api, coverage],
        "AtenStableCallApi",
        "Generating the stable-ABI call API of aten %s" % ctx.label,
    )

    # Its own action too: an edit of the derivatives YAML re-runs it alone. The line naming the
    # operators left without a fake kernel is in the module; stdout would repeat it every build.
    module = ctx.actions.declare_file(prefix + ctx.attr.library_name + "_registrations.py")
    py_flags = selection + ["--python_module=" + module.path]
    py_inputs = list(selection_inputs)
    if ctx.file.derivatives:
        py_flags += [
            "--derivatives_yaml=" + ctx.file.derivatives.path,
            "--aten_op_yaml=" + ctx.file.torch_op_yaml.path,
        ]
        py_inputs += [ctx.file.derivatives, ctx.file.torch_op_yaml]
    _run_quietly(
        ctx,
        ctx.file.op_yaml,
        py_flags,
        py_inputs,
        [module],
        "AtenStablePython",
        "Generating the Python module (autograd, fake kernels) %s" % ctx.label,
    )

    # buildifier: disable=native-cc-common
    compilation_context = cc_common.create_compilation_context(
        headers = depset([headers, call_api]),
        includes = depset([headers.path, call_api.path]),
        defines = depset(["TORCH_TARGET_VERSION=" + ctx.attr.target_version]),
    )
    return [
        DefaultInfo(files = depset([cpu, cuda, headers, call_api, coverage, module])),
        OutputGroupInfo(
            python = depset([module]),
            cpu_srcs = depset([cpu]),
            cuda_srcs = depset([cuda]),
            headers = depset([headers, call_api]),
            kernel_headers = depset([headers]),
            call_api_coverage = depset([coverage]),
        ),
        CcInfo(compilation_context = compilation_context),  # buildifier: disable=native-cc-info
        AtenCodegenInfo(
            autograd_srcs = None,
            cpu_srcs = cpu,
            cuda_srcs = cuda,
            headers = headers,
            include_dir = headers.path,
            signature_srcs = None,
        ),
    ]

aten_stable_sources = rule(
    implementation = _aten_stable_sources_impl,
    doc = """Runs `atengen stable` for the op YAML and for torch's (the call API); see the file's doc.

Returns DefaultInfo (all trees), output groups `cpu_srcs`, `cuda_srcs`, `headers`,
`call_api_coverage` and `python`, AtenCodegenInfo, and a CcInfo with the headers and the call API on the
include path and TORCH_TARGET_VERSION defined. Use aten_codegen(abi = "stable").""",
    attrs = dict(generator_attrs(default_to_torch = False), **dict(selection_attrs(), **{
        "derivatives": attr.label(
            allow_single_file = [".yaml"],
            doc = "A derivatives YAML, translated into the Python module's autograd formulas.",
        ),
        "library_name": attr.string(
            mandatory = True,
            doc = "aten_codegen's name: the module is `<library_name>_registrations.py`.",
        ),
        "shards": shards_attr(default = "auto"),
        "target_version": attr.string(
            mandatory = True,
            doc = "The value of -DTORCH_TARGET_VERSION (check_torch_target).",
        ),
        "torch_op_yaml": attr.label(
            default = Label("@torch//:native_functions.yaml"),
            allow_single_file = [".yaml"],
            doc = "The op YAML of the call API: the build's torch's.",
        ),
        "torch_target": attr.string(mandatory = True, doc = "The target release, \"2.11\"."),
    })),
)

def _aten_stable_checked_library_impl(ctx):
    library = ctx.actions.declare_file(ctx.label.name)
    args = ctx.actions.args()
    args.add("stable-link-check")
    args.add_all(ctx.files.kernel_headers, format_each = "--kernel_headers=%s", expand_directories = False)
    args.add_all(["--label=" + str(ctx.label), "--linked=" + ctx.file.linked.path, "--output=" + library.path])
    ctx.actions.run(
        executable = ctx.executable._check,
        arguments = [args],
        inputs = [ctx.file.linked] + ctx.files.kernel_headers,
        outputs = [library],
        mnemonic = "AtenStableLinkCheck",
        progress_message = "Checking that %s uses only torch's stable ABI" % ctx.label,
    )
    return [
        DefaultInfo(files = depset([library])),
        AtenLibraryInfo(
            abi = "stable",
            cuda = ctx.attr.cuda,
            library = library,
            op_yaml = ctx.file.op_yaml,
            python_module = ctx.file.python_module,
            tags_yaml = ctx.file.tags_yaml,
            torch_release = TORCH_RELEASE,
            torch_target = ctx.attr.torch_target,
        ),
    ]

aten_stable_checked_library = rule(
    implementation = _aten_stable_checked_library_impl,
    doc = """The linked library, copied once its undefined symbols are all torch's C shim's or
the C/C++/CUDA runtimes' (`atengen stable-link-check`): else the build fails, one line per
kernel of the generated headers left undefined (or defined with other parameters), then per
offending symbol group, and there is no lib<name>.so to load.""",
    attrs = {
        "cuda": attr.string(doc = "The CUDA version of its CUDA kernels, or \"\"."),
        "kernel_headers": attr.label_list(
            allow_files = True,
            doc = "The generator's kernel headers: a kernel they declare must be defined, with " +
                  "the declared parameters.",
        ),
        "linked": attr.label(mandatory = True, allow_single_file = [".so"]),
        "op_yaml": attr.label(mandatory = True, allow_single_file = [".yaml"]),
        "python_module": attr.label(
            mandatory = True,
            allow_single_file = [".py"],
            doc = "The library's generated Python module, for aten_wheel.",
        ),
        "tags_yaml": attr.label(mandatory = True, allow_single_file = [".yaml"]),
        "torch_target": attr.string(mandatory = True),
        "_check": attr.label(
            default = Label("//tool:atengen"),
            executable = True,
            cfg = "exec",
        ),
    },
)

def aten_stable_library(
        name,
        op_yaml,
        tags_yaml,
        ops,
        ops_file,
        ops_setting,
        shards,
        deps,
        srcs,
        cuda,
        cuda_srcs,
        cuda_gencode,
        cuda_copts,
        copts,
        torch_target,
        visibility,
        tags,
        derivatives = None):
    """aten_codegen(abi = "stable"): the targets aten_codegen documents, for the stable ABI.

    Args:
      name: see aten_codegen.
      op_yaml: see aten_codegen.
      tags_yaml: see aten_codegen.
      ops: see aten_codegen.
      ops_file: see aten_codegen.
      ops_setting: see aten_codegen.
      shards: see aten_codegen.
      deps: see aten_codegen.
      srcs: see aten_codegen.
      cuda: see aten_codegen.
      cuda_srcs: see aten_codegen.
      cuda_gencode: see aten_codegen.
      cuda_copts: see aten_codegen.
      copts: see aten_codegen.
      torch_target: see aten_codegen.
      visibility: see aten_codegen.
      tags: see aten_codegen.
      derivatives: see aten_codegen.
    """
    target_version = check_torch_target(torch_target)
    use_cuda = cuda and HAS_CUDA
    codegen = name + "_codegen"
    aten_stable_sources(
        name = codegen,
        op_yaml = op_yaml,
        tags_yaml = tags_yaml,
        ops = ops,
        ops_file = ops_file,
        ops_setting = ops_setting,
        shards = str(shards),
        torch_target = torch_target,
        target_version = target_version,
        derivatives = derivatives,
        library_name = name,
        visibility = visibility,
        tags = tags,
    )
    codegen_outputs(name, codegen, ["cpu_srcs", "cuda_srcs", "kernel_headers", "python"], visibility, tags)

    # The Python module, for a user of torch.ops.load_library (aten_wheel takes it from
    # lib<name>.so's AtenLibraryInfo).
    native.filegroup(
        name = name + "_python",
        srcs = [":{}_python".format(codegen)],
        visibility = visibility,
        tags = tags,
    )

    # No //rules/runtime: its release guard would refuse every release but the build's, and the
    # generated sources include torch's stable headers only.
    headers = [":" + name + "_headers"]
    aten_archive_library(
        name = name,
        generated_srcs = [":{}_cpu_srcs".format(codegen)],
        srcs = srcs,
        deps = torch_deps() + headers + deps,
        copts = copts,
        visibility = visibility,
        tags = tags,
    )

    linkopts = ["$(locations {})".format(labels(["@torch//:shim_library"])[0])]
    linker_inputs = labels(["@torch//:shim_library"])
    if use_cuda:
        # The CUDA keys' registrations are plain C++ over the stable headers.
        aten_cuda_library(
            name = name,
            codegen = codegen,
            deps = torch_deps() + headers + deps,
            kernel_deps = torch_deps() + labels(["@local_cuda//:cuda_headers"]) + headers + deps,
            cuda_srcs = cuda_srcs,
            cuda_gencode = cuda_gencode,
            cuda_copts = cuda_copts,
            copts = copts,
            visibility = visibility,
            tags = tags,
        )

        # The static CUDA runtime (nvcc's default), not torch's libcudart.so: the library then
        # needs no CUDA library at load time, loads into a CPU torch (where its CUDA kernels are
        # never called) and into every CUDA torch of the toolkit's major version, and still
        # needs no RUNPATH. libcudart_static.a wants libdl, libpthread and librt.
        cudart = labels(["@local_cuda//:cudart_static"])[0]
        linkopts += ["$(locations {})".format(cudart), "-ldl", "-lpthread", "-lrt"]
        linker_inputs.append(cudart)
    elif cuda:
        aten_cuda_unavailable(
            name = name + "_cuda",
            note = ", and lib{}.so registers no CUDA kernel{}".format(
                name,
                "; cuda_srcs are not compiled" if cuda_srcs else "",
            ),
            visibility = visibility,
            tags = tags,
        )
    else:
        cc_library(name = name + "_cuda", visibility = visibility, tags = tags)

    # Linked under a private name; lib<name>.so is the copy the link check makes.
    linked = "_{}_linked/lib{}.so".format(name, name)
    cc_binary(
        name = linked,
        linkshared = True,
        deps = [":" + name] + ([":" + name + "_cuda"] if cuda else []),
        linkopts = linkopts,
        additional_linker_inputs = linker_inputs,
        visibility = ["//visibility:private"],
        tags = tags,
    )
    aten_stable_checked_library(
        name = "lib{}.so".format(name),
        linked = ":" + linked,
        kernel_headers = [":{}_kernel_headers".format(codegen)],
        # Linked with the static CUDA runtime: the kernels need a driver of this CUDA, no torch
        # CUDA library (AtenLibraryInfo, for aten_wheel's metadata).
        cuda = CUDA_VERSION if use_cuda and cuda_srcs else "",
        op_yaml = op_yaml,
        python_module = ":{}_python".format(codegen),
        tags_yaml = tags_yaml,
        torch_target = torch_target,
        visibility = visibility,
        tags = tags,
    )
