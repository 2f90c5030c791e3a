"""Attributes shared by the rules that run the atengen generator (codegen.bzl, backend.bzl,
model_check.bzl)."""

load("//rules/private:common/providers.bzl", "AtenOpsInfo")

def generator_attrs(default_to_torch):
    """The op YAML, tags YAML and generator binary attributes of a rule that runs atengen.

    Args:
      default_to_torch: True: op_yaml defaults to the installed torch's YAML; False: it is
        mandatory. tags_yaml defaults to the installed torch's either way: a custom library's
        op YAML uses torch's tags, and a missing one is no mistake to report.

    Returns:
      A new dict of attribute name to attribute, to extend with the rule's own.
    """
    return {
        "op_yaml": attr.label(
            default = Label("@torch//:native_functions.yaml") if default_to_torch else None,
            mandatory = not default_to_torch,
            allow_single_file = [".yaml"],
            doc = "Op YAML in the `native_functions.yaml` format.",
        ),
        "tags_yaml": attr.label(
            default = Label("@torch//:tags.yaml"),
            allow_single_file = [".yaml"],
            doc = "Tags YAML that goes with `op_yaml`; by default the installed torch's.",
        ),
        "tool": attr.label(
            default = Label("//tool:atengen"),
            executable = True,
            cfg = "exec",
            doc = "The atengen binary.",
        ),
        # An empty target, unless a repository rule found a problem in a setting that a build
        # need not otherwise reach (RULES_ATEN_CUDA_DIR naming no toolkit, with a CPU wheel):
        # then its analysis fails with the message (repo_error.bzl).
        "_repository_checks": attr.label_list(
            default = [Label("@local_cuda//:check")],
        ),
    }

def torch_version_py_attr():
    """The `_torch_version_py` attribute torch_facts_flags reads: @torch's torch/version.py.

    Returns:
      The attribute.
    """
    return attr.label(default = Label("@torch//:version.py"), allow_single_file = True)

def torch_facts_flags(ctx, args):
    """Adds `--torch_facts` of the rule's `torch_facts`, and `--torch_version_py` for @torch's own.

    The generator compares the two (atengen/facts/wheel_facts.py's stale_facts): @torch's facts are
    read once, when the repository is set up, while its headers and libraries are links into the
    wheel that each build follows. A torch changed in place since (reinstalled, or a venv link
    pointed at another, where Bazel does not set @torch up again by itself) then stops the
    generator with one line, instead of building with the old release's facts against the new
    release's headers. Facts from elsewhere (a torch_facts of the user's) are not compared.

    Args:
      ctx: the rule context; its attributes include `torch_facts` and `_torch_version_py`
        (torch_version_py_attr()).
      args: the generator's Args.

    Returns:
      The input files of the flags.
    """
    facts = ctx.file.torch_facts
    args.add("--torch_facts=" + facts.path)
    version_py = ctx.file._torch_version_py
    if facts.owner.workspace_name != version_py.owner.workspace_name:
        return [facts]
    args.add("--torch_version_py=" + version_py.path)
    return [facts, version_py]

def shards_attr(default):
    """The `shards` attribute (a string, as --shards takes it) of the sharding rules.

    Args:
      default: "auto" or a bucket count, as a string.

    Returns:
      The attribute.
    """
    return attr.string(
        default = default,
        doc = "`\"auto\"`: per file set (a dispatch key's registrations, ...), the fewest hash " +
              "buckets (a power of two) that hold at most 48 operators on average; `\"0\"`: " +
              "one source per operator; `\"N\"`: N hash buckets.",
    )

def shards_flag(ctx):
    """The `--shards=` flag for the rule's checked `shards` attribute.

    Args:
      ctx: the rule context; its `shards` attribute is from shards_attr().

    Returns:
      The flag.
    """
    shards = ctx.attr.shards
    if shards != "auto" and not shards.isdigit():
        fail("shards must be \"auto\" or a number of buckets (0: one source per operator), " +
             "not \"%s\"" % shards, attr = "shards")
    return "--shards=" + shards

def selection_attrs():
    """The attributes selection_args reads: ops, ops_file and ops_setting."""
    return {
        "ops": attr.string_list(
            default = ["all"],
            doc = "Op roots or overload names to generate, or `[\"all\"]`. Ignored with `ops_file`.",
        ),
        "ops_file": attr.label(
            allow_single_file = True,
            doc = "A file with the selection: op names, comma- or line-separated; `#` comments.",
        ),
        "ops_setting": attr.label(
            providers = [AtenOpsInfo],
            doc = "An `aten_ops_flag`; when its value is non-empty it overrides `ops` and `ops_file`.",
        ),
    }

def selection_args(ctx):
    """The tool's selection flag and the files it reads.

    Args:
      ctx: the context of a rule with the attributes ops, ops_file and ops_setting.

    Returns:
      (the flags, the files they name).
    """
    if ctx.attr.ops_setting:
        value = ctx.attr.ops_setting[AtenOpsInfo].value
        if value:
            return ["--ops=" + value], []
    if ctx.file.ops_file:
        return ["--ops_file=" + ctx.file.ops_file.path], [ctx.file.ops_file]
    return ["--ops=" + ",".join(ctx.attr.ops)], []

# What a library's name may hold: it names lib<name>.so, the generator's directories and the
# precompiled headers that compiler flags name, and a space or a non-ASCII letter there fails
# only late, in a compile or a link, far from its cause.
_NAME_CHARACTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-."

def target_name_error(macro, name):
    """The one-line error for a library name outside _NAME_CHARACTERS, or None.

    Args:
      macro: the macro's name, for the message.
      name: the `name` it was given.

    Returns:
      None when the name is fine, else the message for fail().
    """
    if name and all([c in _NAME_CHARACTERS for c in name.elems()]) and name[0] not in "-.":
        return None
    return ("rules_aten: {}(name = {}): a library's name may hold only ASCII letters, digits, " +
            "\"_\", \"-\" and \".\" (and start with a letter, a digit or \"_\"): it names " +
            "lib<name>.so and the files generated for it").format(macro, repr(name))

def check_torch_visible(**labels):
    """Fails with one line where a caller's @torch label names a repository it cannot see.

    That is a module whose MODULE.bazel lacks `use_repo(rules_aten, "torch")`. Bazel's own error for that names no fix; this names the line to add. Under WORKSPACE, and on
    a Bazel without native.package_relative_label (4.2.3), it checks nothing.

    Args:
      **labels: attribute name to the caller's value (a string label, a Label, or None).
    """
    if not hasattr(native, "package_relative_label"):
        return
    for attr_name, value in labels.items():
        if type(value) != "string" or not value.startswith("@torch//"):
            continue

        # The label resolved in the calling repository's mapping: an apparent name that
        # mapping lacks becomes "@@[unknown repo 'torch' requested from @@...]".
        if "unknown repo" in str(native.package_relative_label(value)):
            fail(('rules_aten: {} = "{}": @torch is not visible from this module; add ' +
                  'use_repo(rules_aten, "torch") to MODULE.bazel, after rules_aten = ' +
                  'use_extension("@rules_aten//rules:extensions.bzl", "rules_aten")').format(attr_name, value))
