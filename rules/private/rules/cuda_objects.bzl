"""`aten_cuda_objects`, the rule that compiles `.cu` sources with @local_cuda's nvcc (aten_codegen's
`cuda_srcs`), and `aten_cuda_unavailable`, which stands in for it without a toolkit.

@local_cuda (rules/private/repositories/local_cuda.bzl) chooses the toolkit; this file only runs
its nvcc.
"""

load("//rules/private:common/cc_toolchain.bzl", "alwayslink_objects", "cc_toolchain_and_features")
load("//rules/private:common/cuda_archs.bzl", "wheel_gencode_flags")
load("//rules/private:common/providers.bzl", "CudaArchsInfo")

# What torch's extension builder (torch.utils.cpp_extension) passes nvcc besides the arch flags:
# constexpr host functions usable in device code, and no implicit half/bfloat16 conversions
# (ATen's own kernels are built so; c10::Half and c10::BFloat16 provide them).
NVCC_TORCH_FLAGS = [
    "--expt-relaxed-constexpr",
    "-D__CUDA_NO_HALF_OPERATORS__",
    "-D__CUDA_NO_HALF_CONVERSIONS__",
    "-D__CUDA_NO_BFLOAT16_CONVERSIONS__",
    "-D__CUDA_NO_HALF2_OPERATORS__",
]

def _gencode(ctx):
    """The -gencode flags of an aten_cuda_objects target (see cuda_archs.bzl for the order).

    The target's own, else the build setting's, else TORCH_CUDA_ARCH_LIST's, else the wheel's,
    the last with a line saying which they are and how to narrow them."""
    if ctx.attr.gencode_given:
        return ctx.attr.gencode
    setting = ctx.attr._cuda_archs[CudaArchsInfo]
    if setting.value:
        return setting.gencode
    if ctx.attr.env_gencode:
        return ctx.attr.env_gencode
    gencode = wheel_gencode_flags(ctx.attr.wheel_arch_list)
    if not gencode:
        return []  # A CPU wheel has no list: nvcc's default architecture.

    # buildifier: disable=print
    print(("rules_aten: {}: nvcc compiles each of {} for every architecture of torch {}: {} " +
           "(one compile each); to build for fewer, set TORCH_CUDA_ARCH_LIST (e.g. \"9.0\" or " +
           "\"8.0;9.0+PTX\"), --@rules_aten//:cuda_archs=9.0, or cuda_gencode").format(
        ctx.label,
        ", ".join([f.basename for f in ctx.files.srcs]),
        ctx.attr.wheel_version,
        " ".join(ctx.attr.wheel_arch_list),
    ))
    return gencode

# buildifier: disable=native-cc-common
# buildifier: disable=native-cc-info
def _aten_cuda_objects_impl(ctx):
    cc_toolchain, feature_configuration = cc_toolchain_and_features(ctx)
    compilation = cc_common.merge_cc_infos(cc_infos = [d[CcInfo] for d in ctx.attr.deps]).compilation_context
    flags = ["-std=c++20", "-Xcompiler", "-fPIC", "-ccbin", cc_toolchain.compiler_executable]
    flags += NVCC_TORCH_FLAGS + _gencode(ctx) + ctx.attr.copts
    flags += ["-D" + d for d in compilation.defines.to_list()]
    flags += ["-I" + i for i in compilation.quote_includes.to_list() + compilation.includes.to_list()]
    for i in compilation.system_includes.to_list():
        flags += ["-isystem", i]  # (nvcc takes no -isystemDIR)
    objects = []
    for src in ctx.files.srcs:
        out = ctx.actions.declare_file("_objs/{}/{}.pic.o".format(ctx.label.name, src.basename.rsplit(".", 1)[0]))
        args = ctx.actions.args()
        args.add_all(flags)
        args.add_all(["-c", src.path, "-o", out.path])
        ctx.actions.run(
            executable = ctx.attr.nvcc,
            arguments = [args],
            inputs = depset([src] + ctx.files.hdrs, transitive = [compilation.headers]),
            outputs = [out],
            mnemonic = "AtenNvcc",
            # PATH, for the host compiler's assembler (the fixed one of --incompatible_strict_action_env).
            use_default_shell_env = True,
            progress_message = "Compiling CUDA %s" % src.short_path,
        )
        objects.append(out)
    linking_context = alwayslink_objects(ctx, cc_toolchain, feature_configuration, objects)
    return [
        DefaultInfo(files = depset(objects)),
        CcInfo(linking_context = linking_context),
    ]

aten_cuda_objects = rule(
    implementation = _aten_cuda_objects_impl,
    doc = """Compiles `.cu` sources with the toolkit's nvcc into an alwayslink archive.

The include paths and defines are those of `deps` (torch's headers, the CUDA toolkit's, the
generated kernel headers); the flags are torch's extension builder's (NVCC_TORCH_FLAGS),
`-std=c++20 -Xcompiler -fPIC`, the -gencode flags (cuda_archs.bzl: `gencode`, the
--@rules_aten//:cuda_archs setting, $TORCH_CUDA_ARCH_LIST, or the wheel's list) and `copts`. The host compiler is the C++ toolchain's.""",
    attrs = {
        "copts": attr.string_list(doc = "Extra nvcc options."),
        "deps": attr.label_list(
            providers = [CcInfo],  # buildifier: disable=native-cc-info
            doc = "Libraries whose headers, include paths and defines the sources use.",
        ),
        "env_gencode": attr.string_list(
            doc = "The -gencode flags of $TORCH_CUDA_ARCH_LIST (@local_cuda//:defs.bzl), or none.",
        ),
        "gencode": attr.string_list(doc = "nvcc's -gencode flags, with gencode_given."),
        "gencode_given": attr.bool(doc = "Use `gencode` (the target's cuda_gencode)."),
        "wheel_arch_list": attr.string_list(doc = "The wheel's torch.cuda.get_arch_list()."),
        "wheel_version": attr.string(doc = "The wheel's torch version, for the message."),
        "_arch_list_check": attr.label(default = Label("@local_cuda//:arch_list_check")),
        "_cuda_archs": attr.label(default = Label("//:cuda_archs"), providers = [CudaArchsInfo]),
        "hdrs": attr.label_list(allow_files = True, doc = "Headers the sources include."),
        "nvcc": attr.string(mandatory = True, doc = "The nvcc binary (an absolute path)."),
        "srcs": attr.label_list(allow_files = [".cu"], mandatory = True),
        "_cc_toolchain": attr.label(default = Label("@bazel_tools//tools/cpp:current_cc_toolchain")),
    },
    fragments = ["cpp"],
    toolchains = ["@bazel_tools//tools/cpp:toolchain_type"],
)

def _aten_cuda_unavailable_impl(ctx):
    # buildifier: disable=print
    print(("WARNING: {}: no CUDA toolkit was found (set RULES_ATEN_CUDA_DIR or CUDA_HOME, or " +
           "install one at /usr/local/cuda), so this CUDA registration library is empty{}.").format(
        ctx.label,
        ctx.attr.note,
    ))
    return [
        DefaultInfo(files = depset()),
        CcInfo(),  # buildifier: disable=native-cc-info
    ]

aten_cuda_unavailable = rule(
    implementation = _aten_cuda_unavailable_impl,
    doc = "Stands in for <name>_cuda without a toolkit: an empty CcInfo, and a warning.",
    attrs = {"note": attr.string(doc = "The rest of the warning's sentence.")},
)
