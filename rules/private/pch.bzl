"""aten_pch: GCC precompiled headers of the headers the generated sources start with.

Parsing torch's headers costs more than most generated sources' own code, so aten_codegen
compiles them once, in two variants, each by its own action (cached, and remote-cacheable, like
any other):

  full   <ATen/core/Tensor.h>, <torch/library.h>, "atengen/runtime.h": for the sources that
         need the dispatcher (Functionalize and BackendSelect kernels, typed handles, the
         kernel-signature and autograd sources) and for the library's own `srcs`;
  light  <ATen/core/Tensor.h>, "atengen/runtime.h": for the other registration sources. Loading
         the full one costs about 0.9 CPU s per source even when nothing of it is used (GCC
         instantiates the dispatcher headers' pending templates at the end of every translation
         unit); the light one about 0.2 s.

A library with hand-written `srcs` (kernels) gets a third, built only then:

  kernels  <ATen/ATen.h> and what `full` holds: what a kernel source starts with. Parsing
         ATen/ATen.h (every operator's function) is most of a kernel's compile: about 5 s of a
         one-line kernel with g++ -std=c++20 here, 1.5 s from this header. It takes about 30 CPU
         s and 1.2 GB to build (a .gch of about 400 MB), once per torch (the other two: about 20
         and 10 CPU s).

Each library has its own set, `<name>_pch_<kind>`, compiled with its copts. They wait for its
generator (`after`: its `generated` stamp, whose bytes never change), so that on a cold build a
mistake in the op or derivatives YAML fails the generator's action, which takes seconds, before
any of these compiles, which take up to a minute on a loaded machine, has taken a local slot. A
set shared by every library without copts would wait for no generator: on a 2-core machine two
of them took both slots first, and the YAML mistake surfaced after 20 s instead of 10. As the
stamp's bytes are the same after every regeneration, the headers are not rebuilt by it.

For the flags to fit, a header is compiled with the command line of a C++ compile of the
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

# What each variant holds, in the order the generated sources include them.
PCH_INCLUDES = {
    "full": [
        "<ATen/core/Tensor.h>",
        "<torch/library.h>",
        "\"atengen/runtime.h\"",
    ],
    "light": [
        "<ATen/core/Tensor.h>",
        "\"atengen/runtime.h\"",
    ],
    "kernels": [
        "<ATen/ATen.h>",
        "<ATen/core/Tensor.h>",
        "<torch/library.h>",
        "\"atengen/runtime.h\"",
    ],
}

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

def _name(label):
    return label.rpartition(":")[2]

def pch_include_copts(label):
    """The compiler options that make every source start with the precompiled header `label`.

    Args:
      label: the aten_pch target.

    Returns:
      copts for a library's compile actions.
    """
    name = _name(label)
    return ["-include", pch_header_name(name), "-include", _stamp_name(name), "-Winvalid-pch"]

def pch_defines(label, kind):
    """The compiler options that offer precompiled header `label` to the sources of its kind.

    A generated source asks for a kind by name (see the file's doc).

    Args:
      label: the aten_pch target.
      kind: its `kind`.

    Returns:
      copts for the generated sources' compile actions.
    """
    macro = "ATENGEN_PCH_" + kind.upper()
    name = _name(label)

    # copts are split like a shell command line: the escaped quotes reach GCC as quotes.
    return [
        "-D{}=\\\"{}\\\"".format(macro, pch_header_name(name)),
        "-D{}_STAMP=\\\"{}\\\"".format(macro, _stamp_name(name)),
    ]

# buildifier: disable=native-cc-common
# buildifier: disable=native-cc-info
def _aten_pch_impl(ctx):
    cc_toolchain, feature_configuration = cc_toolchain_and_features(ctx)
    deps = cc_common.merge_cc_infos(cc_infos = [d[CcInfo] for d in ctx.attr.deps]).compilation_context

    header = ctx.actions.declare_file("{}_pch/{}".format(ctx.label.name, pch_header_name(ctx.label.name)))
    ctx.actions.write(header, "".join(["#include {}\n".format(h) for h in PCH_INCLUDES[ctx.attr.kind]]))
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
        inputs = depset([header] + ctx.files.after, transitive = [deps.headers, cc_toolchain.all_files]),
        outputs = [gch, stamp],
        mnemonic = "AtenPch",
        # The label formatted here: Bazel 4.2.3 prints a `%{label}` placeholder as it is (later
        # Bazels expand it).
        progress_message = "Precompiling the generated sources' headers (%s) for %s" % (ctx.attr.kind, ctx.label),
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
        "after": attr.label_list(
            allow_files = True,
            doc = "Files the action waits for, whose bytes never change: the generator's " +
                  "`generated` stamp, so that the generator's errors come before this compile " +
                  "(which takes seconds to minutes) starts.",
        ),
        "copts": attr.string_list(doc = "The copts of the library that uses it."),
        "kind": attr.string(
            default = "full",
            values = ["full", "light", "kernels"],
            doc = "Which headers it holds (PCH_INCLUDES).",
        ),
        "deps": attr.label_list(
            providers = [CcInfo],  # buildifier: disable=native-cc-info
            doc = "The targets of the headers it holds (their include paths and defines).",
        ),
        "_cc_toolchain": attr.label(default = Label("@bazel_tools//tools/cpp:current_cc_toolchain")),
    },
    fragments = ["cpp"],
    toolchains = ["@bazel_tools//tools/cpp:toolchain_type"],
)
