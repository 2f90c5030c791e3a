"""Public rules of rules_aten. Implementations live in //rules/private."""

load("//rules/private:common/cuda_archs.bzl", _cuda_archs_flag = "cuda_archs_flag")
load(
    "//rules/private:common/providers.bzl",
    _AtenCodegenInfo = "AtenCodegenInfo",
    _AtenLibraryInfo = "AtenLibraryInfo",
    _AtenOpsInfo = "AtenOpsInfo",
    _CudaArchsInfo = "CudaArchsInfo",
)
load("//rules/private:rules/backend.bzl", _external_backend_codegen = "external_backend_codegen")
load(
    "//rules/private:rules/codegen.bzl",
    _aten_codegen = "aten_codegen",
    _aten_codegen_sources = "aten_codegen_sources",
)
load("//rules/private:rules/kernel_hub.bzl", _aten_kernel_hub = "aten_kernel_hub")
load("//rules/private:rules/model_check.bzl", _aten_model_check = "aten_model_check")
load("//rules/private:rules/ops_flag.bzl", _aten_ops_flag = "aten_ops_flag")
load("//rules/private:rules/wheel.bzl", _aten_wheel = "aten_wheel")

AtenCodegenInfo = _AtenCodegenInfo
AtenLibraryInfo = _AtenLibraryInfo
AtenOpsInfo = _AtenOpsInfo
CudaArchsInfo = _CudaArchsInfo
aten_codegen = _aten_codegen
aten_codegen_sources = _aten_codegen_sources
aten_kernel_hub = _aten_kernel_hub
aten_model_check = _aten_model_check
aten_ops_flag = _aten_ops_flag
aten_wheel = _aten_wheel
cuda_archs_flag = _cuda_archs_flag
external_backend_codegen = _external_backend_codegen
