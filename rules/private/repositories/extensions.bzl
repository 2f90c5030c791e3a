"""The module extension behind //rules:extensions.bzl (Bzlmod, Bazel 7 and newer).

It declares the same repositories as rules_aten_dependencies() in //rules:repositories.bzl.
Bzlmod takes the rule sets that rules_aten_debian_dependencies() declares from bazel_dep.
Tested with Bazel 7.7.1 and --noenable_workspace (tests/slices/bazel7/test_bazel7.py).
"""

load("//rules/private:repositories/cuda_pypi.bzl", "cuda_nvcc_pypi_repo")
load("//rules/private:repositories/local_cuda.bzl", "local_cuda_repo")
load("//rules/private:repositories/pip.bzl", "pip_repo")
load("//rules/private:repositories/python.bzl", "python_toolchain_repo")
load("//rules/private:repositories/torch.bzl", "torch_repo")

def rules_aten_extension_impl(module_ctx):  # buildifier: disable=unused-variable
    """Declares @rules_aten_python, @rules_aten_pip, @torch, @local_cuda and @rules_aten_cuda_nvcc.

    Args:
      module_ctx: the module_ctx (unused: the repositories take no per-module settings).
    """
    python_toolchain_repo(name = "rules_aten_python")
    pip_repo(name = "rules_aten_pip", lock = Label("//third_party:requirements_tool.lock"))
    torch_repo(name = "torch")
    local_cuda_repo(name = "local_cuda")
    cuda_nvcc_pypi_repo(name = "rules_aten_cuda_nvcc")
