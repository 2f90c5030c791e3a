"""aten_kernel_hub: an aten_codegen library laid out for Hugging Face's `kernels`.

The same action as aten_wheel's (`atengen wheel`), with
`--layout=kernel_hub`: the output is a directory holding `build/<variant>/`, whose name is read
from the built library (its machine), so it is only known when the action runs.
"""

load("@torch//:defs.bzl", "CXX11_ABI")
load("//rules/private:rules/wheel.bzl", "SHIPPING_ATTRS", "shipping_action")

def _aten_kernel_hub_impl(ctx):
    flags = [
        "--layout=kernel_hub",
        "--kernel_name=" + ctx.attr.kernel_name,
        "--version=" + str(ctx.attr.version),
        "--license=" + ctx.attr.license,
        "--cxx11_abi=" + ("1" if CXX11_ABI else "0"),
    ]
    output = shipping_action(
        ctx,
        "aten_kernel_hub",
        flags,
        "AtenKernelHub",
        "Laying out the kernel %s" % ctx.label,
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
    attrs = dict({
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
    }, **SHIPPING_ATTRS),
)
