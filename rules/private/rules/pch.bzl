"""aten_pch: GCC precompiled headers of the headers a library's sources start with.

Parsing torch's headers costs more than most generated sources' own code, so aten_codegen
compiles them once per library, in one action (cached, and remote-cacheable, like any other) that
makes two kinds side by side:

  full   <ATen/core/Tensor.h>, <torch/library.h>, "atengen/runtime.h": for the generated sources
         that need the dispatcher (Functionalize and BackendSelect kernels, typed handles, the
         kernel-signature and autograd sources);
  light  <ATen/core/Tensor.h>, "atengen/runtime.h": for the other registration sources. Loading
         the full one costs about 0.9 CPU s per source even when nothing of it is used (GCC
         instantiates the dispatcher headers' pending templates at the end of every translation
         unit); the light one about 0.2 s.

(The hand-written kernel sources have theirs from their compile worker: kernel_objects.bzl.)

Making a precompiled header costs about two and a half compiles of its headers (GCC writes its
whole heap: 420 MB and 25 CPU s for <ATen/ATen.h>, against 10 s to compile a source that includes
it). Full and light pay only over enough generated sources: the generator's plan (`plan`, made by
programs/pch_plan.sh after the generator ran) lists the kinds that do, and a kind it does not list
is made from an empty header, in a tenth of a second; the sources then parse their own includes.
One action for both, not one each: a small library's cold build waits for them, both empty, and
each action of its own costs a sandbox of torch's 9,000 headers, made and deleted (twice 0.27 s
on a 2-core machine, one after the other when the first kernel compile holds the other slot).

Each library has its own set, `<name>_pch`, compiled with its copts. It waits for its
generator's plan, so that on a cold build a mistake in the op or derivatives YAML fails the
generator's action, which takes seconds, before any of these compiles, which take up to a minute
on a loaded machine, has taken a local slot. A set shared by every library without copts would
wait for no generator: on a 2-core machine two of them took both slots first, and the YAML mistake
surfaced after 20 s instead of 10. The plan's bytes change only when a kind crosses its threshold,
so edits do not rebuild them.

For the flags to fit, a header is compiled with the command line of a C++ compile of the
library that includes it: the toolchain's features and flags, --copt/--cxxopt, the library's
copts and -fPIC, and the include paths and defines of `deps`: the targets of the headers it
holds (torch's, the runtime's). Not the library's generated headers or kernel libraries: they
change with every operator edit, and would rebuild the .gch, and with it every source.

GCC's dependency file (.d) does not name the .gch, nor any header inside it, and Bazel's action
cache only looks at the inputs a compile's .d names: a new torch wheel would rebuild the .gch but
not the sources compiled with the old one. So the action also writes a stamp per kind,
`<name>_<kind>_stamp.h`, a comment with the .gch's SHA-256, which the sources include right after
it (read as text, so named in their .d): when the .gch changes, so does the stamp, and they
recompile. (GCC does not write the same .gch bytes twice, so a rebuilt .gch always recompiles the
sources.)
"""

load("@bazel_tools//tools/build_defs/cc:action_names.bzl", "CPP_COMPILE_ACTION_NAME")
load("//rules/private:common/cc_toolchain.bzl", "cc_toolchain_and_features")

# What the generated sources' kinds hold, in the order the sources include them.
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
}

def _header_stem(name, kind):
    """The stem of the files of `name`'s aten_pch target for `kind`.

    It is unique per target, so that a library whose deps include other generated libraries still
    finds its own.
    """
    return "{}_{}".format(name, kind)

def pch_defines(label, kinds):
    """The compiler options that offer precompiled headers of `label` to the sources of `kinds`.

    A generated source asks for a kind by name (see the file's doc).

    Args:
      label: the aten_pch target.
      kinds: the kinds offered ("full", "light").

    Returns:
      copts for the generated sources' compile actions.
    """
    name = label.rpartition(":")[2]
    copts = []
    for kind in kinds:
        macro = "ATENGEN_PCH_" + kind.upper()
        stem = _header_stem(name, kind)

        # copts are split like a shell command line: the escaped quotes reach GCC as quotes.
        copts += [
            "-D{}=\\\"{}.h\\\"".format(macro, stem),
            "-D{}_STAMP=\\\"{}_stamp.h\\\"".format(macro, stem),
        ]
    return copts

# buildifier: disable=native-cc-common
# buildifier: disable=native-cc-info
def _aten_pch_impl(ctx):
    cc_toolchain, feature_configuration = cc_toolchain_and_features(ctx)
    deps = cc_common.merge_cc_infos(cc_infos = [d[CcInfo] for d in ctx.attr.deps]).compilation_context

    compiler = cc_common.get_tool_for_action(
        feature_configuration = feature_configuration,
        action_name = CPP_COMPILE_ACTION_NAME,
    )
    args = ctx.actions.args()
    args.add(ctx.file.plan)
    texts = []
    outputs = []
    header_dirs = []
    env = None
    for kind in PCH_INCLUDES:
        stem = _header_stem(ctx.label.name, kind)
        header = ctx.actions.declare_file("{}_pch/{}.h".format(stem, stem))
        gch = ctx.actions.declare_file(header.basename + ".gch", sibling = header)
        stamp = ctx.actions.declare_file(stem + "_stamp.h", sibling = header)
        outputs += [header, gch, stamp]
        header_dirs.append(header.dirname)

        # What the header holds when its kind pays.
        text = ctx.actions.declare_file(stem + "_includes.h")
        ctx.actions.write(text, "".join(["#include {}\n".format(h) for h in PCH_INCLUDES[kind]]))
        texts.append(text)

        variables = cc_common.create_compile_variables(
            cc_toolchain = cc_toolchain,
            feature_configuration = feature_configuration,
            source_file = header.path,
            output_file = gch.path,
            # Compile actions put --copt, then --cxxopt, then the rule's copts after the
            # toolchain's flags; "-x c++-header" makes the output a precompiled header.
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
        command = cc_common.get_memory_inefficient_command_line(
            feature_configuration = feature_configuration,
            action_name = CPP_COMPILE_ACTION_NAME,
            variables = variables,
        )
        args.add_all([kind, gch, stamp, header, text, len(command) + 1, compiler])
        args.add_all(command)

        # The same for both kinds: only the source and output differ.
        env = env or cc_common.get_environment_variables(
            feature_configuration = feature_configuration,
            action_name = CPP_COMPILE_ACTION_NAME,
            variables = variables,
        )
    ctx.actions.run(
        executable = ctx.executable._compile_pch,
        arguments = [args],
        env = env,
        inputs = depset(texts + [ctx.file.plan], transitive = [deps.headers, cc_toolchain.all_files]),
        outputs = outputs,
        mnemonic = "AtenPch",
        # The label formatted here: Bazel 4.2.3 prints a `%{label}` placeholder as it is (later
        # Bazels expand it).
        progress_message = "Precompiling the generated sources' headers for %s" % ctx.label,
    )
    return [
        DefaultInfo(files = depset(outputs)),
        CcInfo(compilation_context = cc_common.create_compilation_context(
            headers = depset(outputs),
            includes = depset(header_dirs),
        )),
    ]

aten_pch = rule(
    implementation = _aten_pch_impl,
    doc = "The precompiled headers of the generated sources' common headers, of each kind (see pch.bzl).",
    attrs = {
        "copts": attr.string_list(doc = "The copts of the library that uses it."),
        "deps": attr.label_list(
            providers = [CcInfo],  # buildifier: disable=native-cc-info
            doc = "The targets of the headers it holds (their include paths and defines).",
        ),
        "plan": attr.label(
            allow_single_file = True,
            mandatory = True,
            doc = "The generator's plan (its `generated` output group): the kinds that pay for " +
                  "themselves, one per line. The action waits for it, so that the generator's " +
                  "errors come before this compile (seconds to minutes) starts.",
        ),
        "_cc_toolchain": attr.label(default = Label("@bazel_tools//tools/cpp:current_cc_toolchain")),
        "_compile_pch": attr.label(
            default = Label("//rules/private/programs:compile_pch.sh"),
            allow_single_file = True,
            executable = True,
            cfg = "exec",
        ),
    },
    fragments = ["cpp"],
    toolchains = ["@bazel_tools//tools/cpp:toolchain_type"],
)
