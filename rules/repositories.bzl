"""WORKSPACE set-up for rules_aten (Bazel without Bzlmod, e.g. Debian's Bazel 4.2.3).

In a WORKSPACE:

    load(
        "@rules_aten//rules:repositories.bzl",
        "rules_aten_debian_dependencies",
        "rules_aten_dependencies",
        "rules_aten_register_toolchains",
    )

    # Only on a machine without network access whose rule sets come from Debian's bazel-*
    # packages; elsewhere declare @platforms, @bazel_skylib, @rules_cc and @rules_python yourself
    # (http_archive) before rules_aten_dependencies().
    rules_aten_debian_dependencies()

    rules_aten_dependencies()

    rules_aten_register_toolchains()

Every macro here leaves repositories that already exist alone, so a WORKSPACE can declare its own
first.
"""

load("//rules/private:repositories/cuda_pypi.bzl", "cuda_nvcc_pypi_repo")
load("//rules/private:repositories/local_cuda.bzl", "local_cuda_repo")
load("//rules/private:repositories/pip.bzl", "pip_repo")
load("//rules/private:repositories/python.bzl", "python_toolchain_repo")
load(
    "//rules/private:repositories/system_repos.bzl",
    "first_local_repo",
    "offline_coverage_tools",
    "patched_local_repo",
    "python_rules_shim",
)
load("//rules/private:repositories/torch.bzl", "torch_repo")

def _maybe(repo_rule, name, **kwargs):
    if not native.existing_rule(name):
        repo_rule(name = name, **kwargs)

def rules_aten_dependencies(main_workspace_file = "@//:WORKSPACE"):
    """Declares the repositories that rules_aten itself provides, discovered on the local machine.

    They are @rules_aten_python (the Python toolchain), @rules_aten_pip (the generator's pinned
    dependencies), @torch (the installed torch wheel), @local_cuda (a CUDA toolkit's headers,
    if there is one) and @rules_aten_cuda_nvcc (nvcc from PyPI at the CUDA wheel's version, for
    when no toolkit of its CUDA major version is installed: fetched only then). Their BUILD files and rules_aten's own load @rules_cc, @rules_python and
    @bazel_skylib: declare those first, for example with rules_aten_debian_dependencies().

    Args:
      main_workspace_file: a file at the root of the main workspace, whose directory is
        searched for .venv (use "@//:WORKSPACE.bazel" if the workspace has no WORKSPACE).
    """

    # See rules/private/repositories/: python.bzl, pip.bzl, torch.bzl and local_cuda.bzl.
    _maybe(python_toolchain_repo, "rules_aten_python", main_workspace_file = main_workspace_file)
    _maybe(
        pip_repo,
        "rules_aten_pip",
        lock = Label("//third_party:requirements_tool.lock"),
        main_workspace_file = main_workspace_file,
    )
    _maybe(torch_repo, "torch", main_workspace_file = main_workspace_file)
    _maybe(local_cuda_repo, "local_cuda")
    _maybe(cuda_nvcc_pypi_repo, "rules_aten_cuda_nvcc")

def rules_aten_debian_dependencies(debian_bazel_root = "/usr/share/bazel"):
    """Declares the rule sets rules_aten needs from Debian's bazel-* packages, without network.

    For Debian's Bazel 4.2.3 (bazel-bootstrap) on a machine that cannot download anything:
    @platforms, @bazel_skylib, @rules_java and @rules_proto are local_repository()s of the
    packages' directories; @rules_cc is Debian's, patched to load with Bazel 4.2.3; @rules_python
    is a shim over Bazel's built-in py_* rules (Debian has no rules_python); and
    @remote_coverage_tools, which Bazel 4 downloads for every `bazel test`, is a stub (so
    `bazel coverage` fails). Call it before rules_aten_dependencies().

    Args:
      debian_bazel_root: where Debian's bazel-* packages put the rule sets.
    """
    _maybe(
        first_local_repo,
        "platforms",
        paths = [debian_bazel_root + "/platforms", debian_bazel_root + "/tools/platforms"],
        marker = "os/BUILD",
        package = "bazel-platforms",
    )
    _maybe(native.local_repository, "bazel_skylib", path = debian_bazel_root + "/tools/skylib")
    _maybe(native.local_repository, "rules_java", path = debian_bazel_root + "/rules/java")
    _maybe(native.local_repository, "rules_proto", path = debian_bazel_root + "/rules/proto")
    _maybe(
        patched_local_repo,
        "rules_cc",
        path = debian_bazel_root + "/rules/cc",
        package = "bazel-rules-cc",
        patches = [Label("//third_party/rules_cc:use_cpp_toolchain.patch")],
        unless_bazel_tools_defines = "@bazel_tools//tools/cpp:toolchain_utils.bzl%use_cpp_toolchain",
    )
    _maybe(python_rules_shim, "rules_python")
    _maybe(offline_coverage_tools, "remote_coverage_tools")

# buildifier: disable=unnamed-macro
def rules_aten_register_toolchains():
    """Registers the Python toolchain around the discovered interpreter."""
    native.register_toolchains("@rules_aten_python//:toolchain")
