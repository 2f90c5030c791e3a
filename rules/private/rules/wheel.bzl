"""aten_wheel: an aten_codegen library as a wheel for `pip install`.

One action (`atengen wheel`) writes `<name>/<dist>-<version>-<tag>.whl`:
the wheel's file name carries the platform tag, which is read from the built library (its
highest GLIBC symbol version), so it is only known when the action runs and the output is a
directory holding the one wheel.
"""

load("//rules/private:common/providers.bzl", "AtenLibraryInfo")

def wheel_library_error(wheel, library, name):
    """The one-line error for aten_wheel's `library` when it lacks AtenLibraryInfo.

    aten_codegen(name = "myops") makes several targets: `:myops` is its archive, and the library
    a wheel ships is `:libmyops.so`. Bazel's own error would only name the missing provider.

    Args:
      wheel: the aten_wheel's label, as a string.
      library: the label it was given, as a string ("//pkg:myops").
      name: that label's name ("myops").

    Returns:
      The message for fail().
    """
    if name.startswith("lib") and name.endswith(".so"):
        return ("rules_aten: {}: library = {} is not the lib<name>.so of an aten_codegen: " +
                "give aten_codegen's lib<name>.so").format(wheel, library)
    package = library[:len(library) - len(name)]
    return ("rules_aten: {}: library = {} is not a lib<name>.so: give library = \"{}lib{}.so\", " +
            "the shared library of aten_codegen(name = \"{}\")").format(wheel, library, package, name, name)

def shipping_action(ctx, what, flags, mnemonic, progress_message):
    """The action of `atengen wheel` (aten_wheel, aten_kernel_hub) for ctx.attr.library.

    Args:
      ctx: the rule's context: `library`, `py_srcs` and `_tool` (SHIPPING_ATTRS).
      what: the rule's name, for the error of a library of no op YAML.
      flags: the rule's own flags, `--name=value` strings, put after the library's.
      mnemonic: the action's mnemonic.
      progress_message: its progress message.

    Returns:
      The output directory (named after the target).
    """
    if AtenLibraryInfo not in ctx.attr.library:
        fail(wheel_library_error(str(ctx.label), str(ctx.attr.library.label), ctx.attr.library.label.name))
    info = ctx.attr.library[AtenLibraryInfo]
    if not info.op_yaml:
        fail("rules_aten: {}: library = {} has no op YAML (a library of external_backend_codegen?): {} ships an aten_codegen library".format(ctx.label, ctx.attr.library.label, what))
    output = ctx.actions.declare_directory(ctx.label.name)
    args = ctx.actions.args()
    args.add("wheel")
    args.add("--label=" + str(ctx.label))
    args.add("--library=" + info.library.path)
    args.add("--op_yaml=" + info.op_yaml.path)
    args.add("--tags_yaml=" + info.tags_yaml.path)
    args.add("--abi=" + info.abi)
    args.add("--torch_release=" + info.torch_release)
    args.add("--torch_target=" + info.torch_target)
    args.add("--cuda=" + info.cuda)
    args.add_all(flags)

    # The library's generated Python module first: py_srcs may build on what it registers.
    generated = [info.python_module] if getattr(info, "python_module", None) else []
    for src in generated + ctx.files.py_srcs:
        # Two flags: a path may hold "=" (a legal label), which no separator survives.
        args.add("--py_src=" + src.path)
        args.add("--py_src_label=" + src.short_path)

    args.add("--output_dir=" + output.path)
    ctx.actions.run(
        executable = ctx.executable._tool,
        arguments = [args],
        inputs = [info.library, info.op_yaml, info.tags_yaml] + generated + ctx.files.py_srcs,
        outputs = [output],
        mnemonic = mnemonic,
        progress_message = progress_message,
    )
    return output

# The attributes shipping_action reads besides `library` and `py_srcs`.
SHIPPING_ATTRS = {
    "_tool": attr.label(
        default = Label("//tool:atengen"),
        executable = True,
        cfg = "exec",
    ),
}

def _aten_wheel_impl(ctx):
    flags = [
        "--distribution=" + ctx.attr.distribution,
        "--version=" + ctx.attr.version,
        "--summary=" + ctx.attr.summary,
    ] + ["--requires=" + r for r in ctx.attr.requires]
    output = shipping_action(ctx, "aten_wheel", flags, "AtenWheel", "Making the wheel %s" % ctx.label)
    return [DefaultInfo(files = depset([output]))]

aten_wheel = rule(
    implementation = _aten_wheel_impl,
    doc = """A wheel of an [`aten_codegen`](docs/rules.md#aten_codegen) library, for `pip
install` into any venv of a torch it loads into ([docs/shipping.md](docs/shipping.md)): the
output is the directory `N/` holding `<distribution>-<version>-<tag>.whl`.

The package (`distribution` with `-` and `.` as `_`) holds `lib<name>.so`, an `__init__.py` that
loads it from beside itself and imports, for a library of `abi = "stable"`, its generated
`<name>_registrations.py` (autograd formulas of its derivatives YAML, derived fake kernels), then
`py_srcs`, `ops` (the library's `torch.ops.<ns>`) with
`ops.pyi` typed from the schemas, and `py.typed`. Requires-Dist: `torch>=<torch_target>` for a
library of `abi = "stable"`, `torch==<release>.*` for one bound to the build's torch release, and
`requires`. The tag is `py3-none-manylinux_<glibc>_<arch>` from the library's highest GLIBC
symbol version. The same inputs give the same bytes. A bad input (a library with no custom
operator, a `version` that is not PEP 440, a `distribution` that is not a valid package name or
would be shadowed by the standard library or replace one of torch's dependencies, a `summary` of
several lines, a `py_srcs` file named after a Python keyword, a `py_srcs` import of what the wheel
neither ships nor requires; [docs/shipping.md](docs/shipping.md) lists them) fails the build with
one line and leaves no wheel.""",
    attrs = dict({
        "distribution": attr.string(
            mandatory = True,
            doc = "The distribution name (`pip install` name); its package is the name with " +
                  "`-` and `.` as `_`, a Python identifier.",
        ),
        "library": attr.label(
            mandatory = True,
            # No `providers`: given aten_codegen's own name (`:myops`, its archive), the rule
            # says which target to give instead (wheel_library_error).
            doc = "The `lib<name>.so` of an `aten_codegen`, of either ABI mode " +
                  "(`:libmyops.so` for `aten_codegen(name = \"myops\")`).",
        ),
        "py_srcs": attr.label_list(
            allow_files = [".py"],
            doc = "Python modules put into the package and imported by its `__init__.py` after " +
                  "the library is loaded: fake kernels, `torch.library.register_autograd` " +
                  "formulas. They may import the standard library, torch, each other " +
                  "(`from . import m`) and the distributions of `requires`.",
        ),
        "requires": attr.string_list(
            doc = "More Requires-Dist lines (PEP 508), besides torch.",
        ),
        "summary": attr.string(doc = "The Summary of the metadata; by default one naming the namespace."),
        "version": attr.string(mandatory = True, doc = "The PEP 440 version of the wheel."),
    }, **SHIPPING_ATTRS),
)
