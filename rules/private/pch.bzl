"""aten_pch: a GCC precompiled header of the headers every generated source starts with.

Every generated source begins with <ATen/core/Tensor.h>, <torch/library.h> and
"atengen/runtime.h". Parsing them costs about 3.4 CPU seconds per source, more than most shards'
own code; a one-operator edit paid it again for the one source it recompiled, and a build of many
small shards paid it per shard. Compiled once into `<name>.h.gch` by its own action (cached, and
remote-cacheable, like any other), loading it costs about a third of that.

A source uses it through `-include <name>.h` (pch_copts): GCC looks for `<name>.h.gch` beside the
header it finds and uses it when the flags it was built with fit; else it parses `<name>.h`, which
holds the same #includes, so the result is the same either way (-Winvalid-pch says when that
happens).

For the flags to fit, the header is compiled with the command line of a C++ compile of the
library that includes it: the toolchain's features and flags, --copt/--cxxopt, the library's
copts and -fPIC, and the include paths and defines of `deps`: the targets of the headers it
holds (torch's, the runtime's). Not the library's generated headers or kernel libraries: they
change with every operator edit, and would rebuild the .gch, and with it every source.

GCC's dependency file (.d) does not name the .gch, nor any header inside it, and Bazel's action
cache only looks at the inputs a compile's .d names: a new torch wheel would rebuild the .gch but
not the sources compiled with the old one. So the action also writes `<name>_stamp.h`, a comment
with the .gch's SHA-256, which the sources include right after it (read as text, so named in
their .d): when the .gch changes, so does the stamp, and they recompile. (GCC does not write the
same .gch bytes twice, so a rebuilt .gch always recompiles the sources.)
"""

load("@bazel_tools//tools/build_defs/cc:action_names.bzl", "CPP_COMPILE_ACTION_NAME")
load(":cc_toolchain.bzl", "cc_toolchain_and_features")

# What the generated sources include first, in this order.
PCH_INCLUDES = [
    "<ATen/core/Tensor.h>",
    "<torch/library.h>",
    "\"atengen/runtime.h\"",
]

def pch_header_name(name):
    """The header that `name`'s aten_pch target makes.

    It is unique per target, so that a library whose deps include other generated libraries still
    finds its own.

    Args:
      name: the aten_pch target's name.

    Returns:
      The header's file name.
    """
    return name + ".h"

def _stamp_name(name):
    return name + "_stamp.h"

def pch_copts(name):
    """The compiler options that make a source start with the precompiled header of `name`.

    Args:
      name: the aten_pch target's name.

    Returns:
      copts for the library's compile actions.
    """
    return ["-include", pch_header_name(name), "-include", _stamp_name(name), "-Winvalid-pch"]

# buildifier: disable=native-cc-common
# buildifier: disable=native-cc-info
def _aten_pch_impl(ctx):
    cc_toolchain, feature_configuration = cc_toolchain_and_features(ctx)
    deps = cc_common.merge_cc_infos(cc_infos = [d[CcInfo] for d in ctx.attr.deps]).compilation_context

    header = ctx.actions.declare_file("{}_pch/{}".format(ctx.label.name, pch_header_name(ctx.label.name)))
    ctx.actions.write(header, "".join(["#include {}\n".format(h) for h in PCH_INCLUDES]))
    gch = ctx.actions.declare_file(header.basename + ".gch", sibling = header)
    stamp = ctx.actions.declare_file(_stamp_name(ctx.label.name), sibling = header)

    variables = cc_common.create_compile_variables(
        cc_toolchain = cc_toolchain,
        feature_configuration = feature_configuration,
        source_file = header.path,
        output_file = gch.path,
        # Compile actions put --copt, then --cxxopt, then the rule's copts after the toolchain's
        # flags; "-x c++-header" makes the output a precompiled header.
        user_compile_flags = ctx.fragments.cpp.copts + ctx.fragments.cpp.cxxopts + ctx.attr.copts +
                             ["-x", "c++-header"],
        include_directories = deps.includes,
        quote_include_directories = deps.quote_includes,
        system_include_directories = deps.system_includes,
        preprocessor_defines = deps.defines,
        # The library is linked into a shared object: its sources compile with -fPIC.
        use_pic = True,
        add_legacy_cxx_options = True,
    )
    compiler = cc_common.get_tool_for_action(
        feature_configuration = feature_configuration,
        action_name = CPP_COMPILE_ACTION_NAME,
    )
    args = ctx.actions.args()
    args.add_all([compiler, gch, stamp])
    args.add_all(cc_common.get_memory_inefficient_command_line(
        feature_configuration = feature_configuration,
        action_name = CPP_COMPILE_ACTION_NAME,
        variables = variables,
    ))
    ctx.actions.run_shell(
        command = """compiler="$1" gch="$2" stamp="$3"; shift 3
"$compiler" "$@" && digest=$(sha256sum "$gch") && echo "// ${digest%% *}" > "$stamp"
""",
        arguments = [args],
        env = cc_common.get_environment_variables(
            feature_configuration = feature_configuration,
            action_name = CPP_COMPILE_ACTION_NAME,
            variables = variables,
        ),
        inputs = depset([header], transitive = [deps.headers, cc_toolchain.all_files]),
        outputs = [gch, stamp],
        mnemonic = "AtenPch",
        progress_message = "Precompiling the generated sources' headers for %{label}",
    )
    return [
        DefaultInfo(files = depset([header, gch, stamp])),
        CcInfo(compilation_context = cc_common.create_compilation_context(
            headers = depset([header, gch, stamp]),
            includes = depset([header.dirname]),
        )),
    ]

aten_pch = rule(
    implementation = _aten_pch_impl,
    doc = "A precompiled header of the generated sources' common headers (see pch.bzl).",
    attrs = {
        "copts": attr.string_list(doc = "The copts of the library that uses it."),
        "deps": attr.label_list(
            providers = [CcInfo],  # buildifier: disable=native-cc-info
            doc = "The targets of the headers it holds (their include paths and defines).",
        ),
        "_cc_toolchain": attr.label(default = Label("@bazel_tools//tools/cpp:current_cc_toolchain")),
    },
    fragments = ["cpp"],
    toolchains = ["@bazel_tools//tools/cpp:toolchain_type"],
)
