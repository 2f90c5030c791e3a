"""The C++ targets over a generator action's trees, shared by aten_codegen and
external_backend_codegen: filegroups of its output groups, the generated headers' cc_library, the
alwayslink archive of the compiled sources, and lib<name>.so for torch.ops.load_library."""

load("@local_cuda//:defs.bzl", "NVCC", "TORCH_CUDA_ARCH_LIST_GENCODE")
load("@rules_cc//cc:defs.bzl", "cc_binary", "cc_library")
load("@torch//:defs.bzl", "CUDA_ARCH_LIST", "TORCH_CUDA", "TORCH_RELEASE", "TORCH_VERSION")
load("//rules/private:common/cc_toolchain.bzl", "cc_toolchain_and_features")
load("//rules/private:common/providers.bzl", "AtenLibraryInfo")
load("//rules/private:rules/cuda_objects.bzl", "aten_cuda_objects")
load("//rules/private:rules/kernel_objects.bzl", "aten_kernel_objects")
load("//rules/private:rules/pch.bzl", "aten_pch", "pch_defines")

def labels(names):
    """Labels resolved in rules_aten's repository, whichever workspace calls the macro."""
    return [str(Label(n)) for n in names]

def torch_deps():
    """The torch headers every generated registration library compiles against.

    Its libraries are linked by `lib<name>.so` alone (aten_shared_library), by path.
    """
    return labels(["@torch//:headers"])

def library_deps():
    """torch_deps() and the runtime headers, which every generated source compiles against.

    They are also what the precompiled headers hold.
    """
    return labels(["//rules/runtime"]) + torch_deps()

def release_guard_srcs():
    """The runtime's torch release guard, compiled into each ABI-bound library of its own.

    As a source of the library, its compile waits for the library's generated headers, and so
    for the generator: on a cold build a YAML mistake fails before any compile has started
    (a source of //rules/runtime would wait for nothing and take a slot beside the generator).
    """
    return labels(["//rules/runtime:torch_release_guard_srcs"])

# buildifier: disable=native-cc-common
# buildifier: disable=native-cc-info
def _aten_archive_impl(ctx):
    cc_toolchain, feature_configuration = cc_toolchain_and_features(ctx)

    # The libraries' own linker inputs, with their archives instead of the object files; the
    # libraries' deps are linked after them (from `deps`, the same list).
    archives = []
    libraries = []
    for library in ctx.attr.libraries:
        for linker_input in library[CcInfo].linking_context.linker_inputs.to_list():
            if linker_input.owner != library.label:
                continue
            for lib in linker_input.libraries:
                libraries.append(cc_common.create_library_to_link(
                    actions = ctx.actions,
                    feature_configuration = feature_configuration,
                    cc_toolchain = cc_toolchain,
                    static_library = lib.static_library,
                    pic_static_library = lib.pic_static_library,
                    alwayslink = lib.alwayslink,
                ))
                archives += [f for f in [lib.pic_static_library, lib.static_library] if f]
    linker_input = cc_common.create_linker_input(owner = ctx.label, libraries = depset(libraries))
    own = CcInfo(
        compilation_context = cc_common.merge_cc_infos(
            cc_infos = [library[CcInfo] for library in ctx.attr.libraries],
        ).compilation_context,
        linking_context = cc_common.create_linking_context(linker_inputs = depset([linker_input])),
    )
    return [
        DefaultInfo(files = depset(archives)),
        cc_common.merge_cc_infos(
            direct_cc_infos = [own],
            cc_infos = [dep[CcInfo] for dep in ctx.attr.deps],
        ),
    ]

_aten_archive = rule(
    implementation = _aten_archive_impl,
    doc = """cc_libraries whose sources are tree artifacts, re-exported as their archives alone.

Building it builds the archive; depending on it links the archive whole, then `deps`.

With gold, Bazel 4 links a library's object files between --start-lib and --end-lib, where they
are lazy like archive members, and for objects from a tree artifact it does so even when the
library is alwayslink: nothing references the registrations, so a binary or shared library that
links them gets none. Without the object files in its CcInfo, the library is linked as its
archive, with --whole-archive.""",
    attrs = {
        "deps": attr.label_list(
            providers = [CcInfo],  # buildifier: disable=native-cc-info
            doc = "The library's deps, linked after it.",
        ),
        "libraries": attr.label_list(
            mandatory = True,
            providers = [CcInfo],  # buildifier: disable=native-cc-info
            doc = "cc_libraries with alwayslink = True and linkstatic = True.",
        ),
        "_cc_toolchain": attr.label(default = Label("@bazel_tools//tools/cpp:current_cc_toolchain")),
    },
    fragments = ["cpp"],
    toolchains = ["@bazel_tools//tools/cpp:toolchain_type"],
)

def _aten_after_impl(ctx):
    done = ctx.actions.declare_file(ctx.label.name + ".h")
    ctx.actions.run_shell(
        command = ": > \"$1\"",
        arguments = [done.path],
        inputs = ctx.files.wait_for,
        outputs = [done],
        mnemonic = "AtenAfter",
        # It writes an empty file and reads nothing: no sandbox to set up on every kernel edit.
        execution_requirements = {"no-sandbox": "1"},
        progress_message = "Ordering %s" % ctx.label,
    )
    return [
        DefaultInfo(files = depset([done])),
        # buildifier: disable=native-cc-common
        # buildifier: disable=native-cc-info
        CcInfo(compilation_context = cc_common.create_compilation_context(headers = depset([done]))),
    ]

_aten_after = rule(
    implementation = _aten_after_impl,
    doc = """An empty header made once `wait_for` is built: the compiles of a library that depends
on it start after that. Its bytes never change, so a rebuild of `wait_for` does not recompile
them.""",
    attrs = {
        "wait_for": attr.label_list(mandatory = True, doc = "What to build first."),
    },
)

def aten_archive_library(name, srcs, deps, copts, visibility, tags, generated_srcs = [], signature_srcs = [], runtime_srcs = [], pch_deps = None, pch_plan = None, extra_libraries = []):
    """Target `name`: the sources compiled by the cc_library `<name>_objects`, as its archive.

    Args:
      name: the target that others depend on (see _aten_archive).
      srcs: sources, hand-written or generated.
      deps: cc_library deps of the sources, linked after the archive.
      copts: extra compiler options.
      visibility: visibility of `name`; the other targets are private.
      tags: tags of all targets.
      generated_srcs: aten_codegen's generated sources (tree artifacts), which name the
        precompiled header they start with (pch.bzl).
      signature_srcs: aten_codegen's kernel-signature sources (a tree artifact), which take the
        full precompiled header. With `pch_deps` they are compiled by `<name>_signature_objects`,
        which waits for that header alone, while the other generated sources also wait for the
        kernels (`srcs`, _aten_after): a small library's costliest compiles (they parse
        torch/library.h, as long as all the others together) then start first, beside the
        kernels. Among sources ready at once Bazel picked them last in most profiles of a cold
        quickstart build, 3 to 5 s later than they could have started.
      runtime_srcs: sources of rules_aten's runtime (release_guard_srcs()), compiled with the
        generated ones and without a precompiled header.
      pch_deps: if given, `generated_srcs` start with precompiled headers (pch.bzl), full and
        light (each source names its kind): `<name>_pch`, built with the copts against
        these deps: those of the headers they hold (torch's and the runtime's), not the
        library's generated headers or kernels, which change with every operator edit and
        would rebuild them, and with them every source. `srcs` are then compiled by
        `<name>_srcs_objects` (kernel_objects.bzl), whose worker keeps a precompiled header of
        what each starts with.
      pch_plan: the generator's plan of the precompiled headers (pch.bzl's `plan`), which they
        wait for, so that a YAML mistake fails before they start.
      extra_libraries: more alwayslink libraries to link whole with the archive (the nvcc
        objects of aten_codegen's cuda_srcs).
    """
    if pch_deps == None:
        libraries = [_objects_library(name + "_objects", generated_srcs + signature_srcs + runtime_srcs + srcs, deps, copts, tags)]
    else:
        pch = _precompiled_headers(name, copts, pch_deps, pch_plan, tags)

        libraries = [_objects_library(
            name + "_signature_objects",
            signature_srcs,
            deps + [pch],
            copts + pch_defines(pch, ["full"]) + ["-Winvalid-pch"],
            tags,
        )] if signature_srcs else []
        after_kernels = []
        if srcs:
            aten_kernel_objects(
                name = name + "_srcs_objects",
                # (Only aten_codegen asks for precompiled headers.)
                library = 'aten_codegen(name = "{}")'.format(name),
                srcs = srcs,
                deps = deps,
                copts = copts,
                visibility = ["//visibility:private"],
                tags = tags,
            )
            libraries.append(":" + name + "_srcs_objects")
            _aten_after(
                name = name + "_after_kernels",
                wait_for = [":" + name + "_srcs_objects"],
                visibility = ["//visibility:private"],
                tags = tags,
            )
            after_kernels = [":" + name + "_after_kernels"]
        libraries.append(_objects_library(
            name + "_objects",
            generated_srcs + runtime_srcs,
            deps + [pch] + after_kernels,
            copts + pch_defines(pch, ["full", "light"]) + ["-Winvalid-pch"],
            tags,
        ))
    _aten_archive(
        name = name,
        libraries = libraries + extra_libraries,
        deps = deps,
        visibility = visibility,
        tags = tags,
    )

def aten_cuda_library(name, codegen, deps, kernel_deps, cuda_srcs, cuda_gencode, cuda_copts, copts, visibility, tags):
    """`<name>_cuda`: the archive of the generator's CUDA-key registrations and of `cuda_srcs`.

    The registrations are compiled as C++ (only kernels are `.cu`); `cuda_srcs` by nvcc, into
    `<name>_cuda_kernels` (rules/private/rules/cuda_objects.bzl), for the architectures cuda_archs.bzl
    picks.

    Args:
      name: the library's name (aten_codegen's).
      codegen: the generator target, whose `<codegen>_cuda_srcs` filegroup holds the
        registrations.
      deps: what the registrations compile against, linked after the archive.
      kernel_deps: what `cuda_srcs` compile against.
      cuda_srcs: `.cu` kernel sources.
      cuda_gencode: nvcc's -gencode flags, or None for cuda_archs.bzl's choice.
      cuda_copts: extra nvcc options.
      copts: extra compiler options of the registrations.
      visibility: visibility of `<name>_cuda`.
      tags: tags of the targets.
    """
    kernels = []
    if cuda_srcs:
        aten_cuda_objects(
            name = name + "_cuda_kernels",
            srcs = cuda_srcs,
            deps = kernel_deps,
            gencode = cuda_gencode or [],
            gencode_given = cuda_gencode != None,
            env_gencode = TORCH_CUDA_ARCH_LIST_GENCODE,
            wheel_arch_list = CUDA_ARCH_LIST,
            wheel_version = TORCH_VERSION,
            copts = cuda_copts,
            nvcc = NVCC,
            visibility = ["//visibility:private"],
            tags = tags,
        )
        kernels.append(":" + name + "_cuda_kernels")
    aten_archive_library(
        name = name + "_cuda",
        generated_srcs = [":{}_cuda_srcs".format(codegen)],
        srcs = [],
        deps = deps,
        copts = copts,
        visibility = visibility,
        tags = tags,
        extra_libraries = kernels,
    )

def _precompiled_headers(name, copts, deps, plan, tags):
    """The library's own aten_pch target, `<name>_pch`; returns its label.

    Its own even without copts, so that it can wait for its generator (`plan`): a set shared by
    several libraries waits for none, and on a cold build took both local slots of a 2-core
    machine before the generator could report a YAML mistake (pch.bzl).
    """
    aten_pch(
        name = name + "_pch",
        deps = deps,
        plan = plan,
        copts = copts,
        visibility = ["//visibility:private"],
        tags = tags,
    )
    return ":" + name + "_pch"

def _objects_library(name, srcs, deps, copts, tags):
    """A private cc_library of sources for _aten_archive; returns its label."""
    cc_library(
        name = name,
        srcs = srcs,
        deps = deps,
        copts = copts,
        alwayslink = True,
        linkstatic = True,
        visibility = ["//visibility:private"],
        tags = tags,
    )
    return ":" + name

# buildifier: disable=native-cc-info
def _prebuilt_shared_libraries(targets):
    """The prebuilt shared libraries (cc_import) the targets link.

    They may define a kernel the library itself does not. A cc_library's own .so, which Bazel
    builds only on request, is left out: its code is in its archive, linked into the library.
    """
    found = []
    for target in targets:
        for linker_input in target[CcInfo].linking_context.linker_inputs.to_list():
            for lib in linker_input.libraries:
                if lib.dynamic_library and not lib.static_library and not lib.pic_static_library:
                    found.append(lib.dynamic_library)
    return found

def _aten_release_bound_library_impl(ctx):
    library = ctx.actions.declare_file(ctx.label.name)
    shared = _prebuilt_shared_libraries(ctx.attr.libraries)
    args = ctx.actions.args()
    args.add("bound-link")
    args.add_all(ctx.files.kernel_headers, format_each = "--kernel_headers=%s", expand_directories = False)
    args.add_all(shared, format_each = "--shared_library=%s")
    args.add("--label=" + str(ctx.label))
    args.add("--linked=" + ctx.file.linked.path)
    args.add("--output=" + library.path)
    args.add_all(ctx.files.torch_libraries, format_each = "--torch_library=%s")
    ctx.actions.run(
        executable = ctx.executable._tool,
        arguments = [args],
        inputs = [ctx.file.linked] + ctx.files.torch_libraries + ctx.files.kernel_headers + shared,
        outputs = [library],
        mnemonic = "AtenReleaseBoundLink",
        progress_message = "Checking %s's kernels and making its references to torch weak" % ctx.label,
    )
    return [
        DefaultInfo(files = depset([library])),
        AtenLibraryInfo(
            abi = "release",
            cuda = TORCH_CUDA if ctx.attr.cuda else "",
            library = library,
            op_yaml = ctx.file.op_yaml,
            python_module = None,
            tags_yaml = ctx.file.tags_yaml,
            torch_release = TORCH_RELEASE,
            torch_target = "",
        ),
    ]

aten_release_bound_library = rule(
    implementation = _aten_release_bound_library_impl,
    doc = """The linked library with its references to torch's libraries made weak
(`atengen bound-link`): in another torch release the loader does not refuse it for a
missing symbol, and its release guard (rules/runtime/atengen/torch_release_guard.h) refuses it
instead, with one line that names both releases, before anything of it is registered.

The same action first fails the build on a kernel that the generated headers declare and that
nothing defines (or that is defined with other parameters), one line per kernel: a shared
library may leave symbols undefined, so the link alone would pass, and the load fail.""",
    attrs = {
        "cuda": attr.bool(doc = "It links torch's CUDA libraries."),
        "kernel_headers": attr.label_list(
            allow_files = True,
            doc = "The generator's header trees: the kernels they declare must be defined.",
        ),
        "libraries": attr.label_list(
            providers = [CcInfo],  # buildifier: disable=native-cc-info
            doc = "What the library links: prebuilt shared libraries among them may define kernels.",
        ),
        "linked": attr.label(mandatory = True, allow_single_file = [".so"]),
        "op_yaml": attr.label(allow_single_file = [".yaml"], doc = "Its op YAML (for aten_wheel)."),
        "tags_yaml": attr.label(allow_single_file = [".yaml"], doc = "The op YAML's tags YAML."),
        "torch_libraries": attr.label_list(
            mandatory = True,
            allow_files = [".so"],
            doc = "The torch libraries it links: their symbols are the ones made weak.",
        ),
        "_tool": attr.label(
            default = Label("//tool:atengen"),
            executable = True,
            cfg = "exec",
        ),
    },
)

def aten_shared_library(name, visibility, tags, cuda = False, cuda_warning = False, kernel_headers = [], op_yaml = None, tags_yaml = None):
    """`lib<name>.so` of the library `name`, for torch.ops.load_library.

    It links torch's libraries dynamically, by path, and bundles no torch code. It has no
    RUNPATH: it loads into a process that has loaded torch, which has its libraries, so it loads
    from wherever it is copied. It is linked under a private name; lib<name>.so is that library
    with its references to torch made weak (aten_release_bound_library), so that in another torch
    release its guard, not the loader, refuses it.

    Args:
      name: the aten_archive_library to link whole.
      visibility: visibility of the shared library.
      tags: tags of the shared library.
      cuda: also link `<name>_cuda` whole, with -Wl,--no-undefined: every symbol the CUDA
        registrations and kernels use must come from torch's (CUDA) libraries or the CUDA
        runtime, or the link fails instead of the load. Those libraries are linked as needed:
        with no CUDA code (no CUDA keys in the YAML, no cuda_srcs), the library depends on none
        of them and loads into a CPU-only torch of the same release.
      cuda_warning: depend on `<name>_cuda` only for its warning (a CUDA wheel without a
        toolkit: it is empty, and says that the library is CPU-only).
      kernel_headers: the generator's header trees; a kernel they declare that nothing defines
        fails the build (aten_release_bound_library).
      op_yaml: the op YAML it registers, which its AtenLibraryInfo carries to aten_wheel.
      tags_yaml: that op YAML's tags YAML.
    """

    # By path, in the flags Bazel puts after the archives: a cc_import would add a RUNPATH.
    cpu_libraries, cuda_libraries = labels(["@torch//:cpu_libraries", "@torch//:cuda_libraries"])
    torch_libraries = [cpu_libraries] + ([cuda_libraries] if cuda else [])
    linkopts = ["$(locations {})".format(cpu_libraries)]
    if cuda:
        linkopts = ["-Wl,--no-undefined"] + linkopts + [
            "-Wl,--push-state,--as-needed",
            "$(locations {})".format(cuda_libraries),
            "-Wl,--pop-state",
        ]
    linked = "_{}_linked/lib{}.so".format(name, name)
    cc_binary(
        name = linked,
        linkshared = True,
        deps = [":" + name] + ([":" + name + "_cuda"] if cuda or cuda_warning else []),
        linkopts = linkopts,
        additional_linker_inputs = torch_libraries,
        visibility = ["//visibility:private"],
        tags = tags,
    )
    aten_release_bound_library(
        name = "lib{}.so".format(name),
        linked = ":" + linked,
        cuda = cuda,
        op_yaml = op_yaml,
        tags_yaml = tags_yaml,
        torch_libraries = torch_libraries,
        kernel_headers = kernel_headers,
        libraries = [":" + name],
        visibility = visibility,
        tags = tags,
    )

def codegen_outputs(name, codegen, groups, visibility, tags):
    """Declares the targets over a generator action's outputs.

    They are `<codegen>_<group>` filegroups of its output groups, and `<name>_headers`, the
    cc_library of its generated headers (plus torch's).

    Args:
      name: base name of the macro's targets.
      codegen: the generator rule's target name (in this package).
      groups: the output groups to wrap in filegroups.
      visibility: visibility of `<name>_headers`; the filegroups are private.
      tags: tags of the targets.
    """
    for group in groups:
        native.filegroup(
            name = "{}_{}".format(codegen, group),
            srcs = [":" + codegen],
            output_group = group,
            visibility = ["//visibility:private"],
            tags = tags,
        )
    cc_library(
        name = name + "_headers",
        deps = [":" + codegen] + labels(["@torch//:headers"]),
        visibility = visibility,
        tags = tags,
    )
