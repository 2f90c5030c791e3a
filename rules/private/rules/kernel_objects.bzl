"""aten_kernel_objects: a library's hand-written C++ kernel sources, compiled by `atengen
compile-kernel`, as an alwayslink archive.

Each source is one action with the command line of a C++ compile of the library (the toolchain's
features and flags, --copt/--cxxopt, the library's copts, -fPIC, and the include paths and
defines of `deps`). The action supports Bazel's persistent workers, which local builds use by
default: the worker keeps a precompiled header of the torch and standard headers each source
starts with, made beside the source's first compile rather than before it, so that a cold build
waits for no precompiled header and a kernel edit still compiles in about a second
(tool/atengen/kernel_compile/precompiled.py). A remote or sandboxed action compiles the source
plainly, to the same object bytes.
"""

load("@bazel_tools//tools/build_defs/cc:action_names.bzl", "CPP_COMPILE_ACTION_NAME")
load("//rules/private:common/cc_toolchain.bzl", "alwayslink_objects", "cc_toolchain_and_features")

# The kernel sources that are compiled, and the headers they may include.
CXX_SOURCE_EXTENSIONS = ["cc", "cpp", "cxx", "c++", "C"]
HEADER_EXTENSIONS = ["h", "hh", "hpp", "hxx", "h++", "H", "inc", "inl", "ipp", "tcc", "cuh"]

def _object_path(ctx, src, taken):
    """The object of `src`: `_objs/<name>/<its path in the package, extension dropped>.pic.o`.

    Unique per source: `a.cc` and `a.cpp` keep their extensions apart.

    Args:
      ctx: the rule context.
      src: the source.
      taken: the paths given so far (updated).

    Returns:
      The object's path, for declare_file.
    """
    path = src.short_path
    if path.startswith("../"):  # a source of another repository: ../<repository>/<path>
        path = path.split("/", 2)[2]
    package = ctx.label.package
    if package and path.startswith(package + "/"):
        path = path[len(package) + 1:]
    stem = path.rpartition(".")[0]
    if stem in taken:
        stem = path.replace(".", "_")
    taken[stem] = True
    return "_objs/{}/{}.pic.o".format(ctx.label.name, stem)

# buildifier: disable=native-cc-common
# buildifier: disable=native-cc-info
def _aten_kernel_objects_impl(ctx):
    cc_toolchain, feature_configuration = cc_toolchain_and_features(ctx)
    deps = cc_common.merge_cc_infos(cc_infos = [d[CcInfo] for d in ctx.attr.deps]).compilation_context
    sources = [f for f in ctx.files.srcs if f.extension in CXX_SOURCE_EXTENSIONS]
    headers = [f for f in ctx.files.srcs if f.extension in HEADER_EXTENSIONS]
    for f in ctx.files.srcs:
        if f.extension not in CXX_SOURCE_EXTENSIONS + HEADER_EXTENSIONS:
            fail("rules_aten: {}: srcs: {} is neither a C++ source ({}) nor a header: compile it in a cc_library of deps".format(
                ctx.attr.library,
                f.short_path,
                ", ".join(["." + e for e in CXX_SOURCE_EXTENSIONS]),
            ))
    compiler = cc_common.get_tool_for_action(
        feature_configuration = feature_configuration,
        action_name = CPP_COMPILE_ACTION_NAME,
    )

    # A source's quoted includes resolve from its repository's root, in the source tree and in
    # the output tree, as cc_library's do.
    root = ctx.label.workspace_root or "."
    own_quote_includes = [root, ctx.bin_dir.path + ("/" + ctx.label.workspace_root if ctx.label.workspace_root else "")]
    inputs = depset(headers, transitive = [deps.headers, cc_toolchain.all_files])

    # Split like cc_library's copts, as a Bourne shell would.
    copts = [token for copt in ctx.attr.copts for token in ctx.tokenize(copt)]
    objects = []
    taken = {}
    for src in sources:
        obj = ctx.actions.declare_file(_object_path(ctx, src, taken))
        objects.append(obj)
        variables = cc_common.create_compile_variables(
            cc_toolchain = cc_toolchain,
            feature_configuration = feature_configuration,
            source_file = src.path,
            output_file = obj.path,
            user_compile_flags = ctx.fragments.cpp.copts + ctx.fragments.cpp.cxxopts + copts,
            include_directories = deps.includes,
            quote_include_directories = depset(own_quote_includes, transitive = [deps.quote_includes]),
            system_include_directories = deps.system_includes,
            preprocessor_defines = deps.defines,
            use_pic = True,
            add_legacy_cxx_options = True,
        )
        args = ctx.actions.args()
        args.add(src, format = "--source=%s")
        args.add(obj, format = "--output=%s")
        args.add("--")
        args.add(compiler)
        args.add_all(cc_common.get_memory_inefficient_command_line(
            feature_configuration = feature_configuration,
            action_name = CPP_COMPILE_ACTION_NAME,
            variables = variables,
        ))

        # Workers take their requests' arguments from a parameter file.
        args.use_param_file("@%s", use_always = True)
        args.set_param_file_format("multiline")
        ctx.actions.run(
            executable = ctx.executable._tool,
            arguments = ["compile-kernel", args],
            env = cc_common.get_environment_variables(
                feature_configuration = feature_configuration,
                action_name = CPP_COMPILE_ACTION_NAME,
                variables = variables,
            ),
            inputs = depset([src], transitive = [inputs]),
            outputs = [obj],
            mnemonic = "AtenKernelCompile",
            execution_requirements = {"supports-workers": "1"},
            progress_message = "Compiling %s" % src.short_path,
        )

    linking_context = alwayslink_objects(ctx, cc_toolchain, feature_configuration, objects)
    return [
        DefaultInfo(files = depset(objects)),
        CcInfo(compilation_context = deps, linking_context = linking_context),
    ]

aten_kernel_objects = rule(
    implementation = _aten_kernel_objects_impl,
    doc = "A library's C++ kernel sources as an alwayslink archive (see kernel_objects.bzl).",
    attrs = {
        "copts": attr.string_list(doc = "The library's copts."),
        "deps": attr.label_list(
            providers = [CcInfo],  # buildifier: disable=native-cc-info
            doc = "The targets of the headers the sources include (their paths and defines).",
        ),
        "library": attr.string(doc = "The library, as its macro's call, for messages."),
        "srcs": attr.label_list(allow_files = True, doc = "Kernel sources and their headers."),
        "_cc_toolchain": attr.label(default = Label("@bazel_tools//tools/cpp:current_cc_toolchain")),
        "_tool": attr.label(default = Label("//tool:atengen"), executable = True, cfg = "exec"),
    },
    fragments = ["cpp"],
    toolchains = ["@bazel_tools//tools/cpp:toolchain_type"],
)
