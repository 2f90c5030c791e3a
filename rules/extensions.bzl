"""Bzlmod entry point of rules_aten. In MODULE.bazel:

    rules_aten = use_extension("@rules_aten//rules:extensions.bzl", "rules_aten")
    use_repo(rules_aten, "torch")

The repositories and their environment variables are those of //rules:repositories.bzl.
"""

load("//rules/private:repositories/extensions.bzl", "rules_aten_extension_impl")

rules_aten = module_extension(
    implementation = rules_aten_extension_impl,
    doc = "Declares @rules_aten_python (Python toolchain), @rules_aten_pip and @torch.",
)
