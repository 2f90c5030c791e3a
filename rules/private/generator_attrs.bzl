"""Attributes shared by the rules that run the atengen generator (codegen.bzl, backend.bzl,
model_check.bzl)."""

def generator_attrs(default_to_torch):
    """The op YAML, tags YAML and generator binary attributes of a rule that runs atengen.

    Args:
      default_to_torch: True: op_yaml and tags_yaml default to the installed torch's YAML;
        False: both are mandatory.

    Returns:
      A new dict of attribute name to attribute, to extend with the rule's own.
    """
    return {
        "op_yaml": attr.label(
            default = Label("@torch//:native_functions.yaml") if default_to_torch else None,
            mandatory = not default_to_torch,
            allow_single_file = [".yaml"],
            doc = "Op YAML in the native_functions.yaml format.",
        ),
        "tags_yaml": attr.label(
            default = Label("@torch//:tags.yaml") if default_to_torch else None,
            mandatory = not default_to_torch,
            allow_single_file = [".yaml"],
            doc = "Tags YAML that goes with op_yaml.",
        ),
        "tool": attr.label(
            default = Label("//tool:atengen"),
            executable = True,
            cfg = "exec",
            doc = "The atengen binary.",
        ),
    }

def shards_attr():
    """The `shards` attribute of the rules that write sharded registration sources."""
    return attr.int(
        default = 0,
        doc = "0: one source per operator and key; N > 0: N hash buckets per key.",
    )
