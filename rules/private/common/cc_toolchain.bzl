"""The C++ toolchain and its feature configuration, for rules that make C++ actions themselves."""

load("@bazel_tools//tools/cpp:toolchain_utils.bzl", "find_cpp_toolchain")

# buildifier: disable=native-cc-common
def cc_toolchain_and_features(ctx):
    """The rule's C++ toolchain and the features its `features` attribute asks for.

    Args:
      ctx: the rule context (with `_cc_toolchain`, the cpp fragment and the toolchain type).

    Returns:
      (cc_toolchain, feature_configuration).
    """
    cc_toolchain = find_cpp_toolchain(ctx)
    return cc_toolchain, cc_common.configure_features(
        ctx = ctx,
        cc_toolchain = cc_toolchain,
        requested_features = ctx.features,
        unsupported_features = ctx.disabled_features,
    )

# buildifier: disable=native-cc-common
def alwayslink_objects(ctx, cc_toolchain, feature_configuration, objects):
    """The linking context of `objects` (PIC object files) archived, linked whole.

    Args:
      ctx: the rule context.
      cc_toolchain: the rule's C++ toolchain.
      feature_configuration: its features.
      objects: the object files.

    Returns:
      A linking context with one alwayslink static library.
    """
    linking_context, _ = cc_common.create_linking_context_from_compilation_outputs(
        actions = ctx.actions,
        feature_configuration = feature_configuration,
        cc_toolchain = cc_toolchain,
        compilation_outputs = cc_common.create_compilation_outputs(
            objects = depset(objects),
            pic_objects = depset(objects),
        ),
        name = ctx.label.name,
        alwayslink = True,
        disallow_dynamic_library = True,
    )
    return linking_context
