"""aten_kernel_hub: an aten_codegen library laid out for Hugging Face's `kernels`.

The same action as aten_wheel's (//tool:aten_wheel, tool/aten_wheel.py), with
`--layout=kernel_hub`: the output is a directory holding `build/<variant>/`, whose name is read
from the built library (its machine), so it is only known when the action runs.
"""

load("@torch//:defs.bzl", "CXX11_ABI")
load(":providers.bzl", "AtenLibraryInfo")
load(":wheel.bzl", "wheel_library_error")

def _aten_kernel_hub_impl(ctx):
    if AtenLibraryInfo not in ctx.attr.library:
        fail(wheel_library_error(str(ctx.label), str(ctx.attr.library.label), ctx.attr.library.label.name))
    info = ctx.attr.library[AtenLibraryInfo]
    if not info.op_yaml:
        fail("rules_aten: {}: library = {} has no op YAML (a library of external_backend_codegen?): aten_kernel_hub ships an aten_codegen library".format(ctx.label, ctx.attr.library.label))
    output = ctx.actions.declare_directory(ctx.label.name)
    args = ctx.actions.args()
    args.add("--layout=kernel_hub")
    args.add("--label=" + str(ctx.label))
    args.add("--library=" + info.library.path)
    args.add("--op_yaml=" + info.op_yaml.path)
    args.add("--tags_yaml=" + info.tags_yaml.path)
    args.add("--kernel_name=" + ctx.attr.kernel_name)
    args.add("--version=" + str(ctx.attr.version))
    args.add("--license=" + ctx.attr.license)
    args.add("--abi=" + info.abi)
    args.add("--torch_release=" + info.torch_release)
    args.add("--torch_target=" + info.torch_target)
    args.add("--cxx11_abi=" + ("1" if CXX11_ABI else "0"))
    args.add("--cuda=" + info.cuda)
    for src in ctx.files.py_srcs:
        args.add("--py_src=" + src.path)
        args.add("--py_src_label=" + src.short_path)
    code = ctx.files._template_code
    if code:
        args.add("--template_code_dir=" + code[0].dirname)
    args.add("--output_dir=" + output.path)
    ctx.actions.run(
        executable = ctx.executable._tool,
        arguments = [args],
        inputs = [info.library, info.op_yaml, info.tags_yaml] + ctx.files.py_srcs + code,
        outputs = [output],
        mnemonic = "AtenKernelHub",
        progress_message = "Laying out the kernel %s" % ctx.label,
    )
    return [DefaultInfo(files = depset([output]))]

aten_kernel_hub = rule(
    implementation = _aten_kernel_hub_impl,
    doc = """An [`aten_codegen`](docs/rules.md#aten_codegen) library laid out as a kernel
repository of Hugging Face's `kernels` ([docs/shipping.md](docs/shipping.md#a-kernel-hub-layout)):
the output is the directory `N/` holding `build/<variant>/metadata.json` and
`build/<variant>/<package>/` (`kernel_name` with `-` as `_`), which `kernels.get_local_kernel(N)`
loads, or which is uploaded as a hub repository.

The variant is `torch-stable-abi<major><minor>-<device>-<arch>-linux` for a library of
`abi = "stable"` (its `torch_target`: `kernels` takes it in that release and later) and
`torch<major><minor>-cxx11-<device>-<arch>-linux` for one bound to the build's torch release;
the device is `cpu`, or `cu<major><minor>` for a library with CUDA code. The package holds
`lib<name>.so`, an `__init__.py` that loads it and names each operator, `_ops.py` (`ops`,
`add_op_namespace_prefix`) and `py_srcs`. The same inputs give the same bytes. A bad input (a
`kernel_name` that `kernels` refuses, a `version` below 1, a `license` of several lines, the
`py_srcs` mistakes of [`aten_wheel`](#aten_wheel)) fails the build with one line and leaves
nothing.""",
    attrs = {
        "kernel_name": attr.string(
            mandatory = True,
            doc = "The kernel's name in its metadata: lowercase letters, digits and `-`, from " +
                  "a letter to a letter or digit (`kernels`' rule).",
        ),
        "library": attr.label(
            mandatory = True,
            doc = "The `lib<name>.so` of an `aten_codegen`, of either ABI mode.",
        ),
        "license": attr.string(
            mandatory = True,
            doc = "The license of the metadata (an SPDX name such as `Apache-2.0`).",
        ),
        "py_srcs": attr.label_list(
            allow_files = [".py"],
            doc = "Python modules put into the package and imported by its `__init__.py` after " +
                  "the library is loaded (fake kernels, autograd formulas). They may import the " +
                  "standard library, torch and each other (`from . import m`).",
        ),
        "version": attr.int(
            default = 1,
            doc = "The kernel's version (a hub repository's `v<version>` branch), 1 or more.",
        ),
        "_template_code": attr.label(default = Label("//tool:atengen_template_code")),
        "_tool": attr.label(
            default = Label("//tool:aten_wheel"),
            executable = True,
            cfg = "exec",
        ),
    },
)
