"""WORKSPACE set-up for rules_aten (Bazel without Bzlmod, e.g. Debian's Bazel 4.2.3).

In a WORKSPACE:

    load("@rules_aten//rules:repositories.bzl", "rules_aten_dependencies", "rules_aten_register_toolchains")

    rules_aten_dependencies()

    rules_aten_register_toolchains()

Repositories that already exist (for example a real rules_python) are left alone.
"""

load("//rules/private:cuda.bzl", "local_cuda_repo")
load("//rules/private:pip.bzl", "pip_repo")
load("//rules/private:python.bzl", "python_toolchain_repo")
load(
    "//rules/private:system_repos.bzl",
    "DEBIAN_BAZEL_ROOT",
    "offline_coverage_tools",
    "patched_local_repo",
    "python_rules_shim",
)
load("//rules/private:torch.bzl", "torch_repo")

def _maybe(repo_rule, name, **kwargs):
    if not native.existing_rule(name):
        repo_rule(name = name, **kwargs)

def rules_aten_dependencies(
        debian_bazel_root = DEBIAN_BAZEL_ROOT,
        main_workspace_file = "@//:WORKSPACE"):
    """Declares the repositories rules_aten needs, all from the local disk.

    Args:
      debian_bazel_root: where Debian's bazel-* packages put the rule sets.
      main_workspace_file: a file at the root of the main workspace, whose directory is
        searched for .venv (use "@//:WORKSPACE.bazel" if the workspace has no WORKSPACE).
    """
    _maybe(native.local_repository, "platforms", path = debian_bazel_root + "/platforms")
    _maybe(native.local_repository, "bazel_skylib", path = debian_bazel_root + "/tools/skylib")
    _maybe(native.local_repository, "rules_java", path = debian_bazel_root + "/rules/java")
    _maybe(native.local_repository, "rules_proto", path = debian_bazel_root + "/rules/proto")
    _maybe(
        patched_local_repo,
        "rules_cc",
        path = debian_bazel_root + "/rules/cc",
        package = "bazel-rules-cc",
        patches = [Label("//third_party/rules_cc:use_cpp_toolchain.patch")],
    )
    _maybe(python_rules_shim, "rules_python")

    # `bazel test` needs this repository (for coverage only); Bazel 4 would download it.
    _maybe(offline_coverage_tools, "remote_coverage_tools")

    # Discovered from the local machine; see rules/private/python.bzl and torch.bzl.
    _maybe(python_toolchain_repo, "rules_aten_python", main_workspace_file = main_workspace_file)
    _maybe(
        pip_repo,
        "rules_aten_pip",
        lock = Label("//third_party:requirements_tool.lock"),
        main_workspace_file = main_workspace_file,
    )
    _maybe(torch_repo, "torch", main_workspace_file = main_workspace_file)

    # The CUDA toolkit's headers, if there is one; see rules/private/cuda.bzl.
    _maybe(local_cuda_repo, "local_cuda")

# buildifier: disable=unnamed-macro
def rules_aten_register_toolchains():
    """Registers the Python toolchain around the discovered interpreter."""
    native.register_toolchains("@rules_aten_python//:toolchain")
