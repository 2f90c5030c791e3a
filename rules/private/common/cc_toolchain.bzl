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
