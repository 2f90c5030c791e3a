"""aten_codegen: registration sources from operator YAML, compiled into cc_library targets.

One action runs `atengen generate` and writes four tree artifacts under
`<package>/<name>_codegen/`:

  cpu.cc/   Register<Key>_<shard>.cpp for the CPU-side dispatch keys, and for custom namespaces
            RegisterSchema_<ns>_<shard>.cpp;
  signatures.cc/  KernelSignatures_<bucket>.cpp, the registration code of each kernel signature:
            compiled by a library of their own, which is the first to start (cc_targets.bzl);
  cuda.cc/  Register<Key>_<shard>.cpp for the CUDA keys (only with cuda = True and a toolkit);
  include/  <ns>/ops/<root>_native.h, the kernel declarations of custom namespaces;
  autograd.cc/  with `derivatives`: Autograd_<shard>.cpp, from a second action running
            `atengen autograd`: backward nodes, Autograd and ADInplaceOrView kernels of the
            operators the derivatives YAML has formulas for.

Which files the trees hold depends on the YAML and the op selection, so they are directories,
not declared files. Bazel compiles each file of a tree in its own action, and a file whose bytes
(and included headers) did not change hits the action cache: editing one operator recompiles only
that operator's shards.
"""

load("@local_cuda//:defs.bzl", "CUDA_DIR", "CUDA_VERSION", "HAS_CUDA")
load("@rules_cc//cc:defs.bzl", "cc_library")
load("@torch//:defs.bzl", "TORCH_CUDA", "TORCH_VERSION")
load("//rules/private:common/generator_attrs.bzl", "check_torch_visible", "generator_attrs", "selection_args", "selection_attrs", "shards_attr", "shards_flag", "target_name_error", "torch_facts_flags", "torch_version_py_attr")
load("//rules/private:common/providers.bzl", "AtenCodegenInfo")
load("//rules/private:common/releases.bzl", "OLDEST_STABLE_TARGET")
load(
    "//rules/private:macros/cc_targets.bzl",
    "aten_archive_library",
    "aten_cuda_library",
    "aten_shared_library",
    "codegen_outputs",
    "labels",
    "library_deps",
    "release_guard_srcs",
)
load("//rules/private:rules/cuda_objects.bzl", "aten_cuda_unavailable")
load("//rules/private:rules/stable.bzl", "aten_stable_library")

def _aten_codegen_impl(ctx):
    prefix = ctx.label.name + "/"

    # What atengen writes (see the file's doc). The ".cc" in the directory names is for Bazel:
    # it picks the flags of a tree's compile actions by the tree's name, and without a C++
    # extension it leaves out --cxxopt (so .bazelrc's -std=c++20). The files inside are .cpp.
    cpu = ctx.actions.declare_directory(prefix + "cpu.cc")
    signatures = ctx.actions.declare_directory(prefix + "signatures.cc")
    headers = ctx.actions.declare_directory(prefix + "include")
    cuda = ctx.actions.declare_directory(prefix + "cuda.cc") if ctx.attr.cuda else None

    selection, selection_inputs = selection_args(ctx)
    args = ctx.actions.args()
    args.add("generate")
    args.add("--op_yaml=" + ctx.file.op_yaml.path)
    args.add("--tags_yaml=" + ctx.file.tags_yaml.path)
    args.add_all(selection)
    args.add("--keys=" + ",".join(ctx.attr.keys))
    args.add(shards_flag(ctx))
    if not ctx.attr.functionalize:
        args.add("--nofunctionalize")
    args.add("--output_dir=" + cpu.path)
    args.add("--signatures_output_dir=" + signatures.path)
    args.add("--header_output_dir=" + headers.path)
    if cuda:
        args.add("--cuda_output_dir=" + cuda.path)
    facts_inputs = torch_facts_flags(ctx, args)

    # Generated sources declare the custom-namespace kernels they call themselves instead of
    # including include/<ns>/ops/<root>_native.h: Bazel 4 tracks a header from a tree artifact
    # as the whole tree, so including one would recompile every source whenever any operator's
    # header changed. This way a source's bytes depend only on its own operators, and unchanged
    # sources hit the action cache.
    ctx.actions.run(
        executable = ctx.executable.tool,
        arguments = [args],
        inputs = [ctx.file.op_yaml, ctx.file.tags_yaml] + facts_inputs + selection_inputs,
        outputs = [cpu, signatures, headers] + ([cuda] if cuda else []),
        mnemonic = "AtenCodegen",
        progress_message = "Generating ATen registrations %s" % ctx.label,
    )
    srcs = [cpu, signatures] + ([cuda] if cuda else [])

    # Its own action: editing a formula re-runs this generator only, and recompiles only the
    # autograd shards whose bytes changed.
    autograd = None
    if ctx.file.derivatives:
        autograd = ctx.actions.declare_directory(prefix + "autograd.cc")
        autograd_args = ctx.actions.args()
        autograd_args.add("autograd")
        autograd_args.add("--op_yaml=" + ctx.file.op_yaml.path)
        autograd_args.add("--tags_yaml=" + ctx.file.tags_yaml.path)
        autograd_args.add("--derivatives_yaml=" + ctx.file.derivatives.path)
        autograd_args.add(shards_flag(ctx))
        autograd_args.add("--output_dir=" + autograd.path)

        # Which FunctionsManual.h helpers the wheel exports (formulas calling others are left out).
        autograd_facts_inputs = torch_facts_flags(ctx, autograd_args)
        ctx.actions.run(
            executable = ctx.executable.tool,
            arguments = [autograd_args],
            inputs = [ctx.file.op_yaml, ctx.file.tags_yaml, ctx.file.derivatives] + autograd_facts_inputs,
            outputs = [autograd],
            mnemonic = "AtenAutogradCodegen",
            progress_message = "Generating autograd kernels %s" % ctx.label,
        )
        srcs.append(autograd)

    # The precompiled headers' plan (pch.bzl), made once the generators have run: which kinds of
    # precompiled header pay for themselves over this many generated sources. The headers wait
    # for it, so that a mistake in the YAML is reported before any compile starts; as its bytes
    # change only when a kind crosses its threshold, a regeneration does not rebuild them.
    generated = ctx.actions.declare_file(prefix + "pch_plan.txt")
    trees = [cpu, signatures] + ([autograd] if autograd else [])
    ctx.actions.run(
        executable = ctx.executable._pch_plan,
        arguments = [generated.path] + [t.path for t in trees],
        inputs = trees,
        outputs = [generated],
        mnemonic = "AtenPchPlan",
        progress_message = "Generated %s" % ctx.label,
    )

    # The users' kernels include "<ns>/ops/<root>_native.h" from the header tree. (cc_common and
    # CcInfo are Bazel 4's built-ins; Debian's rules_cc 0.0.4 has no cc/common to load them from.)
    # buildifier: disable=native-cc-common
    compilation_context = cc_common.create_compilation_context(
        headers = depset([headers]),
        includes = depset([headers.path]),
    )
    return [
        DefaultInfo(files = depset(srcs + [headers])),
        OutputGroupInfo(
            cpu_srcs = depset([cpu, signatures] + ([autograd] if autograd else [])),
            registration_srcs = depset([cpu] + ([autograd] if autograd else [])),
            signature_srcs = depset([signatures]),
            autograd_srcs = depset([autograd] if autograd else []),
            cuda_srcs = depset([cuda] if cuda else []),
            headers = depset([headers]),
            generated = depset([generated]),
        ),
        CcInfo(compilation_context = compilation_context),  # buildifier: disable=native-cc-info
        AtenCodegenInfo(
            autograd_srcs = autograd,
            cpu_srcs = cpu,
            cuda_srcs = cuda,
            headers = headers,
            include_dir = headers.path,
            signature_srcs = signatures,
        ),
    ]

aten_codegen_sources = rule(
    implementation = _aten_codegen_impl,
    doc = """The generator rule behind `aten_codegen` (its `N_codegen` target): runs `atengen
generate` once, writing the trees that [`aten_codegen`](docs/rules.md#aten_codegen) lists. Its
`shards` is a string (`"auto"`, `"0"`, `"N"`); the macro also takes a number.

Returns DefaultInfo (all trees), output groups `cpu_srcs` (every CPU-side tree), its parts
`registration_srcs` (cpu.cc/ and autograd.cc/) and `signature_srcs`, `cuda_srcs`, `headers` and
`generated` (the precompiled headers' plan, made after the generators ran: pch.bzl),
AtenCodegenInfo, and a CcInfo whose compilation context puts the header tree on the include
path. Use the aten_codegen macro rather than this rule.""",
    attrs = dict(generator_attrs(default_to_torch = False), **dict(selection_attrs(), **{
        "cuda": attr.bool(
            default = True,
            doc = "Also write the CUDA keys' sources (into `cuda.cc/`).",
        ),
        "derivatives": attr.label(
            allow_single_file = [".yaml"],
            doc = "A derivatives YAML: generate the autograd kernels of its operators.",
        ),
        "functionalize": attr.bool(
            default = True,
            doc = "With `keys = [\"auto\"]`, also generate the Functionalize-key kernels.",
        ),
        "keys": attr.string_list(
            default = ["auto"],
            doc = "Dispatch keys to generate, or `[\"auto\"]` for every key the selection uses.",
        ),
        "shards": shards_attr(default = "auto"),
        "_pch_plan": attr.label(
            default = Label("//rules/private/programs:pch_plan.sh"),
            allow_single_file = True,
            executable = True,
            cfg = "exec",
        ),
        "_torch_version_py": torch_version_py_attr(),
        "torch_facts": attr.label(
            default = Label("@torch//:torch_facts.json"),
            allow_single_file = [".json"],
            doc = "The installed torch's facts (`tool/torch_probe.py`): kernels it does not " +
                  "export are left out.",
        ),
    })),
)

def _major(version):
    return version.split(".")[0]

def check_cuda_versions():
    """Fails with one line when the CUDA toolkit's major version is not the torch wheel's.

    Called by aten_codegen, so that the error names the mismatch before any compile."""
    if HAS_CUDA and TORCH_CUDA and CUDA_VERSION and _major(CUDA_VERSION) != _major(TORCH_CUDA):
        fail(("rules_aten: the CUDA toolkit at {} is CUDA {}, but torch {} is built with CUDA {}: " +
              "install a CUDA {} toolkit and point RULES_ATEN_CUDA_DIR at it, or set " +
              "RULES_ATEN_CUDA_DIR=none to build without CUDA").format(
            CUDA_DIR,
            CUDA_VERSION,
            TORCH_VERSION,
            TORCH_CUDA,
            _major(TORCH_CUDA),
        ))

def _check_stable_arguments(keys):
    """Fails with one line on an argument abi = "stable" cannot honour."""
    if keys != ["auto"]:
        fail(("rules_aten: keys = {} needs abi = \"release\": abi = \"stable\" registers " +
              "every dispatch key the op YAML names").format(repr(keys)))

# The docstring's first paragraph and Args are docs/rules.md's (Markdown, written there by
# `./dev docs`): edit them here.
def aten_codegen(
        name,
        op_yaml,
        tags_yaml = "@torch//:tags.yaml",
        ops = ["all"],
        ops_file = None,
        ops_setting = None,
        keys = ["auto"],
        shards = "auto",
        functionalize = True,
        derivatives = None,
        deps = [],
        srcs = [],
        cuda = True,
        cuda_srcs = [],
        cuda_gencode = None,
        cuda_copts = [],
        copts = [],
        pch = True,
        abi = "release",
        torch_target = None,
        visibility = None,
        tags = []):
    """Kernel registrations for a `native_functions.yaml`-format op YAML, compiled into a C++ and a shared library.

    Targets (`name` = N):
      N_codegen: the generator action (aten_codegen_sources); trees under N_codegen/.
      N_headers: cc_library with the generated <ns>/ops/<root>_native.h on the include path
        (and torch's headers). Kernel libraries of custom namespaces depend on it.
      N: C++ library (CcInfo, linked whole) of the CPU-side registrations, `srcs` and `deps`;
        the archive of the cc_library N_objects (see cc_targets.bzl).
      N_cuda: the same for the CUDA keys' registrations, compiled as C++ against
        @local_cuda//:cuda_headers, and `cuda_srcs` compiled with nvcc (N_cuda_kernels); without
        a toolkit (or with cuda = False) it is empty.
      libN.so: shared library for torch.ops.load_library: N, and, when torch is a CUDA build
        and a toolkit of its CUDA major version is found, N_cuda too, linked with
        -Wl,--no-undefined against libtorch_cuda, libc10_cuda and the CUDA runtime, as needed
        (without CUDA code it depends on none of them). It links torch dynamically, bundles no
        torch code and has no RUNPATH: it loads from wherever it is copied, into a process that
        has imported torch. It registers nothing in a torch of another release than the one it
        was built against (rules/runtime/atengen/torch_release_guard.h).

    Args:
      name: base name of the targets (`N` above).
      op_yaml: the op YAML, in the `native_functions.yaml` format.
      tags_yaml: its tags YAML; by default the installed torch's, which custom libraries
        take.
      ops: op roots (`add`) or overload names (`add.Tensor`) to generate, or `["all"]`.
      ops_file: a selection file: names separated by commas or newlines, with `#` comments. It
        replaces `ops`.
      ops_setting: the label of an `aten_ops_flag`. When its value is non-empty, it replaces
        `ops` and `ops_file`.
      keys: dispatch keys to generate; `["auto"]`: every key the selection has kernels for.
      shards: `"auto"`: for each dispatch key (and for the autograd sources), the fewest crc32
        buckets, a power of two, that hold at most 48 operators on average; so a source stays
        small, and a one-operator edit cheap, whether the selection has ten operators or all of
        them ([design.md](docs/design.md#sharding-and-build-time)). `0`: one source per
        (operator, key). `N > 0`: N crc32 buckets per key. Empty buckets are not written. A
        number or its string.
      functionalize: generate the Functionalize-key kernels (mutations and views rewritten to
        functional and `view_copy` ops: [Functionalization](docs/design.md#functionalization))
        into the CPU-side library.
      derivatives: a derivatives YAML ([Autograd](docs/rules.md#autograd)). The Autograd and
        ADInplaceOrView kernels of its operators are generated by a second action into
        `N_codegen/autograd.cc/` (`Autograd_<shard>.cpp`, sharded by `shards` like the
        registrations) and compiled into `N`. With `abi = "stable"`, its formulas become
        Python instead (see `abi`).
      deps: kernel `cc_library`s (for custom namespaces), linked into `N`. Give them
        `alwayslink = True` if they register anything themselves.
      srcs: extra kernel sources, compiled into `N`, starting from the precompiled header of
        kind `kernels` (see `pch`): the fast place for a custom namespace's kernels.
      cuda: generate and compile the CUDA keys' registrations, when there is a toolkit.
      cuda_srcs: `.cu` kernel sources, compiled with the toolkit's nvcc into `N_cuda` (target
        `N_cuda_kernels`), with torch's extension-builder flags (`--expt-relaxed-constexpr`, no
        implicit half/bfloat16 conversions; `rules/private/rules/cuda_objects.bzl`), `-std=c++20 -Xcompiler
        -fPIC`, the wheel's `_GLIBCXX_USE_CXX11_ABI`, and the include paths of torch, the
        toolkit, the wheel's `nvidia/*/include` and the generated headers: they include the
        generated `<ns>/ops/<root>_native.h` as `srcs` do. Without a toolkit they are not
        compiled (a warning says so).
      cuda_gencode: the `-gencode` flags of nvcc for this target's `cuda_srcs`, e.g.
        `["-gencode=arch=compute_90,code=sm_90"]`; they win over the build setting and the
        variable below. `None`: the architectures of `--@rules_aten//:cuda_archs` if set, else
        of `$TORCH_CUDA_ARCH_LIST` if set (both in torch's syntax, `"8.0;9.0+PTX"`), else of the
        wheel's `torch.cuda.get_arch_list()` (machine code for each `sm_`, PTX for the newest; a
        line names them): see [CUDA architectures](docs/rules.md#cuda-architectures).
      cuda_copts: extra nvcc options for `cuda_srcs`.
      copts: extra compiler options for `N` and `N_cuda`.
      pch: compile `N`'s sources (generated and `srcs`) with GCC precompiled headers, each
        built once: `full` (`ATen/core/Tensor.h`, `torch/library.h`, `atengen/runtime.h`) and
        `light` (the same without `torch/library.h`) for the generated sources, made empty unless
        the library has enough sources of the kind for them to pay, and, with `srcs`, `kernels`:
        the torch and standard headers every kernel source starts with (a kernel edit then
        recompiles in about a second). They are `N`'s own, `N_pch_<kind>`, built with its `copts`
        after its generator, so that a YAML mistake is reported before they start
        (`rules/private/rules/pch.bzl`; [design.md](docs/design.md#precompiled-headers)). Tested with
        GCC; `False` compiles without them.
      abi: `"release"`: the library uses torch's full C++ API (ATen, generated autograd,
        functionalization) and loads into the build's torch release only
        ([One torch release per library](docs/rules.md#one-torch-release-per-library)).
        `"stable"`: it uses only LibTorch's stable ABI and loads into every torch release from
        `torch_target` on ([Stable ABI](docs/rules.md#stable-abi-abi--stable),
        `rules/private/rules/stable.bzl`): `N_codegen` runs `atengen stable`, whose registrations
        (`STABLE_TORCH_LIBRARY_IMPL`) call kernels declared in stable types
        (`torch::stable::Tensor`) in `<ns>/ops/<root>_native.h`, and whose call API
        (`atengen/stable/ops/<root>.h`: `atengen::stable::<op>(...)`) reaches aten's operators
        of `@torch//:native_functions.yaml` (an operator newer than the target fails when called
        in an older torch); every source, `srcs`, `deps` (through `N_headers`) and `cuda_srcs`
        is compiled with `-DTORCH_TARGET_VERSION` of the target, so `<ATen/ATen.h>` and other
        unstable headers are an `#error`; `libN.so` links `libtorch_cpu` (the C shim) and, for
        `cuda_srcs`, the static CUDA runtime, and is built only when no undefined symbol of it
        is outside the shim and the C/C++/CUDA runtimes (one line per offending group
        otherwise: `at::`, `c10::`, `torch::`, ...). `derivatives` becomes Python instead of C++
        autograd: `N_python`, the module `N_registrations.py` (`torch.library.register_autograd`
        of each entry, and the fake kernels stable mode derives), which `aten_wheel` ships and
        imports ([Autograd in stable mode](docs/rules.md#autograd-in-stable-mode)). Refused:
        `keys`; ignored: `functionalize`
        (`torch.compile` functionalizes mutable custom ops itself) and `pch`. No torch release
        guard: the library must load into later releases. Any other value fails with one line.
      torch_target: with `abi = "stable"`, the oldest torch release the library loads into,
        `"major.minor"` from `"2.11"` (what `None` means) to the build's torch release
        (`TORCH_RELEASE` of `@torch//:defs.bzl`); `-DTORCH_TARGET_VERSION` is its value
        (`0x020B000000000000` for `"2.11"`). Anything else (`"2.10"`, `"2.99"` with torch 2.13,
        `"abc"`, `"2.11.0"`) fails the analysis with one `rules_aten:` line naming the value and
        that range. Refused with `abi = "release"`.
      visibility: visibility of the targets.
      tags: tags of the targets.
    """
    name_error = target_name_error("aten_codegen", name)
    if name_error:
        fail(name_error)
    check_torch_visible(op_yaml = op_yaml, tags_yaml = tags_yaml, derivatives = derivatives)
    check_cuda_versions()
    if abi == "stable":
        _check_stable_arguments(keys)
        aten_stable_library(
            name = name,
            op_yaml = op_yaml,
            tags_yaml = tags_yaml,
            ops = ops,
            ops_file = ops_file,
            ops_setting = ops_setting,
            shards = shards,
            deps = deps,
            srcs = srcs,
            cuda = cuda,
            cuda_srcs = cuda_srcs,
            cuda_gencode = cuda_gencode,
            cuda_copts = cuda_copts,
            copts = copts,
            derivatives = derivatives,
            torch_target = OLDEST_STABLE_TARGET if torch_target == None else torch_target,
            visibility = visibility,
            tags = tags,
        )
        return
    if abi != "release":
        fail("rules_aten: abi = {} is not \"release\" (the default: bound to the build's torch release) or \"stable\" (torch's stable ABI, for torch_target and later)".format(repr(abi)))
    if torch_target != None:
        fail("rules_aten: torch_target = {} is for abi = \"stable\"; a library of abi = \"release\" loads into the build's torch release only".format(repr(torch_target)))
    use_cuda = cuda and HAS_CUDA

    # The CUDA registrations go into lib<name>.so when they can load: torch is a CUDA build.
    loadable_cuda = use_cuda and TORCH_CUDA != ""
    codegen = name + "_codegen"
    aten_codegen_sources(
        name = codegen,
        op_yaml = op_yaml,
        tags_yaml = tags_yaml,
        ops = ops,
        ops_file = ops_file,
        ops_setting = ops_setting,
        keys = keys,
        shards = str(shards),
        functionalize = functionalize,
        derivatives = derivatives,
        cuda = use_cuda,
        visibility = visibility,
        tags = tags,
    )
    codegen_outputs(name, codegen, ["cpu_srcs", "cuda_srcs", "generated", "headers", "registration_srcs", "signature_srcs"], visibility, tags)

    runtime_and_torch = library_deps()
    aten_archive_library(
        name = name,
        generated_srcs = [":{}_registration_srcs".format(codegen)],
        signature_srcs = [":{}_signature_srcs".format(codegen)],
        runtime_srcs = release_guard_srcs(),
        srcs = srcs,
        deps = runtime_and_torch + [":" + name + "_headers"] + deps,
        copts = copts,
        pch_deps = runtime_and_torch if pch else None,
        pch_plan = ":{}_generated".format(codegen),
        visibility = visibility,
        tags = tags,
    )

    if use_cuda:
        cuda_deps = runtime_and_torch + labels(["@local_cuda//:cuda_headers", "@torch//:torch_cuda_headers"])
        aten_cuda_library(
            name = name,
            codegen = codegen,
            deps = cuda_deps + [":" + name + "_headers"] + deps,
            kernel_deps = cuda_deps + [":" + name + "_headers"] + deps,
            cuda_srcs = cuda_srcs,
            cuda_gencode = cuda_gencode,
            cuda_copts = cuda_copts,
            copts = copts,
            visibility = visibility,
            tags = tags,
        )
    elif cuda:
        aten_cuda_unavailable(
            name = name + "_cuda",
            note = (", and lib{}.so has the CPU-side registrations only (torch {} is a CUDA {} build)".format(
                name,
                TORCH_VERSION,
                TORCH_CUDA,
            ) if TORCH_CUDA else "") + (
                "; cuda_srcs are not compiled" if cuda_srcs else ""
            ),
            visibility = visibility,
            tags = tags,
        )
    else:
        cc_library(
            name = name + "_cuda",
            visibility = visibility,
            tags = tags,
        )

    aten_shared_library(
        name,
        visibility,
        tags,
        cuda = loadable_cuda,
        cuda_warning = cuda and not use_cuda and TORCH_CUDA != "",
        kernel_headers = [":{}_headers".format(codegen)],
        op_yaml = op_yaml,
        tags_yaml = tags_yaml,
    )
